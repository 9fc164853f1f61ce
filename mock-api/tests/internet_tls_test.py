#!/usr/bin/env python3
"""Real TLS on the simulated internet (issue 38 item 1, mock-api/INTERNET.md "TLS").

In guests of a real sbx-mock, with verification on:
- curl, Python's urllib and Node's fetch (when node is on the host's /usr)
  reach https://example.com/ and get the internet's answer;
- the same clients fail with a certificate error when the guest's store
  lacks the mock's CA (curl --cacert another CA, SSL_CERT_FILE, Node
  without NODE_EXTRA_CA_CERTS): the TLS is real;
- the guest's egress rules decide first: a denied destination's SYN is
  dropped on 443 too, an allowed one gets TLS;
- bad input: a TLS record of garbage, a plain request on 443 and an SNI
  that is no host name end cleanly, and the internet keeps serving;
- each failed handshake is journaled with why (a client that rejects the
  CA, one that stalls mid-handshake, garbage); a plain request on 443 is
  answered and its entry says it was not TLS;
- the CA's private key is nowhere a guest can read; with --state-dir the
  CA is kept (key 0600) and a restarted mock's guests trust the same one;
- --internet-ca CERT,KEY is used, and a bad one stops the start with an
  error naming the file;
- the bundle (written once per mock and root, bound into every cell) is
  read-only to a guest's root on the host skeleton; on devbox:1 a guest
  may rewrite its own (update-ca-certificates) and another guest keeps the
  shared one.

Usage: internet_tls_test.py SBX_MOCK HOSTS_JSON
Exit 0 pass, 1 fail, 77 skipped (enforcement unavailable here).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import egress_live_test as live  # noqa: E402  (the Mock harness)

SKIP = 77
FAILS = []

NODE_FETCH = ("fetch('https://example.com/').then(r => r.text()).then(t => console.log(t), "
              "e => { console.log('ERR', (e.cause && e.cause.code) || e.message); process.exit(3); })")
PY_URLOPEN = ("import urllib.request\n"
              "try:\n"
              "    print(urllib.request.urlopen('https://example.com/', timeout=10).read().decode())\n"
              "except Exception as e:\n"
              "    print('ERR', e); raise SystemExit(3)\n")
# a TLS record header (handshake, TLS 1.0) followed by garbage, then a
# plain request: what the internet sends back to each, or "closed"
# talk(): what the internet sends back to data, read until it closes
PY_TALK = r"""
import socket
def talk(data, port=443, wait=10):
    s = socket.create_connection(("192.0.2.10", port), timeout=wait)
    s.sendall(data)
    got = b""
    try:
        while True:
            b = s.recv(4096)
            if not b:
                break
            got += b
    except OSError as e:
        got += b"<" + type(e).__name__.encode() + b">"
    s.close()
    return got
"""
PY_GARBAGE = PY_TALK + r"""
bad = talk(b"\x16\x03\x01\x00\x30" + b"\xff" * 48)
print("garbage:", "closed" if b"HTTP/1.1" not in bad else "answered")
plain = talk(b"GET / HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n")
print("plain:", plain.split(b"\r\n", 1)[0].decode())
"""
# keep-alive (INTERNET.md "Connections"): three requests on one
# connection per scheme (http.client keeps it when the answer allows),
# then raw exchanges on port 80 whose framing decides what follows
PY_KEEP = PY_TALK + r"""
import http.client, ssl
ctx = ssl.create_default_context()
for name, conn in (("https", http.client.HTTPSConnection("example.com", context=ctx, timeout=10)),
                   ("http", http.client.HTTPConnection("example.com", timeout=10))):
    socks, heads = set(), []
    for path in ("/k1", "/k2", "/k3"):
        conn.request("GET", path)
        r = conn.getresponse()
        r.read()
        heads.append("%d/%s" % (r.status, r.getheader("Connection")))
        socks.add(id(conn.sock))
    print(name, ",".join(heads), "sockets=%d" % len(socks), "open=%s" % (conn.sock is not None))
    conn.close()
