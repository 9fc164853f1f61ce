"""sbx_pytest: the sbx-harness conformance suite as pytest items.

    pytest -p sbx_pytest --sbx-python-backend mypkg.sandbox:create_backend \
        [--sbx-profile langflow-backend] [--sbx-filter 'FB-*'] [--sbx-conform PATH]

or the same in pytest.ini / pyproject.toml ([tool.pytest.ini_options]) /
setup.cfg / tox.ini:

    [pytest]
    addopts = -p sbx_pytest
    sbx_python_backend = mypkg.sandbox:create_backend
    sbx_profile = langflow-backend

Every conformance check becomes one pytest item named by its id
(``sbx-conform::FB-001``; ``ID[profile]`` when an id runs under two
profiles): a failed check fails its item with the reason, the cleanup
verdict and the evidence (details, driver stderr, journal excerpt); a
skipped check is skipped with its reason; an advisory check that is not ok
is an xfail. ``sbx-conform --json`` runs once per pytest run, while pytest
collects; a harness error (exit 2 without a report, binary not found, a
backend that cannot be loaded) is a collection error showing sbx-conform's
stderr. With ``--collect-only`` the catalogue is listed (``sbx-conform
--list``) and nothing runs.

The binary is the first of: ``--sbx-conform PATH``, ``$SBX_CONFORM``, the
``sbx_conform`` ini option, ``sbx-conform`` on PATH. The plugin does nothing
unless a backend is configured (``--sbx-python-backend`` or
``--sbx-backend-cmd``, or their ini options), so it is harmless to load
always. Pure Python: standard library and pytest only. Put this directory
on ``sys.path`` (``PYTHONPATH=conformance/adapters/sbx_harness`` or the ``pythonpath``
ini option) so that ``-p sbx_pytest`` finds it.
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

import pytest

RUN_NODE = "sbx-conform"
EVIDENCE_LINES = 40  # journal entries / stderr lines shown per failure


def pytest_addoption(parser):
    group = parser.getgroup("sbx-conform", "sbx-harness conformance checks (sbx_pytest)")
    group.addoption("--sbx-python-backend", metavar="MODULE:FACTORY",
                    help="the Python backend to check (sbx-conform --python-backend)")
    group.addoption("--sbx-backend-cmd", metavar="CMD",
                    help="a driver command line instead (sbx-conform --backend-cmd)")
    group.addoption("--sbx-profile", action="append", metavar="NAME",
                    help="profile to run (repeatable; default: sbx-conform's choice)")
    group.addoption("--sbx-filter", action="append", metavar="GLOB",
                    help="only check ids matching GLOB (repeatable)")
    group.addoption("--sbx-conform", metavar="PATH",
                    help="the sbx-conform binary (default: $SBX_CONFORM, ini sbx_conform, PATH)")
    group.addoption("--sbx-args", metavar="ARGS",
                    help="more sbx-conform options, shell-quoted (e.g. '--timeout-scale 2')")
    group.addoption("--sbx-json", metavar="FILE",
                    help="keep sbx-conform's JSON report there (e.g. for sbx-conform merge)")
    parser.addini("sbx_python_backend", "module:factory of the Python backend to check")
    parser.addini("sbx_backend_cmd", "driver command line (instead of sbx_python_backend)")
    parser.addini("sbx_profile", "profiles to run, one per line", type="linelist")
    parser.addini("sbx_filter", "check id globs, one per line", type="linelist")
    parser.addini("sbx_conform", "path of the sbx-conform binary")
    parser.addini("sbx_args", "more sbx-conform options, shell-quoted")
    parser.addini("sbx_json", "keep sbx-conform's JSON report at this path")


class SbxConformError(Exception):
    """sbx-conform could not produce a report (shown as a collection error)."""


class SbxCheckFailed(Exception):
    """A check's verdict (or its cleanup verdict) is not ok."""

    def __init__(self, check):
        super().__init__(check.get("id"))
        self.check = check


def _setting(config, opt, ini):
    """A command-line option, else the ini value (paths relative to the ini
    file), else None."""
    value = config.getoption(opt)
    if value:
        return value, None
    value = config.getini(ini)
    if value:
        base = os.path.dirname(str(config.inipath)) if getattr(config, "inipath", None) else None
        return value, base
    return None, None


