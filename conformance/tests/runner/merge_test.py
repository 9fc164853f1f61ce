#!/usr/bin/env python3
"""Tests of `sbx-conform merge` (ctest conform_merge_*; label integration).

  merge_test.py equal   SBX_CONFORM JUNIT_XSD_DIR
      runs the bundled reference backend with --shard 1/2, --shard 2/2 and
      unsharded, merges the two shards and checks that the merged report is
      the unsharded one (same checks in the same order, verdicts, reasons,
      cleanup verdicts, header and totals; only what differs from run to run
      is ignored: times, durations, the mock's URL, tenant keys, evidence
      contents), that every merged check is the shard's check unchanged, and
      that the merged JUnit is well-formed and valid against junit.xsd.

  merge_test.py refuse  SBX_CONFORM FIXTURE_REPORT
      splits the report fixture into shards by hand and checks the exit
      codes (0/1/2 as for a run) and the refusals: overlapping reports, a
      file given twice, a different version / profiles / backend, an
      incomplete set, shards of different counts, bad JSON, a JSON file that
      is no report, a missing file, usage errors. Each refusal must exit 2
      and name the files (and the check, for an overlap).

Each sub-check prints "ok: ..." or fails with what was expected and what came.
"""
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

# What legitimately differs between two runs of the same suite.
RUN_SPECIFIC_TOP = ("started_at", "duration_ms")
RUN_SPECIFIC_CHECK = ("duration_ms",)


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def run(argv, expect_rc, what):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    if p.returncode != expect_rc:
        fail("%s: exit %d, expected %d\ncommand: %s\nstdout:\n%s\nstderr:\n%s"
             % (what, p.returncode, expect_rc, " ".join(argv), p.stdout[-3000:], p.stderr[-3000:]))
    return p


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def save(path, doc):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)


def comparable(report):
    """The report without what differs from run to run."""
    r = copy.deepcopy(report)
    for k in RUN_SPECIFIC_TOP:
        r.pop(k, None)
    r.get("control_plane", {}).pop("url", None)
    for c in r.get("checks", []):
        for k in RUN_SPECIFIC_CHECK:
            c.pop(k, None)
        # Evidence is what this run observed (journal sequence numbers,
        # tenant keys, driver pids, ports): only its shape is stable.
        c["evidence"] = sorted(c.get("evidence", {}).keys())
    return r