def show(name, g):
    print(name, "answers=%d keep=%d close=%d ended=%s" % (g.count(b"HTTP/1.1 200 OK"), g.count(b"Connection: keep-alive"),
          g.count(b"Connection: close"), b"<" not in g))
show("pipelined", talk(b"POST /p1 HTTP/1.1\r\nHost: example.com\r\nContent-Length: 5\r\n\r\nhello"
                      b"GET /p2 HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n", port=80))
show("http10", talk(b"GET /p3 HTTP/1.0\r\nHost: example.com\r\n\r\n", port=80))
show("chunked", talk(b"POST /p4 HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
                    b"GET /p5 HTTP/1.1\r\nHost: example.com\r\n\r\n", port=80))
show("idle", talk(b"GET /p6 HTTP/1.1\r\nHost: example.com\r\n\r\n", port=80, wait=30))
"""


def check(ok, what, detail=""):
    print(("ok   " if ok else "FAIL ") + what + ("" if ok else ": " + str(detail)[:1500]))
    if not ok:
        FAILS.append(what)


def run(mock, key, sid, argv):
    body = {"cmd": argv[0], "args": argv[1:]}
    st, b = mock.call("POST", "/v1/sandboxes/%s/exec" % sid, body, key=key, timeout=60)
    if st != 200:
        raise RuntimeError("exec %s: %s %s" % (argv[0], st, b))
    return b["data"]["result"]


def create(mock, key, egress=None):
    body = {"shape": "s-1vcpu-1gb"}
    if egress is not None:
        body["egress"] = egress
    st, b = mock.call("POST", "/v1/sandboxes", body, key=key)
    if st != 200:
        raise RuntimeError("create: %s %s" % (st, b))
    return b["data"]["id"]


def clients_trust(mock, key, sid):
    r = run(mock, key, sid, ["curl", "-sS", "-D-", "https://example.com/"])
    check(r["exit_code"] == 0 and "reached 192.0.2.10:443" in r["stdout"] and
          "X-Sbx-Tls-Name: example.com" in r["stdout"], "curl https://example.com/ verifies", r)
    r = run(mock, key, sid, ["python3", "-c", PY_URLOPEN])
    check(r["exit_code"] == 0 and "reached 192.0.2.10:443" in r["stdout"],
          "Python urllib.request.urlopen verifies", r)
    if shutil.which("node", path="/usr/bin:/bin:/usr/local/bin") is None:
        print("skip Node fetch: no node on this host's /usr")
        return
    r = run(mock, key, sid, ["node", "-e", NODE_FETCH])
    check(r["exit_code"] == 0 and "reached 192.0.2.10:443" in r["stdout"], "Node fetch verifies", r)


def clients_refuse_without_ca(mock, key, sid):
    # another single CA of the host's store: everything but the mock's
    r = run(mock, key, sid, ["sh", "-c", "ls /etc/ssl/certs/*.pem | head -1"])
    other = r["stdout"].strip()
    check(other.endswith(".pem"), "the guest's store has other CAs", r)
    r = run(mock, key, sid, ["curl", "-sS", "--cacert", other, "https://example.com/"])
    check(r["exit_code"] == 60 and "certificate" in r["stderr"],
          "curl with another CA fails on the certificate (60)", r)
    r = run(mock, key, sid, ["env", "SSL_CERT_FILE=" + other, "python3", "-c", PY_URLOPEN])
    check(r["exit_code"] == 3 and "CERTIFICATE_VERIFY_FAILED" in r["stdout"],
          "Python with SSL_CERT_FILE=another CA fails verification", r)
    if shutil.which("node", path="/usr/bin:/bin:/usr/local/bin") is None:
        return
    r = run(mock, key, sid, ["env", "-u", "NODE_EXTRA_CA_CERTS", "node", "-e", NODE_FETCH])
    check(r["exit_code"] == 3 and ("CERT" in r["stdout"] or "UNABLE_TO_VERIFY" in r["stdout"]),
          "Node without NODE_EXTRA_CA_CERTS fails on the certificate", r)


def egress_first(mock):
    # only github.com's address is allowed: example.com's SYN is dropped
    sid = create(mock, "tls-egress", ["192.0.2.30/32"])
    r = run(mock, "tls-egress", sid, ["curl", "-sS", "--connect-timeout", "1", "https://example.com/"])
    check(r["exit_code"] == 28, "a denied destination on 443 gets no connection (curl 28)", r)
    r = run(mock, "tls-egress", sid, ["curl", "-sS", "-D-", "https://github.com/"])
    check(r["exit_code"] == 0 and "X-Sbx-Tls-Name: github.com" in r["stdout"],
          "an allowed destination on 443 gets TLS", r)


def bad_input(mock, key, sid):
    r = run(mock, key, sid, ["python3", "-c", PY_GARBAGE])
    check(r["exit_code"] == 0 and "garbage: closed" in r["stdout"],
          "a handshake record of garbage is closed", r)
    check("plain: HTTP/1.1 200 OK" in r["stdout"], "a plain request on 443 is answered as on 80", r)
    r = run(mock, key, sid, ["sh", "-c", "openssl s_client -connect 192.0.2.10:443 -servername 'bad!name' "
                             "</dev/null 2>&1; echo rc=$?"])
    check("unrecognized name" in r["stdout"] and "rc=1" in r["stdout"],
          "an SNI that is no host name gets the unrecognized_name alert", r)
    r = run(mock, key, sid, ["curl", "-sS", "https://www.example.com/"])
    check(r["exit_code"] == 0 and "reached 192.0.2.11:443" in r["stdout"],
          "the internet serves TLS after the bad input", r)


# a TLS client that sends its ClientHello and then nothing (no Finished):
# the handshake's deadline ends it
PY_STALL = r"""
import socket, ssl, time
ctx = ssl.create_default_context()
inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
obj = ctx.wrap_bio(inc, out, server_hostname="stall.example.com")
try:
    obj.do_handshake()
