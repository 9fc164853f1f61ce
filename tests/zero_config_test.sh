#!/bin/sh
# Zero-config onboarding (issue 46, README "Quick start"): sbx-mock started
# with no flags on a machine whose default image store holds devbox:1 and
# desktop:1 boots guests on them and says so; then a shell with nothing but
# PATH, HOME, XDG_RUNTIME_DIR and the README's one line
#   eval "$(sbxctl mock env)"
# runs the TypeScript SDK's examples 01 02 03 05 15 39 40
# (tests/sdk/examples.test.mjs, the real npm SDK) and the Python SDK's
# hello_world, ingress_preview and desktop (tests/python_sdk, --from-env)
# unmodified: the SDKs' variables and the https trust come from the line.
# At its clean stop the mock removes its runtime directory.
#
# Usage: zero_config_test.sh SBX_MOCK SBXCTL. Exit 0 pass, 1 fail, 77
# skipped (no devbox:1 and desktop:1 in the default store, or no
# tests/sdk/node_modules).
set -u
mock=$1 ctl=$2
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "zero_config_test: FAIL: $*" >&2; exit 1; }
skip() { echo "zero_config_test: SKIP: $*"; exit 77; }

store=${SBX_IMAGE_STORE:-}
[ -n "$store" ] || { [ "$(id -u)" = 0 ] && store=/var/cache/sbx-harness/images; } ||
  store=${XDG_CACHE_HOME:-$HOME/.cache}/sbx-harness/images
for img in devbox:1 desktop:1; do
  grep -q "^$img	" "$store/index" 2>/dev/null ||
    skip "$img is not in the default store $store (mock-api/images/build-image $img)"
done
[ -d "$here/sdk/node_modules/@nodeops-createos/sandbox" ] ||
  skip "tests/sdk/node_modules is missing (npm ci --prefix tests/sdk)"

scratch=$(mktemp -d) || exit 1
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid"
  rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
mkdir -m 700 "$scratch/run" "$scratch/home"
# a fresh user's shell: the runtime directory a login gives, nothing else
# (and SBX_IMAGE_STORE when the caller names the store that way); exec, so
# that a background fresh's pid is the program's
fresh() {
  [ -n "${SBX_IMAGE_STORE:-}" ] && set -- SBX_IMAGE_STORE="$SBX_IMAGE_STORE" "$@"
  exec env -i PATH="$(dirname "$ctl"):/usr/local/bin:/usr/bin:/bin" HOME="$scratch/home" \
    XDG_RUNTIME_DIR="$scratch/run" "$@"
}

# sbx-mock with no flags at all
(fresh "$mock" >"$scratch/out" 2>"$scratch/err") &
pid=$!
i=0
until grep -q '^to use it from a shell: eval "$(sbxctl mock env)"$' "$scratch/out"; do
  kill -0 "$pid" 2>/dev/null || fail "sbx-mock exited at start: $(cat "$scratch/err")"
  i=$((i + 1)); [ "$i" -lt 600 ] || fail "no start line naming the shell line in 60 s: $(cat "$scratch/out")"
  sleep 0.1
done
grep -qxF "images: $store (the default store; --no-images for the host skeleton)" "$scratch/out" ||
  fail "the start does not name the default store $store: $(cat "$scratch/out")"
grep -q 'WARNING: no rootfs image' "$scratch/err" && fail "a skeleton warning with images: $(cat "$scratch/err")"

# the one line, in a fresh shell, then the examples unmodified
(fresh sh -c '
  eval "$(sbxctl mock env)" || exit 1
  cd "$1" || exit 1
  node --test sdk/examples.test.mjs || exit 1
  python3 python_sdk/test_python_sdk_examples.py --from-env HelloWorld IngressPreview || exit 1
  python3 python_sdk/test_desktop.py --from-env DesktopExample || exit 1
' sh "$here") || fail "an example failed from the one line (above)"

kill "$pid"
wait "$pid"
rc=$?
pid=
[ "$rc" = 0 ] || fail "sbx-mock exited $rc at SIGTERM"
[ -z "$(ls -A "$scratch/run/sbx-harness")" ] ||
  fail "the runtime directory was not removed at the clean stop: $(ls -A "$scratch/run/sbx-harness")"
echo "zero_config_test: ok"
