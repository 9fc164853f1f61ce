#!/usr/bin/env python3
"""What the schemas cannot check (ctest ci_yaml_validate, after the schemas):
every `uses:` is pinned to a ref; ci.yml runs `bash .ci/run`; the
ClusterFuzzLite workflows use google/clusterfuzzlite's build_fuzzers and
run_fuzzers with language c, code-change mode on pull requests and batch +
prune on a schedule; action.yml is composite with the documented inputs and
uploads with actions/upload-artifact; the README example shards 1/4..4/4 and
merges with `sbx-conform merge`. Usage: policy.py ROOT README_EXAMPLE.yml"""
import glob
import os
import sys

import yaml

root, example = sys.argv[1], sys.argv[2]
errors = []


def load(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def steps_of(doc):
    if "runs" in doc:
        return doc["runs"].get("steps", [])
    out = []
    for job in (doc.get("jobs") or {}).values():
        out += job.get("steps", [])
    return out


def on_of(doc):
    # PyYAML reads the bare key `on` as True.
    return doc.get("on", doc.get(True))


def check_uses(name, doc):
    for st in steps_of(doc):
        uses = st.get("uses")
        if uses and not uses.startswith("./") and "@" not in uses:
            errors.append("%s: `uses: %s` is not pinned to a version" % (name, uses))


wf = {os.path.basename(p): load(p) for p in glob.glob(os.path.join(root, ".github/workflows/*.yml"))}
for need in ("ci.yml", "cflite_pr.yml", "cflite_batch.yml"):
    if need not in wf:
        errors.append(".github/workflows/%s is missing" % need)
for name, doc in wf.items():
    check_uses(name, doc)

if "ci.yml" in wf:
    runs = [st.get("run", "") for st in steps_of(wf["ci.yml"])]
    if not any("bash .ci/run" in r for r in runs):
        errors.append("ci.yml: no step runs `bash .ci/run`")


def cflite(name, want_on, want_modes):
    doc = wf.get(name)
    if doc is None:
        return
    if want_on not in (on_of(doc) or {}):
        errors.append("%s: not triggered by %s" % (name, want_on))
    modes = set()
    builds = runs_ = 0
    for st in steps_of(doc):
        uses = st.get("uses", "")
        w = st.get("with", {}) or {}
        if uses.startswith("google/clusterfuzzlite/actions/build_fuzzers@"):
            builds += 1
            if w.get("language") != "c":
                errors.append("%s: build_fuzzers without language: c" % name)
        if uses.startswith("google/clusterfuzzlite/actions/run_fuzzers@"):
            runs_ += 1
            modes.add(w.get("mode"))
            if not str(w.get("fuzz-seconds", "")).isdigit():
                errors.append("%s: run_fuzzers without numeric fuzz-seconds" % name)
    if not builds or not runs_:
        errors.append("%s: needs build_fuzzers and run_fuzzers" % name)
    if modes != set(want_modes):
        errors.append("%s: modes %s, want %s" % (name, sorted(map(str, modes)), sorted(want_modes)))


cflite("cflite_pr.yml", "pull_request", ["code-change"])
cflite("cflite_batch.yml", "schedule", ["batch", "prune"])

action = load(os.path.join(root, "action.yml"))
check_uses("action.yml", action)
if action.get("runs", {}).get("using") != "composite":
    errors.append("action.yml: not a composite action")
for inp in ("backend-cmd", "python-backend", "python-component", "profile", "shard", "filter"):
    if inp not in (action.get("inputs") or {}):
        errors.append("action.yml: input %s missing" % inp)
if not any(st.get("uses", "").startswith("actions/upload-artifact@") for st in steps_of(action)):
    errors.append("action.yml: no actions/upload-artifact step")

ex = load(example) if os.path.getsize(example) else {}
check_uses("README example", ex or {})
text = open(example, encoding="utf-8").read()
for needle in ("1/4", "2/4", "3/4", "4/4", "sbx-conform merge", "shard: ${{ matrix.shard }}"):
    if needle not in text:
        errors.append("README example: no %r" % needle)

for e in errors:
    print("policy: " + e)
print("policy: %s" % ("FAILED" if errors else "OK (%d workflows, action.yml, README example)" % len(wf)))
sys.exit(1 if errors else 0)