except ssl.SSLWantReadError:
    pass
s = socket.create_connection(("192.0.2.10", 443), timeout=15)
s.sendall(out.read())
t = time.time()
try:
    while s.recv(4096):
        pass
except OSError:
    pass
print("closed after %.1f s" % (time.time() - t))
"""


def failed_handshakes_journaled(mock, key):
    """Each handshake that fails has a journal entry saying why: the
    client rejected the CA (its alert), it stalled past the deadline,
    garbage; a plain-text client on 443 is answered and its entry says it
    was not TLS."""
    sid = create(mock, key)
    r = run(mock, key, sid, ["sh", "-c", "ls /etc/ssl/certs/*.pem | head -1"])
    other = r["stdout"].strip()
    run(mock, key, sid, ["curl", "-sS", "--cacert", other, "https://example.com/"])
    r = run(mock, key, sid, ["python3", "-c", PY_STALL])
    check(r["exit_code"] == 0 and "closed after" in r["stdout"], "a stalled handshake is closed", r)
    run(mock, key, sid, ["python3", "-c", PY_GARBAGE])
    st, b = mock.call("GET", "/_mock/internet/journal?sandbox_id=" + sid, admin=True)
    e = (b.get("data") or {}).get("entries", []) if st == 200 else []
    tls_fails = [x for x in e if x.get("via") == "tls"]
    check(any(x["host"] == "example.com" and x["scheme"] == "https" and x.get("port") == 443 and
              "rejected the certificate" in x.get("tls_error", "") and "unknown_ca" in x.get("tls_error", "")
              for x in tls_fails), "a client that rejects the CA: the entry says so (its alert unknown_ca)", e)
    check(any(x["host"] == "stall.example.com" and x.get("tls_error", "").startswith("timed out")
              for x in tls_fails), "a client that stalls mid-handshake: the entry says it timed out", e)
    check(any(x["host"] == "192.0.2.10" and "not a TLS handshake" in x.get("tls_error", "") for x in tls_fails),
          "garbage in a handshake record: the entry says it was no handshake", e)
    check(any(x["scheme"] == "http" and x.get("port") == 443 and x["path"] == "/" and
              "no TLS on port 443: plain text (first byte 0x47 'G')" in x.get("tls_error", "") for x in e),
          "a plain-text client on 443: answered, and the entry says it was not TLS", e)
    check(not any("tls_error" in x for x in e if x.get("via") != "tls" and x.get("port") != 443),
          "no other entry carries a tls_error", e)


def keep_alive(mock, key, sid):
    r = run(mock, key, sid, ["python3", "-c", PY_KEEP])
    out = r["stdout"]
    for scheme in ("https", "http"):
        check("%s 200/keep-alive,200/keep-alive,200/keep-alive sockets=1 open=True" % scheme in out,
              "%s: three requests on one kept-alive connection" % scheme, r)
    check("pipelined answers=2 keep=1 close=1 ended=True" in out,
          "a request with a Content-Length body, then a pipelined one with Connection: close: both answered, "
          "then closed", r)
    check("http10 answers=1 keep=0 close=1 ended=True" in out, "HTTP/1.0 without keep-alive is closed", r)
    check("chunked answers=1 keep=0 close=1 ended=True" in out,
          "a chunked body ends the connection after its answer (the pipelined GET is not read as a request)", r)
    check("idle answers=1 keep=1 close=0 ended=True" in out, "an idle kept-alive connection is closed by the internet", r)
    st, b = mock.call("GET", "/_mock/internet/journal?sandbox_id=" + sid, admin=True)
    paths = [e.get("path") for e in (b.get("data") or {}).get("entries", [])] if st == 200 else []
    check(st == 200 and all(paths.count(p) == 2 for p in ("/k1", "/k2", "/k3")) and
          all(paths.count(p) == 1 for p in ("/p1", "/p2", "/p3", "/p4", "/p6")) and "/p5" not in paths,
          "the journal has each request of a kept-alive connection, and not what followed a chunked body",
          (st, paths))


def key_stays_out(mock, key, sid, state):
    with open(os.path.join(state, "internet-ca.key")) as f:
        lines = [l for l in f.read().splitlines() if l and not l.startswith("-----")]
    with open(os.path.join(state, "internet-ca.crt")) as f:
        cert_line = [l for l in f.read().splitlines() if l and not l.startswith("-----")][1]
    # every tree a guest writes or the mock writes for it, its environment
    # and its processes' (the host's /usr, /lib... are the host's packages)
    where = "/etc /root /tmp /workspace /var /run /home /opt /srv /mnt /dev/shm"
    script = ("grep -rlF -e \"$1\" %s 2>/dev/null; env | grep -F -e \"$1\"; "
              "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -F -e \"$1\"; true") % where
    r = run(mock, key, sid, ["sh", "-c", script, "sh", lines[0]])
    check(r["exit_code"] == 0 and r["stdout"].strip() == "", "the CA's key is nowhere in the guest", r)
    # the same search finds the certificate: it would find the key
    r = run(mock, key, sid, ["sh", "-c", script, "sh", cert_line])
    check("/etc/ssl/certs/ca-certificates.crt" in r["stdout"] and "/etc/sbx-internet-ca.crt" in r["stdout"],
          "the same search finds the CA's certificate in the guest's store", r)


BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
# each way root could change a file in place or replace it; prints how many worked
TAMPER = ("export f=%s; echo x > /tmp/x; n=0; for how in 'echo x >> $f' ': > $f' 'rm -f $f' 'chmod 666 $f' "
          "'mv -f /tmp/x $f' 'cp /tmp/x $f' 'ln -sf /tmp/x $f' 'touch $f'; do "
          "sh -c \"$how\" 2>/dev/null && n=$((n+1)); done; echo $n") % BUNDLE


def bundle_hash(mock, key, sid):
    r = run(mock, key, sid, ["sh", "-c", "sha256sum %s | cut -d' ' -f1; grep -c 'BEGIN CERTIFICATE' %s" %
                             (BUNDLE, BUNDLE)])
    return r["stdout"].split() if r["exit_code"] == 0 else r


def bundle_stays(mock, key):
    """The bundle every cell of the host skeleton binds is read-only: a
    guest's root changes nothing of it, for itself or the next guest."""
    first, second = create(mock, key), create(mock, key)
    before = bundle_hash(mock, key, first)
    r = run(mock, key, first, ["sh", "-c", TAMPER])
    check(r["stdout"].strip() == "0", "root in a guest cannot write, replace or remove its trust bundle", r)
    check(bundle_hash(mock, key, first) == before and bundle_hash(mock, key, second) == before,
          "the bundle is the same after the attempts, in that guest and another", (before,))
    r = run(mock, key, second, ["curl", "-sS", "https://example.com/"])
    check(r["exit_code"] == 0, "and the other guest still verifies", r)