def first_difference(a, b, where="report"):
    if type(a) is not type(b):
        return "%s: %r vs %r" % (where, a, b)
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return "%s.%s: present in only one (%s)" % (where, k, "merged" if k in a else "unsharded")
            d = first_difference(a[k], b[k], "%s.%s" % (where, k))
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return "%s: %d items vs %d" % (where, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            label = x.get("id", i) if isinstance(x, dict) else i
            d = first_difference(x, y, "%s[%s]" % (where, label))
            if d:
                return d
        return None
    return None if a == b else "%s: %r vs %r" % (where, a, b)


def check_junit(path, xsd_dir):
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        fail("the merged JUnit %s is not well-formed XML: %s" % (path, e))
    cases = root.findall(".//testcase")
    if not cases:
        fail("the merged JUnit has no <testcase>")
    if shutil.which("xmllint") is None:
        print("note: xmllint not found, JUnit checked for well-formedness only "
              "(Debian package libxml2-utils)")
        return len(cases)
    p = subprocess.run(["xmllint", "--noout", "--schema", os.path.join(xsd_dir, "junit.xsd"), path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        fail("the merged JUnit does not validate against junit.xsd:\n" + p.stderr)
    return len(cases)


def test_equal(conform, xsd_dir):
    work = tempfile.mkdtemp(prefix="sbx-merge-")
    try:
        j = lambda name: os.path.join(work, name)  # noqa: E731
        run([conform, "--shard", "1/2", "--json", j("s1.json")], 0, "--shard 1/2")
        run([conform, "--shard", "2/2", "--json", j("s2.json")], 0, "--shard 2/2")
        run([conform, "--json", j("whole.json")], 0, "unsharded run")
        # Shard order on the command line does not matter.
        run([conform, "merge", "--json", j("merged.json"), "--junit", j("merged.xml"),
             "--html", j("merged.html"), j("s2.json"), j("s1.json")], 0, "merge 2/2 1/2")
        s1, s2, whole, merged = (load(j(n)) for n in ("s1.json", "s2.json", "whole.json", "merged.json"))
        if not s1["checks"] or not s2["checks"]:
            fail("a shard ran no check")
        d = first_difference(comparable(merged), comparable(whole))
        if d:
            fail("the merged report differs from the unsharded run at " + d)
        print("ok: merge of --shard 1/2 and 2/2 equals the unsharded run (%d checks, summary %s)"
              % (len(merged["checks"]), json.dumps(merged["summary"])))
        by_key = {(c["id"], c["profile"]): c for c in s1["checks"] + s2["checks"]}
        for c in merged["checks"]:
            if by_key.get((c["id"], c["profile"])) != c:
                fail("merged check %s (%s) is not its shard's check unchanged" % (c["id"], c["profile"]))
        print("ok: every merged check is its shard's check, evidence and durations included")
        if merged["shard"] != {"index": 1, "count": 1}:
            fail("merged shard is %r, expected 1/1" % merged["shard"])
        if merged["started_at"] != min(s1["started_at"], s2["started_at"]):
            fail("merged started_at %s is not the earliest shard's" % merged["started_at"])
        n = check_junit(j("merged.xml"), xsd_dir)
        if n != len(merged["checks"]):
            fail("the merged JUnit has %d testcases for %d checks" % (n, len(merged["checks"])))
        print("ok: merged JUnit is well-formed and valid against junit.xsd (%d testcases)" % n)
        p = run([conform, "merge", "--tap", j("s1.json"), j("s2.json")], 0, "merge --tap")
        if ("1..%d" % len(merged["checks"])) not in p.stdout:
            fail("merge --tap has no plan 1..%d:\n%s" % (len(merged["checks"]), p.stdout[:500]))
        print("ok: merge --tap prints one TAP plan for the whole run")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def shards_of(report, n):
    """Splits a report into n shard reports the way --shard does (round robin)."""
    out = []
    for i in range(n):
        s = copy.deepcopy(report)
        s["checks"] = [c for k, c in enumerate(report["checks"]) if k % n == i]
        s["shard"] = {"index": i + 1, "count": n}
        out.append(s)
    return out


def refused(conform, args, needles, what):
    p = run([conform, "merge"] + args, 2, what)
    for needle in needles:
        if needle not in p.stderr:
            fail("%s: stderr does not name %r:\n%s" % (what, needle, p.stderr))
    print("ok: %s refused (exit 2): %s" % (what, p.stderr.strip().splitlines()[0]))


def test_refuse(conform, fixture):
    base = load(fixture)
    work = tempfile.mkdtemp(prefix="sbx-merge-")
    try:
        j = lambda name: os.path.join(work, name)  # noqa: E731
        a, b, c = shards_of(base, 3)
        for name, doc in (("a.json", a), ("b.json", b), ("c.json", c), ("whole.json", base)):
            save(j(name), doc)

        # The fixture has an error verdict: exit 2, as a run with one; with it
        # turned into a failure: exit 1; all passing: exit 0.
        run([conform, "merge", "--json", j("m.json"), j("c.json"), j("a.json"), j("b.json")], 2, "merge with an error verdict")
        m = load(j("m.json"))
        key = lambda k: (k["id"], k["profile"])  # noqa: E731
        if sorted(map(key, m["checks"])) != sorted(map(key, base["checks"])):
            fail("the merged fixture lost or gained checks")
        want = {"total": 8, "pass": 4, "fail": 2, "skip": 1, "error": 1, "cleanup_fail": 1}
        if m["summary"] != want:  # counted from the fixture's checks, not its (stale) summary
            fail("merged summary %r does not recount the checks" % m["summary"])
        print("ok: an error verdict exits 2, summary recounted")
        failing = copy.deepcopy(base)
        for k in failing["checks"]:
            k["verdict"] = "fail" if k["verdict"] == "error" else k["verdict"]
        for i, s in enumerate(shards_of(failing, 2)):
            save(j("f%d.json" % (i + 1)), s)
        run([conform, "merge", j("f1.json"), j("f2.json")], 1, "merge with a failing check")
        print("ok: a failing check exits 1")
        passing = copy.deepcopy(base)
        passing["checks"] = [k for k in base["checks"] if k["verdict"] in ("pass", "skip")
                             and k["cleanup"]["verdict"] != "fail"]
        for i, s in enumerate(shards_of(passing, 2)):
            save(j("p%d.json" % (i + 1)), s)
        run([conform, "merge", j("p1.json"), j("p2.json")], 0, "merge of passing shards")
        print("ok: all passing exits 0")

        refused(conform, [j("whole.json"), j("a.json")], ["CAP-001", "whole.json", "a.json", "overlap"],
                "overlapping reports")
        refused(conform, [j("a.json"), j("a.json"), j("b.json"), j("c.json")], ["a.json is given twice"],
                "a report given twice")
        twice = copy.deepcopy(a)
        twice["checks"].append(twice["checks"][0])
        save(j("a-twice.json"), twice)
        refused(conform, [j("a-twice.json"), j("b.json"), j("c.json")], ["CAP-001", "appears twice in", "a-twice.json"],
                "a check twice in one report")
        other = copy.deepcopy(b)
        other["version"] = "9.9.9"
        save(j("b-version.json"), other)
        refused(conform, [j("a.json"), j("b-version.json"), j("c.json")], ["a.json", "b-version.json", "version"],
                "a different sbx-conform version")
        other = copy.deepcopy(b)
        other["profiles"] = ["langflow-backend"]
        save(j("b-profiles.json"), other)
        refused(conform, [j("a.json"), j("b-profiles.json"), j("c.json")], ["b-profiles.json", "profile list"],
                "different profiles")
        other = copy.deepcopy(b)
        other["backend"]["name"] = "another"
        save(j("b-backend.json"), other)
        refused(conform, [j("a.json"), j("b-backend.json"), j("c.json")], ["b-backend.json", "backend name"],
                "a different backend")
        refused(conform, [j("a.json"), j("c.json")], ["shard 2/3 is missing"], "an incomplete set")
        other = copy.deepcopy(b)
        other["shard"] = {"index": 2, "count": 4}
        save(j("b-count.json"), other)
        refused(conform, [j("a.json"), j("b-count.json"), j("c.json")], ["b-count.json", "2/4", "1/3"],
                "shards of different counts")
        other = copy.deepcopy(b)
        other["shard"] = {"index": 1, "count": 3}
        save(j("b-dup.json"), other)
        refused(conform, [j("a.json"), j("b-dup.json"), j("c.json")], ["a.json", "b-dup.json", "both shard 1/3"],
                "two reports claiming the same shard")
        with open(j("bad.json"), "w") as f:
            f.write('{"schema": 1, "tool": "sbx-conform", "checks": [')
        refused(conform, [j("a.json"), j("bad.json")], ["bad.json", "not valid JSON"], "bad JSON")
        save(j("other.json"), {"hello": "world"})
        refused(conform, [j("other.json")], ["other.json", "not an sbx-conform JSON report"], "a JSON file that is no report")
        save(j("noid.json"), {"schema": 1, "tool": "sbx-conform", "checks": [{"verdict": "pass"}]})
        refused(conform, [j("noid.json")], ["noid.json", "checks[0]"], "a check without an id")
        refused(conform, [j("missing.json")], ["missing.json", "cannot open"], "a missing file")
        refused(conform, [], ["no report given"], "no report")
        run([conform, "merge", "--bogus", j("a.json")], 2, "merge --bogus")
        print("ok: an unknown option exits 2")
        p = run([conform, "merge", "--help"], 0, "merge --help")
        if "REPORT.json" not in p.stdout:
            fail("merge --help does not show the usage")
        print("ok: merge --help exits 0 with the usage")
        if os.path.exists(j("m2.json")):
            fail("stale output")
        run([conform, "merge", "--json", j("m2.json"), j("a.json"), j("c.json")], 2, "refused merge writes nothing")
        if os.path.exists(j("m2.json")):
            fail("a refused merge wrote its --json report")
        print("ok: a refused merge writes no report")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("equal", "refuse"):
        print(__doc__, file=sys.stderr)
        return 2
    if sys.argv[1] == "equal":
        test_equal(sys.argv[2], sys.argv[3])
    else:
        test_refuse(sys.argv[2], sys.argv[3])
    return 0


if __name__ == "__main__":
    sys.exit(main())
