#!/usr/bin/env python3
"""ctest action_run_steps: runs the shell of action.yml's "Run sbx-conform"
and "Fail on a failed check" steps as GitHub would (bash -eo pipefail, the
step's env with ${{ }} expressions filled in, GITHUB_OUTPUT and
GITHUB_STEP_SUMMARY files) against the built sbx-conform:
  1. the bundled reference backend, --filter CAP-001: exit-code 0, the three
     reports written, the artifact named sbx-conform-report, the fail step
     skipped, a job summary whose counts table says PASS and has no failed
     checks table, no ::error annotation;
  2. the local-fallback mutant as backend-cmd, --filter FB-001, shard 1/1:
     exit-code 1, report.json says FB-001 failed, artifact
     sbx-conform-report-1-of-1, and the fail step exits 1; the job summary
     says FAIL and its failed checks table has one row, FB-001 with the
     report's reason and re-run command; the log has exactly one annotation,
     ::error title=FB-001::<reason>, after the stop-commands token is given
     back (GitHub would act on it), which unescapes to the report's reason;
  3. a usage error (args --no-such-option): exit-code 2, no report, so the
     job summary is the log's tail under "no report (exit 2)", no annotation.
The summary is parsed as Markdown with Python-Markdown's tables extension
(Debian's python3-markdown, in ci/bootstrap test; run by whichever of this
interpreter and /usr/bin/python3 has it) and read back as HTML tables.
Usage: action_test.py SBX_CONFORM SBX_REF_BACKEND"""
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
conform, ref_backend = sys.argv[1], sys.argv[2]
action = yaml.safe_load(open(os.path.join(root, "action.yml"), encoding="utf-8"))
steps = {s.get("name"): s for s in action["runs"]["steps"]}
errors = []


def expand(text, inputs, outputs):
    def sub(m):
        expr = m.group(1).strip()
        if expr.startswith("inputs."):
            k = expr[len("inputs."):]
            return inputs.get(k, str(action["inputs"][k].get("default", "")))
        if expr == "github.action_path":
            return root
        if expr == "steps.install.outputs.sbx-conform":
            return conform
        if expr.startswith("steps.run.outputs."):
            return outputs.get(expr[len("steps.run.outputs."):], "")
        raise SystemExit("action_test: cannot evaluate ${{ %s }}" % expr)
    return re.sub(r"\$\{\{(.*?)\}\}", sub, str(text))


def run_step(name, inputs, outputs, cwd):
    st = steps[name]
    env = {k: v for k, v in os.environ.items() if not k.startswith("IN_")}
    for k, v in (st.get("env") or {}).items():
        env[k] = expand(v, inputs, outputs)
    out = os.path.join(cwd, "github_output")
    open(out, "w").close()
    env["GITHUB_OUTPUT"] = out
    env["GITHUB_STEP_SUMMARY"] = os.path.join(cwd, "summary.md")
    env["GITHUB_ACTION_PATH"] = root
    wd = os.path.join(cwd, expand(st.get("working-directory", "."), inputs, outputs))
    p = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", st["run"]],
                       cwd=wd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=600)
    got = dict(line.split("=", 1) for line in open(out).read().splitlines() if "=" in line)
    return p.returncode, got, p.stdout


