#!/usr/bin/env python3
"""Self-test of ci/lint's structure checks: depcycles.py finds a cycle between
two real objects (and passes without one), both given directly and through a
miniature CMake build dir; sizes.py counts files and functions as documented;
paths.py finds a path named in a comment or Markdown that does not exist and
leaves other projects' paths alone; toplevel.py refuses a stray top-level file.
Run: python3 ci/test_lint_checks.py (ctest: lint_checks_selftest)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import paths  # noqa: E402
import sizes  # noqa: E402

CC = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


def run(*args, cwd=None):
    p = subprocess.run([sys.executable] + list(args), cwd=cwd, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


@unittest.skipIf(CC is None or shutil.which("nm") is None, "needs a C compiler and nm")
class DepCycles(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="depcycles-test-")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def compile(self, src_dir, obj_dir, name, code):
        src = os.path.join(src_dir, name)
        os.makedirs(src_dir, exist_ok=True)
        os.makedirs(obj_dir, exist_ok=True)
        with open(src, "w") as f:
            f.write(code)
        obj = os.path.join(obj_dir, name + ".o")
        subprocess.run([CC, "-c", "-O0", "-o", obj, src], check=True)
        return src, obj

    def objects(self, files):
        return [self.compile(self.tmp, self.tmp, n, c)[1] for n, c in files]

    def test_two_files_calling_each_other_fail(self):
        objs = self.objects([("a.c", "int b(int);\nint a(int x) { return x ? b(x - 1) : 0; }\n"),
                             ("b.c", "int a(int);\nint b(int x) { return a(x); }\n")])
        rc, out = run(os.path.join(HERE, "depcycles.py"), "--objects", "unit", *objs)
        self.assertEqual(rc, 1, out)
        self.assertIn("a.c -> b.c -> a.c", out)
        self.assertIn("a.c -> b.c: b", out)  # the symbol behind the edge

    def test_a_chain_passes(self):
        objs = self.objects([("a.c", "int b(int);\nint a(int x) { return b(x); }\n"),
                             ("b.c", "int c(int);\nint b(int x) { return c(x); }\n"),
                             ("c.c", "int c(int x) { return x; }\n")])
        rc, out = run(os.path.join(HERE, "depcycles.py"), "--objects", "unit", *objs)
        self.assertEqual(rc, 0, out)
        self.assertIn("no circular dependency", out)

    def test_data_references_count_and_every_cycle_is_listed(self):
        # a -> b by a variable, b -> c -> a by calls: one component, two cycles
        objs = self.objects([("a.c", "extern int bv;\nint c(void);\nint a(void) { return bv + c(); }\n"),
                             ("b.c", "int a(void);\nint bv = 1;\nint b(void) { return a(); }\n"),
                             ("c.c", "int a(void);\nint c(void) { return a(); }\n")])
        rc, out = run(os.path.join(HERE, "depcycles.py"), "--objects", "unit", *objs)
        self.assertEqual(rc, 1, out)
        self.assertIn("a.c -> b.c -> a.c", out)
        self.assertIn("a.c -> c.c -> a.c", out)

    def make_build_dir(self, files, target="x", srcsub="lib/src"):
        """A miniature CMake build dir: compile_commands.json, the objects
        under CMakeFiles/TARGET.dir, and link.txt of a static library."""
        src_root = os.path.join(self.tmp, "src")
        build = os.path.join(self.tmp, "build")
        tdir_rel = os.path.join("CMakeFiles", target + ".dir")
        db, objs = [], []
        for name, code in files:
            src, obj = self.compile(os.path.join(src_root, srcsub),
                                    os.path.join(build, "lib", tdir_rel, "src"), name, code)
            rel_obj = os.path.relpath(obj, os.path.join(build, "lib"))
            db.append({"directory": os.path.join(build, "lib"), "file": src,
                       "command": "%s -O0 -o %s -c %s" % (CC, rel_obj, src)})
            objs.append(rel_obj)
        with open(os.path.join(build, "compile_commands.json"), "w") as f:
            json.dump(db, f)
        with open(os.path.join(build, "lib", tdir_rel, "link.txt"), "w") as f:
            f.write("/usr/bin/ar qc lib%s.a %s\n/usr/bin/ranlib lib%s.a\n" % (target, " ".join(objs), target))
        return src_root, build

    def test_build_dir_mode_names_the_library_and_the_sources(self):
        src, build = self.make_build_dir([("a.c", "int b(void);\nint a(void) { return b(); }\n"),
                                          ("b.c", "int a(void);\nint b(void) { return a(); }\n")])
        rc, out = run(os.path.join(HERE, "depcycles.py"), build, "--src", src, "--roots", "lib/src")
        self.assertEqual(rc, 1, out)
        self.assertIn("[x]", out)
        self.assertIn("lib/src/a.c -> lib/src/b.c -> lib/src/a.c", out)

    def test_build_dir_mode_skips_non_production_code(self):
        src, build = self.make_build_dir([("a.c", "int b(void);\nint a(void) { return b(); }\n"),
                                          ("b.c", "int a(void);\nint b(void) { return a(); }\n")],
                                         srcsub="tests")
        rc, out = run(os.path.join(HERE, "depcycles.py"), build, "--src", src, "--roots", "lib/src")
        self.assertEqual(rc, 2, out)  # nothing to check: said, not passed silently

    def test_no_compile_commands_is_a_usage_error(self):
        rc, out = run(os.path.join(HERE, "depcycles.py"), self.tmp)
        self.assertEqual(rc, 2, out)


def body(n):
    """A function body of exactly n lines in all, with braces hidden in literals."""
    inner = ["\tx += '{';", '\tx += sizeof("}}}");', "\t/* } */", "\t// {"]
    lines = ["static int f%d(int x)" % n, "{"]
    while len(lines) < n - 2:
        lines.append(inner[len(lines) % len(inner)])
    lines += ["\treturn x;", "}"]
    return lines


class Sizes(unittest.TestCase):
    def lengths(self, text):
        return {name: last - first + 1 for name, first, last in sizes.functions(text)}

    def test_function_length_counts_name_to_closing_brace(self):
        text = "\n".join(body(100) + [""] + body(101)) + "\n"
        self.assertEqual(self.lengths(text), {"f100": 100, "f101": 101})

    def test_conditional_branches_are_read_once(self):
        text = ("int g(int a)\n{\n#if MUT_X\n\tif (a) {\n#else\n\tif (!a) {\n#endif\n"
                "\t\ta++;\n\t}\n\treturn a;\n}\n"
                "#define BLOCK { {\nstatic const int t[] = { 1, 2 };\n"
                "struct s { int a; };\nint h(void) { return 0; }\n")
        self.assertEqual(self.lengths(text), {"g": 11, "h": 1})

    def test_multi_line_header_starts_at_the_name(self):
        text = "static void\nlong_header(int a,\n\t    int b)\n{\n\t(void)a;\n\t(void)b;\n}\n"
        self.assertEqual(sizes.functions(text), [("long_header", 2, 7)])

    def test_limits_and_the_allow_list(self):
        tmp = tempfile.mkdtemp(prefix="sizes-test-")
        try:
            ok = os.path.join(tmp, "ok.c")
            with open(ok, "w") as f:  # main may be long; 900 lines in all is fine
                lines = body(150)
                lines[0] = "int main(int argc, char **argv)"
                lines += ["/* pad */"] * (900 - len(lines))
                f.write("\n".join(lines) + "\n")
            big = os.path.join(tmp, "big.c")
            with open(big, "w") as f:
                f.write("\n".join(body(101) + ["/* pad */"] * 800) + "\n")
            rc, out = run(os.path.join(HERE, "sizes.py"), ok)
            self.assertEqual(rc, 0, out)
            rc, out = run(os.path.join(HERE, "sizes.py"), big)
            self.assertEqual(rc, 1, out)
            self.assertIn("big.c: 901 lines", out)
            self.assertIn("big.c:1: f101() is 101 lines", out)
        finally:
            shutil.rmtree(tmp)


class GitTree(unittest.TestCase):
    """A small git checkout in a temp dir: files written, then `git add`ed."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lint-tree-test-")
        subprocess.run(["git", "init", "-q", self.tmp], check=True)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def write(self, files):
        for name, text in files.items():
            full = os.path.join(self.tmp, name)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as f:
                f.write(text)
        subprocess.run(["git", "-C", self.tmp, "add", "-A"], check=True)


