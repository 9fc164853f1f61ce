#!/usr/bin/env python3
"""depcycles: fail on a circular dependency between source files.

The file-level dependency graph is read from the compiled objects, not from
the #includes: a.c depends on b.c when a.c's object has an undefined symbol
(nm -u) that b.c's object defines (nm --defined-only, global symbols). The
graph is built per link unit, so that a symbol defined by two programs' mains
is never confused:
  - each static library of the project alone (sbx, sbxmock, sbxdriver,
    sbxrefhttp, sbxreport, sbxconform, sbxctl_core, ...), and
  - each program together with the project libraries on its link line
    (catches a library that calls back into its program's main.c).
Only production code counts: the objects of targets whose sources all live
under the production roots (lib/src, mock-api/src, conformance/{src,ref,
driver}, tools/src; see --roots). Tests, fuzzers and benches are left out.

A cycle is a strongly connected component of more than one file. For each
one the script prints the files, then the shortest cycle through each file,
as `a.c -> b.c -> a.c`, and the symbols behind each edge of the component.
Exit status: 0 no cycle, 1 cycles found, 2 usage or build-dir problem.

Usage:
  ci/depcycles.py [BUILD_DIR]          # default build/default, run from the repo root
  ci/depcycles.py --objects NAME a.o b.o ...
                                       # one link unit of the given objects
                                       # (the self-test uses this)
Needs python3 (standard library only) and binutils' nm; the build dir needs
compile_commands.json (CMAKE_EXPORT_COMPILE_COMMANDS) and a finished build.
"""
import argparse
import collections
import json
import os
import re
import shlex
import subprocess
import sys

DEFAULT_ROOTS = ("lib/src", "mock-api/src", "conformance/src", "conformance/ref",
                 "conformance/driver", "tools/src")
DEFINED_TYPES = set("TDBRCVWGSiu")  # global text, data, bss, rodata, common, weak, ...


_NM_CACHE = {}


