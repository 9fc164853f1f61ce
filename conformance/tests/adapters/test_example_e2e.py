"""End to end: the example CreateOS backend (conformance/adapters/examples/)
served by the Python adapter against a real sbx-mock on a loopback port.
The control plane's own records (admin API: sandboxes, journal) are the
evidence: what was created, with which settings, and that it was destroyed.

The mock binary comes from SBX_MOCK_BIN (set by ctest when the sbx-mock
target exists) or a built build/*/mock-api/sbx-mock; without one the tests are
skipped with a message.
"""

import glob
import json
import os
import re
import secrets
import subprocess
import sys
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_adapter import CONFORM, Driver  # noqa: E402

EXAMPLE = os.path.join(CONFORM, "adapters", "examples", "createos_backend.py") + ":create_backend"
SOURCE = os.environ.get("SBX_SOURCE_DIR") or os.path.dirname(CONFORM)


def find_mock():
    if "SBX_MOCK_BIN" in os.environ:  # set (ctest sets it, maybe empty): no guessing
        path = os.environ["SBX_MOCK_BIN"]
        return path if path and os.access(path, os.X_OK) else None
    built = sorted(glob.glob(os.path.join(SOURCE, "build", "*", "mock-api", "sbx-mock")),
                   key=os.path.getmtime, reverse=True)
    return built[0] if built else None


