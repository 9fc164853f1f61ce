"""A CreateOS-style Langflow sandbox backend written for the backend fuzzer's
own tests (issue 35), standard library only, and five deliberately broken
variants of it.

The correct one is the shape the published plugin has and the fuzzer once
failed: the whoami preflight runs once per process behind a plain flag with
no lock, and so does the shape catalogue, so runs that start together may
each make those calls before one has come back (spec: "concurrent first runs
may each call it before one has succeeded"); none is made after one
succeeded. Everything else follows the spec's CreateOS backend surface:
refusals before anything is created, one guest per run with the egress and
auto-pause the spec names, delete in a finally (a failed delete raised, or
logged naming the guest when the run already failed), no retries, 429/5xx
-> SandboxExecutionError, other failures -> SandboxUnavailableError, output
returned byte for byte, a run killed at its timeout -> -1.

Factories (sbx-conform --python-backend / SBX_FUZZ_PYTHON_BACKEND
fuzz/backend/py/unlocked_backend.py:FACTORY):
  create_backend          the correct backend
  preflight_per_run       forgets the flag: whoami on every run
  leak_guest              deletes the guest only when the code exited 0
  local_fallback          runs the code with the host's python3 when the
                          control plane cannot be reached
  retry_create            sends the create again after a 5xx or no answer
  strip_stdout            returns stdout with trailing white space stripped
"""

import json
import os
import secrets
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

TRUE_WORDS = {"1", "true", "yes", "on", "y", "t"}
FALSE_WORDS = {"0", "false", "no", "off", "n", "f"}
SLACK_S = 3


class SandboxExecutionError(Exception):
    pass


class SandboxUnavailableError(SandboxExecutionError):
    pass


class Capabilities:
    isolation = "hardware-virtualized"
    supports_deny_all_egress = True
    supports_domain_allowlist = False
    max_timeout_seconds = None


class SandboxResult:
    def __init__(self, stdout, stderr, exit_code, execution_time_ms):
        self.stdout = stdout
        self.stderr = stderr
        self.exit_code = exit_code
        self.execution_time_ms = execution_time_ms


class NoAnswer(SandboxExecutionError):
    """The control plane gave no HTTP answer (refused, reset, timed out)."""


def setting(name):
    value = os.environ.get(name)
    return None if value is None or not value.strip() else value.strip()


def int_setting(name, default, low, high):
    raw = setting(name)
    if raw is None:
        return default
    if not raw.lstrip("-").isdigit() or not low <= int(raw) <= high:
        raise SandboxUnavailableError("%s=%r is not a whole number in [%d, %d]" % (name, raw, low, high))
    return int(raw)


def bool_setting(name, default):
    raw = setting(name)
    if raw is None:
        return default
    if raw.lower() in TRUE_WORDS:
        return True
    if raw.lower() in FALSE_WORDS:
        return False
    raise SandboxUnavailableError("%s=%r is neither true nor false" % (name, raw))


