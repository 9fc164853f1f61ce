#!/usr/bin/env python3
"""ctest action_run_steps: runs the shell of action.yml's "Run sbx-conform"
and "Fail on a failed check" steps as GitHub would (bash -eo pipefail, the
step's env with ${{ }} expressions filled in, GITHUB_OUTPUT and
GITHUB_STEP_SUMMARY files) against the built sbx-conform:
  1. the bundled reference backend, --filter CAP-001: exit-code 0, the three
     reports written, the artifact named sbx-conform-report, the fail step
     skipped;
  2. the local-fallback mutant as backend-cmd, --filter FB-001, shard 1/1:
     exit-code 1, report.json says FB-001 failed, artifact
     sbx-conform-report-1-of-1, and the fail step exits 1.
Usage: action_test.py SBX_CONFORM SBX_REF_BACKEND"""
import json
import os
import re
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
for e in errors:
    print("action_test: FAIL: " + e)
sys.exit(1 if errors else 0)
