#!/usr/bin/env bash
# How the nested driver tells an emulation stall from a failure, without
# booting anything: stall_verdict (tests/e2e/stalls.sh) on kernel logs
# captured from the nested machine (stall_logs/) or written here in the
# kernel's own formats, then nested_run's decision (tests/e2e/nested.sh) on
# the outputs of constructed attempts, with the attempt itself replaced.
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/nested.sh"

LOGS=$TOP/tests/e2e/stall_logs
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# expect_verdict NAME CPUS WANT LOG...: stall_verdict's line matches the
# extended regex WANT (anchored; "" for no line at all).
expect_verdict() {
	local name=$1 cpus=$2 want=$3 got
	shift 3
	got=$(stall_verdict "$cpus" "$@" 2>&1)
	if [[ $got =~ ^$want$ ]]; then pass "$name"; else fail "$name" "verdict '$got', want /^$want\$/"; fi
}

# expect_idle_verdict NAME IDLE CPUS WANT LOG...: the same, with the guest's
# idle time over a window (stall_verdict --idle IDLE).
expect_idle_verdict() {
	local name=$1 idle=$2 cpus=$3 want=$4 got
	shift 4
	got=$(stall_verdict --idle "$idle" "$cpus" "$@" 2>&1)
	if [[ $got =~ ^$want$ ]]; then pass "$name"; else fail "$name" "verdict '$got', want /^$want\$/"; fi
}

# log NAME: writes stdin to $work/NAME and prints its path.
log() { cat >"$work/$1"; echo "$work/$1"; }

# --- captured from the nested machine ---------------------------------------------
# A real stall: the machine (1 vCPU) got no timer interrupt while it ran its
# KVM guest's vCPU, for 58 s, until the silence watchdog typed on its console.
expect_verdict captured_lost_interrupt_in_kvm_run_is_a_stall 1 \
	'stall: soft lockup on all 1 vCPU\(s\) at 79 s, stuck 58 s' "$LOGS/l1-console-lost-interrupt.log"
# The machine paused (its qemu stopped for 65 s) while busy: the report with
# its register dump and call trace.
expect_verdict captured_pause_with_register_dump_is_a_stall 1 \
	'stall: soft lockup on all 1 vCPU\(s\) at 104 s, stuck 62 s' "$LOGS/l1-dmesg-paused-while-busy.log"
expect_verdict captured_run_without_reports_is_neither 2 '' "$LOGS/l1-console-no-stall.log"

# --- soft lockups ---------------------------------------------------------------
# What a KVM guest with 2 vCPUs showed when the whole nested machine was
# paused: both vCPUs "stuck" at the same moment for about as long, on its
# console and again in a dmesg dump the test printed.
issue=$(log issue.console <<'EOF'
L2-BEGIN u
[   85.112233] watchdog: BUG: soft lockup - CPU#1 stuck for 67s! [awk:139]
[   85.113001] watchdog: BUG: soft lockup - CPU#0 stuck for 64s! [ht_sched_and_fu:92]
ALIVE 0.95 0.40 0.15 2/61 160
DMESG [   12.000001] hypertrace_guest: loaded
DMESG [   85.112233] watchdog: BUG: soft lockup - CPU#1 stuck for 67s! [awk:139]
DMESG [   85.113001] watchdog: BUG: soft lockup - CPU#0 stuck for 64s! [ht_sched_and_fu:92]
L2-END u 0
EOF
)
expect_verdict lockup_on_every_vcpu_at_once_with_one_duration_is_a_stall 2 \
	'stall: soft lockup on all 2 vCPU\(s\) at 85 s, stuck 64-67 s' "$issue"
expect_verdict a_message_in_two_logs_counts_once 2 \
	'stall: soft lockup on all 2 vCPU\(s\) at 85 s, stuck 64-67 s' "$issue" "$issue"
expect_verdict lockup_missing_a_vcpu_is_a_failure 3 'failure: soft lockup on CPU#1,0 of 3 vCPU\(s\) at 85 s .*not the whole machine' "$issue"

