#!/usr/bin/env python3
"""The Python SDK's examples, call by call, against a fresh sbx-mock (issue 25).

The vendor's Python SDK (public repository NodeOps-app/createos-python-sdk,
`src/createos/` and `examples/`) cannot be installed here: it needs
httpx >= 0.27 (Debian 12 has 0.23) and there is no package index. So these
tests do over plain HTTP (urllib, standard library only) what each example
does through the SDK, one request per SDK call, in the example's order:

- the request bodies are what the SDK's `to_dict` sends (its wire names:
  `cmd`, `args`, `stdin`, `env`, `envs`, `ingress_enabled`, `start_paused`,
  `cwd`, `pty: {rows, cols}`, `data_base64`, `after`, `scope`,
  `timeout_ms`, `grace_ms`; fields at their default left out), with the
  query strings its services add;
- every answer goes through the SDK's JSend check (2xx, a JSON object whose
  `status` is `success`, `data` returned) and is then checked to decode the
  way the SDK's `from_dict` needs: each field its response dataclass
  declares without a default is present, each field present has the
  declared type (an `X | None` field may be null, no other), enum values are
  members of the SDK's enums, datetimes parse with
  `datetime.fromisoformat(value.replace("Z", "+00:00"))` and are of a form
  Python 3.10's stricter parser takes too (the SDK supports 3.10);
- stream frames are checked as the SDK's `CommandStream` (exec NDJSON) and
  `ProcessStream` (managed-process NDJSON, base64 data) decode them;
- then what the example prints or checks holds (its own `raise` conditions
  included).

The field and enum tables below are this file's own reading of the SDK's
`models.py`, not a copy of it.

One known difference is asserted, not skipped: the live service's create
answer has no `status`, which the SDK's `CreateSandboxResponse` requires
(no default), so every `create_sandbox` of that SDK fails against the live
service and against the mock alike; the mock keeps the live answer
(README.md, "SDK compatibility"). `check_create_answer` asserts that
`status` is the one field missing and that everything else decodes.

Examples covered: hello_world, command_streaming, files_and_snapshots,
ingress_preview, managed_process, network, execution_server (its calls,
four at a time as its concurrency limit allows), custom_template (the
template calls up to the build's end: the build runs the Dockerfile's
steps, and its first RUN needs Debian's archive and get.docker.com, which
an offline build cannot reach, so it ends `failed` with its log, asserted
as that difference). desktop (computer use, `/computer/...`, on desktop:1)
is test_desktop.py's.

Where this differs from an example, on purpose: command_streaming's
program pauses 0.4 s between lines (the example 1 s); wait_for_port's loop
is given 30 s (the example 10 s) and a process wait that ends at the
example's 5 s timeout is asked once more, longer (a loaded CI machine);
execution_server's own HTTP front end is not run (only its calls to the
service matter here).

Each test starts its own sbx-mock on 127.0.0.1 port 0 (the port read back
from its "listening" line) and stops it; nothing leaves loopback (guests
have loopback only: `--egress stored`; no proxy from the environment is
used). Contained guests need user
namespaces: where the mock cannot contain, the whole file is skipped
(exit 77) with the mock's reason.

With --from-env instead of SBX_MOCK, the tests use the running mock the
environment names, as a user's shell has it after the README's one line
(`eval "$(sbxctl mock env)"`): CREATEOS_SANDBOX_BASE_URL and _API_KEY
(what the SDK reads), SBX_MOCK_ADMIN_TOKEN, and https verified by
Python's default context alone (SSL_CERT_FILE: the system's CAs plus the
mock's). tests/zero_config_test.sh runs HelloWorld and IngressPreview so.

Usage: test_python_sdk_examples.py [SBX_MOCK | --from-env] [unittest options]
(SBX_MOCK defaults to $SBX_MOCK_BIN). Exit 0 pass, 1 fail, 77 skipped.
"""
import base64
import concurrent.futures
import json
import os
import queue
import re
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime

SKIP = 77
KEY = "python-sdk-examples"
MOCK_BIN = None  # set by main()
FROM_ENV = False  # --from-env: the environment's running mock (EnvMock)
SYSTEM_CA = None  # --from-env: the CA bundle without the mock's CA (the last one)


def split_last_cert(path):
    """The PEM bundle at path without its last certificate (ca-bundle.pem
    ends with the mock's CA, runtime_env.c)."""
    with open(path) as f:
        pem = f.read()
    end = "-----END CERTIFICATE-----"
    certs = [c + end for c in pem.split(end) if "-----BEGIN CERTIFICATE-----" in c]
    return "\n".join(certs[:-1]) or None
CANNOT_CONTAIN = "guest containment needs user namespaces"
# Every request goes straight to the loopback address it names, whatever
# http_proxy and the like say.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))

# ---------------------------------------------------------------------------
# The SDK's enums (their values), as models.py declares them.

SANDBOX_STATUS = ("creating", "running", "pausing", "paused", "resuming", "forking", "error",
                  "destroying", "destroyed", "failed")
PROCESS_KIND = ("process", "pty")
PROCESS_STATE = ("starting", "running", "terminating", "exited", "failed")
PROCESS_STREAM = ("stdout", "stderr", "pty")
PROCESS_EVENT = ("data", "exit", "heartbeat", "error")
TEMPLATE_STATUS = ("pending", "building", "ready", "failed")

# ---------------------------------------------------------------------------
# Type specs of response fields, and the response models the examples decode.
# A spec is str, int, float, bool, DT (datetime), Enum(...), List(spec),
# Opt(spec) (declared `X | None`: null allowed), or a Model.


class DT:
    """A datetime field."""


class Enum:
    def __init__(self, name, members):
        self.name, self.members = name, members


class List:
    def __init__(self, item):
        self.item = item


class Opt:
    def __init__(self, inner):
        self.inner = inner


