#!/bin/sh
# The "rerun" command a report gives for a failed check repeats exactly that
# check: run a mutant, take CREATEOS-006's rerun line from the JSON report,
# execute it, and it fails the same check alone (exit 1, one check).
# usage: rerun.sh SBX_CONFORM SBX_REF_BACKEND PYTHON3
set -eu
CONFORM=$1
REF=$2
PY=$3
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
rc=0
"$CONFORM" --backend-cmd "$REF --quirk pin-keeps-floor" --profile createos-backend \
	--filter 'CREATEOS-00[67]' --seed 5 --json "$DIR/first.json" >"$DIR/first.txt" 2>&1 || rc=$?
[ "$rc" -eq 1 ] || fail "first run: exit $rc: $(cat "$DIR/first.txt")"
cmd=$("$PY" - "$DIR/first.json" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
print(next(c["rerun"] for c in r["checks"] if c["id"] == "CREATEOS-006"))
PYEOF
)
case $cmd in
"sbx-conform --backend-cmd "*" --seed 5 --profile createos-backend --filter CREATEOS-006") ;;
*) fail "unexpected rerun line: $cmd" ;;
esac
mkdir "$DIR/bin"
ln -s "$CONFORM" "$DIR/bin/sbx-conform"
rc=0
(PATH="$DIR/bin:$PATH" && export PATH && eval "$cmd --json $DIR/again.json") >"$DIR/again.txt" 2>&1 || rc=$?
[ "$rc" -eq 1 ] || fail "rerun: exit $rc, expected 1: $(cat "$DIR/again.txt")"
"$PY" - "$DIR/again.json" <<'PYEOF' || fail "the rerun did not repeat CREATEOS-006 alone"
import json, sys
r = json.load(open(sys.argv[1]))
ids = [(c["id"], c["verdict"]) for c in r["checks"]]
assert ids == [("CREATEOS-006", "fail")], ids
assert r["seed"] == 5, r["seed"]
PYEOF
echo "ok: the rerun line repeats CREATEOS-006 alone: $cmd"
