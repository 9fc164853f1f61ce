#!/usr/bin/env python3
"""Record once, replay offline: the guests' internet as a cassette
(issue 47, mock-api/INTERNET.md "Record and replay the guests' internet").

Upstreams live only in a network namespace this test makes, behind a CA
this test makes (openssl req), given to the mock with --internet-record-ca:
a Debian-style repository over http and over https (Release with
Acquire-By-Hash, by-hash/SHA256 indexes, a .deb each), a PyPI simple index
with a wheel, an npm registry (metadata and a tarball), git http-backend
(smart HTTP) and plain downloads (chunked, gzip as sent).

In devbox:1 guests of a real sbx-mock:
- recording (--internet-record, --internet-record-allow, -resolve):
  apt-get update && apt-get install over http and https, pip install,
  npm install, git clone and curl downloads succeed through the mock's own
  verified connections; the cassette holds their exchanges (bodies by
  hash, gzip bytes as sent, chunked said);
- the upstreams stopped, a FRESH mock with --internet-replay runs the same
  installs in a fresh sandbox: they succeed and the guest's files are
  byte-identical (sha256 of each installed file);
- a cassette with one exchange pruned: the request is a 502 whose body
  names it and the nearest recorded one, and the journal's entry says the
  same (via "cassette", cassette_miss);
- a scenario file's {"internet_cassette": {"replay": DIR}} (relative to
  the file) is replayed; one naming a missing cassette stops the start;
- a start is refused, naming why, for record and replay together, record
  without -allow, and a cassette whose body file was changed.

Needs root (the namespace) and devbox:1: exit 77 otherwise (a failure
under CI=true, as the other image tests).
Usage: internet_cassette_test.py SBX_MOCK [SBXCTL]  (with SBXCTL: its cassette check must accept what the mock wrote)
"""
import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import egress_live_test as live  # noqa: E402  (the Mock harness)
import internet_stubs_test as stubs  # noqa: E402  (build_apt_repo, build_simple_index)
import internet_tls_test as tls  # noqa: E402  (create, image_store)

SKIP = 77
FAILS = []
UP_NS_ADDR, UP_HOST_ADDR = "10.254.78.2", "10.254.78.1"
NAMES = ["deb.test", "pypi.test", "npm.test", "git.test", "files.test"]
HOSTS = {"version": 1, "hosts": {"unrelated.test": ["192.0.2.99"]}}

# The upstreams: one server for every name, plain on 80 and TLS on 443;
# static files from a root, chunked and gzip downloads, git http-backend.
UPSTREAM = r"""
import http.server, os, socketserver, ssl, subprocess, sys, threading
root, crt, key, addr = sys.argv[1:5]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def send_body(self, status, body, headers=()):
        self.send_response(status)
        for k, v in headers: self.send_header(k, v)
        self.send_header("Content-Length", str(len(body))); self.end_headers()
        if self.command != "HEAD": self.wfile.write(body)
    def git(self):
        path, _, query = self.path.partition("?")
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        env = dict(os.environ, GIT_PROJECT_ROOT=os.path.join(root, "git"), GIT_HTTP_EXPORT_ALL="1",
                   PATH_INFO=path, QUERY_STRING=query, REQUEST_METHOD=self.command,
                   CONTENT_TYPE=self.headers.get("Content-Type", ""), CONTENT_LENGTH=str(len(body)),
                   HTTP_CONTENT_ENCODING=self.headers.get("Content-Encoding", ""),
                   GIT_PROTOCOL=self.headers.get("Git-Protocol", ""), REMOTE_ADDR="127.0.0.1")
        out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True).stdout
        head, _, rest = out.partition(b"\r\n\r\n")
        status, hdrs = 200, []
        for line in head.split(b"\r\n"):
            k, _, v = line.decode().partition(": ")
            if k.lower() == "status": status = int(v.split()[0])
            elif k: hdrs.append((k, v))
        self.send_body(status, rest, hdrs)
    def do_POST(self):
        self.git()
    def do_HEAD(self):
        self.do_GET()
    def do_GET(self):
        p = self.path.split("?")[0]
        if p.startswith("/repo.git/"): return self.git()
        if p == "/files/chunked.bin":
            data = open(os.path.join(root, "files", "chunked.bin"), "rb").read()
            self.send_response(200); self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Transfer-Encoding", "chunked"); self.end_headers()
            for i in range(0, len(data), 70000):
                c = data[i:i + 70000]
                self.wfile.write(b"%x\r\n" % len(c) + c + b"\r\n")
            self.wfile.write(b"0\r\n\r\n"); return
        if p == "/files/data.txt.gz":
            return self.send_body(200, open(os.path.join(root, "files", "data.txt.gz"), "rb").read(),
                                  [("Content-Type", "text/plain"), ("Content-Encoding", "gzip")])
        if p == "/sbx-hello-npm": p = "/npm-meta.json"
        f = os.path.normpath(os.path.join(root, p.lstrip("/")))
        if os.path.isdir(f): f = os.path.join(f, "index.html")
        if not f.startswith(root) or not os.path.isfile(f):
            return self.send_body(404, b"not found\n", [("Content-Type", "text/plain")])
        ctype = "text/html" if f.endswith(".html") else "application/json" if f.endswith(".json") else \
            "application/octet-stream"
        self.send_body(200, open(f, "rb").read(), [("Content-Type", ctype)])
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
plain = S((addr, 80), H)
tls = S((addr, 443), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain(crt, key)
tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
threading.Thread(target=plain.serve_forever, daemon=True).start()
tls.serve_forever()
"""

