"""Mutants of the example backend (conformance/adapters/examples/
createos_backend.py), each breaking one promise of the backend surface, for
`sbx-conform --python-backend` and `fuzz/backend` (SBX_FUZZ_PYTHON_BACKEND)
to catch by the check or invariant its bug is about (conformance/tests/
CMakeLists.txt pairs each with its check; fuzz/README.md times the fuzzer)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "adapters", "examples"))

import createos_backend as base  # noqa: E402


class _Wrapped:
    """The example's control-plane client with one request changed."""

    def __init__(self, client, hook):
        self._client = client
        self._hook = hook

    def __getattr__(self, name):
        return getattr(self._client, name)

    def request(self, method, path, what, **kw):
        return self._hook(self._client, method, path, what, **kw)


def _retry_create_once(client, method, path, what, **kw):
    try:
        return client.request(method, path, what, **kw)
    except base.SandboxUnavailableError:
        raise
    except base.SandboxExecutionError:
        if method != "POST" or path != "/v1/sandboxes":
            raise
        sys.stderr.write("mutant: create failed, trying once more\n")
        return client.request(method, path, what, **kw)  # the bug: the spec says no retries


class RetriesCreateOnce(base.CreateOSBackend):
    """Retries a create that failed with 429/5xx or no answer, once
    (CREATEOS-004; fuzzer invariant 4 results: at most one create per run)."""

    def _preflight(self, s):
        client, shape = super()._preflight(s)
        return _Wrapped(client, _retry_create_once), shape


class LeaksGuestOnExecTransportError(base.CreateOSBackend):
    """Skips the DELETE when the exec request got no answer (reset, closed,
    hung): the guest stays running (CLN-001; fuzzer invariant 3 cleanup)."""

    @staticmethod
    def _delete(client, sandbox_id, http_timeout, failure):
        if isinstance(failure, base._Unreachable) and str(failure).startswith("run code"):
            sys.stderr.write("mutant: exec got no answer; not deleting\n")
            return  # the bug: delete in a finally, also when the run failed
        base.CreateOSBackend._delete(client, sandbox_id, http_timeout, failure)


def retries_create_once():
    return RetriesCreateOnce()


def leaks_guest_on_exec_transport_error():
    return LeaksGuestOnExecTransportError()
