#!/usr/bin/env bash
# ctest fuzz_backend_scenario: a corpus input printed by backend_scenario is
# a replay script that reproduces the input without the fuzzer: the script
# runs (sbx-mock with the fault plan as --scenario, the settings exported,
# the requests piped into the driver) and the driver's answers and the
# journal show the input's outcome; and the committed seeds are what
# `backend_scenario --write-seeds` writes.
# Usage: scenario_test.sh BACKEND_SCENARIO CORPUS_DIR MOCK_DIR DRIVER_DIR
set -euo pipefail
tool=$1 corpus=$2
mockdir=$(cd "$3" && pwd) driverdir=$(cd "$4" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sbx-fz-scenario.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
"$tool" --write-seeds "$tmp" >/dev/null
for f in "$tmp"/*; do
  cmp -s "$f" "$corpus/$(basename "$f")" || { echo "FAIL: seed $(basename "$f") differs from the corpus (rerun --write-seeds)"; fail=1; }
done
run() { # seed, driver, expected pattern in the output
  "$tool" "$corpus/$1" > "$tmp/replay.sh"
  out=$(PATH="$mockdir:$driverdir:$PATH" DRIVER="$2" sh "$tmp/replay.sh" 2>&1) || { echo "FAIL: $1: the script failed"; printf '%s\n' "$out" | tail -5; fail=1; return; }
  if printf '%s\n' "$out" | grep -Eq "$3"; then echo "ok: $1 ($2): /$3/"; else
    echo "FAIL: $1 ($2): no /$3/ in:"; printf '%s\n' "$out" | tail -6; fail=1; fi
}
run res-001-exit42 sbx-ref-backend '"exit_code":42'
run fb-007-503 sbx-ref-backend '"type":"SandboxExecutionError","message":"create sandbox: control plane answered 503'
# the finding of mutant retry-create-503 replays: two creates in the journal
run createos-004-create-503-once "sbx-ref-backend --quirk retry-create-503" '"status":503,.*"method":"POST","path":"/v1/sandboxes","query":"","tenant":"fuzz-replay-key","status":200'
run fb-001-down "sbx-ref-backend --quirk local-fallback" 'TRIP-WIRE: the code ran on the host'
run fb-001-down sbx-ref-backend 'unreachable'
exit $fail
