"""Component classes for the component adapter's tests: no control plane,
each returns a fixed Data the way the spec's appendix describes (or breaks
it on purpose), built on whatever `lfx` the adapter put on sys.path."""

import base64

from lfx.custom.custom_component.component import Component
from lfx.inputs.inputs import BoolInput, DropdownInput, IntInput, MultilineInput, StrInput
from lfx.schema.data import Data
from lfx.schema.dataframe import DataFrame
from lfx.utils.sandbox.base import SandboxUnavailableError

BIN = bytes(range(256))


class _Node(Component):
    inputs = [
        MultilineInput(name="python_code", value=""),
        StrInput(name="command", value=""),
        DropdownInput(name="session_mode", options=["off", "flow"], value="off"),
        BoolInput(name="collect_artifacts", value=False),
        BoolInput(name="allow_network", value=False),
        IntInput(name="timeout_seconds", value=60),
    ]


class ExitsTwo(_Node):
    """A failing user program: a result with exit_code 2 and an error text."""

    def run_sandbox(self):
        return Data(data={"result": "partial", "stderr": "boom", "exit_code": 2, "sandbox_id": "sb-1",
                          "guest_name": "lf-0123456789abcdef012", "reused_guest": False,
                          "artifact_count": 0, "error": "boom"})


class ErrorWithoutExit(_Node):
    """An `error` and no exit code: an error answer, typed by its prefix."""

    def run_sandbox(self):
        return Data(data={"result": "", "stderr": "", "exit_code": None,
                          "error": "SandboxUnavailableError: no key"})


class Refuses(_Node):
    """An exception out of run_sandbox(): an error answer."""

    def run_sandbox(self):
        raise SandboxUnavailableError("allowed domains set")


class DataRows(_Node):
    """Return Files as the published node gives them: Data rows, text or base64."""

    def run_sandbox(self):
        return Data(data={"result": "wrote", "stderr": "", "exit_code": 0, "guest_name": "lf-x", "artifact_count": 2})

    def collected_files(self):
        return DataFrame(data=[
            Data(data={"path": "a.txt", "text": "hello artifacts\n", "size": 16}),
            Data(data={"path": "sub/b.bin", "base64": base64.b64encode(BIN).decode(), "size": 256}),
        ])
