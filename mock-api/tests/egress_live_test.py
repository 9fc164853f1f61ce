#!/usr/bin/env python3
"""Differential test of enforced egress (issue 14, mock-api/INTERNET.md).

For every decision vector of fixtures/egress/vectors.json whose destination
has an address (ADDR:PORT, [V6]:PORT, NAME@ADDR:PORT), a guest of a real
sbx-mock makes a real TCP connect to that address and port under the
vector's rules and host-rule mode. The kernel's verdict (connected, or
refused by the guest's own loopback = let through; no answer = dropped)
must agree with the vector's (the engine's) and with /_mock/egress/check.
Any disagreement fails with the rules, the destination and every verdict.

Half the rule lists are given at create (a warm pool's cell, its link made
ahead with an empty list's chain, gets them at hand-out), half by PUT after
it; the mock runs a pool big enough that most creates take a pooled cell
and checks that some did.

Also: the link-local hole (metadata answers under "network off"), the
resolver, and that no connection ever leaves the machine (a listener on one
of this host's own non-loopback addresses is never reached from a guest).

Usage: egress_live_test.py SBX_MOCK VECTORS_JSON
Exit 0 pass, 1 fail, 77 skipped (enforcement unavailable here: the mock's
own reason is printed).
"""
import concurrent.futures
import ipaddress
import os
import json
import queue
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

SKIP = 77
CONNECT_WAIT_S = 1.5  # a dropped SYN gets no answer at all; allowed ones take < 1 ms

# Runs inside the guest: connects to every destination at once and prints one
# verdict per line: ok (handshake done), refused, timeout, or an errno name.
PROBE = r"""
import errno, json, select, socket, sys, time
dests = json.loads(sys.argv[1]); wait = float(sys.argv[2])
socks = {}
out = {}
for i, (addr, port) in enumerate(dests):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setblocking(False)
    # an IPv6 link-local address needs a link: the guest's only one
    where = (addr, port, 0, socket.if_nametoindex("eth0")) if addr.lower().startswith("fe80") else (addr, port)
    rc = s.connect_ex(where)
    if rc in (0, errno.EINPROGRESS):
        socks[s] = i
    else:
        out[i] = "refused" if rc == errno.ECONNREFUSED else errno.errorcode.get(rc, str(rc))
        s.close()
end = time.time() + wait
while socks and time.time() < end:
    _, w, _ = select.select([], list(socks), [], max(0.0, end - time.time()))
    for s in w:
        rc = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        out[socks.pop(s)] = "ok" if rc == 0 else ("refused" if rc == errno.ECONNREFUSED else errno.errorcode.get(rc, str(rc)))
        s.close()
for s, i in socks.items():
    out[i] = "timeout"
    s.close()
print(json.dumps([out[i] for i in range(len(dests))]))
"""


# How AddressSanitizer, LeakSanitizer and UBSan start a report.
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error: ")


class Mock:
    """wrap: a command the mock runs under (internet_cassette_test.py's
    setpriv to an unprivileged uid, env with that uid's environment)."""

    def __init__(self, binary, hosts, extra=(), wrap=()):
        self.proc = subprocess.Popen(
            [*wrap, binary, "--listen", "127.0.0.1:0", "--self-listen", "off", "--cap", "1000",
             "--internet-hosts", hosts, "--warm-pool", "4", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.url = self.token = None
        self.enforced = False
        self.banner = []  # the start-up lines read, up to "egress: "
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(l) for l in self.proc.stdout], daemon=True).start()
        # "egress: enforced ..." is printed with the other start-up lines
        # when it is on; its absence is only known after they stopped
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                line = lines.get(timeout=1.0 if self.url else deadline - time.time())
            except queue.Empty:
                break
            self.banner.append(line.rstrip("\n"))
            if line.startswith("sbx-mock listening on "):
                self.url = line.split()[-1]
            elif line.startswith("admin token: "):
                self.token = line.split()[-1]
            elif line.startswith("egress: "):
                self.enforced = line.startswith("egress: enforced")
                break
        if self.url is None:
            self.proc.kill()
            raise SystemExit("sbx-mock did not start: " + self.proc.stderr.read())

    def stop(self):
        """Stops the mock: its stderr, or the test ends when it holds a
        sanitizer's report (an ASan build's leak at exit, a UBSan error:
        the tests using this harness would pass without reading it)."""
        self.proc.terminate()
        try:
            _, err = self.proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        for mark in SANITIZER_MARKS:
            if mark in err:
                at = err.index(mark)
                raise SystemExit("sbx-mock's stderr has a sanitizer's report (%s):\n%s"
                                 % (mark, err[max(0, at - 200):at + 4000]))
        return err

    def call(self, method, path, body=None, key=None, admin=False, timeout=30):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if key:
            req.add_header("X-Api-Key", key)
        if admin:
            req.add_header("X-Mock-Admin-Token", self.token)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")


