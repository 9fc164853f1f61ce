#!/usr/bin/env python3
"""ctest conform_python_package_venv (labels python, integration): the
package conformance/adapters/ (distribution sbx-harness) installs offline
into a fresh virtual environment and its pytest plugin runs the suite there,
with no PYTHONPATH.

    venv_install_test.py SBX_CONFORM PROJECT_VERSION

1. A copy of conformance/adapters/ in a scratch directory (pip builds in the
   source folder and setuptools leaves build/ and *.egg-info there; the copy
   keeps the tree clean and parallel runs apart).
2. ``python3 -m venv --system-site-packages``: pytest comes from Debian's
   python3-pytest in the system site-packages (there is no pytest wheel
   offline); the venv's own site-packages get nothing but pip, setuptools
   and this package. Before the install, the venv cannot import sbx_harness.
3. ``pip install --no-index --no-build-isolation ./copy`` (no index, no
   download: setuptools is the one already there, Debian's).
4. The installed distribution: version PROJECT_VERSION (CMakeLists.txt's
   project VERSION), the pytest11 entry point ``sbx_pytest``, the module
   and the lfx stand-in inside the venv, not in the source tree.
5. ``python -m pytest -p sbx_pytest --sbx-python-backend <example>`` with
   PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 (so -p can only find the plugin by its
   entry point name: no sbx_pytest module is on sys.path), in an empty
   directory: exit 0, one JUnit testcase per check of sbx-conform's report,
   none failed.
6. Without -p (auto-loaded through the entry point), --collect-only lists
   the checks.

Exit 77 (skipped) when no interpreter has venv (ensurepip), setuptools and
pytest: ci/bootstrap test installs python3-venv, python3-setuptools and
python3-pytest.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.normpath(os.path.join(HERE, "..", "..", "adapters"))
EXAMPLE = os.path.join(PACKAGE, "examples", "createos_backend.py") + ":create_backend"
NEEDS = "import ensurepip, setuptools, pytest, venv"


def fail(msg):
    print("venv_install_test: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def find_python():
    """Debian's python3 first: a pyenv or other interpreter on PATH often
    lacks pytest or setuptools."""
    for py in (os.environ.get("SBX_PYTEST_PYTHON"), "/usr/bin/python3", sys.executable,
               shutil.which("python3")):
        if py and os.access(py, os.X_OK) and subprocess.run(
                [py, "-c", NEEDS], stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL).returncode == 0:
            return py
    return None


def clean_env(**extra):
    """The caller's environment without anything that would put the source
    tree or a user's configuration in the way."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONNOUSERSITE="1",
               PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", NO_COLOR="1")
    for k in ("PYTHONPATH", "PYTHONHOME", "SBX_CONFORM", "SBX_CONFORM_ADAPTERS",
              "PYTEST_PLUGINS", "PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "VIRTUAL_ENV"):
        env.pop(k, None)
    env.update(extra)
    return env


def run(cmd, what, cwd, env, expect=0, timeout=300):
    p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=timeout)
    if expect is not None and p.returncode != expect:
        fail("%s: exited %d, expected %d\n$ %s\n%s"
             % (what, p.returncode, expect, " ".join(cmd), p.stdout[-6000:]))
    return p


def install(py, scratch):
    src = os.path.join(scratch, "sbx-harness-src")
    shutil.copytree(PACKAGE, src, ignore=shutil.ignore_patterns(
        "build", "*.egg-info", "__pycache__"))
    venv = os.path.join(scratch, "venv")
    run([py, "-m", "venv", "--system-site-packages", venv], "python3 -m venv", scratch,
        clean_env())
    vpy = os.path.join(venv, "bin", "python")
    p = run([vpy, "-c", "import sbx_harness"], "import before install", scratch, clean_env(),
            expect=None)
    if p.returncode == 0:
        fail("the fresh venv imports sbx_harness before the install: something else provides it")
    run([vpy, "-m", "pip", "install", "--no-index", "--no-build-isolation", src],
        "pip install --no-index --no-build-isolation", scratch, clean_env())
    return venv, vpy


INSPECT = r"""
import json, importlib.metadata as md, os, sbx_harness, sbx_harness.sbx_pytest as plugin
eps = [(e.name, e.value) for e in md.distribution("sbx-harness").entry_points
       if e.group == "pytest11"]
print(json.dumps({
    "version": md.version("sbx-harness"),
    "dunder": sbx_harness.__version__,
    "eps": eps,
    "module": os.path.realpath(sbx_harness.__file__),
    "plugin": os.path.realpath(plugin.__file__),
    "standin": os.path.isfile(os.path.join(os.path.dirname(sbx_harness.__file__),
                              "lfx_standin", "lfx", "utils", "sandbox", "base.py")),
    "adapter": os.path.isfile(os.path.join(os.path.dirname(sbx_harness.__file__),
                              "langflow_backend.py")),
}))
"""


