#!/usr/bin/env python3
"""Self-test of ci/layers.py on a small tree of its own (a temp dir): a call
or an include up the layers fails with file:line, the edge and the ranks; a
header outside its only_in folders fails; a call or an include of a
forbidden lower folder fails; a file outside a ranked folder fails; a tree whose dependencies all point down passes.
Run: python3 ci/test_layers.py (ctest: lint_layers_selftest)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
LAYERS = os.path.join(HERE, "layers.py")
CC = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")

CONFIG = {"trees": [{"root": "src", "ranks": {"low": 0, "mid": 1, "high": 2},
                     "only_in": {"web.h": ["high"]}, "forbidden": {"high": ["low"]}}]}
CLEAN = {
    "low/low.h": "#pragma once\nint low_fn(int x);\n",
    "low/low.c": '#include "low/low.h"\nint low_fn(int x) { return x + 1; }\n',
    "mid/mid.h": '#pragma once\n#include "low/low.h"\nint mid_fn(int x);\n',
    "mid/mid.c": '#include "mid/mid.h"\nint mid_fn(int x) { return low_fn(x) * 2; }\n',
    "high/web.h": "int web_fn(int x);\n",
    "high/high.c": ('#include "mid/mid.h"\n#include "web.h"\n'
                    "int web_fn(int x) { return mid_fn(x); }\n"),
}


@unittest.skipIf(CC is None or shutil.which("nm") is None, "needs a C compiler and nm")
class Layers(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="layers-test-")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def lint(self, files):
        src = os.path.join(self.tmp, "src")
        build = os.path.join(self.tmp, "build")
        os.makedirs(build)
        db = []
        for name, code in files.items():
            path = os.path.join(src, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(code)
        for name in files:
            if not name.endswith(".c"):
                continue
            obj = os.path.join(build, name.replace("/", "_") + ".o")
            subprocess.run([CC, "-c", "-O0", "-I", src, "-o", obj, os.path.join(src, name)],
                           check=True)
            db.append({"directory": self.tmp, "file": os.path.join("src", name), "output": obj})
        with open(os.path.join(build, "compile_commands.json"), "w") as f:
            json.dump(db, f)
        config = os.path.join(self.tmp, "layers.json")
        with open(config, "w") as f:
            json.dump(CONFIG, f)
        p = subprocess.run([sys.executable, LAYERS, "--src", self.tmp, "--config", config, build],
                           capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr

    def test_a_clean_tree_passes(self):
        rc, out = self.lint(CLEAN)
        self.assertEqual(rc, 0, out)
        self.assertIn("every dependency points down", out)

    def test_an_upward_call_fails(self):
        files = dict(CLEAN)
        files["low/low.c"] = ("int web_fn(int x);\n\n"
                              "int low_fn(int x) { return x ? web_fn(x - 1) : 0; }\n")
        rc, out = self.lint(files)
        self.assertEqual(rc, 1, out)
        self.assertIn("src/low/low.c:3: calls web_fn (high/high.c): low (rank 0) -> high (rank 2)",
                      out)

    def test_an_upward_include_fails(self):
        files = dict(CLEAN)
        files["low/low.h"] = '#pragma once\n#include "mid/mid.h"\nint low_fn(int x);\n'
        rc, out = self.lint(files)
        self.assertEqual(rc, 1, out)
        self.assertIn('src/low/low.h:2: includes "mid/mid.h": low (rank 0) -> mid (rank 1)', out)

    def test_a_restricted_header_outside_its_folders_fails(self):
        files = dict(CLEAN)
        files["mid/mid.c"] = '#include "mid/mid.h"\n#include "high/web.h"\n' + CLEAN["mid/mid.c"]
        rc, out = self.lint(files)
        self.assertEqual(rc, 1, out)
        self.assertIn("src/mid/mid.c:2: includes high/web.h, which only high may include", out)

    def test_a_forbidden_lower_folder_fails(self):
        # high may reach low only through mid: an include and a call that
        # skip mid are both findings, though low ranks lower
        skip = ('#include "mid/mid.h"\n#include "low/low.h"\n#include "web.h"\n'
                "int web_fn(int x) { return mid_fn(low_fn(x)); }\n")
        rc, out = self.lint(dict(CLEAN, **{"high/high.c": skip}))
        self.assertEqual(rc, 1, out)
        for finding in ('src/high/high.c:2: includes "low/low.h": high may not depend on low',
                        "src/high/high.c:4: calls low_fn (low/low.c): high may not depend on low"):
            self.assertIn(finding, out)

    def test_a_file_outside_the_ranked_folders_fails(self):
        files = dict(CLEAN)
        files["loose.c"] = "int loose_fn(void) { return 0; }\n"
        files["other/other.c"] = "int other_fn(void) { return 0; }\n"
        rc, out = self.lint(files)
        self.assertEqual(rc, 1, out)
        self.assertIn("src/loose.c: not in a folder of a layer", out)
        self.assertIn("src/other/other.c: folder other has no rank", out)

    def test_the_real_tree_has_ranks_for_every_folder(self):
        with open(os.path.join(HERE, "layers.json")) as f:
            conf = json.load(f)
        repo = os.path.dirname(HERE)
        for tree in conf["trees"]:
            root = os.path.join(repo, tree["root"])
            folders = {d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))}
            self.assertEqual(folders, set(tree["ranks"]), tree["root"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
