#!/usr/bin/env python3
"""The Python SDK's examples/desktop.py, call by call, against sbx-mock on
desktop:1 (issue 39; mock-api/COMPUTER.md), plus an agent's loop.

As test_python_sdk_examples.py does, over plain HTTP (urllib, standard
library only): each request is what the SDK's ComputerService,
MouseService, ScreensService... send (paths, the screen_id query, bodies
as their models' to_dict write them) and each answer is checked to decode
as the SDK's models need (JSend data; the screenshot raw PNG bytes).

- DesktopExample: screen geometry (polled while the session starts, as the
  example does), screens list and get, a full screenshot whose size is the
  screen's and a 240x160 region, a cursor that moved, a clipboard round
  trip, a URL opened (its browser window listed), a noVNC connection whose
  URL starts with https:// (the example's check) and whose WebSocket,
  through the ingress's TLS verified against the mock's CA, answers an RFB
  handshake.
- AgentLoop: a page in the guest opened in the desktop's browser, made
  full screen with F11; its colour block found in the screenshot where the
  page puts it; a click on its button; the block's new colour seen.
- NoVncGate: the noVNC port refuses a request without a token, with a
  forged one, and after the connection expired (virtual clock advanced).
- Screens: a second screen created, got, resized (its screenshot follows),
  connected to and deleted; screen-0 cannot be deleted.
- Contained: the X and VNC servers' sockets are in the cell's network
  namespace, none in the host's; a pause freezes their cgroup (unprivileged
  without cgroups: stops each with SIGSTOP); a destroy kills them.
- Forged: root in the guest forges its framebuffer's header (16384x16384,
  a sparse GiB): screenshots answer 500 naming both sizes, and 16 at once
  leave the mock's peak memory (VmHWM) within 64 MiB of before.
- ForgedHeader: a header forged in one field other than the size (a row
  length, a colormap over 65536 entries, a file shorter than the header
  says) answers 500 naming it; the restored header is read again.
- ConcurrentScreens: three screens created at once get three screens.
- ScreenBusy: while a resize waits for its X server (held by the guest's
  root), a second resize or a delete of the screen answers 409 SCREEN_BUSY.
- OpenPath: open of /workspace/p%41#x?y.html loads that file (its
  file:// URL percent-encoded), not /workspace/pA.
- Tools: a clipboard of 108 KiB read back whole, one over 1 MiB refused; a
  type too long to finish refused; a destroy ends a running tool; a
  guest's xdotool lying about geometry or the active window gets a 500.
- NotADesktop: a devbox:1 sandbox answers 409 DESKTOP_UNAVAILABLE.

Needs the desktop:1 image (mock-api/images/build-image desktop:1) in the
store (SBX_IMAGE_STORE, else /var/cache/sbx-harness/images as root, else
~/.cache/sbx-harness/images); without it, or when the mock cannot use it
(unprivileged without the copy owned by its uid: build-image --owner UID
desktop:1 as root), every test is skipped, saying so.

Usage: test_desktop.py [SBX_MOCK | --from-env] [unittest options] (SBX_MOCK defaults to
$SBX_MOCK_BIN). Exit 0 pass, 1 fail, 77 skipped.
"""
import json
import os
import socket
import ssl
import struct
import sys
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request
import zlib
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_python_sdk_examples as examples  # noqa: E402 (its Mock)

SKIP = 77
MOCK_BIN = None
KEY = "desktop-test-key"
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def image_store():
    store = os.environ.get("SBX_IMAGE_STORE")
    if store:
        return store
    if os.geteuid() == 0:
        return "/var/cache/sbx-harness/images"
    return os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
                        "sbx-harness", "images")


def desktop_built(store):
    try:
        with open(os.path.join(store, "index")) as f:
            return any(line.split("\t")[0] == "desktop:1" for line in f)
    except OSError:
        return False


def start_mock(store):
    """The examples' sbx-mock (test_python_sdk_examples.Mock), serving the
    store; with --from-env the running mock the environment names."""
    if examples.FROM_ENV:
        return examples.EnvMock()
    return examples.Mock(MOCK_BIN, ("--images", store))


class APIError(Exception):
    def __init__(self, status, body):
        super().__init__("HTTP %d: %s" % (status, body))
        self.status = status
        self.body = body


def call(mock, method, path, body=None, params=None, raw=False, headers=None, timeout=60):
    url = mock.url + path
    if params:
        url += "?" + urllib.parse.urlencode(params)
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("X-Api-Key", KEY)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with OPENER.open(req, timeout=timeout) as resp:
            payload = resp.read()
            if raw:
                return resp.headers.get("Content-Type"), payload
    except urllib.error.HTTPError as e:
        raise APIError(e.code, e.read().decode(errors="replace")) from None
    doc = json.loads(payload)
    # the SDK's JSend check
    assert isinstance(doc, dict) and doc.get("status") == "success", doc
    return doc.get("data")


def check_fields(data, fields):
    """Each field of the SDK's model present with its declared type."""
    for name, typ in fields.items():
        assert name in data, (name, data)
        assert isinstance(data[name], typ) and not (typ is int and isinstance(data[name], bool)), (
            name, data[name])


SCREEN = {"screen_id": str, "display": str, "width": int, "height": int, "vnc_port": int,
          "novnc_port": int}
CONNECTION = {"screen_id": str, "port": int, "path": str, "token": str, "expires_at": str,
              "url": str}
SCREEN_IDS = {"screen-%d" % i for i in range(8)}