class Model:
    """A response dataclass: wire name -> spec; `required` = no default."""

    def __init__(self, name, fields, required=()):
        self.name, self.fields, self.required = name, fields, tuple(required)


SANDBOX = Model("Sandbox", {
    "id": str, "status": Enum("SandboxStatus", SANDBOX_STATUS), "ip": Opt(str), "vcpu": int,
    "mem_mib": int, "disk_mib": int, "created_at": Opt(DT), "ingress_enabled": bool,
    "ingress_url_template": str, "name": Opt(str), "running_at": Opt(DT),
    "destroyed_at": Opt(DT), "spawn_ms": float, "shape": str, "rootfs": Opt(str), "region": str,
    "egress": List(str), "envs": List(str), "ssh_pubkeys": List(str), "created_by": str,
    "bandwidth_ingress_bytes": int, "paused_at": Opt(DT), "last_resumed_at": Opt(DT),
    "forked_from": Opt(str), "auto_pause_after_seconds": Opt(int),
}, required=("id", "status"))

CREATE_ANSWER = Model("CreateSandboxResponse", {
    "id": str, "status": Enum("SandboxStatus", SANDBOX_STATUS), "name": Opt(str), "ip": str,
    "shape": str, "rootfs": Opt(str), "vcpu": int, "mem_mib": int, "disk_mib": int,
    "spawn_ms": float, "egress": List(str), "bandwidth_quota_bytes": int,
    "ingress_url_template": str,
}, required=("id", "status"))

DESTROYED = Model("DestroyedResponse", {
    "id": str, "status": Enum("SandboxStatus", SANDBOX_STATUS),
}, required=("id", "status"))

COMMAND_RESULT = Model("CommandResult", {
    "stdout": str, "stderr": str, "exit_code": int, "error": str,
})
RUN_COMMAND = Model("RunCommandResponse", {"result": COMMAND_RESULT, "exec_ms": float})

PROCESS = Model("ManagedProcess", {
    "process_id": str, "kind": Enum("ManagedProcessKind", PROCESS_KIND), "pid": int,
    "state": Enum("ManagedProcessState", PROCESS_STATE), "leader_exited": bool,
    "tree_exited": bool, "created_at": Opt(DT), "finished_at": Opt(DT),
    "exit_code": Opt(int), "signal": Opt(str), "cmd": str, "args": List(str), "cwd": str,
    "foreground": Opt(Model("ManagedProcessForeground",
                            {"pid": int, "cmd": str, "args": List(str)})),
    "output": Model("ManagedProcessOutputWindow",
                    {"oldest_seq": int, "newest_seq": int, "bytes": int}),
})

NETWORK = Model("Network", {
    "id": str, "name": str, "created_at": Opt(DT), "member_count": int,
    "members": List(Model("NetworkMember",
                          {"sandbox_id": str, "status": str, "ip": str, "name": str})),
})

TEMPLATE = Model("Template", {
    "id": str, "name": str, "base": str, "status": Enum("TemplateStatus", TEMPLATE_STATUS),
    "ext4_size_bytes": int, "created_at": Opt(DT), "built_at": Opt(DT), "dockerfile": str,
})

TEMPLATE_LOG = Model("TemplateLogEvent", {
    "ts": Opt(DT), "level": str, "line": str, "attempt": int, "final": bool, "status": str,
})

# What Python 3.10's datetime.fromisoformat takes (it is stricter than
# 3.11's): date, 'T' or ' ', HH:MM[:SS[.fff|.ffffff]], optional +HH:MM offset.
PY310_ISO = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{3}|\.\d{6})?)?"
                       r"([+-]\d{2}:\d{2}(:\d{2}(\.\d{6})?)?)?")


def parse_datetime(value):
    """The SDK's datetime conversion; AssertionError when it would fail."""
    if not isinstance(value, str):
        raise AssertionError("not a string")
    text = value.replace("Z", "+00:00")
    try:
        datetime.fromisoformat(text)
    except ValueError as e:
        raise AssertionError("datetime.fromisoformat: %s" % e)
    if not PY310_ISO.fullmatch(text):
        raise AssertionError("not a form Python 3.10's datetime.fromisoformat parses")


def type_errors(spec, value, where):
    """Why value does not decode as spec (a list of messages, empty when it does)."""
    if isinstance(spec, Opt):
        return [] if value is None else type_errors(spec.inner, value, where)
    if value is None:
        return ["%s: null, but the SDK declares it non-optional" % where]
    if spec is str:
        ok = isinstance(value, str)
    elif spec is bool:
        ok = isinstance(value, bool)
    elif spec is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif spec is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif spec is DT:
        try:
            parse_datetime(value)
            return []
        except AssertionError as e:
            return ["%s: %r: %s" % (where, value, e)]
    elif isinstance(spec, Enum):
        if value not in spec.members:
            return ["%s: %r is not a member of the SDK's %s %s" % (where, value, spec.name,
                                                                     spec.members)]
        return []
    elif isinstance(spec, List):
        if not isinstance(value, list):
            return ["%s: %r is not a list" % (where, value)]
        out = []
        for i, item in enumerate(value):
            out += type_errors(spec.item, item, "%s[%d]" % (where, i))
        return out
    elif isinstance(spec, Model):
        return model_errors(spec, value, where)
    else:
        raise TypeError(spec)
    return [] if ok else ["%s: %r is not of type %s" % (where, value, spec.__name__)]


def model_errors(model, data, where=None):
    where = where or model.name
    if not isinstance(data, dict):
        return ["%s: %r is not a JSON object" % (where, data)]
    out = ["%s.%s: missing, and the SDK's %s requires it (no default)" % (where, f, model.name)
           for f in model.required if f not in data]
    for name, spec in model.fields.items():
        if name in data:
            out += type_errors(spec, data[name], "%s.%s" % (where, name))
    return out


