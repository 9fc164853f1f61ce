# Sourced by the onboarding tests (zero_config_test.sh, java_trust_test.sh):
# a scratch directory removed at exit, a "fresh shell" with nothing but
# PATH, HOME and the runtime directory a login gives, and an sbx-mock run
# in it. The caller sets mock, ctl, a fail function, and fresh_path (more
# PATH, or "") before fresh_setup.

# $scratch (with run/ and home/, 0700), removed with the mock at exit
fresh_setup() {
  scratch=$(mktemp -d) || exit 1
  pid=
  trap fresh_cleanup EXIT
  trap 'exit 1' INT TERM
  mkdir -m 700 "$scratch/run" "$scratch/home"
}

fresh_cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid"
  rm -rf "$scratch"
}

# Runs "$@" in the fresh environment (and SBX_IMAGE_STORE when the caller
# names the store that way). It execs: call it in a subshell, so that a
# background fresh's pid is the program's.
fresh() {
  [ -n "${SBX_IMAGE_STORE:-}" ] && set -- SBX_IMAGE_STORE="$SBX_IMAGE_STORE" "$@"
  exec env -i PATH="$(dirname "$ctl")${fresh_path:+:$fresh_path}:/usr/local/bin:/usr/bin:/bin" \
    HOME="$scratch/home" XDG_RUNTIME_DIR="$scratch/run" "$@"
}

# sbx-mock with the arguments given, in the background ($pid), its stdout
# in $scratch/out and stderr in $scratch/err; returns once it printed the
# line naming `sbxctl mock env` (60 s at most)
fresh_start_mock() {
  (fresh "$mock" "$@" >"$scratch/out" 2>"$scratch/err") &
  pid=$!
  i=0
  until grep -q '^to use it from a shell: eval "$(sbxctl mock env)"$' "$scratch/out"; do
    kill -0 "$pid" 2>/dev/null || fail "sbx-mock exited at start: $(cat "$scratch/err")"
    i=$((i + 1)); [ "$i" -lt 600 ] || fail "no start line naming the shell line in 60 s: $(cat "$scratch/out")"
    sleep 0.1
  done
}

# SIGTERM; it must exit 0 and leave nothing in the runtime directory
fresh_stop_mock() {
  kill "$pid"
  wait "$pid"
  rc=$?
  pid=
  [ "$rc" = 0 ] || fail "sbx-mock exited $rc at SIGTERM"
  [ -z "$(ls -A "$scratch/run/sbx-harness")" ] ||
    fail "the runtime directory was not removed at the clean stop: $(ls -A "$scratch/run/sbx-harness")"
}