def address_of(dest):
    """(addr, port) of a vector destination with an address, else None."""
    rest = dest.split("@", 1)[1] if "@" in dest else dest
    if rest.startswith("["):
        addr, _, port = rest[1:].partition("]:")
    else:
        addr, _, port = rest.rpartition(":")
    try:
        socket.inet_pton(socket.AF_INET6 if ":" in addr else socket.AF_INET, addr)
    except OSError:
        return None
    return addr, int(port)


def local_kind(addr):
    """Why a TCP connect to addr never leaves the guest, or None."""
    a = ipaddress.ip_address(addr)
    if a.version == 6 and a.ipv4_mapped is not None:
        a = a.ipv4_mapped  # the guest's stack treats ::ffff:a.b.c.d as IPv4
    if a.is_loopback:
        return "loopback"
    if a.is_unspecified:
        return "unspecified: this host"
    if a.is_multicast:
        return "multicast: no TCP"
    if a.version == 4 and a == ipaddress.ip_address("255.255.255.255"):
        return "broadcast: no TCP"
    return None


def sandbox(mock, key, rules, at_create):
    body = {"shape": "s-1vcpu-1gb"}
    if at_create:
        body["egress"] = rules
    st, b = mock.call("POST", "/v1/sandboxes", body, key=key)
    if st != 200:
        raise RuntimeError("create: %s %s" % (st, b))
    sid = b["data"]["id"]
    if at_create:
        return sid
    st, b = mock.call("PUT", "/v1/sandboxes/%s/egress" % sid, {"egress": rules}, key=key)
    if st != 200:
        raise RuntimeError("PUT egress %r: %s %s" % (rules, st, b))
    return sid


def guest_run(mock, key, sid, argv):
    st, b = mock.call("POST", "/v1/sandboxes/%s/exec" % sid, {"cmd": argv[0], "args": argv[1:]}, key=key)
    if st != 200 or b["data"]["result"]["exit_code"] != 0:
        raise RuntimeError("exec %s: %s %s" % (argv[0], st, b))
    return b["data"]["result"]["stdout"]


def probe(mock, key, sid, dests):
    out = guest_run(mock, key, sid, ["python3", "-c", PROBE, json.dumps(dests), str(CONNECT_WAIT_S)])
    return json.loads(out)