class Mock:
    """A real sbx-mock process on an ephemeral loopback port."""

    def __init__(self, binary):
        self.proc = subprocess.Popen([binary, "--listen", "127.0.0.1:0", "--quiet"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     stdin=subprocess.DEVNULL)
        self.url = self.token = None
        deadline = time.monotonic() + 20
        while (self.url is None or self.token is None) and time.monotonic() < deadline:
            line = self.proc.stdout.readline().decode("utf-8", "replace")
            if not line:
                break
            m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
            if m:
                self.url = m.group(1)
            m = re.search(r"admin token: (\S+)", line)
            if m:
                self.token = m.group(1)
        if self.url is None or self.token is None:
            self.stop()
            raise RuntimeError("sbx-mock did not announce its URL and admin token")

    def admin(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"X-Mock-Admin-Token": self.token,
                                              "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            doc = json.loads(resp.read())
        assert doc.get("status") == "success", doc
        return doc["data"]

    def sandboxes(self, key):
        return self.admin("GET", "/_mock/sandboxes?tenant=" + key)["sandboxes"]

    def journal(self, key, method=None, path=None):
        q = "tenant=" + key + ("&method=" + method if method else "") + \
            ("&path=" + path if path else "")
        return self.admin("GET", "/_mock/journal?" + q)["entries"]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()


TERMINAL = ("destroyed", "failed")


class ExampleBackendEndToEnd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        binary = find_mock()
        if binary is None:
            raise unittest.SkipTest("sbx-mock not built (set SBX_MOCK_BIN or build target sbx-mock)")
        cls.mock = Mock(binary)

    @classmethod
    def tearDownClass(cls):
        cls.mock.stop()

    def driver(self, **settings):
        """A fresh adapter with a fresh key (a fresh mock tenant)."""
        self.key = "test-" + secrets.token_hex(8)
        env = {k: "" for k in os.environ
               if k.startswith(("LANGFLOW_SANDBOX_", "CREATEOS_"))}
        env.update({"CREATEOS_SANDBOX_BASE_URL": self.mock.url,
                    "CREATEOS_SANDBOX_API_KEY": self.key,
                    "LANGFLOW_SANDBOX_CREATEOS_ACCEPT_EGRESS_EXCEPTIONS": "true"})
        env.update(settings)
        d = Driver(EXAMPLE, paths=(), env=env)
        self.addCleanup(d.close)
        return d

    def test_hello_capabilities_and_a_run_leave_no_guest(self):
        d = self.driver()
        self.assertEqual(d.ok("hello", protocol=1)["name"], "createos")
        self.assertEqual(d.ok("capabilities"), {
            "isolation": "hardware-virtualized", "supports_deny_all_egress": True,
            "supports_domain_allowlist": False, "max_timeout_seconds": None})
        self.assertEqual(self.mock.journal(self.key), [], "capabilities() made requests")
        r = d.ok("run", code='print("hi")', env=None)
        self.assertEqual((r["stdout"], r["exit_code"]), ("hi\n", 0), r)
        self.assertIsInstance(r["execution_time_ms"], int)
        boxes = self.mock.sandboxes(self.key)
        self.assertEqual(len(boxes), 1, boxes)
        box = boxes[0]
        self.assertRegex(box["name"], r"^lf-[0-9a-f]{19}$")
        self.assertIn(box["status"], TERMINAL, "the guest was not destroyed: %r" % box)
        self.assertEqual(box.get("egress"), ["240.0.0.0/4"])
        self.assertEqual(box.get("auto_pause_after_seconds"), 150)
        self.assertEqual(box.get("shape"), "s-2vcpu-4gb")
        self.assertEqual(d.ok("shutdown"), {})
        self.assertEqual(d.ok("shutdown"), {})

    def test_whoami_once_per_process_and_env_and_exit_codes_come_through(self):
        d = self.driver(LANGFLOW_SANDBOX_ALLOW_NETWORK="true")
        r = d.ok("run", code='import os; print(os.environ["GREETING"])', env={"GREETING": "hej"})
        self.assertEqual(r["stdout"], "hej\n")
        r = d.ok("run", code="import sys; sys.stderr.write('bad'); sys.exit(3)")
        self.assertEqual((r["stderr"], r["exit_code"]), ("bad", 3))
        self.assertEqual(len(self.mock.journal(self.key, "GET", "/v1/whoami")), 1)
        boxes = self.mock.sandboxes(self.key)
        self.assertEqual(len(boxes), 2)
        self.assertTrue(all(b["status"] in TERMINAL and b.get("egress") == ["*"] for b in boxes),
                        boxes)

    def test_refusals_happen_before_anything_is_created(self):
        d = self.driver(LANGFLOW_SANDBOX_ALLOWED_DOMAINS=" example.com ,")
        ans = d.call("run", code='print("never")')
        self.assertEqual(ans["error"]["type"], "SandboxUnavailableError")
        self.assertIn("LANGFLOW_SANDBOX_ALLOWED_DOMAINS", ans["error"]["message"])
        d2 = self.driver(LANGFLOW_SANDBOX_CREATEOS_ACCEPT_EGRESS_EXCEPTIONS="")
        ans = d2.call("run", code='print("never")')
        self.assertEqual(ans["error"]["type"], "SandboxUnavailableError")
        self.assertIn("LANGFLOW_SANDBOX_CREATEOS_ACCEPT_EGRESS_EXCEPTIONS", ans["error"]["message"])
        self.assertEqual(self.mock.journal(self.key), [])

    def test_one_503_on_create_is_one_attempt_and_an_execution_error(self):
        d = self.driver()
        self.mock.admin("POST", "/_mock/faults", {
            "name": "create-503", "match": {"method": "POST", "path": "/v1/sandboxes",
                                            "tenant": self.key},
            "fire": {"times": 1}, "action": {"kind": "http", "status": 503}})
        ans = d.call("run", code='print("canary-503")')
        self.assertEqual(ans["ok"], False)
        self.assertEqual(ans["error"]["type"], "SandboxExecutionError")
        creates = self.mock.journal(self.key, "POST", "/v1/sandboxes")
        self.assertEqual(len(creates), 1, creates)
        self.assertNotIn("canary-503", d.stderr_text())
        self.assertTrue(all(b["status"] in TERMINAL for b in self.mock.sandboxes(self.key)))

    def test_a_timeout_is_exit_minus_one_and_the_guest_is_gone(self):
        d = self.driver(LANGFLOW_SANDBOX_TIMEOUT_SECONDS="1")
        r = d.ok("run", code="import time; time.sleep(30)")
        self.assertEqual(r["exit_code"], -1, r)
        boxes = self.mock.sandboxes(self.key)
        self.assertEqual(len(boxes), 1)
        self.assertIn(boxes[0]["status"], TERMINAL)
        self.assertEqual(boxes[0].get("auto_pause_after_seconds"), 121)  # max(60, 1 + 120)

    def test_a_memory_kill_stays_137(self):
        d = self.driver()
        self.mock.admin("POST", "/_mock/faults", {
            "match": {"method": "POST", "path": "/v1/sandboxes/{id}/exec", "tenant": self.key},
            "fire": {"times": 1}, "action": {"kind": "exec_oom"}})
        r = d.ok("run", code='print("x")')
        self.assertEqual(r["exit_code"], 137, r)
        self.assertTrue(all(b["status"] in TERMINAL for b in self.mock.sandboxes(self.key)))

    def test_an_unreachable_control_plane_is_unavailable(self):
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # nothing listens there now
        d = self.driver(CREATEOS_SANDBOX_BASE_URL="http://127.0.0.1:%d" % port)
        ans = d.call("run", code='print("canary-down")')
        self.assertEqual(ans["error"]["type"], "SandboxUnavailableError", ans)
        self.assertIn("unreachable", ans["error"]["message"])
        self.assertNotIn("canary-down", d.stderr_text())

    def test_fork_check_and_concurrent_runs(self):
        d = self.driver()
        r = d.ok("fork_check", code='print("from child")')
        self.assertEqual(r["child"]["result"]["stdout"], "from child\n", r)
        r = d.ok("run_concurrent", runs=[{"code": 'print("run %d")' % i} for i in range(4)])
        self.assertEqual([o["result"]["stdout"] for o in r["results"]],
                         ["run %d\n" % i for i in range(4)], r)
        boxes = self.mock.sandboxes(self.key)
        self.assertEqual(len(boxes), 5)
        self.assertTrue(all(b["status"] in TERMINAL for b in boxes), boxes)


if __name__ == "__main__":
    unittest.main()
