#!/usr/bin/env python3
"""layers: fail on a dependency that climbs the layers.

ci/layers.json gives each folder of a tree (mock-api/src/util, .../model,
..., .../server) a rank. A file may depend on its own folder, on folders of
its own rank and on lower ranks, never on a higher one:
  - includes: every `#include "..."` of a .c or .h file in the tree is
    resolved to a folder ("ops/ops.h" by its first path part, "x.h" next to
    the file by the file's own folder; headers outside the tree, such as
    lib's "sbx/...", do not count). A header of a higher rank is a finding.
  - calls: read from the built objects, as ci/depcycles.py does: a.c uses
    b.c when a.c's object has an undefined symbol (nm) that b.c's object
    defines. A function or variable of a higher rank is a finding.
  - only_in: a header (e.g. microhttpd.h, "..." or <...>) that only the
    listed folders may include.
  - forbidden: folders a folder may not depend on although they rank lower
    (mock-api: handlers reach the guests only through ops), for includes
    and calls alike.
  - every .c and .h of the tree lives in a ranked folder.
Each finding names file:line, the edge and the ranks, e.g.
  mock-api/src/ops/ops.c:153: calls mock_sleep_ms (http/resp.c): ops (rank 2) -> http (rank 4)
Exit status: 0 clean, 1 findings, 2 usage or build-dir problem.

Usage (from the repo root):
  ci/layers.py [BUILD_DIR]                    # default build/default
  ci/layers.py --src DIR --config FILE BUILD_DIR
  ci/layers.py --no-calls                     # includes only (no build needed)
The self-test (ci/test_layers.py, ctest lint_layers_selftest) runs it on a
small tree of its own. Needs python3 (standard library) and binutils' nm.
"""
import argparse
import collections
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import depcycles  # noqa: E402  (nm_symbols, output_of)

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


class Tree:
    def __init__(self, src, conf):
        self.root = os.path.normpath(conf["root"])
        self.abs_root = os.path.normpath(os.path.join(src, self.root))
        self.ranks = conf["ranks"]
        self.only_in = conf.get("only_in", {})
        self.forbidden = conf.get("forbidden", {})

    def refuses(self, a, b):
        """Why folder a may not depend on folder b, or None."""
        if self.ranks[b] > self.ranks[a]:
            return self.edge(a, b)
        if b in self.forbidden.get(a, ()):
            return "%s may not depend on %s (forbidden in the layers' config)" % (a, b)
        return None

    def folder_of(self, path):
        """The ranked folder of an absolute path inside the tree, '' at its
        top, None outside it."""
        rel = os.path.relpath(os.path.normpath(path), self.abs_root)
        if rel.startswith(".."):
            return None
        parts = rel.split(os.sep)
        return parts[0] if len(parts) > 1 else ""

    def edge(self, a, b):
        return "%s (rank %d) -> %s (rank %d)" % (a, self.ranks[a], b, self.ranks[b])

    def files(self):
        out = []
        for d, subs, names in os.walk(self.abs_root):
            subs.sort()
            out += sorted(os.path.join(d, n) for n in names if n.endswith((".c", ".h")))
        return out

    def show(self, path):
        return os.path.join(self.root, os.path.relpath(path, self.abs_root))


def check_placement(tree, problems):
    for path in tree.files():
        folder = tree.folder_of(path)
        if folder == "":
            problems.append("%s: not in a folder of a layer (%s)" %
                            (tree.show(path), ", ".join(sorted(tree.ranks))))
        elif folder not in tree.ranks:
            problems.append("%s: folder %s has no rank in ci/layers.json" % (tree.show(path), folder))


def include_target(tree, path, name):
    """The folder an #include "name" of path resolves to, or None (outside)."""
    here = os.path.join(os.path.dirname(path), name)
    if os.path.exists(here):
        return tree.folder_of(here)
    first = name.split("/")[0]
    if "/" in name and first in tree.ranks and os.path.exists(os.path.join(tree.abs_root, name)):
        return first
    return None


