# bash completion for sbxctl. Source it, or install it as
# /usr/share/bash-completion/completions/sbxctl.

_sbxctl_ids()
{
	# Sandbox ids from the configured control plane; silent when unreachable.
	sbxctl --json --timeout 3s ls 2>/dev/null | sed -n 's/^[[:space:]]*"id":[[:space:]]*"\([^"]*\)".*/\1/p'
}

_sbxctl()
{
	local cur prev words cword
	_init_completion 2>/dev/null || {
		cur=${COMP_WORDS[COMP_CWORD]}
		prev=${COMP_WORDS[COMP_CWORD-1]}
		words=("${COMP_WORDS[@]}")
		cword=$COMP_CWORD
	}
	local globals="--url --production --api-key --admin-token --json --timeout --help --version"
	local top="create ls get rm exec pause resume fork egress files whoami shapes rootfs mock help"

	# The command words typed so far (skipping options and their values).
	local cmd=() i w
	for ((i = 1; i < cword; i++)); do
		w=${words[i]}
		case $w in
		--) break ;;
		--url | --api-key | --admin-token | --timeout | --shape | --rootfs | --name | --egress | --env | \
			--auto-pause | --status | --page-size | --wait-timeout | --rules | --mode | --max-rules | \
			--since | --method | --path | --tenant | --limit | --interval | --host | --target-prefix | --out) ((i++)) ;;
		-*) ;;
		*) cmd+=("$w") ;;
		esac
	done

	case $prev in
	--mode) COMPREPLY=($(compgen -W "documented observed" -- "$cur")); return ;;
	--status) COMPREPLY=($(compgen -W "creating running pausing paused resuming forking error destroying destroyed failed" -- "$cur")); return ;;
	--shape) COMPREPLY=($(compgen -W "s-0.25vcpu-512mb s-0.5vcpu-1gb s-1vcpu-256mb s-1vcpu-1gb s-1vcpu-2gb s-2vcpu-2gb s-2vcpu-4gb s-4vcpu-4gb s-4vcpu-8gb s-8vcpu-8gb s-8vcpu-16gb" -- "$cur")); return ;;
	--method) COMPREPLY=($(compgen -W "GET POST PUT PATCH DELETE" -- "$cur")); return ;;
	--url | --api-key | --admin-token | --timeout | --rootfs | --name | --egress | --env | --auto-pause | \
		--page-size | --wait-timeout | --rules | --max-rules | --since | --path | --tenant | --limit | --interval | \
		--host | --target-prefix)
		return ;;
	--out) COMPREPLY=($(compgen -d -- "$cur")); return ;;
	esac

	local opts=""
	case "${cmd[*]}" in
	"") COMPREPLY=($(compgen -W "$top $globals" -- "$cur")); return ;;
	egress) COMPREPLY=($(compgen -W "show set clear check lint test" -- "$cur")); return ;;
	files) COMPREPLY=($(compgen -W "push pull" -- "$cur")); return ;;
	mock) COMPREPLY=($(compgen -W "faults internet scenario journal state reset clock env cassette" -- "$cur")); return ;;
	"mock cassette") COMPREPLY=($(compgen -W "list check prune merge" -- "$cur")); return ;;
	"mock internet") COMPREPLY=($(compgen -W "stub rm show" -- "$cur")); return ;;
	"mock internet show") COMPREPLY=($(compgen -W "stubs journal" -- "$cur")); return ;;
	"mock faults") COMPREPLY=($(compgen -W "add ls rm clear" -- "$cur")); return ;;
	"mock scenario") COMPREPLY=($(compgen -W "load" -- "$cur")); return ;;
	"mock clock") COMPREPLY=($(compgen -W "advance" -- "$cur")); return ;;
	create) opts="--shape --rootfs --name --egress --env --auto-pause" ;;
	ls) opts="--status --page-size" ;;
	pause* | resume*) opts="--wait --wait-timeout" ;;
	fork*) opts="--wait --wait-timeout --start-paused --egress --env" ;;
	exec*) opts="--stream --env --" ;;
	"egress check"*) opts="--rules --mode" ;;
	"egress lint"*) opts="--max-rules"; COMPREPLY=($(compgen -f -- "$cur")) ;;
	"egress test"*) opts="--mode" ;;
	"mock journal") opts="--since --method --path --tenant --status --limit --follow --interval" ;;
	"mock state") opts="--tenant" ;;
	"mock cassette prune"*) opts="--host --target-prefix --keep-bodies --dry-run"; COMPREPLY=($(compgen -d -- "$cur")) ;;
	"mock cassette merge"*) opts="--out"; COMPREPLY=($(compgen -d -- "$cur")) ;;
	"mock cassette list"* | "mock cassette check"*) COMPREPLY=($(compgen -d -- "$cur")) ;;
	"mock faults add" | "mock internet stub" | "mock scenario load" | "files push"* | "files pull"*) COMPREPLY=($(compgen -f -- "$cur")) ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$opts $globals" -- "$cur"))
		return
	fi
	case "${cmd[*]}" in
	get | rm | exec | pause | resume | fork | "egress show" | "egress set" | "egress clear" | "egress test" | "files push" | "files pull")
		COMPREPLY=($(compgen -W "$(_sbxctl_ids)" -- "$cur")) ;;
	esac
}
complete -F _sbxctl sbxctl
