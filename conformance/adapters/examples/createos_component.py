"""An example Langflow component in pure Python: the "CreateOS Sandbox" node
as the spec's appendix describes it (langflow-sandbox-createos 0.2.0's
CreateOSSandboxComponent), on top of the example backend's control-plane
client (createos_backend.py, same directory).

Check it through the component adapter (lfx is not needed: the adapter
supplies a stand-in when Langflow is not installed):

    sbx-conform --python-component \\
        conformance/adapters/examples/createos_component.py:CreateOSSandboxComponent

What a component author must get right (spec, "Component surface"): Python
code or a shell command in a guest; Guest Reuse "off" deletes the guest after
every run, even a failed one; "flow" keeps one guest named lf-c- + 17 hex of
a hash of flow id, component id and egress policy, resumes it when paused,
refuses it when its egress drifted, and never deletes it; Return Files brings
back /workspace/artifacts with at most 256 files and 5 MiB, the byte cap
enforced while streaming.

What it returns follows the spec's appendix (the published component's real
behaviour): `result` and `stderr` are the guest's output trimmed; a non-zero
exit is a result, not an exception (the Data keeps `exit_code` and adds an
informational `error`: "Timed out after Ns", else the trimmed stderr, else
"Exited with code N"); only a refusal or a control-plane failure raises out
of run_sandbox(). Return Files rows are `Data(data={path, text|base64,
size})`, `path` relative to /workspace/artifacts.

Judged by the spec: raising on a non-zero exit is a defect (Langflow's facts:
"A failure of the user's code is a result, not an error"; the appendix:
"Only an exception out of run_sandbox() ... is an error"), so the mutant
`RaisesOnNonZeroExit` (conformance/tests/runner/mutant_components.py) must be
caught by COMP-001. Untrimmed output is not a defect: no check of the
catalogue judges the component's output formatting, and the trimming is a
presentation choice of the node (a backend's output must be byte-exact,
RES-001; a component's is compared with surrounding white space ignored).
"""

import base64
import hashlib
import os
import secrets
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from createos_backend import (  # noqa: E402
    EGRESS_OFF, EGRESS_ON, HTTP_SLACK_S, CreateOSBackend, SandboxExecutionError,
    SandboxUnavailableError, read_settings)
from lfx.custom.custom_component.component import Component  # noqa: E402
from lfx.inputs.inputs import BoolInput, DropdownInput, IntInput, MultilineInput, StrInput  # noqa: E402
from lfx.schema.data import Data  # noqa: E402
from lfx.schema.dataframe import DataFrame  # noqa: E402
from lfx.template.field.base import Output  # noqa: E402

FILES_MAX_COUNT = 256
FILES_MAX_BYTES = 5 * 1024 * 1024
ARTIFACTS = "/workspace/artifacts"
LIVE_FOR_REUSE = ("running", "paused", "pausing", "resuming", "starting", "creating", "pending")

# One backend object per process, as Langflow keeps it: the whoami preflight
# and the shape catalogue happen once.
_BACKEND = CreateOSBackend()


