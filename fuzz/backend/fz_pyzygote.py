"""fz_pyzygote: the Python drivers of the backend fuzzer as forks of one
waiting interpreter (the Python side of fz_zygote.c's protocol).

Why: with SBX_FUZZ_PYTHON_BACKEND every driver was `python3
langflow_backend.py MOD:FACTORY`, 65-110 ms on a quiet machine (the
interpreter, then json, urllib, http.client, ssl, email: what the adapter
and a CreateOS-style backend import), 0.3 s and more under load; and the
fuzzer starts a driver for a large share of its inputs (a fresh one in
eight, and every new combination of settings). This interpreter pays that
once: it imports the standard library modules and the adapter, never the
backend, and waits. Each driver is a fork that takes its request's
environment and descriptors and runs the adapter's main, which imports the
backend anew, so no backend state (its "verified" flag, a catalogue, a
lock) crosses from one driver to the next: each driver is a new process
for the once-per-process rules.

Usage (by fz_harness.c): python3 fz_pyzygote.py ADAPTER.py MOD:FACTORY
CACHE_DIR, with SBX_FUZZ_PY_ZYGOTE_FD naming a SOCK_SEQPACKET socket. A request is
one packet: the environment (NUL-separated KEY=VALUE) with stdin, stdout
and stderr as SCM_RIGHTS; the answer is the driver's pid as a native int32
(or -errno).

The driver must be the harness's child (the runner waits for it and kills
its process group), so the fork is a raw clone(CLONE_PARENT), as in
fz_zygote.c; sound for the same reason: this process is single-threaded
and holds no lock when it forks. Where the clone number is unknown the
zygote refuses to start and the harness starts drivers the usual way.
"""

import atexit
import ctypes
import errno
import importlib.util
import os
import platform
import socket
import struct
import sys

# What the adapter and a urllib-based backend import at start, paid once.
import argparse  # noqa: F401
import dataclasses  # noqa: F401
import enum  # noqa: F401
import http.client  # noqa: F401
import json  # noqa: F401
import secrets  # noqa: F401
import ssl  # noqa: F401
import threading  # noqa: F401
import traceback  # noqa: F401
import urllib.error  # noqa: F401
import urllib.parse  # noqa: F401
import urllib.request  # noqa: F401

CLONE_PARENT = 0x00008000
SIGCHLD = 17
NR_CLONE = {"x86_64": 56, "aarch64": 220}
ENV_BYTES_MAX = 256 * 1024


def load_adapter(path):
    spec = importlib.util.spec_from_file_location("fz_zygote_adapter", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def become_driver(sock, envbuf, fds, adapter_path, adapter, backend_spec):
    """In the child: the request's descriptors as 0-2, its environment, its
    own process group, the adapter's sys.path; returns the adapter's main."""
    sock.close()
    os.setpgid(0, 0)
    for k in range(3):
        os.dup2(fds[k], k)
    for f in fds:
        if f > 2:
            os.close(f)
    os.environ.clear()
    for item in envbuf.split(b"\0"):
        key, eq, value = item.partition(b"=")
        if key and eq:
            os.environb[key] = value
    sys.argv = [adapter_path, backend_spec]
    sys.path[0] = os.path.dirname(os.path.abspath(adapter_path))
    return lambda: adapter.main([backend_spec])


def serve(sock, adapter_path, adapter, backend_spec):
    """Answers requests until the harness closes its end; returns only in a
    driver (its job)."""
    libc = ctypes.CDLL(None, use_errno=True)
    nr_clone = NR_CLONE[platform.machine()]
    fdsize = struct.calcsize("3i")
    while True:
        try:
            data, anc, flags, _ = sock.recvmsg(ENV_BYTES_MAX, socket.CMSG_SPACE(fdsize))
        except InterruptedError:
            continue
        if not data and not anc:
            os._exit(0)  # the harness closed its end
        fds = []
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.extend(struct.unpack("%di" % (len(payload) // 4), payload[:len(payload) // 4 * 4]))
        if len(fds) != 3 or flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
            answer = -errno.EMSGSIZE
        else:
            pid = libc.syscall(nr_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0)
            if pid == 0:
                return become_driver(sock, data, fds, adapter_path, adapter, backend_spec)
            answer = pid if pid > 0 else -ctypes.get_errno()
        for f in fds:
            os.close(f)
        try:
            sock.send(struct.pack("i", answer))
        except OSError:
            os._exit(0)


def main():
    fd = int(os.environ.pop("SBX_FUZZ_PY_ZYGOTE_FD"))
    adapter_path, backend_spec, cache = sys.argv[1], sys.argv[2], sys.argv[3]
    # Each driver imports the backend anew; with PYTHONDONTWRITEBYTECODE
    # (set in CI) that compiled its source every time (8 ms of a 10 ms
    # start). The compiled code goes to the harness's scratch dir instead:
    # the same module, never written next to the source.
    sys.dont_write_bytecode = False
    sys.pycache_prefix = cache
    if platform.machine() not in NR_CLONE:
        sys.stderr.write("fz_pyzygote: no clone number for %s\n" % platform.machine())
        return None
    try:  # never outlive the harness (PR_SET_PDEATHSIG = 1)
        ctypes.CDLL(None).prctl(1, 9, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, fileno=fd)
    sock.set_inheritable(False)
    adapter = load_adapter(adapter_path)
    return serve(sock, adapter_path, adapter, backend_spec)


def run_driver(job):
    """The driver's life, then its exit as a process's own would be, minus the
    interpreter's teardown of the modules this zygote preloaded (most of
    a Python exit, and nothing a backend can observe): the backend's
    atexit handlers run and the streams are flushed."""
    try:
        rc = job()
    except SystemExit as e:
        rc = e.code
    threading._shutdown()  # non-daemon threads are waited for, as at a normal exit
    atexit._run_exitfuncs()
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except (OSError, ValueError):
            pass
    os._exit(rc if isinstance(rc, int) else (0 if rc is None else 1))


if __name__ == "__main__":
    job = main()
    if job is None:
        sys.exit(2)
    run_driver(job)
