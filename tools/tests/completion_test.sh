#!/usr/bin/env bash
# sbxctl's bash completion offers the commands, sub-commands and options a
# user can type next. Prints TAP; exits 1 when a check fails.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# Without bash-completion installed the script falls back to COMP_WORDS.
_init_completion() { return 1; }
# shellcheck source=../completion/sbxctl.bash
source "$here/../completion/sbxctl.bash"
# No network for id completion in this test.
_sbxctl_ids() { echo "sb-aaa sb-bbb"; }

n=0
failed=0
check() { # check "typed words" expected-word [absent-word]
	local line=$1 want=$2 absent=${3:-}
	read -r -a COMP_WORDS <<<"sbxctl $line"
	[[ $line == *" " || -z $line ]] && COMP_WORDS+=("")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	_sbxctl
	n=$((n + 1))
	local got=" ${COMPREPLY[*]} "
	if [[ $got == *" $want "* && ( -z $absent || $got != *" $absent "* ) ]]; then
		echo "ok $n - '$line' offers $want"
	else
		echo "not ok $n - '$line': expected $want${absent:+ without $absent}, got:$got"
		failed=1
	fi
}

check "" create
check "" mock
check "eg" egress
check "egress " check
check "egress ch" check
check "mock " journal
check "mock faults " clear
check "mock clock " advance
check "create --" --shape
check "create --sh" --shape
check "create --shape " s-1vcpu-1gb
check "exec --" --stream
check "egress check --mode " observed
check "ls --status " paused
check "mock journal --" --follow
check "pause --" --wait
check "get " sb-aaa
check "--json get " sb-bbb
check "create --name x --" --auto-pause
check "ls --" --json --shape
check "mock " cassette
check "mock cassette " prune
check "mock cassette prune x --" --target-prefix
check "mock cassette merge a b --" --out
# Every command sbxctl --help lists is offered word by word (no drift
# between the CLI's command table and the completion script).
if [ $# -ge 1 ]; then
	while read -r name; do
		prefix=""
		for word in $name; do
			check "$prefix" "$word"
			prefix="$prefix$word "
		done
	done < <("$1" --help | sed -n '/^Commands:/,/^$/p' | sed -n 's/^  \([a-z][a-z ]*[a-z]\)  .*/\1/p' | sed 's/  *$//')
fi
echo "1..$n"
exit $failed
