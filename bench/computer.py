#!/usr/bin/env python3
"""Computer-use latencies on desktop:1 (mock-api/COMPUTER.md), over loopback:
a screenshot at 1280x800 (p50, p90), a mouse move then a cursor read (p50),
and a desktop:1 create to its first screenshot (each of a few creates).

Usage: bench/computer.py SBX_MOCK [ROUNDS]   (needs desktop:1 built; as
tests/python_sdk/test_desktop.py finds the store)."""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python_sdk"))
import test_desktop as td  # noqa: E402


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    td.MOCK_BIN = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    store = td.image_store()
    if not td.desktop_built(store):
        print("SKIP: desktop:1 is not built in " + store)
        return 77
    mock = td.start_mock(store)
    try:
        firsts = []
        for _ in range(3):
            t0 = time.monotonic()
            sid = td.call(mock, "POST", "/v1/sandboxes", {"shape": "s-2vcpu-4gb", "rootfs": "desktop:1"})["id"]
            path = "/v1/sandboxes/%s/computer" % sid
            td.poll("first screenshot", lambda: td.call(mock, "GET", path + "/screenshot", raw=True), every=0.01)
            firsts.append((time.monotonic() - t0) * 1000)
            td.call(mock, "DELETE", "/v1/sandboxes/" + sid)
        sid = td.call(mock, "POST", "/v1/sandboxes", {"shape": "s-2vcpu-4gb", "rootfs": "desktop:1"})["id"]
        path = "/v1/sandboxes/%s/computer" % sid
        td.poll("desktop", lambda: td.call(mock, "GET", path + "/screen"))
        shots, moves = [], []
        for i in range(rounds):
            t0 = time.monotonic()
            td.call(mock, "GET", path + "/screenshot", raw=True)
            shots.append((time.monotonic() - t0) * 1000)
        for i in range(rounds):
            pt = {"x": 100 + i % 500, "y": 100 + i % 300}
            t0 = time.monotonic()
            td.call(mock, "POST", path + "/mouse/move", pt)
            got = td.call(mock, "GET", path + "/cursor")
            moves.append((time.monotonic() - t0) * 1000)
            assert got == pt, (got, pt)
        print("screenshot 1280x800: p50 %.1f ms, p90 %.1f ms (%d)" % (
            statistics.median(shots), pct(shots, 0.9), rounds))
        print("mouse move -> cursor read: p50 %.1f ms, p90 %.1f ms (%d)" % (
            statistics.median(moves), pct(moves, 0.9), rounds))
        print("desktop:1 create -> first screenshot: %s ms" % ", ".join("%.0f" % f for f in firsts))
    finally:
        mock.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