def png_decode(data):
    """(width, height, rows of RGB bytes) of an 8-bit RGB PNG, any filter."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", data[:8]
    pos, idat, width = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + n]
        crc = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0]
        assert zlib.crc32(kind + chunk) == crc, kind
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", chunk[:10])
            assert (depth, ctype) == (8, 2), (depth, ctype)
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + n
    raw, stride, rows, prev = zlib.decompress(idat), width * 3, [], bytearray(width * 3)
    for r in range(height):
        f, line = raw[r * (stride + 1)], bytearray(raw[r * (stride + 1) + 1:(r + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - 3] if i >= 3 else 0
            b, c = prev[i], prev[i - 3] if i >= 3 else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, rows


def pixel(rows, x, y):
    return tuple(rows[y][3 * x:3 * x + 3])


def poll(what, fn, timeout=120, every=0.3):
    """fn() until it returns a true value (an agent waits for the screen)."""
    deadline, last = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        try:
            v = fn()
            if v:
                return v
        except APIError as e:
            last = e
        time.sleep(every)
    raise AssertionError("%s: not after %d s (last error: %s)" % (what, timeout, last))


def websocket_rfb(ingress, path, context=None):
    """Opens a WebSocket to the ingress at path (over TLS verified by
    context when the ingress URL is https, as noVNC's wss:// in a
    browser); the first message: the VNC server's RFB ProtocolVersion."""
    parts = urllib.parse.urlsplit(ingress)
    host, port = parts.hostname, parts.port
    raw = s = socket.create_connection((host, port), timeout=30)
    try:
        if parts.scheme == "https":
            s = context.wrap_socket(raw, server_hostname=host)
        s.sendall(("GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                   "Sec-WebSocket-Protocol: binary\r\n\r\n" % (path, host, port)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            b = s.recv(4096)
            if not b:
                break
            head += b
        status = head.split(b"\r\n", 1)[0]
        if b" 101 " not in status:
            return status.decode(errors="replace"), None
        rest = head.split(b"\r\n\r\n", 1)[1]
        while len(rest) < 2:
            rest += s.recv(4096)
        n = rest[1] & 0x7f
        while len(rest) < 2 + n:
            rest += s.recv(4096)
        return status.decode(), rest[2:2 + n]
    finally:
        s.close()
        raw.close()  # a handshake that failed left it unwrapped


class DesktopCase(unittest.TestCase):
    def setUp(self):
        store = image_store()
        if not desktop_built(store):
            self.skipTest("desktop:1 is not built in %s (mock-api/images/build-image desktop:1)" % store)
        self.mock = start_mock(store)
        self.addCleanup(self.mock.stop)
        # built but not usable by this mock (unprivileged without the copy
        # owned by its uid, mock-api/IMAGES.md): skip with the mock's note
        req = urllib.request.Request(self.mock.url + "/_mock/images",
                                     headers={"X-Mock-Admin-Token": self.mock.token})
        with OPENER.open(req, timeout=30) as resp:
            images = json.loads(resp.read())["data"]["images"]
        desktop = [i for i in images if i.get("name") == "desktop:1"]
        if not desktop or desktop[0].get("usable") is not True:
            self.skipTest("desktop:1 in %s is not usable by this mock: %s" % (
                store, desktop[0].get("note") if desktop else "not listed"))

    def create(self, rootfs="desktop:1", ingress=True):
        sb = call(self.mock, "POST", "/v1/sandboxes",
                  {"shape": "s-2vcpu-4gb", "rootfs": rootfs, "ingress_enabled": ingress})
        self.addCleanup(lambda: call(self.mock, "DELETE", "/v1/sandboxes/" + sb["id"]))
        return sb["id"]

    def computer(self, sid, method, suffix, body=None, params=None, raw=False):
        return call(self.mock, method, "/v1/sandboxes/%s/computer%s" % (sid, suffix), body, params, raw)

    def screenshot(self, sid, **params):
        ctype, png = self.computer(sid, "GET", "/screenshot", params=params, raw=True)
        self.assertEqual(ctype, "image/png")
        return png_decode(png)


class DesktopExample(DesktopCase):
    def test_desktop_example(self):
        sid = self.create()
        screen = {"screen_id": "screen-0"}
        geometry = poll("screen geometry", lambda: self.computer(sid, "GET", "/screen", params=screen))
        check_fields(geometry, {"width": int, "height": int})
        screens = self.computer(sid, "GET", "/screens")
        self.assertTrue(screens)
        for s in screens:
            check_fields(s, SCREEN)
            self.assertIn(s["screen_id"], SCREEN_IDS)
        primary = self.computer(sid, "GET", "/screens/screen-0")
        check_fields(primary, SCREEN)
        self.assertEqual((primary["screen_id"], primary["display"]), ("screen-0", ":0"))

        full = self.screenshot(sid, screen_id="screen-0")
        self.assertEqual(full[:2], (geometry["width"], geometry["height"]))
        region = self.screenshot(sid, screen_id="screen-0", x=0, y=0, width=240, height=160)
        self.assertEqual(region[:2], (240, 160))
        # the region is the screen's own pixels
        self.assertEqual(region[2][10][:240 * 3], full[2][10][:240 * 3])

        target = {"x": min(max(geometry["width"] // 3, 10), geometry["width"] - 1),
                  "y": min(max(geometry["height"] // 3, 10), geometry["height"] - 1)}
        self.assertNotEqual(self.computer(sid, "GET", "/cursor", params=screen), target)
        self.computer(sid, "POST", "/mouse/move", target, screen)
        cursor = self.computer(sid, "GET", "/cursor", params=screen)
        self.assertEqual(cursor, target)
        text = "CreateOS desktop %s" % sid
        self.computer(sid, "PUT", "/clipboard", {"text": text}, screen)
        self.assertEqual(self.computer(sid, "GET", "/clipboard", params=screen), {"text": text})

        self.computer(sid, "POST", "/open", {"target": "https://example.com"})
        wins = poll("the browser's window", lambda: [
            w for w in self.computer(sid, "GET", "/windows") if "Chromium" in w["title"]])
        check_fields(wins[0], {"id": str, "title": str})
        poll("the browser's window by its application", lambda: wins[0]["id"] in [
            w["id"] for w in self.computer(sid, "GET", "/windows", params={"application": "chromium"})])
        self.assertEqual(self.computer(sid, "GET", "/windows",
                                       params={"application": "no-such-app"}), [])
        geo = self.computer(sid, "GET", "/windows/%s/geometry" % wins[0]["id"])
        check_fields(geo, {"id": str, "x": int, "y": int, "width": int, "height": int, "screen": int})

        conn = self.computer(sid, "GET", "/screens/screen-0/connect")
        check_fields(conn, CONNECTION)
        self.assertEqual((conn["screen_id"], conn["port"]), ("screen-0", primary["novnc_port"]))
        # the SDK example's own check: the connection's URL is https
        self.assertTrue(conn["url"].startswith("https://"), conn["url"])
        ingress = self.mock.ingress or "https://" + urllib.parse.urlsplit(conn["url"]).netloc
        self.assertTrue(conn["url"].startswith(ingress + "/" + sid + "/"), conn["url"])
        # the WebSocket through the ingress's TLS, verified against the
        # mock's CA (GET /_mock/ca; from the environment: SSL_CERT_FILE's bundle)
        status, first = websocket_rfb(ingress, conn["path"], self.mock.tls_context())
        self.assertIn("101", status)
        self.assertRegex(first or b"", rb"^RFB 003\.00\d\n$")
        # noVNC's page itself, through the same token and TLS
        page = self.mock.opener().open(conn["url"], timeout=30).read()
        self.assertIn(b"noVNC", page)
        # a client without the mock's CA refuses the ingress's leaf
        with self.assertRaises(ssl.SSLCertVerificationError):
            websocket_rfb(ingress, conn["path"], ssl.create_default_context(
                cadata=examples.SYSTEM_CA) if examples.FROM_ENV else ssl.create_default_context())


PAGE = b"""<!doctype html><html><head><title>agent page</title><style>
html,body{margin:0;background:#ffffff;cursor:none}
#block{position:absolute;left:100px;top:300px;width:200px;height:100px;background:rgb(255,0,128)}
#go{position:absolute;left:500px;top:300px;width:200px;height:100px;background:rgb(0,160,0);border:0}
</style></head><body><div id="block"></div>
<button id="go" onclick="document.getElementById('block').style.background='rgb(0,64,255)'"></button>
</body></html>"""


class AgentLoop(DesktopCase):
    def test_open_find_click_see(self):
        sid = self.create()
        req = urllib.request.Request(self.mock.url + "/v1/sandboxes/%s/files?path=/workspace/agent.html"
                                     % sid, data=PAGE, method="PUT",
                                     headers={"X-Api-Key": KEY,
                                              "Content-Type": "application/octet-stream"})
        OPENER.open(req, timeout=30).read()
        poll("the desktop", lambda: self.computer(sid, "GET", "/screen"))
        self.computer(sid, "POST", "/open", {"target": "/workspace/agent.html"})
        win = poll("the page's window", lambda: [
            w for w in self.computer(sid, "GET", "/windows") if "agent page" in w["title"]])[0]
        self.computer(sid, "POST", "/windows/%s/focus" % win["id"])
        self.computer(sid, "POST", "/keyboard/press", {"keys": ["f11"]})  # full screen
        # the page's (0,0) is the screen's once full screen: the block is
        # at 100,300 - 300,400 (its inside checked 10 px in from each edge)
        pink, green, blue = (255, 0, 128), (0, 160, 0), (0, 64, 255)

        def shows(colour, x0, y0, x1, y1):
            _, _, rows = self.screenshot(sid)
            return all(pixel(rows, x, y) == colour for x in (x0 + 10, x1 - 10) for y in (y0 + 10, y1 - 10)) \
                and pixel(rows, x0 - 10, y0 + 10) != colour and pixel(rows, x1 + 10, y1 - 10) != colour

        poll("the pink block at 100,300", lambda: shows(pink, 100, 300, 300, 400))
        self.assertTrue(shows(green, 500, 300, 700, 400))
        self.computer(sid, "POST", "/mouse/click", {"button": "left", "x": 600, "y": 350})
        poll("the block turned blue", lambda: shows(blue, 100, 300, 300, 400))


class NoVncGate(DesktopCase):
    def test_token_checked_and_expiring(self):
        sid = self.create()
        poll("the desktop", lambda: self.computer(sid, "GET", "/screen"))
        conn = self.computer(sid, "GET", "/screens/screen-0/connect")
        base = "/%s/%d" % (sid, conn["port"])
        status, _ = websocket_rfb(self.mock.ingress, base + "/websockify", self.mock.tls_context())
        self.assertIn("403", status)
        forged = conn["token"][:-1] + ("0" if conn["token"][-1] != "0" else "1")
        status, _ = websocket_rfb(self.mock.ingress, "%s/t/%s/websockify" % (base, forged),
                                  self.mock.tls_context())
        self.assertIn("403", status)
        # a token whose expiry is no number (overflowing, or not digits) is
        # refused as malformed, before any HMAC is made of it
        for bad in ("99999999999999999999.%s" % conn["token"].split(".")[1], "12ab.cd"):
            with self.assertRaises(urllib.error.HTTPError) as e:
                self.mock.opener().open("%s%s/t/%s/vnc.html" % (self.mock.ingress, base, bad),
                                        timeout=30)
            self.assertEqual(e.exception.code, 403)
            self.assertIn("is \"<expiry>.<mac>\"", e.exception.read().decode(), bad)
        status, first = websocket_rfb(self.mock.ingress, conn["path"], self.mock.tls_context())
        self.assertIn("101", status)
        req = urllib.request.Request(self.mock.url + "/_mock/clock/advance", method="POST",
                                     data=json.dumps({"ms": 16 * 60 * 1000}).encode(),
                                     headers={"X-Mock-Admin-Token": self.mock.token,
                                              "Content-Type": "application/json"})
        OPENER.open(req, timeout=30).read()
        status, _ = websocket_rfb(self.mock.ingress, conn["path"], self.mock.tls_context())
        self.assertIn("403", status)

    def test_connect_needs_ingress(self):
        sid = self.create(ingress=False)
        poll("the desktop", lambda: self.computer(sid, "GET", "/screen"))
        with self.assertRaises(APIError) as e:
            self.computer(sid, "GET", "/screens/screen-0/connect")
        self.assertEqual(e.exception.status, 409)
        self.assertIn("INGRESS_DISABLED", e.exception.body)


def parent_pid(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def sandbox_procs(mock_pid, names):
    """Host pids of the processes descended from the mock process mock_pid
    whose command name is in names (the test's one desktop sandbox's: the
    mock's other cells, its warm pool's, run no desktop)."""
    found = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/comm" % d) as f:
                comm = f.read().strip()
            if comm not in names:
                continue
            pid = int(d)
            while pid > 1 and pid != mock_pid:
                pid = parent_pid(pid)
            if pid == mock_pid:
                found.setdefault(comm, []).append(int(d))
        except OSError:
            continue
    return found


def in_sandbox_cgroup(pid, sid):
    """Whether pid is in a cgroup of sandbox sid's own (the mock makes one
    per sandbox when it has cgroups: as root; not unprivileged without
    delegated controllers, CONTAINMENT.md)."""
    with open("/proc/%d/cgroup" % pid) as f:
        return sid in f.read()


def stopped(pid):
    """Whether pid is stopped by a signal (state T): an unprivileged mock's
    pause without cgroups is SIGSTOP of every guest process."""
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[0] == "T"


def socket_inodes(pid):
    out = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if target.startswith("socket:["):
            out.add(target[8:-1])
    return out


def net_inodes(root):
    """Socket inodes of one network namespace's TCP and Unix tables, read
    under root ("/proc" for this process's, "/proc/PID" for PID's)."""
    out = set()
    for table, col in (("tcp", 9), ("tcp6", 9), ("unix", 6)):
        try:
            with open("%s/net/%s" % (root, table)) as f:
                next(f)
                for line in f:
                    parts = line.split()
                    if len(parts) > col:
                        out.add(parts[col])
        except OSError:
            continue
    return out


def frozen(pid):
    """Whether pid's cgroup is frozen (v1 freezer.state, v2 cgroup.events)."""
    with open("/proc/%d/cgroup" % pid) as f:
        lines = f.read().splitlines()
    for line in lines:
        _, ctrl, path = line.split(":", 2)
        if ctrl == "freezer":
            with open("/sys/fs/cgroup/freezer%s/freezer.state" % path) as f:
                return f.read().strip() == "FROZEN"
        if ctrl == "":
            try:
                with open("/sys/fs/cgroup%s/cgroup.events" % path) as f:
                    return "frozen 1" in f.read()
            except OSError:
                continue
    return False


class Screens(DesktopCase):
    """ScreensService beyond screen-0: create a second screen (its own X
    display and VNC ports), get it, resize it (the screenshot follows),
    connect to it, delete it (then 404); screen-0 cannot be deleted."""

    FIELDS = {"screen_id": str, "display": str, "width": int, "height": int,
              "vnc_port": int, "novnc_port": int}

    def test_create_resize_delete(self):
        sid = self.create()
        poll("screen geometry", lambda: self.computer(sid, "GET", "/screen"))
        made = self.computer(sid, "POST", "/screens", {"width": 800, "height": 600})
        check_fields(made, self.FIELDS)
        self.assertEqual((made["screen_id"], made["width"], made["height"]), ("screen-1", 800, 600))
        ids = [x["screen_id"] for x in self.computer(sid, "GET", "/screens")]
        self.assertEqual(sorted(ids), ["screen-0", "screen-1"])
        got = self.computer(sid, "GET", "/screens/screen-1")
        self.assertEqual(got["vnc_port"], made["vnc_port"])
        self.assertNotEqual(got["vnc_port"], self.computer(sid, "GET", "/screens/screen-0")["vnc_port"])
        w, h, _ = self.screenshot(sid, screen_id="screen-1")
        self.assertEqual((w, h), (800, 600))
        resized = self.computer(sid, "POST", "/screens/screen-1/resize", {"width": 640, "height": 480})
        self.assertEqual((resized["width"], resized["height"]), (640, 480))
        w, h, _ = poll("the resized screen",
                       lambda: self.screenshot(sid, screen_id="screen-1") if
                       self.screenshot(sid, screen_id="screen-1")[:2] == (640, 480) else None, timeout=60)
        self.assertEqual((w, h), (640, 480))
        conn = self.computer(sid, "GET", "/screens/screen-1/connect")
        self.assertTrue(conn["url"].startswith("https://"), conn)
        self.computer(sid, "DELETE", "/screens/screen-1")
        with self.assertRaises(APIError) as e:
            self.computer(sid, "GET", "/screens/screen-1")
        self.assertEqual(e.exception.status, 404)
        with self.assertRaises(APIError) as e:
            self.computer(sid, "DELETE", "/screens/screen-0")
        self.assertEqual(e.exception.status, 409)


class Contained(DesktopCase):
    """A desktop is its sandbox's own guest processes, contained like every
    guest: the X server and the VNC servers listen only inside the cell
    (none of their sockets is in the host's network namespace; they are in
    the cell's), a pause freezes them (their cgroup frozen; unprivileged
    without cgroups, each stopped by SIGSTOP), a destroy kills them.

    Unprivileged the guest processes are this user's, in a user namespace
    it owns, so their /proc entries (fds, net tables) are readable as they
    are to root."""

    NAMES = ("Xvfb", "x11vnc")

    def test_listens_inside_freezes_and_dies(self):
        sid = self.create()
        poll("screen geometry", lambda: self.computer(sid, "GET", "/screen"))
        mock_pid = self.mock.proc.pid
        procs = poll("the desktop's processes", lambda: (
            sandbox_procs(mock_pid, self.NAMES) if len(sandbox_procs(mock_pid, self.NAMES)) == 2
            else None))
        every = [pid for pids in procs.values() for pid in pids]
        grouped = [in_sandbox_cgroup(pid, sid) for pid in every]
        self.assertEqual(len(set(grouped)), 1, "some desktop processes in %s's cgroup, some not" % sid)
        if os.geteuid() == 0:
            self.assertTrue(grouped[0], "as root the desktop's processes are in %s's cgroup" % sid)
        print("desktop processes of %s (uid %d): %s; pause by %s" % (
            sid, os.geteuid(), procs, "cgroup freezer" if grouped[0] else "SIGSTOP (no cgroups)"))
        host = net_inodes("/proc")
        for name, pids in procs.items():
            for pid in pids:
                mine = socket_inodes(pid)
                self.assertTrue(mine, "%s has no socket to check" % name)
                self.assertFalse(mine & host, "%s has a socket in the host's namespace" % name)
                self.assertTrue(mine & net_inodes("/proc/%d" % pid),
                                "%s's sockets are not in its own namespace's tables" % name)
        call(self.mock, "POST", "/v1/sandboxes/%s/pause" % sid)
        poll("paused", lambda: call(self.mock, "GET", "/v1/sandboxes/" + sid)["status"] == "paused" or None)
        held = frozen if grouped[0] else stopped
        for pid in every:
            self.assertTrue(poll("paused: %d" % pid, lambda: held(pid) or None, timeout=30))
        call(self.mock, "POST", "/v1/sandboxes/%s/resume" % sid)
        poll("running", lambda: call(self.mock, "GET", "/v1/sandboxes/" + sid)["status"] == "running" or None)
        for pid in every:
            self.assertTrue(poll("resumed: %d" % pid, lambda: not held(pid) or None, timeout=30))
        call(self.mock, "DELETE", "/v1/sandboxes/" + sid)
        poll("the desktop's processes gone",
             lambda: all(not os.path.exists("/proc/%d" % pid) for pid in every) or None, timeout=30)


def vm_hwm_kib(pid):
    """The peak resident memory (VmHWM, KiB) of process pid so far."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc/%d/status" % pid)


# Root in the guest rewrites its screen-0's XWD header to say 16384x16384
# (width, height, bytes_per_line, window width and height: fields 4, 5,
# 12, 20 and 21) and makes the file as long as that says: a sparse GiB.
FORGED_SIDE = 16384
FORGE_PY = """
import struct, sys
side = int(sys.argv[1])
path = "/tmp/.sbx-desktop/0/Xvfb_screen0"
with open(path, "r+b") as f:
    h = bytearray(f.read(100))
    for field, v in ((4, side), (5, side), (12, side * 4), (20, side), (21, side)):
        struct.pack_into(">I", h, 4 * field, v)
    size, ncolors = struct.unpack_from(">I", h, 0)[0], struct.unpack_from(">I", h, 76)[0]
    f.seek(0)
    f.write(h)
    f.truncate(size + 12 * ncolors + side * 4 * side)
"""


class Forged(DesktopCase):
    """What a guest writes is input: a framebuffer whose header root in the
    sandbox forged gets a clear error (the mock reads the size it started
    the screen at, never the file's), and 16 screenshots of it at once
    leave the mock's peak memory (VmHWM) within 64 MiB of before."""

    SHOTS = 16
    BUDGET_KIB = 64 * 1024

    def shot_status(self, sid):
        try:
            ctype, png = self.computer(sid, "GET", "/screenshot", raw=True)
            return 200, ctype, png[:64]
        except APIError as e:
            return e.status, None, e.body

    def test_forged_framebuffer_bounded(self):
        sid = self.create()
        geometry = poll("screen geometry", lambda: self.computer(sid, "GET", "/screen"))
        # the mock's own buffers warmed by real screenshots first
        self.assertEqual(self.screenshot(sid)[:2], (geometry["width"], geometry["height"]))
        pid = self.mock.proc.pid
        before = vm_hwm_kib(pid)
        res = call(self.mock, "POST", "/v1/sandboxes/%s/exec" % sid,
                   {"cmd": "python3", "args": ["-c", FORGE_PY, str(FORGED_SIDE)]})
        self.assertEqual(res["result"]["exit_code"], 0, res)
        with ThreadPoolExecutor(self.SHOTS) as pool:
            answers = list(pool.map(lambda _: self.shot_status(sid), range(self.SHOTS)))
        after = vm_hwm_kib(pid)
        print("forged %dx%d framebuffer, %d screenshots at once: VmHWM %d -> %d KiB (+%d)" % (
            FORGED_SIDE, FORGED_SIDE, self.SHOTS, before, after, after - before))
        for status, _, body in answers:
            self.assertEqual(status, 500, "a forged framebuffer answered %d: %r" % (status, body))
            self.assertIn("says %dx%d" % (FORGED_SIDE, FORGED_SIDE), body)
            self.assertIn("%dx%d" % (geometry["width"], geometry["height"]), body)
        self.assertLessEqual(after - before, self.BUDGET_KIB,
                             "the mock's peak memory grew by %d KiB (VmHWM %d -> %d), over %d" % (
                                 after - before, before, after, self.BUDGET_KIB))
        # the screen's size is still the one the mock started it at
        self.assertEqual(self.computer(sid, "GET", "/screen"), geometry)


# Root in the guest rewrites one field of screen-0's XWD header (its
# number, then a value or "+N" on the real one); "fit" then makes the file
# as long as the forged header says (so that only the field's own check
# can refuse it), "cut" one byte shorter than the real header says (the
# last page stays: Xvfb's mapping of it is not cut). Prints the original
# header (hex) and size, for the restore.
FORGE_FIELD_PY = """
import os, struct, sys
path = "/tmp/.sbx-desktop/0/Xvfb_screen0"
field, value, how = int(sys.argv[1]), sys.argv[2], sys.argv[3]
with open(path, "r+b") as f:
    h = bytearray(f.read(100))
    size = os.fstat(f.fileno()).st_size
    print(h.hex(), size)
    get = lambda i: struct.unpack_from(">I", h, 4 * i)[0]
    if field >= 0:
        struct.pack_into(">I", h, 4 * field, get(field) + int(value[1:]) if value[0] == "+" else int(value))
    f.seek(0)
    f.write(h)
    end = get(0) + 12 * get(19) + get(12) * get(5)
    if how == "fit" and end > size:
        f.truncate(end)
    elif how == "cut":
        f.truncate(end - 1)
"""
RESTORE_PY = """
import sys
with open("/tmp/.sbx-desktop/0/Xvfb_screen0", "r+b") as f:
    f.write(bytes.fromhex(sys.argv[1]))
    f.truncate(int(sys.argv[2]))
"""


class ForgedHeader(DesktopCase):
    """Each check of a framebuffer's header beside its size refuses a
    header forged in that one field (the file made long enough for the
    rest to pass) with a 500 naming the field, and the restored header is
    read again: a row length the width does not need, a colormap over
    65536 entries, a file shorter than its header says."""

    CASES = (
        # (what, field, value, how, the answer names)
        ("row length", 12, "+64", "fit", "has a row length (bytes_per_line) of"),
        ("colormap", 19, "65537", "fit", "has 65537 colormap entries (ncolors), over 65536"),
        ("short file", -1, "", "cut", "shorter than its header says"),
    )

    def guest_py(self, sid, script, *args):
        res = call(self.mock, "POST", "/v1/sandboxes/%s/exec" % sid,
                   {"cmd": "python3", "args": ["-c", script] + list(args)})
        self.assertEqual(res["result"]["exit_code"], 0, res)
        return res["result"]["stdout"].split()

    def test_each_header_check_refuses(self):
        sid = self.create()
        geometry = poll("screen geometry", lambda: self.computer(sid, "GET", "/screen"))
        self.assertEqual(self.screenshot(sid)[:2], (geometry["width"], geometry["height"]))
        for what, field, value, how, says in self.CASES:
            with self.subTest(what):
                header, size = self.guest_py(sid, FORGE_FIELD_PY, str(field), value or "0", how)
                try:
                    with self.assertRaises(APIError) as e:
                        self.computer(sid, "GET", "/screenshot", raw=True)
                    self.assertEqual(e.exception.status, 500, e.exception.body)
                    self.assertIn(says, e.exception.body)
                finally:
                    self.guest_py(sid, RESTORE_PY, header, size)
                # the check refused the forged field, not the screen
                self.assertEqual(self.screenshot(sid)[:2], (geometry["width"], geometry["height"]))


class ConcurrentScreens(DesktopCase):
    """Screens created at once get one screen each (the lowest free one is
    reserved under the mock's lock before its X server starts)."""

    def test_concurrent_creates_distinct(self):
        sid = self.create()
        poll("screen geometry", lambda: self.computer(sid, "GET", "/screen"))
        n = 3
        with ThreadPoolExecutor(n) as pool:
            made = list(pool.map(lambda _: self.computer(sid, "POST", "/screens",
                                                         {"width": 640, "height": 480}), range(n)))
        ids = sorted(m["screen_id"] for m in made)
        self.assertEqual(ids, ["screen-%d" % i for i in range(1, n + 1)], made)
        self.assertEqual(sorted(x["screen_id"] for x in self.computer(sid, "GET", "/screens")),
                         ["screen-%d" % i for i in range(n + 1)])
        for m in made:
            w, h, _ = self.screenshot(sid, screen_id=m["screen_id"])
            self.assertEqual((w, h), (640, 480), m)


# Root in the guest makes every X server it starts wait while
# /tmp/hold-x exists, so a resize holds its screen until the test says.
HOLD_XVFB = """mv /usr/bin/Xvfb /usr/bin/Xvfb.real && cat > /usr/bin/Xvfb <<'EOF'
#!/bin/sh
while [ -e /tmp/hold-x ]; do sleep 0.1; done
exec /usr/bin/Xvfb.real "$@"
EOF
chmod 755 /usr/bin/Xvfb && touch /tmp/hold-x"""


class ScreenBusy(DesktopCase):
    """A resize holds its screen until its X server is up: a second resize
    or a delete of that screen meanwhile answers 409 SCREEN_BUSY (never
    a second X server started over the first's), and once the first is
    done the screen is free again."""

    def guest_sh(self, sid, script):
        res = call(self.mock, "POST", "/v1/sandboxes/%s/exec" % sid, {"cmd": "sh", "args": ["-c", script]})
        self.assertEqual(res["result"]["exit_code"], 0, res)

    def test_second_resize_or_delete_busy(self):
        sid = self.create()
        poll("screen geometry", lambda: self.computer(sid, "GET", "/screen"))
        self.computer(sid, "POST", "/screens", {"width": 800, "height": 600})
        self.guest_sh(sid, HOLD_XVFB)
        with ThreadPoolExecutor(1) as pool:
            resizing = pool.submit(lambda: self.computer(sid, "POST", "/screens/screen-1/resize",
                                                         {"width": 640, "height": 480}))
            try:
                # the mock records the new size as the resize takes the screen
                poll("the resize holding screen-1", lambda: resizing.done() or self.computer(
                    sid, "GET", "/screens/screen-1")["width"] == 640, timeout=60, every=0.05)
                self.assertFalse(resizing.done(), "the resize ended before its X server could start")
                for method, suffix, body in (
                        ("POST", "/screens/screen-1/resize", {"width": 1024, "height": 768}),
                        ("DELETE", "/screens/screen-1", None)):
                    with self.assertRaises(APIError, msg="%s %s during a resize" % (method, suffix)) as e:
                        self.computer(sid, method, suffix, body)
                    self.assertEqual(e.exception.status, 409, e.exception.body)
                    self.assertIn("SCREEN_BUSY", e.exception.body)
            finally:
                self.guest_sh(sid, "rm -f /tmp/hold-x")
            resized = resizing.result(timeout=120)
        self.assertEqual((resized["width"], resized["height"]), (640, 480))
        self.assertEqual(self.screenshot(sid, screen_id="screen-1")[:2], (640, 480))
        self.computer(sid, "DELETE", "/screens/screen-1")  # free again


RIGHT_PAGE = b"<!doctype html><title>the named page</title><body>right</body>"
WRONG_PAGE = b"<!doctype html><title>another page</title><body>wrong</body>"


class OpenPath(DesktopCase):
    """open of a guest path whose name holds '%', '#' or '?' loads that
    very file: its file:// URL percent-encodes them (RFC 3986, 8089).
    Unencoded, Chromium would read /workspace/p%41#x?y.html as the file
    /workspace/pA (%41 decoded, the rest a fragment)."""

    def put(self, sid, path, data):
        req = urllib.request.Request(
            self.mock.url + "/v1/sandboxes/%s/files?path=%s" % (sid, urllib.parse.quote(path, safe="/")),
            data=data, method="PUT", headers={"X-Api-Key": KEY, "Content-Type": "application/octet-stream"})
        OPENER.open(req, timeout=30).read()

    def test_open_path_with_url_delimiters(self):
        sid = self.create()
        self.put(sid, "/workspace/p%41#x?y.html", RIGHT_PAGE)
        for decoy in ("/workspace/pA", "/workspace/p%41", "/workspace/p"):
            self.put(sid, decoy, WRONG_PAGE)
        poll("the desktop", lambda: self.computer(sid, "GET", "/screen"))
        self.computer(sid, "POST", "/open", {"target": "/workspace/p%41#x?y.html"})

        def titles():
            seen = [w["title"] for w in self.computer(sid, "GET", "/windows")]
            # a decoy shown as HTML, or pA (no extension) as text under its name
            if any("another page" in t or t.startswith("pA") for t in seen):
                raise AssertionError("open loaded another file than the one named: %s" % seen)
            return [t for t in seen if "the named page" in t]
        poll("the named page's window", titles, timeout=60)


# A guest's root replaces xdotool with one that lies about geometry and
# the active window (the rest passes to the real one).
FAKE_XDOTOOL = """mv /usr/bin/xdotool /usr/bin/xdotool.real && cat > /usr/bin/xdotool <<'EOF'
#!/bin/sh
case "$1" in
getwindowname) echo fake; exit 0 ;;
getwindowgeometry) printf 'WINDOW=%s\\nX=9223372036854775807\\nY=0\\nWIDTH=10\\nHEIGHT=10\\nSCREEN=0\\n' "$3"; exit 0 ;;
getactivewindow) echo junk; exit 0 ;;
esac
exec /usr/bin/xdotool.real "$@"
EOF
chmod 755 /usr/bin/xdotool"""


class Tools(DesktopCase):
    """The tools a route runs in the guest are the guest's: their output is
    read whole or refused (never cut), range-checked, and their run ends
    when the sandbox is destroyed; a type too long to finish is refused."""

    def error_of(self, fn):
        with self.assertRaises(APIError) as e:
            fn()
        return e.exception

    def test_clipboard_read_whole_or_refused(self):
        sid = self.create()
        poll("screen geometry", lambda: self.computer(sid, "GET", "/screen"))
        text = "".join("line %06d of the clipboard\n" % i for i in range(4000))  # ~108 KiB
        self.computer(sid, "PUT", "/clipboard", {"text": text})
        got = self.computer(sid, "GET", "/clipboard")["text"]
        self.assertEqual(len(got), len(text))
        self.assertEqual(got, text)
        # over what the mock reads back (1 MiB), set inside the guest; the
        # xclip that serves it owns the selection some time after the one
        # started exits, so the script waits until the guest reads it back
        r = call(self.mock, "POST", "/v1/sandboxes/%s/exec" % sid, {"cmd": "sh", "args": ["-c", (
            "head -c 1100000 /dev/zero | tr '\\0' a | DISPLAY=:0 xclip -selection clipboard -i "
            ">/dev/null 2>&1; for i in $(seq 100); do "
            "[ \"$(DISPLAY=:0 xclip -o -selection clipboard | wc -c)\" = 1100000 ] && exit 0; sleep 0.1; "
            "done; exit 1")]})
        self.assertEqual(r["result"]["exit_code"], 0, "the guest's clipboard never held the 1,100,000 bytes: %s" % r)
        e = self.error_of(lambda: self.computer(sid, "GET", "/clipboard"))
        self.assertEqual(e.status, 500, e.body)
        self.assertIn("more than 1048576 bytes", e.body)

    def test_type_too_long_refused(self):
        sid = self.create()
        poll("screen geometry", lambda: self.computer(sid, "GET", "/screen"))
        e = self.error_of(lambda: self.computer(sid, "POST", "/keyboard/type",
                                                {"text": "x" * 2000, "delay_in_ms": 100}))
        self.assertEqual(e.status, 400, e.body)
        self.assertIn("200000 ms", e.body)

    def test_destroy_ends_running_tool(self):
        sb = call(self.mock, "POST", "/v1/sandboxes", {"shape": "s-2vcpu-4gb", "rootfs": "desktop:1"})
        sid = sb["id"]
        poll("screen geometry", lambda: self.computer(sid, "GET", "/screen"))
        with ThreadPoolExecutor(1) as pool:
            typing = pool.submit(lambda: self.error_of(lambda: self.computer(
                sid, "POST", "/keyboard/type", {"text": "y" * 60, "delay_in_ms": 1000})))
            time.sleep(1)
            call(self.mock, "DELETE", "/v1/sandboxes/" + sid)
            e = typing.result(timeout=120)
        # ended by the destroy, not after its 60 s of typing or a timeout
        self.assertEqual(e.status, 409, e.body)
        self.assertIn("NOT_RUNNING", e.body)

    def test_tool_output_checked(self):
        sid = self.create()
        poll("screen geometry", lambda: self.computer(sid, "GET", "/screen"))
        res = call(self.mock, "POST", "/v1/sandboxes/%s/exec" % sid,
                   {"cmd": "sh", "args": ["-c", FAKE_XDOTOOL]})
        self.assertEqual(res["result"]["exit_code"], 0, res)
        e = self.error_of(lambda: self.computer(sid, "GET", "/windows/77/geometry"))
        self.assertEqual(e.status, 500, e.body)
        self.assertIn("in X's ranges", e.body)
        e = self.error_of(lambda: self.computer(sid, "GET", "/screenshot", params={"window_id": "77"},
                                                raw=True))
        self.assertEqual(e.status, 500, e.body)
        e = self.error_of(lambda: self.computer(sid, "GET", "/windows/current"))
        self.assertEqual(e.status, 500, e.body)
        self.assertIn("junk", e.body)


class NoWindows(DesktopCase):
    def test_a_fresh_desktop_lists_no_windows(self):
        # before its first window the window manager publishes no client
        # list and wmctrl -l exits 1: that is an empty list, not a 500
        sid = self.create()
        poll("screen geometry", lambda: self.computer(sid, "GET", "/screen"))
        self.assertEqual(self.computer(sid, "GET", "/windows"), [])
        self.assertEqual(self.computer(sid, "GET", "/windows", params={"application": "chromium"}), [])


class NotADesktop(DesktopCase):
    def test_devbox_has_no_computer(self):
        sid = self.create(rootfs="devbox:1")
        for method, suffix in (("GET", "/screen"), ("GET", "/screenshot"), ("POST", "/mouse/move"),
                               ("GET", "/screens")):
            with self.assertRaises(APIError) as e:
                self.computer(sid, method, suffix, {"x": 1, "y": 1} if method == "POST" else None)
            self.assertEqual(e.exception.status, 409, suffix)
            self.assertIn("DESKTOP_UNAVAILABLE", e.exception.body)


def main():
    global MOCK_BIN, KEY
    argv = sys.argv[1:]
    if argv and argv[0] == "--from-env":  # as test_python_sdk_examples.py --from-env
        argv.pop(0)
        examples.FROM_ENV = True
        examples.SYSTEM_CA = examples.split_last_cert(os.environ.get("SSL_CERT_FILE", ""))
        KEY = os.environ.get("CREATEOS_SANDBOX_API_KEY", KEY)
        MOCK_BIN = "(the environment's mock)"
    MOCK_BIN = MOCK_BIN or (argv.pop(0) if argv and not argv[0].startswith("-") else os.environ.get("SBX_MOCK_BIN"))
    if not MOCK_BIN:
        sys.exit(__doc__.split("\n\n")[-1])
    store = image_store()
    if not desktop_built(store):
        print("SKIP: desktop:1 is not built in %s (mock-api/images/build-image desktop:1)" % store)
        return SKIP
    result = unittest.main(argv=[sys.argv[0]] + argv, exit=False, verbosity=2).result
    if not result.wasSuccessful():
        return 1
    # every test skipped (the image unusable by this mock): skipped, not passed
    return SKIP if result.testsRun and len(result.skipped) == result.testsRun else 0


if __name__ == "__main__":
    sys.exit(main())
