#!/usr/bin/env bash
# The bash completion (completion/hypertrace-bpf.bash), driven as bash drives
# it: the function `complete -p hypertrace-bpf` names is called with
# COMP_WORDS/COMP_CWORD set, and COMPREPLY is read. It offers the commands and
# every option of each command's --help, the --hist series the program
# accepts, VM processes (a process holding a kvm-vm fd: its pid for -p, its
# QEMU -name for --vm), *.htr trace files for report and convert, and
# commands after record's "--".
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
COMPLETION=$TOP/completion/hypertrace-bpf.bash
work=$(mktemp -d)
vm_pid=
decoy_pid=
trap 'kill $vm_pid $decoy_pid 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/files/sub.d"
ln -s "$OUTPUT/hypertrace-bpf" "$work/bin/hypertrace-bpf"
touch "$work/files/a.htr" "$work/files/b.htr" "$work/files/notes.txt"

# complete WORD... : the completions bash would offer for the command line
# WORD... (the last word being completed), one per line, sorted.
complete_words() {
	(
		cd "$work/files" || exit 1
		PATH=$work/bin:$PATH
		# shellcheck disable=SC1090
		source "$COMPLETION"
		func=$(complete -p hypertrace-bpf | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
		COMP_WORDS=(hypertrace-bpf "$@")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		COMP_LINE="${COMP_WORDS[*]}"
		COMP_POINT=${#COMP_LINE}
		COMPREPLY=()
		"$func" hypertrace-bpf "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		printf '%s\n' "${COMPREPLY[@]}" | sort -u | sed '/^$/d'
	)
}
# check NAME WANT GOT
check() {
	if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "want [$(echo $2)], got [$(echo $3)]"; fi
}
help_long() { "$OUTPUT/hypertrace-bpf" "$@" --help | grep -E '^ +-' | sed -E 's/^ +//; s/  .*//' |
	grep -oE -- '--[a-z][a-z0-9-]*' | sort -u; }
help_all() { "$OUTPUT/hypertrace-bpf" "$@" --help | grep -E '^ +-' | sed -E 's/^ +//; s/  .*//' |
	grep -oE -- '(^|[ ,])--?[A-Za-z0-9][a-z0-9-]*' | tr -d ' ,' | sort -u; }

if ! bash -c "source '$COMPLETION'; complete -p hypertrace-bpf" | grep -q -- '-F '; then
	fail completion_registered "sourcing $COMPLETION registers no completion function for hypertrace-bpf"
	suite_exit
fi
pass completion_registered

commands=$("$OUTPUT/hypertrace-bpf" --help | awk '/^Commands:/ { on = 1; next } on && /^ +[a-z]/ { print $1; next } on && !/^ / { on = 0 }' | sort)
check completes_commands "$commands" "$(complete_words '')"
check completes_a_command_prefix "$(grep '^re' <<<"$commands")" "$(complete_words re)"
check completes_top_level_options "$(help_all)" "$(complete_words -)"
for c in $commands; do
	check "completes_every_long_option_$c" "$(help_long "$c")" "$(complete_words "$c" --)"
	check "completes_every_option_$c" "$(help_all "$c")" "$(complete_words "$c" -)"
done

# --hist: the series the parser names in its error, as a comma list.
series=$("$OUTPUT/hypertrace-bpf" report --hist=zz-none x.htr 2>&1 | sed -n 's/.*expected \(.*\) or a comma list.*/\1/p' | tr -d ',' | tr ' ' '\n' | sort)
if [ -z "$series" ]; then
	fail completes_hist_series "report --hist=zz-none names no series in its error"
else
	check completes_hist_series_record "$series" "$(complete_words record --hist '')"
	check completes_hist_series_after_a_comma "$(sed 's/^/total,/' <<<"$series")" "$(complete_words record --hist total,)"
	check completes_hist_series_or_file_report "$(printf '%s\n' $series a.htr b.htr sub.d | sort)" "$(complete_words report --hist '')"
fi

# "--hist=" as bash splits it: "--hist" "=" (then the value).
check completes_a_value_after_equals "$series" "$(complete_words record --hist =)"
check completes_a_value_prefix_after_equals "total" "$(complete_words record --hist = to)"
check completes_vm_user_with_user_names "root" "$(complete_words top --vm-user roo)"
check completes_trace_files_report "$(printf '%s\n' a.htr b.htr sub.d)" "$(complete_words report '')"
check completes_trace_files_convert "$(printf '%s\n' a.htr b.htr sub.d)" "$(complete_words convert --ctf out.d '')"
check completes_trace_files_by_prefix "a.htr" "$(complete_words report --dump a)"
check completes_any_file_for_output "$(printf '%s\n' a.htr b.htr notes.txt sub.d)" "$(complete_words record -o '')"
check completes_directories_for_ctf "sub.d" "$(complete_words convert --ctf '')"
check completes_directories_for_lttng "sub.d" "$(complete_words convert --lttng '')"
check completes_any_file_for_perfetto "$(printf '%s\n' a.htr b.htr notes.txt sub.d)" "$(complete_words convert --perfetto '')"
check completes_trace_files_after_perfetto "$(printf '%s\n' a.htr b.htr sub.d)" "$(complete_words convert --perfetto t.pftrace '')"
check completes_nothing_for_a_number "" "$(complete_words record --nr '')"
check completes_a_command_after_double_dash "$(compgen -c -- bas | sort -u)" "$(complete_words record -- bas)"

# VM processes: one holding a kvm-vm fd (KVM_CREATE_VM), named like QEMU's
# -name NAME,debug-threads=on, and a decoy with a -name and no VM.
vm_script='import fcntl, os, sys, time
fd = os.open("/dev/kvm", os.O_RDWR)
if sys.argv[1] != "decoy":
    fcntl.ioctl(fd, 0xAE01, 0)  # KVM_CREATE_VM: the process now holds anon_inode:kvm-vm
print("ready", flush=True)
if sys.argv[1] != "probe":
    time.sleep(120)'
if [ ! -c /dev/kvm ] || ! python3 -c "$vm_script" probe </dev/null 2>/dev/null | grep -q ready; then
	skip completes_vm_processes "no /dev/kvm here on which KVM_CREATE_VM succeeds"
else
	python3 -c "$vm_script" vm -name "web-comp-$$,debug-threads=on" >"$work/vm.out" 2>&1 &
	vm_pid=$!
	python3 -c "$vm_script" decoy -name "decoy-comp-$$" >"$work/decoy.out" 2>&1 &
	decoy_pid=$!
	for _ in $(seq 50); do
		grep -q ready "$work/vm.out" && grep -q ready "$work/decoy.out" && break
		sleep 0.1
	done
	pids=$(complete_words record -p '')
	if grep -qx "$vm_pid" <<<"$pids" && ! grep -qx "$decoy_pid" <<<"$pids"; then
		pass completes_vm_pids
	else
		fail completes_vm_pids "want $vm_pid (and not the decoy $decoy_pid) in [$(echo $pids)]"
	fi
	check completes_vm_names "web-comp-$$" "$(complete_words record --vm web-comp)"
	names=$(complete_words report --vm '')
	if grep -qx "web-comp-$$" <<<"$names" && ! grep -q decoy-comp <<<"$names"; then
		pass completes_vm_names_report
	else
		fail completes_vm_names_report "want web-comp-$$ and no decoy in [$(echo $names)]"
	fi
fi
suite_exit
