#!/usr/bin/env python3
"""Serve a Langflow sandbox backend over the sbx-conform driver protocol v1.

    python3 langflow_backend.py [--path DIR]... MODULE:FACTORY
    python3 langflow_backend.py [--path DIR]... path/to/FILE.py:FACTORY

Imports MODULE (sys.path gets the current directory and every --path DIR;
for FILE.py, its directory too),
gets the backend object from FACTORY (called with no arguments when
callable, used as is otherwise; dotted names such as ``Cls.create`` work) and
answers protocol requests, one JSON object per line, from stdin to stdout.

Written against the standard library only, so it runs where Langflow is not
installed. It never imports lfx: capabilities and results are read by
attribute name (the real dataclasses and look-alikes both work; missing
capability attributes take Langflow's defaults, which grant nothing), and
errors are classified by class name along the MRO, so a
``SandboxUnavailableError`` is recognised wherever it is defined.

Stdout belongs to the protocol alone: at start the real stdout descriptor is
moved to a private descriptor and fd 1 (and sys.stdout) point at stderr, so a
backend that prints, or a subprocess it starts, cannot corrupt the stream.
Stdin is moved the same way and fd 0 reads /dev/null.

Requests are answered strictly in order. Concurrency (CON-001) goes through
``run_concurrent {"runs": [{"code", "env"}...]}``: one thread per run, one
answer with every outcome, like the C driver library. See README.md.
"""

import argparse
import enum
import importlib
import importlib.util
import json
import os
import sys
import threading
import traceback

PROTOCOL = 1
DRIVER = "langflow_backend.py 1.0 (python %d.%d)" % sys.version_info[:2]
MAX_LINE = 16 * 1024 * 1024
MAX_CONCURRENT = 32
UNAVAILABLE = "SandboxUnavailableError"
EXECUTION = "SandboxExecutionError"

# Langflow's Capabilities defaults: every default grants nothing.
CAPABILITY_DEFAULTS = (
    ("isolation", "none"),
    ("supports_deny_all_egress", False),
    ("supports_domain_allowlist", False),
    ("max_timeout_seconds", None),
)


class ProtocolError(Exception):
    """A request the adapter cannot understand (answered, never fatal)."""


def log(msg):
    sys.stderr.write("langflow_backend.py: %s\n" % msg)
    sys.stderr.flush()


def classify(exc):
    """Error type by class name along the MRO: a class named
    SandboxUnavailableError anywhere wins, then SandboxExecutionError, else the
    exception's own class name."""
    names = [cls.__name__ for cls in type(exc).__mro__]
    if UNAVAILABLE in names:
        return UNAVAILABLE
    if EXECUTION in names:
        return EXECUTION
    return type(exc).__name__


def error_object(exc):
    return {"type": classify(exc), "message": str(exc)}


def plain(value):
    """A JSON-safe rendering of an attribute value, kept as close to the
    original as JSON allows (enums give their value, bytes are decoded)."""
    if isinstance(value, enum.Enum):
        value = value.value
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace")
    return str(value)


def read_attr(obj, name, default):
    """Attribute by name; a Mapping is read by key, for dict-shaped look-alikes."""
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def capabilities_dict(caps):
    return {name: plain(read_attr(caps, name, default))
            for name, default in CAPABILITY_DEFAULTS}


_MISSING = object()


def result_dict(res):
    out = {}
    for name in ("stdout", "stderr", "exit_code"):
        value = read_attr(res, name, _MISSING)
        if value is _MISSING:
            raise TypeError("run() returned %s without the attribute %r"
                            % (type(res).__name__, name))
        out[name] = plain(value)
    out["execution_time_ms"] = plain(read_attr(res, "execution_time_ms", None))
    return out


def load_backend(spec, paths):
    """module:factory -> backend object (the factory called when callable)."""
    obj = load_object(spec, paths, "backend must be given as MODULE:FACTORY or FILE.py:FACTORY")
    return obj() if callable(obj) else obj


def load_object(spec, paths, usage):
    """module:attr -> the attribute, uncalled. The module part may also be a
    file (path/to/backend.py:attr); its directory then joins sys.path."""
    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        raise ValueError("%s, got %r" % (usage, spec))
    extra = [os.getcwd()] + [os.path.abspath(p) for p in paths]
    from_file = module_name.endswith(".py") or os.sep in module_name
    if from_file:
        extra.insert(0, os.path.dirname(os.path.abspath(module_name)))
    for p in reversed(extra):
        if p not in sys.path:
            sys.path.insert(0, p)
    if from_file:
        name = os.path.splitext(os.path.basename(module_name))[0]
        loader_spec = importlib.util.spec_from_file_location(name, os.path.abspath(module_name))
        if loader_spec is None:
            raise ImportError("cannot import %s: not a Python file" % module_name)
        obj = importlib.util.module_from_spec(loader_spec)
        sys.modules[name] = obj
        loader_spec.loader.exec_module(obj)
    else:
        obj = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


