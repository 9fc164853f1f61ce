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
  without -allow, and a cassette whose body file was changed;
- an allowed name the host resolves to 127.0.0.1 (localhost) is not
  recorded from (a 502 naming why; a server on the host's loopback sees
  nothing), the same server named by --internet-record-resolve is;
- past --internet-record-max-mib a download is cut and the next request
  refused, each naming the bound (journal, stderr), the cassette keeping
  neither.

With --mock-user UID (ci/test's contain-unprivileged stage: 65534) the
test still runs as root, for the upstreams' namespace, and every mock it
starts runs as UID (setpriv, no groups, no capabilities): an unprivileged
mock enters a user namespace of its own and records from the host's
network namespace, where the upstreams' veth is; replay needs no
upstream. The image store must hold UID's copy (build-image --owner UID).

The upstreams, their CA and repositories: cassette_upstreams.py.
Needs root (the namespace) and devbox:1: exit 77 otherwise (a failure
under CI=true, as the other image tests).
Usage: internet_cassette_test.py SBX_MOCK [--sbxctl SBXCTL] [--mock-user UID]
  (--sbxctl: its cassette check must accept what the mock wrote)
"""
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cassette_upstreams as ups  # noqa: E402  (the upstreams, their CA and repositories)
import egress_live_test as live  # noqa: E402  (the Mock harness)
import internet_stubs_test as stubs  # noqa: E402  (start_refused)
import internet_tls_test as tls  # noqa: E402  (create, image_store)

SKIP = 77
FAILS = []
HOSTS = {"version": 1, "hosts": {"unrelated.test": ["192.0.2.99"]}}
# what every mock runs under: nothing (root), or setpriv to --mock-user's uid
WRAP = []

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


def record(binary, hosts, store, cas, ca_crt, addr):
    mock = live.Mock(binary, hosts, wrap=WRAP,
                     extra=["--images", store, "--internet-record", cas, *ups.record_flags(ca_crt, addr)])
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
    mock = live.Mock(binary, hosts, wrap=WRAP, extra=["--images", store, "--internet-replay", cas])
    try:
        sid = devbox(mock, "rep")
        r = run(mock, "rep", sid, GUEST)
        got = sums(r["stdout"])
        check(r["exit_code"] == 0 and got == want,
              "replay, upstreams gone: the same installs succeed and the files are byte-identical",
              (r, want))
        e = journal(mock)
        check(all(x["via"] == "cassette" and x["status"] != 502 for x in e if x["host"] in ups.NAMES),
              "replay answers every request from the cassette, none missed",
              [(x["via"], x["host"], x["path"], x["status"]) for x in e if x.get("status") == 502])
    finally:
        mock.stop()


def copy_cassette(src, dst):
    """A copy of cassette src owned as src is: a recording's bodies are
    0600, its mock's uid's (the --mock-user one's, or root's)."""
    shutil.copytree(src, dst)
    st = os.stat(src)
    for d, _, files in os.walk(dst):
        for name in [d] + [os.path.join(d, f) for f in files]:
            os.chown(name, st.st_uid, st.st_gid)


def pruned(binary, hosts, store, cas, tmp):
    cut = os.path.join(tmp, "pruned.cassette")
    copy_cassette(cas, cut)
    lines = open(os.path.join(cas, "cassette.jsonl")).read().splitlines(True)
    gone = [i for i, line in enumerate(lines) if '"target":"/packages/sbx_hello_py-1.0-py3-none-any.whl"' in line]
    open(os.path.join(cut, "cassette.jsonl"), "w").write("".join(line for i, line in enumerate(lines)
                                                                if i not in gone))
    mock = live.Mock(binary, hosts, wrap=WRAP, extra=["--images", store, "--internet-replay", cut])
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
    copy_cassette(cas, os.path.join(d, "by-scenario.cassette"))
    path = os.path.join(d, "offline.json")
    json.dump({"name": "offline", "internet_cassette": {"replay": "by-scenario.cassette"}}, open(path, "w"))
    mock = live.Mock(binary, hosts, wrap=WRAP, extra=["--scenario", path])
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
    ex = next(x for x in cassette_lines(bad)[1:] if x["body"]["size"] > 0)
    body = os.path.join(bad, "bodies", ex["body"]["sha256"][:2], ex["body"]["sha256"])
    with open(body, "r+b") as f:  # one byte changed, the size kept: the hash is what tells
        first = f.read(1)
        f.seek(0)
        f.write(bytes([first[0] ^ 1]))
    rc, err = stubs.start_refused(binary, hosts, "--internet-replay", bad)
    check(rc == 2 and body in err and "not its name" in err,
          "a body file whose hash is not its name stops the replay's start, naming it", (rc, err))


class LoopbackServer:
    """An HTTP server on the host's 127.0.0.1 (port 0): what a guest must
    not reach through a recording by a name the host resolves there."""

    def __init__(self):
        import http.server
        import threading
        self.hits = []
        hits = self.hits

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                hits.append(self.path)
                body = b"host loopback service\n" if self.path != "/big" else b"b" * (3 << 20)
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.srv.server_address[1]
        self.th = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.th.start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


def host_loopback(binary, hosts, store, work):
    """An allowed name the host's resolver puts on 127.0.0.1 (localhost) is
    not recorded from: the guest would reach the host's loopback services
    (the mock's own API among them) from the host's namespace. The same
    server named by --internet-record-resolve (the operator means it) is
    reached, so the refusal is the rule's, not an unreachable server's."""
    srv = LoopbackServer()
    cas = os.path.join(work, "loopback.cassette")
    mock = live.Mock(binary, hosts, wrap=WRAP,
                     extra=["--images", store, "--internet-record", cas,
                            "--internet-record-allow", "localhost,loop.test",
                            "--internet-record-resolve", "loop.test:%d:127.0.0.1" % srv.port])
    try:
        sid = devbox(mock, "lo")
        curl = "curl -s -w ' %%{http_code}' -H 'Host: %s:%d' http://unrelated.test:%d/_mock/journal"
        r = run(mock, "lo", sid, curl % ("localhost", srv.port, srv.port))
        check(r["stdout"].endswith(" 502") and "a loopback address of the host" in r["stdout"] and
              srv.hits == [], "a recorded name that resolves to the host's loopback is refused, naming why",
              (r, srv.hits))
        r = run(mock, "lo", sid, curl % ("loop.test", srv.port, srv.port))
        check(r["stdout"] == "host loopback service\n 200" and srv.hits == ["/_mock/journal"],
              "the same server named by --internet-record-resolve is recorded from", (r, srv.hits))
    finally:
        mock.stop()
        srv.close()


def record_bound(binary, hosts, store, work):
    """--internet-record-max-mib bounds what a recording writes of bodies:
    a 3 MiB download under a 1 MiB bound is cut, its journal entry names
    the bound, the next request is refused without reaching the origin,
    and the cassette keeps neither (a guest cannot fill the host's disk
    through downloads from an allowed origin)."""
    srv = LoopbackServer()
    cas = os.path.join(work, "bound.cassette")
    mock = live.Mock(binary, hosts, wrap=WRAP,
                     extra=["--images", store, "--internet-record", cas, "--internet-record-allow", "loop.test",
                            "--internet-record-resolve", "loop.test:%d:127.0.0.1" % srv.port,
                            "--internet-record-max-mib", "1"])
    try:
        sid = devbox(mock, "bound")
        r = run(mock, "bound", sid, "curl -s -o /tmp/big http://loop.test:%d/big; echo \" $?\"; "
                "curl -s -w ' %%{http_code}' http://loop.test:%d/small" % (srv.port, srv.port))
        bound = "bound of 1 MiB of bodies to the cassette (--internet-record-max-mib)"
        parts = r["stdout"].rsplit(" ", 1)
        check(not r["stdout"].startswith(" 0") and bound in r["stdout"] and parts[-1] == "502" and
              srv.hits == ["/big"], "past --internet-record-max-mib a download is cut and the next refused, "
              "naming the bound, the origin not asked", (r, srv.hits))
        e = [x for x in journal(mock) if x.get("cassette_miss")]
        check(any(bound in x["cassette_miss"] and x["path"] == "/big" for x in e),
              "the cut download's journal entry names the bound", e)
    finally:
        err = mock.stop()
        srv.close()
    check(bound in err, "the mock says on stderr that the recording reached its bound", err[-600:])
    lines = cassette_lines(cas)[1:] if os.path.exists(os.path.join(cas, "cassette.jsonl")) else []
    kept = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(os.path.join(cas, "bodies")) for f in fs)
    check(lines == [] and kept <= (1 << 20), "the cassette keeps neither exchange, and at most the bound",
          (lines, kept))


def as_user(uid, work):
    """setpriv to uid with a clean environment (ci/test's contain-unprivileged
    stage does the same for the tests it runs as that uid)."""
    env = ["PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + work, "TMPDIR=" + work]
    if os.environ.get("SBX_MOCK_CELL"):
        env.append("SBX_MOCK_CELL=" + os.environ["SBX_MOCK_CELL"])
    return ["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups", "--inh-caps=-all",
            "env", "-i", *env]


def has_owned_copy(store, uid):
    """The store holds devbox:1's copy for uid (mock-api/IMAGES.md "Ownership")."""
    return any(os.path.isdir(os.path.join(store, d, "owned-%d" % uid)) for d in os.listdir(store))


def skipped(why):
    print("skip: " + why)
    return 1 if os.environ.get("CI") == "true" else SKIP


def main():
    args, sbxctl, uid = sys.argv[2:], None, None
    binary = sys.argv[1] if len(sys.argv) > 1 else None
    while len(args) >= 2 and args[0] in ("--sbxctl", "--mock-user"):
        if args[0] == "--sbxctl":
            sbxctl = args[1]
        elif args[1].isdigit():
            uid = int(args[1])
        else:
            break
        args = args[2:]
    if binary is None or args:
        print(__doc__)
        return 2
    store = tls.image_store()
    if os.geteuid() != 0 or shutil.which("ip") is None or store is None:
        return skipped("needs root and ip(8) (the upstreams' namespace) and devbox:1 (%s)" %
                       ("no image" if store is None else "not root"))
    if uid is not None and not has_owned_copy(store, uid):
        return skipped("%s has no devbox:1 copy for uid %d (mock-api/images/build-image --owner %d devbox:1)"
                       % (store, uid, uid))
    tmp = tempfile.mkdtemp(prefix="sbx-cassette-")
    os.chmod(tmp, 0o755)
    up = None
    try:
        hosts = os.path.join(tmp, "hosts.json")
        json.dump(HOSTS, open(hosts, "w"))
        ca_crt, crt, key = ups.make_ca(tmp)
        root = ups.build_root(tmp)
        work = os.path.join(tmp, "work")  # the mocks' HOME and TMPDIR, and where they record
        os.mkdir(work)
        if uid is not None:
            os.chown(work, uid, uid)
            WRAP[:] = as_user(uid, work)
        cas = os.path.join(work, "team.cassette")
        up = ups.Upstreams(tmp, root, crt, key)
        probe = live.Mock(binary, hosts, wrap=WRAP)
        enforced = probe.enforced
        probe.stop()
        if not enforced:
            return skipped("egress is not enforced here")
        if uid is not None:
            check(any("sbx-mock is root only in a user namespace of its own" in line for line in probe.banner),
                  "the mocks run as uid %d, root only in a user namespace of their own" % uid, probe.banner)
        want = record(binary, hosts, store, cas, ca_crt, up.addr)
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
        host_loopback(binary, hosts, store, work)
        record_bound(binary, hosts, store, work)
    finally:
        if up is not None:
            up.close()
        shutil.rmtree(tmp, ignore_errors=True)
    print("internet_cassette: %s" % ("FAIL: " + "; ".join(FAILS) if FAILS else "all passed"))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