one=$(log one.kmsg <<'EOF'
[   40.000000] watchdog: BUG: soft lockup - CPU#1 stuck for 23s! [insmod:120]
EOF
)
expect_verdict lockup_of_one_vcpu_only_is_a_failure 2 'failure: soft lockup on CPU#1 of 2 vCPU\(s\) at 40 s \(stuck 23 s\): not the whole machine' "$one"
# The same report twice (console and dmesg dump) is still one vCPU of two.
expect_verdict copies_of_one_vcpus_lockup_do_not_make_it_all 2 'failure: soft lockup on CPU#1 of 2 .*' "$one" "$one"

apart=$(log apart.kmsg <<'EOF'
[   95.333511] watchdog: BUG: soft lockup - CPU#1 stuck for 61s! [sh:95]
[  168.737137] watchdog: BUG: soft lockup - CPU#0 stuck for 130s! [sh:94]
EOF
)
expect_verdict lockups_at_different_moments_are_a_failure 2 'failure: soft lockup on CPU#1 of 2 vCPU\(s\) at 95 s .*' "$apart"

diverging=$(log diverging.kmsg <<'EOF'
[  200.100000] watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [rmmod:150]
[  200.300000] watchdog: BUG: soft lockup - CPU#1 stuck for 130s! [sh:94]
EOF
)
expect_verdict lockups_with_diverging_durations_are_a_failure 2 'failure: soft lockups on every vCPU at 200 s stuck 22-130 s: durations too far apart for one pause' "$diverging"

untimed=$(log untimed.console <<'EOF'
watchdog: BUG: soft lockup - CPU#0 stuck for 30s! [sh:94]
watchdog: BUG: soft lockup - CPU#1 stuck for 31s! [sh:95]
EOF
)
expect_verdict reports_without_timestamps_are_one_burst 2 'stall: soft lockup on all 2 vCPU\(s\), stuck 30-31 s' "$untimed"

# --- a halted vCPU woken late ------------------------------------------------------
# What a KVM guest with 2 vCPUs showed in a run on a slow host: its idle CPU#0
# got no timer interrupt for 168 s while CPU#1 and the nested machine ran on.
# (Linux 6.1's report; its register dump, shortened.)
halted=$(log halted.console <<'EOF2'
DMESG [  263.097370] watchdog: BUG: soft lockup - CPU#0 stuck for 168s! [swapper/0:0]
DMESG [  263.266604] Modules linked in: [last unloaded: hypertrace_guest(OE)]
DMESG [  263.270101] CPU: 0 PID: 0 Comm: swapper/0 Tainted: G           OE      6.1.0-44-amd64 #1  Debian 6.1.164-1
DMESG [  263.270444] RIP: 0010:native_safe_halt+0xb/0x10
DMESG [  263.270551] Code: 0b e9 dd fe ff ff cc cc cc cc cc cc cc cc cc cc cc eb 07 0f 00 2d 09 70 5e 00 f4 c3 cc cc cc cc
DMESG [  263.281002] RSP: 0018:ffffffff9d603e68 EFLAGS: 00000246
DMESG [  263.301550] Call Trace:
DMESG [  263.301551]  <TASK>
DMESG [  263.301602]  default_idle+0xa/0x20
DMESG [  263.301650]  default_idle_call+0x2c/0xe0
DMESG [  263.301702]  do_idle+0x21e/0x290
EOF2
)
expect_verdict halted_idle_vcpu_woken_late_is_a_pause 2 \
	'pause: vCPU\(s\) 0 halted, woken after 168 s at 263 s: an interrupt delivered late' "$halted"