class Example(unittest.TestCase):
    """Shared machinery: the mock, the SDK's transport rules, the decoders."""

    # sbx-mock's flags for this example's mock: none, so it uses the
    # default image store when that holds images (as a user's would); an
    # example whose check depends on the host skeleton says --no-images
    MOCK_ARGS = ()

    def setUp(self):
        self.mock = EnvMock() if FROM_ENV else Mock(MOCK_BIN, self.MOCK_ARGS)
        self.addCleanup(self.stop_mock)

    def stop_mock(self):
        err = self.mock.stop()
        if self.mock.rc not in (0, None):
            self.fail("sbx-mock exited %s at its stop:\n%s" % (self.mock.rc, err[-3000:]))

    # ---- transport: what the SDK's Transport does with an answer ----

    def raw(self, method, path, body=None, params=None, data=None, content_type=None,
            timeout=60, stream=False):
        """One request; (status, headers, response or body bytes)."""
        url = self.mock.url + path
        if params:
            url += ("&" if "?" in url else "?") + urllib.parse.urlencode(params)
        headers = {"Accept": "application/json", "X-Api-Key": KEY,
                   "User-Agent": "createos-python-sdk-examples-test"}
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        elif content_type:
            headers["Content-Type"] = content_type
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            resp = OPENER.open(req, timeout=timeout)
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()
        if stream:
            return resp.status, resp.headers, resp
        with resp:
            return resp.status, resp.headers, resp.read()

    def sdk(self, method, path, body=None, params=None, timeout=60):
        """Transport.request: a 2xx JSend success; its data."""
        status, _, raw = self.raw(method, path, body=body, params=params, timeout=timeout)
        what = "%s %s %s" % (method, path, json.dumps(body) if body is not None else "")
        self.assertTrue(200 <= status < 300, "%s: HTTP %d (the SDK raises APIError): %s" % (
            what, status, raw[:2000].decode(errors="replace")))
        try:
            env = json.loads(raw)
        except ValueError as e:
            self.fail("%s: not JSON (the SDK raises ProtocolError): %s" % (what, e))
        self.assertIsInstance(env, dict, "%s: not a JSend envelope" % what)
        self.assertEqual(env.get("status"), "success", "%s: JSend status: %r" % (what, env))
        return env.get("data")

    def decode(self, model, data, what):
        errors = model_errors(model, data)
        self.assertEqual(errors, [], "%s: the SDK's %s.from_dict cannot decode %s:\n  %s" % (
            what, model.name, json.dumps(data), "\n  ".join(errors)))
        return data

    # ---- client.create_sandbox, instance calls ----

    def check_create_answer(self, data, request):
        """The create answer: decodes as CreateSandboxResponse but for the
        documented difference (no `status`, as the live service)."""
        self.assertIsInstance(data, dict)
        errors = model_errors(CREATE_ANSWER, data)
        documented = ("CreateSandboxResponse.status: missing, and the SDK's "
                      "CreateSandboxResponse requires it (no default)")
        self.assertNotIn("status", data,
                         "the create answer now has `status`: the live service's answer has "
                         "none (README, SDK compatibility): update this test and the README")
        self.assertEqual(errors, [documented],
                         "create answer %s: beyond the documented missing `status`: %s" % (
                             json.dumps(data), errors))
        self.assertTrue(data["id"].startswith("sb-"), data["id"])
        if request.get("ingress_enabled"):
            # preview_url() needs the template (and the request's flag)
            self.assertIn("<port>", data.get("ingress_url_template", ""), data)
        if "name" in request:
            self.assertEqual(data.get("name"), request["name"])
        if "rootfs" in request:
            self.assertEqual(data.get("rootfs"), request["rootfs"])
        self.assertEqual(data.get("shape"), request["shape"])

    def create_sandbox(self, **request):
        data = self.sdk("POST", "/v1/sandboxes", request, timeout=120)
        self.check_create_answer(data, request)
        return data

    def destroy(self, sid):
        data = self.decode(DESTROYED, self.sdk("DELETE", "/v1/sandboxes/" + sid),
                           "destroy " + sid)
        self.assertEqual(data["id"], sid)
        self.assertIn(data["status"], ("destroying", "destroyed"))

    def run_command(self, sid, cmd, args=None, stdin=None, env=None, timeout=60):
        """instance.run_command: RunCommandRequest.to_dict (stream stays default)."""
        body = {"cmd": cmd}
        if args:
            body["args"] = args
        if stdin:
            body["stdin"] = stdin
        if env:
            body["env"] = env
        data = self.sdk("POST", "/v1/sandboxes/%s/exec" % sid, body, timeout=timeout)
        return self.decode(RUN_COMMAND, data, "exec %s" % json.dumps(body))["result"]

    def sh_output(self, sid, script):
        return self.run_command(sid, "sh", ["-c", script])["stdout"]

    def upload(self, sid, path, content):
        """files.upload: raw bytes, application/octet-stream; only the status counts."""
        status, _, raw = self.raw("PUT", "/v1/sandboxes/%s/files" % sid, params={"path": path},
                                  data=content, content_type="application/octet-stream")
        self.assertTrue(200 <= status < 300, "upload %s: HTTP %d %s" % (path, status, raw[:500]))

    def lifecycle(self, sid, action, body=None):
        data = self.sdk("POST", "/v1/sandboxes/%s/%s" % (sid, action), body)
        return self.decode(SANDBOX, data, "%s %s" % (action, sid))

    def wait_until(self, sid, desired, timeout=120):
        """instance.wait_until_running/paused: GET the view until desired (a
        terminal state raises)."""
        terminal = {"error", "failed", "destroying", "destroyed"}
        deadline = time.monotonic() + timeout
        while True:
            view = self.decode(SANDBOX, self.sdk("GET", "/v1/sandboxes/" + sid), "get " + sid)
            self.assertNotIn(view["status"], terminal, "%s entered %s" % (sid, view["status"]))
            if view["status"] == desired:
                return view
            self.assertLess(time.monotonic(), deadline, "%s never became %s" % (sid, desired))
            time.sleep(0.1)

    # ---- processes service ----

    def procs(self, sid, suffix=""):
        return "/v1/sandboxes/%s/processes%s" % (sid, suffix)

    def process_create(self, sid, **request):
        data = self.sdk("POST", self.procs(sid), request)
        return self.decode(PROCESS, data, "process create %s" % json.dumps(request))

    def process_connect(self, sid, pid, after=0, timeout=30):
        """processes.connect + the example's _collect: (stdout, stderr, pty,
        last data seq, data frames, exit frame) until the exit frame."""
        status, headers, resp = self.raw("GET", self.procs(sid, "/%s/connect" % pid),
                                         params={"after": after}, stream=True, timeout=timeout)
        self.assertEqual(status, 200, "connect %s: %s" % (pid, resp))
        out = {"stdout": "", "stderr": "", "pty": ""}
        last = frames = 0
        exit_frame = None
        with resp:
            for line in resp:
                line = line.strip()
                if not line:
                    continue
                event = json.loads(line)
                self.check_process_event(event)
                if event["type"] == "exit":
                    exit_frame = event
                    break
                if event["type"] == "error":
                    self.fail("process stream error: %r" % event)
                if event["type"] != "data":
                    continue
                out[event["stream"]] += base64.b64decode(event["data_base64"]).decode(
                    errors="replace")
                last = max(last, event["seq"])
                frames += 1
        return out, last, frames, exit_frame

    def check_process_event(self, event):
        """What ProcessStream.decode needs of one frame."""
        self.assertIsInstance(event, dict)
        self.assertIn(event.get("type"), PROCESS_EVENT, event)  # data["type"]: required
        errors = []
        for name, spec in (("seq", int), ("stream", Opt(Enum("ManagedProcessStream",
                                                              PROCESS_STREAM))),
                           ("exit_code", Opt(int)), ("signal", Opt(str)), ("error", str),
                           ("oldest_available_seq", int), ("data_base64", str)):
            if name in event:
                errors += type_errors(spec, event[name], "frame." + name)
        self.assertEqual(errors, [], "%r: %s" % (event, errors))
        if event.get("data_base64"):
            base64.b64decode(event["data_base64"], validate=True)  # the SDK validates
        if event["type"] == "data":
            self.assertIn(event.get("stream"), PROCESS_STREAM, event)

    def process_wait(self, sid, pid, scope, wait_timeout):
        """processes.wait with the example's scope and timeout; a wait that
        ends at its timeout (a loaded machine) is asked once more, longer,
        before the caller's checks."""
        for seconds in (wait_timeout, 60):
            params = {"scope": scope, "timeout_ms": int(seconds * 1000)}
            data = self.sdk("GET", self.procs(sid, "/%s/wait" % pid), params=params,
                            timeout=seconds + 30)
            view = self.decode(PROCESS, data, "process wait")
            if view["tree_exited" if scope == "tree" else "leader_exited"]:
                break
        return view

    def process_input(self, sid, pid, text):
        data = self.sdk("POST", self.procs(sid, "/%s/input" % pid),
                        {"data_base64": base64.b64encode(text.encode()).decode()})
        self.assertIsInstance(data, dict)
        self.assertIsInstance(data.get("input_seq"), int, data)  # int(result["input_seq"])
        return data["input_seq"]


