#!/bin/sh
# The runner survives broken drivers: a driver that crashes, hangs or writes
# garbage in `run` makes the check fail (exit 1) with the reason, and no
# driver process is left behind.
# usage: broken.sh SBX_CONFORM DRIVER_PY
set -eu
CONFORM=$1
DRIVER=$2
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
for mode in crash hang garbage; do
	marker="sbx-conform-broken-$mode-$$"
	rc=0
	"$CONFORM" --backend-cmd "python3 $DRIVER $mode $marker" --profile langflow-backend \
		--filter RES-004 --timeout-scale 0.1 --json "$DIR/$mode.json" >"$DIR/$mode.txt" 2>&1 || rc=$?
	[ "$rc" -eq 1 ] || fail "$mode: exit $rc, expected 1: $(cat "$DIR/$mode.txt")"
	case $mode in
	crash) want="closed its stdout" ;;
	hang) want="no answer to" ;;
	garbage) want="not a protocol answer" ;;
	esac
	grep -q "$want" "$DIR/$mode.json" || fail "$mode: the report does not say \"$want\""
	if pgrep -f "$marker" >/dev/null; then
		pkill -KILL -f "$marker" || true
		fail "$mode: a driver process was left behind"
	fi
done
echo ok
