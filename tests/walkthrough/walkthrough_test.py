#!/usr/bin/env python3
"""The README walkthroughs run as written (issue 19, items 18 and 24).

usage: walkthrough_test.py [--bin DIR]... DOC.md...

Every ```sh block between <!-- walkthrough:start --> and
<!-- walkthrough:end --> in each DOC runs, unchanged, under `sh -eu` in a
fresh temporary directory, with the built programs' directories (--bin)
first on PATH and no CREATEOS_* / SBX_MOCK_* variables inherited. A step
that fails fails the test. Every comment line that is "#", three spaces
and then a non-space ("#   sbxctl: ServerError: ...") is output the block
must show (prose continues comments with four or more spaces): it must
match one line of the block's output exactly, except that runs of spaces
(table alignment), loopback ports, sandbox ids, request ids and hex tokens
of 16 or more digits may differ, and "…" stands for any one word (a
timing). The block must stop everything it started (its process group is
empty afterwards; whatever is left is killed and the test fails). Proxy
variables point at a closed loopback port, so nothing leaves the machine.
"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

START, END = "<!-- walkthrough:start -->", "<!-- walkthrough:end -->"


def blocks(doc):
    text = open(doc, encoding="utf-8").read()
    out = []
    pos = 0
    while True:
        a = text.find(START, pos)
        if a < 0:
            return out
        b = text.find(END, a)
        if b < 0:
            sys.exit(f"{doc}: {START} without {END}")
        m = re.search(r"```sh\n(.*?)```", text[a:b], re.S)
        if m is None:
            sys.exit(f"{doc}: walkthrough markers without a ```sh block")
        out.append((text.count("\n", 0, a) + 1, m.group(1)))
        pos = b


TOKEN = re.compile(r"…|127\.0\.0\.1:\d+|sb-[0-9A-Z]{26}|req_[0-9a-f]+|[0-9a-f]{16,}|\s+|.", re.S)


def pattern(expected):
    parts = []
    for m in TOKEN.finditer(expected.strip()):
        t = m.group(0)
        if t == "…":
            parts.append(r"\S+")
        elif t.startswith("127.0.0.1:"):
            parts.append(r"127\.0\.0\.1:\d+")
        elif t.startswith("sb-"):
            parts.append(r"sb-[0-9A-Z]+")
        elif t.startswith("req_"):
            parts.append(r"req_[0-9a-f]+")
        elif len(t) >= 16 and re.fullmatch(r"[0-9a-f]+", t):
            parts.append(r"[0-9a-f]+")
        elif t.isspace():
            parts.append(r"\s+")
        else:
            parts.append(re.escape(t))
    return re.compile("".join(parts))


def group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def run_block(doc, line, script, bins):
    fails = []
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CREATEOS_", "SBX_MOCK_")) and k.lower() not in ("http_proxy", "https_proxy")}
    env["PATH"] = os.pathsep.join(bins + [env.get("PATH", "/usr/bin:/bin")])
    for k in ("http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"):
        env[k] = "http://127.0.0.1:1"
    env["no_proxy"] = "127.0.0.1,localhost"
    where = f"{doc}:{line}"
    with tempfile.TemporaryDirectory(prefix="sbx-walkthrough-") as tmp:
        p = subprocess.Popen(["sh", "-eu", "-c", script], cwd=tmp, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, start_new_session=True, text=True, errors="replace")
        try:
            out, _ = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
            fails.append(f"{where}: did not finish within 120 s")
        if p.returncode != 0:
            fails.append(f"{where}: exited {p.returncode}")
        deadline = time.monotonic() + 30
        while group_alive(p.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if group_alive(p.pid):
            os.killpg(p.pid, signal.SIGKILL)
            fails.append(f"{where}: left a process running")
    lines = out.splitlines()
    for exp in script.splitlines():
        if not re.match(r"#   \S", exp):
            continue
        pat = pattern(exp[4:])
        if not any(pat.fullmatch(got.strip()) for got in lines):
            fails.append(f"{where}: no output line looks like {exp[4:].strip()!r}")
    if fails:
        print(f"--- output of {where}:\n{out}--- end", file=sys.stderr)
    return fails


def main():
    args = sys.argv[1:]
    bins, docs = [], []
    while args:
        a = args.pop(0)
        if a == "--bin":
            bins.append(os.path.abspath(args.pop(0)))
        else:
            docs.append(a)
    fails = []
    count = 0
    for doc in docs:
        found = blocks(doc)
        if not found:
            fails.append(f"{doc}: no walkthrough block")
        for line, script in found:
            count += 1
            fails += run_block(doc, line, script, bins)
    for f in fails:
        print("FAIL:", f, file=sys.stderr)
    if fails:
        sys.exit(1)
    print(f"ok: {count} walkthrough block(s) ran as written")


main()