class Mock:
    """One sbx-mock on 127.0.0.1 port 0; stop() ends it."""

    def __init__(self, binary, extra=()):
        self.err = tempfile.TemporaryFile()
        self.rc = None
        self.proc = subprocess.Popen(
            [binary, "--listen", "127.0.0.1:0", "--self-listen", "off", "--egress", "stored",
             "--quiet", *extra], stdout=subprocess.PIPE, stderr=self.err, text=True)
        self.url = self.token = self.mode = self.ingress = None
        lines = queue.Queue()
        self.reader = threading.Thread(
            target=lambda: [lines.put(l) for l in self.proc.stdout] + [lines.put(None)],
            daemon=True)
        self.reader.start()
        deadline = time.monotonic() + 60
        while self.ingress is None and time.monotonic() < deadline:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                break
            if line.startswith("sbx-mock listening on "):
                self.url = line.split()[-1]
            elif line.startswith("admin token: "):
                self.token = line.split()[-1]
            elif line.startswith("guest mode: "):
                self.mode = line.split()[-1]
            elif line.startswith("ingress: "):
                self.ingress = line.split()[-1]
        if self.url is None or self.ingress is None:
            err = self.stop()
            if CANNOT_CONTAIN in err:
                raise CannotContain(err.strip())
            raise RuntimeError("sbx-mock did not start (listening %s, ingress %s): %s" % (
                self.url, self.ingress, err))
        if not self.url.startswith("http://127.0.0.1:"):
            raise RuntimeError("the mock listens off loopback: " + self.url)
        self.ca = None

    def ca_pem(self):
        """The mock's CA certificate (GET /_mock/ca): what a host-side
        client trusts to reach the ingress's https URLs."""
        if self.ca is None:
            req = urllib.request.Request(self.url + "/_mock/ca",
                                         headers={"X-Mock-Admin-Token": self.token})
            self.ca = OPENER.open(req, timeout=30).read().decode()
        return self.ca

    def tls_context(self):
        """Python's default verification (chain and host name: the
        ingress's leaf names 127.0.0.1 as an IP subjectAltName) against
        the mock's CA alone."""
        return ssl.create_default_context(cadata=self.ca_pem())

    def opener(self):
        """OPENER that trusts the mock's CA (the ingress's https URLs)."""
        return urllib.request.build_opener(urllib.request.ProxyHandler({}),
                                           urllib.request.HTTPSHandler(context=self.tls_context()))

    def stop(self):
        if self.err.closed:
            return ""
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.rc = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.rc = self.proc.wait()
        self.reader.join(timeout=10)  # EOF once the mock is gone
        self.proc.stdout.close()
        self.err.seek(0)
        err = self.err.read().decode(errors="replace")
        self.err.close()
        return err