def _backend_args(config):
    spec, base = _setting(config, "sbx_python_backend", "sbx_python_backend")
    if spec:
        module, sep, factory = spec.rpartition(":")
        if sep and base and module.endswith(".py") and not os.path.isabs(module):
            spec = os.path.join(base, module) + ":" + factory
        # the backend runs under the interpreter running pytest, the one
        # whose environment has the package under test installed
        return ["--python-backend", spec, "--python", sys.executable]
    cmd, _ = _setting(config, "sbx_backend_cmd", "sbx_backend_cmd")
    return ["--backend-cmd", cmd] if cmd else None


def _binary(config):
    explicit = config.getoption("sbx_conform") or os.environ.get("SBX_CONFORM") \
        or config.getini("sbx_conform")
    if explicit:
        if os.path.isfile(explicit) and os.access(explicit, os.X_OK):
            return os.path.abspath(explicit)
        found = shutil.which(explicit)
        if found:
            return found
        raise SbxConformError("sbx-conform binary %r is not an executable file" % explicit)
    found = shutil.which("sbx-conform")
    if found is None:
        raise SbxConformError("sbx-conform not found: pass --sbx-conform PATH, set $SBX_CONFORM "
                              "or the sbx_conform ini option, or put sbx-conform on PATH")
    return found


def _selection_args(config):
    args = []
    for p in config.getoption("sbx_profile") or config.getini("sbx_profile") or []:
        args += ["--profile", p]
    for f in config.getoption("sbx_filter") or config.getini("sbx_filter") or []:
        args += ["--filter", f]
    extra, _ = _setting(config, "sbx_args", "sbx_args")
    return args + (shlex.split(extra) if extra else [])


def pytest_configure(config):
    config.addinivalue_line("markers", "sbx_conform: a check of the sbx-harness conformance suite")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    # tryfirst: the items must exist before -k / -m / --lf deselect.
    if _backend_args(config) is None:
        return
    run = SbxConformRun.from_parent(session, name=RUN_NODE, nodeid=RUN_NODE)
    items.extend(session.genitems(run))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    # A skip is located at the check (sbx-conform::CAP-005), not at the line
    # of this plugin that turned the verdict into a skip.
    outcome = yield
    rep = outcome.get_result()
    if isinstance(item, SbxCheckItem) and rep.skipped and isinstance(rep.longrepr, tuple):
        rep.longrepr = (item.nodeid, None, rep.longrepr[2])


def _tail(text, lines):
    rows = (text or "").rstrip("\n").splitlines()
    return "\n".join(rows[-lines:])


class SbxConformRun(pytest.Collector):
    """The one sbx-conform run of this pytest run; its items are the checks."""

    def collect(self):
        config = self.config
        binary = _binary(config)
        cmd = [binary] + _backend_args(config) + _selection_args(config)
        if config.option.collectonly:
            return self._listed(cmd)
        report = self._run(cmd)
        self.report = report
        self.add_marker("sbx_conform")
        checks = [c for c in report.get("checks", []) if isinstance(c, dict)]
        ids = [c.get("id") for c in checks]
        items = []
        for c in checks:
            name = str(c.get("id"))
            if ids.count(c.get("id")) > 1:
                name = "%s[%s]" % (name, c.get("profile"))
            items.append(SbxCheckItem.from_parent(self, name=name, check=c))
        return items

    def _run(self, cmd):
        keep, _ = _setting(self.config, "sbx_json", "sbx_json")
        tmpdir = None
        if keep:
            path = os.path.abspath(keep)
        else:
            tmpdir = tempfile.mkdtemp(prefix="sbx-pytest-")
            path = os.path.join(tmpdir, "report.json")
        try:
            proc = subprocess.run(cmd + ["--json", path], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  errors="replace")
            self.command, self.returncode = cmd, proc.returncode
            if proc.returncode not in (0, 1, 2) or not os.path.exists(path):
                raise SbxConformError(
                    "%s exited %d without a report\n--- stderr ---\n%s\n--- stdout ---\n%s"
                    % (" ".join(shlex.quote(a) for a in cmd), proc.returncode,
                       _tail(proc.stderr, 60), _tail(proc.stdout, 20)))
            with open(path, encoding="utf-8") as f:
                return json.load(f)
        except OSError as e:
            raise SbxConformError("cannot run %s: %s" % (cmd[0], e)) from None
        except ValueError as e:
            raise SbxConformError("%s: the JSON report is unreadable: %s" % (path, e)) from None
        finally:
            if tmpdir:
                shutil.rmtree(tmpdir, ignore_errors=True)

    def _listed(self, cmd):
        proc = subprocess.run(cmd + ["--list"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, errors="replace")
        if proc.returncode != 0:
            raise SbxConformError("sbx-conform --list exited %d:\n%s" % (proc.returncode, proc.stderr))
        rows = [line.split(None, 2) for line in proc.stdout.splitlines() if line.strip()]
        ids = [r[0] for r in rows]
        return [SbxCheckItem.from_parent(
                    self, name=r[0] if ids.count(r[0]) == 1 else "%s[%s]" % (r[0], r[1]),
                    check={"id": r[0], "profile": r[1], "title": r[2] if len(r) > 2 else ""})
                for r in rows if len(r) >= 2]

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, SbxConformError):
            return "sbx_pytest: %s" % excinfo.value
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, RUN_NODE