# What the guest runs: every install, then each installed file's sha256.
GUEST = r"""
set -e
rm -f /etc/apt/sources.list /etc/apt/sources.list.d/*
cat > /etc/apt/sources.list.d/cassette.list <<EOF
deb [trusted=yes] http://deb.test/debian stable main
deb [trusted=yes] https://deb.test/debian-s stable main
EOF
apt-get -o Acquire::Languages=none update -q >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; exit 11; }
apt-get install -y -q sbx-hello sbx-hello-s >>/tmp/apt.log 2>&1 || { cat /tmp/apt.log; exit 12; }
pip install -q --break-system-packages --no-cache-dir --disable-pip-version-check \
    --index-url https://pypi.test/simple sbx-hello-py || exit 13
mkdir -p /tmp/p && cd /tmp/p
npm install --registry https://npm.test/ --no-audit --no-fund --cache /tmp/npmcache sbx-hello-npm \
    >/tmp/npm.log 2>&1 || { cat /tmp/npm.log; exit 14; }
git clone -q https://git.test/repo.git /tmp/clone || exit 15
curl -sSf -o /tmp/chunked.bin https://files.test/files/chunked.bin || exit 16
curl -sSf -o /tmp/data.txt.gz http://files.test/files/data.txt.gz || exit 17
sha256sum /usr/bin/sbx-hello /usr/bin/sbx-hello-s \
  $(python3 -c 'import sbx_hello_py; print(sbx_hello_py.__file__)') \
  /tmp/p/node_modules/sbx-hello-npm/index.js /tmp/clone/README /tmp/chunked.bin /tmp/data.txt.gz
"""


def check(ok, what, detail=""):
    print(("ok   " if ok else "FAIL ") + what + ("" if ok else ": " + str(detail)[:2500]))
    if not ok:
        FAILS.append(what)


def sh(*a, **kw):
    return subprocess.run(a, check=True, capture_output=True, **kw)


def make_ca(tmp):
    """A CA of this test's own and one leaf for every name: (ca.crt, leaf.crt, leaf.key)."""
    ca_crt, ca_key = os.path.join(tmp, "ca.crt"), os.path.join(tmp, "ca.key")
    crt, key = os.path.join(tmp, "up.crt"), os.path.join(tmp, "up.key")
    sh("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
       "-keyout", ca_key, "-out", ca_crt, "-days", "2", "-subj", "/CN=cassette test CA",
       "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    sh("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
       "-keyout", key, "-out", crt, "-days", "2", "-subj", "/CN=deb.test", "-CA", ca_crt, "-CAkey", ca_key,
       "-addext", "subjectAltName=" + ",".join("DNS:" + n for n in NAMES),
       "-addext", "basicConstraints=critical,CA:FALSE", "-addext", "extendedKeyUsage=serverAuth")
    return ca_crt, crt, key