class EnvMock:
    """The running mock the environment names (--from-env): Mock's
    interface, nothing started or stopped; https trusted through the
    environment only (Python's default context reads SSL_CERT_FILE)."""

    def __init__(self):
        missing = [v for v in ("CREATEOS_SANDBOX_BASE_URL", "CREATEOS_SANDBOX_API_KEY",
                               "SBX_MOCK_ADMIN_TOKEN") if not os.environ.get(v)]
        if missing:
            raise RuntimeError("--from-env: %s not set (run eval \"$(sbxctl mock env)\" first)"
                               % ", ".join(missing))
        self.url = os.environ["CREATEOS_SANDBOX_BASE_URL"]
        self.token = os.environ["SBX_MOCK_ADMIN_TOKEN"]
        self.ingress = None  # the tests that need it take it from a URL the mock gave
        self.rc = None

    def tls_context(self):
        return ssl.create_default_context()

    def opener(self):
        return urllib.request.build_opener(urllib.request.ProxyHandler({}),
                                           urllib.request.HTTPSHandler(context=self.tls_context()))

    def stop(self):
        return ""


class CannotContain(Exception):
    pass


class HelloWorld(Example):
    """examples/hello_world: create (named, s-4vcpu-4gb, devbox:1), `sh -c
    "uname -a"`, destroy."""

    def test_hello_world(self):
        sb = self.create_sandbox(shape="s-4vcpu-4gb", rootfs="devbox:1", name="hello-python")
        try:
            result = self.run_command(sb["id"], "sh", ["-c", "uname -a"])
            self.assertEqual(result["exit_code"], 0, result)
            self.assertTrue(result["stdout"].startswith("Linux "), result)
        finally:
            self.destroy(sb["id"])


class CommandStreaming(Example):
    """examples/command_streaming: upload a Python program to /tmp, run it
    with stream_command (POST exec?stream=true, "stream": true), print each
    stdout frame as it comes, then the exit. The program prints five lines a
    pause apart (the example sleeps 1 s; 0.4 s here)."""

    SCRIPT = ("import time\n\nfor number in range(1, 6):\n"
              "    print(f\"result {number}\", flush=True)\n    time.sleep(0.4)\n")

    def test_command_streaming(self):
        sb = self.create_sandbox(shape="s-1vcpu-1gb", rootfs="devbox:1")
        sid = sb["id"]
        try:
            self.upload(sid, "/tmp/script.py", self.SCRIPT.encode())
            body = {"cmd": "python3", "args": ["/tmp/script.py"], "stream": True}
            status, headers, resp = self.raw("POST", "/v1/sandboxes/%s/exec?stream=true" % sid,
                                             body=body, stream=True, timeout=60)
            self.assertEqual(status, 200, resp)
            events = []  # (arrival, type, value) as CommandStream yields them
            with resp:
                for line in resp:
                    line = line.decode().strip()
                    if not line or line.startswith((":", "event:", "id:", "retry:")):
                        continue
                    if line.startswith("data:"):
                        line = line[5:].strip()
                    frame = json.loads(line)
                    self.assertIsInstance(frame, dict, line)
                    now = time.monotonic()
                    for key, kind in (("hb", "heartbeat"), ("stdout", "stdout"),
                                      ("stderr", "stderr"), ("error", "error")):
                        if frame.get(key):
                            if key != "hb":
                                self.assertIsInstance(frame[key], str, frame)
                            events.append((now, kind, frame[key]))
                    if frame.get("exit_code") is not None:
                        self.assertIsInstance(frame["exit_code"], int, frame)
                        events.append((now, "exit", frame["exit_code"]))
            kinds = [k for _, k, _ in events if k != "heartbeat"]
            self.assertEqual(kinds[-1], "exit", events)
            self.assertEqual(events[-1][2], 0, events)
            self.assertNotIn("error", kinds, events)
            self.assertNotIn("stderr", kinds, events)
            stdout = "".join(v for _, k, v in events if k == "stdout")
            self.assertEqual(stdout, "".join("result %d\n" % n for n in range(1, 6)))
            # streamed as it ran, not buffered to the end
            first = next(t for t, k, _ in events if k == "stdout")
            self.assertGreater(events[-1][0] - first, 1.0,
                               "the first line came with the exit: not streamed: %r" % events)
        finally:
            self.destroy(sid)


class FilesAndSnapshots(Example):
    """examples/files_and_snapshots: upload /root/seed.txt, read it from exec,
    pause, fork with start_paused, resume the fork, the fork sees the seed,
    writes a file of its own that the resumed base does not see."""

    def test_files_and_snapshots(self):
        base = self.create_sandbox(shape="s-1vcpu-256mb", rootfs="devbox:1")["id"]
        clone = None
        try:
            stamp = datetime.now().astimezone().isoformat()
            seed = "seed written at %s\n" % stamp
            self.upload(base, "/root/seed.txt", seed.encode())
            self.assertEqual(self.sh_output(base, "cat /root/seed.txt 2>&1").strip(),
                             seed.strip())

            view = self.lifecycle(base, "pause")
            self.assertIn(view["status"], ("pausing", "paused"))
            self.wait_until(base, "paused")

            forked = self.lifecycle(base, "fork", {"start_paused": True})
            clone = forked["id"]
            self.assertNotEqual(clone, base)
            view = self.wait_until(clone, "paused")
            self.assertEqual(view.get("forked_from"), base, view)

            self.lifecycle(clone, "resume")
            self.wait_until(clone, "running")
            self.assertEqual(self.sh_output(clone, "cat /root/seed.txt 2>&1").strip(),
                             seed.strip())
            only = "written only in fork at %s\n" % stamp
            self.upload(clone, "/root/fork-only.txt", only.encode())
            self.assertEqual(self.sh_output(clone, "cat /root/fork-only.txt 2>&1").strip(),
                             only.strip())

            self.lifecycle(base, "resume")
            self.wait_until(base, "running")
            missing = self.run_command(base, "test", ["!", "-e", "/root/fork-only.txt"])
            self.assertEqual(missing["exit_code"], 0, "base unexpectedly contains fork-only file")
            self.assertEqual(self.sh_output(base, "cat /root/seed.txt 2>&1").strip(),
                             seed.strip())
        finally:
            if clone is not None:
                self.destroy(clone)
            self.destroy(base)


