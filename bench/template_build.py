#!/usr/bin/env python3
"""One-RUN template build vs the same command by exec (issue 37 item 2).

Starts sbx-mock with the image store, then, N times each: a template
`FROM nodeops/sandbox:debian` + `RUN echo built-by-run > /etc/marker`
timed from POST /v1/templates to the final event of its followed log, and
the same command run by exec in a running devbox:1 sandbox, timed from
the exec's request to its answer. Each timed call starts from a quiet
mock (the warm pool full, nothing being torn down: settle()), not in the
wake of the previous one's refill. Prints the medians and their ratios
(the issue's bar: the followed build <= 2x the exec; the SDK's
`templates.create` + `followLogs` is how a user waits for a build).
Then the same for a loud RUN (issue 44): one printing 64 MiB of base64
(LOUD), the build (followed, and polled) against the exec of the same
command (the issue's bar: the build <= 2x the exec).
Usage: bench/template_build.py SBX_MOCK [N] [STORE]
"""
import json
import statistics
import subprocess
import sys
import time
import urllib.request

MOCK = sys.argv[1]
N = int(sys.argv[2]) if len(sys.argv) > 2 else 10
STORE = sys.argv[3] if len(sys.argv) > 3 else "/var/cache/sbx-harness/images"
CMD = "echo built-by-run > /etc/marker"
# 48 MiB of zeros in base64: 64 MiB of text in 883,012 lines of 76
LOUD = "head -c 50331648 /dev/zero | base64"


