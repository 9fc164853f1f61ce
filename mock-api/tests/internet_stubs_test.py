#!/usr/bin/env python3
"""Stubs, sites, the journal and the opt-in upstream of the simulated
internet (issue 38 items 2 and 3, mock-api/INTERNET.md "Stubs, sites,
journal, upstream").

In guests of a real sbx-mock, with TLS verification on:
- a stub (from --internet-stubs and from POST /_mock/internet/stubs)
  answers GET https://api.example.test/v1/x with its body; a reset fault
  resets, close_mid_body cuts the body; prefix, regex, method, header and
  per-tenant matches; an unmatched request gets the "reached" page;
- an unknown key in a stub is a 400 naming it;
- a destination the guest's rules deny never reaches a stub: the journal
  shows nothing of that sandbox; the journal lists each request with its
  sandbox, host, method, path, status and stub;
- a site (--internet-site HOST=DIR) serves its files (GET, HEAD, types),
  a bare git repository to `git ls-remote https://…` (dumb HTTP, verified
  against the mock's CA), and refuses escapes ("..", %2e%2e, a symlink
  out) and other methods;
- a scenario's internet_stubs (--scenario FILE at start, POST
  /_mock/scenario {name}) answer a guest, a body_file beside the scenario
  file included; a bad entry refuses the scenario (at start, or a 400)
  naming the scenario, the stub and the key, and adds none of its stubs;
- devbox:1 (when built): apt-get update && apt-get install from an apt
  repository this test builds, and pip install from a simple index, both
  served as sites over https;
- upstream (root): a server in a network namespace this test makes,
  declared with --internet-upstream, is reached by an allowed guest over
  plain HTTP and over TLS passed through (its own certificate, not the
  mock's); a rule that denies it drops it; an address that is not
  declared gets the simulated page (nothing else leaves). The same
  declared by name (exact and *.suffix, resolved through --internet-hosts):
  by Host and by SNI; a name not declared, or a declared name dialled at
  an address the hosts file does not give it, stays simulated; a name the
  hosts file does not resolve stops the start.

Usage: internet_stubs_test.py SBX_MOCK
Exit 0 pass, 1 fail, 77 skipped (enforcement unavailable here).
"""
import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import egress_live_test as live  # noqa: E402  (the Mock harness)
import internet_tls_test as tls  # noqa: E402  (run, create, image_store)

SKIP = 77
FAILS = []
UP_NS_ADDR, UP_HOST_ADDR = "10.254.77.2", "10.254.77.1"

HOSTS = {"version": 1, "hosts": {
    "api.example.test": ["192.0.2.50"], "other.example.test": ["192.0.2.51"],
    "repo.test": ["192.0.2.60"], "pypi.test": ["192.0.2.61"], "scenario.example.test": ["192.0.2.70"]}}

FILE_STUBS = {"stubs": [
    {"match": {"host": "api.example.test", "scheme": "https", "method": "GET", "path": "/v1/x"},
     "respond": {"status": 200, "headers": {"Content-Type": "application/json", "X-Stub": "file"},
                 "body": "{\"answer\":\"from the stubs file\"}"}},
]}


def check(ok, what, detail=""):
    print(("ok   " if ok else "FAIL ") + what + ("" if ok else ": " + str(detail)[:1500]))
    if not ok:
        FAILS.append(what)


def curl(mock, key, sid, *args):
    return tls.run(mock, key, sid, ["curl", "-sS", "--max-time", "8", *args])


def start_refused(binary, hosts, *args):
    """(exit code, stderr) of a mock that should refuse to start;
    (None, "started") when it started instead (it is killed)."""
    try:
        r = subprocess.run([binary, "--listen", "127.0.0.1:0", "--self-listen", "off", "--internet-hosts", hosts,
                            *args], capture_output=True, text=True, timeout=30)
        return r.returncode, r.stderr
    except subprocess.TimeoutExpired:
        return None, "started"


def journal(mock, **q):
    qs = "&".join("%s=%s" % kv for kv in q.items())
    st, b = mock.call("GET", "/_mock/internet/journal" + ("?" + qs if qs else ""), admin=True)
    return b["data"]["entries"] if st == 200 else []


# ---- stubs and the journal ----