def nm_symbols(obj):
    """(defined, undefined) global symbol sets of one object file."""
    if obj in _NM_CACHE:
        return _NM_CACHE[obj]
    out = subprocess.run(["nm", "-g", "-P", obj], check=True, capture_output=True,
                         text=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            undefined.add(name)
        elif kind in DEFINED_TYPES:
            defined.add(name)
    _NM_CACHE[obj] = (defined, undefined)
    return defined, undefined


def build_graph(objects, names):
    """objects: list of paths; names: path -> display name.
    Returns {name: {name: set(symbols)}} (edges a -> b with the symbols a uses from b)."""
    definers = collections.defaultdict(set)
    undefined = {}
    for obj in objects:
        d, u = nm_symbols(obj)
        undefined[obj] = u
        for sym in d:
            definers[sym].add(obj)
    graph = {names[o]: collections.defaultdict(set) for o in objects}
    for obj in objects:
        for sym in undefined[obj]:
            for other in definers.get(sym, ()):
                if other != obj:
                    graph[names[obj]][names[other]].add(sym)
    return graph


def sccs(graph):
    """Tarjan's strongly connected components, iterative."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                out.append(sorted(comp))
    return out


MAX_CYCLES = 40  # per component; the edge list below them names every dependency anyway


def elementary_cycles(graph, members, limit=MAX_CYCLES):
    """Every simple cycle inside members, each once (it starts at its smallest
    file), shortest first; at most limit of them (and whether some were cut)."""
    cycles = []
    for start in sorted(members):
        allowed = {m for m in members if m >= start}
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in sorted(graph[node], reverse=True):
                if nxt == start:
                    cycles.append(path + [start])
                elif nxt in allowed and nxt not in path:
                    stack.append((nxt, path + [nxt]))
            if len(cycles) > 10 * limit:
                break
    cycles.sort(key=lambda c: (len(c), c))
    return cycles[:limit], len(cycles) > limit


def report_cycles(unit, graph, seen):
    """Prints the cycles of one link unit not already printed; returns how many components."""
    found = 0
    for comp in sccs(graph):
        if len(comp) < 2:
            continue
        key = frozenset(comp)
        if key in seen:
            continue
        seen.add(key)
        found += 1
        members = set(comp)
        print("depcycles: [%s] %d files depend on each other: %s" % (unit, len(comp), " ".join(comp)))
        cycles, cut = elementary_cycles(graph, members)
        for cyc in cycles:
            print("  " + " -> ".join(cyc))
        if cut:
            print("  ... (more cycles; the edges below are all of them)")
        for a in comp:
            for b in sorted(graph[a]):
                if b in members:
                    syms = sorted(graph[a][b])
                    more = " (+%d more)" % (len(syms) - 4) if len(syms) > 4 else ""
                    print("    %s -> %s: %s%s" % (a, b, ", ".join(syms[:4]), more))
    return found


def output_of(entry):
    """The object a compile_commands.json entry writes (absolute), or None."""
    if "output" in entry:
        out = entry["output"]
    else:
        args = entry.get("arguments") or shlex.split(entry["command"])
        out = None
        for i, a in enumerate(args):
            if a == "-o" and i + 1 < len(args):
                out = args[i + 1]
            elif a.startswith("-o") and len(a) > 2:
                out = a[2:]
        if out is None:
            return None
    return os.path.normpath(os.path.join(entry["directory"], out))


class NotBuilt(Exception):
    pass


def load_units(build, srcdir, roots):
    """Link units from the build dir: [(name, [objects], {object: display name})]."""
    db = json.load(open(os.path.join(build, "compile_commands.json")))
    # target dir (…/CMakeFiles/NAME.dir) -> {object: source}
    targets = collections.defaultdict(dict)
    for entry in db:
        obj = output_of(entry)
        if obj is None:
            continue
        m = re.match(r"(.*/CMakeFiles/[^/]+\.dir)/", obj)
        if not m:
            continue
        src = os.path.relpath(os.path.normpath(os.path.join(entry["directory"], entry["file"])), srcdir)
        targets[m.group(1)][obj] = src

    def production(objs):
        return all(any(src.startswith(r.rstrip("/") + "/") for r in roots) for src in objs.values())

    # archives: absolute path of lib*.a -> target dir (from the library's link.txt: "ar qc ARCHIVE ...")
    archive_of, links = {}, {}
    for tdir in targets:
        link = os.path.join(tdir, "link.txt")
        if not os.path.exists(link):
            continue
        base = os.path.dirname(os.path.dirname(tdir))  # the dir holding CMakeFiles/
        words = shlex.split(open(link).read().splitlines()[0])
        if len(words) >= 3 and re.fullmatch(r"(.*-)?ar(-[0-9.]+)?", os.path.basename(words[0])):
            archive_of[os.path.normpath(os.path.join(base, words[2]))] = tdir
        else:
            links[tdir] = [os.path.normpath(os.path.join(base, w)) for w in words if w.endswith(".a")]

    units = []
    # libraries first, so that a library's cycle is reported under its own name
    for tdir, objs in sorted(targets.items(), key=lambda t: (t[0] in links, t[0])):
        if not production(objs):
            continue
        name = os.path.basename(tdir)[:-4]
        unit_objs = dict(objs)
        for archive in links.get(tdir, ()):
            lib = archive_of.get(archive)
            if lib is not None and production(targets[lib]):
                unit_objs.update(targets[lib])
        missing = [o for o in unit_objs if not os.path.exists(o)]
        if missing:
            raise NotBuilt("depcycles: %s not built (e.g. %s); build first" % (name, missing[0]))
        units.append((name, sorted(unit_objs), unit_objs))
    return units


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build", nargs="?", default="build/default")
    ap.add_argument("--src", default=".", help="the source tree (default: .)")
    ap.add_argument("--roots", default=",".join(DEFAULT_ROOTS),
                    help="comma-separated production source dirs, relative to --src")
    ap.add_argument("--objects", nargs="+", metavar=("NAME", "OBJ"),
                    help="check one link unit NAME made of the given objects")
    args = ap.parse_args(argv)

    if args.objects:
        if len(args.objects) < 2:
            ap.error("--objects needs a name and at least one object")
        objs = args.objects[1:]
        names = {o: re.sub(r"\.o$", "", os.path.basename(o)) for o in objs}
        units = [(args.objects[0], objs, names)]
    else:
        if not os.path.exists(os.path.join(args.build, "compile_commands.json")):
            print("depcycles: no %s/compile_commands.json; configure and build first" % args.build,
                  file=sys.stderr)
            return 2
        try:
            units = load_units(os.path.abspath(args.build), os.path.abspath(args.src),
                               [r.strip() for r in args.roots.split(",") if r.strip()])
        except NotBuilt as e:
            print(e, file=sys.stderr)
            return 2
        if not units:
            print("depcycles: no production objects in %s" % args.build, file=sys.stderr)
            return 2
    seen, found, files = set(), 0, set()
    for name, objs, names in units:
        files.update(names.values())
        found += report_cycles(name, build_graph(objs, names), seen)
    if found:
        print("depcycles: %d circular dependenc%s (allowed layering: ci/README.md)" %
              (found, "y" if found == 1 else "ies"), file=sys.stderr)
        return 1
    print("depcycles: no circular dependency (%d link units, %d files)" % (len(units), len(files)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
