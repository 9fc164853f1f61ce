#!/bin/sh
# bench/fuzz_backend.sh: inputs per second of the backend fuzzer's harness
# (issue 18: >= 20/s against the reference C backend, >= 5/s against the
# Python example backend, on 2 cores). Replays a corpus (default: the seed
# corpus, fuzz/corpus/backend: the conformance checks' cases, every surface)
# PASSES times in one process, so the driver pool is warm after the first
# pass as in a fuzzing run, and prints inputs/s per backend with the load
# average it was taken under.
# usage: bench/fuzz_backend.sh [BUILD_DIR=build/default] [PASSES=3] [CORPUS=fuzz/corpus/backend]
#   CORPUS may be random:N:SEED: N byte strings of 20-59 bytes from Python's
#   random with SEED, written to a scratch dir: the decoder's own mix
#   (a fresh driver in eight inputs, own settings in half, faults, 1-3
#   runs), closer to what a fuzzing run feeds than the seeds (the conformance
#   cases, three of which wait out a 1 s timeout per pass).
#   env BACKENDS="ref python-nozygote python" (which to measure;
#   python-nozygote is the Python example backend with SBX_FUZZ_NO_ZYGOTE=1:
#   a python3 started per driver, as before issue 35, so one run prints
#   before and after), BIN (another replay binary, e.g. the libFuzzer one:
#   it replays files given as arguments too)
# usage: MODE=fuzz bench/fuzz_backend.sh [BUILD_DIR=build/fuzz] [SECONDS=90]
#   fuzzes for SECONDS from a copy of the seed corpus with the libFuzzer
#   binary (BUILD_DIR/fuzz/backend, ASan+UBSan) and prints libFuzzer's own
#   count: what a user of the fuzzer gets, with its mix of inputs.
set -eu
case ${MODE:-replay} in
replay) ;;
fuzz)
	BUILD=${1:-build/fuzz}
	SECS=${2:-90}
	BIN=${BIN:-$BUILD/fuzz/backend}
	[ -x "$BIN" ] || { echo "bench/fuzz_backend.sh: $BIN not built (cmake --preset fuzz)" >&2; exit 2; }
	case $SECS in '' | *[!0-9]*) echo "bench/fuzz_backend.sh: SECONDS must be a whole number, got $SECS" >&2; exit 2 ;; esac
	work=$(mktemp -d "${TMPDIR:-/tmp}/sbx-fzbench.XXXXXX")
	trap 'rm -rf "$work"' EXIT
	mkdir "$work/corpus" "$work/art"
	for b in ${BACKENDS:-ref python-nozygote python}; do
		zygote=SBX_FUZZ_UNUSED=1
		case $b in
		ref) envset="SBX_FUZZ_UNUSED=1" ;;
		python) envset="SBX_FUZZ_PYTHON_BACKEND=conformance/adapters/examples/createos_backend.py:create_backend" ;;
		python-nozygote)
			envset="SBX_FUZZ_PYTHON_BACKEND=conformance/adapters/examples/createos_backend.py:create_backend"
			zygote=SBX_FUZZ_NO_ZYGOTE=1 ;;
		*) echo "bench/fuzz_backend.sh: unknown backend $b (ref, python-nozygote, python)" >&2; exit 2 ;;
		esac
		rm -f "$work/corpus/"*
		env "$envset" "$zygote" UBSAN_OPTIONS=halt_on_error=1 "$BIN" -dict=fuzz/dict/backend.dict -max_total_time="$SECS" \
			-timeout=30 -rss_limit_mb=2048 -artifact_prefix="$work/art/" "$work/corpus" fuzz/corpus/backend \
			>"$work/log" 2>&1 || { echo "$b: a finding or an error:"; tail -40 "$work/log"; exit 1; }
		sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\1 \2/p' "$work/log" | awk -v b="$b" \
			-v load="$(cut -d' ' -f1 /proc/loadavg)" -v cores="$(nproc)" \
			'{printf "%s: libFuzzer ran %d inputs in %d s: %.1f inputs/s (load %s, %d cores)\n", b, $1, $2, $1 / $2, load, cores}'
	done
	exit 0 ;;
*) echo "bench/fuzz_backend.sh: MODE is replay or fuzz, got ${MODE}" >&2; exit 2 ;;
esac
BUILD=${1:-build/default}
PASSES=${2:-3}
CORPUS=${3:-fuzz/corpus/backend}
BIN=${BIN:-$BUILD/fuzz/backend_replay}
[ -x "$BIN" ] || { echo "bench/fuzz_backend.sh: $BIN not built" >&2; exit 2; }
case $CORPUS in
random:*)
	spec=${CORPUS#random:}
	count=${spec%%:*} seed=${spec#*:}
	case $count$seed in '' | *[!0-9]*) echo "bench/fuzz_backend.sh: CORPUS random:N:SEED wants whole numbers, got $CORPUS" >&2; exit 2 ;; esac
	CORPUS=$(mktemp -d "${TMPDIR:-/tmp}/sbx-fzbench.XXXXXX")
	trap 'rm -rf "$CORPUS"' EXIT
	python3 -c 'import random, sys
r = random.Random(int(sys.argv[2]))
for i in range(int(sys.argv[1])):
    with open("%s/r%05d" % (sys.argv[3], i), "wb") as f:
        f.write(bytes(r.randrange(256) for _ in range(r.randrange(20, 60))))' "$count" "$seed" "$CORPUS" ;;
esac
n=$(find "$CORPUS" -maxdepth 1 -type f | wc -l)
args=""
i=0
while [ "$i" -lt "$PASSES" ]; do args="$args $CORPUS"; i=$((i + 1)); done
for b in ${BACKENDS:-ref python-nozygote python}; do
	zygote=SBX_FUZZ_UNUSED=1
	case $b in
	ref) envset="SBX_FUZZ_UNUSED=1" ;;
	python) envset="SBX_FUZZ_PYTHON_BACKEND=conformance/adapters/examples/createos_backend.py:create_backend" ;;
	python-nozygote)
		envset="SBX_FUZZ_PYTHON_BACKEND=conformance/adapters/examples/createos_backend.py:create_backend"
		zygote=SBX_FUZZ_NO_ZYGOTE=1 ;;
	*) echo "bench/fuzz_backend.sh: unknown backend $b (ref, python-nozygote, python)" >&2; exit 2 ;;
	esac
	t0=$(date +%s%N)
	# shellcheck disable=SC2086
	env "$envset" "$zygote" nice -n 10 "$BIN" $args >/dev/null 2>&1 || { echo "$b: a finding or an error (rerun $BIN $CORPUS)"; exit 1; }
	t1=$(date +%s%N)
	awk -v n="$((n * PASSES))" -v ns="$((t1 - t0))" -v b="$b" -v load="$(cut -d' ' -f1 /proc/loadavg)" \
		'BEGIN {printf "%s: %d inputs in %.1f s: %.1f inputs/s (load %s, %d cores)\n", b, n, ns / 1e9, n / (ns / 1e9), load, '"$(nproc)"'}'
done
