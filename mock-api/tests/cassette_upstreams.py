#!/usr/bin/env python3
"""The cassette tests' upstreams (issue 47, mock-api/INTERNET.md "Record
and replay the guests' internet"): a network namespace of the test's own
with a veth to the host's, and in it one server for every name (NAMES),
plain on 80 and TLS on 443 under a CA made here: a Debian-style repository
over http and https (Release with Acquire-By-Hash, by-hash/SHA256 indexes,
a .deb each), a PyPI simple index with a wheel, an npm registry (metadata
and a tarball), git http-backend (smart HTTP) and plain downloads (chunked,
gzip as sent).

internet_cassette_test.py imports it; a test in another language starts it:

  cassette_upstreams.py --serve DIR

builds the CA and the repositories in DIR (an empty directory of the
caller's), starts the upstreams, prints one JSON line on stdout
({"ca", "address", "names", "record_flags", "root"}: record_flags are the
sbx-mock flags that record from them) and stays up until SIGTERM or SIGINT
(or its stdin closes), then takes the namespace away and exits 0. Needs
root and ip(8): exit 2 with why otherwise.
"""
import gzip
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import internet_stubs_test as stubs  # noqa: E402  (build_apt_repo, build_simple_index, netns_*)

NAMES = ["deb.test", "pypi.test", "npm.test", "git.test", "files.test"]

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


def link_addresses(pid):
    """The veth's /30 in 10.254.78.0/24: from the pid's slot on, the first
    whose host side no interface holds, so two tests that make their
    upstreams at once (the Python and the SDK test under ctest -j, or two
    checkouts) get different routes. (host side, namespace side)"""
    used = subprocess.run(["ip", "-o", "-4", "addr"], capture_output=True, text=True).stdout
    for i in range(64):
        base = 4 * ((pid + i) % 64)
        host = "10.254.78.%d" % (base + 1)
        if " %s/" % host not in used:
            return host, "10.254.78.%d" % (base + 2)
    raise RuntimeError("every /30 of 10.254.78.0/24 is held by an interface: stale sbxc* veths?")


class Upstreams:
    """The test's own network namespace with a veth to the host's and the
    upstream server in it (at self.addr); close() takes it all away."""

    def __init__(self, tmp, root, crt, key):
        tag = str(os.getpid() % 100000)
        self.ns, self.link, self.proc = "sbxcs" + tag, "sbxc" + tag, None
        host_addr, self.addr = link_addresses(os.getpid())
        stubs.netns_up(self.ns, self.link, host_addr, self.addr)
        try:
            self.proc = subprocess.Popen(["ip", "netns", "exec", self.ns, sys.executable, "-c", UPSTREAM, root, crt,
                                          key, self.addr], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            stubs.netns_wait(self.ns, self.addr, (80, 443))
        except Exception:
            self.close()
            raise

    def close(self):
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait()
            self.proc = None
        stubs.netns_down(self.ns, self.link)


def record_flags(ca_crt, addr):
    """sbx-mock's flags besides --internet-record DIR that record from
    these upstreams: every name allowed, resolved to the namespace's
    address addr on 80 and 443, verified against the test's CA."""
    flags = ["--internet-record-allow", ",".join(NAMES), "--internet-record-ca", ca_crt]
    for n in NAMES:
        flags += ["--internet-record-resolve", "%s:443:%s" % (n, addr),
                  "--internet-record-resolve", "%s:80:%s" % (n, addr)]
    return flags


class Stop(Exception):
    """SIGTERM or SIGINT: os.read is retried after a handler that returns
    (PEP 475), so the handler raises."""


def stop_on_signal(*_):
    raise Stop()


def serve(tmp):
    """--serve: up until told to stop; the JSON line says where and how."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        print("cassette_upstreams: needs root and ip(8) for its network namespace", file=sys.stderr)
        return 2
    ca_crt, crt, key = make_ca(tmp)
    root = build_root(tmp)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stop_on_signal)
    up = None
    try:
        up = Upstreams(tmp, root, crt, key)
        print(json.dumps({"ca": ca_crt, "address": up.addr, "names": NAMES,
                          "record_flags": record_flags(ca_crt, up.addr), "root": root}), flush=True)
        # a caller that dies without a signal closes our stdin: stop then too
        while os.read(0, 4096) != b"":
            pass
    except Stop:
        pass
    finally:
        if up is not None:
            up.close()
    return 0


def main():
    if len(sys.argv) != 3 or sys.argv[1] != "--serve" or not os.path.isdir(sys.argv[2]):
        print(__doc__, file=sys.stderr)
        return 2
    return serve(os.path.abspath(sys.argv[2]))


if __name__ == "__main__":
    sys.exit(main())
