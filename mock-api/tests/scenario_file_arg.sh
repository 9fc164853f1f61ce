#!/bin/sh
# sbx-mock --scenario NAME|FILE: an existing file without '/' or '.json' is
# read as that file, not looked up as a scenario name (issue 19 item 24).
# usage: scenario_file_arg.sh SBX_MOCK FIXTURES_SCENARIOS_DIR
set -eu
MOCK=$1
SCEN=$2
DIR=$(mktemp -d)
PID=
cleanup() {
	[ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
	rm -rf "$DIR"
}
trap cleanup EXIT
cp "$SCEN/over-cap.json" "$DIR/myscenario"
cd "$DIR"
"$MOCK" --listen 127.0.0.1:0 --scenario myscenario --quiet >mock.out 2>mock.err &
PID=$!
for _ in $(seq 100); do
	grep -q '^admin token:' mock.out 2>/dev/null && break
	kill -0 "$PID" 2>/dev/null || break
	sleep 0.05
done
if ! grep -q '^admin token:' mock.out; then
	echo "FAIL: sbx-mock did not start with --scenario myscenario (a file here): $(cat mock.err)" >&2
	exit 1
fi
echo ok
