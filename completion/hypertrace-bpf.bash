# bash completion for hypertrace-bpf                          -*- shell-script -*-
#
# The commands and options come from the program's own --help (as its man
# pages do), read on each completion: a new command or option completes as
# soon as its --help lists it. Values are completed by the name --help gives
# them:
#   FILE, FILE.json       files (and, for the trace file of report/convert,
#                         only *.htr files and directories)
#   DIR                   directories
#   PID                   VM processes running now (holding a kvm-vm fd)
#   NAME (--vm)           QEMU guest names (-name) of those processes
#   USER (--vm-user)      user names
#   SERIES, [SERIES]      the latency series, a comma list
# shellcheck shell=bash

# The latency series of --hist (record, report).
_hypertrace_bpf_series="total exit-hcall hcall-entry all"

# Pids of running VM processes: those holding an anon_inode:kvm-vm fd (as
# root: every one; else the caller's own).
_hypertrace_bpf_vm_pids() {
	local fd pid
	for fd in /proc/[0-9]*/fd/*; do
		[ "$(readlink "$fd" 2>/dev/null)" = "anon_inode:kvm-vm" ] || continue
		pid=${fd#/proc/}
		echo "${pid%%/*}"
	done | sort -un
}

# QEMU's guest name of process $1: the -name value's first item without '='
# (or its guest= item), ',,' being an escaped comma.
_hypertrace_bpf_vm_name() {
	local arg prev= value item first
	local -a args items
	mapfile -d '' -t args <"/proc/$1/cmdline" 2>/dev/null || return
	for arg in "${args[@]}"; do
		if [ "$prev" = -name ] || [ "$prev" = --name ]; then
			value=${arg//,,/$'\x01'}
			first=1
			IFS=, read -r -a items <<<"$value"
			for item in "${items[@]}"; do
				item=${item//$'\x01'/,}
				if [[ $item == guest=* ]]; then
					echo "${item#guest=}"
					return
				elif [ $first = 1 ] && [[ $item != *=* ]] && [ -n "$item" ]; then
					echo "$item"
					return
				fi
				first=0
			done
			return
		fi
		prev=$arg
	done
}

# "OPTION METAVAR" lines (METAVAR empty for a flag) of a --help text on stdin:
# its option entries are the indented lines starting with '-'; an entry's
# options end at two spaces. "-o, --output FILE": both take FILE;
# "--catalog FILE, --guest-symbols FILE": each its own.
_hypertrace_bpf_options() {
	local line term word
	local -a words group
	while IFS= read -r line; do
		[[ $line =~ ^\ +- ]] || continue
		term=${line#"${line%%[! ]*}"}
		term=${term%%  *}
		read -r -a words <<<"${term//,/ }"
		group=()
		for word in "${words[@]}"; do
			if [[ $word == -* ]]; then
				group+=("$word")
			else
				printf '%s '"$word"'\n' "${group[@]}"
				group=()
			fi
		done
		[ ${#group[@]} -eq 0 ] || printf '%s\n' "${group[@]}"
	done
}

_hypertrace_bpf_files() { # $1: a glob for files, e.g. '*.htr'; '' for every file
	local IFS=$'\n'
	compopt -o filenames 2>/dev/null
	if [ -n "$1" ]; then
		COMPREPLY=($(compgen -d -- "$cur") $(compgen -f -X "!$1" -- "$cur"))
	else
		COMPREPLY=($(compgen -f -- "$cur"))
	fi
}

_hypertrace_bpf() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	local prog=${COMP_WORDS[0]} cmd= i word help opts metavar
	command -v "$prog" >/dev/null 2>&1 || prog=hypertrace-bpf
	COMPREPLY=()
	# "--hist=to": bash splits the word at '=' (COMP_WORDBREAKS).
	if [ "$cur" = "=" ]; then
		cur=
	elif [ "$prev" = "=" ] && ((COMP_CWORD >= 2)); then
		prev=${COMP_WORDS[COMP_CWORD - 2]}
	fi

	# The command: the first word after the program that is not an option.
	for ((i = 1; i < COMP_CWORD; i++)); do
		word=${COMP_WORDS[i]}
		[[ $word == -* ]] && continue
		cmd=$word
		break
	done
	if [ -z "$cmd" ]; then
		local commands
		commands=$("$prog" --help 2>/dev/null | awk '/^Commands:/ { on = 1; next }
			on && /^ +[a-z]/ { print $1; next } on && !/^ / { on = 0 }')
		if [[ $cur == -* ]]; then
			opts=$("$prog" --help 2>/dev/null | _hypertrace_bpf_options | cut -d' ' -f1)
			COMPREPLY=($(compgen -W "$opts" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$commands" -- "$cur"))
		fi
		return 0
	fi

	# After record's "--": a command, then its arguments.
	for ((i = i + 1; i < COMP_CWORD; i++)); do
		if [ "${COMP_WORDS[i]}" = -- ]; then
			if ((i + 1 == COMP_CWORD)); then
				COMPREPLY=($(compgen -c -- "$cur"))
			else
				_hypertrace_bpf_files ''
			fi
			return 0
		fi
	done

	help=$("$prog" "$cmd" --help 2>/dev/null | _hypertrace_bpf_options)
	# The value of the option before the cursor, by the name --help gives it.
	metavar=$(awk -v o="$prev" '$1 == o { print $2; exit }' <<<"$help")
	case $metavar in
	FILE | FILE.*)
		_hypertrace_bpf_files ''
		return 0
		;;
	DIR)
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -d -- "$cur"))
		return 0
		;;
	PID)
		COMPREPLY=($(compgen -W "$(_hypertrace_bpf_vm_pids)" -- "$cur"))
		return 0
		;;
	NAME)
		local pid names=()
		for pid in $(_hypertrace_bpf_vm_pids); do
			names+=("$(_hypertrace_bpf_vm_name "$pid")")
		done
		local IFS=$'\n'
		COMPREPLY=($(compgen -W "${names[*]}" -- "$cur"))
		return 0
		;;
	USER)
		COMPREPLY=($(compgen -u -- "$cur"))
		return 0
		;;
	SERIES | \[SERIES\])
		# A comma list: complete the item after the last comma.
		local head=
		[[ $cur == *,* ]] && head=${cur%,*},
		COMPREPLY=($(compgen -P "$head" -W "$_hypertrace_bpf_series" -- "${cur##*,}"))
		if [ "$metavar" = "[SERIES]" ] && [[ $cur != *,* ]]; then
			# Optional: the word may as well be the trace file.
			local series=("${COMPREPLY[@]}")
			_hypertrace_bpf_files '*.htr'
			COMPREPLY=("${series[@]}" "${COMPREPLY[@]}")
		else
			compopt -o nospace 2>/dev/null
		fi
		return 0
		;;
	?*)
		return 0 # a number, a time, an address: nothing to offer
		;;
	esac

	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(cut -d' ' -f1 <<<"$help")" -- "$cur"))
		return 0
	fi
	case $cmd in
	report | convert) _hypertrace_bpf_files '*.htr' ;;
	esac
	return 0
}
complete -F _hypertrace_bpf hypertrace-bpf
