#!/usr/bin/env python3
"""Self-test of ci/compat_table.py on a small tree of its own (a temp dir):
a README whose "SDK compatibility" table matches the route tables passes;
a row calling a served route "not modelled" (issue 46's computer-use row),
a row calling an absent route supported, a served route no row names, a
row with no marker or a bad one fail with README line and route file:line;
the tables are found wherever they are under the source dir; the admin
table needs no row; a missing API table is a setup error (exit 2).
Run: python3 ci/test_compat_table.py (ctest: lint_compat_table_selftest)."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "compat_table.py")

API = """/* the API's routes */
const mock_route mock_api_routes[] = {
	{"GET", "/v1/sandboxes/{id}", READ, api_get},
	{"GET", "/v1/sandboxes/by-ip/{ip}", READ, api_by_ip},
	/* {"GET", "/v1/commented-out", 0, x}, */
	{"GET", "/v1/sandboxes/{id}/computer/screenshot", GUEST_IO, api_shot},
	{"POST", "/v1/sandboxes/{id}/computer/mouse/move", GUEST_IO, api_computer},
};
"""
SELF = """const mock_route mock_self_routes[] = {
	{"POST", "/self/pause", ROUTE_AUTH, self_pause},
};
"""
ADMIN = """const mock_route mock_admin_routes[] = {
	{"POST", "/_mock/reset", ROUTE_BLOCKS, a_reset},
};
"""
HEAD = "# x\n\n## SDK compatibility\n\nText.\n\n| SDK feature | Against sbx-mock | Why |\n|---|---|---|\n"
GET = "| get <!-- routes: GET /v1/sandboxes/{id}, GET /v1/sandboxes/by-ip/{ip} --> | supported | . |\n"
COMPUTER = "| computer use <!-- routes: * /v1/sandboxes/{id}/computer/... --> | {status} | . |\n"
SELFROW = "| self-signal <!-- routes: POST /self/pause --> | supported | . |\n"
SHELL = "| shell <!-- routes: * /v1/sandboxes/{id}/shell --> | not modelled | . |\n"
ERRORS = "| errors <!-- routes: none --> | supported | . |\n"
TAIL = "\nAfter the table.\n\n## Limits\n\n| a | b |\n|---|---|\n| c <!-- routes: GET /nowhere --> | d |\n"


def readme(*rows):
    return HEAD + "".join(rows) + TAIL


RIGHT = readme(GET, COMPUTER.replace("{status}", "supported on `desktop:1`"), SELFROW, SHELL, ERRORS)


class CompatTable(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="compat-table-test-")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def run_check(self, text, files=None):
        files = files or {"handlers/api_routes.c": API, "handlers/self.c": SELF,
                          "handlers/admin.c": ADMIN}
        src = os.path.join(self.tmp, "src")
        for name, code in files.items():
            path = os.path.join(src, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(code)
        path = os.path.join(self.tmp, "README.md")
        with open(path, "w") as f:
            f.write(text)
        # one stream, in the order a reader of ci/lint's log sees it
        p = subprocess.run([sys.executable, CHECK, "--readme", path, "--src", src],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        return p.returncode, p.stdout

    def test_a_right_table_passes(self):
        # 6: the commented-out row is no route
        self.assertEqual(self.run_check(RIGHT), (0, "compat_table: %s/README.md's 'SDK compatibility'"
                                                 " table matches the 6 routes of 3 tables under %s/src\n"
                                                 % (self.tmp, self.tmp)))

    def test_not_modelled_for_a_served_route_fails(self):
        text = readme(GET, COMPUTER.replace("{status}", "not modelled"), SELFROW, SHELL, ERRORS)
        rc, out = self.run_check(text)
        self.assertEqual(rc, 1, out)
        self.assertIn("README.md:10: row 'computer use': says 'not modelled' but the mock serves "
                      "2 of its routes: GET /v1/sandboxes/{id}/computer/screenshot (", out)
        self.assertIn("api_routes.c:6, mock_api_routes), POST /v1/sandboxes/{id}/computer/mouse/move (",
                      out)
        self.assertIn("compat_table: 1 findings", out)

    def test_not_modelled_in_bold_fails_too(self):
        text = readme(GET, COMPUTER.replace("{status}", "**Not modelled**"), SELFROW, SHELL, ERRORS)
        rc, out = self.run_check(text)
        self.assertEqual(rc, 1, out)
        self.assertIn("says '**Not modelled**' but the mock serves", out)

    def test_supported_for_an_absent_route_fails(self):
        text = RIGHT.replace("| not modelled |", "| supported |")
        rc, out = self.run_check(text)
        self.assertEqual(rc, 1, out)
        self.assertIn("README.md:12: row 'shell': says 'supported' but the mock serves no route "
                      "* /v1/sandboxes/{id}/shell", out)

    def test_a_served_route_no_row_names_fails(self):
        rc, out = self.run_check(readme(GET, SELFROW, SHELL, ERRORS))
        self.assertEqual(rc, 1, out)
        self.assertIn("api_routes.c:6: GET /v1/sandboxes/{id}/computer/screenshot (mock_api_routes)"
                      " is served but no row of", out)
        self.assertNotIn("/_mock/reset", out)  # the admin API needs no row

    def test_a_row_without_a_marker_fails(self):
        rc, out = self.run_check(RIGHT.replace(" <!-- routes: none -->", ""))
        self.assertEqual(rc, 1, out)
        self.assertIn("README.md:13: row 'errors': no routes marker", out)

    def test_a_bad_marker_fails(self):
        for bad, why in (("FETCH /v1/x", "method FETCH is not one of"),
                         ("GET v1/x", "must start with /"), ("GET /a/.../b", "'...' only as the last"),
                         ("GET", "want METHOD PATH")):
            rc, out = self.run_check(RIGHT.replace("routes: none", "routes: " + bad))
            self.assertEqual(rc, 1, (bad, out))
            self.assertIn(why, out)

    def test_a_marker_id_is_not_a_literal_segment(self):
        # {id}/shell must not count as by-ip/{ip}: the not-modelled row passes
        rc, out = self.run_check(RIGHT)
        self.assertNotIn("shell", out)

    def test_tables_are_found_wherever_they_are(self):
        rc, out = self.run_check(RIGHT, {"api/routes/table.c": API, "signals/listener.c": SELF,
                                         "admin/admin_api.c": ADMIN})
        self.assertEqual(rc, 0, out)

    def test_no_api_table_is_a_setup_error(self):
        rc, out = self.run_check(RIGHT, {"handlers/self.c": SELF,
                                         "handlers/api_routes.c": API.replace("mock_api_routes",
                                                                              "renamed_routes")})
        self.assertEqual(rc, 2, out)
        self.assertIn("no route table named mock_api_routes", out)

    def test_no_section_is_a_setup_error(self):
        rc, out = self.run_check(RIGHT.replace("## SDK compatibility", "## Compatibility"))
        self.assertEqual(rc, 2, out)
        self.assertIn("no '## SDK compatibility' section", out)


if __name__ == "__main__":
    unittest.main()
