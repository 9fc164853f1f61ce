"""The Python adapter (conformance/adapters/sbx_harness/langflow_backend.py) serves any
Langflow backend object over driver protocol v1: framing and ProtocolError
answers, attribute-based reading of capabilities and results, MRO-based error
classification, a stdout that carries nothing but answers, fork_check and
run_concurrent. Each test drives the real adapter as a subprocess.

Run: python3 -m unittest discover -s conformance/tests/adapters
"""

import json
import os
import select
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CONFORM = os.environ.get("SBX_CONFORM_DIR") or os.path.dirname(os.path.dirname(HERE))
ADAPTER = os.path.join(CONFORM, "adapters", "sbx_harness", "langflow_backend.py")
BACKENDS = os.path.join(HERE, "backends")
ANSWER_TIMEOUT_S = 60


class Driver:
    """One adapter process; requests go in, answers are read line by line."""

    def __init__(self, spec, paths=(BACKENDS,), env=None, cwd=None):
        self.stderr = tempfile.TemporaryFile()
        cmd = [sys.executable, ADAPTER]
        for p in paths:
            cmd += ["--path", p]
        cmd.append(spec)
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, env=full_env, cwd=cwd)
        self.next_id = 1
        self.buf = b""

    def send_raw(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def read_line(self):
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no answer within %d s; stderr:\n%s"
                                     % (ANSWER_TIMEOUT_S, self.stderr_text()))
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                if not chunk:
                    raise AssertionError("adapter closed stdout; stderr:\n" + self.stderr_text())
                self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line

    def answer(self):
        line = self.read_line()
        try:
            return json.loads(line)
        except ValueError:
            raise AssertionError("stdout carried a non-JSON line %r; stderr:\n%s"
                                 % (line, self.stderr_text()))

    def call(self, op, **fields):
        rid = self.next_id
        self.next_id += 1
        req = dict(fields, id=rid, op=op)
        self.send_raw((json.dumps(req) + "\n").encode("utf-8"))
        ans = self.answer()
        assert ans.get("id") == rid, "answer %r does not echo id %d" % (ans, rid)
        return ans

    def ok(self, op, **fields):
        ans = self.call(op, **fields)
        assert ans.get("ok") is True, "%s failed: %r; stderr:\n%s" % (op, ans, self.stderr_text())
        return ans["result"]

    def stderr_text(self):
        self.stderr.seek(0)
        return self.stderr.read().decode("utf-8", "replace")

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        if self.proc.poll() is None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.stderr.close()


class AdapterCase(unittest.TestCase):
    spec = "lookalike:make_echo"

    def setUp(self):
        self.d = Driver(self.spec)
        self.addCleanup(self.d.close)


class Framing(AdapterCase):
    def test_hello_names_the_backend_and_serves_the_backend_surface(self):
        r = self.d.ok("hello", protocol=1)
        self.assertEqual(r["protocol"], 1)
        self.assertEqual(r["name"], "echo-lookalike")
        self.assertIn("langflow_backend.py", r["driver"])
        self.assertEqual(r["surfaces"], ["backend"])

    def test_hello_refuses_another_protocol_version(self):
        ans = self.d.call("hello", protocol=2)
        self.assertEqual(ans["error"]["type"], "ProtocolError")
        self.assertIn("protocol 2", ans["error"]["message"])
        self.assertEqual(self.d.ok("hello", protocol=1)["protocol"], 1)

    def test_bad_lines_get_protocol_errors_and_the_adapter_keeps_serving(self):
        cases = [
            (b"this is not json\n", None),
            (b"[1,2]\n", None),
            (b'{"op":"hello"}\n', None),
            (b'{"id":"7","op":"hello"}\n', None),
            (b'{"id":7}\n', 7),
            (b'{"id":8,"op":"teleport"}\n', 8),
            (b'{"id":9,"op":"run"}\n', 9),
            (b'{"id":10,"op":"run","code":"echo:x","env":[1]}\n', 10),
            (b'{"id":11,"op":"component_run","code":"x"}\n', 11),
            (b'\xff\xfe{"id":12}\n', None),
            (b'{"id":13,"op":"hello","protocol":1} trailing\n', None),
            (b'{"id":1.5,"op":"hello","protocol":1}\n', None),
            (b'{"id":9007199254740992,"op":"hello","protocol":1}\n', None),  # past 2^53 - 1
        ]
        for raw, rid in cases:
            self.d.send_raw(raw)
            ans = self.d.answer()
            self.assertEqual(ans["ok"], False, raw)
            self.assertEqual(ans["error"]["type"], "ProtocolError", raw)
            self.assertEqual(ans["id"], rid, raw)
            self.assertTrue(ans["error"]["message"], raw)
        self.d.send_raw(b"\n   \n")  # blank lines are ignored, not answered
        self.assertEqual(self.d.ok("run", code="echo:still here")["stdout"], "still here")

    def test_an_overlong_line_is_refused_and_skipped(self):
        self.d.send_raw(b"x" * (16 * 1024 * 1024 + 10) + b"\n")
        ans = self.d.answer()
        self.assertEqual((ans["id"], ans["error"]["type"]), (None, "ProtocolError"))
        self.assertEqual(self.d.ok("run", code="echo:next")["stdout"], "next")

    def test_answers_come_in_request_order_when_pipelined(self):
        reqs = b"".join(json.dumps({"id": i, "op": "run", "code": "echo:%d" % i}).encode() + b"\n"
                        for i in range(1, 21))
        self.d.send_raw(reqs)
        for i in range(1, 21):
            ans = self.d.answer()
            self.assertEqual((ans["id"], ans["result"]["stdout"]), (i, str(i)))

    def test_exit_answers_then_ends_the_process_with_status_0(self):
        self.assertEqual(self.d.ok("exit"), {})
        self.assertEqual(self.d.proc.wait(timeout=10), 0)

    def test_eof_ends_the_process_with_status_0(self):
        self.d.proc.stdin.close()
        self.assertEqual(self.d.proc.wait(timeout=10), 0)