@unittest.skipIf(shutil.which("git") is None, "needs git")
class Paths(GitTree):
    # the tree the named paths point into
    TREE = {"mock-api/src/ops/core.h": "", "mock-api/src/util/sha256.c": "",
            "mock-api/include/sbx/mock.h": "", "lib/include/sbx/err.h": "",
            "fixtures/scenarios/slow.json": "{}", "ci/lint.py": "", "lib/src/gate.c": ""}

    def check(self, files):
        self.write(dict(self.TREE, **files))
        return run(os.path.join(HERE, "paths.py"), "--root", self.tmp)

    def test_existing_paths_in_every_resolution_pass(self):
        rc, out = self.check({
            # top level; the file's folder and those above it; a module's
            # src/ and include/; every include/ folder; a glob; a placeholder
            "mock-api/src/guest/g.c": "/* ops/core.h, src/util/sha256.c, sbx/err.h,\n"
                                      " * mock-api/src/ops/*.h, fixtures/scenarios/NAME.json */\n",
            "mock-api/tests/t.c": "// sbx/mock.h (src/util/sha256.c)\n",
            "ci/x.sh": "#!/bin/sh\n# see ci/lint.py\n",
            "mock-api/README.md": "[core](src/ops/core.h), ./my-own.json\n"})
        self.assertEqual(rc, 0, out)
        self.assertIn("every path", out)

    def test_a_moved_file_is_found_in_each_kind_of_file(self):
        rc, out = self.check({
            "mock-api/src/guest/g.c": "#include <sys/stat.h>\n/* moved: ops/gone.h */\n"
                                      'static const char *s = "ops/nothere.h";\n',
            "ci/x.py": '"""Reads mock-api/src/main.c."""\nX = "mock-api/src/code.c"  # ci/old.sh\n',
            "ci/run": "#!/usr/bin/env bash\necho ci/real.sh # mock-api/src/old.c\n",
            "CMakeLists.txt": "# built from lib/src/gone.c\n",
            ".github/w.yml": "# like ci/test.sh\nrun: ci/notacomment.sh\n",
            "mock-api/README.md": "Start at `src/ops/main.c`.\n",
            "mock-api/cell/main.c": "/* (src/cell.c) */\n",
            # a renamed folder, named from the top
            "lib/README.md": "lib/src/gatekeeper/gate.c\n",
            "lib/src/x.c": "// mock-api/src/opz/core.h\n"})
        self.assertEqual(rc, 1, out)
        for finding in ("mock-api/src/guest/g.c:2: ops/gone.h: no such file",
                        "ci/x.py:1: mock-api/src/main.c", "ci/x.py:2: ci/old.sh",
                        "ci/run:2: mock-api/src/old.c", "CMakeLists.txt:1: lib/src/gone.c",
                        ".github/w.yml:1: ci/test.sh", "mock-api/README.md:1: src/ops/main.c",
                        "mock-api/cell/main.c:1: src/cell.c",
                        "lib/README.md:1: lib/src/gatekeeper/gate.c",
                        "lib/src/x.c:1: mock-api/src/opz/core.h"):
            self.assertIn(finding, out)
        # code, strings and includes are not comments
        for code in ("sys/stat.h", "ops/nothere.h", "mock-api/src/code.c", "ci/real.sh",
                     "ci/notacomment.sh"):
            self.assertNotIn(code, out)

    def test_other_projects_paths_are_left_alone(self):
        rc, out = self.check({
            # lib/src exists, but lib/src/lfx does not: langflow's
            "lib/GATE.md": "Langflow's src/lfx/src/lfx/utils/registry.py, the SDK's\n"
                           "spec/egress.md, ../shared/spec/backend-conformance.md,\n"
                           "path/to/backend.py, https://example.org/ci/gone.md,\n"
                           "/usr/include/sys/gone.h\n",
            "mock-api/README.md": "the mock's src/lfx/x.py: paths: outside (langflow's)\n"})
        self.assertEqual(rc, 0, out)

    def test_a_missing_glob_or_placeholder_match_is_found(self):
        rc, out = self.check({"README.md": "fixtures/gate/*.json, fixtures/scenarios/NAME.yml\n"})
        self.assertEqual(rc, 1, out)
        self.assertIn("fixtures/gate/*.json", out)
        self.assertIn("fixtures/scenarios/NAME.yml", out)

    def test_the_rule_reads_comments_not_code(self):
        text = 'x = "a/b.c"  # c/d.h\n"""e/f.py"""\ny = """g/h.md"""\n'
        kept = paths.readable_text("t.py", text)
        self.assertIn("c/d.h", kept)
        self.assertIn("e/f.py", kept)
        self.assertNotIn("a/b.c", kept)
        self.assertNotIn("g/h.md", kept)
        self.assertIsNone(paths.readable_text("data.json", "{}"))


