#!/usr/bin/env bash
# report --boot on a boot whose every time is known (tests/tools/boot_gen):
# the phases, their starts, lengths and how much earlier each may have
# begun, their exits and the vCPUs' time in them, as text and CSV; where a
# boot that crashed stopped, named with the guest's symbols; what the file
# could not keep; a pid given to a new VM process; hostile VM names
# escaped; the usage errors.
# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"

GEN=$OUTPUT/tests/tools/boot_gen
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! "$GEN" "$work/boot.htr" --crash >/dev/null || ! "$GEN" "$work/up.htr" >/dev/null ||
	! "$GEN" "$work/hostile.htr" --hostile-name --lost 7 >/dev/null ||
	! "$GEN" "$work/late.htr" --no-first-entry >/dev/null || ! "$GEN" "$work/again.htr" --again >/dev/null; then
	fail boot_cli_files "boot_gen failed"
	suite_exit
fi

# The CSV's rows, "phase start_from_boot_ns length_ns uncertainty_ns exits guest kvm vmm wait halted blocked",
# worked out from boot_gen's times: the decompressor may have begun from the
# last CPUID exit's entry (20.0908 ms) on, the kernel from the decompressor's
# last entry (30.982 ms), user space (on vCPU 1) from its kernel exit's entry
# (46.001 ms); the kernel's exits are vCPU 0's 139 MSR (0.7 us) and one HLT
# (1 us in KVM, 3 ms halted) and vCPU 1's three (1 us each, from 45 ms on);
# its guest time is vCPU 0's 20 ms and vCPU 1's 15 ms less their exits.
"$HT" report --boot --csv "$work/boot.htr" >"$work/csv" 2>"$work/err"
rc=$?
rows=$(awk -F, 'NR > 1 { print $3, $5, $6, $7, $9, $10, $11, $12, $13, $14, $15 }' "$work/csv")
want="firmware 0 30000000 0 610 28792000 908000 300000 0 0 0
decompressor 30000000 10000000 9909200 50 9900000 50000 50000 0 0 0
kernel 40000000 20000000 9018000 143 31898700 101300 0 0 3000000 0
user space 60000000 21000000 13999000 43 38877000 41000 82000 0 3000000 0"
if [ "$rc" -eq 0 ] && [ "$rows" = "$want" ]; then
	pass boot_phases_start_where_the_exits_show_them
else
	fail boot_phases_start_where_the_exits_show_them "rc $rc: $(cat "$work/err")
got:
$rows
want:
$want"
fi

# The phases follow each other and add up to the VM's wall time (81 ms: to its threads' end).
if awk -F, 'NR > 1 { if (NR > 2 && $5 != end) bad = 1; end = $5 + $6; n++ }
	END { exit !(n == 4 && !bad && end == 81000000) }' "$work/csv"; then
	pass boot_phases_add_up_to_the_wall_time
else
	fail boot_phases_add_up_to_the_wall_time "$(cat "$work/csv")"
fi

"$HT" report --boot --guest-symbols "$work/boot.htr.kallsyms" "$work/boot.htr" >"$work/out" 2>"$work/err"
rc=$?
if [ "$rc" -eq 0 ] && grep -q "ended: its vCPU threads ended at 0.081000 s" "$work/out" &&
	grep -q "vCPU 0 0.080000 s hlt at 0xffffffff81234567 panic+0x67, long mode" "$work/out" &&
	grep -q "vCPU 1 0.079000 s hlt at 0xffffffff81300020 do_idle+0x20, long mode" "$work/out" &&
	grep -q "shown by vCPU 0's exit at 0xffffffff81000100 _stext+0x100" "$work/out" &&
	grep -q "the guest's first hypercall record (nr 1000): 0.070000 s" "$work/out"; then
	pass a_boot_that_crashed_says_where_it_stopped
else
	fail a_boot_that_crashed_says_where_it_stopped "rc $rc: $(cat "$work/err") / $(cat "$work/out")"
fi

# A secondary vCPU's real-mode start and long-mode trampoline are not the boot going back or forward.
if grep -q "^  kernel: msr 141 (most: msr 0xc0000080 EFER write 140), io 1 (most: io 0x80 out 1 1), hlt 1;" "$work/out" &&
	grep -q "^  user space: .*shown by vCPU 1's exit at 0x7f0000001000$" "$work/out"; then
	pass a_secondary_vcpus_start_moves_no_phase
else
	fail a_secondary_vcpus_start_moves_no_phase "$(grep -E '^  (kernel|user space):' "$work/out")"
fi

"$HT" report --boot "$work/up.htr" >"$work/out" 2>"$work/err"
rc=$?
if [ "$rc" -eq 0 ] && grep -q "still running at the end of its records (0.062903 s)" "$work/out" &&
	! grep -q "^  ended:" "$work/out"; then
	pass a_boot_still_running_is_not_called_ended
else
	fail a_boot_still_running_is_not_called_ended "rc $rc: $(cat "$work/out")"
fi

