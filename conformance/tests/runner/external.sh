#!/bin/sh
# sbx-conform against an external sbx-mock (--mock-url) and in --api-url mode
# (the same mock standing in for a real control plane: no admin API used).
# usage: external.sh SBX_CONFORM SBX_MOCK
set -eu
CONFORM=$1
MOCK=$2
DIR=$(mktemp -d)
PID=
cleanup() {
	[ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
	rm -rf "$DIR"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
"$MOCK" --listen 127.0.0.1:0 --admin-token conform-test --quiet >"$DIR/mock.out" 2>&1 &
PID=$!
for _ in $(seq 100); do grep -q listening "$DIR/mock.out" && break; sleep 0.05; done
URL=$(sed -n 's/^sbx-mock listening on //p' "$DIR/mock.out")
[ -n "$URL" ] || fail "sbx-mock did not start: $(cat "$DIR/mock.out")"

# 1. external mock: admin checks and fault checks run.
rc=0
"$CONFORM" --mock-url "$URL" --admin-token conform-test --filter 'CAP-*' --filter CREATEOS-004 \
	--filter CLN-001 --json "$DIR/ext.json" >"$DIR/ext.txt" 2>&1 || rc=$?
[ "$rc" -eq 0 ] || fail "--mock-url run exited $rc: $(cat "$DIR/ext.txt")"
grep -q '"kind":[[:space:]]*"external-mock"' "$DIR/ext.json" || fail "report does not say external-mock"
grep -q '"id":[[:space:]]*"CREATEOS-004"' "$DIR/ext.json" || fail "CREATEOS-004 did not run"

# 2. no admin token: usage error.
rc=0
env -u SBX_MOCK_ADMIN_TOKEN "$CONFORM" --mock-url "$URL" >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "--mock-url without a token exited $rc, expected 2"

# 2b. a wrong admin token: one up-front harness error naming the token.
rc=0
"$CONFORM" --mock-url "$URL" --admin-token wrong-token --filter 'CAP-*' >"$DIR/tok.txt" 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "--mock-url with a wrong token exited $rc, expected 2"
grep -q 'harness error: --mock-url .*admin token' "$DIR/tok.txt" || fail "wrong token not named: $(cat "$DIR/tok.txt")"
[ "$(grep -c . "$DIR/tok.txt")" -eq 1 ] || fail "wrong token: more than one line: $(cat "$DIR/tok.txt")"

# 3. --api-url: checks needing the admin API are skipped with the reason,
#    the rest run against the control plane with the user's key.
rc=0
CREATEOS_SANDBOX_API_KEY=conform-real-key "$CONFORM" --api-url "$URL" --profile langflow-backend \
	--json "$DIR/api.json" >"$DIR/api.txt" 2>&1 || rc=$?
[ "$rc" -eq 0 ] || fail "--api-url run exited $rc: $(cat "$DIR/api.txt")"
python3 - "$DIR/api.json" <<'PY' || fail "--api-url report is wrong"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["control_plane"]["kind"] == "real", r["control_plane"]
by = {c["id"]: c for c in r["checks"]}
for cid in ("FB-002", "CLN-001", "CAP-001", "CON-001"):
    assert by[cid]["verdict"] == "skip" and "--api-url" in by[cid]["reason"], by[cid]
for cid in ("RES-001", "RES-004", "FB-001", "CON-002", "REF-002"):
    assert by[cid]["verdict"] == "pass", by[cid]
PY
# 4. --api-url needs a key.
rc=0
env -u CREATEOS_SANDBOX_API_KEY -u CREATEOS_API_KEY "$CONFORM" --api-url "$URL" >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "--api-url without a key exited $rc, expected 2"
echo "ok"
