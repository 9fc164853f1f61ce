#!/usr/bin/env python3
"""sizes: fail on production C files or functions that have grown too big.

Limits (issue 12): no .c file over MAX_FILE_LINES lines, no function over
MAX_FUNC_LINES lines, in the production sources of the mock and of
conformance (DEFAULT_DIRS; other dirs can be given on the command line).

A function's length is counted from the line of its name to the line of its
closing brace, both included. Functions are found with a brace-depth scanner
over the source (this codebase's style: a definition's opening brace is the
first brace at depth 0 after a parameter list, its closing brace the matching
one):
  - comments, string literals and character literals are blanked first, so
    braces in them do not count;
  - preprocessor lines (and their backslash continuations) are skipped;
  - of an #if/#ifdef/#ifndef ... #elif/#else ... #endif group only the first
    branch is read for braces (the reference backend's MUT_* variants open
    the same block in each branch; reading all would unbalance the depth);
    the lines of the other branches still count in the length;
  - a depth-0 brace opens a function when the text since the previous
    depth-0 `;` or `}` ends in `)` and is no initializer (`=`) nor a
    struct/union/enum definition.

Allowed to be longer (by name, wherever they are; say why when adding one):
  main         the programs' entry points: option handling, then a straight
               run of setup steps, reads best in one piece;
  parse_args   (conformance/src/main.c) and parse_opt, parse_num_opt
               (mock-api/src/server/main.c): option parsers, one case per
               option, a flat switch that splitting would only scatter.
Exit status: 0 within limits, 1 findings, 2 usage.

Usage: ci/sizes.py [DIR|FILE ...]   (run from the repo root)
"""
import os
import re
import sys

MAX_FILE_LINES = 900
MAX_FUNC_LINES = 100
DEFAULT_DIRS = ("mock-api/src", "conformance/src", "conformance/ref")
ALLOWED_LONG = {"main", "parse_args", "parse_opt", "parse_num_opt"}


def blank_literals(text):
    """text with comments, strings and char literals replaced by spaces
    (newlines kept, so line numbers stay right)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + (c if j - 1 > i else ""))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def code_lines(text):
    """The lines the scanner reads: literals blanked, directives and the
    non-first branches of conditional groups replaced by empty lines."""
    lines = blank_literals(text).split("\n")
    out = []
    stack = []  # per open #if: True while in its first branch
    cont = False
    for line in lines:
        if cont:  # continuation of a directive
            cont = line.rstrip().endswith("\\")
            out.append("")
            continue
        m = re.match(r"\s*#\s*(\w+)", line)
        if m:
            d = m.group(1)
            if d in ("if", "ifdef", "ifndef"):
                stack.append(True)
            elif d in ("elif", "else") and stack:
                stack[-1] = False
            elif d == "endif" and stack:
                stack.pop()
            cont = line.rstrip().endswith("\\")
            out.append("")
            continue
        out.append(line if all(stack) else "")
    return out


def functions(text):
    """[(name, first line, last line)] of the function definitions in C text (1-based)."""
    found = []
    depth = 0
    header = []      # characters since the last depth-0 ; or } (directives are blank lines)
    header_ln = []   # the line of each of them
    current = None   # (name, first line) of the function being read
    for lineno, line in enumerate(code_lines(text), 1):
        for ch in line + "\n":
            if depth > 0:
                if ch == "{":
                    depth += 1
                elif ch == "}":
                    depth -= 1
                    if depth == 0:
                        if current is not None:
                            found.append((current[0], current[1], lineno))
                        current = None
                continue
            if ch in ";}":
                header, header_ln = [], []
            elif ch == "{":
                before = "".join(header)
                name = function_name(before)
                current = None
                if name is not None:
                    m = list(re.finditer(r"\b%s\s*\(" % re.escape(name), before))
                    current = (name, header_ln[m[-1].start()] if m else lineno)
                depth = 1
                header, header_ln = [], []
            else:
                header.append(ch)
                header_ln.append(lineno)
    return found


def function_name(before):
    """The defined function's name when before (the text up to a depth-0
    brace) is a function header, else None."""
    s = before.strip()
    if not s.endswith(")"):
        return None
    if "=" in s.split("(")[0] or re.match(r"(typedef\b|.*\b(struct|union|enum)\s+\w*\s*$)", s):
        return None
    # the identifier before the parameter list: find the '(' matching the final ')'
    depth = 0
    for i in range(len(s) - 1, -1, -1):
        if s[i] == ")":
            depth += 1
        elif s[i] == "(":
            depth -= 1
            if depth == 0:
                m = re.search(r"(\w+)\s*$", s[:i])
                if not m or m.group(1) in ("if", "while", "for", "switch", "return", "sizeof"):
                    return None
                return m.group(1)
    return None


def check_file(path, problems):
    text = open(path, encoding="utf-8", errors="replace").read()
    nlines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    if nlines > MAX_FILE_LINES:
        problems.append("%s: %d lines (limit %d)" % (path, nlines, MAX_FILE_LINES))
    for name, first, last in functions(text):
        length = last - first + 1
        if length > MAX_FUNC_LINES and name not in ALLOWED_LONG:
            problems.append("%s:%d: %s() is %d lines (limit %d)" % (path, first, name, length,
                                                                   MAX_FUNC_LINES))


def main(argv):
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__)
        return 0
    targets = argv or list(DEFAULT_DIRS)
    files = []
    for t in targets:
        if os.path.isdir(t):
            # a folder and its subfolders (mock-api/src is in folders by layer)
            for d, subs, names in os.walk(t):
                subs.sort()
                files += sorted(os.path.join(d, f) for f in names if f.endswith(".c"))
        elif os.path.isfile(t):
            files.append(t)
        else:
            print("sizes: no such file or dir: %s" % t, file=sys.stderr)
            return 2
    problems = []
    for f in files:
        check_file(f, problems)
    for p in problems:
        print("sizes: " + p)
    if problems:
        print("sizes: %d over the limits (ci/sizes.py says how they are counted)" % len(problems),
              file=sys.stderr)
        return 1
    print("sizes: within limits (%d files)" % len(files))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
