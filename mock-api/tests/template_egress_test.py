#!/usr/bin/env python3
"""A template build's RUN steps reach the simulated internet (issue 37
item 2; mock-api/TEMPLATES.md "Egress of a build").

Usage: template_egress_test.py SBX_MOCK

With devbox:1 built (mock-api/images/build-image) and enforced egress:
- a RUN fetches from a stub over https (verification on: the mock's CA is
  in the builder's trust store) and writes the body to a file; a tenant's
  stub answers its own build; a second RUN runs apt-get update && apt-get
  install -y from an apt repository served with --internet-site; a
  sandbox on the template sees both; the journal names the builder;
- a RUN that dials a name nothing answers fails the build with the step's
  log;
- while a step runs, the links view counts the builder; after every build
  has ended (ready, failed, deleted mid-build, reset mid-build) it holds
  no builder and no chain or map entry beyond the sandboxes';
- with --egress stored the log says once that the steps have no network.

Exit 0 pass, 1 fail, 77 skipped (no image, or no enforcement here).
"""
import json
import os
import shutil
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import egress_live_test as live  # noqa: E402  (the Mock harness)
import internet_stubs_test as stubs  # noqa: E402  (check, build_apt_repo, HOSTS)
import internet_tls_test as tls  # noqa: E402  (run, image_store)

SKIP = 77
KEY = "bt"
BASE = "FROM nodeops/sandbox:debian\n"


def template(mock, name, dockerfile, key=KEY):
    st, b = mock.call("POST", "/v1/templates", {"name": name, "dockerfile": dockerfile}, key=key)
    if st not in (200, 201, 202):
        raise RuntimeError("template %s: %s %s" % (name, st, b))
    return b["data"]["id"]


def log_of(mock, tid, key=KEY):
    req = urllib.request.Request(mock.url + "/v1/templates/%s/logs" % tid)
    req.add_header("X-Api-Key", key)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return "(logs: %d)" % e.code


def until(what, fn, limit_s=300):
    """Waits for fn() to be true (a build's progress, not a timing claim);
    the limit only keeps a broken mock from hanging the test."""
    deadline = time.time() + limit_s
    while time.time() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(0.2)
    raise RuntimeError("gave up waiting for " + what)


def status(mock, tid, key=KEY):
    st, b = mock.call("GET", "/v1/templates/%s" % tid, key=key)
    return b["data"]["status"] if st == 200 else "gone(%d)" % st


def finished(mock, tid):
    return until("the build of " + tid, lambda: (lambda s: s if s in ("ready", "failed") else None)(status(mock, tid)))


def links(mock):
    st, b = mock.call("GET", "/_mock/egress/links", admin=True)
    if st != 200:
        raise RuntimeError("links: %s %s" % (st, b))
    return b["data"]


def no_builder_left(mock, what):
    """Once the build's thread has ended nothing of its builder remains:
    the list's entry, its chain and its map entry."""
    deadline = time.time() + 60  # the cancelled step's kill, then the thread's end
    while links(mock)["builders"] != 0 and time.time() < deadline:
        time.sleep(0.2)
    v = links(mock)
    stubs.check(v["builders"] == 0 and v["kernel_chains"] == v["sandboxes"] + v["made_ahead"] and
                v["kernel_map_entries"] == v["sandboxes"] + v["made_ahead"],
                "no builder's link, chain or map entry left after " + what, v)


