#!/usr/bin/env python3
"""Harness errors say what happened, at once, and once (issue 19, items
15, 16, 17, 21).

usage: harness_errors_test.py SBX_CONFORM BROKEN_DRIVER_PY

Each case starts sbx-conform (embedded mock, ephemeral port) against a
broken driver and asserts the exit code, the message and how long it took;
no driver process may be left behind.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

CONFORM, DRIVER = sys.argv[1], sys.argv[2]
TMP = tempfile.mkdtemp(prefix="sbx-harness-errors-")
FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what, file=sys.stderr)


def conform(args, timeout=120):
    t0 = time.monotonic()
    p = subprocess.run([CONFORM] + args, capture_output=True, text=True, timeout=timeout,
                       errors="replace")
    return p.returncode, p.stdout, p.stderr, time.monotonic() - t0


def no_leftover(marker):
    r = subprocess.run(["pgrep", "-f", marker], capture_output=True)
    if r.returncode == 0:
        subprocess.run(["pkill", "-KILL", "-f", marker])
        check(False, f"{marker}: a driver process was left behind")


def driver(mode):
    marker = f"sbx-harness-errors-{mode}-{os.getpid()}"
    return f"python3 {DRIVER} {mode} {marker}", marker


def report(name):
    with open(os.path.join(TMP, name)) as f:
        return json.load(f)


# 21: a driver command that does not exist says so, with its exit status.
rc, out, err, secs = conform(["--backend-cmd", "./nonexistent-sbx-driver", "--filter", "RES-004"])
check(rc == 2, f"nonexistent: exit {rc}, expected 2: {err}")
check("not found" in err and "status 127" in err, f"nonexistent: message lacks 'not found'/'status 127': {err}")
check("within 20.0 s" not in err, f"nonexistent: message speaks of a timeout: {err}")
check(err.count("harness error") == 1, f"nonexistent: not one harness error: {err}")

# 21: a driver killed by a signal: the signal and the end of its stderr.
cmd, marker = driver("abort")
rc, out, err, secs = conform(["--backend-cmd", cmd, "--filter", "RES-004"])
check(rc == 2, f"abort: exit {rc}, expected 2: {err}")
check("SIGABRT" in err and "giving up on hello" in err, f"abort: message lacks the signal or stderr: {err}")
no_leftover(marker)

# 21: hello announcing protocol 2, or none: one up-front harness error.
for mode, want in (("proto2", "announces protocol 2"), ("noproto", "has no `protocol`")):
    cmd, marker = driver(mode)
    rc, out, err, secs = conform(["--backend-cmd", cmd, "--profile", "langflow-backend",
                                  "--json", os.path.join(TMP, mode + ".json")])
    check(rc == 2, f"{mode}: exit {rc}, expected 2: {err}")
    check(want in err, f"{mode}: message lacks {want!r}: {err}")
    check(not os.path.exists(os.path.join(TMP, mode + ".json")), f"{mode}: checks ran anyway")
    no_leftover(marker)

# 16: a wrong answer id fails at once, and 2.5 is not 2.
for mode, want in (("wrong-id", "answered id 3, expected 2"), ("frac-id", "answered id 2.5, expected 2")):
    cmd, marker = driver(mode)
    rc, out, err, secs = conform(["--backend-cmd", cmd, "--profile", "langflow-backend", "--filter", "RES-004",
                                  "--json", os.path.join(TMP, mode + ".json")])
    check(rc == 1, f"{mode}: exit {rc}, expected 1: {out} {err}")
    if rc == 1:
        row = report(mode + ".json")["checks"][0]
        check(want in row["reason"], f"{mode}: reason lacks {want!r}: {row['reason']}")
    check(secs < 15, f"{mode}: took {secs:.1f} s (the run timeout is 60 s; a wrong id must fail at once)")
    no_leftover(marker)

# 15: 30 MB of driver stderr does not make a 30 MB report.
cmd, marker = driver("flood")
rc, out, err, secs = conform(["--backend-cmd", cmd, "--profile", "langflow-backend", "--filter", "RES-004",
                              "--json", os.path.join(TMP, "flood.json")])
check(rc == 1, f"flood: exit {rc}, expected 1: {err}")
size = os.path.getsize(os.path.join(TMP, "flood.json")) if rc == 1 else 0
check(0 < size < 64 * 1024, f"flood: report is {size} bytes, evidence must be capped")
if rc == 1:
    ev = report("flood.json")["checks"][0]["evidence"]["driver_stderr"]
    check("flood-end-marker" in ev and "earlier bytes not kept" in ev, f"flood: stderr evidence wrong: {ev[:300]}")
no_leftover(marker)

# 16: a driver that hangs on every run: after 3 checks in a row timed out
# the rest are not run (error verdicts, exit 2), instead of 60 s each.
cmd, marker = driver("hang")
rc, out, err, secs = conform(["--backend-cmd", cmd, "--profile", "langflow-backend", "--filter", "RES-00[14]",
                              "--filter", "FB-*", "-j", "1", "--timeout-scale", "0.05",
                              "--json", os.path.join(TMP, "hang.json")], timeout=200)
check(rc == 2, f"hang: exit {rc}, expected 2: {err}")
if os.path.exists(os.path.join(TMP, "hang.json")):
    rows = report("hang.json")["checks"]
    notrun = [r for r in rows if r["verdict"] == "error" and r["reason"].startswith("not run:")]
    check(len(notrun) >= len(rows) - 4, f"hang: only {len(notrun)} of {len(rows)} checks were not run")
    check(notrun and "in a row" in notrun[0]["reason"] and "--max-timeouts" in notrun[0]["reason"],
          f"hang: reason does not explain: {notrun[:1]}")
no_leftover(marker)

# 17: an unreachable --mock-url is one harness error, not a row per check.
s = socket.socket()
s.bind(("127.0.0.1", 0))
port = s.getsockname()[1]
s.close()  # nothing listens there now
cmd, marker = driver("crash")
rc, out, err, secs = conform(["--mock-url", f"http://127.0.0.1:{port}", "--admin-token", "t",
                              "--backend-cmd", cmd, "--profile", "langflow-backend"])
check(rc == 2, f"unreachable: exit {rc}, expected 2: {err}")
check(err.count("harness error") == 1 and f"127.0.0.1:{port}" in err and out == "",
      f"unreachable: not one harness error naming the URL: out={out!r} err={err!r}")
check(secs < 10, f"unreachable: took {secs:.1f} s")
no_leftover(marker)

if FAILS:
    sys.exit(1)
print("ok")
