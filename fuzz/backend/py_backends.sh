#!/usr/bin/env bash
# ctest fuzz_backend_python: the backend fuzzer judges a Python backend both
# ways (issue 35). fuzz/backend/py/unlocked_backend.py's correct backend,
# whose whoami preflight and shape catalogue run once per process behind an
# unlocked flag, must get no finding on the seed corpus (con-001-concurrent-fresh
# races three first runs on a fresh driver) and on 60 byte strings from a
# fixed seed (the decoder's own mix: concurrent runs, fresh drivers, faults);
# each of its broken variants must be found on the seed corpus by the
# invariant its bug is about.
# Usage: py_backends.sh REPLAY_BIN CORPUS_DIR [FACTORY...]
set -uo pipefail
# shellcheck source=fuzz/backend/verdict.sh
. "$(dirname "$0")/verdict.sh"
here=$(cd "$(dirname "$0")" && pwd)
backend=$here/py/unlocked_backend.py
declare -A want=(
  [preflight_per_run]="4 results" [leak_guest]="3 cleanup" [local_fallback]="2 fallback"
  [retry_create]="4 results" [strip_stdout]="4 results"
)
bin=$1 corpus=$2
shift 2
factories=("$@")
[ ${#factories[@]} -gt 0 ] || factories=(create_backend "${!want[@]}")
work=$(mktemp -d "${TMPDIR:-/tmp}/sbx-pyback.XXXXXX")
trap 'rm -rf "$work"' EXIT
python3 -c 'import random, sys
r = random.Random(35)
for i in range(60):
    with open("%s/r%02d" % (sys.argv[1], i), "wb") as f:
        f.write(bytes(r.randrange(256) for _ in range(r.randrange(20, 60))))' "$work" || exit 2
fail=0
for f in "${factories[@]}"; do
  if [ "$f" = create_backend ]; then
    out=$(SBX_FUZZ_PYTHON_BACKEND=$backend:$f timeout 300 "$bin" "$corpus" "$work" 2>&1)
    rc=$?
    if [ $rc -ne 0 ]; then
      echo "py_backends: FAIL: the correct backend got a finding (exit $rc):"
      printf '%s\n' "$out" | grep -A1 'invariant broken' | head -n 2; fail=1
    else
      echo "py_backends: $f: no finding ($(printf '%s\n' "$out" | tail -n 1))"
    fi
    continue
  fi
  [ -n "${want[$f]:-}" ] || { echo "py_backends: unknown factory $f"; fail=1; continue; }
  out=$(SBX_FUZZ_PYTHON_BACKEND=$backend:$f timeout 300 "$bin" "$corpus" 2>&1)
  expect_finding py_backends "$f" "${want[$f]}" $? "$out" || fail=1
done
exit $fail
