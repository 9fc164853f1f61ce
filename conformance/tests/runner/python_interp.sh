#!/bin/sh
# --python PATH: the Python adapter runs under exactly that interpreter (a
# wrapper that leaves a marker, in a directory with a space in its name),
# and the human and JSON reports name it.
# usage: python_interp.sh SBX_CONFORM PYTHON3 EXAMPLE_BACKEND_PY
set -eu
CONFORM=$1
REAL=$2
EXAMPLE=$3
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
mkdir "$DIR/my py"
PY="$DIR/my py/python"
cat >"$PY" <<WRAP
#!/bin/sh
echo started >>"$DIR/marker"
exec "$REAL" "\$@"
WRAP
chmod +x "$PY"
rc=0
"$CONFORM" --python-backend "$EXAMPLE:create_backend" --python "$PY" --filter CAP-002 \
	--json "$DIR/r.json" >"$DIR/out.txt" 2>&1 || rc=$?
[ "$rc" -eq 0 ] || fail "exit $rc: $(cat "$DIR/out.txt")"
[ -s "$DIR/marker" ] || fail "the adapter did not run under --python $PY: $(cat "$DIR/out.txt")"
grep -qF "  python:        $PY" "$DIR/out.txt" || fail "the report does not name the interpreter: $(cat "$DIR/out.txt")"
"$REAL" - "$DIR/r.json" "$PY" <<'CHECK' || fail "the JSON report does not name the interpreter"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["backend"]["python"] == sys.argv[2], r["backend"]
CHECK
echo "ok: --python ran the adapter under $PY and the report names it"
