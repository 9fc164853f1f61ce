#!/bin/sh
# bench/mock.sh: sbx-mock throughput.
#  1. GET /v1/sandboxes/{id} with keep-alive (wrk), requests/s and latency
#     percentiles (target >= 30,000 req/s on 2 cores, p99 < 5 ms);
#  2. the same GET with 100 non-matching fault rules loaded (fault overhead,
#     target < 5 %);
#  3. create -> exec(`true`) -> delete cycles/s (bench-mock_cycle, target >= 300/s).
# Each part also prints the load average before it and the CPU time the mock
# (and, for cycles, its reaped guest processes) spent per request or cycle:
# on a shared machine the rates follow the load, the CPU cost does not.
# usage: bench/mock.sh [BUILD_DIR=build/default] [SECONDS=10]
# env: NICE (default 10), CONNS (wrk connections, default 32),
#      CYCLE_THREADS (default 2), WORK_DIR (the mock's --work-dir, e.g. on tmpfs).
# Run from a release build; the numbers go into bench/RESULTS.md.
set -eu
BUILD=${1:-build/default}
SECS=${2:-10}
NICE=${NICE:-10}
CONNS=${CONNS:-32}
CYCLE_THREADS=${CYCLE_THREADS:-2}
MOCK=$BUILD/mock-api/sbx-mock
CYCLE=$BUILD/bench/bench-mock_cycle
command -v wrk >/dev/null || { echo "bench/mock.sh: wrk is not installed (apt-get install wrk)" >&2; exit 2; }
[ -x "$MOCK" ] || { echo "bench/mock.sh: $MOCK not built" >&2; exit 2; }
OUT=$(mktemp)
RES=$(mktemp)
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -f "$OUT" "$RES"' EXIT
nice -n "$NICE" "$MOCK" --listen 127.0.0.1:0 --admin-token bench --no-journal --quiet --self-listen off --cap 100000 ${WORK_DIR:+--work-dir "$WORK_DIR"} >"$OUT" &
PID=$!
for _ in $(seq 50); do grep -q listening "$OUT" && break; sleep 0.1; done
URL=$(sed -n 's/^sbx-mock listening on //p' "$OUT")
ID=$(curl -s -H 'X-Api-Key: bench' -d '{"shape":"s-1vcpu-256mb"}' "$URL/v1/sandboxes" |
	sed 's/.*"id":"\([^"]*\)".*/\1/')

# CPU ticks of the mock: utime+stime, plus its reaped children's with "all".
ticks() {
	awk -v all="${1:-}" '{ print $14 + $15 + (all == "all" ? $16 + $17 : 0) }' "/proc/$PID/stat"
}
per() { # per TICKS_BEFORE TICKS_AFTER COUNT us|ms
	awk -v a="$1" -v b="$2" -v n="$3" -v u="$4" -v hz="$(getconf CLK_TCK)" 'BEGIN {
		if (n > 0 && u == "us") printf "mock CPU: %.1f us/request\n", (b - a) / hz * 1e6 / n
		if (n > 0 && u == "ms") printf "mock+guest CPU: %.2f ms/cycle\n", (b - a) / hz * 1e3 / n
	}'
}
get_run() {
	echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
	a=$(ticks)
	nice -n "$NICE" wrk -t2 -c"$CONNS" -d"${SECS}s" --latency -H 'X-Api-Key: bench' \
		"$URL/v1/sandboxes/$ID" | tee "$RES"
	b=$(ticks)
	per "$a" "$b" "$(sed -n 's/^ *\([0-9]*\) requests in.*/\1/p' "$RES")" us
}

echo "== GET /v1/sandboxes/$ID, keep-alive, wrk -t2 -c$CONNS -d${SECS}s"
get_run
# The fault part runs before the cycles, on the same small model as part 1
# (destroyed sandboxes stay in the model; lookups are indexed, listings are not).
echo "== the same GET with 100 non-matching fault rules"
RULES=$(python3 -c 'import json;print(json.dumps({"rules":[{"match":{"path":"/v1/nothing/%d"%i},"action":{"kind":"http","status":500}} for i in range(100)]}))')
curl -s -H 'X-Mock-Admin-Token: bench' -d "$RULES" "$URL/_mock/faults" >/dev/null
get_run
curl -s -X DELETE -H 'X-Mock-Admin-Token: bench' "$URL/_mock/faults" >/dev/null
if [ -x "$CYCLE" ]; then
	echo "== create -> exec(true) -> delete, $CYCLE_THREADS threads, ${SECS}s"
	echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
	a=$(ticks all)
	nice -n "$NICE" "$CYCLE" "$URL" "$SECS" "$CYCLE_THREADS" cyclekey | tee "$RES" || true
	b=$(ticks all)
	per "$a" "$b" "$(sed -n 's/.*: \([0-9]*\) cycles in.*/\1/p' "$RES")" ms
fi