class IngressPreview(Example):
    """examples/ingress_preview: create with ingress, mkdir /srv, upload
    /srv/index.html, start `python3 -m http.server 8080` as a managed process
    in /srv, wait_for_port (its bash /dev/tcp loop), preview_url(8080) from
    the create answer's template, GET it from the host (urllib)."""

    PAGE = b"<h1>hello from CreateOS Sandbox preview URL</h1>"

    def test_ingress_preview(self):
        sb = self.create_sandbox(shape="s-1vcpu-256mb", rootfs="devbox:1", ingress_enabled=True)
        sid = sb["id"]
        try:
            self.assertEqual(self.run_command(sid, "mkdir", ["-p", "/srv"])["exit_code"], 0)
            self.upload(sid, "/srv/index.html", self.PAGE)
            server = self.process_create(sid, cmd="python3",
                                         args=["-m", "http.server", "8080", "--bind", "0.0.0.0"],
                                         cwd="/srv")
            self.assertEqual((server["kind"], server["cwd"]), ("process", "/srv"), server)
            # wait_for_port(8080): its bash loop; the example gives it 10 s,
            # 30 here for a loaded CI machine
            script = ("timeout 30 bash -c 'until (echo > /dev/tcp/127.0.0.1/8080) "
                      "2>/dev/null; do sleep 0.25; done'")
            ready = self.run_command(sid, "bash", ["-c", script], timeout=35)
            self.assertEqual(ready["exit_code"], 0, "port 8080 did not become ready: %r" % ready)
            url = sb["ingress_url_template"].replace("<port>", "8080")
            # https, as the live service's preview URLs: verified against
            # the mock's CA (README "Ingress")
            self.assertTrue(url.startswith("https://127.0.0.1:"), "not https on loopback: " + url)
            with self.mock.opener().open(url, timeout=30) as resp:
                self.assertEqual(resp.status, 200)
                self.assertEqual(resp.read(), self.PAGE)
            # without the mock's CA the leaf is not trusted: the client's
            # verification, not a plain-HTTP fallback, is what passed above
            # (from the environment, the default context trusts it: the
            # bundle of SSL_CERT_FILE is what passed)
            refused = ssl.create_default_context(cadata=SYSTEM_CA) if FROM_ENV else None
            with self.assertRaises(urllib.error.URLError) as e:
                (urllib.request.build_opener(urllib.request.ProxyHandler({}),
                                             urllib.request.HTTPSHandler(context=refused))
                 if FROM_ENV else OPENER).open(url, timeout=30)
            self.assertIsInstance(e.exception.reason, ssl.SSLCertVerificationError, e.exception)
            # the same port still answers a plain-HTTP client
            plain = "http://" + url[len("https://"):]
            with OPENER.open(plain, timeout=30) as resp:
                self.assertEqual(resp.read(), self.PAGE)
        finally:
            self.destroy(sid)


class ManagedProcess(Example):
    """examples/managed_process: a pipe process (env override, stdin, wait
    scope=tree, connect, replay after=last-1), an interactive PTY shell
    (created with no cmd, 24x80, input, resize 32x100, exit), a tree that
    ignores SIGTERM terminated with grace_ms=100."""

    def test_managed_process(self):
        sb = self.create_sandbox(shape="s-1vcpu-1gb", rootfs="devbox:1",
                                 envs={"PROCESS_DEMO_BASE": "from-sandbox-env",
                                       "PROCESS_DEMO_OVERRIDE": "declared-at-create"})
        sid = sb["id"]
        try:
            # [1/4] pipe process with stdin/stdout/stderr
            script = "; ".join([
                "printf 'base:%s\\n' \"$PROCESS_DEMO_BASE\"",
                "printf 'override:%s\\n' \"$PROCESS_DEMO_OVERRIDE\"",
                "printf 'stderr:ready\\n' >&2",
                "IFS= read -r line",
                "printf 'stdin:%s\\n' \"$line\"",
            ])
            pipe = self.process_create(sid, cmd="/bin/sh", args=["-c", script], cwd="/root",
                                       env={"PROCESS_DEMO_OVERRIDE": "from-process-env"})
            pid = pipe["process_id"]
            self.assertTrue(pid, pipe)
            listed = self.sdk("GET", self.procs(sid))
            rows = listed.get("processes", [])  # processes.list reads data["processes"]
            for row in rows:
                self.decode(PROCESS, row, "process list")
            self.assertEqual([r["process_id"] for r in rows], [pid])
            self.process_input(sid, pid, "hello managed process\n")
            self.sdk("POST", self.procs(sid, "/%s/stdin/close" % pid))
            done = self.process_wait(sid, pid, "tree", 5)
            self.assertEqual(done["exit_code"], 0, done)
            self.assertTrue(done["leader_exited"] and done["tree_exited"], done)
            out, last, frames, exit_frame = self.process_connect(sid, pid)
            self.assertIsNotNone(exit_frame)
            self.assertEqual(exit_frame.get("exit_code"), 0, exit_frame)
            self.assertIn("base:from-sandbox-env", out["stdout"])
            self.assertIn("override:from-process-env", out["stdout"])
            self.assertIn("stdin:hello managed process", out["stdout"])  # the example's check
            self.assertEqual(out["stderr"], "stderr:ready\n")

            # [2/4] reconnect from an output offset: one frame back
            after = max(last - 1, 0)
            _, _, replayed, exit_again = self.process_connect(sid, pid, after=after)
            self.assertGreaterEqual(replayed, 1, "nothing replayed after %d" % after)
            self.assertIsNotNone(exit_again)

            # [3/4] interactive PTY shell: ManagedProcessCreateRequest with no
            # command (cmd is omitted at its default ""), cwd and a size
            pty = self.process_create(sid, cwd="/root", pty={"rows": 24, "cols": 80})
            self.assertEqual(pty["kind"], "pty", pty)
            tid = pty["process_id"]
            self.process_input(sid, tid, "echo terminal-ready; stty size\n")
            resized = self.sdk("POST", self.procs(sid, "/%s/resize" % tid),
                               {"rows": 32, "cols": 100})
            self.assertIsNotNone(resized)
            self.process_input(sid, tid, "echo after-resize; stty size; exit\n")
            pty_done = self.process_wait(sid, tid, "tree", 5)
            self.assertTrue(pty_done["tree_exited"], pty_done)
            self.assertEqual(pty_done["exit_code"], 0, pty_done)
            out, _, _, _ = self.process_connect(sid, tid)
            words = out["pty"].split()
            self.assertTrue({"terminal-ready", "after-resize"} <= set(words),
                            "PTY output omitted command markers: %r" % out["pty"])
            # the resize reached the terminal: stty size after it says so
            tail = out["pty"][out["pty"].rindex("after-resize"):]
            self.assertIn("32 100", tail, out["pty"])

            # [4/4] terminate a long-running tree that ignores SIGTERM
            long_running = self.process_create(sid, cmd="/bin/sh",
                                               args=["-c", "trap '' TERM; sleep 300 & wait"])
            data = self.sdk("DELETE", self.procs(sid, "/" + long_running["process_id"]),
                            params={"grace_ms": 100})
            gone = self.decode(PROCESS, data, "process delete")
            self.assertTrue(gone["leader_exited"], gone)
            self.assertTrue(gone["tree_exited"], "terminated process tree did not exit: %r" % gone)
        finally:
            self.destroy(sid)