def check_includes(tree, problems):
    for path in tree.files():
        folder = tree.folder_of(path)
        if folder not in tree.ranks:
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
        for no, line in enumerate(lines, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            name = m.group(2)
            where = "%s:%d" % (tree.show(path), no)
            base = os.path.basename(name)
            if base in tree.only_in and folder not in tree.only_in[base]:
                problems.append("%s: includes %s, which only %s may include (%s is rank %d)" %
                                (where, name, ", ".join(tree.only_in[base]), folder,
                                 tree.ranks[folder]))
            if m.group(1) != '"':
                continue
            target = include_target(tree, path, name)
            why = tree.refuses(folder, target) if target in tree.ranks else None
            if why is not None:
                problems.append("%s: includes \"%s\": %s" % (where, name, why))


def first_use(path, sym):
    """The line of the first use of sym in path that is not a prototype
    (1 when not found)."""
    pat = re.compile(r"\b%s\b" % re.escape(sym))
    proto = re.compile(r"^\s*(extern\s+)?[A-Za-z_][\w\s*]*\b%s\s*\(.*\)\s*;\s*$" % re.escape(sym))
    with open(path, encoding="utf-8", errors="replace") as f:
        for no, line in enumerate(f, 1):
            if pat.search(line) and not INCLUDE.match(line) and not proto.match(line):
                return no
    return 1


def tree_objects(tree, build):
    """{object: source} of the tree's sources in BUILD's compilation database."""
    with open(os.path.join(build, "compile_commands.json")) as f:
        db = json.load(f)
    out = {}
    for entry in db:
        src = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
        if tree.folder_of(src) is None:
            continue
        obj = depcycles.output_of(entry)
        if obj is not None:
            out[obj] = src
    return out


def check_calls(tree, build, problems):
    objs = tree_objects(tree, build)
    missing = [o for o in objs if not os.path.exists(o)]
    if missing:
        print("layers: %s not built; build first" % missing[0], file=sys.stderr)
        return False
    definers = collections.defaultdict(set)
    for obj, src in objs.items():
        for sym in depcycles.nm_symbols(obj)[0]:
            definers[sym].add(src)
    seen = set()
    for obj, src in sorted(objs.items(), key=lambda t: t[1]):
        folder = tree.folder_of(src)
        if folder not in tree.ranks:
            continue
        for sym in sorted(depcycles.nm_symbols(obj)[1]):
            for other in sorted(definers.get(sym, ())):
                to = tree.folder_of(other)
                why = tree.refuses(folder, to) if to in tree.ranks else None
                if why is None:
                    continue
                key = (src, sym, other)
                if key in seen:
                    continue
                seen.add(key)
                problems.append("%s:%d: calls %s (%s): %s" %
                                (tree.show(src), first_use(src, sym), sym,
                                 os.path.relpath(other, tree.abs_root), why))
    return True


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build", nargs="?", default="build/default")
    ap.add_argument("--src", default=".", help="the source tree (default: .)")
    ap.add_argument("--config", help="the ranks (default: SRC/ci/layers.json)")
    ap.add_argument("--no-calls", action="store_true", help="check includes and placement only")
    args = ap.parse_args(argv)
    src = os.path.abspath(args.src)
    config = args.config or os.path.join(src, "ci", "layers.json")
    try:
        with open(config) as f:
            trees = [Tree(src, t) for t in json.load(f)["trees"]]
    except (OSError, ValueError, KeyError) as e:
        print("layers: cannot read %s: %s" % (config, e), file=sys.stderr)
        return 2
    build = os.path.abspath(args.build)
    if not args.no_calls and not os.path.exists(os.path.join(build, "compile_commands.json")):
        print("layers: no %s/compile_commands.json; configure and build first" % args.build,
              file=sys.stderr)
        return 2
    problems, nfiles = [], 0
    for tree in trees:
        nfiles += len(tree.files())
        check_placement(tree, problems)
        check_includes(tree, problems)
        if not args.no_calls and not check_calls(tree, build, problems):
            return 2
    for p in problems:
        print("layers: " + p)
    if problems:
        print("layers: %d dependenc%s up the layers (ranks: %s)" %
              (len(problems), "y" if len(problems) == 1 else "ies", os.path.relpath(config)),
              file=sys.stderr)
        return 1
    print("layers: every dependency points down (%d trees, %d files)" % (len(trees), nfiles))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
