#!/usr/bin/env python3
"""compat_table: README.md's "SDK compatibility" table against the mock's
route tables, so that the table cannot call a served route "not modelled"
again (issue 46: it did, for computer use, after the routes landed).

Each row of the table names the routes it is about in a marker, anywhere in
the row:

    | computer use ... <!-- routes: * /v1/sandboxes/{id}/computer/... --> | supported | ... |

A route is METHOD PATH: METHOD is GET, POST, ... or `*` (any); a path
segment is a literal, `{name}` (any one segment) or, last, `...` (any
number of further segments, none included). A {name} of a marker stands
for any value (a sandbox id): it meets a {name} of the mock's route, never
a literal one (`{id}/shell` is not `by-ip/{ip}`). Several routes are separated
by commas; `<!-- routes: none -->` marks a row about no route of its own
(error handling, which every route shares).

The routes the mock serves are read from its C sources: every array
`const mock_route NAME[] = { {"METHOD", "/path", ...}, ... };` in a .c file
anywhere under mock-api/src (found by their type, so moving the files into
other folders changes nothing). The mock has no endpoint or flag that lists
its routes, and these arrays are the only place a route is defined
(http/route.h: "a new route is one row here and one handler").

Findings (exit 1):
  - a row whose status (its second cell) begins "not modelled" names a
    route the mock serves;
  - any other row names a route the mock does not serve;
  - a route of a table other than the admin API's (mock_admin_routes: the
    mock's own, mock-api/ADMIN.md; no SDK calls it) is named by no row;
  - a row has no marker, or a marker that does not parse.
Setup errors (exit 2): no "## SDK compatibility" table, no route table
found, or one of the tables the check needs (mock_api_routes,
mock_self_routes) missing: then the parser, not the docs, needs updating,
and passing with nothing read would prove nothing.

Usage: ci/compat_table.py [--readme FILE] [--src DIR]   (run from the repo
root; defaults README.md and mock-api/src). Self-test:
ci/test_compat_table.py (ctest lint_compat_table_selftest).
"""
import argparse
import os
import re
import sys

SECTION = "## SDK compatibility"
NEEDED_TABLES = ("mock_api_routes", "mock_self_routes")
# Tables whose routes need no row: what no SDK calls.
EXEMPT_TABLES = {"mock_admin_routes": "the mock's own admin API (mock-api/ADMIN.md)"}
METHODS = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "*"}

MARKER = re.compile(r"<!--\s*routes:(.*?)-->")
TABLE_START = re.compile(r"\bmock_route\s+(\w+)\s*\[\s*\]\s*=\s*\{")
ROW = re.compile(r'\{\s*"([A-Z]+)"\s*,\s*"([^"]*)"')


class SetupError(Exception):
    pass


def strip_comments(text):
    """C text with comments blanked (newlines kept, for line numbers)."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))
    return re.sub(r"/\*.*?\*/|//[^\n]*", blank, text, flags=re.S)


def read_route_tables(src):
    """{table name: [(method, path, file, line)]} of every mock_route array
    defined in a .c file under src."""
    tables = {}
    for root, dirs, files in os.walk(src):
        dirs.sort()
        for name in sorted(files):
            if not name.endswith(".c"):
                continue
            path = os.path.join(root, name)
            with open(path, encoding="utf-8", errors="replace") as f:
                text = strip_comments(f.read())
            for m in TABLE_START.finditer(text):
                end = text.find("};", m.end())
                if end < 0:
                    raise SetupError("%s: table %s has no closing '};'" % (path, m.group(1)))
                rows = []
                for r in ROW.finditer(text, m.end(), end):
                    line = text.count("\n", 0, r.start()) + 1
                    rows.append((r.group(1), r.group(2), path, line))
                tables[m.group(1)] = rows
    return tables


def split_cells(line):
    """The cells of a Markdown table row (an escaped \\| stays in its cell)."""
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    return [c.strip() for c in re.split(r"(?<!\\)\|", body)]


def read_table(readme):
    """[(line number, cells, raw line)] of the first table under SECTION."""
    with open(readme, encoding="utf-8") as f:
        lines = f.read().split("\n")
    try:
        start = next(i for i, l in enumerate(lines) if l.strip() == SECTION)
    except StopIteration:
        raise SetupError("%s: no %r section" % (readme, SECTION))
    rows = []
    for i in range(start + 1, len(lines)):
        line = lines[i]
        if line.startswith("## "):
            break
        if line.lstrip().startswith("|"):
            rows.append((i + 1, split_cells(line), line))
        elif rows:
            break
    if len(rows) < 3:
        raise SetupError("%s: no table with rows under %r" % (readme, SECTION))
    return rows[2:]  # past the header and the |---| line


def parse_route(text):
    """(method, segments, open_end) of 'METHOD /a/{b}/...', or a message."""
    parts = text.split()
    if len(parts) != 2:
        return "%r: want METHOD PATH" % text
    method, path = parts
    if method not in METHODS:
        return "%r: method %s is not one of %s" % (text, method, " ".join(sorted(METHODS)))
    if not path.startswith("/"):
        return "%r: the path must start with /" % text
    segs = path.strip("/").split("/")
    open_end = segs[-1] == "..."
    if open_end:
        segs = segs[:-1]
    if "..." in segs or "" in segs:
        return "%r: '...' only as the last segment, no empty segment" % text
    return method, segs, open_end


def seg_match(mark, served):
    """A marker's {name} is an arbitrary value (a sandbox's id): only a
    served {name} takes it, not a literal such as by-ip; a marker's literal
    is taken by the same literal or a served {name}, as the mock's matcher
    takes a request's."""
    return served.startswith("{") or (mark == served and not mark.startswith("{"))


