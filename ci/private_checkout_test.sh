#!/usr/bin/env bash
# ci/test's contain-unprivileged stage from a checkout other users cannot
# enter (issue 35): a clone under root's 0700 home, or in a `mktemp -d`.
# The checkout is bind-mounted under a 0700 directory in a mount namespace
# of this test's own, so every absolute path the stage resolves passes
# through a parent uid 65534 cannot traverse, as in such a clone. One
# battery test (SBX_CONTAIN_ONLY) keeps it short; the stage's enforced-egress
# and Python-examples parts run whole. Root only (77 = skipped otherwise).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "private_checkout_test: needs root (setpriv to uid 65534); skipped"; exit 77; }
[ -x "$repo/build/default/mock-api/sbx-mock" ] || { echo "private_checkout_test: build/default is not built"; exit 1; }
outer=$(mktemp -d "${TMPDIR:-/tmp}/sbx-private.XXXXXX")
chmod 0700 "$outer"
mkdir "$outer/checkout"
log=$outer.log
trap 'rm -rf "$outer" "$log"' EXIT
rc=0
SBX_CONTAIN_ONLY=cannot_read_etc_shadow unshare -m --propagation private bash -c '
  mount --bind "$1" "$2/checkout" && cd "$2/checkout" && exec ci/test --stage contain-unprivileged' \
  _ "$repo" "$outer" > "$log" 2>&1 || rc=$?
cat "$log"
fail() { echo "private_checkout_test: FAILED: $*"; exit 1; }
[ $rc -eq 0 ] || fail "the stage exited $rc from $outer/checkout (a 0700 parent)"
for part in "enforced egress passed" "Python SDK examples passed"; do
  grep -q "contain-unprivileged: $part" "$log" || fail "no '$part' line"
done
grep -q "cannot_read_etc_shadow" "$log" || fail "the battery's test did not run"
echo "private_checkout_test: the stage passed from a checkout under a 0700 directory"
