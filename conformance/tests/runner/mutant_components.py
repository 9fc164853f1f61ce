"""Mutants of the example component (conformance/adapters/examples/
createos_component.py), each breaking one promise of the component surface,
for `sbx-conform --python-component` to catch (conformance/tests/
CMakeLists.txt pairs each with the check that must fail)."""

import os
import sys
import urllib.error
import urllib.request

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


class RaisesOnNonZeroExit(base.CreateOSSandboxComponent):
    """Raises when the user's code exits non-zero instead of returning the
    exit code in its Data (COMP-001). A defect by the spec: "A failure of the
    user's code is a result, not an error", and the appendix: a non-zero exit
    is a result, only a refusal or a control-plane failure raises."""

    def run_sandbox(self):
        data = super().run_sandbox()
        if data.data.get("exit_code") not in (0, None):
            raise RuntimeError(data.data.get("error") or "Exited with code %s" % data.data["exit_code"])
        return data


class _ResumeWants200:
    """The example client, except that a resume must be answered 200."""

    def __init__(self, client):
        self._client = client

    def __getattr__(self, name):
        return getattr(self._client, name)

    def request(self, method, path, what, body=None, raw=None, timeout=30):
        if method != "POST" or not path.endswith("/resume"):
            return self._client.request(method, path, what, body=body, raw=raw, timeout=timeout)
        req = urllib.request.Request(self._client.base_url + path, data=b"", method="POST",
                                     headers={"X-Api-Key": self._client.api_key})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                status = resp.status
        except urllib.error.HTTPError as e:
            status = e.code
        if status != 200:
            raise base.SandboxExecutionError("%s: POST %s answered %d, expected 200" % (what, path, status))
        return None


class ResumeAccepts200Only(base.CreateOSSandboxComponent):
    """Takes only a 200 as the answer to resume, as the published plugin
    0.2.0 does; the documented answer is 202 `resuming` (COMP-003)."""

    @staticmethod
    def _find_reuse_guest(client, name, egress, http_timeout):
        return base.CreateOSSandboxComponent._find_reuse_guest(_ResumeWants200(client), name, egress, http_timeout)
