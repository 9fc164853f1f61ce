"""Mutants of the example component (conformance/adapters/examples/
createos_component.py), each breaking one promise of the component surface,
for `sbx-conform --python-component` to catch (conformance/tests/
CMakeLists.txt pairs each with the check that must fail)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "adapters", "examples"))

import createos_component as base  # noqa: E402


class DeletesReuseGuest(base.CreateOSSandboxComponent):
    """Deletes its guest after every run, the Guest Reuse one too (COMP-002)."""

    def _run(self):
        out = super()._run()
        if self.session_mode == "flow":
            client = base._BACKEND._client
            client.request("DELETE", "/v1/sandboxes/%s" % out["sandbox_id"], "delete sandbox")
        return out


class FilesUncapped(base.CreateOSSandboxComponent):
    """Return Files without the 256-file and 5 MiB caps (COMP-006)."""

    files_max_count = 10 ** 9
    files_max_bytes = 10 ** 12