def call(base, method, path, body=None):
    req = urllib.request.Request(base + path, method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"X-Api-Key": "bench", "X-Mock-Admin-Token": "bench",
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return r.read()


def settle(base):
    """Waits until the warm pool is full and nothing is torn down: each
    timed call starts from the same quiet mock (not from the previous
    call's refill and teardown)."""
    for _ in range(5000):
        p = json.loads(call(base, "GET", "/_mock/pool"))
        if not p.get("enabled") or (p["idle"] >= p["size"] and p["building"] == 0 and p["retiring"] == 0):
            return
        time.sleep(0.002)


def build_once(base, name, cmd, follow):
    """Seconds from the POST of a one-RUN template to its end (the final
    event of its followed log, or a GET that sees it ended)."""
    t0 = time.monotonic()
    tid = json.loads(call(base, "POST", "/v1/templates",
                          {"name": name, "dockerfile": f"FROM nodeops/sandbox:debian\nRUN {cmd}\n"}))["data"]["id"]
    if follow:
        last = call(base, "GET", f"/v1/templates/{tid}/logs?follow=true").decode().strip().split("\n")[-1]
        status = json.loads(last).get("status")
    else:
        while True:
            status = json.loads(call(base, "GET", f"/v1/templates/{tid}"))["data"]["status"]
            if status in ("ready", "failed"):
                break
            time.sleep(0.001)
    took = time.monotonic() - t0
    assert status == "ready", (name, status)
    call(base, "DELETE", f"/v1/templates/{tid}")
    return took


def loud(base, sb):
    """A RUN printing 64 MiB: the build against the exec of the command."""
    execs, followed, polled = [], [], []
    for i in range(N):
        settle(base)
        t0 = time.monotonic()
        out = json.loads(call(base, "POST", f"/v1/sandboxes/{sb}/exec", {"cmd": "/bin/sh", "args": ["-c", LOUD]}))
        execs.append(time.monotonic() - t0)
        assert out["data"]["result"]["exit_code"] == 0, str(out)[:300]
        settle(base)
        followed.append(build_once(base, f"lf{i}", LOUD, True))
        settle(base)
        polled.append(build_once(base, f"lp{i}", LOUD, False))
    e, f, p = statistics.median(execs), statistics.median(followed), statistics.median(polled)
    print(f"loud RUN ({LOUD}, 64 MiB printed): exec median {e * 1000:.0f} ms ({N} runs)")
    print(f"loud RUN template build, POST to final event: median {f * 1000:.0f} ms; polled: {p * 1000:.0f} ms")
    print(f"ratio loud build (followed) / exec: {f / e:.2f}x; (polled) / exec: {p / e:.2f}x "
          f"(issue 44 bar: <= 2x)")


def main():
    proc = subprocess.Popen([MOCK, "--listen", "127.0.0.1:0", "--self-listen", "127.0.0.1:0",
                             "--quiet", "--admin-token", "bench", "--images", STORE, "--cap", "50"],
                            stdout=subprocess.PIPE, text=True)
    try:
        base = None
        for line in proc.stdout:
            if line.startswith("sbx-mock listening on "):
                base = line.split()[-1]
                break
        sb = json.loads(call(base, "POST", "/v1/sandboxes", {"shape": "s-1vcpu-1gb"}))["data"]["id"]
        execs, builds, polled, fresh_exec = [], [], [], []
        for i in range(N):
            settle(base)
            t0 = time.monotonic()
            out = json.loads(call(base, "POST", f"/v1/sandboxes/{sb}/exec",
                                  {"cmd": "/bin/sh", "args": ["-c", CMD]}))
            execs.append(time.monotonic() - t0)
            assert out["data"]["result"]["exit_code"] == 0, out
            settle(base)
            t0 = time.monotonic()
            tpl = json.loads(call(base, "POST", "/v1/templates",
                                  {"name": f"b{i}", "dockerfile": f"FROM nodeops/sandbox:debian\nRUN {CMD}\n"}))
            tid = tpl["data"]["id"]
            last = call(base, "GET", f"/v1/templates/{tid}/logs?follow=true").decode().strip().split("\n")[-1]
            builds.append(time.monotonic() - t0)
            assert json.loads(last) == {"final": True, "status": "ready"}, last
            call(base, "DELETE", f"/v1/templates/{tid}")
            # the same build waited for by polling GET (as a client
            # without the follow stream would)
            settle(base)
            t0 = time.monotonic()
            tid = json.loads(call(base, "POST", "/v1/templates",
                                  {"name": f"p{i}", "dockerfile": f"FROM nodeops/sandbox:debian\nRUN {CMD}\n"}))["data"]["id"]
            while json.loads(call(base, "GET", f"/v1/templates/{tid}"))["data"]["status"] not in ("ready", "failed"):
                time.sleep(0.001)
            polled.append(time.monotonic() - t0)
            call(base, "DELETE", f"/v1/templates/{tid}")
            settle(base)
            t0 = time.monotonic()
            fresh = json.loads(call(base, "POST", "/v1/sandboxes", {"shape": "s-1vcpu-1gb"}))["data"]["id"]
            call(base, "POST", f"/v1/sandboxes/{fresh}/exec", {"cmd": "/bin/sh", "args": ["-c", CMD]})
            fresh_exec.append(time.monotonic() - t0)
            call(base, "DELETE", f"/v1/sandboxes/{fresh}")
        e, b = statistics.median(execs), statistics.median(builds)
        p, f = statistics.median(polled), statistics.median(fresh_exec)
        print(f"exec of the command: median {e * 1000:.1f} ms ({N} runs)")
        print(f"one-RUN template build, POST to final event: median {b * 1000:.1f} ms ({N} runs)")
        print(f"one-RUN template build, POST to ready by polling GET: median {p * 1000:.1f} ms")
        print(f"create a sandbox + exec the command: median {f * 1000:.1f} ms")
        print(f"ratio build (followed, as the SDK's followLogs) / exec: {b / e:.2f}x (issue 37 bar: <= 2x)")
        print(f"ratio build (polled: + a GET's and a 1 ms sleep's granularity) / exec: {p / e:.2f}x")
        print(f"ratio build (polled) / create + exec: {p / f:.2f}x")
        loud(base, sb)
    finally:
        proc.terminate()
        proc.wait()


main()