def stubs(mock):
    key = "stub"
    sid = tls.create(mock, key)
    r = curl(mock, key, sid, "-D-", "https://api.example.test/v1/x")
    check(r["exit_code"] == 0 and "from the stubs file" in r["stdout"] and "X-Stub: file" in r["stdout"],
          "a stub of --internet-stubs answers https://api.example.test/v1/x (verified)", r)

    st, b = mock.call("POST", "/_mock/internet/stubs", {"stubs": [
        {"match": {"host": "api.example.test", "path": "/v1/reset"}, "respond": {"fault": "reset"}},
        {"match": {"host": "api.example.test", "path": "/v1/cut"},
         "respond": {"body": "x" * 4000, "fault": "close_mid_body"}},
        {"match": {"host": "*.example.test", "path_prefix": "/v2/"}, "respond": {"status": 201, "body": "prefix"}},
        {"match": {"host": "api.example.test", "path_regex": "^/items/[0-9]+$", "method": "DELETE",
                   "header": {"name": "X-Mode", "value": "a"}},
         "respond": {"status": 204}},
        {"match": {"host": "api.example.test", "path": "/v1/mine"}, "tenant": "other",
         "respond": {"body": "other's"}},
        {"match": {"host": "api.example.test", "path": "/v1/slow"},
         "respond": {"body": "slow body, whole", "fault": "slow_body", "chunk_bytes": 4, "interval_ms": 1}},
    ]}, admin=True)
    check(st == 200 and len(b["data"]["ids"]) == 6, "POST /_mock/internet/stubs adds six", (st, b))
    ids = b["data"]["ids"] if st == 200 else [0] * 6

    r = curl(mock, key, sid, "https://api.example.test/v1/reset")
    check(r["exit_code"] != 0 and ("reset" in r["stderr"].lower() or r["exit_code"] in (35, 56)),
          "a reset fault resets the connection", r)
    r = curl(mock, key, sid, "http://api.example.test/v1/cut")
    check(r["exit_code"] in (18, 56) and 0 < len(r["stdout"]) < 4000, "close_mid_body cuts the body", r)
    r = curl(mock, key, sid, "-w", " %{http_code}", "https://other.example.test/v2/anything")
    check(r["exit_code"] == 0 and r["stdout"] == "prefix 201", "a wildcard host and a path prefix match", r)
    r = curl(mock, key, sid, "-X", "DELETE", "-H", "X-Mode: a", "-w", "%{http_code}",
             "https://api.example.test/items/42")
    check(r["stdout"] == "204", "regex path + method + header match", r)
    r = curl(mock, key, sid, "-X", "DELETE", "-H", "X-Mode: b", "https://api.example.test/items/42")
    check("reached 192.0.2.50:443" in r["stdout"], "another header value does not match: the page", r)
    r = curl(mock, key, sid, "https://api.example.test/v1/slow")
    check(r["stdout"] == "slow body, whole", "slow_body sends the whole body in pieces", r)
    r = curl(mock, key, sid, "https://api.example.test/v1/mine")
    check("reached" in r["stdout"], "another tenant's stub does not answer this tenant", r)
    other = tls.create(mock, "other")
    r = curl(mock, "other", other, "https://api.example.test/v1/mine")
    check(r["stdout"] == "other's", "a tenant's stub answers its own sandboxes", r)
    r = curl(mock, key, sid, "https://api.example.test/unmatched")
    check("reached 192.0.2.50:443" in r["stdout"], "an unmatched request gets the reached page", r)

    entries = journal(mock, sandbox_id=sid)
    paths = [(e["method"], e["path"], e["status"], e.get("stub"), e["via"]) for e in entries]
    check(len(entries) >= 9 and all(e["sandbox_id"] == sid and e["tenant"] == key for e in entries),
          "the journal lists each request with its sandbox and tenant", paths)
    check(("GET", "/v1/x", 200, 1, "stub") in paths and ("GET", "/v1/reset", 0, ids[0], "stub") in paths and
          ("GET", "/unmatched", 200, None, "page") in paths,
          "journal entries name the stub, the status and the path", paths)
    check(any(e["host"] == "api.example.test" and e["scheme"] == "https" and e.get("fault") == "reset"
              for e in entries), "the journal names host, scheme and fault", entries)

    st, b = mock.call("GET", "/_mock/internet/stubs/%d" % ids[2], admin=True)
    check(st == 200 and b["data"]["match"]["path_prefix"] == "/v2/", "GET a stub by id", (st, b))
    st, _ = mock.call("DELETE", "/_mock/internet/stubs/%d" % ids[2], admin=True)
    r = curl(mock, key, sid, "https://other.example.test/v2/anything")
    check(st == 200 and "reached" in r["stdout"], "a deleted stub answers no more", r)
    st, _ = mock.call("GET", "/_mock/internet/stubs/%d" % ids[2], admin=True)
    check(st == 404, "a deleted stub is gone (404)", st)


