#!/usr/bin/env python3
"""Early answers read by a client still sending (issue 40), with Python's
http.client, which sends the whole body before it reads (no
Expect: 100-continue):
  - a JSON body 2 MiB over --max-body: the 413 JSend is read, not EPIPE or
    ECONNRESET (the mock closes gracefully: answer, write side shut, the
    rest read and dropped);
  - a file upload 2 MiB over --max-file-body: the same;
  - a sender that never stops after the answer is cut at the mock's
    lingering bound: its sends end in an error, it is not read forever.
Usage: early_answer_test.py SBX_MOCK_BIN"""
import http.client
import json
import socket
import subprocess
import sys

MAX_BODY = 1024 * 1024
MAX_FILE = 1024 * 1024  # small, so that the test sends little


def start(binary):
    proc = subprocess.Popen([binary, "--listen", "127.0.0.1:0", "--quiet",
                             "--max-file-body", str(MAX_FILE)],
                            stdout=subprocess.PIPE, text=True)
    for line in proc.stdout:
        if line.startswith("sbx-mock listening on http://"):
            host_port = line.split("http://", 1)[1].strip()
            return proc, int(host_port.rsplit(":", 1)[1])
    proc.wait()
    sys.exit("sbx-mock did not print its URL (exit %s)" % proc.returncode)


def request(port, method, path, body, ctype):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, body=body,
                     headers={"Content-Type": ctype, "X-Api-Key": "py"})
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


def expect_413(what, status, headers, body, limit):
    want = {"status": "fail", "data": {
        "body": "request body is over the %d-byte limit" % limit, "code": "PAYLOAD_TOO_LARGE"}}
    if status != 413 or json.loads(body) != want or headers.get("Connection") != "close":
        sys.exit("%s: want 413 %s with Connection: close, got %s %s %s"
                 % (what, json.dumps(want), status, headers, body[:300]))
    print("ok: %s: 413 read" % what)


def endless_sender_is_cut(port):
    """Declares 1 GiB, reads the 413 while sending, then keeps sending: the
    mock must stop reading at its bound (the sends fail), not read on."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(b"POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 1073741824\r\n\r\n")
    chunk = b" " * 65536
    try:
        for _ in range(1073741824 // len(chunk)):
            sock.sendall(chunk)
    except OSError as e:
        print("ok: an endless sender is cut at the bound (%s)" % type(e).__name__)
        return
    finally:
        sock.close()
    sys.exit("the mock read a 1 GiB body it had answered 413 to its end")


def main():
    proc, port = start(sys.argv[1])
    try:
        status, headers, body = request(port, "POST", "/v1/sandboxes",
                                        b'{"shape":"s-1vcpu-256mb","pad":"' +
                                        b"x" * (MAX_BODY + 2 * 1024 * 1024) + b'"}',
                                        "application/json")
        expect_413("a JSON body 2 MiB over the limit", status, headers, body, MAX_BODY)
        status, _, body = request(port, "POST", "/v1/sandboxes", b'{"shape":"s-1vcpu-256mb"}',
                                  "application/json")
        if status != 200:
            sys.exit("create: %s %s" % (status, body[:300]))
        sid = json.loads(body)["data"]["id"]
        status, headers, body = request(port, "PUT", "/v1/sandboxes/%s/files?path=/tmp/big" % sid,
                                        b"\0" * (MAX_FILE + 2 * 1024 * 1024),
                                        "application/octet-stream")
        expect_413("an upload 2 MiB over the file limit", status, headers, body, MAX_FILE)
        endless_sender_is_cut(port)
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