def main():
    binary, hosts = sys.argv[1], sys.argv[2]
    state = tempfile.mkdtemp(prefix="sbx-tls-")
    try:
        # the host skeleton (not the default image store): the checks
        # below are its trust bundle's (read-only, the mock's CA only);
        # devbox:1's are on_devbox's
        mock = live.Mock(binary, hosts, ["--state-dir", os.path.join(state, "s"), "--no-images"])
        try:
            if not mock.enforced:
                print("skip: egress is not enforced here (%s)" % mock.stop().strip())
                return SKIP
            sid = create(mock, "tls")
            clients_trust(mock, "tls", sid)
            clients_refuse_without_ca(mock, "tls", sid)
            egress_first(mock)
            bad_input(mock, "tls", sid)
            keep_alive(mock, "tls", sid)
            failed_handshakes_journaled(mock, "tls-fail")
            key_stays_out(mock, "tls", sid, os.path.join(state, "s"))
            bundle_stays(mock, "tls")
        finally:
            mock.stop()
        kept = os.path.join(state, "s")
        check(os.stat(os.path.join(kept, "internet-ca.key")).st_mode & 0o077 == 0,
              "the kept key is the owner's alone (0600)")
        with open(os.path.join(kept, "internet-ca.crt")) as f:
            ca = f.read()
        mock = live.Mock(binary, hosts, ["--state-dir", kept])
        try:
            sid = create(mock, "tls")
            r = run(mock, "tls", sid, ["cat", "/etc/sbx-internet-ca.crt"])
            check(r["stdout"] == ca, "a restarted mock with --state-dir keeps its CA", r)
            r = run(mock, "tls", sid, ["curl", "-sS", "https://example.com/"])
            check(r["exit_code"] == 0, "and its guests verify against it", r)
        finally:
            mock.stop()
        given_ca(binary, hosts, state)
        on_image(binary, hosts)
    finally:
        shutil.rmtree(state, ignore_errors=True)
    print("internet_tls: %s" % ("FAIL: " + "; ".join(FAILS) if FAILS else "all passed"))
    return 1 if FAILS else 0


