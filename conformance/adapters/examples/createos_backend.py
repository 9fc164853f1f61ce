"""An example Langflow sandbox backend in pure Python (standard library only)
that does what the CreateOS integration (langflow-sandbox-createos 0.2) does
on its backend surface, talking to the control plane with urllib.

Run it under the conformance suite through the adapter:

    sbx-conform --python-backend \
        conformance/adapters/examples/createos_backend.py:create_backend

It shows that the adapter works end to end, and what a backend author must
get right (see backend-conformance.md, "Facts: the CreateOS integration"):
refusals before anything is created, one whoami preflight per process, the
shape rule, one guest per run deleted in a finally, no retries, the error
mapping (429/5xx -> SandboxExecutionError, other failures ->
SandboxUnavailableError), thread safety and reset_after_fork.

It does not import Langflow: Capabilities, SandboxResult and the two error
classes below are look-alikes that the adapter reads by attribute and class
name. Never falls back to running code locally.
"""

import dataclasses
import json
import os
import secrets
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

DEFAULT_BASE_URL = "https://api.sb.createos.sh"
TRUTHY = ("1", "true", "yes", "on", "y", "t")
FALSY = ("0", "false", "no", "off", "n", "f")
MIN_MEMORY_MIB = 4096
HTTP_SLACK_S = 3
# The service keeps link-local reachable, so "network off" is a deny rule for
# a range nothing routes to, not an empty list (which would mean "open").
EGRESS_OFF = ["240.0.0.0/4"]
EGRESS_ON = ["*"]


class SandboxExecutionError(Exception):
    """The sandbox infrastructure failed (look-alike of lfx's class)."""


class SandboxUnavailableError(SandboxExecutionError):
    """Configured but unusable: fail closed (look-alike of lfx's class)."""


@dataclasses.dataclass(frozen=True)
class Capabilities:
    isolation: str = "none"
    supports_deny_all_egress: bool = False
    supports_domain_allowlist: bool = False
    max_timeout_seconds: object = None


@dataclasses.dataclass
class SandboxResult:
    stdout: str
    stderr: str
    exit_code: int
    execution_time_ms: object = None


@dataclasses.dataclass(frozen=True)
class Settings:
    timeout_s: int
    memory_mb: int
    allow_network: bool
    allowed_domains: tuple
    accept_egress_exceptions: bool


def _env(name):
    return os.environ.get(name)


def _parse_bool(name, default):
    raw = _env(name)
    if raw is None or raw.strip() == "":
        return default
    v = raw.strip().lower()
    if v in TRUTHY:
        return True
    if v in FALSY:
        return False
    raise SandboxUnavailableError("%s=%r is not a boolean (use true or false)" % (name, raw))


