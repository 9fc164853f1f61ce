#!/usr/bin/env python3
"""devbox:1 on an unprivileged sbx-mock with enforced egress (mock-api/IMAGES.md
"Ownership"): the program enters a user namespace of its own (root in it,
mock-api/INTERNET.md) and must still find the image copy owned by its host
uid (`owned-<uid>`, made with build-image --owner UID); it looked for
owned-0 there, so every image was unusable and builds failed at setup.
GET /_mock/images says devbox:1 is usable, a one-RUN template builds on it
to ready with the simulated internet, and a sandbox on the template reads
what the RUN wrote.

Usage: images_userns_test.py SBX_MOCK HOSTS_JSON
ci/test's contain-unprivileged stage runs it as uid 65534.

Exit 0 pass, 1 fail, 77 skipped: run as root (the case is an unprivileged
mock's), no devbox:1 in the store, or egress not enforced here (the mock
then stays in the host's namespace, which test_images.c covers).
"""
import json
import os
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import egress_live_test as live  # noqa: E402  (the Mock harness)
import internet_tls_test as tls  # noqa: E402  (image_store)

SKIP = 77
KEY = "userns"
TOKEN = "userns-admin"


def follow(mock, tid):
    """The build's log, followed to its final event (the mock ends the
    stream there)."""
    req = urllib.request.Request(mock.url + "/v1/templates/%s/logs?follow=true" % tid)
    req.add_header("X-Api-Key", KEY)
    with urllib.request.urlopen(req, timeout=600) as r:
        return [json.loads(line) for line in r.read().decode().splitlines() if line.strip()]


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    if os.geteuid() == 0:
        print("SKIP: run as root; the case is an unprivileged sbx-mock's (ci/test contain-unprivileged)")
        return SKIP
    store = tls.image_store()
    if store is None:
        print("SKIP: no devbox:1 in the image store (mock-api/images/build-image devbox:1)")
        return SKIP
    mock = live.Mock(sys.argv[1], sys.argv[2], ("--images", store, "--admin-token", TOKEN))
    mock.token = TOKEN
    try:
        if not mock.enforced:
            print("SKIP: egress is not enforced here, so the mock stays in the host's user namespace")
            return SKIP
        st, b = mock.call("GET", "/_mock/images", admin=True)
        devbox = [i for i in b["data"]["images"] if i["name"] == "devbox:1"] if st == 200 else []
        if not devbox or not devbox[0]["usable"]:
            print("FAIL: devbox:1 is not usable by an unprivileged mock in its own namespace: %s" % (devbox or b))
            return 1
        st, b = mock.call("POST", "/v1/templates", {
            "name": "in-userns",
            "dockerfile": "FROM nodeops/sandbox:debian\nRUN echo built-in-userns > /etc/marker\n"}, key=KEY)
        if st != 200:
            print("FAIL: template create: %s %s" % (st, b))
            return 1
        events = follow(mock, b["data"]["id"])
        if events[-1] != {"final": True, "status": "ready"}:
            print("FAIL: the build did not end ready: %s" % events)
            return 1
        st, b = mock.call("POST", "/v1/sandboxes", {"shape": "s-1vcpu-1gb", "rootfs": "in-userns"}, key=KEY)
        if st != 200:
            print("FAIL: a sandbox on the template: %s %s" % (st, b))
            return 1
        st, r = mock.call("POST", "/v1/sandboxes/%s/exec" % b["data"]["id"],
                          {"cmd": "cat", "args": ["/etc/marker"]}, key=KEY, timeout=60)
        if st != 200 or r["data"]["result"]["stdout"] != "built-in-userns\n":
            print("FAIL: the sandbox on the template does not read the RUN's file: %s %s" % (st, r))
            return 1
        print("ok: devbox:1 served from owned-%d, a template built and booted, in the mock's own namespace"
              % os.geteuid())
        return 0
    finally:
        mock.stop()


if __name__ == "__main__":
    sys.exit(main())