class Tables(html.parser.HTMLParser):
    """The <table>s of an HTML page as lists of rows of cell texts."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables, self.cell = [], None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self.cell = ""
        elif tag == "br" and self.cell is not None:
            self.cell += "\n"

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None and self.tables:
            self.tables[-1][-1].append(self.cell.strip())
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


RENDER_MD = "import markdown, sys; sys.stdout.write(markdown.markdown(sys.stdin.read(), extensions=['tables']))"


def markdown_tables(text):
    """Renders text with Python-Markdown (tables extension); returns its tables."""
    for py in (sys.executable, "/usr/bin/python3", shutil.which("python3")):
        if not py or not os.access(py, os.X_OK):
            continue
        p = subprocess.run([py, "-c", RENDER_MD], input=text, capture_output=True, text=True)
        if p.returncode == 0:
            t = Tables()
            t.feed(p.stdout)
            return t.tables
    raise SystemExit("action_test: no python3 with the markdown module (apt-get install "
                     "python3-markdown; ci/bootstrap test installs it)")


def gha_unescape(s):
    return s.replace("%0A", "\n").replace("%0D", "\r").replace("%25", "%")


def check_summary(label, summary_path, rep):
    """The job summary: a counts table that agrees with report.json, and a
    failed checks table with one row per failed check: id, verdict, reason
    and re-run command as the report has them."""
    text = open(summary_path, encoding="utf-8").read() if os.path.exists(summary_path) else ""
    tables = markdown_tables(text)
    checks = rep.get("checks", [])
    failed = [c for c in checks if c.get("verdict") in ("fail", "error") and not c.get("advisory")]
    if not tables or tables[0][0][:3] != ["Result", "Checks", "Pass"] or len(tables[0]) != 2:
        errors.append("%s: the summary has no counts table:\n%s" % (label, text[:2000]))
        return
    counts = dict(zip(tables[0][0], tables[0][1]))
    want_result = "FAIL" if failed else "PASS"
    if counts.get("Result") != want_result or counts.get("Checks") != str(len(checks)) \
            or counts.get("Fail") != str(sum(c.get("verdict") == "fail" for c in failed)):
        errors.append("%s: summary counts %r disagree with report.json (%d checks, %d failed)"
                      % (label, counts, len(checks), len(failed)))
    rows = tables[1][1:] if len(tables) > 1 else []
    if len(tables) > 1 and tables[1][0] != ["Check", "Profile", "Title", "Verdict", "Reason", "Re-run"]:
        errors.append("%s: failed checks table header %r" % (label, tables[1][0]))
    got = [(r[0], r[3], r[4], r[5]) for r in rows if len(r) == 6]
    want = [(c["id"], c["verdict"], c.get("reason", ""), c.get("rerun", "")) for c in failed]
    for i, (g, w) in enumerate(zip(got, want)):  # a long reason is cut, marked " \u2026"
        if g[2].endswith(" \u2026") and w[2].startswith(g[2][:-2]):
            got[i] = g[:2] + (w[2],) + g[3:]
    if len(rows) != len(failed) or got != want:
        errors.append("%s: summary failed-check rows %r, want %r" % (label, got, want))
    print("action_test: %s: summary: %d table(s), result %s, %d failed-check row(s)"
          % (label, len(tables), counts.get("Result"), len(rows)))


def check_annotations(label, log, rep):
    """One ::error title=ID::reason per failed check, after the stop-commands
    token came back, unescaping to the report's reason (+ the re-run line)."""
    lines = log.splitlines()
    stop = [i for i, ln in enumerate(lines) if ln.startswith("::stop-commands::")]
    if len(stop) != 1:
        errors.append("%s: %d ::stop-commands:: lines, want 1" % (label, len(stop)))
        return
    token = lines[stop[0]][len("::stop-commands::"):]
    resumed = [i for i, ln in enumerate(lines) if ln == "::%s::" % token]
    if not token or len(resumed) != 1:
        errors.append("%s: the stop-commands token %r is not given back once" % (label, token))
        return
    live = lines[:stop[0]] + lines[resumed[0] + 1:]
    got = [ln for ln in live if ln.startswith("::error")]
    failed = [c for c in rep.get("checks", []) if c.get("verdict") in ("fail", "error")
              and not c.get("advisory")]
    want = []
    for c in failed:
        msg = c.get("reason") or "(no reason given)"
        if c.get("rerun"):
            msg += "\nre-run: " + c["rerun"]
        want.append((c["id"], msg))
    parsed = []
    for ln in got:
        m = re.match(r"::error title=([^:,]*)::(.*)\Z", ln)
        parsed.append((gha_unescape(m.group(1)), gha_unescape(m.group(2))) if m else (ln, None))
    if parsed != want:
        errors.append("%s: annotations %r, want %r" % (label, got, want))
    print("action_test: %s: annotations: %s" % (label, [p[0] for p in parsed] or "none"))