def image_store():
    """build-image's store (mock-api/IMAGES.md), when it serves devbox:1."""
    store = os.environ.get("SBX_IMAGE_STORE")
    if not store:
        store = ("/var/cache/sbx-harness/images" if os.geteuid() == 0 else
                 os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                              "sbx-harness", "images"))
    try:
        with open(os.path.join(store, "index")) as f:
            return store if "devbox:1" in f.read().split() else None
    except OSError:
        return None


def on_image(binary, hosts):
    """On devbox:1 the trust bundle is the image's own plus the mock's CA
    (the copy shadows the image's file in the overlay), and Node is the
    image's: the same clients verify."""
    store = image_store()
    if store is None:
        print("skip devbox:1: no image built (mock-api/images/build-image devbox:1)")
        return
    mock = live.Mock(binary, hosts, ["--images", store])
    try:
        st, b = mock.call("POST", "/v1/sandboxes", {"shape": "s-1vcpu-1gb", "rootfs": "devbox:1"}, key="tls")
        if st != 200:
            raise RuntimeError("create on devbox:1: %s %s" % (st, b))
        sid = b["data"]["id"]
        r = run(mock, "tls", sid, ["test", "-s", "/var/lib/dpkg/status"])
        check(r["exit_code"] == 0, "the sandbox is on devbox:1 (dpkg state)", r)
        clients_trust(mock, "tls", sid)
        r = run(mock, "tls", sid, ["sh", "-c", "grep -c 'BEGIN CERTIFICATE' /etc/ssl/certs/ca-certificates.crt"])
        check(r["exit_code"] == 0 and int(r["stdout"] or 0) > 100,
              "the image's own roots stay in its bundle", r)
        # the bundle is a layer every cell of the image shares: a guest's
        # change is its own (copied up), as any change of an image's file
        st, b = mock.call("POST", "/v1/sandboxes", {"shape": "s-1vcpu-1gb", "rootfs": "devbox:1"}, key="tls")
        other = b["data"]["id"] if st == 200 else sid
        before = bundle_hash(mock, "tls", other)
        r = run(mock, "tls", sid, ["sh", "-c", "update-ca-certificates >/dev/null && echo '# mine' >> %s && "
                                   "tail -n1 %s" % (BUNDLE, BUNDLE)])
        check(r["exit_code"] == 0 and r["stdout"].strip() == "# mine",
              "on devbox:1 a guest may still rewrite its own bundle (update-ca-certificates)", r)
        check(other != sid and bundle_hash(mock, "tls", other) == before and before[0] != bundle_hash(
            mock, "tls", sid)[0], "another guest of the image keeps the shared bundle", before)
        r = run(mock, "tls", other, ["curl", "-sS", "https://example.com/"])
        check(r["exit_code"] == 0, "and still verifies", r)
    finally:
        mock.stop()


