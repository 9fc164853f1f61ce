#!/usr/bin/env bash
# ctest ci_yaml_validate: checks .github/workflows/*.yml, action.yml and the
# README's "Use in CI" example workflow against the published GitHub Actions
# schemas (workflow and action), with @action-validator/cli pinned in
# ci/validate/package-lock.json (installed by `npm ci --prefix ci/validate`,
# which ci/test runs). A broken workflow and a broken action must be
# rejected (the validator is not a no-op), then ci/validate/policy.py checks
# what the schemas cannot (pinned actions, the cflite modes, the inputs).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/ci/validate
av=$here/node_modules/@action-validator/cli/cli.mjs
node=${SBX_NODE:-node}
[ -f "$av" ] || { echo "ci/validate: node_modules is missing: run npm ci --prefix ci/validate first" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sbx-validate.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0

# The validator tells an action from a workflow by the file name.
check() { # FILE [as-name]
  local f=$1 as=${2:-$(basename "$1")}
  cp "$f" "$tmp/$as"
  if "$node" "$av" "$tmp/$as" > "$tmp/out" 2>&1; then
    echo "valid: ${f#"$root"/}"
  else
    echo "INVALID: ${f#"$root"/}"; grep -v '^WARNING: Glob' "$tmp/out" | head -n 60; fail=1
  fi
}

n=0
for f in "$root"/.github/workflows/*.yml "$root"/.github/workflows/*.yaml; do
  [ -e "$f" ] || continue
  check "$f" "workflow-$(basename "$f")"; n=$((n + 1))
done
[ "$n" -ge 3 ] || { echo "ci/validate: expected ci.yml, cflite_pr.yml, cflite_batch.yml; found $n workflows"; fail=1; }
check "$root/action.yml" action.yml

# The README's example workflow (between the ci-example markers).
sed -n '/<!-- ci-example:start -->/,/<!-- ci-example:end -->/p' "$root/README.md" |
  sed -e '1,/^```yaml/d' -e '/^```$/,$d' > "$tmp/readme-example.yml"
if [ -s "$tmp/readme-example.yml" ]; then
  check "$tmp/readme-example.yml" workflow-readme-example.yml
else
  echo "INVALID: README.md has no yaml block between <!-- ci-example:start/end -->"; fail=1
fi

# Negative controls: the schemas must reject these.
printf 'name: x\non: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    stepz:\n      - run: true\n' > "$tmp/neg-workflow.yml"
mkdir -p "$tmp/neg"
printf 'name: x\ndescription: y\nruns:\n  using: composite\n  steps:\n    - run: true\n      shel: bash\n' > "$tmp/neg/action.yml"
if "$node" "$av" "$tmp/neg-workflow.yml" >/dev/null 2>&1; then echo "FAIL: a workflow with 'stepz' was accepted"; fail=1; fi
if "$node" "$av" "$tmp/neg/action.yml" >/dev/null 2>&1; then echo "FAIL: an action step with 'shel' was accepted"; fail=1; fi
[ $fail = 0 ] && echo "negative controls rejected"

python3 "$here/policy.py" "$root" "$tmp/readme-example.yml" || fail=1
[ $fail = 0 ] || { echo "ci/validate: FAILED"; exit 1; }
echo "ci/validate: $n workflows, action.yml and the README example valid"