# Linux 6.12 names the halt pv_native_safe_halt.
sed 's/native_safe_halt+0xb\/0x10/pv_native_safe_halt+0xf\/0x20/' "$halted" >"$work/halted612"
expect_verdict halted_in_pv_native_safe_halt_is_a_pause 2 'pause: vCPU\(s\) 0 .*' "$work/halted612"
# The same report with the idle task anywhere but at its halt instruction
# (a loop in an interrupt it serves, say) ran code all along: a failure.
sed 's/RIP: 0010:native_safe_halt+0xb\/0x10/RIP: 0010:ht_probe_sched_switch+0x4c\/0x90 [hypertrace_guest]/' "$halted" >"$work/idle_busy"
expect_verdict idle_task_not_at_its_halt_is_a_failure 2 'failure: soft lockup on CPU#0 of 2 vCPU\(s\) at 263 s .*' "$work/idle_busy"
# A task other than the idle one at a halt-named RIP is not an idle vCPU.
sed 's/\[swapper\/0:0\]/[rmmod:151]/' "$halted" >"$work/task_halted"
expect_verdict a_task_other_than_idle_is_a_failure 2 'failure: soft lockup on CPU#0 of 2 .*' "$work/task_halted"
# Woken from its halt, the vCPU ran the late interrupt's softirqs when the
# watchdog fired there (seen beside two CPU hogs): the report's first RIP is
# in handle_softirqs, the task's RIP after the interrupt's stack at the halt.
softirq=$(log softirq.console <<'EOF2'
DMESG [  402.909864] watchdog: BUG: soft lockup - CPU#0 stuck for 153s! [swapper/0:0]
DMESG [  403.170306] Modules linked in: [last unloaded: hypertrace_guest(OE)]
DMESG [  403.183255] RIP: 0010:handle_softirqs+0x7d/0x280
DMESG [  403.183301] Call Trace:
DMESG [  403.183302]  <IRQ>
DMESG [  403.183350]  __irq_exit_rcu+0xb6/0xf0
DMESG [  403.183400]  sysvec_apic_timer_interrupt+0x71/0x90
DMESG [  403.183450]  </IRQ>
DMESG [  403.183451]  <TASK>
DMESG [  403.185921] RIP: 0010:native_safe_halt+0xb/0x10
EOF2
)
expect_verdict idle_vcpu_woken_into_its_softirqs_is_a_pause 2 'pause: vCPU\(s\) 0 halted, woken after 153 s at 403 s: an interrupt delivered late' "$softirq"
# In its softirqs, with the task anywhere but at the halt: it ran code all along.
sed 's/RIP: 0010:native_safe_halt+0xb\/0x10/RIP: 0010:do_idle+0x21e\/0x290/' "$softirq" >"$work/softirq_busy"
expect_verdict idle_vcpu_in_softirqs_not_from_its_halt_is_a_failure 2 'failure: soft lockup on CPU#0 of 2 .*' "$work/softirq_busy"
# Anywhere else first (not the softirqs), a later RIP at the halt does not count.
sed 's/RIP: 0010:handle_softirqs+0x7d\/0x280/RIP: 0010:ht_probe_sched_switch+0x4c\/0x90 [hypertrace_guest]/' "$softirq" >"$work/busy_then_halt"
expect_verdict idle_vcpu_busy_first_is_a_failure_whatever_follows 2 'failure: soft lockup on CPU#0 of 2 .*' "$work/busy_then_halt"
# A report without its registers (a log that kept its first line only).
grep 'soft lockup' "$halted" >"$work/no_rip"
expect_verdict a_report_without_its_rip_is_a_failure 2 'failure: soft lockup on CPU#0 of 2 .*' "$work/no_rip"
# Beside a busy vCPU's lockup in the same burst, the halted one is part of it.
{ cat "$halted"; echo 'DMESG [  263.400000] watchdog: BUG: soft lockup - CPU#1 stuck for 167s! [sh:94]'; } >"$work/halted_and_busy"
expect_verdict halted_vcpu_in_a_whole_machine_pause_is_a_stall 2 \
	'stall: soft lockup on all 2 vCPU\(s\) at 263 s, stuck 167-168 s' "$work/halted_and_busy"
expect_verdict halted_vcpu_beside_one_busy_of_three_is_a_failure 3 'failure: soft lockup on CPU#0,1 of 3 .*' "$work/halted_and_busy"

