"""Look-alike Langflow backends for the adapter tests. None of them imports
lfx; their error classes are defined here, in hierarchies that differ from
Langflow's, to prove classification goes by class name along the MRO.
Runs never execute the code: `code` is a small command language."""

import collections
import os
import subprocess
import sys
import threading
import types

print("IMPORT-NOISE on stdout while importing")  # must not reach the protocol


class SandboxUnavailableError(Exception):
    """Deliberately NOT a subclass of anything named SandboxExecutionError."""


class TenantGone(SandboxUnavailableError):
    pass


class SandboxExecutionError(RuntimeError):
    pass


class GuestCrashed(SandboxExecutionError):
    pass


Result = collections.namedtuple("Result", "stdout stderr exit_code execution_time_ms")


class Plain:
    """Result object with attributes only (no execution_time_ms)."""

    def __init__(self, stdout, stderr, exit_code):
        self.stdout, self.stderr, self.exit_code = stdout, stderr, exit_code


class Echo:
    name = "echo-lookalike"

    def __init__(self):
        self.creator_pid = os.getpid()
        self.reset_pid = None
        self.lock = threading.Lock()
        self.shutdowns = 0
        self.barrier = None

    def capabilities(self):
        # Only one attribute: the others must take Langflow's defaults.
        return types.SimpleNamespace(isolation="hardware-virtualized")

    def run(self, code, *, env=None):
        cmd, _, arg = code.partition(":")
        if cmd == "echo":
            return Result(arg, "", 0, 7)
        if cmd == "env":
            return Plain("|".join("%s=%s" % kv for kv in sorted((env or {}).items())), "", 0)
        if cmd == "exit":
            return Result("", "bye", int(arg), None)
        if cmd == "unavailable":
            raise TenantGone("refused: " + arg)
        if cmd == "execution":
            raise GuestCrashed("crashed: " + arg)
        if cmd == "value":
            raise ValueError("odd: " + arg)
        if cmd == "sysexit":
            sys.exit(3)
        if cmd == "noisy":
            print("PRINT-NOISE")
            sys.stdout.flush()
            os.write(1, b"FD1-NOISE\n")
            subprocess.run(["echo", "SUBPROCESS-NOISE"], check=True)
            return Result("quiet", "", 0, 1)
        if cmd == "pid":
            with self.lock:  # a lock held by another thread at fork must not deadlock
                pass
            return Result("pid=%d reset=%s creator=%d" % (os.getpid(), self.reset_pid,
                                                         self.creator_pid), "", 0, 1)
        if cmd == "together":
            # Succeeds only when int(arg) runs are inside run() at the same time.
            with self.lock:
                if self.barrier is None:
                    self.barrier = threading.Barrier(int(arg))
                barrier = self.barrier
            barrier.wait(timeout=10)
            return Result("together:%d" % threading.get_ident(), "", 0, 1)
        if cmd == "bytes":
            return Result(b"caf\xc3\xa9 \xff", "", 0, 1)
        if cmd == "noattr":
            return types.SimpleNamespace(stdout="x", exit_code=0)
        return Result("", "unknown command " + code, 2, 1)

    def shutdown(self):
        self.shutdowns += 1

    def reset_after_fork(self):
        self.reset_pid = os.getpid()
        self.lock = threading.Lock()


def make_echo():
    return Echo()


class Factory:
    @staticmethod
    def create():
        return Echo()


class DictCaps(Echo):
    name = "dict-caps"

    def capabilities(self):
        return {"isolation": "container", "supports_deny_all_egress": True,
                "max_timeout_seconds": 120}


class NoCaps(Echo):
    name = ""

    def capabilities(self):
        return object()


ready_made = DictCaps()
