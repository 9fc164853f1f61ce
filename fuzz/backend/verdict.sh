# shellcheck shell=bash
# verdict.sh: sourced by mutants.sh and py_backends.sh. expect_finding TAG
# NAME WANT RC OUT: a broken backend NAME, replayed with exit status RC and
# output OUT, must have broken the invariant WANT (the first finding's);
# prints the verdict under TAG, returns 1 when it did not.
expect_finding() {
  local tag=$1 name=$2 want=$3 rc=$4 out=$5 got
  got=$(printf '%s\n' "$out" | sed -n 's/^==== backend_fuzzer: invariant broken: \(.*\) ====$/\1/p' | head -n 1)
  if [ "$rc" -eq 0 ] || [ -z "$got" ]; then
    echo "$tag: FAIL: $name: the seed corpus found nothing (exit $rc)"; return 1
  elif [ "$got" != "$want" ]; then
    echo "$tag: FAIL: $name: broke \"$got\", expected \"$want\""
    printf '%s\n' "$out" | grep -A1 'invariant broken' | head -n 2; return 1
  fi
  echo "$tag: $name: $got: $(printf '%s\n' "$out" | grep -A1 'invariant broken' | sed -n 2p | cut -c1-140)"
}