def validation(mock):
    cases = [({"match": {"host": "a.test", "pth": "/"}}, "match.pth"),
             ({"match": {"host": "a.test"}, "respnd": {}}, "respnd"),
             ({"match": {"host": "a.test"}, "respond": {"fault": "explode"}}, "explode"),
             ({"match": {"host": "a.test"}, "respond": {"status": 99}}, "respond.status"),
             ({"match": {"host": "a.test", "path_regex": "("}}, "path_regex"),
             ({"match": {"host": "a.test"}, "respond": {"headers": {"X": "a\r\nEvil: 1"}}}, "headers"),
             ({"match": {"host": "a.test"}, "respond": {"headers": {"Content-Length": "5"}}}, "Content-Length"),
             ({"match": {"path": "/"}}, "match.host")]
    for body, word in cases:
        st, b = mock.call("POST", "/_mock/internet/stubs", body, admin=True)
        msg = json.dumps(b)
        check(st == 400 and word in msg, "a bad stub is a 400 naming %s" % word, (st, msg))
    st, b = mock.call("POST", "/_mock/internet/stubs", {"stubs": [
        {"match": {"host": "ok.test"}}, {"match": {"host": "ok.test"}, "bad": 1}]}, admin=True)
    st2, l = mock.call("GET", "/_mock/internet/stubs", admin=True)
    check(st == 400 and "stub 1" in json.dumps(b) and
          not any(s["match"]["host"] == "ok.test" for s in l["data"]["stubs"]),
          "a batch with one bad stub adds none", (st, b, l))


def denied(mock):
    key = "deny"
    sid = tls.create(mock, key, egress=["10.0.0.0/8"])
    r = curl(mock, key, sid, "--connect-timeout", "3", "https://api.example.test/v1/x")
    check(r["exit_code"] == 28, "a denied destination times out (the SYN is dropped)", r)
    check(journal(mock, sandbox_id=sid) == [], "a denied destination never reaches a stub: no journal entry",
          journal(mock, sandbox_id=sid))


# ---- sites ----

def make_site(root):
    os.makedirs(os.path.join(root, "docs"))
    with open(os.path.join(root, "hello.txt"), "w") as f:
        f.write("hello from the site\n")
    with open(os.path.join(root, "docs", "index.html"), "w") as f:
        f.write("<p>docs index</p>\n")
    os.symlink("/etc/hostname", os.path.join(root, "out"))
    os.symlink("..", os.path.join(root, "up"))
    os.symlink("hello.txt", os.path.join(root, "inside"))
    os.mkfifo(os.path.join(root, "pipe"))
    # a bare repository git's dumb HTTP protocol reads (info/refs)
    work, bare = os.path.join(root, "..", "git-work"), os.path.join(root, "git", "demo.git")
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t", GIT_CONFIG_NOSYSTEM="1", HOME=root)
    for argv in (["git", "init", "-q", "-b", "main", work],
                 ["git", "-C", work, "commit", "-q", "--allow-empty", "-m", "first"],
                 ["git", "clone", "-q", "--bare", work, bare],
                 ["git", "-C", bare, "update-server-info"]):
        subprocess.run(argv, check=True, env=env, capture_output=True)
    head = subprocess.run(["git", "-C", bare, "rev-parse", "main"], check=True, env=env,
                          capture_output=True, text=True).stdout.strip()
    return head


def sites(mock, outside_name, git_head):
    key = "site"
    sid = tls.create(mock, key)
    r = tls.run(mock, key, sid, ["git", "ls-remote", "https://repo.test/git/demo.git"])
    check(r["exit_code"] == 0 and ("%s\trefs/heads/main" % git_head) in r["stdout"],
          "git ls-remote https://… (verified) lists a repository a site serves", r)
    r = curl(mock, key, sid, "-D-", "https://repo.test/hello.txt")
    check(r["exit_code"] == 0 and "hello from the site" in r["stdout"] and "Content-Type: text/plain" in r["stdout"],
          "a site serves a file over https, with its type", r)
    r = curl(mock, key, sid, "http://repo.test/docs/")
    check("docs index" in r["stdout"], "a directory serves its index.html", r)
    r = curl(mock, key, sid, "-I", "http://repo.test/hello.txt")
    check("200" in r["stdout"].split("\r\n")[0] and "Content-Length: 20" in r["stdout"], "HEAD", r)
    r = curl(mock, key, sid, "http://repo.test/inside")
    check("hello from the site" in r["stdout"], "a symlink inside the site is followed", r)
    for path, what in (("/../" + outside_name, "'..'"), ("/%2e%2e/" + outside_name, "%2e%2e"),
                       ("/out", "a symlink out"), ("/up/" + outside_name, "a symlink to .."),
                       ("/docs/../../" + outside_name, "'..' deeper")):
        r = curl(mock, key, sid, "--path-as-is", "-w", "%{http_code}", "-o", "/dev/null", "http://repo.test" + path)
        check(r["stdout"] in ("403", "404"), "an escape is refused: %s" % what, r)
    r = curl(mock, key, sid, "-w", "%{http_code}", "-o", "/dev/null", "http://repo.test/nope")
    check(r["stdout"] == "404", "a missing file is 404", r)
    r = curl(mock, key, sid, "-X", "POST", "-w", "%{http_code}", "-o", "/dev/null", "http://repo.test/hello.txt")
    check(r["stdout"] == "405", "POST to a site is 405", r)
    e = journal(mock, sandbox_id=sid, host="repo.test")
    check(any(x["via"] == "site" and x["path"] == "/hello.txt" and x["status"] == 200 for x in e) and
          any(x["status"] in (403, 404) and x["path"] == "/out" for x in e), "site requests are journaled", e)
    # a FIFO in the tree: refused at once, not an open(2) that waits for
    # a writer with the connection's thread (and the mock's stop) held
    r = curl(mock, key, sid, "-w", "%{http_code}", "-o", "/dev/null", "http://repo.test/pipe")
    check(r["exit_code"] == 0 and r["stdout"] == "403", "a FIFO in a site is refused (403), not waited on", r)
    # a file whose size says 0 but that reads more (/proc): exactly the
    # Content-Length goes, nothing a kept connection would take as the
    # next answer (dialled at repo.test's address: the Host header picks
    # the site)
    r = tls.run(mock, key, sid, ["python3", "-c", PY_RAW % ("192.0.2.60", "/hostname")])
    check(r["exit_code"] == 0 and r["stdout"].startswith("HTTP/1.1 200") and "Content-Length: 0" in r["stdout"]
          and r["stdout"].endswith("\r\n\r\n"), "a site sends exactly its Content-Length, however the file reads",
          r)


