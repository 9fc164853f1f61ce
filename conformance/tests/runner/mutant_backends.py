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


# Not a mutant: the example backend reading its settings the way a backend
# inside Langflow may (lfx's _sandbox_settings() hands it the validated values
# and never raises), so a value Langflow would have rejected at start-up is
# simply used. By the spec ("Who checks settings") that is correct: REF-002
# must pass it (ctest conform_python_backend_lenient_settings).

def _lenient_int(name, default):
    raw = (base._env(name) or "").strip()
    try:
        return int(raw)
    except ValueError:
        return default


def _lenient_settings():
    domains = tuple(d.strip() for d in (base._env("LANGFLOW_SANDBOX_ALLOWED_DOMAINS") or "").split(",") if d.strip())
    accept = (base._env("LANGFLOW_SANDBOX_CREATEOS_ACCEPT_EGRESS_EXCEPTIONS") or "").strip().lower()
    network = (base._env("LANGFLOW_SANDBOX_ALLOW_NETWORK") or "").strip().lower()
    return base.Settings(timeout_s=_lenient_int("LANGFLOW_SANDBOX_TIMEOUT_SECONDS", 30),
                         memory_mb=_lenient_int("LANGFLOW_SANDBOX_MEMORY_MB", 192),
                         allow_network=network in base.TRUTHY, allowed_domains=domains,
                         accept_egress_exceptions=accept in base.TRUTHY)


def lenient_settings():
    base.read_settings = _lenient_settings  # one backend per driver process
    return base.CreateOSBackend()


def _plain_error_settings(strict=base.read_settings):
    try:
        return strict()
    except base.SandboxUnavailableError as e:
        raise ValueError(str(e)) from None


def plain_errors_on_bad_settings():
    """Not a mutant either: rejects a value Langflow would have rejected with
    a plain ValueError instead of SandboxUnavailableError. Such a value never
    reaches a backend inside Langflow, so REF-002 does not judge it."""
    base.read_settings = _plain_error_settings
    return base.CreateOSBackend()
