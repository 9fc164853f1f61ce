#!/usr/bin/env python3
"""The Layers table of mock-api/README.md names every source file of
mock-api/src in its own folder's row (ci/lint; self-test:
ci/test_layers_doc.py).

A row is `| RANK | `folder/` | what it holds |`; a file counts as named
when the row's text holds it in backticks (`cell.c`). Every `.c` must be
named, and every `.h` that has no `.c` of the same name beside it (a
header of its own: `core.h`, `cell_proto.h`). A name a row gives that is
no file of the mock's at all (a file removed or renamed) is a finding too,
so the table cannot drift either way; a row may still point at a file of
another folder (`api_routes.c diverts to them`). Usage: layers_doc.py [README [SRC_DIR]] (defaults: the mock's)."""
import os
import re
import sys

ROW = re.compile(r"^\|\s*\d+\s*\|\s*`([a-z_]+)/`\s*\|(.*)\|\s*$")
NAME = re.compile(r"`([A-Za-z0-9_./-]+\.[ch])`")


def rows(readme):
    """{folder: set of file names its row gives}"""
    out = {}
    in_layers = False
    with open(readme, encoding="utf-8") as f:
        for line in f:
            if line.startswith("## "):
                in_layers = line.strip() == "## Layers"
                continue
            m = ROW.match(line) if in_layers else None
            if m:
                names = {os.path.basename(n) for n in NAME.findall(m.group(2))}
                out.setdefault(m.group(1), set()).update(names)
    return out


def wanted(src, folder):
    files = set(os.listdir(os.path.join(src, folder)))
    need = {f for f in files if f.endswith(".c")}
    need |= {f for f in files if f.endswith(".h") and f[:-2] + ".c" not in files}
    return need, files


def check(readme, src):
    findings = []
    table = rows(readme)
    if not table:
        return [f"{readme}: no Layers table (a '## Layers' section with rows `| RANK | `folder/` | ... |`)"]
    folders = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    anywhere = set()
    for top in (src, os.path.join(os.path.dirname(os.path.normpath(src)), "include")):
        for _, _, names in os.walk(top):
            anywhere.update(names)
    for folder in folders:
        need, files = wanted(src, folder)
        given = table.get(folder)
        if given is None:
            findings.append(f"{readme}: Layers: no row for `{folder}/` ({src}/{folder})")
            continue
        for f in sorted(need - given):
            findings.append(f"{readme}: Layers: `{folder}/` row does not name {src}/{folder}/{f}")
        for f in sorted(given - files - anywhere):
            findings.append(f"{readme}: Layers: `{folder}/` row names {f}, which is no file of the mock's (removed or renamed?)")
    for folder in sorted(set(table) - set(folders)):
        findings.append(f"{readme}: Layers: row for `{folder}/`, which is not a folder of {src}")
    return findings


def main(argv):
    readme = argv[1] if len(argv) > 1 else "mock-api/README.md"
    src = argv[2] if len(argv) > 2 else "mock-api/src"
    findings = check(readme, src)
    for f in findings:
        print(f)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