def run_group(mock, n, mode, rules, vectors):
    key = "diff-%d" % n
    at_create = n % 2 == 0
    sid = sandbox(mock, key, rules, at_create)
    try:
        dests = [address_of(v["dest"]) for v in vectors]
        kernel = probe(mock, key, sid, dests)
        failures, unobservable = [], 0
        for v, (addr, port), k in zip(vectors, dests, kernel):
            st, o = mock.call("POST", "/_mock/egress/check",
                              {"sandbox_id": sid, "dest": v["dest"], "mode": mode}, admin=True)
            oracle = o["data"]["allowed"] if st == 200 else None
            where = local_kind(addr)
            if where is not None:
                # the guest's own stack answers (refused, or no route for a
                # TCP connect): no packet can reach the internet, whatever
                # the rules; what must hold is that none did
                ok = k != "ok" and k != "timeout"
                unobservable += 1
                verdict = "stays in the guest (%s)" % where
            else:
                ok = (k == "ok") == v["allowed"] and k in ("ok", "timeout")
                verdict = "allowed" if k == "ok" else "denied"
            if not ok or oracle != v["allowed"]:
                failures.append(
                    "rules %s (%s, given %s) dest %s [%s]: kernel %s (%s), engine %s (%s), oracle %s" % (
                        json.dumps(rules), mode, "at create" if at_create else "by PUT", v["dest"], v.get("note", ""), verdict, k,
                        "allowed" if v["allowed"] else "denied", v.get("reason"), oracle))
        return len(vectors), unobservable, failures
    finally:
        mock.call("DELETE", "/v1/sandboxes/" + sid, key=key)


def host_addresses():
    """This host's own non-loopback IPv4 addresses (from the kernel's view)."""
    out = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True).stdout
    addrs = []
    for line in out.splitlines():
        a = line.split()[3].split("/")[0]
        if not a.startswith("127."):
            addrs.append(a)
    return addrs


def no_leak(mock):
    """A listener on one of the host's own addresses must never be reached."""
    addrs = host_addresses()
    if not addrs:
        return ["no non-loopback address on this host: the no-leak check cannot run"]
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind((addrs[0], 0))
    srv.listen(8)
    srv.settimeout(0.2)
    port = srv.getsockname()[1]
    reached = []

    def watch():
        while not stop.is_set():
            try:
                c, a = srv.accept()
                reached.append(a)
                c.close()
            except socket.timeout:
                pass

    stop = threading.Event()
    t = threading.Thread(target=watch)
    t.start()
    failures = []
    try:
        for rules in (None, ["0.0.0.0/0"], [addrs[0]]):
            key = "leak"
            sid = sandbox(mock, key, rules, False)
            try:
                out = guest_run(mock, key, sid, ["python3", "-c",
                    "import socket,sys; s=socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=30);"
                    "s.sendall(b'GET / HTTP/1.0\\r\\n\\r\\n'); print(s.recv(4096).decode())",
                    addrs[0], str(port)])
                if "sbx-mock simulated internet: reached %s:%d" % (addrs[0], port) not in out:
                    failures.append("rules %s: the guest's connect to the host's %s:%d got %r, not the "
                                    "simulated internet's answer" % (rules, addrs[0], port, out[:200]))
            finally:
                mock.call("DELETE", "/v1/sandboxes/" + sid, key=key)
    finally:
        stop.set()
        t.join()
        srv.close()
    if reached:
        failures.append("the host's listener on %s:%d was reached from %s: traffic left the "
                        "simulated internet" % (addrs[0], port, reached))
    return failures


def hole_and_resolver(mock):
    key = "hole"
    sid = sandbox(mock, key, ["240.0.0.0/4"], True)  # the Langflow integration's "network off"
    failures = []
    try:
        out = guest_run(mock, key, sid, ["python3", "-c",
            "import json,socket,urllib.request\n"
            "print(urllib.request.urlopen('http://169.254.169.254/', timeout=30).read().decode())\n"
            "print(json.dumps(sorted({a[4][0] for a in socket.getaddrinfo('pypi.org', 443)})))\n"
            "try:\n socket.getaddrinfo('no-such-name.invalid', 80); print('resolved')\n"
            "except socket.gaierror: print('NXDOMAIN')\n"])
        lines = [l for l in out.splitlines() if l.strip()]
        meta = json.loads(lines[0])
        if meta.get("sandbox_id") != sid:
            failures.append("metadata under network off names %r, not %s" % (meta, sid))
        if json.loads(lines[1]) != ["151.101.0.223", "2001:db8:151::223"]:
            failures.append("pypi.org resolved to %s, not the hosts fixture's addresses" % lines[1])
        if lines[2] != "NXDOMAIN":
            failures.append("an unknown name resolved")
    finally:
        mock.call("DELETE", "/v1/sandboxes/" + sid, key=key)
    return failures


