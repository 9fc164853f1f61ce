#!/bin/sh
# bench/conform.sh: wall time of the default sbx-conform run (embedded mock,
# instant timing profile, bundled reference backend and host, every profile).
# Target: under 20 s on 2 cores. Prints each run's time and the best/median.
# usage: bench/conform.sh [BUILD_DIR=build/default] [RUNS=3] [JOBS=4]
# Run from a release build; the number goes into conformance/README.md.
set -eu
BUILD=${1:-build/default}
RUNS=${2:-3}
JOBS=${3:-4}
CONFORM=$BUILD/conformance/sbx-conform
[ -x "$CONFORM" ] || { echo "bench/conform.sh: $CONFORM not built" >&2; exit 2; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
echo "== sbx-conform (default profiles, -j $JOBS), $RUNS runs, $(nproc) cores"
i=1
while [ "$i" -le "$RUNS" ]; do
	t0=$(date +%s%N)
	rc=0
	nice -n 10 "$CONFORM" -j "$JOBS" --json "$OUT/r$i.json" >"$OUT/r$i.txt" 2>&1 || rc=$?
	t1=$(date +%s%N)
	ms=$(( (t1 - t0) / 1000000 ))
	checks=$(grep -o '"total":[[:space:]]*[0-9]*' "$OUT/r$i.json" | head -1 | tr -dc '0-9')
	echo "run $i: ${ms} ms, exit $rc, ${checks:-?} checks"
	echo "$ms" >>"$OUT/times"
	i=$((i + 1))
done
sort -n "$OUT/times" | awk '{a[NR]=$1} END {printf "best %d ms, median %d ms (target < 20000 ms)\n", a[1], a[int((NR+1)/2)]}'