@unittest.skipIf(shutil.which("git") is None, "needs git")
class TopLevel(GitTree):
    def test_a_stray_top_level_file_fails_and_the_list_passes(self):
        self.write({"README.md": "", "ci/lint": "", ".github/x.yml": ""})
        rc, out = run(os.path.join(HERE, "toplevel.py"), "--root", self.tmp)
        self.assertEqual(rc, 0, out)
        self.write({"log": "rc=1\n", "scratch/notes.txt": ""})
        rc, out = run(os.path.join(HERE, "toplevel.py"), "--root", self.tmp)
        self.assertEqual(rc, 1, out)
        self.assertIn("log: tracked at the top level but not on ci/toplevel.py's list", out)
        self.assertIn("scratch: tracked at the top level", out)
        self.assertNotIn("README.md:", out)

    def test_untracked_files_do_not_count(self):
        self.write({"README.md": ""})
        with open(os.path.join(self.tmp, "core"), "w") as f:
            f.write("")
        rc, out = run(os.path.join(HERE, "toplevel.py"), "--root", self.tmp)
        self.assertEqual(rc, 0, out)

    def test_the_repository_itself_is_clean(self):
        rc, out = run(os.path.join(HERE, "toplevel.py"))
        self.assertEqual(rc, 0, out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