def _parse_int(name, default, low, high):
    raw = _env(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        v = int(raw.strip())
    except ValueError:
        v = None
    if v is None or v < low or (high is not None and v > high):
        bound = "from %d to %d" % (low, high) if high is not None else "of at least %d" % low
        raise SandboxUnavailableError("%s=%r: must be an integer %s" % (name, raw, bound))
    return v


def read_settings():
    """LANGFLOW_SANDBOX_* as Langflow parses them; a bad value is a refusal
    that names the variable."""
    domains = tuple(d.strip() for d in (_env("LANGFLOW_SANDBOX_ALLOWED_DOMAINS") or "").split(",")
                    if d.strip())
    accept = (_env("LANGFLOW_SANDBOX_CREATEOS_ACCEPT_EGRESS_EXCEPTIONS") or "").strip().lower()
    return Settings(
        timeout_s=_parse_int("LANGFLOW_SANDBOX_TIMEOUT_SECONDS", 30, 1, 300),
        memory_mb=_parse_int("LANGFLOW_SANDBOX_MEMORY_MB", 192, 128, None),
        allow_network=_parse_bool("LANGFLOW_SANDBOX_ALLOW_NETWORK", False),
        allowed_domains=domains,
        accept_egress_exceptions=accept in TRUTHY,
    )


class _Unreachable(SandboxExecutionError):
    """No HTTP answer at all (refused, reset, timed out)."""


class ControlPlane:
    """A thin JSend client: X-Api-Key, JSON in and out, no retries."""

    def __init__(self, base_url, api_key):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key

    def request(self, method, path, what, body=None, raw=None, timeout=30):
        """Returns the JSend `data`. Raises SandboxExecutionError for 429,
        5xx and broken answers, SandboxUnavailableError for other failures."""
        headers = {"X-Api-Key": self.api_key, "Accept": "application/json"}
        data = None
        if raw is not None:
            data = raw
            headers["Content-Type"] = "application/octet-stream"
        elif body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.base_url + path, data=data, headers=headers,
                                     method=method)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                status = resp.status
                payload = resp.read()
        except urllib.error.HTTPError as e:
            detail = _error_detail(e)
            cls = SandboxExecutionError if e.code == 429 or e.code >= 500 else SandboxUnavailableError
            raise cls("%s: %s %s answered %d%s" % (what, method, path, e.code, detail)) from None
        except (urllib.error.URLError, OSError, ValueError) as e:
            reason = getattr(e, "reason", e)
            raise _Unreachable("%s: %s %s failed: %s" % (what, method, path, reason)) from None
        if status == 204 or status == 205:
            return None
        try:
            doc = json.loads(payload.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise SandboxExecutionError("%s: %s %s answered %d with a body that is not JSON"
                                        % (what, method, path, status)) from None
        if not isinstance(doc, dict) or doc.get("status") != "success" or "data" not in doc:
            raise SandboxExecutionError("%s: %s %s answered %d without a JSend success envelope"
                                        % (what, method, path, status))
        return doc["data"]


def _error_detail(e):
    try:
        doc = json.loads(e.read().decode("utf-8"))
    except Exception:
        return ""
    if isinstance(doc, dict):
        msg = doc.get("message") or doc.get("data")
        if msg:
            return ": %s" % (json.dumps(msg) if not isinstance(msg, str) else msg)
    return ""


class CreateOSBackend:
    """One per process (Langflow keeps backends as lazy process singletons).
    run() is safe from many threads: the only shared state is the preflight
    result, guarded by a lock that reset_after_fork() replaces."""

    name = "createos"

    def __init__(self):
        self._lock = threading.Lock()
        self._client = None  # set once the whoami preflight passed (once per process)
        self._shapes = None  # the shape catalogue, listed once per process
        self._closed = False

    # -- the Langflow backend surface -------------------------------------

    def capabilities(self):
        # No I/O here: Langflow calls it to decide whether to run at all.
        return Capabilities(isolation="hardware-virtualized", supports_deny_all_egress=True,
                            supports_domain_allowlist=False, max_timeout_seconds=None)

    def run(self, code, *, env=None):
        settings = read_settings()
        self._refuse_before_anything(settings)
        client, shape = self._preflight(settings)
        timeout = settings.timeout_s
        http_timeout = timeout + HTTP_SLACK_S
        name = "lf-" + secrets.token_hex(10)[:19]
        body = {
            "name": name,
            "shape": shape,
            "egress": list(EGRESS_ON if settings.allow_network else EGRESS_OFF),
            "auto_pause_after_seconds": max(60, timeout + 120),
        }
        if env:
            body["envs"] = dict(env)
        try:
            created = client.request("POST", "/v1/sandboxes", "create sandbox", body=body,
                                     timeout=http_timeout)
        except SandboxUnavailableError:
            raise
        except SandboxExecutionError:
            self._reap_lost_create(client, name, http_timeout)
            raise
        sandbox_id = created.get("id") if isinstance(created, dict) else None
        if not isinstance(sandbox_id, str) or not sandbox_id:
            raise SandboxExecutionError("create sandbox: the answer has no id")
        failure = None
        try:
            return self._execute(client, sandbox_id, code, timeout, http_timeout)
        except BaseException as e:
            failure = e
            raise
        finally:
            self._delete(client, sandbox_id, http_timeout, failure)

    def shutdown(self):
        # Guests never outlive their run, so there is nothing to reap; safe twice.
        self._closed = True

    def reset_after_fork(self):
        # The parent's lock may have been held by a thread that does not exist
        # in this child; urllib opens a connection per request, so nothing else
        # is shared.
        self._lock = threading.Lock()

    # -- steps --------------------------------------------------------------

    def _refuse_before_anything(self, s):
        if s.allowed_domains:
            raise SandboxUnavailableError(
                "LANGFLOW_SANDBOX_ALLOWED_DOMAINS is set (%s), but CreateOS does not enforce "
                "host-name egress rules; unset it or use a backend with a domain allowlist"
                % ",".join(s.allowed_domains))
        if not s.allow_network and not s.accept_egress_exceptions:
            raise SandboxUnavailableError(
                "LANGFLOW_SANDBOX_ALLOW_NETWORK is off, but CreateOS keeps 169.254.0.0/16 "
                "reachable; set LANGFLOW_SANDBOX_CREATEOS_ACCEPT_EGRESS_EXCEPTIONS=true to accept it")

    def _preflight(self, s):
        key = _env("CREATEOS_SANDBOX_API_KEY") or _env("CREATEOS_API_KEY")
        if not key or not key.strip():
            raise SandboxUnavailableError(
                "no CreateOS API key: set CREATEOS_SANDBOX_API_KEY (or CREATEOS_API_KEY)")
        base = _env("CREATEOS_SANDBOX_BASE_URL") or DEFAULT_BASE_URL
        with self._lock:
            if self._client is None:
                client = ControlPlane(base, key.strip())
                try:
                    client.request("GET", "/v1/whoami", "preflight (whoami)",
                                   timeout=s.timeout_s + HTTP_SLACK_S)
                except _Unreachable as e:
                    raise SandboxUnavailableError(
                        "CreateOS control plane at %s is unreachable: %s" % (base, e)) from None
                self._client = client
            if self._shapes is None:
                self._shapes = self._list_shapes(self._client, s)
            client, shapes = self._client, self._shapes
        return client, self._pick_shape(shapes, s)

    def _list_shapes(self, client, s):
        shapes, offset = [], 0
        while True:
            page = client.request("GET", "/v1/shapes?limit=500&offset=%d" % offset, "list shapes",
                                  timeout=s.timeout_s + HTTP_SLACK_S)
            items = page.get("data") if isinstance(page, dict) else None
            if not isinstance(items, list):
                raise SandboxExecutionError("list shapes: the answer has no list")
            shapes.extend(i for i in items if isinstance(i, dict))
            total = (page.get("pagination") or {}).get("total", len(shapes))
            offset += len(items)
            if not items or offset >= total:
                return shapes

    @staticmethod
    def _pick_shape(shapes, s):
        # A pin is refused only when a non-empty catalogue lacks it or it has
        # fewer MiB than memory_mb; the 4096 MiB floor is for the automatic
        # choice only (spec: CreateOS backend surface, the memory rule).
        pinned = (_env("CREATEOS_SANDBOX_SHAPE") or "").strip()
        if pinned:
            if not shapes:
                return pinned
            found = [x for x in shapes if x.get("id") == pinned]
            if not found:
                raise SandboxUnavailableError("CREATEOS_SANDBOX_SHAPE=%s does not exist" % pinned)
            if (found[0].get("mem_mib") or 0) < s.memory_mb:
                raise SandboxUnavailableError(
                    "CREATEOS_SANDBOX_SHAPE=%s has %s MiB, less than LANGFLOW_SANDBOX_MEMORY_MB=%d"
                    % (pinned, found[0].get("mem_mib"), s.memory_mb))
            return pinned
        if not shapes:
            return "s-2vcpu-4gb"
        need = max(s.memory_mb, MIN_MEMORY_MIB)
        fits = [x for x in shapes if isinstance(x.get("mem_mib"), int) and x["mem_mib"] >= need]
        if not fits:
            raise SandboxUnavailableError("no CreateOS shape has at least %d MiB" % need)
        best = min(fits, key=lambda x: (x["mem_mib"], x.get("vcpu") or 0, str(x.get("id"))))
        return best["id"]

    @staticmethod
    def _execute(client, sandbox_id, code, timeout, http_timeout):
        path = "/workspace/main_%s.py" % secrets.token_hex(6)
        quoted = urllib.parse.quote(path, safe="/")
        client.request("PUT", "/v1/sandboxes/%s/files?path=%s" % (sandbox_id, quoted),
                       "upload code", raw=code.encode("utf-8"), timeout=http_timeout)
        started = time.monotonic()
        data = client.request("POST", "/v1/sandboxes/%s/exec" % sandbox_id, "run code",
                              body={"cmd": "timeout",
                                    "args": ["--signal=KILL", str(timeout), "python3", path]},
                              timeout=http_timeout)
        result = data.get("result") if isinstance(data, dict) else None
        if not isinstance(result, dict) or not isinstance(result.get("exit_code"), int):
            raise SandboxExecutionError("run code: the exec answer has no result.exit_code")
        exit_code = result["exit_code"]
        elapsed = data.get("exec_ms")
        if not isinstance(elapsed, int):
            elapsed = int((time.monotonic() - started) * 1000)
        if exit_code == 124:  # timeout(1) gave up on the code (the integration's rule)
            exit_code = -1
        elif exit_code == 137 and elapsed >= timeout * 1000:
            # Deviation from the integration, on purpose: GNU timeout with
            # --signal=KILL dies of the KILL it sends and exits 137, never 124,
            # so a timed-out run would pass for a memory kill. A 137 that took
            # the whole timeout is the timeout; an early 137 stays a kill.
            exit_code = -1
        return SandboxResult(stdout=str(result.get("stdout") or ""),
                             stderr=str(result.get("stderr") or ""),
                             exit_code=exit_code, execution_time_ms=elapsed)

    @staticmethod
    def _reap_lost_create(client, name, http_timeout):
        """A create that got no answer (or a 5xx) may still have made the
        guest: find it by its unique name and delete it (best effort, once)."""
        try:
            page = client.request("GET", "/v1/sandboxes?limit=500", "find lost create",
                                  timeout=http_timeout)
            for view in (page or {}).get("data") or []:
                if isinstance(view, dict) and view.get("name") == name and view.get("id"):
                    sys.stderr.write("createos_backend: create of %s failed but %s exists; "
                                     "deleting it\n" % (name, view["id"]))
                    client.request("DELETE", "/v1/sandboxes/%s" % view["id"], "delete lost create",
                                   timeout=http_timeout)
        except SandboxExecutionError as e:
            sys.stderr.write("createos_backend: could not look for a lost create: %s\n" % e)

    @staticmethod
    def _delete(client, sandbox_id, http_timeout, failure):
        try:
            client.request("DELETE", "/v1/sandboxes/%s" % sandbox_id, "delete sandbox",
                           timeout=http_timeout)
        except SandboxExecutionError as e:
            if failure is None:
                raise  # a failed delete is reported, never hidden
            sys.stderr.write("createos_backend: %s (while handling: %s)\n" % (e, failure))


def create_backend():
    return CreateOSBackend()