def call(base, key, method, path, timeout, body=None, raw=None):
    """One control-plane request; the JSend data of a success."""
    headers = {"X-Api-Key": key, "Accept": "application/json"}
    data = raw
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    elif raw is not None:
        headers["Content-Type"] = "application/octet-stream"
    request = urllib.request.Request(base + path, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            status, payload = answer.status, answer.read()
    except urllib.error.HTTPError as e:
        kind = SandboxExecutionError if e.code == 429 or e.code >= 500 else SandboxUnavailableError
        raise kind("%s %s: HTTP %d" % (method, path, e.code)) from None
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise NoAnswer("%s %s: no answer (%s)" % (method, path, getattr(e, "reason", e))) from None
    if status in (204, 205):
        return None
    try:
        doc = json.loads(payload)
    except ValueError:
        raise SandboxExecutionError("%s %s: HTTP %d with a body that is not JSON" % (method, path, status)) from None
    if not isinstance(doc, dict) or doc.get("status") != "success" or "data" not in doc:
        raise SandboxExecutionError("%s %s: HTTP %d without a JSend success" % (method, path, status))
    return doc["data"]


class UnlockedBackend:
    name = "createos"

    def __init__(self, bug=None):
        self.bug = bug
        self.verified = False  # the whoami preflight passed: a plain flag, no lock
        self.catalogue = None  # the shape catalogue, fetched once as well

    def capabilities(self):
        return Capabilities()

    def shutdown(self):
        pass  # every guest is deleted by its own run

    def reset_after_fork(self):
        pass  # no lock to replace; urllib opens a connection per request

    def run(self, code, *, env=None):
        timeout = int_setting("LANGFLOW_SANDBOX_TIMEOUT_SECONDS", 30, 1, 300)
        memory = int_setting("LANGFLOW_SANDBOX_MEMORY_MB", 192, 128, 1 << 30)
        network = bool_setting("LANGFLOW_SANDBOX_ALLOW_NETWORK", False)
        if [d for d in (os.environ.get("LANGFLOW_SANDBOX_ALLOWED_DOMAINS") or "").split(",") if d.strip()]:
            raise SandboxUnavailableError("LANGFLOW_SANDBOX_ALLOWED_DOMAINS is set: CreateOS cannot enforce "
                                          "host-name rules")
        accept = (os.environ.get("LANGFLOW_SANDBOX_CREATEOS_ACCEPT_EGRESS_EXCEPTIONS") or "").strip().lower()
        if not network and accept not in TRUE_WORDS:
            raise SandboxUnavailableError("network off, but 169.254.0.0/16 stays reachable: set "
                                          "LANGFLOW_SANDBOX_CREATEOS_ACCEPT_EGRESS_EXCEPTIONS=true to accept")
        key = setting("CREATEOS_SANDBOX_API_KEY") or setting("CREATEOS_API_KEY")
        if key is None:
            raise SandboxUnavailableError("no API key (CREATEOS_SANDBOX_API_KEY or CREATEOS_API_KEY)")
        base = (setting("CREATEOS_SANDBOX_BASE_URL") or "https://api.sb.createos.sh").rstrip("/")
        http_t = timeout + SLACK_S
        try:
            if not self.verified:
                call(base, key, "GET", "/v1/whoami", http_t)
                if self.bug != "preflight_per_run":
                    self.verified = True
            if self.catalogue is None:
                page = call(base, key, "GET", "/v1/shapes?limit=500", http_t)
                items = page.get("data") if isinstance(page, dict) else page
                if not isinstance(items, list):
                    raise SandboxExecutionError("GET /v1/shapes: no list")
                self.catalogue = [s for s in items if isinstance(s, dict)]
        except NoAnswer as e:
            if self.bug == "local_fallback":
                return self.run_here(code, timeout)
            raise SandboxUnavailableError("the CreateOS control plane cannot be reached: %s" % e) from None
        shape = self.shape_for(memory)
        return self.in_guest(base, key, code, env, timeout, http_t, network, shape)

    def shape_for(self, memory):
        pin = setting("CREATEOS_SANDBOX_SHAPE")
        shapes = self.catalogue
        if pin is not None:
            if not shapes:
                return pin
            mine = [s for s in shapes if s.get("id") == pin]
            if not mine:
                raise SandboxUnavailableError("CREATEOS_SANDBOX_SHAPE=%s is not offered" % pin)
            if (mine[0].get("mem_mib") or 0) < memory:
                raise SandboxUnavailableError("CREATEOS_SANDBOX_SHAPE=%s has fewer than %d MiB" % (pin, memory))
            return pin
        if not shapes:
            return "s-2vcpu-4gb"
        need = max(memory, 4096)
        big = [s for s in shapes if isinstance(s.get("mem_mib"), (int, float)) and s["mem_mib"] >= need]
        if not big:
            raise SandboxUnavailableError("no shape has %d MiB" % need)
        return min(big, key=lambda s: (s["mem_mib"], s.get("vcpu") or 0))["id"]

    def in_guest(self, base, key, code, env, timeout, http_t, network, shape):
        body = {"name": "lf-" + secrets.token_hex(10)[:19], "shape": shape,
                "egress": ["*"] if network else ["240.0.0.0/4"],
                "auto_pause_after_seconds": max(60, timeout + 120)}
        if env:
            body["envs"] = dict(env)
        try:
            made = call(base, key, "POST", "/v1/sandboxes", http_t, body=body)
        except NoAnswer:
            if self.bug != "retry_create":
                raise
            made = call(base, key, "POST", "/v1/sandboxes", http_t, body=body)
        except SandboxExecutionError as e:
            if self.bug != "retry_create" or isinstance(e, SandboxUnavailableError):
                raise
            made = call(base, key, "POST", "/v1/sandboxes", http_t, body=body)
        guest = made.get("id") if isinstance(made, dict) else None
        if not isinstance(guest, str) or not guest:
            raise SandboxExecutionError("POST /v1/sandboxes: no id in the answer")
        result, failure = None, None
        try:
            result = self.execute(base, key, guest, code, timeout, http_t)
            return result
        except BaseException as e:
            failure = e
            raise
        finally:
            if not (self.bug == "leak_guest" and (result is None or result.exit_code != 0)):
                self.delete(base, key, guest, http_t, failure)

    def execute(self, base, key, guest, code, timeout, http_t):
        path = "/workspace/main_%s.py" % secrets.token_hex(6)
        call(base, key, "PUT", "/v1/sandboxes/%s/files?path=%s" % (guest, urllib.parse.quote(path, safe="/")),
             http_t, raw=code.encode())
        began = time.monotonic()
        data = call(base, key, "POST", "/v1/sandboxes/%s/exec" % guest, http_t,
                    body={"cmd": "timeout", "args": ["--signal=KILL", str(timeout), "python3", path]})
        res = data.get("result") if isinstance(data, dict) else None
        if not isinstance(res, dict) or not isinstance(res.get("exit_code"), int):
            raise SandboxExecutionError("exec: no result.exit_code in the answer")
        took = data.get("exec_ms") if isinstance(data.get("exec_ms"), int) else int((time.monotonic() - began) * 1000)
        exit_code = res["exit_code"]
        # GNU timeout --signal=KILL dies of its own KILL: 137, not 124
        if exit_code == 124 or (exit_code == 137 and took >= timeout * 1000):
            exit_code = -1
        stdout = res.get("stdout") or ""
        if self.bug == "strip_stdout":
            stdout = stdout.rstrip()
        return SandboxResult(stdout, res.get("stderr") or "", exit_code, took)

    @staticmethod
    def delete(base, key, guest, http_t, failure):
        try:
            call(base, key, "DELETE", "/v1/sandboxes/%s" % guest, http_t)
        except SandboxExecutionError as e:
            if failure is None:
                raise
            sys.stderr.write("unlocked_backend: could not delete guest %s: %s\n" % (guest, e))

    @staticmethod
    def run_here(code, timeout):
        """The bug local_fallback exists for: the code on the host."""
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
        return SandboxResult(done.stdout, done.stderr, done.returncode, None)


def create_backend():
    return UnlockedBackend()


def preflight_per_run():
    return UnlockedBackend("preflight_per_run")


def leak_guest():
    return UnlockedBackend("leak_guest")


def local_fallback():
    return UnlockedBackend("local_fallback")


def retry_create():
    return UnlockedBackend("retry_create")


def strip_stdout():
    return UnlockedBackend("strip_stdout")
