#!/usr/bin/env python3
"""toplevel: fail on a tracked file or folder at the repository's top level
that is not on the list of what belongs there (a log, a core file or a
scratch folder committed by accident with another change).

The list (TOP_LEVEL below) names every entry with what it is for; a new
top-level entry is added there, with its reason, in the change that adds
it. Only tracked entries count (`git ls-files`): build/ and other ignored
or untracked files are the checkout's own business.
Each finding is printed as `NAME: tracked at the top level but not on
ci/toplevel.py's list`.
Exit status: 0 clean, 1 findings, 2 usage.
Usage: ci/toplevel.py [--root DIR]   (default: the repository holding this script)
Self-test: ci/test_lint_checks.py (ctest lint_checks_selftest).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paths  # noqa: E402  (tracked, root_from_args)

TOP_LEVEL = {
    ".ci": "the CI entry point (.ci/run runs ci/test)",
    ".clang-format": "the C formatting style",
    ".clang-tidy": "clang-tidy's checks (ci/lint)",
    ".clusterfuzzlite": "ClusterFuzzLite's build of the fuzz targets",
    ".github": "the GitHub workflows",
    ".gitignore": "what git leaves untracked",
    "CMakeLists.txt": "the top-level build",
    "CMakePresets.json": "the build presets (default, asan, fuzz, ...)",
    "README.md": "the project's README",
    "action.yml": "the GitHub Action that runs sbx-conform",
    "bench": "benchmarks",
    "ci": "the test command, lint and their self-tests",
    "cmake": "CMake helpers",
    "conformance": "sbx-conform, its driver library and reference backends",
    "fixtures": "shared test data (scenarios, egress vectors, gate tables)",
    "fuzz": "libFuzzer targets, corpora and dictionaries",
    "lib": "libsbx",
    "mock-api": "sbx-mock and sbx-cell",
    "tests": "cross-module tests (SDK, walkthrough, Python examples)",
    "tools": "sbxctl",
}


def main(argv):
    root = paths.root_from_args(argv, "toplevel", __doc__)
    if root is None:
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    entries = sorted({f.split("/", 1)[0] for f in paths.tracked(root, "toplevel")})
    stray = [e for e in entries if e not in TOP_LEVEL]
    for e in stray:
        print("toplevel: %s: tracked at the top level but not on ci/toplevel.py's list "
              "(debris: git rm it; a new part of the project: add it to the list, with why)" % e)
    sys.stdout.flush()
    if stray:
        return 1
    print("toplevel: every top-level entry belongs there (%d)" % len(entries))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
