#!/usr/bin/env python3
"""The HTML report renders in headless Chromium: the page loads from a single
file, its script runs (the filter works through the URL hash), a failure row
shows its evidence (journal excerpt and driver stderr inside the row's
<details>), and hostile report strings stay text (no injected element or
script runs).

Chromium runs in a network namespace of its own with nothing but loopback
(unshare -n as root, else -r -n): headless and with every background
service flag it still sent ~80 packets out of the host's interface per
run (DNS and connections to Google's services), and a test's traffic goes
only to loopback. Where no such namespace can be made the test is
skipped, saying why, rather than run a browser that reaches the network.

Usage: html_chromium_test.py RENDER_BIN TEST_DIR   (exit 77 = skipped)
"""
import html.parser
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77


class Dom(html.parser.HTMLParser):
    """Collects check rows (their attributes and text) from a dumped DOM."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.rows = []          # [{"attrs": {...}, "text": str, "details_open": bool}]
        self.body = {}
        self.tags = set()
        self.text_by_id = {}
        self._row = None
        self._depth = 0         # nesting of <tr> inside the current check row
        self._id_stack = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.add(tag)
        if tag == "body":
            self.body = a
        if tag == "tr":
            if self._row is None and "check" in (a.get("class") or "").split():
                self._row = {"attrs": a, "text": "", "details_open": False,
                             "has_details": False}
                self._depth = 0
            elif self._row is not None:
                self._depth += 1
        if self._row is not None and tag == "details":
            self._row["has_details"] = True
            self._row["details_open"] = "open" in a
        self._id_stack.append(a.get("id"))

    def handle_endtag(self, tag):
        if self._id_stack:
            self._id_stack.pop()
        if tag == "tr" and self._row is not None:
            if self._depth == 0:
                self.rows.append(self._row)
                self._row = None
            else:
                self._depth -= 1

    def handle_data(self, data):
        if self._row is not None:
            self._row["text"] += data
        for ident in self._id_stack:
            if ident:
                self.text_by_id[ident] = self.text_by_id.get(ident, "") + data


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def offline():
    """The command prefix that runs a program in a new network namespace
    holding only loopback, checked by reading its interfaces; None when
    none can be made here."""
    for prefix in (["unshare", "-n", "--"], ["unshare", "-r", "-n", "--"]):
        if prefix == ["unshare", "-n", "--"] and os.geteuid() != 0:
            continue
        try:
            r = subprocess.run(prefix + ["cat", "/proc/net/dev"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        names = [line.split(":")[0].strip() for line in r.stdout.splitlines()[2:]]
        if r.returncode == 0 and names == ["lo"]:
            return prefix
    return None


OFFLINE = []


def dump_dom(browser, url, profile):
    cmd = OFFLINE + [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
           "--no-first-run", "--disable-background-networking",
           "--disable-component-update", "--disable-sync",
           "--user-data-dir=" + profile, "--dump-dom", url]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         timeout=90, check=False)
    if out.returncode != 0 or not out.stdout:
        sys.exit("FAIL: chromium exited %d with no DOM for %s\n%s"
                 % (out.returncode, url, out.stderr.decode(errors="replace")[-2000:]))
    dom = Dom()
    dom.feed(out.stdout.decode("utf-8"))
    return dom


def expect(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)


def row(dom, ident, profile="langflow-backend"):
    for r in dom.rows:
        if r["text"].startswith(ident + profile):
            return r
    sys.exit("FAIL: no row for %s (%s); rows: %s"
             % (ident, profile, [r["text"][:30] for r in dom.rows]))


def main():
    render, test_dir = sys.argv[1], sys.argv[2]
    browser = chromium()
    if browser is None:
        print("SKIP: chromium not found (Debian package chromium; ci/bootstrap installs it)")
        return SKIP
    prefix = offline()
    if prefix is None:
        print("SKIP: no network namespace can be made here (unshare -n, unshare -r -n): chromium is not "
              "run where it would reach the network")
        return SKIP
    OFFLINE[:] = prefix
    with tempfile.TemporaryDirectory(prefix="sbx-html-") as work:
        page = os.path.join(work, "report.html")
        subprocess.run([render, "html", os.path.join(test_dir, "fixture_report.json"), page],
                       check=True)
        url = "file://" + page

        # Unfiltered: every check shown, the script ran, nothing injected.
        dom = dump_dom(browser, url, os.path.join(work, "profile1"))
        expect(len(dom.rows) == 8, "expected 8 check rows, got %d" % len(dom.rows))
        expect(dom.body.get("data-filter") == "all",
               "the inline script did not run (body has no data-filter=all)")
        expect("data-pwned" not in dom.body, "a report string ran as script: %r" % dom.body)
        expect("img" not in dom.tags, "a report string became an <img> element")
        expect(dom.text_by_id.get("shown") == "8 of 8 checks shown",
               "shown counter: %r" % dom.text_by_id.get("shown"))
        expect(dom.text_by_id.get("result") == "FAIL", "result badge: %r" % dom.text_by_id.get("result"))
        expect(all("hidden" not in r["attrs"] for r in dom.rows), "rows hidden without a filter")
        fail = row(dom, "CAP-003")
        expect(fail["attrs"].get("data-verdict") == "fail", "CAP-003 row is not marked fail")
        expect(fail["has_details"], "the failure row has no <details> evidence")
        for mark in ("FAILMARK-CAP003", "JOURNALMARK-503", "/v1/sandboxes?x=<y>&z=1",
                     "STDERRMARK", "<script>document.body.dataset.pwned='script'</script>",
                     "trip-wire <img src=x onerror="):
            expect(mark in fail["text"], "failure row lacks its evidence %r" % mark)
        expect(not row(dom, "CAP-001")["has_details"], "a passing row carries evidence")

        # Filtered by hash: only the failure shows, with its evidence open.
        dom = dump_dom(browser, url + "#filter=fail", os.path.join(work, "profile2"))
        expect(dom.body.get("data-filter") == "fail", "the hash filter was not applied")
        shown = [r for r in dom.rows if "hidden" not in r["attrs"]]
        expect([r["text"][:7] for r in shown] == ["CAP-003"],
               "filter=fail shows %r" % [r["text"][:12] for r in shown])
        expect(shown[0]["details_open"], "filter=fail did not open the failure's evidence")
        expect(dom.text_by_id.get("shown") == "1 of 8 checks shown",
               "shown counter under filter: %r" % dom.text_by_id.get("shown"))

        dom = dump_dom(browser, url + "#filter=cleanup", os.path.join(work, "profile3"))
        shown = [r["text"][:7] for r in dom.rows if "hidden" not in r["attrs"]]
        expect(shown == ["CLN-001"], "filter=cleanup shows %r" % shown)

        # And it paints: a screenshot is a non-trivial PNG.
        shot = os.path.join(work, "shot.png")
        subprocess.run(OFFLINE + [browser, "--headless", "--no-sandbox", "--disable-gpu",
                        "--disable-quic", "--no-first-run", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync",
                        "--user-data-dir=" + os.path.join(work, "profile4"),
                        "--window-size=1280,1600", "--screenshot=" + shot, url],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=90,
                       check=False)
        with open(shot, "rb") as f:
            png = f.read()
        expect(png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10000,
               "screenshot is not a real PNG (%d bytes)" % len(png))
    print("ok: HTML report renders in headless Chromium; failure evidence shown; filters work")
    return 0


if __name__ == "__main__":
    sys.exit(main())