# A raw DNS query for pypi.org/A to the server in argv[1]; prints the first
# answer's address, or "no answer".
DNS_PROBE = r"""
import socket, struct, sys
q = struct.pack('>HHHHHH', 0x5b5b, 0x0100, 1, 0, 0, 0) + b'\x04pypi\x03org\x00' + struct.pack('>HH', 1, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(10)  # the mock's resolver answers from user space: slow under load
s.sendto(q, (sys.argv[1], 53))
try:
    r, src = s.recvfrom(512)
    print(socket.inet_ntoa(r[-4:]), 'from', src[0])
except socket.timeout:
    print('no answer')
"""


def dns_to_any_server(mock):
    """UDP/53 to any server reaches the resolver, when the rules allow it."""
    failures = []
    for rules, want in ((None, "151.101.0.223 from 8.8.8.8"), (["240.0.0.0/4"], "no answer"),
                        (["8.8.8.8:53"], "151.101.0.223 from 8.8.8.8")):
        key = "dns"
        sid = sandbox(mock, key, rules, True)
        try:
            out = guest_run(mock, key, sid, ["python3", "-c", DNS_PROBE, "8.8.8.8"]).strip()
            if out != want:
                failures.append("rules %s: a DNS query to 8.8.8.8:53 got %r, want %r" % (rules, out, want))
        finally:
            mock.call("DELETE", "/v1/sandboxes/" + sid, key=key)
    return failures


def main():
    binary, vectors_path = sys.argv[1], sys.argv[2]
    # fixtures/egress/vectors.json -> fixtures/internet/hosts.json
    hosts = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(vectors_path))),
                         "internet", "hosts.json")
    mock = Mock(binary, hosts)
    if not mock.enforced:
        print("SKIP: egress enforcement is unavailable here; the mock says:\n" + mock.stop())
        return SKIP
    try:
        with open(vectors_path) as f:
            decide = json.load(f)["decide"]
        groups = {}
        for v in decide:
            if address_of(v["dest"]) is None:
                continue
            groups.setdefault((v["mode"], json.dumps(v["rules"])), []).append(v)
        failures, checked, stays = [], 0, 0
        for mode in ("observed", "documented"):
            st, b = mock.call("PUT", "/_mock/settings", {"host_rule_mode": mode}, admin=True)
            if st != 200:
                raise RuntimeError("settings: %s %s" % (st, b))
            of_mode = [(n, json.loads(r), vs) for n, ((m, r), vs) in enumerate(groups.items()) if m == mode]
            with concurrent.futures.ThreadPoolExecutor(4) as ex:
                for count, local, fails in ex.map(lambda g: run_group(mock, g[0], mode, g[1], g[2]), of_mode):
                    checked += count
                    stays += local
                    failures += fails
        st, b = mock.call("GET", "/_mock/pool", admin=True)
        if st != 200 or not b["data"].get("handed_out"):
            failures.append("no create took a warm pool's cell (the prewired link went untested): %s %s"
                            % (st, b))
        failures += hole_and_resolver(mock)
        failures += dns_to_any_server(mock)
        failures += no_leak(mock)
    except BaseException:
        mock.stop()
        raise
    err = mock.stop()
    for f in failures:
        print("FAIL:", f)
    print("%d address vectors in %d rule lists: kernel, engine and oracle %s" % (
        checked, len(groups), "agree" if not failures else "DISAGREE (%d)" % len(failures)))
    print("(%d of them name addresses a guest's own stack answers — loopback, unspecified, "
          "broadcast, multicast: checked to stay in the guest)" % stays)
    if failures and err:
        print("sbx-mock stderr:\n" + err[-4000:])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