# Without its first entry, the start is the first exit and says so.
"$HT" report --boot --csv "$work/late.htr" >"$work/csv" 2>"$work/err"
if awk -F, 'NR == 2 { exit !($3 == "firmware" && $8 == 0 && $5 == 0) }' "$work/csv" &&
	"$HT" report --boot "$work/late.htr" | grep -q "its first exit seen: its first entry was not"; then
	pass a_boot_without_its_first_entry_says_its_start_is_not_exact
else
	fail a_boot_without_its_first_entry_says_its_start_is_not_exact "$(cat "$work/csv")"
fi

"$HT" report --boot "$work/hostile.htr" >"$work/out" 2>"$work/err"
rc=$?
if [ "$rc" -eq 0 ] && ! grep -q $'\x1b' "$work/out" && grep -q "^VM 'boot\\\\x1b\[31m\"1' (process 30000)" "$work/out" &&
	grep -q "VM process 30000: 7 boot exits lost (ring buffer full)" "$work/err"; then
	pass boot_report_escapes_names_and_says_what_was_lost
else
	fail boot_report_escapes_names_and_says_what_was_lost "rc $rc: $(cat -v "$work/out" | head -n 2) / $(cat "$work/err")"
fi

# -p and --vm select VMs.
if [ "$("$HT" report --boot -p 30000 "$work/boot.htr" | grep -c '^VM ')" = 1 ] &&
	[ "$("$HT" report --boot -p 1 "$work/boot.htr" | grep -c '^VM ')" = 0 ] &&
	[ "$("$HT" report --boot --vm boot1 "$work/boot.htr" | grep -c '^VM ')" = 1 ] &&
	[ "$("$HT" report --boot --vm other "$work/boot.htr" | grep -c '^VM ')" = 0 ]; then
	pass boot_report_selects_vms_by_pid_and_name
else
	fail boot_report_selects_vms_by_pid_and_name "selection"
fi

# A pid given to a new VM process: each boot is told with the hypercall and
# the guest's own trace its process sent (the second's at 0.070 s and 0.075
# s of its boot), none of the other's.
"$HT" report --boot "$work/again.htr" >"$work/out" 2>"$work/err"
rc=$?
first=$(awk '/^VM /{n++} n == 1' "$work/out")
second=$(awk '/^VM /{n++} n == 2' "$work/out")
if [ "$rc" -eq 0 ] && [ "$(grep -c '^VM ' "$work/out")" = 2 ] &&
	grep -q "first hypercall record (nr 1000): 0.070000 s" <<<"$first" &&
	grep -q "the one in the file for its pid is another VM process's" <<<"$first" &&
	grep -q "first hypercall record (nr 1001): 0.070000 s" <<<"$second" &&
	! grep -q "another VM process's" <<<"$second" && ! grep -q "nr 1000" <<<"$second"; then
	pass a_pid_given_again_keeps_each_boots_hypercall_and_trace
else
	fail a_pid_given_again_keeps_each_boots_hypercall_and_trace "rc $rc: $(cat "$work/err") / $(cat "$work/out")"
fi

# A file cut short: the boot up to its last whole block, and a one-line error.
size=$(stat -c %s "$work/boot.htr")
head -c $((size - 100)) "$work/boot.htr" >"$work/cut.htr"
"$HT" report --boot "$work/cut.htr" >"$work/out" 2>"$work/err"
rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 2 ] && [ "$(wc -l <"$work/err")" -ge 1 ]; then
	pass boot_report_of_a_cut_file_is_a_runtime_error
else
	fail boot_report_of_a_cut_file_is_a_runtime_error "rc $rc: $(cat "$work/err")"
fi

# A recording without --boot: what to do.
"$OUTPUT/tests/tools/trace_gen" bulk "$work/plain.htr" 10 >/dev/null
"$HT" report --boot "$work/plain.htr" >"$work/out" 2>"$work/err"
rc=$?
if [ "$rc" -eq 1 ] && grep -q "recorded without --boot (record --boot -o FILE" "$work/err"; then
	pass boot_report_of_a_file_without_boot_says_what_to_do
else
	fail boot_report_of_a_file_without_boot_says_what_to_do "rc $rc: $(cat "$work/err")"
fi

expect_usage() {
	local name=$1 want=$2
	shift 2
	"$HT" "$@" >/dev/null 2>"$work/err"
	local rc=$?
	if [ "$rc" -eq 2 ] && grep -q -- "$want" "$work/err"; then
		pass "$name"
	else
		fail "$name" "rc $rc: $(cat "$work/err")"
	fi
}
expect_usage boot_report_with_json_is_a_usage_error "prints the boots as text or --csv" report --boot --json "$work/boot.htr"
expect_usage boot_report_with_a_time_window_is_a_usage_error "select them with -p or --vm" report --boot --since 1 "$work/boot.htr"
expect_usage record_boot_window_without_boot_is_a_usage_error "add --boot" record --boot-window 5
expect_usage record_boot_without_a_file_is_a_usage_error "drop --no-file" record --boot --no-file
expect_usage record_boot_window_must_be_positive "invalid --boot-window" record --boot --boot-window 0
suite_exit
