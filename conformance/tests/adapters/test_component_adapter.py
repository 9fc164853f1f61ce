"""The component adapter (conformance/adapters/sbx_harness/langflow_component.py) reads a
component's Data as the spec's appendix has it: a non-zero exit is a result
(the `error` text only informs), an exception or an `error` without an exit
code is an error answer, and Return Files rows may be `Data` objects with
`text` or `base64` (the lfx stand-in's DataFrame takes them). Each test runs
the real adapter as a subprocess, with the stand-in lfx.

Run: python3 -m unittest discover -s conformance/tests/adapters
"""

import hashlib
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CONFORM = os.environ.get("SBX_CONFORM_DIR") or os.path.dirname(os.path.dirname(HERE))
ADAPTER = os.path.join(CONFORM, "adapters", "sbx_harness", "langflow_component.py")
NODES = os.path.join(HERE, "components", "fake_nodes.py")


def component_run(cls, **fields):
    """One component_run through a fresh adapter; returns its answer."""
    req = {"id": 1, "op": "component_run", "mode": "python", "code": "print(1)", "reuse": "off",
           "flow_id": "f", "component_id": "c", "allow_network": False, "return_files": False}
    req.update(fields)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CREATEOS_", "LANGFLOW_"))}
    proc = subprocess.run([sys.executable, ADAPTER, "%s:%s" % (NODES, cls)], input=json.dumps(req) + "\n",
                          capture_output=True, text=True, timeout=60, env=env)
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    if len(lines) != 1:
        raise AssertionError("expected one answer, got %r; stderr:\n%s" % (lines, proc.stderr))
    return lines[0], proc.stderr


class ComponentAdapterTest(unittest.TestCase):
    def test_a_non_zero_exit_is_a_result_not_an_error(self):
        ans, err = component_run("ExitsTwo")
        self.assertTrue(ans["ok"], ans)
        self.assertEqual(ans["result"]["exit_code"], 2)
        self.assertEqual(ans["result"]["stdout"], "partial")
        self.assertEqual(ans["result"]["stderr"], "boom")
        self.assertIn("a result, not an error", err)

    def test_an_error_without_an_exit_code_is_an_error_answer(self):
        ans, _ = component_run("ErrorWithoutExit")
        self.assertFalse(ans["ok"], ans)
        self.assertEqual(ans["error"], {"type": "SandboxUnavailableError", "message": "no key"})

    def test_an_exception_is_an_error_answer(self):
        ans, _ = component_run("Refuses")
        self.assertFalse(ans["ok"], ans)
        self.assertEqual(ans["error"]["type"], "SandboxUnavailableError")

    def test_data_rows_with_text_or_base64_become_files(self):
        ans, _ = component_run("DataRows", return_files=True)
        self.assertTrue(ans["ok"], ans)
        files = {f["path"]: f for f in ans["result"]["files"]}
        self.assertEqual(set(files), {"artifacts/a.txt", "artifacts/sub/b.bin"})
        self.assertEqual(files["artifacts/a.txt"]["sha256"], hashlib.sha256(b"hello artifacts\n").hexdigest())
        self.assertEqual(files["artifacts/sub/b.bin"]["sha256"], hashlib.sha256(bytes(range(256))).hexdigest())
        self.assertEqual(files["artifacts/sub/b.bin"]["size"], 256)


if __name__ == "__main__":
    unittest.main()
