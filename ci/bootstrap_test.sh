#!/usr/bin/env bash
# ctest bootstrap_purposes: ci/bootstrap's package lists. `build` (what
# ci/main uses) has the compiler, CMake, pkg-config and the five libraries
# and none of the test-only tools; `test` has all of build and the tools;
# ci/main asks for build, ci/test for test; an unknown purpose is refused.
set -uo pipefail
ci=$(cd "$(dirname "$0")" && pwd)
fail=0
bad() { echo "bootstrap_purposes: FAIL: $*"; fail=1; }
build=$(bash "$ci/bootstrap" --list build) || bad "--list build exited non-zero"
test=$(SBX_WITH_CHROMIUM=1 bash "$ci/bootstrap" --list test) || bad "--list test exited non-zero"
has() { grep -qx "$2" <<< "$1"; }
for p in build-essential cmake pkg-config libmicrohttpd-dev libcurl4-openssl-dev libcjson-dev \
         libcmocka-dev libseccomp-dev libnftables-dev libmnl-dev libssl-dev python3; do
  has "$build" "$p" || bad "build lacks $p"
  has "$test" "$p" || bad "test lacks $p"
done
for p in valgrind clang libclang-rt-dev clang-tidy cppcheck nodejs chromium wrk python3-pytest \
         python3-venv python3-setuptools python3-markdown zip mmdebstrap uidmap; do
  has "$build" "$p" && bad "build has the test-only $p"
  has "$test" "$p" || bad "test lacks $p"
done
grep -q '^ci/bootstrap build' "$ci/main" || bad "ci/main does not run ci/bootstrap build"
grep -qE '^(\[ -n "\$only" \] \|\| )?ci/bootstrap test$' "$ci/test" || bad "ci/test does not run ci/bootstrap test"
bash "$ci/bootstrap" --list bogus >/dev/null 2>&1; [ $? = 2 ] || bad "an unknown purpose is not refused with 2"
[ $fail = 0 ] && echo "bootstrap_purposes: build $(wc -l <<< "$build") packages, test $(wc -l <<< "$test")"
exit $fail
