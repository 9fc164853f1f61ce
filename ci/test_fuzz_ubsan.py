#!/usr/bin/env python3
"""The fuzz stage halts on an UBSan finding (issue 19 item 25).

Checks that the SBX_FUZZ build flags in CMakeLists.txt make UBSan fatal
(-fno-sanitize-recover=undefined), that ci/test's fuzz_smoke runs each target
with UBSAN_OPTIONS=halt_on_error=1 (in fuzz_one), and, when clang is installed, that a
program with undefined behaviour built with those flags and run with that
environment exits non-zero instead of printing and going on."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fuzz_flags():
    text = open(os.path.join(ROOT, "CMakeLists.txt")).read()
    block = re.search(r"^if\(SBX_FUZZ\b[^\n]*\)(.*?)^endif\(\)", text, re.S | re.M)
    assert block, "no if(SBX_FUZZ) block in CMakeLists.txt"
    opts = re.search(r"add_compile_options\((.*?)\)", block.group(1), re.S)
    assert opts, "no add_compile_options in the SBX_FUZZ block"
    return opts.group(1).split()


def ubsan_env():
    text = open(os.path.join(ROOT, "ci", "test")).read()
    smoke = re.search(r"fuzz_smoke\(\) \{(.*?)\n\}", text, re.S)
    assert smoke, "no fuzz_smoke in ci/test"
    # fuzz_smoke runs each target through fuzz_one
    assert "fuzz_one" in smoke.group(1), "ci/test fuzz_smoke does not run fuzz_one"
    body = re.search(r"fuzz_one\(\) \{(.*?)\n\}", text, re.S)
    assert body, "no fuzz_one in ci/test"
    m = re.search(r"UBSAN_OPTIONS=(\S+)", body.group(1))
    assert m, "ci/test fuzz_one does not set UBSAN_OPTIONS"
    return m.group(1)


def main():
    flags = fuzz_flags()
    assert "-fno-sanitize-recover=undefined" in flags, f"fuzz flags {flags} let UBSan recover"
    env = ubsan_env()
    assert "halt_on_error=1" in env.split(":"), f"UBSAN_OPTIONS={env} does not halt"
    clang = shutil.which("clang")
    if clang is None:
        print("clang not installed: flags checked, run skipped")
        return 0
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "ub.c")
        with open(src, "w") as f:
            f.write("#include <limits.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
                    "int main(int c, char **v) { int x = INT_MAX - 1 + c; (void)v;\n"
                    "  printf(\"%d\\n\", x + atoi(\"5\")); return 0; }\n")
        cflags = [f for f in flags if not f.startswith("-fsanitize=fuzzer-no-link")]
        cflags.append("-fsanitize=address,undefined")
        out = os.path.join(d, "ub")
        cc = subprocess.run([clang, *cflags, src, "-o", out], capture_output=True, text=True)
        if cc.returncode != 0:
            print("clang cannot build with the sanitizers here: run skipped\n" + cc.stderr)
            return 0
        run = subprocess.run([out], capture_output=True, text=True,
                             env=dict(os.environ, UBSAN_OPTIONS=env))
        assert run.returncode != 0, "an UBSan finding did not stop the program:\n" + run.stderr
        assert "runtime error" in run.stderr, run.stderr
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