class CreateOSSandboxComponent(Component):
    display_name = "CreateOS Sandbox"
    name = "createos"
    files_max_count = FILES_MAX_COUNT
    files_max_bytes = FILES_MAX_BYTES
    inputs = [
        MultilineInput(name="python_code", display_name="Python code", value=""),
        StrInput(name="command", display_name="Shell command", value=""),
        DropdownInput(name="session_mode", display_name="Guest Reuse", options=["off", "flow"], value="off"),
        BoolInput(name="collect_artifacts", display_name="Return Files", value=False),
        BoolInput(name="allow_network", display_name="Allow network", value=False),
        IntInput(name="timeout_seconds", display_name="Timeout (s)", value=30),
        StrInput(name="shape", display_name="Shape", value=""),
    ]
    outputs = [
        Output(name="results", method="run_sandbox"),
        Output(name="files", method="collected_files"),
    ]

    # -- outputs ---------------------------------------------------------

    def run_sandbox(self):
        fields = {"result": "", "stderr": "", "exit_code": None, "sandbox_id": None,
                  "reused_guest": False, "artifact_count": 0}
        self._files = []
        fields.update(self._run())  # a refusal or a control-plane failure raises
        code = fields["exit_code"]
        if code == -1:
            fields["error"] = "Timed out after %ss" % self.timeout_seconds
        elif code != 0:
            fields["error"] = fields["stderr"] or "Exited with code %s" % code
        self.status = fields.get("error") or "exit %s" % code
        return Data(data=fields)

    def collected_files(self):
        if not hasattr(self, "_files"):
            self.run_sandbox()
        return DataFrame(data=self._files)

    # -- one run -----------------------------------------------------------

    def _run(self):
        settings = read_settings()
        net = bool(self.allow_network)
        if not net and not settings.accept_egress_exceptions:
            raise SandboxUnavailableError(
                "network off, but CreateOS keeps 169.254.0.0/16 reachable; set "
                "LANGFLOW_SANDBOX_CREATEOS_ACCEPT_EGRESS_EXCEPTIONS=true to accept it")
        client, shape = _BACKEND._preflight(settings)
        timeout = int(self.timeout_seconds or settings.timeout_s)
        http_timeout = timeout + HTTP_SLACK_S
        egress = list(EGRESS_ON if net else EGRESS_OFF)
        reuse = self.session_mode == "flow"
        sandbox_id, reused = None, False
        if reuse:
            name = self._reuse_name(egress)
            sandbox_id = self._find_reuse_guest(client, name, egress, http_timeout)
            reused = sandbox_id is not None
        else:
            name = "lf-" + secrets.token_hex(10)[:19]
        if sandbox_id is None:
            body = {"name": name, "shape": self.shape or shape, "egress": egress,
                    "auto_pause_after_seconds": max(60, timeout + 120)}
            created = client.request("POST", "/v1/sandboxes", "create sandbox", body=body, timeout=http_timeout)
            sandbox_id = created.get("id") if isinstance(created, dict) else None
            if not sandbox_id:
                raise SandboxExecutionError("create sandbox: the answer has no id")
        failure = None
        try:
            out = self._execute(client, sandbox_id, timeout, http_timeout)
            if self.collect_artifacts:
                self._files = self._collect(client, sandbox_id, http_timeout)
            out.update(sandbox_id=sandbox_id, reused_guest=reused, artifact_count=len(self._files))
            return out
        except BaseException as e:
            failure = e
            raise
        finally:
            if not reuse:  # Guest Reuse off: delete in a finally; a reuse guest never
                CreateOSBackend._delete(client, sandbox_id, http_timeout, failure)

    def _reuse_name(self, egress):
        flow = str(getattr(self.graph, "flow_id", "") or "")
        key = "%s\x1f%s\x1f%s" % (flow, self._id, egress[0])
        return "lf-c-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:17]

    @staticmethod
    def _find_reuse_guest(client, name, egress, http_timeout):
        page = client.request("GET", "/v1/sandboxes?limit=500", "find reuse guest", timeout=http_timeout)
        view = next((v for v in (page or {}).get("data") or []
                     if isinstance(v, dict) and v.get("name") == name and v.get("status") in LIVE_FOR_REUSE),
                    None)
        if view is None:
            return None
        have = view.get("egress") or []
        if egress == EGRESS_ON:
            same = have in ([], ["*"])
        else:
            same = have == egress
        if not same:
            raise SandboxUnavailableError(
                "Guest Reuse: guest %s (%s) no longer has the egress policy %s it was created with; "
                "delete it to start afresh" % (name, view.get("id"), egress))
        sandbox_id = view["id"]
        for _ in range(200):
            status = view.get("status")
            if status == "running":
                return sandbox_id
            if status == "paused":
                client.request("POST", "/v1/sandboxes/%s/resume" % sandbox_id, "resume sandbox",
                               timeout=http_timeout)
            time.sleep(0.05)
            view = client.request("GET", "/v1/sandboxes/%s" % sandbox_id, "get sandbox", timeout=http_timeout)
            if view.get("status") in ("destroyed", "destroying", "failed", "error"):
                raise SandboxExecutionError("Guest Reuse: guest %s went to state %s"
                                            % (sandbox_id, view.get("status")))
        raise SandboxExecutionError("Guest Reuse: guest %s did not become running" % sandbox_id)

    def _execute(self, client, sandbox_id, timeout, http_timeout):
        if self.command:
            args = ["--signal=KILL", str(timeout), "sh", "-c", self.command]
        else:
            path = "/workspace/main_%s.py" % secrets.token_hex(6)
            client.request("PUT", "/v1/sandboxes/%s/files?path=%s" % (sandbox_id, urllib.parse.quote(path, safe="/")),
                           "upload code", raw=(self.python_code or "").encode("utf-8"), timeout=http_timeout)
            args = ["--signal=KILL", str(timeout), "python3", path]
        started = time.monotonic()
        data = client.request("POST", "/v1/sandboxes/%s/exec" % sandbox_id, "run code",
                              body={"cmd": "timeout", "args": args}, timeout=http_timeout)
        result = data.get("result") if isinstance(data, dict) else None
        if not isinstance(result, dict) or not isinstance(result.get("exit_code"), int):
            raise SandboxExecutionError("run code: the exec answer has no result.exit_code")
        code = result["exit_code"]
        if code == 124 or (code == 137 and time.monotonic() - started >= timeout):
            code = -1  # the run hit its timeout
        return {"result": str(result.get("stdout") or "").strip(), "stderr": str(result.get("stderr") or "").strip(),
                "exit_code": code}

    def _collect(self, client, sandbox_id, http_timeout):
        data = client.request("POST", "/v1/sandboxes/%s/exec" % sandbox_id, "list artifacts",
                              body={"cmd": "find", "args": [ARTIFACTS, "-type", "f", "-printf", "%P\\n"]},
                              timeout=http_timeout)
        result = data.get("result") if isinstance(data, dict) else {}
        if result.get("exit_code") != 0:
            return []  # no artifacts directory
        names = [n for n in str(result.get("stdout") or "").split("\n") if n]
        if len(names) > self.files_max_count:
            raise SandboxExecutionError("Return Files: more than %d files in %s" % (self.files_max_count, ARTIFACTS))
        rows, total = [], 0
        for rel in names:
            url = "%s/v1/sandboxes/%s/files?path=%s" % (
                client.base_url, sandbox_id, urllib.parse.quote("%s/%s" % (ARTIFACTS, rel), safe="/"))
            req = urllib.request.Request(url, headers={"X-Api-Key": client.api_key})
            chunks, size = [], 0
            try:
                with urllib.request.urlopen(req, timeout=http_timeout) as resp:
                    while True:
                        chunk = resp.read(65536)
                        if not chunk:
                            break
                        size += len(chunk)
                        total += len(chunk)
                        if total > self.files_max_bytes:  # enforced while streaming
                            raise SandboxExecutionError("Return Files: %s holds more than %d bytes"
                                                        % (ARTIFACTS, self.files_max_bytes))
                        chunks.append(chunk)
            except (urllib.error.URLError, OSError) as e:
                raise SandboxExecutionError("download artifact %s: %s" % (rel, e)) from None
            rows.append(Data(data=self._file_row(rel, b"".join(chunks))))
        return rows

    @staticmethod
    def _file_row(rel, content):
        """One Return Files row as the appendix has it: text when UTF-8, else base64."""
        try:
            return {"path": rel, "text": content.decode("utf-8"), "size": len(content)}
        except UnicodeDecodeError:
            return {"path": rel, "base64": base64.b64encode(content).decode("ascii"), "size": len(content)}