# --- a halted vCPU woken late, told by its own idle time ---------------------------
# The unload test's guest in CI (2 vCPUs, the module loaded at 95 s): woken
# from its halt, the vCPU switched to ksoftirqd before the watchdog's timer
# fired, so the report names neither the idle task nor a halt.
woken=$(log woken.console <<'EOF2'
DMESG [   95.115269] hypertrace_guest: offloading events 0xd, 2 function(s), with vmmcall
DMESG [  279.622427] watchdog: BUG: soft lockup - CPU#0 stuck for 157s! [ksoftirqd/0:14]
DMESG [  279.682439] Modules linked in: [last unloaded: hypertrace_guest(OE)]
DMESG [  279.682677] RIP: 0010:finish_task_switch.isra.0+0x96/0x2d0
DMESG [  303.481884] hypertrace_guest: offloading events 0x9, 1 function(s), with vmmcall
EOF2
)
expect_verdict woken_into_another_task_without_a_measurement_is_a_failure 2 'failure: soft lockup on CPU#0 of 2 .*' "$woken"
# From the load (95.2 s) to the end (312.4 s, 217.2 s): CPU#0 idle 170 s of
# them. Had it run for the 122.6-279.6 s it reports, it could have been idle
# 60.2 s at most.
printf 'window 95.20 312.40\nidle 0 170.00\nidle 1 190.31\n' >"$work/idle_halted"
expect_idle_verdict idle_time_over_the_stuck_time_is_a_pause "$work/idle_halted" 2 \
	'pause: vCPU\(s\) 0 halted, woken after 157 s at 280 s: an interrupt delivered late' "$woken"
# A vCPU that ran: idle 58 s of the window, within what a lockup leaves.
printf 'window 95.20 312.40\nidle 0 58.00\nidle 1 190.31\n' >"$work/idle_ran"
expect_idle_verdict idle_time_a_lockup_leaves_is_a_failure "$work/idle_ran" 2 'failure: soft lockup on CPU#0 of 2 .*' "$woken"
# 2 s of slack: idle 62.1 s (60.2 s plus less than the slack) is not enough either.
printf 'window 95.20 312.40\nidle 0 62.10\n' >"$work/idle_edge"
expect_idle_verdict idle_time_within_the_slack_is_a_failure "$work/idle_edge" 2 'failure: soft lockup on CPU#0 of 2 .*' "$woken"
# The other vCPU's idle time says nothing of this one.
printf 'window 95.20 312.40\nidle 1 217.00\n' >"$work/idle_other"
expect_idle_verdict idle_time_of_another_vcpu_is_a_failure "$work/idle_other" 2 'failure: soft lockup on CPU#0 of 2 .*' "$woken"
# A report outside the window: its idle time was not measured.
printf 'window 20.00 90.00\nidle 0 70.00\n' >"$work/idle_before"
expect_idle_verdict idle_time_of_another_window_is_a_failure "$work/idle_before" 2 'failure: soft lockup on CPU#0 of 2 .*' "$woken"
# Stuck since before the window: only the 25 s inside it count (the window's
# 30 s, all of it idle, against 5 s a lockup leaves).
printf 'window 254.60 284.60\nidle 0 29.90\n' >"$work/idle_late"
expect_idle_verdict idle_time_counts_the_stuck_time_inside_the_window "$work/idle_late" 2 'pause: vCPU\(s\) 0 halted, .*' "$woken"
printf 'window 254.60 284.60\nidle 0 6.90\n' >"$work/idle_late_ran"
expect_idle_verdict idle_time_inside_the_window_a_lockup_leaves_is_a_failure "$work/idle_late_ran" 2 'failure: soft lockup on CPU#0 of 2 .*' "$woken"
# Measured halted, in a burst with a vCPU that ran (idle 10 s): a pause of
# the whole machine; with both measured halted, both were woken late.
{ cat "$woken"; echo 'DMESG [  279.900000] watchdog: BUG: soft lockup - CPU#1 stuck for 156s! [sh:94]'; } >"$work/woken_and_busy"
expect_idle_verdict idle_measured_halted_vcpus_woken_together_are_a_pause "$work/idle_halted" 2 \
	'pause: vCPU\(s\) 0,1 halted, woken after 156-157 s at 280 s: an interrupt delivered late' "$work/woken_and_busy"
printf 'window 95.20 312.40\nidle 0 170.00\nidle 1 10.00\n' >"$work/idle_one_halted"
expect_idle_verdict idle_measured_halted_vcpu_in_a_whole_machine_pause_is_a_stall "$work/idle_one_halted" 2 \
	'stall: soft lockup on all 2 vCPU\(s\) at 280 s, stuck 156-157 s' "$work/woken_and_busy"
