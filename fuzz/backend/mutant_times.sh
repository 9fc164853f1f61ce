#!/usr/bin/env bash
# Time to first finding per mutant: the libFuzzer binary, started from the
# seed corpus, against the built-in reference backend turned into each
# mutant (SBX_FUZZ_QUIRK); prints one markdown row per mutant (the table in
# fuzz/README.md). Not a ctest (minutes of wall time); fuzz_backend_mutants
# is the quick check that the corpus still finds each one.
# Usage: mutant_times.sh FUZZ_BIN CORPUS_DIR [QUIRK...]
#   e.g. fuzz/backend/mutant_times.sh build/fuzz/fuzz/backend fuzz/corpus/backend
set -uo pipefail
bin=$1 corpus=$2
shift 2
quirks=("$@")
if [ ${#quirks[@]} -eq 0 ]; then
  mapfile -t quirks < <("$(dirname "$0")/mutants.sh" --list)
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sbx-fz-times.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
for q in "${quirks[@]}"; do
  rm -rf "$tmp/work" "$tmp/art"; mkdir -p "$tmp/work" "$tmp/art"
  t0=$(date +%s.%N)
  out=$(SBX_FUZZ_QUIRK=$q UBSAN_OPTIONS=halt_on_error=1 nice -n 10 "$bin" -max_total_time=120 -timeout=30 \
        -rss_limit_mb=4096 -artifact_prefix="$tmp/art/" "$tmp/work" "$corpus" 2>&1)
  t1=$(date +%s.%N)
  inv=$(printf '%s\n' "$out" | sed -n 's/^==== backend_fuzzer: invariant broken: \(.*\) ====$/\1/p' | head -n 1)
  execs=$(printf '%s\n' "$out" | sed -n 's/^#\([0-9]*\).*/\1/p' | tail -n 1)
  if [ -n "$inv" ]; then
    printf '| %s | %s | %.1f s | %s |\n' "$q" "$inv" "$(echo "$t1 - $t0" | bc)" "${execs:-?}"
  else
    printf '| %s | not found in 120 s | – | %s |\n' "$q" "${execs:-?}"
  fi
done
