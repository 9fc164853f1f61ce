#!/usr/bin/env python3
"""A deliberately broken driver for the runner's own tests.

Answers hello and capabilities like a real backend, then misbehaves on the
first `run` as told by argv[1]: "crash" exits without answering, "hang"
sleeps forever (the runner must kill its process group), "garbage" writes a
line that is not a protocol answer, "wrong-id" answers with the next id,
"frac-id" with the id plus 0.5 (must not match through an integer
conversion), "flood" writes 30 MB of stderr on one line and then exits.
Modes that break hello: "proto2" announces protocol 2, "noproto" announces
none, "abort" writes a line to stderr and kills itself with SIGABRT.
argv[2] is a marker for pgrep.
"""
import json
import os
import signal
import sys
import time

MODE = sys.argv[1]


def answer(req, result, rid=None):
    sys.stdout.write(json.dumps({"id": req["id"] if rid is None else rid, "ok": True, "result": result}) + "\n")
    sys.stdout.flush()


def hello(req):
    result = {"protocol": 1, "name": "broken", "driver": "broken_driver.py", "surfaces": ["backend"]}
    if MODE == "proto2":
        result["protocol"] = 2
    elif MODE == "noproto":
        del result["protocol"]
    elif MODE == "abort":
        sys.stderr.write("broken driver: giving up on hello\n")
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGABRT)
    answer(req, result)


def run(req):
    if MODE == "crash":
        sys.exit(3)
    if MODE == "hang":
        while True:
            time.sleep(1)
    if MODE == "wrong-id":
        answer(req, {"stdout": "", "stderr": "", "exit_code": 0, "execution_time_ms": None}, req["id"] + 1)
        return
    if MODE == "frac-id":
        answer(req, {"stdout": "", "stderr": "", "exit_code": 0, "execution_time_ms": None}, req["id"] + 0.5)
        return
    if MODE == "flood":
        chunk = "x" * (1 << 20)
        for _ in range(30):
            sys.stderr.write(chunk)
        sys.stderr.write("\nflood-end-marker\n")
        sys.stderr.flush()
        sys.exit(3)
    sys.stdout.write("this is not json\n")
    sys.stdout.flush()


for line in sys.stdin:
    req = json.loads(line)
    op = req.get("op")
    if op == "hello":
        hello(req)
    elif op == "capabilities":
        answer(req, {"isolation": "hardware-virtualized", "supports_deny_all_egress": True,
                     "supports_domain_allowlist": False, "max_timeout_seconds": None})
    elif op == "run":
        run(req)
    elif op == "exit":
        answer(req, {})
        break
    else:
        answer(req, {})
