#!/usr/bin/env bash
# ci/quick --list in a throwaway repository: which tests a change selects
# (a change in mock-api/ selects the mock's tests and not conformance's; one
# in lib/ selects all; a docs-only change none), and that it sees committed,
# uncommitted and untracked changes against SBX_QUICK_BASE.
set -euo pipefail
src=$(cd "$(dirname "$0")" && pwd)/quick
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
cd "$t"; git init -q; git config user.email t@t; git config user.name t
mkdir ci mock-api lib docs; cp "$src" ci/quick
touch mock-api/a.c lib/b.c docs/c.md; git add -A; git commit -qm base
fail() { echo "quick_test: FAILED: $*"; exit 1; }
filter() { ci/quick --list | sed -n "s/^ci\/quick: ctest -R '\(.*\)' -LE cflite$/\1/p"; }

echo x >> mock-api/a.c
f=$(filter); echo "mock-api change: $f"
[[ "$f" == *'^mock_'* ]] || fail "a mock-api change does not select the mock's tests"
[[ "$f" != *'^conform_|'* ]] || fail "a mock-api change selects conformance's"
git commit -qam m; echo y > docs/new.md
f=$(SBX_QUICK_BASE=HEAD~1 filter); [[ "$f" == *'^mock_'* ]] || fail "a committed change is not seen"
[ -z "$(SBX_QUICK_BASE=HEAD filter)" ] || fail "a docs-only untracked file selects tests"
out=$(SBX_QUICK_BASE=HEAD ci/quick --list); [[ "$out" == *docs/new.md* ]] || fail "an untracked file is not listed"
echo z >> lib/b.c; [ "$(SBX_QUICK_BASE=HEAD filter)" = . ] || fail "a lib change does not select every test"
SBX_QUICK_BASE=nope ci/quick --list 2>/dev/null && fail "a bad base is accepted"
echo "quick_test: passed"