def check_installed(vpy, venv, scratch, version):
    info = json.loads(run([vpy, "-c", INSPECT], "inspect the installed package", scratch,
                          clean_env()).stdout)
    venv_real = os.path.realpath(venv) + os.sep
    if info["version"] != version or info["dunder"] != version:
        fail("installed version %r (__version__ %r), want the project's %r (CMakeLists.txt): "
             "bump conformance/adapters/pyproject.toml" % (info["version"], info["dunder"], version))
    if ["sbx_pytest", "sbx_harness.sbx_pytest"] not in [list(e) for e in info["eps"]]:
        fail("no pytest11 entry point sbx_pytest = sbx_harness.sbx_pytest; got %r" % info["eps"])
    for k in ("module", "plugin"):
        if not info[k].startswith(venv_real):
            fail("%s imported from %s, not from the venv %s" % (k, info[k], venv_real))
    if not info["standin"] or not info["adapter"]:
        fail("the lfx stand-in or langflow_backend.py was not installed: %r" % info)
    print("venv_install_test: installed sbx-harness %s into %s" % (version, venv))


def junit_cases(path):
    cases = {}
    for tc in ET.parse(path).getroot().iter("testcase"):
        outcome = "passed"
        for tag in ("failure", "error", "skipped"):
            if tc.find(tag) is not None:
                outcome = tag
        cases[tc.get("name")] = outcome
    return cases


def check_suite(vpy, conform, scratch):
    work = os.path.join(scratch, "work")
    os.mkdir(work)
    cmd = [vpy, "-m", "pytest", "-p", "no:cacheprovider", "-p", "sbx_pytest", "-rs",
           "--junitxml=junit.xml", "--sbx-conform", conform, "--sbx-python-backend", EXAMPLE,
           "--sbx-json", "report.json"]
    p = run(cmd, "pytest -p sbx_pytest (autoload off)", work,
            clean_env(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1"), timeout=900)
    with open(os.path.join(work, "report.json")) as f:
        ids = [c["id"] for c in json.load(f)["checks"]]
    cases = junit_cases(os.path.join(work, "junit.xml"))
    if not ids or len(cases) != len(ids):
        fail("%d JUnit testcases for %d checks\n%s" % (len(cases), len(ids), p.stdout[-4000:]))
    bad = {k: v for k, v in cases.items() if v in ("failure", "error")}
    if bad:
        fail("checks failed under the installed plugin: %r\n%s" % (bad, p.stdout[-4000:]))
    for cid in ids:
        if not any(name == cid or name.startswith(cid + "[") for name in cases):
            fail("check %s has no testcase (got %s)" % (cid, sorted(cases)))
    print("venv_install_test: -p sbx_pytest: %d items, %d passed, %d skipped"
          % (len(cases), sum(v == "passed" for v in cases.values()),
             sum(v == "skipped" for v in cases.values())))
    p = run([vpy, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q",
             "--sbx-conform", conform, "--sbx-python-backend", EXAMPLE, "--sbx-filter", "FB-*"],
            "pytest --collect-only (auto-loaded)", work, clean_env())
    listed = [ln for ln in p.stdout.splitlines() if ln.startswith("sbx-conform::FB-")]
    if not listed:
        fail("auto-loaded plugin listed no FB-* item:\n%s" % p.stdout[-3000:])
    print("venv_install_test: auto-loaded: --collect-only lists %d FB-* items" % len(listed))


def main():
    if len(sys.argv) != 3:
        print("usage: venv_install_test.py SBX_CONFORM PROJECT_VERSION", file=sys.stderr)
        return 2
    conform, version = os.path.abspath(sys.argv[1]), sys.argv[2]
    py = find_python()
    if py is None:
        print("venv_install_test: skipped: no python3 with venv, setuptools and pytest "
              "(apt-get install python3-venv python3-setuptools python3-pytest)")
        return 77
    scratch = tempfile.mkdtemp(prefix="sbx-venv-test-")
    try:
        venv, vpy = install(py, scratch)
        check_installed(vpy, venv, scratch, version)
        check_suite(vpy, conform, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print("venv_install_test: ok (%s)" % py)
    return 0


if __name__ == "__main__":
    sys.exit(main())
