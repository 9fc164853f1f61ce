#!/usr/bin/env python3
"""Self-test of ci/layers_doc.py on a small tree of its own (a temp dir):
a source file its folder's row does not name fails, naming the file; a
name that is no file of the tree fails; a folder without a row fails; a
row may point at a file of another folder; a header with a .c of its own
name need not be named; a complete table passes.
Run: python3 ci/test_layers_doc.py (ctest: lint_layers_doc_selftest)."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "layers_doc.py")

FILES = ["src/low/a.c", "src/low/a.h", "src/low/only.h", "src/high/b.c", "include/sbx/pub.h"]
TABLE = """# x

## Layers

| Rank | Folder | What it holds |
|---|---|---|
| 0 | `low/` | `a.c` (A), `only.h` (a header of its own) |
| 1 | `high/` | `b.c` (B; calls `a.c`, see `sbx/pub.h`) |

## Next
| 2 | `ghost/` | rows after the section are not the table's: `nothere.c` |
"""


class LayersDoc(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="layers-doc-test-")
        for f in FILES:
            path = os.path.join(self.tmp, f)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "w").close()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def run_check(self, table):
        readme = os.path.join(self.tmp, "README.md")
        with open(readme, "w") as f:
            f.write(table)
        return subprocess.run([sys.executable, CHECK, readme, os.path.join(self.tmp, "src")],
                              capture_output=True, text=True)

    def test_complete_table_passes(self):
        r = self.run_check(TABLE)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_unnamed_file_fails(self):
        open(os.path.join(self.tmp, "src/high/c.c"), "w").close()
        r = self.run_check(TABLE)
        self.assertEqual(r.returncode, 1)
        self.assertIn("`high/` row does not name", r.stdout)
        self.assertIn("src/high/c.c", r.stdout)

    def test_unnamed_lone_header_fails(self):
        r = self.run_check(TABLE.replace(", `only.h` (a header of its own)", ""))
        self.assertEqual(r.returncode, 1)
        self.assertIn("src/low/only.h", r.stdout)

    def test_stale_name_fails(self):
        r = self.run_check(TABLE.replace("`b.c` (B;", "`b.c` (B), `gone.c` (removed;"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("names gone.c", r.stdout)

    def test_folder_without_row_fails(self):
        os.makedirs(os.path.join(self.tmp, "src/newroom"))
        open(os.path.join(self.tmp, "src/newroom/n.c"), "w").close()
        r = self.run_check(TABLE)
        self.assertEqual(r.returncode, 1)
        self.assertIn("no row for `newroom/`", r.stdout)

    def test_row_for_missing_folder_fails(self):
        r = self.run_check(TABLE.replace("## Next\n", ""))
        self.assertEqual(r.returncode, 1)
        self.assertIn("row for `ghost/`", r.stdout)


if __name__ == "__main__":
    unittest.main()