def matches(pattern, method, path):
    """Whether the marker's route covers the served route (METHOD, PATH)."""
    pmethod, psegs, open_end = pattern
    if pmethod != "*" and pmethod != method:
        return False
    segs = path.strip("/").split("/")
    if len(segs) < len(psegs) or (not open_end and len(segs) != len(psegs)):
        return False
    return all(seg_match(p, s) for p, s in zip(psegs, segs))


def check(readme, src):
    """The findings, one string each."""
    tables = read_route_tables(src)
    missing = [t for t in NEEDED_TABLES if t not in tables]
    if missing:
        raise SetupError("%s: no route table named %s (found: %s); the parser needs updating"
                         % (src, ", ".join(missing), ", ".join(sorted(tables)) or "none"))
    served = [(t, *row) for t, rows in sorted(tables.items()) for row in rows]
    findings = []
    covered = set()
    for lineno, cells, raw in read_table(readme):
        feature = re.sub(r"\s*<!--.*?-->", "", cells[0])
        where = "%s:%d: row %r" % (readme, lineno, feature[:60])
        marks = MARKER.findall(raw)
        if len(marks) != 1:
            findings.append("%s: %s routes marker (want one <!-- routes: METHOD /path, ... -->"
                            " or <!-- routes: none -->)" % (where, "no" if not marks else "more than one"))
            continue
        status = re.sub(r"[*_`]", "", cells[1] if len(cells) > 1 else "").strip().lower()
        absent = status.startswith("not modelled")
        items = [s.strip() for s in marks[0].split(",")]
        if items == ["none"]:
            continue
        served_here = []
        for item in items:
            pattern = parse_route(item)
            if isinstance(pattern, str):
                findings.append("%s: routes marker: %s" % (where, pattern))
                continue
            hits = [s for s in served if matches(pattern, s[1], s[2])]
            covered.update(hits)
            served_here += [h for h in hits if h not in served_here]
            if not absent and not hits:
                findings.append("%s: says %r but the mock serves no route %s"
                                % (where, cells[1], item))
        if absent and served_here:
            # one finding per row: the first routes say where, the count how many
            shown = ", ".join("%s %s (%s:%d, %s)" % (m, p, f, l, t)
                              for t, m, p, f, l in served_here[:3])
            more = len(served_here) - 3
            findings.append("%s: says %r but the mock serves %d of its routes: %s%s"
                            % (where, cells[1], len(served_here), shown,
                               ", and %d more" % more if more > 0 else ""))
    for row in served:
        table, method, path, cfile, cline = row
        if row not in covered and table not in EXEMPT_TABLES:
            findings.append("%s:%d: %s %s (%s) is served but no row of %s's %r table names it"
                            " (add it to a row's routes marker)"
                            % (cfile, cline, method, path, table, readme, SECTION[3:]))
    return findings, len(served), len(tables)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--readme", default="README.md")
    ap.add_argument("--src", default="mock-api/src")
    args = ap.parse_args()
    try:
        findings, nroutes, ntables = check(args.readme, args.src)
    except (SetupError, OSError) as e:
        print("compat_table: %s" % e, file=sys.stderr)
        return 2
    for f in findings:
        print(f)
    if findings:
        print("compat_table: %d findings: %s's %r table and the mock's routes disagree"
              % (len(findings), args.readme, SECTION[3:]), file=sys.stderr)
        return 1
    print("compat_table: %s's %r table matches the %d routes of %d tables under %s"
          % (args.readme, SECTION[3:], nroutes, ntables, args.src))
    return 0


if __name__ == "__main__":
    sys.exit(main())