def given_ca(binary, hosts, state):
    crt, key = os.path.join(state, "given.crt"), os.path.join(state, "given.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-keyout", key, "-out", crt, "-days", "2", "-subj", "/CN=given test CA",
                    "-addext", "basicConstraints=critical,CA:TRUE",
                    "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
                   check=True, capture_output=True)
    mock = live.Mock(binary, hosts, ["--internet-ca", crt + "," + key])
    try:
        sid = create(mock, "tls")
        r = run(mock, "tls", sid, ["curl", "-sS", "--cacert", "/etc/sbx-internet-ca.crt", "https://example.com/"])
        check(r["exit_code"] == 0, "--internet-ca CERT,KEY: guests verify against the given CA", r)
        r = run(mock, "tls", sid, ["sh", "-c", "openssl s_client -connect 192.0.2.10:443 -servername example.com "
                                   "</dev/null 2>&1 | grep -m1 'issuer='"])
        check("given test CA" in r["stdout"], "the leaf is issued by the given CA", r)
    finally:
        mock.stop()
    bogus = os.path.join(state, "bogus.crt")
    with open(bogus, "w") as f:
        f.write("not a certificate\n")
    for spec, says in ((bogus + "," + key, "--internet-ca " + bogus + ": not a PEM certificate"),
                       ("/nonexistent/ca.crt," + key, "--internet-ca /nonexistent/ca.crt: No such file"),
                       (crt, "is not CERT,KEY")):
        p = subprocess.run([binary, "--listen", "127.0.0.1:0", "--self-listen", "off", "--internet-ca", spec],
                           capture_output=True, text=True, timeout=60)
        check(p.returncode != 0 and says in p.stderr, "a bad --internet-ca stops the start: " + says,
              (p.returncode, p.stderr))


if __name__ == "__main__":
    sys.exit(main())
