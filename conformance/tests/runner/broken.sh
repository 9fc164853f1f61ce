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
	scale=1
	[ "$mode" = hang ] && scale=0.3 # the run then times out after 18 s
	rc=0
	"$CONFORM" --backend-cmd "python3 $DRIVER $mode $marker" --profile langflow-backend \
		--filter RES-004 --timeout-scale "$scale" --json "$DIR/$mode.json" >"$DIR/$mode.txt" 2>&1 || rc=$?
	[ "$rc" -eq 1 ] || fail "$mode: exit $rc, expected 1: $(cat "$DIR/$mode.txt") $(cat "$DIR/$mode.json" 2>/dev/null)"
	case $mode in
	crash) want="closed its stdout" ;;
	hang) want="no answer to" ;;
	garbage) want="not a protocol answer" ;;
	esac
	grep -q "$want" "$DIR/$mode.json" || fail "$mode: the report does not say \"$want\": $(cat "$DIR/$mode.json")"
	if pgrep -f "$marker" >/dev/null; then
		pkill -KILL -f "$marker" || true
		fail "$mode: a driver process was left behind"
	fi
done
echo ok
