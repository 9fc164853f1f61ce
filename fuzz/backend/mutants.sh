#!/usr/bin/env bash
# ctest fuzz_backend_mutants: the seed corpus of the backend fuzzer, replayed
# against each mutant of the built-in reference backend (SBX_FUZZ_QUIRK),
# must break the invariant named here (and the reference must break none:
# that is fuzz_replay_backend). Usage: mutants.sh REPLAY_BIN CORPUS_DIR [QUIRK...]
# Every mutant of conformance/CMakeLists.txt's SBX_MUTANTS is here: those of
# the component, executor and fork_check surfaces are reached by the inputs
# that drive those surfaces (comp-*, exec-*, fork-check seeds).
# mutants.sh --list prints the names (mutant_times.sh uses it).
set -uo pipefail
# shellcheck source=fuzz/backend/verdict.sh
. "$(dirname "$0")/verdict.sh"
declare -A want=(
  [local-fallback]="2 fallback" [delete-only-on-success]="3 cleanup" [leak-on-timeout]="3 cleanup"
  [retry-create-503]="4 results" [egress-empty-when-off]="4 results" [egress-star-when-off]="4 results"
  [forward-domains]="1 refusal" [claim-allowlist]="1 refusal" [no-accept-check]="1 refusal"
  [io-in-capabilities]="0 protocol" [ignore-timeout]="4 results" [shared-output]="4 results"
  [whoami-every-run]="4 results" [autopause-wrong]="4 results" [no-timeout-map]="4 results"
  [refuse-as-execution]="1 refusal" [wait-on-cap]="4 results" [create-before-refusal]="1 refusal"
  [reuse-drift]="5 reuse" [no-resume]="5 reuse" [files-uncapped]="6 files" [executor-leak]="3 cleanup"
  [fork-shares-conn]="7 fork" [ignore-shape-pin]="1 refusal" [pin-keeps-floor]="4 results"
)
if [ "${1:-}" = "--list" ]; then printf '%s\n' "${!want[@]}" | sort; exit 0; fi
bin=$1 corpus=$2
shift 2
quirks=("$@")
[ ${#quirks[@]} -gt 0 ] || quirks=("${!want[@]}")
fail=0
for q in "${quirks[@]}"; do
  [ -n "${want[$q]:-}" ] || { echo "mutants: unknown quirk $q"; fail=1; continue; }
  out=$(SBX_FUZZ_QUIRK=$q timeout 300 "$bin" "$corpus" 2>&1)
  expect_finding mutants "$q" "${want[$q]}" $? "$out" || fail=1
done
exit $fail