# Any other report still fails.
{ cat "$woken"; echo 'DMESG [  290.000000] WARNING: CPU: 1 PID: 151 at kernel/module/main.c:1 free_module'; } >"$work/woken_and_warning"
expect_idle_verdict idle_measured_halted_vcpu_beside_a_warning_is_a_failure "$work/idle_halted" 2 'failure: WARNING: CPU: 1 .*' "$work/woken_and_warning"
# A file without the lines is a usage error, not a verdict.
: >"$work/idle_empty"
expect_idle_verdict idle_file_without_its_lines_is_refused "$work/idle_empty" 2 'stall_verdict: .* has no .window T0 T1. and .idle CPU SECONDS. lines' "$woken"

# --- anything else of the kind is a failure, also beside a stall ---------------------
for kind in \
	'oops:BUG: kernel NULL pointer dereference, address: 0000000000000008' \
	'oops_line:Oops: 0000 [#1] PREEMPT SMP NOPTI' \
	'warning:WARNING: CPU: 1 PID: 139 at kernel/module/main.c:1234 free_module+0x1a/0x20' \
	'kernel_bug:kernel BUG at mm/slub.c:390!' \
	'panic:Kernel panic - not syncing: Fatal exception' \
	'gpf:general protection fault, probably for non-canonical address 0xdead000000000100: 0000 [#1] SMP' \
	'hard_lockup:Watchdog detected hard LOCKUP on cpu 1' \
	'hung_task:INFO: task rmmod:151 blocked for more than 120 seconds.'; do
	f=$(cat "$issue")
	printf '%s\nDMESG [   86.000000] %s\n' "$f" "${kind#*:}" >"$work/with_${kind%%:*}"
	expect_verdict "${kind%%:*}_beside_a_stall_is_a_failure" 2 "failure: $(sed 's/[][().*+?|\\^$]/\\&/g' <<<"${kind#*:}")" "$work/with_${kind%%:*}"
done

# --- RCU stall reports (Linux 6.1's format) ---------------------------------------
rcu_all=$(log rcu_all.kmsg <<'EOF'
[  120.500000] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:
[  120.500100] rcu: 	0-...!: (1 GPs behind) idle=6a4/1/0x4000000000000000 softirq=1453/1455 fqs=0
[  120.500200] rcu: 	1-...!: (0 ticks this GP) idle=81c/1/0x4000000000000000 softirq=764/764 fqs=0
[  120.500300] 	(detected by 0, t=21002 jiffies, g=7075, q=625 ncpus=2)
[  120.500400] rcu: rcu_preempt kthread timer wakeup didn't happen for 20999 jiffies! g7075 f0x0 RCU_GP_WAIT_FQS(5) ->state=0x402
EOF
)
expect_verdict rcu_stall_on_every_vcpu_is_a_stall 2 'stall: RCU stall on all 2 vCPU\(s\) at 120 s' "$rcu_all"
rcu_self=$(log rcu_self.kmsg <<'EOF'
[   61.000000] rcu: INFO: rcu_preempt self-detected stall on CPU
[   61.000100] rcu: 	1-....: (20999 ticks this GP) idle=b6c/1/0x4000000000000000 softirq=900/900 fqs=5249
[   61.000200] 	(t=21000 jiffies g=2289 q=120 ncpus=2)
[   61.400000] rcu: INFO: rcu_preempt self-detected stall on CPU
[   61.400100] rcu: 	0-....: (21001 ticks this GP) idle=d2c/1/0x4000000000000000 softirq=1200/1200 fqs=5249
[   61.400200] 	(t=21002 jiffies g=2289 q=121 ncpus=2)
EOF
)
expect_verdict rcu_self_detected_on_each_vcpu_at_once_is_a_stall 2 'stall: RCU stall on all 2 vCPU\(s\) at 61 s' "$rcu_self"
rcu_one=$(log rcu_one.kmsg <<'EOF'
[  300.000000] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:
[  300.000100] rcu: 	1-...0: (0 ticks this GP) idle=81c/1/0x4000000000000000 softirq=764/764 fqs=5000
[  300.000200] 	(detected by 0, t=21002 jiffies, g=7075, q=625 ncpus=2)
EOF
)
expect_verdict rcu_stall_of_one_vcpu_is_a_failure 2 'failure: RCU stall on CPU\(s\) 1 of 2 vCPU\(s\) at 300 s: not the whole machine .*' "$rcu_one"

if stall_verdict two "$issue" >/dev/null 2>&1; [ $? = 2 ]; then
	pass cpu_count_must_be_a_number
else
	fail cpu_count_must_be_a_number "stall_verdict two ... did not exit with status 2"
fi

# --- nested_stall: what an attempt's outputs say -----------------------------------
# attempt DIR: an attempt's output directory with a normal console.
attempt() {
	rm -rf "$1" && mkdir -p "$1/files"
	printf 'NESTED: script start at uptime 3.1 s\nNESTED-BEAT 5\nNESTED: script exit status 0\n' >"$1/console.log"
}
# expect_stall NAME WANT: nested_stall on $work/a sets NESTED_STALL to match WANT.
expect_stall() {
	NESTED_SMP=1 nested_stall "$work/a"
	if [[ $NESTED_STALL =~ ^$2$ ]]; then pass "$1"; else fail "$1" "NESTED_STALL '$NESTED_STALL', want /^$2\$/"; fi
}
NESTED_STALLED=0
attempt "$work/a"
expect_stall run_without_reports_is_no_stall ''
echo "the KVM guest hyper (L2) did not boot in 120 s; console: |" >"$work/a/files/stalls"
expect_stall l2_guest_that_did_not_boot_is_a_stall 'the KVM guest hyper \(L2\) did not boot in 120 s; console: \|'
printf '%s\n' "[    9.000000] WARNING: CPU: 0 PID: 1 at kernel/x.c:1 f+0x1/0x2" >"$work/a/files/hyper.kmsg"
echo "L2-READY cpus=2" >"$work/a/files/hyper.console"
expect_stall guest_warning_outweighs_a_boot_failure ''

attempt "$work/a"
cp "$issue" "$work/a/files/hyper.console"
sed -i '1i L2-READY cpus=2' "$work/a/files/hyper.console"
grep '^\[' "$issue" >"$work/a/files/hyper.kmsg"
expect_stall guest_lockups_on_every_vcpu_are_a_stall 'KVM guest hyper.kmsg: soft lockup on all 2 vCPU\(s\) at 85 s, stuck 64-67 s'
echo "DMESG [   86.000000] BUG: unable to handle page fault for address: ffffffffc0a01000" >>"$work/a/files/hyper.console"
expect_stall guest_oops_beside_lockups_is_never_retried ''

attempt "$work/a"
echo "L2-READY cpus=2" >"$work/a/files/hyper.console"
cp "$halted" "$work/a/files/hyper.kmsg"
expect_stall guest_vcpu_woken_late_is_no_stall ''

attempt "$work/a"
NESTED_STALLED=1 NESTED_ERR="the emulated machine stalled: no output for 60 s, console kicks did not wake it"
expect_stall silent_machine_is_a_stall 'no output for 60 s, console kicks did not wake it'
echo "[   30.000000] Kernel panic - not syncing: Fatal exception in interrupt" >>"$work/a/console.log"
expect_stall panic_before_the_silence_is_never_retried ''
NESTED_STALLED=0 NESTED_ERR=

# --- the silence watchdog: what counts as the machine's output ---------------------
# A machine whose clock stopped still serves the console's interrupt: its
# terminal echoes each line the watchdog types as an empty one. Those echoes
# are no output, a heartbeat or a result is.
mkdir -p "$work/watch"
printf 'NESTED: script start at uptime 2.68 s\r\nNESTED-BEAT 4\r\n' >"$work/watch/console.log"
printf 'RESULT' >"$work/watch/results.raw"
before=$(nested_output_size "$work/watch")
printf '\r\n\r\n\r\n' >>"$work/watch/console.log"
echoed=$(nested_output_size "$work/watch")
printf 'NESTED-BEAT 6\r\n' >>"$work/watch/console.log"
beat=$(nested_output_size "$work/watch")
printf 'MORE' >>"$work/watch/results.raw"
result=$(nested_output_size "$work/watch")
if [ "$echoed" = "$before" ] && [ "$beat" -gt "$echoed" ] && [ "$result" -gt "$beat" ]; then
	pass watchdog_counts_beats_and_results_not_the_kicks_echoes
else
	fail watchdog_counts_beats_and_results_not_the_kicks_echoes "sizes: $before, after 3 echoed kicks $echoed, after a beat $beat, after a result $result"
fi

# --- nested_run: retry once after a stall, never after a failure --------------------
# The attempts play SCENARIO_1, SCENARIO_2, ... in turn (functions below).
nested_run_once() {
	ATTEMPTS=$((ATTEMPTS + 1))
	NESTED_STALLED=0 NESTED_ERR=
	attempt "$1"
	"${SCENARIO[$ATTEMPTS]}" "$1"
}
clean() { return 0; }
l2_not_booted() { echo "the KVM guest two (L2) did not boot in 120 s; console: |" >"$1/files/stalls"; return 0; }
silent() { NESTED_STALLED=1 NESTED_ERR="the emulated machine stalled: no output for 60 s, console kicks did not wake it"; return 1; }
hung() { NESTED_ERR="qemu did not finish within 300s; console tail: |"; return 1; }
paused() { printf 'NESTED-PAUSE 8 s before uptime 40 s\nNESTED-BEAT 40\nNESTED-PAUSE 12 s before uptime 70 s\n' >>"$1/console.log"; return 0; }
# run_scenario NAME WANT_STATUS WANT_ATTEMPTS WANT_INFO_REGEX WANT_ERR_REGEX ATTEMPT...
run_scenario() {
	local name=$1 want_rc=$2 want_attempts=$3 want_info=$4 want_err=$5 rc out infos
	shift 5
	SCENARIO=(none "$@") ATTEMPTS=0
	out=$(NESTED_SMP=1 nested_run "$work/run" /dev/null 2>/dev/null; echo "rc=$? attempts=$ATTEMPTS err=$NESTED_ERR")
	rc=$(sed -n 's/^rc=\([0-9]*\) .*/\1/p' <<<"$out")
	infos=$(grep -c '^  info: ' <<<"$out")
	if [ "$rc" != "$want_rc" ] || [[ $out != *"attempts=$want_attempts "* ]]; then
		fail "$name" "status $rc after $(sed -n 's/.* attempts=\([0-9]*\) .*/\1/p' <<<"$out") attempt(s), want $want_rc after $want_attempts: $out"
	elif [ -n "$want_info" ] && { [ "$infos" != 1 ] || ! grep -Eq "^  info: $want_info" <<<"$out"; }; then
		fail "$name" "want one info line matching /$want_info/, got: $out"
	elif [ -z "$want_info" ] && [ "$infos" != 0 ]; then
		fail "$name" "want no info line, got: $out"
	elif ! grep -Eq "err=$want_err" <<<"$out"; then
		fail "$name" "NESTED_ERR does not match /$want_err/: $out"
	else
		pass "$name"
	fi
}
run_scenario clean_run_runs_once 0 1 '' '$' clean
run_scenario stall_is_retried_once_from_the_start 0 2 \
	'emulation stall \(the KVM guest two \(L2\) did not boot in 120 s; console: \|\); running the nested machine again from the start$' '$' \
	l2_not_booted clean
if [ -f "$work/run.stalled/files/stalls" ] && [ ! -e "$work/run/files/stalls" ]; then
	pass stalled_attempt_is_kept_beside_the_new_one
else
	fail stalled_attempt_is_kept_beside_the_new_one "want run.stalled/files/stalls and a fresh run/"
fi
run_scenario second_stall_in_a_row_fails 1 2 'emulation stall \(no output for 60 s' \
	'the emulated machine stalled twice in a row: the KVM guest two \(L2\) did not boot.*\(first: no output for 60 s' \
	silent l2_not_booted
run_scenario failure_is_not_retried 1 1 '' 'qemu did not finish within 300s' hung
run_scenario failure_after_a_stall_fails 1 2 'emulation stall' 'qemu did not finish within 300s' silent hung
run_scenario pauses_it_survived_are_reported_not_retried 0 1 \
	'the emulated machine paused 2 time\(s\), up to 12 s, and went on' '$' paused

suite_exit
