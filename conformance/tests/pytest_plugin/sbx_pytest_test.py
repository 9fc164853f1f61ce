#!/usr/bin/env python3
"""Tests of the pytest plugin conformance/adapters/sbx_harness/sbx_pytest.py (ctest
conform_pytest_plugin; labels python, integration).

    sbx_pytest_test.py SBX_CONFORM

Runs pytest (Debian's python3-pytest; any interpreter that imports pytest:
$SBX_PYTEST_PYTHON, this one, /usr/bin/python3, python3 on PATH) in scratch
directories with -p sbx_pytest:

  - the example backend (conformance/adapters/examples/) passes: exit 0, one
    JUnit testcase per check of sbx-conform's own report, named by its id,
    none failed, skips carry their reason;
  - the mutant fallback_backend.py (runs code on the host when the control
    plane is down) fails exactly FB-001, by id, with the reason and evidence;
  - the same from pytest.ini instead of options; --collect-only lists the
    checks without running them; -k deselects by id; a missing binary is a
    collection error (exit 2) that says so; without a backend the plugin
    adds nothing (exit 5, no tests).

Exit 77 (skipped) when no interpreter has pytest.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
ADAPTERS = os.path.normpath(os.path.join(HERE, "..", "..", "adapters"))
PLUGIN_DIR = os.path.join(ADAPTERS, "sbx_harness")  # on PYTHONPATH: -p sbx_pytest imports it
EXAMPLE = os.path.join(ADAPTERS, "examples", "createos_backend.py") + ":create_backend"
MUTANT = os.path.join(HERE, "fallback_backend.py") + ":create_backend"


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def find_python():
    candidates = [os.environ.get("SBX_PYTEST_PYTHON"), sys.executable, "/usr/bin/python3",
                  shutil.which("python3")]
    for py in candidates:
        if py and os.access(py, os.X_OK) and subprocess.run(
                [py, "-c", "import pytest"], stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL).returncode == 0:
            return py
    return None


class Pytest:
    def __init__(self, python, conform):
        self.python, self.conform = python, conform

    def __call__(self, args, expect_rc, what, ini=None, env_conform=True):
        work = tempfile.mkdtemp(prefix="sbx-pytest-test-")
        try:
            if ini is not None:
                with open(os.path.join(work, "pytest.ini"), "w") as f:
                    f.write(ini)
            env = dict(os.environ, PYTHONPATH=PLUGIN_DIR, PYTHONDONTWRITEBYTECODE="1", NO_COLOR="1")
            env.pop("SBX_CONFORM", None)
            if env_conform:
                env["SBX_CONFORM"] = self.conform
            junit = os.path.join(work, "junit.xml")
            cmd = [self.python, "-m", "pytest", "-p", "no:cacheprovider", "-rsx",
                   "--junitxml=" + junit] + args
            p = subprocess.run(cmd, cwd=work, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, timeout=900)
            if p.returncode != expect_rc:
                fail("%s: pytest exited %d, expected %d\n%s\n%s"
                     % (what, p.returncode, expect_rc, " ".join(cmd), p.stdout[-6000:]))
            cases = {}
            if os.path.exists(junit):
                for tc in ET.parse(junit).getroot().iter("testcase"):
                    outcome = "passed"
                    for tag in ("failure", "error", "skipped"):
                        el = tc.find(tag)
                        if el is not None:
                            outcome = (tag, (el.get("message") or "") + "\n" + (el.text or ""))
                    cases[tc.get("name")] = outcome
            report = None
            if os.path.exists(os.path.join(work, "report.json")):
                with open(os.path.join(work, "report.json")) as f:
                    report = json.load(f)
            return p.stdout, cases, report
        finally:
            shutil.rmtree(work, ignore_errors=True)


def test_example_passes(pt):
    out, cases, report = pt(["-p", "sbx_pytest", "--sbx-python-backend", EXAMPLE,
                             "--sbx-json", "report.json"], 0, "example backend")
    if report is None:
        fail("--sbx-json report.json did not keep the report")
    ids = [c["id"] for c in report["checks"]]
    if sorted(cases) != sorted(ids):
        fail("pytest items %s are not the report's checks %s" % (sorted(cases), sorted(ids)))
    bad = {k: v for k, v in cases.items() if v != "passed" and v[0] != "skipped"}
    if bad:
        fail("the example backend failed items: %s" % bad)
    for c in report["checks"]:
        if c["verdict"] == "skip" and (cases[c["id"]][0] != "skipped" or c["reason"] not in cases[c["id"]][1]):
            fail("%s: skipped by sbx-conform (%s) but pytest shows %r" % (c["id"], c["reason"], cases[c["id"]]))
    if "sbx-conform::FB-001" not in out and "FB-001" not in cases:
        fail("no FB-001 item")
    print("ok: example backend passes: %d items named by id (%d skipped with their reason)"
          % (len(cases), sum(1 for v in cases.values() if v != "passed")))


def test_mutant_fails_fb001(pt):
    out, cases, _ = pt(["-p", "sbx_pytest", "--sbx-python-backend", MUTANT, "--sbx-profile",
                        "langflow-backend", "--sbx-filter", "FB-*"], 1, "fallback mutant")
    failed = sorted(k for k, v in cases.items() if v != "passed")
    if failed != ["FB-001"]:
        fail("the mutant should fail exactly FB-001, not %s\n%s" % (failed, out[-4000:]))
    text = cases["FB-001"][1]
    for needle in ("control plane down", "the code ran", "trip-wire", "clause: backend-conformance.md#checks FB-001"):
        if needle not in text and needle not in out:
            fail("FB-001's failure does not show %r:\n%s" % (needle, text))
    if "FAILED sbx-conform::FB-001" not in out and "sbx-conform::FB-001 FAILED" not in out \
            and "FB-001 (langflow-backend) FAIL" not in out:
        fail("pytest's output does not name FB-001 as failed:\n" + out[-3000:])
    print("ok: the fallback mutant fails item FB-001 (reason and evidence shown), %d others pass"
          % (len(cases) - 1))


def test_ini(pt):
    ini = ("[pytest]\naddopts = -p sbx_pytest\nsbx_python_backend = %s\n"
           "sbx_profile = langflow-backend\nsbx_filter =\n    FB-001\n    FB-002\n" % MUTANT)
    _, cases, _ = pt([], 1, "pytest.ini configuration", ini=ini)
    if sorted(cases) != ["FB-001", "FB-002"] or cases["FB-002"] != "passed" or cases["FB-001"][0] != "failure":
        fail("from pytest.ini: expected FB-001 failed and FB-002 passed, got %s" % cases)
    print("ok: pytest.ini options (sbx_python_backend, sbx_profile, sbx_filter) work")


def test_deselect(pt):
    _, cases, _ = pt(["-p", "sbx_pytest", "--sbx-python-backend", MUTANT, "--sbx-profile",
                      "langflow-backend", "--sbx-filter", "FB-00[12]", "-k", "not FB-001"], 0, "-k deselection")
    if list(cases) != ["FB-002"]:
        fail("-k 'not FB-001' left %s" % list(cases))
    print("ok: -k deselects items by check id")


def test_collect_only(pt):
    out, _, _ = pt(["-p", "sbx_pytest", "--sbx-python-backend", MUTANT, "--sbx-profile",
                    "langflow-backend", "--collect-only", "-q"], 0, "--collect-only")
    if "sbx-conform::FB-001" not in out or "sbx-conform::CAP-001" not in out:
        fail("--collect-only does not list the checks:\n" + out[-3000:])
    print("ok: --collect-only lists the checks (sbx-conform --list), runs nothing")


def test_missing_binary(pt):
    out, _, _ = pt(["-p", "sbx_pytest", "--sbx-python-backend", MUTANT,
                    "--sbx-conform=/nonexistent/sbx-conform"], 2, "missing binary", env_conform=False)
    if "/nonexistent/sbx-conform" not in out or "error" not in out.lower():
        fail("a missing binary is not reported as a collection error naming it:\n" + out[-3000:])
    print("ok: a missing sbx-conform is a collection error that names it (exit 2)")


def test_inactive(pt):
    out, cases, _ = pt(["-p", "sbx_pytest"], 5, "no backend configured")
    if cases:
        fail("without a backend the plugin added items: %s" % cases)
    print("ok: without a backend the plugin adds nothing")


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    python = find_python()
    if python is None:
        print("SKIP: no python3 with pytest (Debian package python3-pytest; ci/bootstrap installs it)")
        return 77
    print("using %s" % python)
    pt = Pytest(python, os.path.abspath(sys.argv[1]))
    for t in (test_inactive, test_missing_binary, test_collect_only, test_deselect, test_ini,
              test_mutant_fails_fb001, test_example_passes):
        t(pt)
    return 0


if __name__ == "__main__":
    sys.exit(main())
