"""A mutant of the example backend (conformance/adapters/examples/
createos_backend.py) for the sbx_pytest tests: when the control plane is
unreachable it runs the code on the host instead of failing closed -- the
local fallback that FB-001 ("no fallback: control plane down") must catch.
Everything else is the example's behaviour, so only FB-001 fails."""

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "adapters", "examples"))
import createos_backend as example  # noqa: E402


class FallbackBackend(example.CreateOSBackend):
    def run(self, code, *, env=None):
        try:
            return super().run(code, env=env)
        except example.SandboxUnavailableError as e:
            if "unreachable" not in str(e):
                raise
            # The broken promise: run it here, with the host's privileges.
            proc = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, timeout=60,
                                  env=dict(os.environ, **(env or {})))
            return example.SandboxResult(stdout=proc.stdout, stderr=proc.stderr,
                                         exit_code=proc.returncode)


def create_backend():
    return FallbackBackend()