class Reading(AdapterCase):
    def test_missing_capability_attributes_take_langflow_defaults(self):
        self.assertEqual(self.d.ok("capabilities"), {
            "isolation": "hardware-virtualized", "supports_deny_all_egress": False,
            "supports_domain_allowlist": False, "max_timeout_seconds": None})

    def test_results_are_read_by_attribute_name(self):
        self.assertEqual(self.d.ok("run", code="echo:hi\n", env=None),
                         {"stdout": "hi\n", "stderr": "", "exit_code": 0, "execution_time_ms": 7})
        # A plain object without execution_time_ms: reported as null.
        self.assertEqual(self.d.ok("run", code="env:", env={"B": "2", "A": "1"}),
                         {"stdout": "A=1|B=2", "stderr": "", "exit_code": 0,
                          "execution_time_ms": None})
        self.assertEqual(self.d.ok("run", code="exit:-1")["exit_code"], -1)
        self.assertEqual(self.d.ok("run", code="exit:137")["exit_code"], 137)
        self.assertEqual(self.d.ok("run", code="bytes:")["stdout"], "caf\u00e9 \ufffd")

    def test_a_result_without_a_required_attribute_is_an_error_not_a_guess(self):
        ans = self.d.call("run", code="noattr:")
        self.assertFalse(ans["ok"])
        self.assertEqual(ans["error"]["type"], "TypeError")
        self.assertIn("'stderr'", ans["error"]["message"])

    def test_shutdown_twice_answers_twice(self):
        self.assertEqual(self.d.ok("shutdown"), {})
        self.assertEqual(self.d.ok("shutdown"), {})


class DictCapabilities(AdapterCase):
    spec = "lookalike:ready_made"  # not callable: used as the backend itself

    def test_mapping_capabilities_are_read_by_key_with_defaults(self):
        self.assertEqual(self.d.ok("hello")["name"], "dict-caps")
        self.assertEqual(self.d.ok("capabilities"), {
            "isolation": "container", "supports_deny_all_egress": True,
            "supports_domain_allowlist": False, "max_timeout_seconds": 120})


class NothingDeclared(AdapterCase):
    spec = "lookalike:Factory.create"

    def test_dotted_factories_work(self):
        self.assertEqual(self.d.ok("hello")["name"], "echo-lookalike")


class Classification(AdapterCase):
    def test_errors_are_classified_by_class_name_along_the_mro(self):
        cases = [
            ("unavailable:x", "SandboxUnavailableError", "refused: x"),
            ("execution:y", "SandboxExecutionError", "crashed: y"),
            ("value:z", "ValueError", "odd: z"),
            ("sysexit:", "SystemExit", "3"),
        ]
        for code, etype, message in cases:
            ans = self.d.call("run", code=code)
            self.assertEqual(ans["ok"], False, code)
            self.assertEqual(ans["error"], {"type": etype, "message": message}, code)
        # The adapter survived every one of them.
        self.assertEqual(self.d.ok("run", code="echo:alive")["stdout"], "alive")
        self.assertIn("TenantGone", self.d.stderr_text())  # traceback kept as evidence