class Network(Example):
    """examples/network: create a network (a 30-character name), a sandbox,
    attach, find the sandbox among the network's members, detach, destroy,
    delete the network."""

    def test_network(self):
        name = "python-sdk-%d" % time.time_ns()
        net = self.decode(NETWORK, self.sdk("POST", "/v1/networks", {"name": name}),
                          "network create")
        self.assertEqual(net["name"], name)
        self.assertTrue(net["id"], net)
        sid, attached = None, False
        try:
            sid = self.create_sandbox(shape="s-1vcpu-1gb", rootfs="devbox:1")["id"]
            self.sdk("POST", "/v1/sandboxes/%s/networks" % sid, {"id": net["id"]})
            attached = True
            got = self.decode(NETWORK, self.sdk("GET", "/v1/networks/" + net["id"]),
                              "network get")
            members = [m for m in got.get("members", []) if m.get("sandbox_id") == sid]
            self.assertEqual(len(members), 1, "sandbox %s was not found in %s: %r" % (
                sid, net["id"], got))
        finally:
            if sid is not None:
                if attached:
                    self.sdk("DELETE", "/v1/sandboxes/%s/networks/%s" % (
                        sid, urllib.parse.quote(net["id"], safe="")))
                self.destroy(sid)
            self.sdk("DELETE", "/v1/networks/" + net["id"])


class ExecutionServer(Example):
    """examples/execution_server: each POST /v1/execute it serves is a
    create (s-1vcpu-1gb, devbox:1), one run_command with the caller's
    command, arguments, standard input and environment, and a destroy; at
    most four at once. Four such executions run here at once."""

    CASES = [
        # (request to the example's server, what its answer carries)
        ({"command": "echo", "arguments": ["hello", "world"]},
         {"stdout": "hello world\n", "exitCode": 0}),
        ({"command": "cat", "standardInput": "from stdin"},
         {"stdout": "from stdin", "exitCode": 0}),
        ({"command": "sh", "arguments": ["-c", "echo out; echo err >&2; exit 3"]},
         {"stdout": "out\n", "stderr": "err\n", "exitCode": 3}),
        ({"command": "no-such-program"}, {"exitCode": -1, "error": True}),
    ]

    def execute(self, request):
        sid = self.create_sandbox(shape="s-1vcpu-1gb", rootfs="devbox:1")["id"]
        try:
            return self.run_command(sid, request["command"], request.get("arguments"),
                                    request.get("standardInput"),
                                    request.get("environmentVariables"), timeout=120)
        finally:
            self.destroy(sid)

    def test_execution_server(self):
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            results = list(pool.map(self.execute, [req for req, _ in self.CASES]))
        for (req, want), got in zip(self.CASES, results):
            answer = {"stdout": got["stdout"], "stderr": got["stderr"],
                      "exitCode": got["exit_code"]}
            for key, value in want.items():
                if key == "error":
                    self.assertTrue(got.get("error"), "%r: no error in %r" % (req, got))
                else:
                    self.assertEqual(answer[key], value, "%r: %r" % (req, got))

    def test_environment_needs_declared_keys(self):
        """environmentVariables become exec `env`, which may only override
        keys the sandbox declared (spec, "Exec"); the example creates its
        sandboxes with none, so the SDK raises APIError (400 naming env) and
        the example answers 502."""
        sid = self.create_sandbox(shape="s-1vcpu-1gb", rootfs="devbox:1")["id"]
        try:
            status, _, raw = self.raw("POST", "/v1/sandboxes/%s/exec" % sid,
                                      body={"cmd": "env", "env": {"X": "1"}})
            self.assertEqual(status, 400, raw)
            body = json.loads(raw)
            self.assertEqual(body.get("status"), "fail", body)
            self.assertIn("env", body.get("data", {}), body)
        finally:
            self.destroy(sid)