PY_RAW = r"""
import socket, sys
s = socket.create_connection(("%s", 80), timeout=8)
s.sendall(b"GET %s HTTP/1.1\r\nHost: proc.test\r\nConnection: close\r\n\r\n")
got = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    got += b
sys.stdout.write(got.decode("latin-1"))
"""


def unlisted_names(mock):
    """A site or a stub whose name the hosts file lacks resolves (to an
    address of 198.18.0.0/15, said at start for sites): the flag takes
    effect instead of a guest's NXDOMAIN."""
    key = "unlisted"
    sid = tls.create(mock, key)
    check(any(l.startswith("internet sites not in the hosts file (resolved in 198.18.0.0/15): ") and
              "unlisted.test=198.1" in l and "repo.test" not in l for l in mock.banner),
          "the start-up lines name the site the hosts file lacks and its address", mock.banner)
    r = curl(mock, key, sid, "https://unlisted.test/hello.txt")
    check(r["exit_code"] == 0 and "hello from the site" in r["stdout"],
          "a site whose name the hosts file lacks is served over verified https", r)
    r = tls.run(mock, key, sid, ["getent", "hosts", "unlisted.test"])
    check(r["exit_code"] == 0 and r["stdout"].startswith("198.1"), "its name resolves in 198.18.0.0/15", r)
    st, b = mock.call("POST", "/_mock/internet/stubs", {"stubs": [
        {"match": {"host": "stubonly.test", "path": "/x"}, "respond": {"body": "stub by name"}},
        {"match": {"host": "*.wild.test"}, "respond": {"body": "stub by wildcard"}}]}, admin=True)
    check(st == 200, "stubs for names the hosts file lacks are added", (st, b))
    r = curl(mock, key, sid, "https://stubonly.test/x")
    check(r["exit_code"] == 0 and r["stdout"] == "stub by name", "a stub's name the hosts file lacks resolves", r)
    r = curl(mock, key, sid, "https://a.wild.test/")
    check(r["exit_code"] == 0 and r["stdout"] == "stub by wildcard", "and a name under a wildcard stub's", r)
    r = tls.run(mock, key, sid, ["getent", "hosts", "nobody.test"])
    check(r["exit_code"] != 0, "a name no file, site or stub gives is still NXDOMAIN", r)


# ---- devbox:1: apt and pip against served sites ----