def apt_repo(tmp, root, sub, pkg):
    """A Debian-style repository at root/sub: dists/stable/Release naming
    its indexes (Acquire-By-Hash), the indexes also under by-hash/SHA256,
    and pool/ with pkg's .deb."""
    flat = stubs.build_apt_repo(os.path.join(tmp, sub))  # Packages, Packages.gz and sbx-hello_1.0_all.deb
    base = os.path.join(root, sub)
    binary = os.path.join(base, "dists", "stable", "main", "binary-all")
    os.makedirs(os.path.join(binary, "by-hash", "SHA256"))
    os.makedirs(os.path.join(base, "pool"))
    deb = os.path.join(base, "pool", pkg + "_1.0_all.deb")
    if pkg == "sbx-hello":
        shutil.copy(os.path.join(flat, "sbx-hello_1.0_all.deb"), deb)
    else:  # the same program under another package and file name
        pdir = os.path.join(tmp, sub, "b2")
        sh("dpkg-deb", "-R", os.path.join(flat, "sbx-hello_1.0_all.deb"), pdir)
        ctl = open(os.path.join(pdir, "DEBIAN", "control")).read().replace("sbx-hello", pkg)
        open(os.path.join(pdir, "DEBIAN", "control"), "w").write(ctl)
        os.rename(os.path.join(pdir, "usr", "bin", "sbx-hello"), os.path.join(pdir, "usr", "bin", pkg))
        sh("dpkg-deb", "--root-owner-group", "--build", pdir, deb)
    pk = subprocess.run(["dpkg-scanpackages", "-m", "pool"], cwd=base, check=True, capture_output=True).stdout
    lines = ["Origin: cassette-test", "Suite: stable", "Codename: stable", "Components: main",
             "Architectures: all amd64 arm64", "Acquire-By-Hash: yes", "Date: " +
             time.strftime("%a, %d %b %Y %H:%M:%S UTC", time.gmtime()), "SHA256:"]
    for name, data in (("Packages", pk), ("Packages.gz", gzip.compress(pk, mtime=0))):
        digest = hashlib.sha256(data).hexdigest()
        for path in (os.path.join(binary, name), os.path.join(binary, "by-hash", "SHA256", digest)):
            open(path, "wb").write(data)
        lines.append(" %s %d main/binary-all/%s" % (digest, len(data), name))
    open(os.path.join(base, "dists", "stable", "Release"), "w").write("\n".join(lines) + "\n")


