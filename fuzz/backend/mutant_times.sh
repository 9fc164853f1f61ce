#!/usr/bin/env bash
# Time to first finding per mutant: the libFuzzer binary, started from the
# seed corpus, against the built-in reference backend turned into each
# mutant (SBX_FUZZ_QUIRK); prints one markdown row per mutant (the table in
# fuzz/README.md). Not a ctest (minutes of wall time); fuzz_backend_mutants
# is the quick check that the corpus still finds each one.
# Usage: mutant_times.sh [--python FILE.py] FUZZ_BIN CORPUS_DIR [QUIRK...]
#   e.g. fuzz/backend/mutant_times.sh build/fuzz/fuzz/backend fuzz/corpus/backend
#   --python FILE.py: the names are factories of that Python backend
#   (SBX_FUZZ_PYTHON_BACKEND=FILE.py:NAME), e.g. fuzz/backend/py/unlocked_backend.py
#   with preflight_per_run leak_guest local_fallback retry_create strip_stdout
#   env SECONDS_MAX (default 120): how long each may search
set -uo pipefail
py=
if [ "${1:-}" = --python ]; then py=$2; shift 2; fi
bin=$1 corpus=$2
shift 2
quirks=("$@")
max=${SECONDS_MAX:-120}
if [ ${#quirks[@]} -eq 0 ]; then
  mapfile -t quirks < <("$(dirname "$0")/mutants.sh" --list)
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sbx-fz-times.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
for q in "${quirks[@]}"; do
  rm -rf "$tmp/work" "$tmp/art"; mkdir -p "$tmp/work" "$tmp/art"
  t0=$(date +%s.%N)
  if [ -n "$py" ]; then sel="SBX_FUZZ_PYTHON_BACKEND=$py:$q"; else sel="SBX_FUZZ_QUIRK=$q"; fi
  out=$(env "$sel" UBSAN_OPTIONS=halt_on_error=1 nice -n 10 "$bin" -max_total_time="$max" -timeout=30 \
        -rss_limit_mb=4096 -artifact_prefix="$tmp/art/" "$tmp/work" "$corpus" 2>&1)
  t1=$(date +%s.%N)
  inv=$(printf '%s\n' "$out" | sed -n 's/^==== backend_fuzzer: invariant broken: \(.*\) ====$/\1/p' | head -n 1)
  execs=$(printf '%s\n' "$out" | sed -n 's/^#\([0-9]*\).*/\1/p' | tail -n 1)
  if [ -n "$inv" ]; then
    printf '| %s | %s | %.1f s | %s |\n' "$q" "$inv" "$(echo "$t1 - $t0" | bc)" "${execs:-?}"
  else
    printf '| %s | not found in %s s | – | %s |\n' "$q" "$max" "${execs:-?}"
  fi
done