def fetch_and_apt(mock):
    st, b = mock.call("POST", "/_mock/internet/stubs", {"stubs": [
        {"match": {"host": "api.example.test", "scheme": "https", "method": "GET", "path": "/v1/seed"},
         "respond": {"body": "seeded by a stub\n"}},
        {"match": {"host": "api.example.test", "path": "/v1/mine"}, "tenant": KEY,
         "respond": {"body": "the build's tenant's stub\n"}},
    ]}, admin=True)
    stubs.check(st == 200, "two stubs added", (st, b))
    tid = template(mock, "fetched", BASE +
                   "RUN curl -fsS https://api.example.test/v1/seed > /etc/seeded && "
                   "curl -fsS https://api.example.test/v1/mine > /etc/mine\n"
                   "RUN rm -f /etc/apt/sources.list /etc/apt/sources.list.d/* && "
                   "echo 'deb [trusted=yes] https://repo.test/ ./' > /etc/apt/sources.list.d/sbx.list && "
                   "apt-get update && apt-get install -y sbx-hello\n")
    end = finished(mock, tid)
    log = log_of(mock, tid)
    stubs.check(end == "ready", "a build whose RUNs use a stub (https) and a served apt repository is ready",
                log[-3000:])
    stubs.check(log.count("network: the simulated internet at 10.232.") == 1,
                "the build's log says once which network its steps have", log[:800])
    e = stubs.journal(mock, sandbox_id="build-" + tid)
    seen = [(x["host"], x["path"], x["via"], x["tenant"]) for x in e]
    stubs.check(("api.example.test", "/v1/seed", "stub", KEY) in seen and
                any(x[0] == "repo.test" and x[1].endswith(".deb") and x[2] == "site" for x in seen),
                "the journal names the builder and its tenant for the build's requests", seen)
    if end != "ready":
        return
    st, b = mock.call("POST", "/v1/sandboxes", {"shape": "s-1vcpu-1gb", "rootfs": tid}, key=KEY)
    if st != 200:
        stubs.check(False, "a sandbox on the template starts", (st, b))
        return
    sid = b["data"]["id"]
    r = tls.run(mock, KEY, sid, ["sh", "-c", "cat /etc/seeded /etc/mine && sbx-hello"])
    stubs.check(r["exit_code"] == 0 and r["stdout"] == "seeded by a stub\nthe build's tenant's stub\n"
                "hello from an offline apt repository\n",
                "a sandbox on the template sees what the build fetched and installed", r)
    mock.call("DELETE", "/v1/sandboxes/%s" % sid, key=KEY)


def unreachable(mock):
    tid = template(mock, "unreachable", BASE + "RUN curl -fsS --max-time 20 https://nowhere.invalid/ > /etc/x\n")
    end = finished(mock, tid)
    log = log_of(mock, tid)
    stubs.check(end == "failed" and "build failed at step 1/1 (line 2) RUN: exit status 6" in log and
                "Could not resolve host: nowhere.invalid" in log,
                "a RUN that dials a name nothing answers fails the build, with the step's log", log[-1500:])


def ended_mid_build(mock):
    """A build deleted, and one reset, while its step runs: the step is
    seen running (with the builder counted) before it is ended."""
    for how in ("delete", "reset"):
        tid = template(mock, "held-" + how, BASE + "RUN echo step-started && sleep 600\n")
        until("the step of " + tid, lambda: "step-started" in log_of(mock, tid))
        v = links(mock)
        stubs.check(v["builders"] == 1 and v["kernel_chains"] == v["sandboxes"] + v["made_ahead"] + 1,
                    "a running build's builder is wired (%s case)" % how, v)
        if how == "delete":
            st, _ = mock.call("DELETE", "/v1/templates/%s" % tid, key=KEY)
            stubs.check(st in (200, 204), "a template is deleted mid-build", st)
        else:
            st, _ = mock.call("POST", "/_mock/reset", {}, admin=True)
            stubs.check(st == 200, "the mock is reset mid-build", st)
        no_builder_left(mock, "a build %s mid-step" % ("deleted" if how == "delete" else "reset"))


def without_enforcement(binary, hosts, store):
    mock = live.Mock(binary, hosts, ["--images", store, "--egress", "stored"])
    try:
        tid = template(mock, "offline", BASE + "RUN curl -fsS --max-time 5 http://192.0.2.50/ || echo no-net\n")
        end = finished(mock, tid)
        log = log_of(mock, tid)
        stubs.check(end == "ready" and log.count("network: none: egress is not enforced") == 1 and
                    "no-net" in log,
                    "without enforced egress the log says once that the steps have no network", log[:1500])
    finally:
        mock.stop()


def main():
    binary, store = sys.argv[1] if len(sys.argv) == 2 else None, tls.image_store()
    if binary is None or store is None:
        print(__doc__ if binary is None else
              "skip: devbox:1 is not built (mock-api/images/build-image devbox:1): template builds need it")
        return 2 if binary is None else SKIP
    tmp = tempfile.mkdtemp(prefix="sbx-tplnet-")
    os.chmod(tmp, 0o755)
    try:
        hosts = os.path.join(tmp, "hosts.json")
        with open(hosts, "w") as f:
            json.dump(stubs.HOSTS, f)
        repo = stubs.build_apt_repo(tmp)
        mock = live.Mock(binary, hosts, ["--images", store, "--internet-site", "repo.test=" + repo])
        try:
            if not mock.enforced:
                print("skip: egress is not enforced here (sbx-mock's start-up warning says why)")
                return SKIP
            fetch_and_apt(mock)
            unreachable(mock)
            no_builder_left(mock, "builds ready and failed")
            ended_mid_build(mock)
        finally:
            mock.stop()
        without_enforcement(binary, hosts, store)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("template_egress: %s" % ("FAIL: " + "; ".join(stubs.FAILS) if stubs.FAILS else "all passed"))
    return 1 if stubs.FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