class Hygiene(AdapterCase):
    def test_prints_fd1_writes_and_subprocess_output_go_to_stderr(self):
        self.assertEqual(self.d.ok("hello")["name"], "echo-lookalike")
        self.assertEqual(self.d.ok("run", code="noisy:")["stdout"], "quiet")
        self.assertEqual(self.d.ok("exit"), {})
        self.assertEqual(self.d.proc.wait(timeout=10), 0)
        rest = self.d.proc.stdout.read()
        self.assertEqual(rest, b"", "stdout carried extra bytes")
        err = self.d.stderr_text()
        for noise in ("IMPORT-NOISE", "PRINT-NOISE", "FD1-NOISE", "SUBPROCESS-NOISE"):
            self.assertIn(noise, err)


class LoadFailure(unittest.TestCase):
    def test_an_unloadable_backend_answers_every_request_with_the_reason(self):
        d = Driver("no_such_module_here:factory")
        self.addCleanup(d.close)
        ans = d.call("hello", protocol=1)
        self.assertFalse(ans["ok"])
        self.assertEqual(ans["error"]["type"], "ModuleNotFoundError")
        self.assertIn("no_such_module_here:factory", ans["error"]["message"])
        self.assertFalse(d.call("run", code="x")["ok"])
        self.assertEqual(d.ok("exit"), {})

    def test_a_spec_without_a_factory_is_refused(self):
        d = Driver("lookalike")
        self.addCleanup(d.close)
        ans = d.call("hello")
        self.assertEqual(ans["error"]["type"], "ValueError")
        self.assertIn("MODULE:FACTORY", ans["error"]["message"])

    def test_a_file_path_works_as_the_module(self):
        d = Driver(os.path.join(BACKENDS, "lookalike.py") + ":make_echo", paths=())
        self.addCleanup(d.close)
        self.assertEqual(d.ok("hello")["name"], "echo-lookalike")

    def test_the_current_directory_is_on_the_path(self):
        d = Driver("lookalike:make_echo", paths=(), cwd=BACKENDS)
        self.addCleanup(d.close)
        self.assertEqual(d.ok("hello")["name"], "echo-lookalike")


class Fork(AdapterCase):
    def test_fork_check_child_resets_then_runs_and_reports(self):
        parent = self.d.ok("run", code="pid:")["stdout"]
        r = self.d.ok("fork_check", code="pid:")
        self.assertTrue(r["child"]["ok"], r)
        child_pid = r["child_pid"]
        self.assertNotEqual(child_pid, self.d.proc.pid)
        self.assertEqual(r["child"]["result"]["stdout"],
                         "pid=%d reset=%d creator=%d" % (child_pid, child_pid, self.d.proc.pid))
        self.assertTrue(parent.startswith("pid=%d reset=None" % self.d.proc.pid))
        # The parent is unaffected and keeps serving.
        self.assertEqual(self.d.ok("run", code="pid:")["stdout"], parent)

    def test_fork_check_reports_a_child_error_as_an_outcome(self):
        r = self.d.ok("fork_check", code="unavailable:in child")
        self.assertEqual(r["child"], {"ok": False, "error": {
            "type": "SandboxUnavailableError", "message": "refused: in child"}})


class Concurrency(AdapterCase):
    def test_run_concurrent_runs_every_code_at_the_same_time(self):
        # Each run waits on a barrier of 6: only a truly concurrent adapter
        # gets six successes (a sequential one breaks the barrier).
        r = self.d.ok("run_concurrent", runs=[{"code": "together:6", "env": None}] * 6)
        self.assertEqual(len(r["results"]), 6)
        self.assertTrue(all(o["ok"] for o in r["results"]), r)
        idents = {o["result"]["stdout"] for o in r["results"]}
        self.assertEqual(len(idents), 6, "runs shared a thread: %r" % idents)

    def test_run_concurrent_keeps_outcomes_in_request_order(self):
        runs = [{"code": "echo:%d" % i} for i in range(5)] + [{"code": "execution:boom"}]
        r = self.d.ok("run_concurrent", runs=runs)
        self.assertEqual([o["result"]["stdout"] for o in r["results"][:5]],
                         ["0", "1", "2", "3", "4"])
        self.assertEqual(r["results"][5]["error"]["type"], "SandboxExecutionError")

    def test_run_concurrent_validates_its_runs(self):
        for runs in ([], [{"code": 1}], "x", [{"code": "echo:"}] * 33):
            ans = self.d.call("run_concurrent", runs=runs)
            self.assertEqual(ans["error"]["type"], "ProtocolError", runs)


if __name__ == "__main__":
    unittest.main()