def npm_registry(root):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, text in (("package/package.json", '{"name":"sbx-hello-npm","version":"1.0.0","main":"index.js"}\n'),
                           ("package/index.js", "module.exports = () => 'hello from an offline registry';\n")):
            data = text.encode()
            ti = tarfile.TarInfo(name)
            ti.size, ti.mtime, ti.mode = len(data), 0, 0o644
            t.addfile(ti, io.BytesIO(data))
    tgz = buf.getvalue()
    os.makedirs(os.path.join(root, "sbx-hello-npm", "-"))
    open(os.path.join(root, "sbx-hello-npm", "-", "sbx-hello-npm-1.0.0.tgz"), "wb").write(tgz)
    import base64
    meta = {"name": "sbx-hello-npm", "dist-tags": {"latest": "1.0.0"}, "versions": {"1.0.0": {
        "name": "sbx-hello-npm", "version": "1.0.0", "main": "index.js",
        "dist": {"tarball": "https://npm.test/sbx-hello-npm/-/sbx-hello-npm-1.0.0.tgz",
                 "shasum": hashlib.sha1(tgz).hexdigest(),
                 "integrity": "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode()}}}}
    json.dump(meta, open(os.path.join(root, "npm-meta.json"), "w"))


def git_repo(tmp, root):
    work = os.path.join(tmp, "gitwork")
    os.makedirs(work)
    open(os.path.join(work, "README"), "w").write("cloned from an offline git server\n")
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t", GIT_AUTHOR_DATE="2026-01-01T00:00:00Z",
               GIT_COMMITTER_DATE="2026-01-01T00:00:00Z")
    for a in (["init", "-q", "-b", "main"], ["add", "README"], ["commit", "-q", "-m", "one"]):
        sh("git", "-C", work, *a, env=env)
    os.makedirs(os.path.join(root, "git"))
    sh("git", "clone", "-q", "--bare", work, os.path.join(root, "git", "repo.git"))


def build_root(tmp):
    root = os.path.join(tmp, "www")
    os.makedirs(os.path.join(root, "files"))
    apt_repo(tmp, root, "debian", "sbx-hello")
    apt_repo(tmp, root, "debian-s", "sbx-hello-s")
    idx = stubs.build_simple_index(os.path.join(tmp, "pypi-build"))
    for d in ("simple", "packages"):
        shutil.copytree(os.path.join(idx, d), os.path.join(root, d))
    npm_registry(root)
    git_repo(tmp, root)
    open(os.path.join(root, "files", "chunked.bin"), "wb").write(os.urandom(300000))
    open(os.path.join(root, "files", "data.txt.gz"), "wb").write(gzip.compress(b"gzip as sent\n" * 1000, mtime=0))
    return root


class Upstreams:
    """The test's own network namespace with a veth to the host's and the
    upstream server in it; close() takes it all away."""

    def __init__(self, tmp, root, crt, key):
        tag = str(os.getpid() % 100000)
        self.ns, self.link, self.proc = "sbxcs" + tag, "sbxc" + tag, None
        sh("ip", "netns", "add", self.ns)
        try:
            sh("ip", "link", "add", self.link + "a", "type", "veth", "peer", "name", self.link + "b")
            sh("ip", "link", "set", self.link + "b", "netns", self.ns)
            sh("ip", "addr", "add", UP_HOST_ADDR + "/30", "dev", self.link + "a")
            sh("ip", "link", "set", self.link + "a", "up")
            sh("ip", "-n", self.ns, "addr", "add", UP_NS_ADDR + "/30", "dev", self.link + "b")
            sh("ip", "-n", self.ns, "link", "set", self.link + "b", "up")
            sh("ip", "-n", self.ns, "link", "set", "lo", "up")
            self.proc = subprocess.Popen(["ip", "netns", "exec", self.ns, sys.executable, "-c", UPSTREAM, root, crt,
                                          key, UP_NS_ADDR], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            for port in (80, 443):
                for _ in range(100):
                    if subprocess.run(["ip", "netns", "exec", self.ns, "bash", "-c",
                                       "exec 3<>/dev/tcp/%s/%d" % (UP_NS_ADDR, port)],
                                      capture_output=True).returncode == 0:
                        break
                    time.sleep(0.1)
        except Exception:
            self.close()
            raise

    def close(self):
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait()
            self.proc = None
        subprocess.run(["ip", "link", "del", self.link + "a"], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)


def run(mock, key, sid, script):
    st, b = mock.call("POST", "/v1/sandboxes/%s/exec" % sid, {"cmd": "bash", "args": ["-c", script]}, key=key,
                      timeout=600)
    if st != 200:
        raise RuntimeError("exec: %s %s" % (st, b))
    return b["data"]["result"]


def sums(out):
    """{file name: sha256} from sha256sum's lines."""
    return {os.path.basename(line.split()[1]): line.split()[0] for line in out.splitlines() if len(line.split()) == 2}


def journal(mock):
    st, b = mock.call("GET", "/_mock/internet/journal", admin=True)
    return b["data"]["entries"] if st == 200 else []


def devbox(mock, key):
    st, b = mock.call("POST", "/v1/sandboxes", {"shape": "s-1vcpu-1gb", "rootfs": "devbox:1"}, key=key)
    if st != 200:
        raise RuntimeError("create on devbox:1: %s %s" % (st, b))
    return b["data"]["id"]


def record(binary, hosts, store, cas, ca_crt):
    resolve = []
    for n in NAMES:
        resolve += ["--internet-record-resolve", "%s:443:%s" % (n, UP_NS_ADDR),
                    "--internet-record-resolve", "%s:80:%s" % (n, UP_NS_ADDR)]
    mock = live.Mock(binary, hosts, ["--images", store, "--internet-record", cas, "--internet-record-allow",
                                     ",".join(NAMES), "--internet-record-ca", ca_crt, *resolve])
    try:
        sid = devbox(mock, "rec")
        r = run(mock, "rec", sid, GUEST)
        check(r["exit_code"] == 0 and len(sums(r["stdout"])) == 7,
              "recording: apt (http, https), pip, npm, git clone and curl succeed through the mock", r)
        e = journal(mock)
        check(any(x["via"] == "record" and x["host"] == "git.test" and x["method"] == "POST" for x in e),
              "recorded requests are journaled via \"record\" (git's POST too)",
              [(x["via"], x["method"], x["host"], x["path"], x["status"]) for x in e][-30:])
        return sums(r["stdout"]) if r["exit_code"] == 0 else None
    finally:
        err = mock.stop()
        if "sbx-mock: cassette" in err:
            check(False, "the cassette is written at stop", err)


def cassette_lines(cas):
    with open(os.path.join(cas, "cassette.jsonl")) as f:
        return [json.loads(line) for line in f]


def check_cassette(cas):
    lines = cassette_lines(cas)
    ex = lines[1:]
    check(lines[0].get("sbx_cassette") == 1, "the cassette's header line", lines[0])
    keys = [(x["scheme"], x["host"], x["port"], x["target"], x["method"], x["n"]) for x in ex]
    check(keys == sorted(keys), "the exchange lines are sorted (scheme, host, port, target, method, n)", keys[:5])
    check(any(x["scheme"] == "http" and x["host"] == "deb.test" and "/by-hash/SHA256/" in x["target"] for x in ex),
          "apt's by-hash index over http is recorded", [x["target"] for x in ex if x["host"] == "deb.test"])
    chunked = [x for x in ex if x["target"] == "/files/chunked.bin"]
    check(len(chunked) == 1 and chunked[0]["chunked"] and chunked[0]["body"]["size"] == 300000 and
          not any(h[0].lower() == "transfer-encoding" for h in chunked[0]["response_headers"]),
          "a chunked answer: chunked true, the de-chunked body, no Transfer-Encoding kept", chunked)
    gz = [x for x in ex if x["target"] == "/files/data.txt.gz"]
    want = hashlib.sha256(gzip.compress(b"gzip as sent\n" * 1000, mtime=0)).hexdigest()
    check(len(gz) == 1 and gz[0]["body"]["sha256"] == want, "a gzip body is kept as the gzip bytes sent", gz)
    for x in ex:
        b = x["body"]["sha256"]
        path = os.path.join(cas, "bodies", b[:2], b)
        if not os.path.isfile(path) or hashlib.sha256(open(path, "rb").read()).hexdigest() != b:
            check(False, "every body is in bodies/ab/<sha256> with that hash", path)
            break
    return ex


def replay(binary, hosts, store, cas, want):
    mock = live.Mock(binary, hosts, ["--images", store, "--internet-replay", cas])
    try:
        sid = devbox(mock, "rep")
        r = run(mock, "rep", sid, GUEST)
        got = sums(r["stdout"])
        check(r["exit_code"] == 0 and got == want,
              "replay, upstreams gone: the same installs succeed and the files are byte-identical",
              (r, want))
        e = journal(mock)
        check(all(x["via"] == "cassette" and x["status"] != 502 for x in e if x["host"] in NAMES),
              "replay answers every request from the cassette, none missed",
              [(x["via"], x["host"], x["path"], x["status"]) for x in e if x.get("status") == 502])
    finally:
        mock.stop()


def pruned(binary, hosts, store, cas, tmp):
    cut = os.path.join(tmp, "pruned.cassette")
    shutil.copytree(cas, cut)
    lines = open(os.path.join(cas, "cassette.jsonl")).read().splitlines(True)
    gone = [i for i, line in enumerate(lines) if '"target":"/packages/sbx_hello_py-1.0-py3-none-any.whl"' in line]
    open(os.path.join(cut, "cassette.jsonl"), "w").write("".join(line for i, line in enumerate(lines)
                                                                if i not in gone))
    mock = live.Mock(binary, hosts, ["--images", store, "--internet-replay", cut])
    try:
        sid = devbox(mock, "cut")
        r = run(mock, "cut", sid, "curl -s -w ' %{http_code}' https://pypi.test/packages/sbx_hello_py-1.0-py3-none-any.whl")
        want = ("sbx-mock cassette pruned.cassette: no recorded answer for GET "
                "https://pypi.test/packages/sbx_hello_py-1.0-py3-none-any.whl\nnearest recorded: GET "
                "https://pypi.test/simple/sbx-hello-py/\n")  # the host's only other exchange
        check(len(gone) == 1 and r["stdout"] == want + " 502",
              "a pruned request is a 502 naming it and the nearest recorded", (gone, r))
        e = [x for x in journal(mock) if x.get("cassette_miss")]
        check(len(e) == 1 and e[0]["via"] == "cassette" and e[0]["status"] == 502 and
              e[0]["cassette_miss"] == want, "the journal's entry names the miss", e)
    finally:
        mock.stop()


def scenario(binary, hosts, cas, tmp, root):
    """A scenario file names the cassette, relative to itself."""
    d = os.path.join(tmp, "scen")
    os.makedirs(d)
    shutil.copytree(cas, os.path.join(d, "by-scenario.cassette"))
    path = os.path.join(d, "offline.json")
    json.dump({"name": "offline", "internet_cassette": {"replay": "by-scenario.cassette"}}, open(path, "w"))
    mock = live.Mock(binary, hosts, ["--scenario", path])
    try:
        sid = tls.create(mock, "scen")
        r = run(mock, "scen", sid, "curl -sS https://files.test/files/chunked.bin | sha256sum")
        want = hashlib.sha256(open(os.path.join(root, "files", "chunked.bin"), "rb").read()).hexdigest()
        check(r["exit_code"] == 0 and r["stdout"].split()[0] == want,
              "a scenario's internet_cassette (relative to the scenario file) is replayed", r)
    finally:
        mock.stop()
    json.dump({"name": "bad", "internet_cassette": {"replay": "missing.cassette"}}, open(path, "w"))
    rc, err = stubs.start_refused(binary, hosts, "--scenario", path)
    check(rc == 2 and "scenario internet_cassette" in err and "missing.cassette" in err,
          "a scenario naming a cassette that is not there stops the start, naming it", (rc, err))


def refusals(binary, hosts, cas, tmp):
    rc, err = stubs.start_refused(binary, hosts, "--internet-record", cas, "--internet-replay", cas,
                                  "--internet-record-allow", "x.test")
    check(rc == 2 and "exclude each other" in err, "record and replay together are refused", (rc, err))
    rc, err = stubs.start_refused(binary, hosts, "--internet-record", os.path.join(tmp, "new.cassette"))
    check(rc == 2 and "--internet-record-allow" in err, "record without --internet-record-allow is refused",
          (rc, err))
    bad = os.path.join(tmp, "bad.cassette")
    shutil.copytree(cas, bad)
    ex = cassette_lines(bad)[1]
    body = os.path.join(bad, "bodies", ex["body"]["sha256"][:2], ex["body"]["sha256"])
    open(body, "ab").write(b"x")
    rc, err = stubs.start_refused(binary, hosts, "--internet-replay", bad)
    check(rc == 2 and body in err and "does not match its name" in err,
          "a body file whose hash is not its name stops the replay's start, naming it", (rc, err))


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__)
        return 2
    binary = sys.argv[1]
    sbxctl = sys.argv[2] if len(sys.argv) == 3 else None
    store = tls.image_store()
    if os.geteuid() != 0 or shutil.which("ip") is None or store is None:
        print("skip: needs root and ip(8) (the upstreams' namespace) and devbox:1 (%s)" %
              ("no image" if store is None else "not root"))
        return 1 if os.environ.get("CI") == "true" else SKIP
    tmp = tempfile.mkdtemp(prefix="sbx-cassette-")
    os.chmod(tmp, 0o755)
    up = None
    try:
        hosts = os.path.join(tmp, "hosts.json")
        json.dump(HOSTS, open(hosts, "w"))
        ca_crt, crt, key = make_ca(tmp)
        root = build_root(tmp)
        cas = os.path.join(tmp, "team.cassette")
        up = Upstreams(tmp, root, crt, key)
        probe = live.Mock(binary, hosts)
        enforced = probe.enforced
        probe.stop()
        if not enforced:
            print("skip: egress is not enforced here")
            return 1 if os.environ.get("CI") == "true" else SKIP
        want = record(binary, hosts, store, cas, ca_crt)
        up.close()
        up = None
        if want is not None:
            check_cassette(cas)
            if sbxctl is not None:
                # one format: what the mock writes, sbxctl's reader (libsbx) takes
                r = subprocess.run([sbxctl, "mock", "cassette", "check", cas], capture_output=True, text=True)
                check(r.returncode == 0, "sbxctl mock cassette check accepts the cassette the mock wrote",
                      r.stdout + r.stderr)
            replay(binary, hosts, store, cas, want)
            pruned(binary, hosts, store, cas, tmp)
            scenario(binary, hosts, cas, tmp, root)
            refusals(binary, hosts, cas, tmp)
    finally:
        if up is not None:
            up.close()
        shutil.rmtree(tmp, ignore_errors=True)
    print("internet_cassette: %s" % ("FAIL: " + "; ".join(FAILS) if FAILS else "all passed"))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
