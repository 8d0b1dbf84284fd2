#!/usr/bin/env bash
# How an emulation stall is told from a failure, without booting anything:
# stall_verdict (tests/e2e/stalls.sh) on kernel logs captured from the nested
# machine (stall_logs/) or written here in the kernel's own formats.
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/stalls.sh"

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

suite_exit
