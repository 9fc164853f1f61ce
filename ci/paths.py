#!/usr/bin/env python3
"""paths: fail on a file path named in a comment or a Markdown file that
does not exist (a comment that sends the reader to a file that moved).

What is read (tracked files only, `git ls-files`; fuzz corpora and
node_modules left out):
  - C (.c, .h): the comments (/* */ and //), not the code, so
    `#include <sys/stat.h>` is no finding;
  - Python (.py): the comments and the docstrings;
  - shell (.sh, or a shebang naming sh/bash), CMake (CMakeLists.txt,
    .cmake), YAML (.yml, .yaml): the `#` comments;
  - Markdown (.md): the whole text.
A path is a word with at least one `/` ending in .c, .h, .py, .sh, .md,
.json, .yml or .yaml (`ops/core.h`, `mock-api/src/ops/ops.c`,
`fixtures/gate/*.json`; `*` and `?` are globs that must match a file). A
word preceded by `/`, `:`, `@` or a letter, as in a URL or an absolute
path, is not one.

Which paths are this repository's (the rule): a path is checked when
  - its first component is a top-level folder of the repository
    (`mock-api/...`, `fuzz/...`: so a renamed folder is found), or
  - its first component is a folder in one of the places it may be
    relative to (below) and, when the path has two folders or more, the
    second is a folder inside that one (`src/guest/cell.c` from mock-api/
    is ours; langflow's `src/lfx/...` named in lib/, where lib/src has no
    lfx/, is not);
otherwise it names another project's file (`spec/egress.md` of the shared
spec, a placeholder such as `path/to/backend.py`) and is left alone. The
places, for a file F:
  1. the repository's top level (`mock-api/README.md`, `ci/lint`);
  2. F's own folder and each folder above it (`src/server/main.c` from
     mock-api/README.md, `cell/main.c` from mock-api/src/...);
  3. the source roots of F's module: `src/` and `include/` of each of those
     folders (`ops/core.h` from mock-api/src/guest/, `sbx/mock.h` from
     mock-api/, i.e. mock-api/include/sbx/mock.h);
  4. every `include/` folder of the repository (the libraries' public
     headers, `sbx/*.h`, which any module includes by that name).
A checked path must exist in one of the places (any of them, so a
header's name as the code includes it is fine). A path beginning with
`./` or `../` is resolved from F's folder only, and checked by the same
rule from there: when it stays inside the repository and its next
component is a folder there (so `../shared/spec/...`, the spec beside the
checkout, and `./my-scenario.json`, a user's file, are not checked).
A component in capitals (`NAME`, `FILE`) that does not exist as such is a
placeholder: it stands for any name (`fixtures/scenarios/NAME.json` must
match `fixtures/scenarios/*.json`).
A line may opt out with `paths: outside` in it (a path of another project
whose first folder happens to share a name with one of ours; say whose).

Each finding is printed as `FILE:LINE: PATH: no such file (looked in ...)`.
Exit status: 0 clean, 1 findings, 2 usage.
Usage: ci/paths.py [--root DIR]   (default: the repository holding this script)
Self-test: ci/test_lint_checks.py (ctest lint_checks_selftest).
"""
import fnmatch
import glob
import io
import os
import re
import subprocess
import sys
import tokenize

EXTENSIONS = ("c", "h", "py", "sh", "md", "json", "yml", "yaml")
PATH = re.compile(r"(?<![\w./@:$-])((?:\.\.?/)*[\w.+-]+(?:/[\w.+*?-]+)+\.(?:%s))(?![\w/])(?!\.\w)"
                  % "|".join(EXTENSIONS))
SKIPPED = ("fuzz/corpus/*", "*/node_modules/*", "node_modules/*")
OPT_OUT = "paths: outside"


def blank(text, keep):
    """text with everything but the spans in keep ([(start, end)]) replaced
    by spaces, newlines kept so line numbers stay right."""
    out, pos = [], 0
    for start, end in keep:
        out.append(re.sub(r"[^\n]", " ", text[pos:start]))
        out.append(text[start:end])
        pos = end
    out.append(re.sub(r"[^\n]", " ", text[pos:]))
    return "".join(out)


def c_comments(text):
    """The spans of the comments of C text (string and char literals skipped)."""
    spans, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            spans.append((i, j))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            spans.append((i, j))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            i += 1
    return spans


def hash_comments(text):
    """The spans of `#` comments (shell, CMake, YAML): a # at the start of a
    word and outside quotes, to the end of its line."""
    spans, offset = [], 0
    for line in text.split("\n"):
        quote = None
        for k, ch in enumerate(line):
            if quote:
                if ch == quote:
                    quote = None
            elif ch in "\"'":
                quote = ch
            elif ch == "#" and (k == 0 or line[k - 1] in " \t"):
                spans.append((offset + k, offset + len(line)))
                break
        offset += len(line) + 1
    return spans


def python_comments(text):
    """The spans of a Python file's comments and docstrings (a string that
    is a statement of its own). Falls back to `#` comments when the file
    does not tokenize."""
    starts = [0]
    for line in text.split("\n"):
        starts.append(starts[-1] + len(line) + 1)

    def at(row, col):
        return starts[row - 1] + col

    spans = []
    previous = tokenize.NEWLINE
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                spans.append((at(*tok.start), at(*tok.end)))
            elif tok.type == tokenize.STRING and previous in (tokenize.NEWLINE, tokenize.INDENT,
                                                              tokenize.DEDENT, tokenize.NL):
                spans.append((at(*tok.start), at(*tok.end)))
            if tok.type not in (tokenize.COMMENT, tokenize.NL):
                previous = tok.type
    except (tokenize.TokenError, SyntaxError):
        return hash_comments(text)
    return spans