class Adapter:
    """Dispatches protocol requests to one backend object."""

    def __init__(self, backend, spec, load_error=None):
        self.backend = backend
        self.spec = spec
        self.load_error = load_error
        self.exit_requested = False

    # -- ops ---------------------------------------------------------------

    def op_hello(self, req):
        version = req.get("protocol", PROTOCOL)
        if version != PROTOCOL or isinstance(version, bool):
            raise ProtocolError("hello: protocol %r is not served (this adapter speaks %d)"
                                % (version, PROTOCOL))
        name = read_attr(self.backend, "name", None) or self.spec
        return {"protocol": PROTOCOL, "name": str(plain(name)), "driver": DRIVER,
                "surfaces": ["backend"]}

    def op_capabilities(self, req):
        return capabilities_dict(self.backend.capabilities())

    def _run(self, code, env):
        return result_dict(self.backend.run(code, env=env))

    def op_run(self, req):
        code, env = run_fields(req, "run")
        return self._run(code, env)

    def op_shutdown(self, req):
        shutdown = getattr(self.backend, "shutdown", None)
        if shutdown is not None:
            shutdown()
        return {}

    def op_exit(self, req):
        self.exit_requested = True
        return {}

    def op_run_concurrent(self, req):
        runs = req.get("runs")
        if not isinstance(runs, list) or not 1 <= len(runs) <= MAX_CONCURRENT:
            raise ProtocolError("run_concurrent: `runs` must be an array of 1..%d runs"
                                % MAX_CONCURRENT)
        jobs = [run_fields(item if isinstance(item, dict) else {},
                           "run_concurrent: runs[%d]" % i) for i, item in enumerate(runs)]
        outcomes = [None] * len(jobs)
        start = threading.Barrier(len(jobs))

        def worker(i, code, env):
            try:
                start.wait(timeout=10)
            except threading.BrokenBarrierError:
                pass
            outcomes[i] = outcome(lambda: self._run(code, env))

        threads = [threading.Thread(target=worker, args=(i, code, env), daemon=True)
                   for i, (code, env) in enumerate(jobs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return {"results": outcomes}

    def op_fork_check(self, req):
        code, _ = run_fields(req, "fork_check")
        rfd, wfd = os.pipe()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # child: never returns
            status = 0
            try:
                os.close(rfd)

                def child_run():
                    reset = getattr(self.backend, "reset_after_fork", None)
                    if reset is not None:
                        reset()
                    return self._run(code, None)

                data = json.dumps(outcome(child_run)).encode("utf-8")
                while data:
                    data = data[os.write(wfd, data):]
            except BaseException:  # noqa: B902 - the child must always exit
                traceback.print_exc()
                status = 1
            finally:
                try:
                    sys.stderr.flush()
                finally:
                    os._exit(status)
        os.close(wfd)
        chunks = []
        with os.fdopen(rfd, "rb") as r:
            while True:
                chunk = r.read(65536)
                if not chunk:
                    break
                chunks.append(chunk)
        _, status = os.waitpid(pid, 0)
        try:
            child = json.loads(b"".join(chunks).decode("utf-8"))
        except ValueError:
            child = None
        if not isinstance(child, dict):
            raise SandboxExecutionError("fork_check: child %d reported nothing (wait status %d)"
                                   % (pid, status))
        return {"child": child, "child_pid": pid}

    # -- dispatch ----------------------------------------------------------

    OPS = {
        "hello": op_hello,
        "capabilities": op_capabilities,
        "run": op_run,
        "shutdown": op_shutdown,
        "fork_check": op_fork_check,
        "run_concurrent": op_run_concurrent,
        "exit": op_exit,
    }

    def handle(self, line):
        """One request line (bytes) -> one answer object."""
        try:
            req = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            return protocol_error(None, "request is not JSON: %s" % e)
        if not isinstance(req, dict):
            return protocol_error(None, "request must be a JSON object")
        rid = req.get("id")
        if not isinstance(rid, int) or isinstance(rid, bool):
            return protocol_error(None, "request needs an integer `id`")
        if abs(rid) > MAX_ID:
            return protocol_error(None, "`id` must be an integer of at most 2^53 - 1 in magnitude")
        op = req.get("op")
        if not isinstance(op, str):
            return protocol_error(rid, "request needs a string `op`")
        fn = self.OPS.get(op)
        if fn is None:
            return protocol_error(rid, "unknown or unserved op `%s`" % op[:64])
        if self.load_error is not None and op != "exit":
            return {"id": rid, "ok": False, "error": self.load_error}
        try:
            return {"id": rid, "ok": True, "result": fn(self, req)}
        except ProtocolError as e:
            return protocol_error(rid, str(e))
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # every backend failure (even sys.exit) is an answer
            log("%s raised %s: %s" % (op, type(e).__name__, e))
            traceback.print_exc(file=sys.stderr)
            return {"id": rid, "ok": False, "error": error_object(e)}


class SandboxExecutionError(Exception):
    """Adapter-side infrastructure failure (a fork_check child that reported
    nothing); a look-alike of Langflow's class, classified by name."""


def run_fields(req, what):
    code = req.get("code")
    if not isinstance(code, str):
        raise ProtocolError("%s: missing string field `code`" % what)
    env = req.get("env")
    if env is not None and not isinstance(env, dict):
        raise ProtocolError("%s: `env` must be an object or null" % what)
    if env is not None and not all(isinstance(v, str) for v in env.values()):
        raise ProtocolError("%s: `env` values must be strings" % what)
    return code, env


def outcome(fn):
    """{"ok": true, "result": ...} or {"ok": false, "error": {...}}."""
    try:
        return {"ok": True, "result": fn()}
    except KeyboardInterrupt:
        raise
    except BaseException as e:
        traceback.print_exc(file=sys.stderr)
        return {"ok": False, "error": error_object(e)}


# Ids every JSON parser reads exactly (the C driver library's bound too).
MAX_ID = 2**53 - 1


def protocol_error(rid, message):
    return {"id": rid, "ok": False, "error": {"type": "ProtocolError", "message": message}}


class Channel:
    """The protocol streams on private descriptors: fd 0 and fd 1 are handed
    to /dev/null and stderr, so nothing the backend does can read requests or
    write into answers."""

    def __init__(self):
        self.out_fd = os.dup(1)  # non-inheritable: subprocesses never get it
        self.in_fd = os.dup(0)
        os.dup2(2, 1)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        sys.stdout = sys.stderr
        self.reader = os.fdopen(self.in_fd, "rb", buffering=65536)
        self.lock = threading.Lock()

    TOO_LONG = object()

    def read_line(self):
        """Next request line without its line ending; None at EOF; TOO_LONG
        when the line exceeded MAX_LINE (its rest is read and discarded)."""
        line = self.reader.readline(MAX_LINE + 1)
        if not line:
            return None
        if len(line) > MAX_LINE and not line.endswith(b"\n"):
            while True:
                rest = self.reader.readline(65536)
                if not rest or rest.endswith(b"\n"):
                    break
            return self.TOO_LONG
        return line.rstrip(b"\r\n")

    def write(self, answer):
        data = (json.dumps(answer, ensure_ascii=False, separators=(",", ":"),
                           allow_nan=False, default=str) + "\n").encode("utf-8", "replace")
        with self.lock:
            while data:
                data = data[os.write(self.out_fd, data):]


def serve(adapter, channel):
    while not adapter.exit_requested:
        line = channel.read_line()
        if line is None:
            break
        if line is Channel.TOO_LONG:
            channel.write(protocol_error(None, "request line longer than %d bytes" % MAX_LINE))
            continue
        if not line.strip():
            continue
        channel.write(adapter.handle(line))
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Serve a Langflow sandbox backend over the sbx-conform driver protocol v1.")
    parser.add_argument("--path", action="append", default=[], metavar="DIR",
                        help="add DIR to sys.path before importing (repeatable)")
    parser.add_argument("spec", metavar="MODULE:FACTORY",
                        help="where the backend comes from, e.g. mypkg.sandbox:create_backend")
    args = parser.parse_args(argv)

    channel = Channel()  # before the import: module-level prints go to stderr
    backend, load_error = None, None
    try:
        backend = load_backend(args.spec, args.path)
    except Exception as e:
        traceback.print_exc(file=sys.stderr)
        load_error = {"type": type(e).__name__,
                      "message": "cannot load backend %s: %s" % (args.spec, e)}
        log(load_error["message"])
    return serve(Adapter(backend, args.spec, load_error), channel)


if __name__ == "__main__":
    sys.exit(main())
