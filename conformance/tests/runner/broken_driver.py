#!/usr/bin/env python3
"""A deliberately broken driver for the runner's own tests.

Answers hello and capabilities like a real backend, then misbehaves on the
first `run` as told by argv[1]: "crash" exits without answering, "hang"
sleeps forever (the runner must kill its process group), "garbage" writes a
line that is not a protocol answer. argv[2] is a marker for pgrep.
"""
import json
import sys
import time

MODE = sys.argv[1]


def answer(req, result):
    sys.stdout.write(json.dumps({"id": req["id"], "ok": True, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    req = json.loads(line)
    op = req.get("op")
    if op == "hello":
        answer(req, {"protocol": 1, "name": "broken", "driver": "broken_driver.py", "surfaces": ["backend"]})
    elif op == "capabilities":
        answer(req, {"isolation": "hardware-virtualized", "supports_deny_all_egress": True,
                     "supports_domain_allowlist": False, "max_timeout_seconds": None})
    elif op == "run":
        if MODE == "crash":
            sys.exit(3)
        if MODE == "hang":
            while True:
                time.sleep(1)
        sys.stdout.write("this is not json\n")
        sys.stdout.flush()
    elif op == "exit":
        answer(req, {})
        break
    else:
        answer(req, {})