def readable_text(path, text):
    """The part of a file whose paths are checked, or None for a kind of
    file that is not read."""
    name = os.path.basename(path)
    if name.endswith((".c", ".h")):
        return blank(text, c_comments(text))
    if name.endswith(".py"):
        return blank(text, python_comments(text))
    if name.endswith(".md"):
        return text
    first = text.split("\n", 1)[0]
    if (name.endswith((".sh", ".yml", ".yaml", ".cmake")) or name == "CMakeLists.txt"
            or re.match(r"#!.*\b(ba)?sh\b", first)):
        return blank(text, hash_comments(text))
    if re.match(r"#!.*\bpython", first):
        return blank(text, python_comments(text))
    return None


def places(root, rel_dir, includes):
    """The folders a path named in a file of rel_dir may be relative to
    (the rule in the docstring), nearest first."""
    found = []
    d = rel_dir
    while True:
        for p in (d, os.path.join(d, "src"), os.path.join(d, "include")):
            p = os.path.normpath(p)
            if p not in found and os.path.isdir(os.path.join(root, p)):
                found.append(p)
        if d in ("", "."):
            break
        d = os.path.dirname(d)
    if "." not in found:
        found.append(".")
    found += [d for d in includes if d not in found]
    return found


PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]+$")


def exists(root, rel):
    full = os.path.join(root, rel)
    if os.path.exists(full):
        return True
    parts = rel.split("/")
    stem, dot, ext = parts[-1].partition(".")
    parts = ["*" if PLACEHOLDER.match(p) else p for p in parts[:-1]]
    parts.append(("*" if PLACEHOLDER.match(stem) else stem) + dot + ext)
    pattern = "/".join(parts)
    if any(ch in pattern for ch in "*?"):
        return bool(glob.glob(os.path.join(root, pattern)))
    return False


def check_path(root, rel_dir, path, includes):
    """None when path exists or is not this repository's, else the places
    looked in."""
    if path.startswith(("./", "../")):
        lead = re.match(r"(?:\.\.?/)+", path).group(0)
        base = os.path.normpath(os.path.join(rel_dir, lead))
        rest = path[len(lead):]
        if base.startswith("..") or "/" not in rest:
            return None  # outside the repository, or a file of the user's
        if not os.path.isdir(os.path.join(root, base, rest.split("/", 1)[0])):
            return None  # not one of our folders: another checkout's path
        return None if exists(root, os.path.join(base, rest)) else [base]
    folders = path.split("/")[:-1]
    bases = places(root, rel_dir, includes)
    if not os.path.isdir(os.path.join(root, folders[0])):
        lead = folders[:2]  # not a top-level folder: its first two folders must be ours
        if not any(os.path.isdir(os.path.join(root, b, *lead)) for b in bases):
            return None  # another project's path
    if any(exists(root, os.path.join(b, path)) for b in bases):
        return None
    return [b for b in bases if os.path.isdir(os.path.join(root, b, folders[0]))]


def tracked(root, prog="paths"):
    """Every tracked file of the checkout at root, relative to it."""
    out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit("%s: %s is no git checkout: %s" % (prog, root, out.stderr.strip()))
    return [f for f in out.stdout.split("\0") if f]


def root_from_args(argv, prog, doc):
    """The checkout a check reads: --root DIR, else the repository holding
    ci/; None after --help or a usage error (printed)."""
    if any(a in ("-h", "--help") for a in argv):
        print(doc)
        return None
    if argv[:1] == ["--root"] and len(argv) == 2:
        return argv[1]
    if argv:
        print("usage: ci/%s.py [--root DIR]" % prog, file=sys.stderr)
        return None
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def check_file(root, rel, includes, problems):
    full = os.path.join(root, rel)
    if not os.path.isfile(full) or os.path.islink(full):
        return
    try:
        with open(full, encoding="utf-8") as f:
            text = f.read()
    except (UnicodeDecodeError, OSError):
        return  # binary or unreadable: nothing a reader follows
    readable = readable_text(rel, text)
    if readable is None:
        return
    lines = text.split("\n")
    rel_dir = os.path.dirname(rel)
    for m in PATH.finditer(readable):
        lineno = readable.count("\n", 0, m.start()) + 1
        if OPT_OUT in lines[lineno - 1]:
            continue
        looked = check_path(root, rel_dir, m.group(1), includes)
        if looked is not None:
            problems.append("%s:%d: %s: no such file (looked in %s)"
                            % (rel, lineno, m.group(1), ", ".join(looked)))


def main(argv):
    root = root_from_args(argv, "paths", __doc__)
    if root is None:
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    problems = []
    files = [f for f in tracked(root) if not any(fnmatch.fnmatch(f, s) for s in SKIPPED)]
    includes = sorted({f[:f.index("/include/") + 8] if not f.startswith("include/") else "include"
                       for f in files if f.startswith("include/") or "/include/" in f})
    for rel in files:
        check_file(root, rel, includes, problems)
    for p in problems:
        print("paths: " + p)
    sys.stdout.flush()
    if problems:
        print("paths: %d path(s) above name no file (ci/paths.py says how paths are resolved)"
              % len(problems), file=sys.stderr)
        return 1
    print("paths: every path named in comments and Markdown exists (%d files)" % len(files))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