class CustomTemplate(Example):
    """examples/custom_template: submit a template build, follow its build
    log (NDJSON until final), poll until ready, create a sandbox with the
    template as rootfs, start dockerd, run docker, destroy, delete the
    template. The mock runs the Dockerfile's steps for real
    (mock-api/TEMPLATES.md), offline: the example's first RUN needs Debian's
    archive and get.docker.com, which a mock's build cannot reach (and this
    mock, started without an image store, has no base image either), so the
    build ends `failed` with the step and its log, never a fake `ready`;
    the example's later steps (a sandbox on the template, docker) cannot
    follow, and that is the documented difference."""

    DOCKERFILE = ("FROM nodeops/sandbox:debian\n\nRUN apt-get update -qq \\\n"
                  " && apt-get install -y --no-install-recommends curl ca-certificates \\\n"
                  " && curl -fsSL https://get.docker.com | sh \\\n"
                  " && rm -rf /var/lib/apt/lists/*\n")
    # the host skeleton: no base image, so the build's failure is certain
    # (on devbox:1 with egress stored the steps could reach further)
    MOCK_ARGS = ("--no-images",)

    def test_custom_template(self):
        name = "docker-ce-%d" % time.time_ns()
        tpl = self.decode(TEMPLATE, self.sdk("POST", "/v1/templates",
                                             {"name": name, "dockerfile": self.DOCKERFILE}),
                          "template create")
        tid = tpl["id"]
        self.assertTrue(tid, tpl)
        self.assertEqual(tpl["status"], "pending", tpl)
        try:
            # follow_logs: GET logs?follow=true, NDJSON TemplateLogEvent until final
            status, _, resp = self.raw("GET", "/v1/templates/%s/logs" % urllib.parse.quote(tid),
                                       params={"follow": "true"}, stream=True, timeout=120)
            self.assertEqual(status, 200, resp)
            final = None
            with resp:
                for line in resp:
                    line = line.decode().strip()
                    if not line:
                        continue
                    event = self.decode(TEMPLATE_LOG, json.loads(line), "template log event")
                    if event.get("final"):
                        final = event
                        break
            self.assertIsNotNone(final, "the log stream ended without a final event")
            # _wait_for_template raises on failed: the documented difference
            self.assertEqual(final.get("status"), "failed", final)
            got = self.decode(TEMPLATE, self.sdk("GET", "/v1/templates/" + tid), "template get")
            self.assertEqual(got["status"], "failed", got)
            _, _, log = self.raw("GET", "/v1/templates/%s/logs" % urllib.parse.quote(tid))
            self.assertIn("build failed", log.decode() if isinstance(log, bytes) else log)
        finally:
            self.sdk("DELETE", "/v1/templates/" + tid)


class Decoder(unittest.TestCase):
    """The checks above catch what the SDK's from_dict would choke on (or
    hand its user mistyped): a missing required field, a value outside an
    enum, a datetime fromisoformat (or Python 3.10's) refuses, a wrong type,
    null in a non-optional field."""

    def test_decoder_finds_what_the_sdk_refuses(self):
        good = {"id": "sb-1", "status": "running", "created_at": "2026-01-02T03:04:05.678Z",
                "vcpu": 1, "ingress_enabled": False, "ip": None, "envs": ["A"]}
        self.assertEqual(model_errors(SANDBOX, good), [])
        for change, why in (({"status": None}, "null"), ({"status": "stopped"}, "member"),
                            ({"created_at": "2026-01-02T03:04:05.678912345Z"}, "datetime"),
                            ({"created_at": "2026-01-02T03:04:05.6Z"}, "3.10"),
                            ({"created_at": "yesterday"}, "fromisoformat"),
                            ({"vcpu": True}, "type int"), ({"vcpu": "1"}, "type int"),
                            ({"ingress_enabled": 1}, "type bool"),
                            ({"envs": {"A": "b"}}, "not a list"), ({"envs": [1]}, "type str")):
            errors = model_errors(SANDBOX, dict(good, **change))
            self.assertEqual(len(errors), 1, (change, errors))
            self.assertIn(why, errors[0], (change, errors))
        errors = model_errors(SANDBOX, {k: v for k, v in good.items() if k != "id"})
        self.assertEqual(errors, ["Sandbox.id: missing, and the SDK's Sandbox requires it "
                                  "(no default)"])
        member = {"members": [{"sandbox_id": 7}]}
        self.assertIn("Network.members[0].sandbox_id", model_errors(NETWORK, member)[0])


class Desktop(unittest.TestCase):
    def test_desktop(self):
        self.skipTest("examples/desktop (computer use) has its own file: test_desktop.py "
                      "(it needs the desktop:1 image)")


def main():
    global MOCK_BIN, FROM_ENV, KEY, SYSTEM_CA
    argv = sys.argv[1:]
    if argv and argv[0] == "--from-env":
        argv.pop(0)
        FROM_ENV = True
        KEY = os.environ.get("CREATEOS_SANDBOX_API_KEY", KEY)
        # a context without the mock's CA: the bundle's certificates but its last
        SYSTEM_CA = split_last_cert(os.environ.get("SSL_CERT_FILE", ""))
        prog = unittest.main(argv=[sys.argv[0]] + argv, exit=False, verbosity=2)
        return 0 if prog.result.wasSuccessful() else 1
    if argv and not argv[0].startswith("-"):
        MOCK_BIN = argv.pop(0)
    else:
        MOCK_BIN = os.environ.get("SBX_MOCK_BIN")
    if not MOCK_BIN:
        print(__doc__.split("\n\n")[-1], file=sys.stderr)
        return 2
    try:
        Mock(MOCK_BIN).stop()  # can this host contain guests at all?
    except CannotContain as e:
        print("SKIP: sbx-mock cannot contain guests here; it says:\n" + str(e))
        return SKIP
    prog = unittest.main(argv=[sys.argv[0]] + argv, exit=False, verbosity=2)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
