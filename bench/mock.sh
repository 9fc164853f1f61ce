#!/bin/sh
# bench/mock.sh: sbx-mock throughput.
#  1. GET /v1/sandboxes/{id} with keep-alive (wrk), requests/s and latency
#     percentiles (target >= 30,000 req/s on 2 cores, p99 < 5 ms);
#  2. create -> exec(`true`) -> delete cycles/s (bench-mock_cycle, target >= 300/s);
#  3. the same GET with 100 non-matching fault rules loaded (fault overhead).
# usage: bench/mock.sh [BUILD_DIR=build/default] [SECONDS=10]
# Run from a release build; the numbers go into mock-api/README.md.
set -eu
BUILD=${1:-build/default}
SECS=${2:-10}
MOCK=$BUILD/mock-api/sbx-mock
CYCLE=$BUILD/bench/bench-mock_cycle
command -v wrk >/dev/null || { echo "bench/mock.sh: wrk is not installed (apt-get install wrk)" >&2; exit 2; }
[ -x "$MOCK" ] || { echo "bench/mock.sh: $MOCK not built" >&2; exit 2; }
OUT=$(mktemp)
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -f "$OUT"' EXIT
nice -n 10 "$MOCK" --listen 127.0.0.1:0 --admin-token bench --no-journal --quiet --cap 100000 >"$OUT" &
PID=$!
for _ in $(seq 50); do grep -q listening "$OUT" && break; sleep 0.1; done
URL=$(sed -n 's/^sbx-mock listening on //p' "$OUT")
ID=$(curl -s -H 'X-Api-Key: bench' -d '{"shape":"s-1vcpu-256mb"}' "$URL/v1/sandboxes" |
	sed 's/.*"id":"\([^"]*\)".*/\1/')
echo "== GET /v1/sandboxes/$ID, keep-alive, wrk -t2 -c32 -d${SECS}s"
nice -n 10 wrk -t2 -c32 -d"${SECS}s" --latency -H 'X-Api-Key: bench' "$URL/v1/sandboxes/$ID"
if [ -x "$CYCLE" ]; then
	echo "== create -> exec(true) -> delete, 2 threads, ${SECS}s"
	nice -n 10 "$CYCLE" "$URL" "$SECS" 2 cyclekey
fi
echo "== the same GET with 100 non-matching fault rules"
RULES=$(python3 -c 'import json;print(json.dumps({"rules":[{"match":{"path":"/v1/nothing/%d"%i},"action":{"kind":"http","status":500}} for i in range(100)]}))')
curl -s -H 'X-Mock-Admin-Token: bench' -d "$RULES" "$URL/_mock/faults" >/dev/null
nice -n 10 wrk -t2 -c32 -d"${SECS}s" --latency -H 'X-Api-Key: bench' "$URL/v1/sandboxes/$ID"
