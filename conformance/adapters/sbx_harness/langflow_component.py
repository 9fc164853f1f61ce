#!/usr/bin/env python3
"""Serve a Langflow sandbox *component* class over the sbx-conform driver
protocol v1 (surface "component", op ``component_run``).

    python3 langflow_component.py [--path DIR]... MODULE:CLASS
    python3 langflow_component.py [--path DIR]... path/to/FILE.py:CLASS

The class is driven the way Langflow drives a node, through the interface in
spec/backend-conformance.md ("Appendix: the Python shapes of the plugin's
surfaces"): built with its inputs as keyword arguments (``python_code`` or
``command``, ``session_mode`` "off" | "flow", ``collect_artifacts``,
``allow_network``, ``timeout_seconds`` from LANGFLOW_SANDBOX_TIMEOUT_SECONDS;
inputs the request does not set keep the class's defaults), given ``_id``
(the component id) and ``graph.flow_id``; then ``run_sandbox()`` and, for
Return Files, ``collected_files()`` are called on that instance.

When ``lfx`` is not importable, ``lfx_standin/`` (next to this file) goes on
sys.path first: a minimal stand-in for exactly the lfx names the appendix
lists, so a plugin package can be checked without installing Langflow.

Mapping back to the protocol answer:
- ``run_sandbox()`` -> ``Data(data={result, stderr, exit_code, sandbox_id,
  reused_guest, artifact_count, error?})``: ``result`` is stdout (the real
  component trims it, and stderr; the answer carries them as given). A
  non-zero exit is a *result*: when ``exit_code`` is an int the answer is a
  result and ``error`` is only informational (logged to stderr). An exception
  out of ``run_sandbox()`` is an error answer, classified like a backend's;
  so is an ``error`` with no int ``exit_code`` (``"TypeName: message"`` keeps
  TypeName as the error type).
- ``collected_files()`` -> ``DataFrame`` rows, each a dict or a ``Data``:
  ``path`` (relative to /workspace/artifacts as the real component gives it,
  or ``artifacts/...``, or absolute under /workspace), ``size`` and
  ``sha256``; a row with ``text`` (the real component's, UTF-8),
  ``base64``, ``content`` (str or bytes) or ``content_base64`` instead gets
  them computed.
- ``guest_name``: the Data's ``guest_name`` or ``sandbox_name`` when present,
  else the name the control plane gives ``sandbox_id`` (one GET with the
  case's key, sent with the harness's User-Agent so the evidence never counts
  it as the component's request).
"""

import base64
import hashlib
import importlib.util
import json
import os
import re
import sys
import types
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import langflow_backend as lb  # noqa: E402  (the shared protocol machinery)

DRIVER = "langflow_component.py 1.0 (python %d.%d)" % sys.version_info[:2]
HARNESS_AGENT = "sbx-conform/adapter (harness)"
TYPE_PREFIX = re.compile(r"\A([A-Za-z_][A-Za-z0-9_]*(?:Error|Exception)):\s*(.*)\Z", re.S)


def use_lfx_standin():
    """True when the stand-in was put on sys.path (lfx not importable)."""
    try:
        if importlib.util.find_spec("lfx") is not None:
            return False
    except (ImportError, ValueError):
        pass
    sys.path.insert(0, os.path.join(HERE, "lfx_standin"))
    return True


class ComponentError(Exception):
    """run_sandbox() reported an error in its Data."""

    def __init__(self, etype, message):
        super().__init__(message)
        self.etype = etype


def input_names(cls):
    return {getattr(i, "name", None) for i in getattr(cls, "inputs", []) or []}


def rows_of(frame):
    if frame is None:
        return []
    to_dict = getattr(frame, "to_dict", None)
    if to_dict is not None:
        return [row_dict(r) for r in to_dict("records")]
    data = getattr(frame, "data", frame)
    return [row_dict(r) for r in data]


def row_dict(row):
    """A DataFrame row: a dict, or a Data object (its ``.data``)."""
    data = getattr(row, "data", None)
    if isinstance(data, dict) and not isinstance(row, dict):
        return dict(data)
    return dict(row)


def row_content(row):
    """The bytes a row carries, or None (size and sha256 given instead)."""
    if row.get("text") is not None:
        return str(row["text"]).encode("utf-8")
    for key in ("base64", "content_base64"):
        if row.get(key) is not None:
            return base64.b64decode(row[key])
    content = row.get("content")
    if isinstance(content, str):
        return content.encode("utf-8")
    return content


def file_entry(row):
    """A collected_files() row -> {path (relative to /workspace), size, sha256}."""
    path = str(row.get("path") or row.get("name") or "")
    if path.startswith("/workspace/"):
        path = path[len("/workspace/"):]
    elif not path.startswith("artifacts/"):
        path = "artifacts/" + path.lstrip("/")
    content = row_content(row)
    size, sha = row.get("size"), row.get("sha256")
    if content is not None:
        size = len(content) if size is None else size
        sha = hashlib.sha256(content).hexdigest() if sha is None else sha
    if not isinstance(size, int) or not isinstance(sha, str):
        raise TypeError("collected_files() row %r has no size and sha256 (nor content)" % (row,))
    return {"path": path, "size": size, "sha256": sha.lower()}


