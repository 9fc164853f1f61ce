#!/usr/bin/env bash
# ctest fuzz_backend_scenario: a backend_fuzzer input replays without the
# fuzzer.
#  - `backend_scenario FILE` prints a script that runs the input through
#    `sbx-conform --fuzz-case`: against the reference it passes; against a
#    mutant its check FUZZ-CASE fails with the invariant the fuzzer itself
#    reports for that input (backend_replay with SBX_FUZZ_QUIRK);
#  - `backend_scenario --driver FILE` prints a script without sbx-conform
#    (sbx-mock with the fault plan as --scenario, the settings exported,
#    the requests piped into the driver) whose answers and journal show the
#    input's outcome;
#  - the committed seeds are what `backend_scenario --write-seeds` writes.
# Usage: scenario_test.sh BACKEND_SCENARIO BACKEND_REPLAY CORPUS_DIR MOCK_DIR CONFORM_DIR
set -euo pipefail
tool=$1 replay=$2 corpus=$3
mockdir=$(cd "$4" && pwd) conformdir=$(cd "$5" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sbx-fz-scenario.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
"$tool" --write-seeds "$tmp" >/dev/null
for f in "$tmp"/*; do
  cmp -s "$f" "$corpus/$(basename "$f")" || { echo "FAIL: seed $(basename "$f") differs from the corpus (rerun --write-seeds)"; fail=1; }
done
rm -f "$tmp"/*
run() { # seed, driver, expected pattern in the output
  "$tool" --driver "$corpus/$1" > "$tmp/replay.sh"
  out=$(PATH="$mockdir:$conformdir:$PATH" DRIVER="$2" sh "$tmp/replay.sh" 2>&1) || { echo "FAIL: $1: the script failed"; printf '%s\n' "$out" | tail -5; fail=1; return; }
  if printf '%s\n' "$out" | grep -Eq "$3"; then echo "ok: $1 ($2): /$3/"; else
    echo "FAIL: $1 ($2): no /$3/ in:"; printf '%s\n' "$out" | tail -6; fail=1; fi
}
run res-001-exit42 sbx-ref-backend '"exit_code":42'
run fb-007-503 sbx-ref-backend '"type":"SandboxExecutionError","message":"create sandbox: control plane answered 503'
# the finding of mutant retry-create-503 replays: two creates in the journal
run createos-004-create-503-once "sbx-ref-backend --quirk retry-create-503" '"status":503,.*"method":"POST","path":"/v1/sandboxes","query":"","tenant":"fuzz-replay-key","status":200'
run fb-001-down "sbx-ref-backend --quirk local-fallback" 'TRIP-WIRE: the code ran on the host'
run fb-001-down sbx-ref-backend 'unreachable'

conform() { # seed, quirk ("" = the reference)
  local want="" got rc
  "$tool" "$corpus/$1" > "$tmp/conform.sh"
  if [ -n "$2" ]; then
    want=$( (SBX_FUZZ_QUIRK=$2 "$replay" "$corpus/$1" 2>&1 || true) | sed -n 's/^==== backend_fuzzer: invariant broken: \(.*\) ====$/\1/p' | head -n 1)
    [ -n "$want" ] || { echo "FAIL: $1: the fuzzer finds nothing against $2"; fail=1; return; }
  fi
  rc=0
  out=$(PATH="$conformdir:$PATH" BACKEND=${2:+"sbx-ref-backend --quirk $2"} sh "$tmp/conform.sh" 2>&1) || rc=$?
  got=$(printf '%s\n' "$out" | sed -n 's/^ *reason: invariant broken: \([0-9] [a-z]*\): .*/\1/p' | head -n 1)
  if [ -z "$2" ] && [ $rc -eq 0 ] && printf '%s\n' "$out" | grep -Eq 'PASS +FUZZ-CASE'; then
    echo "ok: $1 (reference) passes through sbx-conform"
  elif [ -n "$2" ] && [ $rc -eq 1 ] && [ "$got" = "$want" ]; then
    echo "ok: $1 ($2): sbx-conform fails FUZZ-CASE with \"$got\", as the fuzzer"
  else
    echo "FAIL: $1 (${2:-reference}): exit $rc, invariant \"$got\", the fuzzer's \"$want\":"; printf '%s\n' "$out" | tail -8; fail=1
  fi
}
conform comp-reuse-drift ""
conform comp-reuse-drift reuse-drift
conform fork-check fork-shares-conn
conform createos-004-create-503-once retry-create-503
conform fb-001-down local-fallback
exit $fail