def build_apt_repo(root):
    pkg = os.path.join(root, "build", "sbx-hello")
    os.makedirs(os.path.join(pkg, "DEBIAN"))
    os.makedirs(os.path.join(pkg, "usr", "bin"))
    with open(os.path.join(pkg, "DEBIAN", "control"), "w") as f:
        f.write("Package: sbx-hello\nVersion: 1.0\nArchitecture: all\nMaintainer: sbx <sbx@example.test>\n"
                "Description: served by the simulated internet\n")
    with open(os.path.join(pkg, "usr", "bin", "sbx-hello"), "w") as f:
        f.write("#!/bin/sh\necho hello from an offline apt repository\n")
    os.chmod(os.path.join(pkg, "usr", "bin", "sbx-hello"), 0o755)
    repo = os.path.join(root, "apt")
    os.makedirs(repo)
    subprocess.run(["dpkg-deb", "--root-owner-group", "--build", pkg, os.path.join(repo, "sbx-hello_1.0_all.deb")],
                   check=True, capture_output=True)
    pk = subprocess.run(["dpkg-scanpackages", "-m", "."], cwd=repo, check=True, capture_output=True).stdout
    with open(os.path.join(repo, "Packages"), "wb") as f:
        f.write(pk)
    with open(os.path.join(repo, "Packages.gz"), "wb") as f:
        f.write(gzip.compress(pk))
    lines = ["Origin: sbx-test", "Label: sbx-test", "Suite: ./", "Date: " +
             time.strftime("%a, %d %b %Y %H:%M:%S UTC", time.gmtime()), "SHA256:"]
    for name in ("Packages", "Packages.gz"):
        data = open(os.path.join(repo, name), "rb").read()
        lines.append(" %s %d %s" % (hashlib.sha256(data).hexdigest(), len(data), name))
    with open(os.path.join(repo, "Release"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return repo


def build_simple_index(root):
    idx = os.path.join(root, "pypi")
    os.makedirs(os.path.join(idx, "simple", "sbx-hello-py"))
    os.makedirs(os.path.join(idx, "packages"))
    whl = "sbx_hello_py-1.0-py3-none-any.whl"
    files = {"sbx_hello_py.py": "def hello():\n    return 'hello from an offline index'\n",
             "sbx_hello_py-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: sbx-hello-py\nVersion: 1.0\n",
             "sbx_hello_py-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\n"
                                                 "Tag: py3-none-any\n"}
    record = []
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, text in files.items():
            data = text.encode()
            z.writestr(name, data)
            import base64
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append("%s,sha256=%s,%d" % (name, digest, len(data)))
        record.append("sbx_hello_py-1.0.dist-info/RECORD,,")
        z.writestr("sbx_hello_py-1.0.dist-info/RECORD", "\n".join(record) + "\n")
    data = buf.getvalue()
    with open(os.path.join(idx, "packages", whl), "wb") as f:
        f.write(data)
    with open(os.path.join(idx, "simple", "index.html"), "w") as f:
        f.write('<html><body><a href="sbx-hello-py/">sbx-hello-py</a></body></html>\n')
    with open(os.path.join(idx, "simple", "sbx-hello-py", "index.html"), "w") as f:
        f.write('<html><body><a href="../../packages/%s#sha256=%s">%s</a></body></html>\n'
                % (whl, hashlib.sha256(data).hexdigest(), whl))
    return idx


def on_image(binary, tmp, hosts):
    store = tls.image_store()
    if store is None:
        print("skip apt/pip on devbox:1: no image built (mock-api/images/build-image devbox:1)")
        return
    repo, idx = build_apt_repo(tmp), build_simple_index(tmp)
    mock = live.Mock(binary, hosts, ["--images", store, "--internet-site", "repo.test=" + repo,
                                     "--internet-site", "pypi.test=" + idx])
    try:
        st, b = mock.call("POST", "/v1/sandboxes", {"shape": "s-1vcpu-1gb", "rootfs": "devbox:1"}, key="img")
        if st != 200:
            raise RuntimeError("create on devbox:1: %s %s" % (st, b))
        sid = b["data"]["id"]
        script = ("rm -f /etc/apt/sources.list /etc/apt/sources.list.d/*; "
                  "echo 'deb [trusted=yes] https://repo.test/ ./' > /etc/apt/sources.list.d/sbx.list; "
                  "apt-get update && apt-get install -y sbx-hello && sbx-hello")
        r = tls.run(mock, "img", sid, ["sh", "-c", script])
        check(r["exit_code"] == 0 and "hello from an offline apt repository" in r["stdout"],
              "apt-get update && apt-get install -y sbx-hello from a served repository (https)", r)
        r = tls.run(mock, "img", sid, ["sh", "-c",
                                       "pip install --break-system-packages --no-cache-dir "
                                       "--index-url https://pypi.test/simple sbx-hello-py && "
                                       "python3 -c 'import sbx_hello_py; print(sbx_hello_py.hello())'"])
        check(r["exit_code"] == 0 and "hello from an offline index" in r["stdout"],
              "pip install --index-url https://pypi.test/simple from a served simple index", r)
        e = journal(mock, sandbox_id=sid)
        check(any(x["host"] == "repo.test" and x["path"].endswith(".deb") and x["status"] == 200 for x in e),
              "the .deb download is journaled", [(x["host"], x["path"], x["status"]) for x in e])
    finally:
        mock.stop()


# ---- scenarios ----

def scenario_files(tmp):
    """Two directories: one a scenario is given from by path (its stub's
    body_file beside it), the other the --scenario-dir names are found in."""
    by_path, by_name = os.path.join(tmp, "scen-path"), os.path.join(tmp, "scen-dir")
    for d in (by_path, by_name):
        os.makedirs(d)
    with open(os.path.join(by_path, "answer.json"), "w") as f:
        f.write('{"answer":"a file beside the scenario"}')
    with open(os.path.join(by_path, "offline-api.json"), "w") as f:
        json.dump({"name": "offline-api", "description": "an API the guest calls, answered offline",
                   "internet_stubs": [
                       {"match": {"host": "scenario.example.test", "path": "/v1/inline"},
                        "respond": {"status": 202, "body": "inline from the start scenario"}},
                       {"match": {"host": "scenario.example.test", "path": "/v1/file"},
                        "respond": {"headers": {"Content-Type": "application/json"}, "body_file": "answer.json"}}]},
                  f)
    with open(os.path.join(by_name, "later-api.json"), "w") as f:
        json.dump({"name": "later-api", "internet_stubs": [
            {"match": {"host": "scenario.example.test", "path": "/v1/later"}, "respond": {"body": "loaded by name"}}]},
            f)
    with open(os.path.join(by_name, "bad-stubs.json"), "w") as f:
        json.dump({"name": "bad-stubs", "internet_stubs": [
            {"match": {"host": "scenario.example.test", "path": "/v1/half"}, "respond": {"body": "half applied"}},
            {"match": {"host": "scenario.example.test", "pth": "/v1/typo"}, "respond": {"body": "never"}}]}, f)
    return by_path, by_name


def scenarios(binary, tmp, hosts):
    by_path, by_name = scenario_files(tmp)
    bad = os.path.join(by_name, "bad-stubs.json")
    refused = start_refused(binary, hosts, "--scenario", bad)
    check(refused[0] not in (None, 0) and "bad-stubs.json" in refused[1] and "stub 1" in refused[1] and
          "match.pth" in refused[1], "--scenario with a bad internet_stubs entry stops the start, naming where",
          refused)
    mock = live.Mock(binary, hosts, ["--scenario", os.path.join(by_path, "offline-api.json"),
                                     "--scenario-dir", by_name])
    try:
        sid = tls.create(mock, "scen")
        r = curl(mock, "scen", sid, "-w", " %{http_code}", "https://scenario.example.test/v1/inline")
        check(r["exit_code"] == 0 and r["stdout"] == "inline from the start scenario 202",
              "a --scenario's internet_stubs answer a guest (https, verified)", r)
        r = curl(mock, "scen", sid, "-D-", "https://scenario.example.test/v1/file")
        check(r["exit_code"] == 0 and r["stdout"].endswith('{"answer":"a file beside the scenario"}') and
              "application/json" in r["stdout"], "a scenario stub's body_file is read beside the scenario file", r)
        st, b = mock.call("POST", "/_mock/scenario", {"name": "later-api"}, admin=True)
        r = curl(mock, "scen", sid, "http://scenario.example.test/v1/later")
        check(st == 200 and r["stdout"] == "loaded by name",
              "POST /_mock/scenario {name} adds its internet_stubs", (st, b, r))
        st, b = mock.call("POST", "/_mock/scenario", {"name": "bad-stubs"}, admin=True)
        msg = json.dumps(b)
        check(st == 400 and "bad-stubs" in msg and "stub 1" in msg and "match.pth" in msg,
              "a bad internet_stubs entry is a 400 naming the scenario, the stub and the key", (st, b))
        r = curl(mock, "scen", sid, "http://scenario.example.test/v1/half")
        check("reached 192.0.2.70:80" in r["stdout"], "a refused scenario adds none of its stubs", r)
    finally:
        mock.stop()


# ---- upstream ----

UP_TLS_SERVER = r"""
import http.server, ssl, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"the real upstream over TLS\n"
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
s = http.server.HTTPServer((sys.argv[1], 8443), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain(sys.argv[2], sys.argv[3])
s.socket = ctx.wrap_socket(s.socket, server_side=True)
s.serve_forever()
"""


def netns_up(ns, link, host_addr, ns_addr):
    """Network namespace ns with a veth to the host's: link+"a" in the
    host's at host_addr/30, link+"b" in ns at ns_addr/30, lo up. Undone
    by netns_down, also when this fails half-way."""
    sh = lambda *a: subprocess.run(a, check=True, capture_output=True)  # noqa: E731
    sh("ip", "netns", "add", ns)
    try:
        sh("ip", "link", "add", link + "a", "type", "veth", "peer", "name", link + "b")
        sh("ip", "link", "set", link + "b", "netns", ns)
        sh("ip", "addr", "add", host_addr + "/30", "dev", link + "a")
        sh("ip", "link", "set", link + "a", "up")
        sh("ip", "-n", ns, "addr", "add", ns_addr + "/30", "dev", link + "b")
        sh("ip", "-n", ns, "link", "set", link + "b", "up")
        sh("ip", "-n", ns, "link", "set", "lo", "up")
    except Exception:
        netns_down(ns, link)
        raise


def netns_wait(ns, addr, ports):
    """Until a server in ns listens on addr at each port (10 s each)."""
    for port in ports:
        for _ in range(100):
            if subprocess.run(["ip", "netns", "exec", ns, "bash", "-c", "exec 3<>/dev/tcp/%s/%d" % (addr, port)],
                              capture_output=True).returncode == 0:
                break
            time.sleep(0.1)


def netns_down(ns, link):
    subprocess.run(["ip", "link", "del", link + "a"], capture_output=True)
    subprocess.run(["ip", "netns", "del", ns], capture_output=True)


class Upstream:
    """A network namespace of this test's own with a veth to the host's
    and an HTTP (8080) and an HTTPS (8443) server in it."""

    def __init__(self, tmp):
        tag = str(os.getpid() % 100000)
        self.ns, self.link = "sbxup" + tag, "sbxu" + tag
        self.procs = []
        sh = lambda *a: subprocess.run(a, check=True, capture_output=True)  # noqa: E731
        netns_up(self.ns, self.link, UP_HOST_ADDR, UP_NS_ADDR)
        try:
            www = os.path.join(tmp, "up-www")
            os.makedirs(www)
            with open(os.path.join(www, "up.txt"), "w") as f:
                f.write("the real upstream over HTTP\n")
            crt, key = os.path.join(tmp, "up.crt"), os.path.join(tmp, "up.key")
            sh("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
               "-keyout", key, "-out", crt, "-days", "2", "-subj", "/CN=upstream.test")
            self.procs.append(subprocess.Popen(["ip", "netns", "exec", self.ns, sys.executable, "-m", "http.server",
                                                "8080", "--bind", UP_NS_ADDR], cwd=www,
                                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            self.procs.append(subprocess.Popen(["ip", "netns", "exec", self.ns, sys.executable, "-c", UP_TLS_SERVER,
                                                UP_NS_ADDR, crt, key],
                                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            netns_wait(self.ns, UP_NS_ADDR, (8080, 8443))
        except Exception:
            self.close()
            raise

    def close(self):
        for p in self.procs:
            p.terminate()
            p.wait()
        netns_down(self.ns, self.link)


def upstream(binary, tmp, hosts):
    if os.geteuid() != 0 or shutil.which("ip") is None:
        print("skip upstream: needs root and ip(8) to make the test's own network namespace")
        return
    up = Upstream(tmp)
    mock = live.Mock(binary, hosts, ["--internet-upstream", UP_NS_ADDR + "/32"])
    try:
        st, b = mock.call("GET", "/_mock/settings", admin=True)
        check(b["data"].get("internet_upstream") == UP_NS_ADDR + "/32", "GET /_mock/settings names the upstream", b)
        sid = tls.create(mock, "up")
        r = curl(mock, "up", sid, "http://%s:8080/up.txt" % UP_NS_ADDR)
        check(r["stdout"] == "the real upstream over HTTP\n", "an allowed guest reaches the declared upstream (HTTP)", r)
        r = curl(mock, "up", sid, "-v", "--cacert", "/etc/sbx-internet-ca.crt", "https://%s:8443/" % UP_NS_ADDR)
        check(r["exit_code"] == 60, "TLS to the upstream is passed through: the mock's CA does not verify it", r)
        r = curl(mock, "up", sid, "-k", "-v", "https://%s:8443/" % UP_NS_ADDR)
        check(r["stdout"] == "the real upstream over TLS\n" and "upstream.test" in r["stderr"],
              "TLS to the upstream reaches the real server with its own certificate", r)
        r = curl(mock, "up", sid, "http://%s:8080/up.txt" % UP_HOST_ADDR)
        check("reached %s:8080" % UP_HOST_ADDR in r["stdout"], "an undeclared address stays simulated", r)
        e = journal(mock, sandbox_id=sid)
        check(any(x["via"] == "upstream" and x["path"] == "/up.txt" for x in e), "upstream flows are journaled", e)
        denied = tls.create(mock, "up", egress=["192.0.2.0/24"])
        r = curl(mock, "up", denied, "--connect-timeout", "3", "http://%s:8080/up.txt" % UP_NS_ADDR)
        check(r["exit_code"] == 28, "a rule that denies the upstream drops it", r)
    finally:
        mock.stop()
    try:
        upstream_by_name(binary, tmp)
    finally:
        up.close()


# names the resolver gives the test's namespace: two declared (one exact,
# one under a wildcard), one not
UP_HOSTS = {"version": 1, "hosts": {"up.example.test": [UP_NS_ADDR], "a.wild.test": [UP_NS_ADDR],
                                    "plain.example.test": [UP_NS_ADDR]}}


def upstream_by_name(binary, tmp):
    hosts = os.path.join(tmp, "up-hosts.json")
    with open(hosts, "w") as f:
        json.dump(UP_HOSTS, f)
    refused = start_refused(binary, hosts, "--internet-upstream", "up.example.test,nowhere.test")
    check(refused[0] not in (None, 0) and "nowhere.test" in refused[1] and "--internet-hosts" in refused[1],
          "an upstream name the hosts file does not resolve stops the start, naming it", refused)
    mock = live.Mock(binary, hosts, ["--internet-upstream", "up.example.test,*.wild.test"])
    try:
        sid = tls.create(mock, "upn")
        r = curl(mock, "upn", sid, "http://up.example.test:8080/up.txt")
        check(r["stdout"] == "the real upstream over HTTP\n", "a guest reaches an upstream declared by name (HTTP, Host)", r)
        r = curl(mock, "upn", sid, "http://a.wild.test:8080/up.txt")
        check(r["stdout"] == "the real upstream over HTTP\n", "a name under a declared *.suffix goes upstream", r)
        r = curl(mock, "upn", sid, "-v", "https://up.example.test:8443/")
        check(r["exit_code"] == 60, "TLS to a name declared upstream is passed through by SNI, not terminated", r)
        r = curl(mock, "upn", sid, "-k", "-v", "https://up.example.test:8443/")
        check(r["stdout"] == "the real upstream over TLS\n" and "upstream.test" in r["stderr"],
              "TLS by SNI reaches the real server with its own certificate", r)
        r = curl(mock, "upn", sid, "http://plain.example.test:8080/up.txt")
        check("reached %s:8080" % UP_NS_ADDR in r["stdout"], "a name not declared stays simulated (HTTP)", r)
        r = curl(mock, "upn", sid, "https://plain.example.test:8443/")
        check(r["exit_code"] == 0 and "reached %s:8443" % UP_NS_ADDR in r["stdout"],
              "a name not declared stays simulated (TLS terminated under the mock's CA)", r)
        # the name is the guest's to claim; the address is the hosts file's
        r = curl(mock, "upn", sid, "-H", "Host: up.example.test", "http://%s:8080/up.txt" % UP_HOST_ADDR)
        check("reached %s:8080" % UP_HOST_ADDR in r["stdout"],
              "a declared name dialled at another address stays simulated (the Host header opens nothing)", r)
        r = curl(mock, "upn", sid, "--resolve", "up.example.test:8443:" + UP_HOST_ADDR,
                 "https://up.example.test:8443/")
        check(r["exit_code"] == 0 and "reached %s:8443" % UP_HOST_ADDR in r["stdout"],
              "a declared SNI dialled at another address stays simulated", r)
        e = journal(mock, sandbox_id=sid)
        check(sum(1 for x in e if x["via"] == "upstream") == 4 and
              any(x["via"] == "upstream" and x["host"] == "up.example.test" and x["path"] == "/up.txt" for x in e),
              "the flows by name are journaled as upstream, the others not", [(x["host"], x["via"]) for x in e])
        denied = tls.create(mock, "upn", egress=["192.0.2.0/24"])
        r = curl(mock, "upn", denied, "--connect-timeout", "3", "http://up.example.test:8080/up.txt")
        check(r["exit_code"] == 28, "a rule that denies a name declared upstream drops it (HTTP)", r)
        r = curl(mock, "upn", denied, "-k", "--connect-timeout", "3", "https://up.example.test:8443/")
        check(r["exit_code"] == 28, "a rule that denies a name declared upstream drops it (TLS)", r)
        check(not any(x["via"] == "upstream" for x in journal(mock, sandbox_id=denied)),
              "nothing of the denied guest reaches the way out", journal(mock, sandbox_id=denied))
    finally:
        mock.stop()


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    binary = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="sbx-stubs-")
    os.chmod(tmp, 0o755)
    try:
        hosts = os.path.join(tmp, "hosts.json")
        with open(hosts, "w") as f:
            json.dump(HOSTS, f)
        with open(os.path.join(tmp, "stubs.json"), "w") as f:
            json.dump(FILE_STUBS, f)
        with open(os.path.join(tmp, "outside.txt"), "w") as f:
            f.write("outside the site\n")
        site = os.path.join(tmp, "site")
        git_head = make_site(site)
        mock = live.Mock(binary, hosts, ["--internet-stubs", os.path.join(tmp, "stubs.json"),
                                         "--internet-site", "repo.test=" + site,
                                         "--internet-site", "unlisted.test=" + site,
                                         "--internet-site", "proc.test=/proc/sys/kernel"])
        try:
            if not mock.enforced:
                print("skip: egress is not enforced here")
                return SKIP
            stubs(mock)
            validation(mock)
            denied(mock)
            sites(mock, "outside.txt", git_head)
            unlisted_names(mock)
        finally:
            mock.stop()
        scenarios(binary, tmp, hosts)
        on_image(binary, tmp, hosts)
        upstream(binary, tmp, hosts)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("internet_stubs: %s" % ("FAIL: " + "; ".join(FAILS) if FAILS else "all passed"))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