class SbxCheckItem(pytest.Item):
    """One conformance check; runtest only reads its verdict from the report."""

    def __init__(self, *, check, **kwargs):
        super().__init__(**kwargs)
        self.check = check
        for key in ("profile", "area", "clause"):
            if check.get(key):
                self.user_properties.append((key, str(check[key])))

    def runtest(self):
        c = self.check
        verdict = c.get("verdict")
        cleanup = (c.get("cleanup") or {}).get("verdict")
        not_ok = verdict not in ("pass", "skip") or cleanup == "fail"
        if not_ok and c.get("advisory"):
            pytest.xfail("advisory check not ok (does not fail the run): %s"
                         % (c.get("reason") or (c.get("cleanup") or {}).get("reason") or verdict))
        if not_ok:
            raise SbxCheckFailed(c)
        if verdict == "skip":
            pytest.skip(c.get("reason") or "skipped by sbx-conform")

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, SbxCheckFailed):
            return format_failure(excinfo.value.check)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        c = self.check
        return self.path, None, "%s (%s): %s" % (c.get("id"), c.get("profile"), c.get("title", ""))


def _indent(text, pad="    "):
    return "\n".join(pad + line for line in str(text).splitlines()) or pad


def format_failure(c):
    """The failure text of one check: verdict, reason, cleanup, evidence."""
    out = ["%s (%s) %s: %s" % (c.get("id"), c.get("profile"), str(c.get("verdict")).upper(),
                                c.get("title", "")),
           "clause: %s" % c.get("clause", "")]
    if c.get("reason"):
        out += ["reason:", _indent(c["reason"])]
    cl = c.get("cleanup") or {}
    if cl.get("verdict") == "fail":
        out.append("cleanup: FAIL: %s" % cl.get("reason", ""))
        if cl.get("leftover"):
            out.append("  leftover guests: %s" % ", ".join(map(str, cl["leftover"])))
    ev = c.get("evidence") or {}
    if ev.get("details"):
        out.append("evidence, details:")
        out += [_indent("- %s" % d) for d in ev["details"]]
    if ev.get("driver_stderr"):
        out += ["evidence, driver stderr (last %d lines):" % EVIDENCE_LINES,
                _indent(_tail(ev["driver_stderr"], EVIDENCE_LINES))]
    journal = ev.get("journal") or []
    if journal:
        out.append("evidence, control-plane journal (last %d of %d):"
                   % (min(len(journal), EVIDENCE_LINES), len(journal)))
        for e in journal[-EVIDENCE_LINES:]:
            if isinstance(e, dict):
                fault = " fault=%s" % e["fault"] if e.get("fault") else ""
                out.append("    #%s %s %s -> %s%s" % (e.get("seq"), e.get("method"), e.get("path"),
                                                      e.get("status"), fault))
    if ev.get("tenant"):
        out.append("tenant: %s" % ev["tenant"])
    return "\n".join(out)
