#!/usr/bin/env python3
"""The top README's dependency list names every library the build requires:
each module of a pkg_check_modules() and each package of a find_package()
in the tracked CMakeLists.txt and *.cmake files must appear in README.md's
paragraph that starts "Dependencies, all from Debian:" (names compared
without case and without a leading "lib": libcjson is cJSON). PkgConfig
(the pkg-config tool) and Threads (the C library's threads) are the
toolchain, not libraries a reader installs, and are not looked for.
Run: python3 ci/test_readme_deps.py (ctest: ci_readme_dependencies)."""
import os
import re
import subprocess
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLCHAIN = {"pkgconfig", "threads"}
PKG = re.compile(r"pkg_check_modules\s*\(([^)]*)\)", re.I)
FIND = re.compile(r"find_package\s*\(\s*([\w.+-]+)", re.I)
PKG_KEYWORDS = {"REQUIRED", "QUIET", "IMPORTED_TARGET", "GLOBAL", "NO_CMAKE_PATH",
                "NO_CMAKE_ENVIRONMENT_PATH"}


def norm(name):
    name = re.sub(r"[^a-z0-9]", "", name.lower())
    return name[3:] if name.startswith("lib") and len(name) > 3 else name


def required(cmake_texts):
    """{normalised name: (name as written, where)} of the libraries the
    build files require."""
    found = {}
    for where, text in cmake_texts:
        text = re.sub(r"#[^\n]*", "", text)
        for m in PKG.finditer(text):
            words = m.group(1).split()
            for w in words[1:]:  # words[0] is the variable prefix
                if w in PKG_KEYWORDS:
                    continue
                mod = re.split(r"[<>=]", w, 1)[0]
                found.setdefault(norm(mod), (mod, where))
        for m in FIND.finditer(text):
            if norm(m.group(1)) not in TOOLCHAIN:
                found.setdefault(norm(m.group(1)), (m.group(1), where))
    return found


def dependency_paragraph(readme):
    m = re.search(r"^Dependencies, all from Debian:.*?(?=\n\s*\n)", readme, re.M | re.S)
    return m.group(0) if m else None


def missing(readme, cmake_texts):
    """The required libraries the README's list does not name, as
    "name (file)"; raises ValueError when the README has no such list."""
    para = dependency_paragraph(readme)
    if para is None:
        raise ValueError('README.md has no paragraph starting "Dependencies, all from Debian:"')
    named = {norm(w) for w in re.findall(r"[\w+.-]+", para)}
    return sorted("%s (%s)" % (name, where)
                  for key, (name, where) in required(cmake_texts).items() if key not in named)


def repo_cmake_texts():
    files = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "*CMakeLists.txt", "*.cmake"],
                           capture_output=True, text=True, check=True).stdout.split("\0")
    out = []
    for f in files:
        if f and "node_modules/" not in f:
            with open(os.path.join(ROOT, f), encoding="utf-8") as fh:
                out.append((f, fh.read()))
    return out


class ReadmeDependencies(unittest.TestCase):
    def test_the_readme_names_every_required_library(self):
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        texts = repo_cmake_texts()
        self.assertIn("libmnl", {n for n, _ in required(texts).values()})  # the build files were read
        self.assertEqual(missing(readme, texts), [],
                         "README.md's \"Dependencies, all from Debian:\" paragraph misses these")

    def test_a_library_left_out_is_found(self):
        cmake = [("CMakeLists.txt",
                  "find_package(PkgConfig REQUIRED)\nfind_package(Threads REQUIRED)\n"
                  "pkg_check_modules(CJSON REQUIRED IMPORTED_TARGET libcjson>=1.7)\n"
                  "pkg_check_modules(MNL REQUIRED IMPORTED_TARGET libmnl>=1.0.4)\n"
                  "# pkg_check_modules(OLD REQUIRED libold)\n"),
                 ("x/CMakeLists.txt", "find_package(ZLIB REQUIRED)\n")]
        readme = "Intro.\n\nDependencies, all from Debian: cJSON (JSON),\nlibmnl.\n\nzlib later.\n"
        self.assertEqual(missing(readme, cmake), ["ZLIB (x/CMakeLists.txt)"])
        readme = readme.replace("libmnl", "libmnl, zlib")
        self.assertEqual(missing(readme, cmake), [])

    def test_no_list_is_an_error(self):
        with self.assertRaises(ValueError):
            missing("no list here\n", [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