def guest_name_of(sandbox_id):
    """The control-plane name of sandbox_id ("" when it cannot be read)."""
    base = os.environ.get("CREATEOS_SANDBOX_BASE_URL")
    key = os.environ.get("CREATEOS_SANDBOX_API_KEY") or os.environ.get("CREATEOS_API_KEY")
    if not base or not key or not sandbox_id:
        return ""
    req = urllib.request.Request(
        base.rstrip("/") + "/v1/sandboxes/" + urllib.parse.quote(sandbox_id, safe=""),
        headers={"X-Api-Key": key, "User-Agent": HARNESS_AGENT, "Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=15) as resp:
            doc = json.loads(resp.read().decode("utf-8"))
    except (urllib.error.URLError, OSError, ValueError) as e:
        lb.log("cannot read the name of %s: %s" % (sandbox_id, e))
        return ""
    data = doc.get("data") if isinstance(doc, dict) else None
    return str(data.get("name") or "") if isinstance(data, dict) else ""


class ComponentAdapter(lb.Adapter):
    """Dispatches protocol requests to a component class."""

    def op_hello(self, req):
        answer = lb.Adapter.op_hello(self, req)
        cls = self.backend
        name = getattr(cls, "name", None) or getattr(cls, "display_name", None) or cls.__name__
        answer.update({"name": str(name), "driver": DRIVER, "surfaces": ["component"]})
        return answer

    def op_component_run(self, req):
        cls = self.backend
        mode = req.get("mode")
        code = req.get("code")
        if mode not in ("python", "shell") or not isinstance(code, str):
            raise lb.ProtocolError("component_run: needs `mode` python|shell and a string `code`")
        names = input_names(cls)
        kwargs = {
            "python_code": code if mode == "python" else "",
            "command": code if mode == "shell" else "",
            "session_mode": "flow" if req.get("reuse") == "flow" else "off",
            "collect_artifacts": bool(req.get("return_files")),
            "allow_network": bool(req.get("allow_network")),
        }
        timeout = os.environ.get("LANGFLOW_SANDBOX_TIMEOUT_SECONDS", "").strip()
        if timeout.isdigit():
            kwargs["timeout_seconds"] = int(timeout)
        missing = sorted(k for k in kwargs if k not in names and k != "timeout_seconds")
        if missing:
            raise lb.ProtocolError("component_run: %s has no input(s) %s (see the spec's appendix)"
                                   % (cls.__name__, ", ".join(missing)))
        comp = cls(**{k: v for k, v in kwargs.items() if k in names})
        comp._id = str(req.get("component_id") or "")
        comp.graph = types.SimpleNamespace(flow_id=str(req.get("flow_id") or ""))
        data = comp.run_sandbox()
        fields = dict(getattr(data, "data", None) or {})
        error = fields.get("error")
        exit_code = fields.get("exit_code")
        if isinstance(exit_code, bool) or not isinstance(exit_code, int):
            exit_code = None
        if error and exit_code is None:
            m = TYPE_PREFIX.match(str(error))
            raise ComponentError(m.group(1) if m else "ComponentError", m.group(2) if m else str(error))
        if error:  # spec appendix: a non-zero exit is a result; `error` only informs
            lb.log("run_sandbox(): exit %d, error text %r (a result, not an error)" % (exit_code, str(error)[:200]))
        files = []
        if kwargs["collect_artifacts"]:
            files = [file_entry(r) for r in rows_of(comp.collected_files())]
        guest = fields.get("guest_name") or fields.get("sandbox_name") or \
            guest_name_of(str(fields.get("sandbox_id") or ""))
        return {"stdout": str(fields.get("result") or ""), "stderr": str(fields.get("stderr") or ""),
                "exit_code": exit_code,
                "files": files, "guest_name": guest}

    OPS = {
        "hello": op_hello,
        "component_run": op_component_run,
        "exit": lb.Adapter.op_exit,
    }


def error_object(exc):
    if isinstance(exc, ComponentError):
        return {"type": exc.etype, "message": str(exc)}
    return _plain_error_object(exc)


_plain_error_object = lb.error_object
lb.error_object = error_object  # ComponentError keeps the type the component named


def main(argv=None):
    import argparse

    parser = argparse.ArgumentParser(
        description="Serve a Langflow sandbox component class over the sbx-conform driver protocol v1.")
    parser.add_argument("--path", action="append", default=[], metavar="DIR",
                        help="add DIR to sys.path before importing (repeatable)")
    parser.add_argument("spec", metavar="MODULE:CLASS",
                        help="the component class, e.g. mypkg.components.createos:CreateOSSandboxComponent")
    args = parser.parse_args(argv)

    channel = lb.Channel()  # before the import: module-level prints go to stderr
    if use_lfx_standin():
        lb.log("lfx is not importable: using the adapter's stand-in (%s)"
               % os.path.join(HERE, "lfx_standin"))
    cls, load_error = None, None
    try:
        cls = lb.load_object(args.spec, args.path, "component must be given as MODULE:CLASS or FILE.py:CLASS")
        if not isinstance(cls, type):
            raise TypeError("%s is not a class" % args.spec)
    except Exception as e:
        lb.traceback.print_exc(file=sys.stderr)
        load_error = {"type": type(e).__name__, "message": "cannot load component %s: %s" % (args.spec, e)}
        lb.log(load_error["message"])
    return lb.serve(ComponentAdapter(cls, args.spec, load_error), channel)


if __name__ == "__main__":
    sys.exit(main())