def scenario(label, inputs, want_rc, want_artifact, want_verdict):
    with tempfile.TemporaryDirectory(prefix="sbx-action-") as tmp:
        rc, outputs, log = run_step("Run sbx-conform", inputs, {}, tmp)
        if rc != 0:
            errors.append("%s: the run step itself exited %d:\n%s" % (label, rc, log[-3000:]))
            return
        code = outputs.get("exit-code")
        if code != str(want_rc):
            errors.append("%s: exit-code %r, want %d\n%s" % (label, code, want_rc, log[-3000:]))
        if outputs.get("artifact") != want_artifact:
            errors.append("%s: artifact %r, want %r" % (label, outputs.get("artifact"), want_artifact))
        for k in ("json", "junit", "html"):
            if not os.path.isfile(outputs.get(k, "")) or os.path.getsize(outputs[k]) == 0:
                errors.append("%s: output %s=%r is not a written report" % (label, k, outputs.get(k)))
        try:
            rep = json.load(open(outputs["json"]))
            verdicts = {c.get("id"): c.get("verdict") for c in rep.get("checks", [])}
            for cid, v in want_verdict.items():
                if verdicts.get(cid) != v:
                    errors.append("%s: %s verdict %r, want %r" % (label, cid, verdicts.get(cid), v))
            check_summary(label, os.path.join(tmp, "summary.md"), rep)
            check_annotations(label, log, rep)
        except Exception as e:  # noqa: BLE001
            errors.append("%s: report.json: %s" % (label, e))
        frc, _, flog = run_step("Fail on a failed check", inputs, outputs, tmp)
        fail_runs = code != "0"   # the step's `if:` (fail-on-error defaults to true)
        if fail_runs and frc != want_rc:
            errors.append("%s: the fail step exited %d, want %d (%s)" % (label, frc, want_rc, flog.strip()))
        print("action_test: %s: exit-code %s, artifact %s, fail step %s" % (
            label, code, outputs.get("artifact"), "exits %d" % frc if fail_runs else "skipped"))


scenario("reference backend", {"filter": "CAP-001"}, 0, "sbx-conform-report", {"CAP-001": "pass"})
scenario("local-fallback mutant",
         {"backend-cmd": "%s --quirk local-fallback" % ref_backend, "filter": "FB-001",
          "profile": "langflow-backend", "shard": "1/1"},
         1, "sbx-conform-report-1-of-1", {"FB-001": "fail"})


def usage_error_scenario():
    label = "usage error"
    with tempfile.TemporaryDirectory(prefix="sbx-action-") as tmp:
        rc, outputs, log = run_step("Run sbx-conform", {"args": "--no-such-option"}, {}, tmp)
        summary = os.path.join(tmp, "summary.md")
        text = open(summary, encoding="utf-8").read() if os.path.exists(summary) else ""
        if rc != 0 or outputs.get("exit-code") != "2":
            errors.append("%s: step rc %d, exit-code %r, want 0 and 2" % (label, rc, outputs.get("exit-code")))
        if not text.startswith("### sbx-conform: no report (exit 2)\n") or "no-such-option" not in text:
            errors.append("%s: summary without the log's tail:\n%s" % (label, text[:1500]))
        if any(ln.startswith("::error") for ln in log.splitlines()):
            errors.append("%s: annotations printed without a report:\n%s" % (label, log[-1500:]))
        print("action_test: %s: exit-code %s, summary is the log's tail" % (label, outputs.get("exit-code")))


usage_error_scenario()
for e in errors:
    print("action_test: FAIL: " + e)
sys.exit(1 if errors else 0)
