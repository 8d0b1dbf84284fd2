#!/usr/bin/env bash
# record --exits, report --exits and top on REAL VM exits: inside the nested
# machine (tests/e2e/nested.sh), Debian's QEMU runs Linux guests with KVM
# (tests/e2e/l2_guest.sh) and hypertrace-bpf counts every exit of them,
# with independent counters running at the same time:
#
#  - causes: a guest program (guest/exitload) writes port 0x80, runs
#    cpuid, reads the MMIO BAR of QEMU's edu device and reads an MSR
#    (IA32_APICBASE, through the msr module), a given number of times each;
#    per cause the exits record counted equal what perf stat counts of
#    kvm:kvm_pio (port 0x80, out), kvm:kvm_cpuid (leaf 1), kvm:kvm_mmio (the
#    BAR's address, read) and kvm:kvm_msr (0x1b, read) in the same run,
#    exactly; those QEMU answers (the port, the BAR) have a time in the VMM.
#  - counts: perf stat counts kvm:kvm_exit with one filter per exit reason
#    of the kernel's own table; per reason, hypertrace-bpf's count plus its
#    exits still in the host at the end must equal perf's, exactly.
#  - times: perf record captures the raw kvm_exit and kvm_entry
#    tracepoints (CLOCK_MONOTONIC, nanoseconds: ftrace's text output has
#    microseconds only) in a second recording of the same workload; each
#    exit's time to its vCPU thread's next entry is the reference. Per
#    reason the counts equal exactly; the log2 buckets can only match up to
#    the few microseconds between the two tools' clock reads of one event
#    (see MOVED_PCT below), and how many exits differ is printed.
#    The guest is stopped (SIGSTOP to its QEMU) while the counters start and
#    stop, so no exit straddles a start or an end.
#  - the account: two vCPUs and a CPU hog on the nested machine's one CPU,
#    then an idle guest; the guest is stopped while the threads' own times
#    are read at both ends. Each vCPU thread's states add up to its time at
#    every EXITS block, exactly; guest + kvm + vmm + wait (runnable) within
#    1% of its /proc/TID/schedstat run time + run_delay; its wait within 3%
#    of run_delay and guest + kvm + vmm 0-5% above perf's task-clock (the
#    switch-ins' own time, the account's and not perf's)
#    (where running ends and waiting begins is drawn a little apart: the
#    cause, the run-queue clock held from a preempting wake-up, is checked
#    against the scheduler's own events: the account's wait equals the
#    sched_switch/sched_wakeup times within 0.5%, and run_delay lies within
#    the bounds the clock's updates put on it); the tick-sampled guest_time
#    (/proc/TID/stat) equal to the ticks the tracepoints place in the
#    kernel's guest-timing window, which is wider than the guest state (see
#    guest_window_ticks); the guest's own steal time (/proc/stat) moves with
#    the wait, and its own idle time is its vCPUs' halts (each one's time in
#    KVM, from the thread records) and KVM's handling of their HLT exits,
#    over the interval between the guest's own two reads of it (after the
#    first stop and before the last: no stop in it), short of it by at most
#    10 ms per halt (the guest's own idle path) (halt_gaps, halt_around).
#  - switches: the first and the last recording are made with --vcpu-sched;
#    each vCPU thread's switch records and the EXITS blocks' counters of its
#    time off the CPU, preempted and blocked, must agree exactly.
#  - the Perfetto export of those two: each vCPU thread's account as
#    counter tracks, and per thread and interval its wait + halted + blocked
#    equal to the time its off-CPU slices cover, exactly.
#  - top -b shows the guest by name with its exits/s (the nested machine
#    has no tmux: tests/term/test_top_tty.sh tests the full screen).
#
# Needs `make static` and apt access on the first run (the nested cache).
# HT_E2E=0 skips it.
set -euo pipefail
# Before nested.sh, which sets its defaults.
export NESTED_TIMEOUT=${NESTED_TIMEOUT:-600}
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/nested.sh"
source "$(dirname "$0")/l2_guest.sh"

HT_STATIC=${HT_STATIC:-$OUTPUT/static/hypertrace-bpf}
# The checks' names begin so (test_nested_debian13_exits.sh runs them all
# again on a Debian 13 nested machine).
CHECK_PREFIX=${CHECK_PREFIX:-nested_}
# One CPU (see test_nested_qemu.sh): two L2 vCPU threads and a hog then
# compete for it, which is what the waiting test needs.
export NESTED_SMP=1 NESTED_MEM=${NESTED_MEM:-2048}
export NESTED_APPEND=${NESTED_APPEND:-tsc=reliable} NESTED_KVM_AMD_PARAMS=${NESTED_KVM_AMD_PARAMS:-npt=0}
export NESTED_STAGE_HOOK=l2_stage
nested_prepare_ahead "$@"

if [ "${HT_E2E:-1}" = 0 ]; then
	skip ${CHECK_PREFIX}exits "disabled by HT_E2E=0"
	exit 0
fi
if [ ! -x "$HT_STATIC" ]; then
	fail ${CHECK_PREFIX}exits "$HT_STATIC is missing: run 'make static' first"
	suite_exit
fi
work=$(mktemp -d)
trap '[ "${HT_E2E_KEEP:-0}" = 1 ] && echo "  info: kept $work" || rm -rf "$work"' EXIT

L2_WORK=$work
# The guest's workload of exits of known causes, static (make static builds
# it so; a distribution build, GUEST_STATIC=, does not).
EXITLOAD=$OUTPUT/guest/exitload
if [ ! -x "$EXITLOAD" ] || readelf -l "$EXITLOAD" 2>/dev/null | grep INTERP >/dev/null; then
	fail ${CHECK_PREFIX}exits_boot "$EXITLOAD is missing or not static: run 'make static' first"
	suite_exit
fi
# guest/hypercall marks, on the host's clock, where the guest read its
# /proc/stat (the guest-idle check below).
HYPERCALL=$OUTPUT/guest/hypercall
if [ ! -x "$HYPERCALL" ] || readelf -l "$HYPERCALL" 2>/dev/null | grep INTERP >/dev/null; then
	fail ${CHECK_PREFIX}exits_boot "$HYPERCALL is missing or not static: run 'make static' first"
	suite_exit
fi
# guest/boottrace sends the guest kernel's own boot-time trace (its initcalls) to the host.
BOOTTRACE=$OUTPUT/guest/boottrace
if [ ! -x "$BOOTTRACE" ] || readelf -l "$BOOTTRACE" 2>/dev/null | grep INTERP >/dev/null; then
	fail ${CHECK_PREFIX}exits_boot "$BOOTTRACE is missing or not static: run 'make static' first"
	suite_exit
fi
L2_FILES=("$EXITLOAD:bin/exitload" "$HYPERCALL:bin/hypercall" "$BOOTTRACE:bin/boottrace")
# /dev/cpu/0/msr in the guest, for exitload msr.
L2_MODULES=(msr)
L2_L1_PROGRAMS=(usr/bin/perf)

# The boot that panics takes a whole kernel boot of emulated time (about a
# minute here): one kernel shows that a crash keeps the boot, which is the
# host's doing, not the guest kernel's; the default suite runs it.
PANIC_BOOT=0
[ "$CHECK_PREFIX" = nested_ ] && PANIC_BOOT=1
{
	echo "PANIC_BOOT=$PANIC_BOOT"
	# The clock pairs under a CPU hog in the nested machine: one kernel shows them.
	echo "HOG_CLOCK=$PANIC_BOOT"
	# Halt polling turned on and off (kvm.halt_poll_ns): KVM's polling, the
	# same code in both kernels; one shows the recorder follows it.
	echo "HALT_POLL_ONOFF=$PANIC_BOOT"
	cat <<'EOF'
. /bin/l2lib.sh
qemu-system-x86_64 -version | sed -n 1p >/out/qemu_version
T=/sys/kernel/tracing
# published FILE: waits (30 s at most) until record has attached and named FILE.
published() { l2_wait_file "$1" 30; }
# stop PID: SIGINT, and what will not end in 20 s is killed; then reaped.
stop() { l2_stop_process "$1" 20; }
# perf_on OUT SUBCOMMAND ARGS...: starts `perf SUBCOMMAND ARGS` in the
# background (its output in OUT) with its events off (-D -1), turns them on
# through its control fifo and returns once perf has acknowledged it, so
# that every event after the return is counted: a `sleep` after the start
# was not enough on a busy host, where perf record once missed the first
# exits after the guest was continued (6 interrupt, 3 msr, 1 vintr). Sets
# PERF to its pid. 60 s at most for the acknowledgement.
perf_on() {
	out=$1 sub=$2
	shift 2
	PERF_N=$((${PERF_N:-0} + 1))
	ctl=/tmp/perf$PERF_N.ctl ack=/tmp/perf$PERF_N.ack
	rm -f $ctl $ack
	mkfifo $ctl $ack
	perf $sub -D -1 --control fifo:$ctl,$ack "$@" >"$out" 2>&1 &
	PERF=$!
	echo enable >$ctl
	[ "$(timeout 60 head -n 1 $ack)" = ack ] || say "perf $sub did not acknowledge its events on in 60 s: $(tail -n 3 "$out")"
}

# ---- counts and times: one vCPU, a mixed workload, twice ------------------------
WORK='i=0; while [ $i -lt 3000 ]; do i=$((i + 1)); done; dd if=/dev/zero of=/dev/null bs=4k count=3000 2>/dev/null; for j in 1 2 3 4 5; do sleep 0.2; echo tick $j; done'
# ---- a boot's causes: the first guest's boot (firmware, then Linux) recorded --
# whole while it boots anyway; no boot of its own.
# --boot too: each of its exits, one record each, from its first entry
# (a window longer than any boot under this emulation).
# The guest's initcalls: its kernel traces them from its own command line
# (boot-time tracing, no patch), initcall_debug says them in dmesg too, and
# guest/boottrace sends that trace to the host while this recording runs.
hypertrace-bpf record --exits --boot --boot-window 900 --nr 1150 --nr 1151 --nr 1152 -q -i 1 -o /out/boot.htr >/out/boot.out 2>/out/boot.err &
REC=$!
published /out/boot.htr || say "record did not start: $(cat /out/boot.err)"
# With QEMU's edu device for the causes below: one guest boot serves both.
L2_APPEND="trace_event=initcall:initcall_level,initcall:initcall_start,initcall:initcall_finish initcall_debug log_buf_len=4M"
l2_start ex "1 -device edu" || exit 1
L2_APPEND=
# 60 clock pairs, 3 s of them: under emulation a vCPU is often interrupted
# between a pair's marker and its hypercall (one run refused 11 of 20 as off
# the others' line, leaving too few for the check below).
l2cmd ex_boottrace 'mount -t tracefs nodev /sys/kernel/tracing && boottrace --syncs 60'
stop $REC; echo $? >/out/boot.rc
hypertrace-bpf report --initcalls --csv /out/boot.htr >/out/boot.initcalls.csv 2>>/out/boot.err
hypertrace-bpf report --initcalls /out/boot.htr >/out/boot.initcalls.txt 2>>/out/boot.err
# The guest's own record of them, small enough for the console (a byte
# there is an exit of the emulated machine): its trace's initcall lines
# (task, CPU, time, text) counted and digested, and dmesg's initcall_debug
# lines compressed.
l2cmd ex_ftrace "grep -E 'initcall_(level|start|finish):' /sys/kernel/tracing/trace | sed -E 's/^.*-([0-9]+) +\\[([0-9]+)\\] [^ ]* +([0-9]+[.][0-9]+): /\\1 \\2 \\3 /' >/ft; echo FTSUM \$(wc -l </ft) \$(md5sum </ft)"
l2cmd ex_dmesg "dmesg | grep -E 'initcall .* returned|sched_clock: Marking' | sed -E 's/^.*initcall ([^+ ]*)[^ ]*( \\[[^]]*\\])? returned (-?[0-9]+) after ([0-9]+) usecs.*/\\1 \\3 \\4/; s/^.*(sched_clock: Marking [a-z]+).*/\\1/' | gzip -9 | base64"
hypertrace-bpf report --csv -n 1150 -n 1151 /out/boot.htr >/out/boot.lines.csv 2>>/out/boot.err
# The clock pairs again with every CPU of this machine busy: the guest's
# vCPU waits for one between a marker and its hypercall. Only the pairs'
# own lines travel (--match).
if [ "$HOG_CLOCK" = 1 ]; then
	hypertrace-bpf record --nr 1150-1152 -q -o /out/hog.htr >/out/hog.out 2>/out/hog.err &
	REC=$!
	published /out/hog.htr || say "record did not start: $(cat /out/hog.err)"
	HOGS=
	for c in $(seq "$(nproc)"); do
		sh -c 'while :; do :; done' &
		HOGS="$HOGS $!"
	done
	l2cmd ex_hog 'boottrace --match hypertrace-sync'
	kill $HOGS
	stop $REC
	hypertrace-bpf report --initcalls /out/hog.htr >/out/hog.txt 2>>/out/hog.err
fi
hypertrace-bpf report --causes --csv /out/boot.htr >/out/boot.causes.csv 2>>/out/boot.err
hypertrace-bpf report --causes /out/boot.htr >/out/boot.causes.txt 2>>/out/boot.err
hypertrace-bpf report --exits --csv /out/boot.htr >/out/boot.exits.csv 2>>/out/boot.err
hypertrace-bpf report --boot --csv /out/boot.htr >/out/boot.phases.csv 2>>/out/boot.err
# The guest's own symbols of this boot (KASLR: its run-time addresses), for the kernel's bounds and names.
l2cmd ex_syms 'grep -E " (_stext|_etext|start_kernel|rest_init|kernel_init)$" /proc/kallsyms'
grep -E '^[0-9a-f]{16} [tT] ' "$CON" | tr -d '\r' >/out/boot.kallsyms
hypertrace-bpf report --boot --guest-symbols /out/boot.kallsyms /out/boot.htr >/out/boot.phases.txt 2>>/out/boot.err
kill -STOP $QPID
sleep 1
# One perf filter per SVM exit code of the running kernel's kvm_exit table
# (its print format), in that order; the last event counts them all.
sed -n 's/.*__print_symbolic(REC->exit_reason, \(.*\)), (REC->isa.*/\1/p' $T/events/kvm/kvm_exit/format |
	tr '}' '\n' | sed -n 's/.*{ *\([^,]*\), *"\([^"]*\)".*/\1|\2/p' |
	awk -F'|' '{ v = 0; n = split($1, p, "+"); for (i = 1; i <= n; i++) { x = p[i]; gsub(/ /, "", x); v += x + 0 }
		if (v < 0) v += 4294967296; name = $2; gsub(/ /, "_", name); printf "%.0f %s\n", v, name }' >/out/svm_reasons
EV=
while read -r code name; do EV="$EV -e kvm:kvm_exit --filter exit_reason==$code"; done </out/svm_reasons
# Counts: perf stat, system-wide until SIGINT, and record, both while the guest
# runs; it is stopped (SIGSTOP) while they start and stop.
perf_on /out/perf_stat.out stat -a -x, -o /out/perf_stat.txt $EV -e kvm:kvm_exit
PSTAT=$PERF
hypertrace-bpf record --exits --vcpu-sched --vm ex -q -i 1 -o /out/ex.htr >/out/ex.out 2>/out/ex.err &
REC=$!
published /out/ex.htr || say "record did not start: $(cat /out/ex.err)"
kill -CONT $QPID
l2cmd ex_work "$WORK"
sleep 1
kill -STOP $QPID
sleep 1
stop $REC; echo $? >/out/ex.rc
stop $PSTAT
hypertrace-bpf report --exits --csv /out/ex.htr >/out/ex.csv 2>>/out/ex.err
hypertrace-bpf report --exits /out/ex.htr >/out/ex.report 2>>/out/ex.err
# Times: perf record takes the raw tracepoints (with no perf stat and its
# filters on them: those would run between our clock read and perf's), the
# same workload again. record attaches first: a tracepoint calls its probes
# in the order they were registered, and the kvm_exit and kvm_entry
# programs are raw tracepoint probes of their own, so attached after perf
# they would read their clock after perf has written its sample of the
# event. So at both ends perf stamps its sample after our clock read, once
# our program's rest and perf's own filling of the event are done.
hypertrace-bpf record --exits --vm ex -q -i 1 -o /out/ex2.htr >/out/ex2.out 2>/out/ex2.err &
REC=$!
published /out/ex2.htr || say "record did not start: $(cat /out/ex2.err)"
perf_on /out/perf_record.out record -a -k mono -m 2048 -e kvm:kvm_exit -e kvm:kvm_entry -o /tmp/ex.data
PREC=$PERF
kill -CONT $QPID
l2cmd ex_work2 "$WORK"
sleep 1
kill -STOP $QPID
sleep 1
stop $PREC
stop $REC; echo $? >/out/ex2.rc
kill -CONT $QPID
hypertrace-bpf report --exits --csv /out/ex2.htr >/out/ex2.csv 2>>/out/ex2.err
hypertrace-bpf report --exits /out/ex2.htr >/out/ex2.report 2>>/out/ex2.err
# The reference, paired here: per tid, an exit and the next entry; REF reason
# slot count, OPEN reason count (no entry), and every time (D reason ns).
perf script -i /tmp/ex.data --ns -F tid,time,event,trace >/out/perf_script.txt 2>/out/perf_script.err
awk '
	# busybox awk reads a number with a leading 0 as octal: the nanoseconds get a leading 1.
	function ns(t,   s, f) { sub(/:$/, "", t); s = t; sub(/\..*/, "", s); f = t; sub(/^[0-9]*\./, "", f); return s * 1000000000 + ("1" f) - 1000000000 }
	$3 == "kvm:kvm_exit:" { r = $0; sub(/.* reason /, "", r); sub(/ rip .*/, "", r); gsub(/ /, "_", r); open[$1] = ns($2); reason[$1] = r; exits[r]++ }
	$3 == "kvm:kvm_entry:" && ($1 in open) { d = ns($2) - open[$1]; printf "D %s %.0f\n", reason[$1], d >"/out/reference_ns.txt"
		k = 0; while (d >= 2 && k < 39) { d = int(d / 2); k++ }
		n[reason[$1] " " k]++; delete open[$1] }
	END { for (x in n) print "REF", x, n[x]; for (t in open) pend[reason[t]]++; for (r in pend) print "OPEN", r, pend[r]; for (r in exits) print "EXITS", r, exits[r] }' /out/perf_script.txt >/out/reference.txt
say "ex done: $(cat /out/ex.rc) $(cat /out/ex2.rc), $(wc -l </out/reference.txt) reference lines"

# ---- causes: outb to port 0x80, cpuid, MMIO and RDMSR, counted by perf too -----
# perf stat counts the kernel's own tracepoints of the causes, filtered as
# the workload makes them, while record counts the causes of the same run;
# the guest is stopped while both start and stop. The same guest as above
# (a boot takes minutes here), with QEMU's edu device (a 1 MB MMIO BAR that
# QEMU emulates in user space); the guest finds it (vendor 0x1234, device
# 0x11e8), enables it and names its BAR 0's file and guest-physical address.
# (One line: l2cmd sends the command as one.)
EDU_FIND='for d in /sys/bus/pci/devices/*; do [ "$(cat $d/vendor):$(cat $d/device)" = 0x1234:0x11e8 ] && echo 1 >$d/enable && echo "EDU $d $(head -n 1 $d/resource | cut -d" " -f1)"; done; true'
l2cmd ca_edu "$EDU_FIND"
EDU=$(tr -d '\r' <$CON | sed -n 's/^EDU //p' | sed -n 1p)
EDU_FILE=${EDU% *}/resource0
EDU_GPA=$((${EDU#* }+0))
say "edu device: $EDU_FILE at $EDU_GPA"
echo "$EDU_GPA" >/out/ca_edu_gpa
kill -STOP $QPID
sleep 1
# One user-space MMIO read fires kvm_mmio twice (Linux 6.1, arch/x86/kvm/x86.c):
# type 0 (READ_UNSATISFIED, read_exit_mmio) as KVM hands it to QEMU, type 1
# (READ, read_prepare) when it completes the instruction with QEMU's value.
# Each is counted on its own: one of each per exit.
perf_on /out/ca_perf.out stat -a -x, -o /out/ca_perf.txt -e kvm:kvm_pio --filter 'port == 128 && rw == 1' \
	-e kvm:kvm_cpuid --filter 'function == 1' \
	-e kvm:kvm_mmio --filter "gpa == $EDU_GPA && type == 0" \
	-e kvm:kvm_mmio --filter "gpa == $EDU_GPA && type == 1" \
	-e kvm:kvm_msr --filter 'ecx == 27 && write == 0'
PSTAT=$PERF
hypertrace-bpf record --exits --vm ex -q -i 1 -o /out/ca.htr >/out/ca.out 2>/out/ca.err &
REC=$!
published /out/ca.htr || say "record did not start: $(cat /out/ca.err)"
kill -CONT $QPID
l2cmd ca_work "exitload pio 0x80 2000 && exitload cpuid 3000 1 && exitload mmio $EDU_FILE 2000 && exitload msr 0x1b 2000"
sleep 1
kill -STOP $QPID
sleep 1
stop $REC; echo $? >/out/ca.rc
stop $PSTAT
kill -CONT $QPID
hypertrace-bpf report --causes --csv /out/ca.htr >/out/ca.csv 2>>/out/ca.err
hypertrace-bpf report --exits /out/ca.htr >/out/ca.report 2>>/out/ca.err
# ---- a guest that panics while boottrace --follow streams its trace ----------
# boottrace --follow reads the guest's trace_pipe and sends each event as its
# kernel records it. The guest then marks 40 lines, 20 ms apart, in its own
# trace, waits 0.3 s and panics (sysrq c; panic=-1 and -no-reboot end its
# QEMU): the host's file must hold every one of them. (Run at the end of this
# guest's life: the command never ends, so it is sent as l2cmd would.)
hypertrace-bpf record --nr 1150-1152 -q -o /out/crash.htr >/out/crash.out 2>/out/crash.err &
REC=$!
published /out/crash.htr || say "record did not start: $(cat /out/crash.err)"
echo 'crash_follow boottrace --follow --match ht-crash-mark --syncs 4 --sync-ms 20 >/dev/null 2>&1 & sleep 1; i=0; while [ $i -lt 40 ]; do echo ht-crash-mark $i >/sys/kernel/tracing/trace_marker; i=$((i + 1)); sleep 0.02; done; sleep 0.3; echo c >/proc/sysrq-trigger' >/tmp/l2.in
i=0
while kill -0 $QPID 2>/dev/null && [ $i -lt 900 ]; do sleep 0.2; i=$((i + 1)); done
kill -0 $QPID 2>/dev/null && say "the guest did not end 180 s after its panic was asked for"
stop $REC; echo $? >/out/crash.rc
hypertrace-bpf report --csv -n 1150 -n 1151 /out/crash.htr >/out/crash.lines.csv 2>>/out/crash.err
hypertrace-bpf report --initcalls /out/crash.htr >/out/crash.initcalls.txt 2>>/out/crash.err
l2_stop

# ---- waiting and the account: two vCPUs, a hog, one CPU -------------------------
l2_start st 2 || exit 1
tids=$(awk '$2 == "CPU" { print $1 }' /out/st.threads)
# thread_times FILE: per vCPU thread its schedstat (on-CPU ns, run_delay ns,
# timeslices) and its guest_time (clock ticks: /proc/TID/stat field 43,
# counted after the name, which has spaces); then this machine's /proc/stat
# cpu line (its irq and softirq time: the kernel leaves it out of a task's
# schedstat run time); and the kernel's jiffies with the monotonic time of
# the same read (/proc/timer_list), from which the GUEST check takes HZ.
thread_times() {
	for t in $tids; do
		echo "$t $(cat /proc/$QPID/task/$t/schedstat) $(sed 's/.*) //' /proc/$QPID/task/$t/stat | cut -d' ' -f41)"
	done >"$1"
	head -1 /proc/stat >>"$1"
	awk '/^now at / { now = $3 } /^jiffies: / { print "jiffies", $2, now; exit }' /proc/timer_list >>"$1"
}
# KVM's own statistics of the VM's halts (its vCPUs' summed: the per-VM
# debugfs directory), read while the guest is stopped, as thread_times.
kvm_halt_stats() {
	mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
	for s in halt_attempted_poll halt_successful_poll halt_poll_success_ns halt_poll_fail_ns halt_wait_ns; do
		echo "$s $(cat /sys/kernel/debug/kvm/$QPID-*/$s)"
	done >"$1"
}
# vcpus_halted: every vCPU thread sleeps in KVM's halt (kvm_vcpu_block is
# where it waits: its wchan), at two looks 0.05 s apart; gives up after 5 s.
# The guest counts a vCPU's time stopped as idle only if the vCPU was idle
# when it stopped (a busy one's time stopped is in no field of its
# /proc/stat: its tick accounts one tick for it), and the check of halted
# against the guest's idle time counts every stopped vCPU as idle. A thread
# that sleeps elsewhere is not idle to the guest: one waiting in QEMU for
# its lock or its console (an I/O exit of the shell's output) is asleep
# too. With a state S alone, the guest's idle once fell short of the parts
# by exactly its first stop (1 run in about 10): such a stop is the one
# explanation found, not a proven one, so the check's message shows the
# looks and how much of its interval the guest accounted at all. The last
# look is kept in $1 for the check.
vcpus_halted() {
	local i=0 t st w seen=0 halted look
	while [ $i -lt 100 ]; do
		halted=1
		look=
		for t in $tids; do
			st=$(sed 's/.*) //' /proc/$QPID/task/$t/stat | cut -d' ' -f1)
			w=$(cat /proc/$QPID/task/$t/wchan 2>/dev/null)
			look="$look $t:$st:${w:-?}"
			# Woken but not yet run, a thread is R with the wchan it slept in.
			case "$st:$w" in
			S:kvm_vcpu_block | S:kvm_vcpu_halt) ;;
			*) halted=0 ;;
			esac
		done
		if [ $halted = 1 ]; then
			seen=$((seen + 1))
			[ $seen -lt 2 ] || {
				echo "$look" >"$1"
				return 0
			}
		else
			seen=0
		fi
		sleep 0.05
		i=$((i + 1))
	done
	echo "not halted:$look" >"$1"
	say "the vCPUs did not all halt within 5 s:$look"
}
# The threads' own times are read while the guest is stopped (SIGSTOP), at
# both ends, after the programs know the threads: a stopped vCPU thread
# neither runs nor waits, so its on-CPU time, run_delay and guest time are
# the same at the read and at the EXITS blocks of the stop, whatever their
# exact instants. perf stat counts each thread's task-clock (its time on a
# CPU, from one context switch to the next) over the same time. -p, not
# --vm: --vm follows the VM from just after the programs are attached, and a
# switch in between is counted in the EXITS blocks but not recorded (the
# switch check below wants every one).
# The scheduler's own events over the same time (its clock, the tick and
# the wake-ups that update the run-queue clock): where schedstat's run_delay
# and the account's wait part, below.
# The vCPU threads' entries and exits too: where the tick that samples
# guest_time lands (GUEST below).
# kvm_vcpu_wakeup: each halt's time in KVM, polling included (the halts and guest-idle checks).
# kvm_userspace_exit and kvm_inj_virq: where a halt sleeps and which
# interrupt its wake-up was for (the wake-ups check).
# kvm_apic_accept_irq, with each sender's process (record-tgid): the
# interrupts from their acceptance to their delivery (the IRQS check).
# finish_task_switch (a kprobe, at its name on this kernel): the end of each
# switch-in, where perf's task-clock starts to count the thread (ONCPU).
# Turned on before the recording starts, with tracing off until the
# interval: each tracepoint then calls ftrace's probe before the recorder's,
# so the events' times are all taken before the recorder's handler runs
# (after it, the time of the handler, longer at a switch than at a wake-up,
# would stretch every wait: by 38 us a wait on a busy host).
ST_EVENTS='sched/sched_switch sched/sched_waking sched/sched_wakeup sched/sched_wakeup_new timer/hrtimer_expire_entry kvm/kvm_entry kvm/kvm_exit kvm/kvm_vcpu_wakeup kvm/kvm_userspace_exit kvm/kvm_inj_virq kvm/kvm_apic_accept_irq'
echo 0 >$T/tracing_on
echo 1 >$T/options/record-tgid
echo $QPID >/out/st.qpid
echo 32768 >$T/buffer_size_kb
FTS=$(awk '$3 ~ /^finish_task_switch(\.|$)/ { print $3; exit }' /proc/kallsyms)
if [ -n "$FTS" ] && echo "p:htst/switch_in_done $FTS" >>$T/kprobe_events; then
	ST_EVENTS="$ST_EVENTS htst/switch_in_done"
	echo "$FTS" >/out/st.kprobe
else
	echo "no kprobe on finish_task_switch (symbol '$FTS')" >/out/st.kprobe
fi
for e in $ST_EVENTS; do
	echo 1 >$T/events/$e/enable
done
# The tick's handler: tick_sched_timer up to 6.1, tick_nohz_handler since 6.12.
echo 'function == tick_sched_timer' >$T/events/timer/hrtimer_expire_entry/filter 2>/dev/null ||
	echo 'function == tick_nohz_handler' >$T/events/timer/hrtimer_expire_entry/filter
hypertrace-bpf record --exits --vcpu-sched --wakeups -p $QPID -q -i 1 -o /out/st.htr >/out/st.out 2>/out/st.err &
REC=$!
published /out/st.htr || say "record did not start: $(cat /out/st.err)"
# A second trace instance with the events that begin and end a wake-up and
# its waits, turned on now that the recorder's programs are attached: its
# probe runs after theirs, as the first instance's runs before. Each
# clock read of the recorder at those events is then between the two
# instances' times of the same event: the wake-ups check's bracket. (The
# emulated machine's clock runs on while QEMU's thread is preempted on the
# host: between two probes of one event it once passed 12 ms.)
TA=$T/instances/htafter
if mkdir $TA 2>/dev/null || [ -d $TA ]; then
	echo 0 >$TA/tracing_on
	echo 16384 >$TA/buffer_size_kb
	for e in sched/sched_switch sched/sched_wakeup kvm/kvm_entry kvm/kvm_apic_accept_irq; do
		echo 1 >$TA/events/$e/enable
	done
fi
# The guest's /proc/stat, read by guest/hypercall between two hypercalls
# (--snapshot: a0 0x1d1e0, the read, a0 0x1d1e1) that the recording times
# on the host's clock: where the guest read it, within their bracket (a
# read by the shell after a hypercall program came up to 830 ms after it,
# its start and end under emulation, and the guest's idle vCPU idled on
# in between: the check's largest unmeasured term).
# Then its clock, read the same way (/proc/uptime, a0 0x1d1f0 and 0x1d1f1):
# how much of the host's time its own clock saw between the reads.
l2cmd st_steal0 'hypercall --a0 0x1d1e0 --snapshot /proc/stat | grep ^cpu; hypercall --a0 0x1d1f0 --snapshot /proc/uptime | sed -n 1p'
vcpus_halted /out/st.halted0
kill -STOP $QPID
sleep 2.5 # stopped: an EXITS block sees it
thread_times /out/st.schedstat0
kvm_halt_stats /out/st.kvmhalt0
perf_on /out/st.perf.err stat -e task-clock --per-thread -x, -o /out/st.taskclock -t "$(echo $tids | tr ' ' ,)"
PTC=$PERF
echo >$T/trace
echo >$TA/trace
# The guest is stopped: both instances see all of its threads' events from here on.
echo 1 >$T/tracing_on
echo 1 >$TA/tracing_on
kill -CONT $QPID
# The same reads once the guest runs again (a0 0x1d1e4, 0x1d1f4): the
# guest-idle check's interval starts here, with no stop in it. How the
# guest accounts the time its halted vCPUs were stopped varies: one CI run
# had a vCPU's 3.5 s stop in none of its cpu line's fields. Across the
# stop, from the read before it to this one, it is shown, not compared.
l2cmd st_steal0c 'hypercall --a0 0x1d1e4 --snapshot /proc/stat | grep ^cpu; hypercall --a0 0x1d1f4 --snapshot /proc/uptime | sed -n 1p'
sh -c 'while :; do :; done' &
HOG=$!
l2cmd st_load 'for c in 1 2; do taskset $c timeout 10 sh -c "while :; do :; done" & done'
# A safety net only: loading top's programs is slow under emulation (it once
# took more than 8 s on a busy host, and top printed nothing).
timeout 40 hypertrace-bpf top -b -n 3 -d 2 --vcpus >/out/top.txt 2>/out/top.err
sleep 3
kill $HOG
sleep 3 # the guest's loops end (timeout 10): its vCPUs halt
# A timer in the guest that knows when it should have woken (the hypercall
# program's --timer-lateness, cyclictest's method), on vCPU 1 of a guest
# otherwise idle: 80 sleeps of 10 ms (the emulated guest takes about 1 ms
# from its timer's interrupt to the task: 5 ms often left it no time to
# halt), each followed by a hypercall that carries its lateness; then
# again with a hog beside QEMU on this machine's one CPU.
l2cmd st_timer 'taskset 2 hypercall --rate 100 --count 80 --timer-lateness --a0 0x1d1f8 | tail -1'
sh -c 'while :; do :; done' &
HOG=$!
l2cmd st_timer_hog 'taskset 2 hypercall --rate 100 --count 80 --timer-lateness --a0 0x1d1f9 | tail -1'
kill $HOG
l2cmd st_steal1 'hypercall --a0 0x1d1e2 --snapshot /proc/stat | grep ^cpu; hypercall --a0 0x1d1f2 --snapshot /proc/uptime | sed -n 1p'
vcpus_halted /out/st.halted1
kill -STOP $QPID
sleep 2.5 # stopped: an EXITS block sees it
stop $PTC
echo 0 >$TA/tracing_on
echo 0 >$T/tracing_on
thread_times /out/st.schedstat1
kvm_halt_stats /out/st.kvmhalt1
cat $T/trace >/out/st.ftrace
cat $TA/trace >/out/st.ftrace_after
for e in sched/sched_switch sched/sched_wakeup kvm/kvm_entry kvm/kvm_apic_accept_irq; do
	echo 0 >$TA/events/$e/enable
done
rmdir $TA
for e in $ST_EVENTS; do
	echo 0 >$T/events/$e/enable
done
echo '-:htst/switch_in_done' >>$T/kprobe_events 2>/dev/null
echo 0 >$T/options/record-tgid
stop $REC; echo $? >/out/st.rc
kill -CONT $QPID
hypertrace-bpf report --exits /out/st.htr >/out/st.report 2>>/out/st.err
hypertrace-bpf report --vcpu-time /out/st.htr >/out/st.time 2>>/out/st.err
hypertrace-bpf report --halts /out/st.htr >/out/st.halts 2>>/out/st.err
hypertrace-bpf report --irqs /out/st.htr >/out/st.irqs 2>>/out/st.err
hypertrace-bpf report --latency /out/st.htr >/out/st.latency 2>>/out/st.err
# ---- halt polling on and off (kvm.halt_poll_ns): one recording, three stops.
# Each of the guest's vCPUs halts about 10 ms between the wake-ups of a
# timer (the hypercall program, one per vCPU, runs through all three
# stops; each vCPU's entries make its thread known before the first stop,
# so that no halt in the interval is left out as a thread's not seen yet).
# From the first stop to the second kvm.halt_poll_ns is 0.2 s: KVM grows
# each vCPU's halt_poll_ns from 10 us, doubling, until its polling catches
# the timer. At the second stop it is set to 0: a vCPU still holds its
# grown value, which KVM cuts at the start of its next halt with no event,
# so that halt polls nothing. KVM's own statistics are read at each stop;
# the first two last three EXITS blocks (-i 0.5), so that two see each.
# guest_stopped: after kill -STOP, waits until every thread of the guest's
# QEMU has stopped (state T; 5 s at most). A vCPU thread still ending a halt
# would see the kvm.halt_poll_ns written next: cut to 0 there, KVM zeroes
# the vCPU's value at the end of a halt that polled, with no event, and
# counts that halt in the statistics read next.
guest_stopped() {
	local i=0 t all
	while [ $i -lt 100 ]; do
		all=1
		for t in /proc/$QPID/task/*/stat; do
			case "$(sed 's/.*) //' "$t" | cut -d' ' -f1)" in
			T | t) ;;
			*) all=0 ;;
			esac
		done
		[ $all = 1 ] && return 0
		sleep 0.05
		i=$((i + 1))
	done
	say "the guest's threads did not all stop within 5 s"
}
if [ "$HALT_POLL_ONOFF" = 1 ]; then
	HPN=/sys/module/kvm/parameters/halt_poll_ns
	hp_default=$(cat $HPN)
	l2cmd hp_timer 'for c in 1 2; do taskset $c hypercall --rate 100 --count 6000 --timer-lateness --a0 0x1d1fa >/dev/null 2>&1 & echo $! >>/tmp/hp_timer.pids; done'
	hypertrace-bpf record --exits -p $QPID -q -i 0.5 -o /out/hp.htr >/out/hp.out 2>/out/hp.err &
	REC=$!
	published /out/hp.htr || say "record did not start: $(cat /out/hp.err)"
	kill -STOP $QPID
	guest_stopped
	echo 200000000 >$HPN
	kvm_halt_stats /out/hp.kvmhalt0
	sleep 1.5
	kill -CONT $QPID
	sleep 1
	kill -STOP $QPID
	guest_stopped
	echo 0 >$HPN
	kvm_halt_stats /out/hp.kvmhalt1
	sleep 1.5
	kill -CONT $QPID
	sleep 1
	kill -STOP $QPID
	guest_stopped
	kvm_halt_stats /out/hp.kvmhalt2
	stop $REC; echo $? >/out/hp.rc
	echo "$hp_default" >$HPN
	kill -CONT $QPID
	l2cmd hp_timer_end 'kill $(cat /tmp/hp_timer.pids)'
	hypertrace-bpf report --halts /out/hp.htr >/out/hp.halts 2>>/out/hp.err
fi
l2_stop
# ---- a boot that crashes: no init, so the kernel panics; panic=-1 reboots at
# once and -no-reboot ends QEMU: the host's file keeps the boot up to there.
[ "$PANIC_BOOT" = 1 ] || exit 0
hypertrace-bpf record --boot --boot-window 900 -q -i 1 -o /out/panic.htr >/out/panic.out 2>/out/panic.err &
REC=$!
published /out/panic.htr || say "record did not start: $(cat /out/panic.err)"
timeout 300 qemu-system-x86_64 -name panic -enable-kvm -cpu host -smp 1 -m 256 -kernel /l2/vmlinuz \
	-L /usr/share/qemu -append "console=ttyS0 rdinit=/nonexistent root=/dev/nonexistent panic=-1 quiet $L2_FAST_BOOT $L2_DETECTORS" \
	-nodefaults -display none -serial file:/out/panic.kmsg -no-reboot </dev/null >/out/panic.qemu 2>&1
echo $? >/out/panic.qemu_rc
stop $REC; echo $? >/out/panic.rc
hypertrace-bpf report --boot --csv /out/panic.htr >/out/panic.csv 2>>/out/panic.err
hypertrace-bpf report --boot /out/panic.htr >/out/panic.txt 2>>/out/panic.err
hypertrace-bpf report --exits --csv /out/panic.htr >/out/panic.exits.csv 2>>/out/panic.err
EOF
} >"$work/guest.sh"

start=$(date +%s)
if ! nested_fetch 2>"$work/fetch.log"; then
	fail ${CHECK_PREFIX}exits_boot "cannot fetch qemu/perf/kernel/busybox: $NESTED_ERR"
	suite_exit
fi
out=$work/out
# After an emulation stall (a KVM guest that did not boot included),
# nested_run runs the whole machine once more (tests/e2e/nested.sh).
# shellcheck disable=SC2046
if ! nested_run "$out" "$work/guest.sh" "$HT_STATIC" $(l2_l1_files) 2>"$work/run.log"; then
	fail ${CHECK_PREFIX}exits_boot "$NESTED_ERR"
	suite_exit
fi
pass ${CHECK_PREFIX}exits_boot
# The KVM guests ran under the tree's QEMU (NESTED_VMM_DIST's, where set:
# its packages come last in the manifest).
want=$(sed -n 's/^qemu-system-x86=//p' "$NESTED_ROOT/MANIFEST" | tail -n 1)
ran=$(sed -n 's/^QEMU emulator version .* (Debian \(.*\))$/\1/p' "$out/files/qemu_version" 2>/dev/null)
if [ -n "$want" ] && [ "$ran" = "$want" ]; then
	pass ${CHECK_PREFIX}guests_ran_under_the_trees_qemu
	echo "  info: the KVM guests ran under $(tr -d '\r' <"$out/files/qemu_version"), in kernel $(cat "$NESTED_ROOT/kernel/release")"
else
	fail ${CHECK_PREFIX}guests_ran_under_the_trees_qemu "QEMU '${ran:-none}' ran, the tree has '${want:-none}'"
fi
echo "  info: qemu run $(cat "$out/qemu_seconds") s (script exit status $(cat "$out/status")), $NESTED_KICKS console kicks, $(($(date +%s) - start)) s in all"
F=$out/files
rc() { cat "$F/$1" 2>/dev/null || echo missing; }
tail_of() { tail -n 3 "$1" 2>/dev/null | tr '\n' '|'; }
[ "${HT_E2E_SHOW:-0}" = 1 ] && cat "$F/ex.report" "$F/top.txt" "$F/st.report" 2>/dev/null

# --- counts and times against perf ------------------------------------------------
for r in ex ex2; do
	if [ "$(rc $r.rc)" != 0 ]; then
		fail "${CHECK_PREFIX}exits_record_$r" "record --exits exited with status $(rc $r.rc): $(tail_of "$F/$r.err")"
	else
		pass "${CHECK_PREFIX}exits_record_$r"
	fi
done
# Times: hypertrace-bpf and perf read the clock at two instants of each
# event (ours in the BPF program, perf's when it stamps its sample, after
# it): under emulation a few microseconds apart, sometimes more (the
# tracepoint's probes run with interrupts on). The two ends do not cancel:
# perf fills kvm_exit's event (the exit's info, the guest's RIP) with more
# work than kvm_entry's, and our kvm_entry program counts the exit's cause
# after its clock read. So each reason's exits are offset by a few
# microseconds, one way for the reasons with a cause and the other way for
# those without (measured: -9 to +9 us). An exit whose time is that close
# to a power of two falls in one bucket for one tool and in the next for
# the other: for a reason of short exits near a bucket's bound, a fifth of
# them (vintr, ~80 us: 24 of 115 at +6.1 us). A reference with our very
# clock reads would have to come out of our own BPF programs, which proves
# nothing about them (the exact bucketing of given times is
# tests/kernel/test_exits.c's), so the buckets are compared with bounds:
# per reason of 20 exits or more, the mean time per exit within MEAN_NS or
# 2% of the reference's; and, the reference's times moved by the one
# offset within MEAN_NS that puts the fewest exits elsewhere (what the
# mean's bound already allows), at most MOVED_PCT% of the exits in another
# bucket than the reference's, over all exits and per reason of 100 exits
# or more. A bucketing that is wrong (a slot off by one is a factor of
# two) is far outside both. The exact numbers are printed: per reason, how
# many exits are in another bucket (the least possible, and the count if
# each moved by one bucket only), each differing bucket, and the offset.
MOVED_PCT=${MOVED_PCT:-20} MEAN_NS=${MEAN_NS:-10000}
verdict=$(python3 - "$F" "$MOVED_PCT" "$MEAN_NS" <<'PY'
import struct, sys

def exits_header_size(data):
    """An EXITS block's header: 64 bytes from format version 7 (causes_not_theirs), 56 in 6 (lost_causes), 48 before."""
    v = struct.unpack_from('<I', data, 8)[0]
    return 64 if v >= 7 else 56 if v >= 6 else 48
F, moved_pct, mean_ns = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
names = {}
order = []
for line in open(F + '/svm_reasons'):
    code, name = line.split()
    names[int(code)] = name
    order.append(int(code))
def exits(path):
    """Per reason (SVM names, spaces as _): count, slots, in the host at the end; from the EXITS blocks (docs/trace-format.md)."""
    data = open(path, 'rb').read()
    off, state = 256, {}
    while off + 24 <= len(data):
        magic, typ, enc, plen, count, raw, crc = struct.unpack_from('<IHHIIII', data, off)
        if typ == 4:
            t, ns, nt = struct.unpack_from('<QII', data, off + 24)
            for i in range(ns):
                f = struct.unpack_from('<IHBBIIQQQQQ40Q', data, off + 24 + exits_header_size(data) + i * 376)
                state[(f[0], f[1], f[2], f[4])] = (f[7], list(f[11:]), f[6], f[8])
        off += 24 + plen
    per = {}
    for (pid, vcpu, isa, reason), (count, slots, in_host, total) in state.items():
        r = names.get(reason, '0x%x' % reason)
        c, sl, h, t = per.get(r, (0, [0] * 40, 0, 0))
        per[r] = (c + count, [a + b for a, b in zip(sl, slots)], h + in_host, t + total)
    return per
out = []
# Counts: perf stat, one filter per reason, against count + still in the host, per reason.
perf = []
for line in open(F + '/perf_stat.txt'):
    f = line.split(',')
    if len(f) > 2 and f[2].startswith('kvm:kvm_exit'):
        perf.append(int(f[0]) if f[0].isdigit() else -1)
if len(perf) != len(order) + 1:
    print('COUNTS bad: perf stat gave %d counts for %d reasons and the total' % (len(perf), len(order)))
    sys.exit()
perf_by = {names[c]: perf[i] for i, c in enumerate(order) if perf[i] > 0}
ex = exits(F + '/ex.htr')
out.append('INFO perf stat: %d exits, %s' % (perf[-1], ' '.join('%s=%d' % kv for kv in sorted(perf_by.items()))))
out.append('INFO hypertrace-bpf: %s' % ' '.join('%s=%d+%d' % (r, v[0], v[2]) for r, v in sorted(ex.items())))
bad = ['%s: hypertrace-bpf %d + %d still in the host, perf stat %d' % (r, ex.get(r, (0, 0, 0, 0))[0], ex.get(r, (0, 0, 0, 0))[2], perf_by.get(r, 0))
       for r in sorted(set(perf_by) | set(ex)) if ex.get(r, (0, 0, 0, 0))[0] + ex.get(r, (0, 0, 0, 0))[2] != perf_by.get(r, 0)]
out.append('COUNTS ' + ('ok' if not bad and sum(perf_by.values()) == perf[-1] else 'bad: ' + '; '.join(bad)))
# Times: the raw tracepoints' pairs (perf record), the second recording.
ref, ref_open, ref_exits, times = {}, {}, {}, {}
for line in open(F + '/reference.txt'):
    f = line.split()
    if f[0] == 'REF':
        ref.setdefault(f[1], [0] * 40)[int(f[2])] = int(f[3])
    elif f[0] == 'OPEN':
        ref_open[f[1]] = int(f[2])
    elif f[0] == 'EXITS':
        ref_exits[f[1]] = int(f[2])
for line in open(F + '/reference_ns.txt'):
    _, r, d = line.split()
    times.setdefault(r, []).append(int(d))
ex2 = exits(F + '/ex2.htr')
bad = ['%s: raw tracepoints %d exits (%d never entered), hypertrace-bpf %d + %d still in the host' % (r, ref_exits.get(r, 0), ref_open.get(r, 0), ex2.get(r, (0, 0, 0, 0))[0], ex2.get(r, (0, 0, 0, 0))[2])
       for r in sorted(set(ref_exits) | set(ex2)) if ref_exits.get(r, 0) != ex2.get(r, (0, 0, 0, 0))[0] + ex2.get(r, (0, 0, 0, 0))[2] or ref_open.get(r, 0) != ex2.get(r, (0, 0, 0, 0))[2]]
out.append('REFCOUNT ' + ('ok' if not bad else 'bad: ' + '; '.join(bad)))
def slots_of(ts, d):
    """The log2 buckets of the times ts moved by d ns, as the reference's (the awk above)."""
    h = [0] * 40
    for t in ts:
        v, k = int(t + d), 0
        while v >= 2 and k < 39:
            v //= 2
            k += 1
        h[k] += 1
    return h
exact, bad, moved, least, total, steps, equal = [], [], 0, 0, 0, 0, 0
for r in sorted(set(ref) | set(ex2)):
    a, b = ex2.get(r, (0, [0] * 40, 0, 0))[1], ref.get(r, [0] * 40)
    m = sum(abs(x - y) for x, y in zip(a, b)) // 2
    n = len(times.get(r, []))
    # m is the fewest exits that can be in another bucket; st the fewest
    # bucket steps that turn one histogram into the other (on a line: the
    # sum of the cumulative differences). If no exit moved further than a
    # neighbouring bucket, st exits moved.
    cum, st = 0, 0
    for x, y in zip(a, b):
        cum += x - y
        st += abs(cum)
    least += m
    total += n
    steps += st
    if a != b:
        exact.append('%s %d-%d of %d (bucket:ours/reference %s)' %
                     (r, m, st, n, ' '.join('%d:%d/%d' % (k, a[k], b[k]) for k in range(40) if a[k] != b[k])))
    else:
        equal += 1
    if not n:
        moved += m  # no reference time to offset
        continue
    ref_mean = sum(times[r]) / n
    diff = ex2.get(r, (0, 0, 0, 0))[3] / n - ref_mean
    # The offset within MEAN_NS (steps of 250 ns, the smallest first on a
    # tie) that leaves the fewest exits in another bucket.
    shifted = min(((sum(abs(x - y) for x, y in zip(a, slots_of(times[r], d))) // 2, abs(d), d)
                   for d in range(-mean_ns, mean_ns + 1, 250)))
    m_off, off = shifted[0], shifted[2]
    moved += m_off
    out.append('INFO %s: %d exits, %d in another bucket (%d with the reference offset by %+.2f us); mean time %.1f us, hypertrace-bpf %+.2f us from the raw tracepoints' %
               (r, n, m, m_off, off / 1e3, ref_mean / 1e3, diff / 1e3))
    # The share of moved exits is a sample's: with a few dozen exits of a
    # reason near a boundary it swings by tens of percent (18 of 97 once),
    # so it is bounded per reason from 100 exits on, and over all exits.
    # A pause of the emulator between the two tools' reads of one event (the
    # host preempting QEMU's thread) moves that exit by up to milliseconds,
    # and the mean with it: by several buckets at once (more bucket steps
    # than moved exits; seen: msr -25 us over 294 exits, one exit of 4-8 ms
    # counted shorter), or within its bucket, where no histogram shows it
    # (seen on a busy host: cpuid +21.6 us over ~200 exits). So the mean may
    # differ by such exits, each by at most the upper bound of the highest
    # bucket either histogram holds: one, or, where exits moved by more
    # than one bucket, as many as st - m (each of them adds at least one
    # bucket step to the m moved exits' one each; seen at a load of 13 on
    # two CPUs: invlpg -210 us over 111 exits, two exits of 8-16 ms counted
    # shorter). A bias of every exit (the programs' own cost inside the
    # window) moves exits by one bucket (st = m), and still shows, in the
    # mean of a reason with many short exits and in the share of exits in
    # another bucket.
    top = max((k for k in range(40) if a[k] or b[k]), default=-1)
    pause = 2 ** (top + 1) * max(1, st - m) if top >= 0 and a != b else 0
    if st > m and pause:
        out.append('INFO %s: %d exits at most moved by more than one bucket (a pause of the emulator between the two reads?): the mean may differ by up to %.0f us more' % (r, st - m, pause / 1e3))
    if (n >= 100 and 100 * m_off > moved_pct * n) or (n >= 20 and abs(diff) * n > max(mean_ns, 0.02 * ref_mean) * n + pause):
        bad.append('%s: %d of %d exits in another bucket (%d with the reference offset by %+.0f ns), mean %+.0f ns from the reference' %
                   (r, m, n, m_off, off, diff))
if total and 100 * moved > moved_pct * total:
    bad.append('all reasons: %d of %d exits in another bucket, each reason\'s reference offset' % (moved, total))
out.append('BUCKETS_EXACT %d of %d reasons equal in every bucket; of %d exits, %d (%.2f%%) at least are in another bucket than the reference\'s, %d (%.2f%%) if none moved further than a neighbouring bucket%s' %
           (equal, equal + len(exact), total, least, 100.0 * least / total if total else 0, steps,
            100.0 * steps / total if total else 0, '; per reason, the least and the one-bucket-moves count: ' + '; '.join(exact) if exact else ''))
out.append('BUCKETS ' + ('ok' if not bad else 'bad: ' + '; '.join(bad)))
print('\n'.join(out))
PY
)
grep '^INFO' <<<"$verdict" | sed 's/^INFO /  info: /'
v=$(sed -n 's/^COUNTS //p' <<<"$verdict")
[ "$v" = ok ] && pass ${CHECK_PREFIX}exit_counts_per_reason_equal_perf_stat || fail ${CHECK_PREFIX}exit_counts_per_reason_equal_perf_stat "${v:-$verdict}"
v=$(sed -n 's/^REFCOUNT //p' <<<"$verdict")
[ "$v" = ok ] && pass ${CHECK_PREFIX}exit_counts_per_reason_equal_the_raw_tracepoints || fail ${CHECK_PREFIX}exit_counts_per_reason_equal_the_raw_tracepoints "${v:-$verdict}"
v=$(sed -n 's/^BUCKETS_EXACT //p' <<<"$verdict")
echo "  info: log2 buckets per reason against the raw tracepoints, exactly: ${v:-$verdict}"
v=$(sed -n 's/^BUCKETS //p' <<<"$verdict")
[ "$v" = ok ] && pass ${CHECK_PREFIX}exit_time_buckets_per_reason_match_the_raw_tracepoints ||
	fail ${CHECK_PREFIX}exit_time_buckets_per_reason_match_the_raw_tracepoints "${v:-$verdict}"

# --- waiting: each vCPU thread's wait against its schedstat run_delay ---------------
if [ "$(rc st.rc)" != 0 ]; then
	fail ${CHECK_PREFIX}wait_record "record --exits exited with status $(rc st.rc): $(tail_of "$F/st.err")"
else
	pass ${CHECK_PREFIX}wait_record
fi
# st's switch records, for the guest's idle time (halt_gaps below).
"$HT_STATIC" report --vcpu-switches --csv "$F/st.htr" >"$work/st.halts.csv" 2>"$work/st.halts.err" ||
	echo "  info: report --vcpu-switches --csv failed: $(tail_of "$work/st.halts.err")"
# The hypercalls that mark the guest's reads of its /proc/stat.
"$HT_STATIC" report --csv "$F/st.htr" >"$work/st.hcalls.csv" 2>"$work/st.hcalls.err" ||
	echo "  info: report --csv failed: $(tail_of "$work/st.hcalls.err")"
# Each interrupt delivery (record --wakeups), for the ones accepted before the trace began.
"$HT_STATIC" report --latency --csv "$F/st.htr" >"$work/st.latency.csv" 2>"$work/st.latency.err" ||
	echo "  info: report --latency --csv failed: $(tail_of "$work/st.latency.err")"
verdict=$(python3 - "$F" "$work/st.halts.csv" "$work/st.hcalls.csv" "$(dirname "$0")" "$work/st.latency.csv" <<'PY'
import csv, os, struct, sys, re
sys.path.insert(0, sys.argv[4])
from exits_blocks import ExitsBlocks, STATES, WAKE_CLASSES, poll_lost_bad
F = sys.argv[1]
# The trace file's EXITS blocks: each vCPU thread's cumulative numbers,
# account, halts and their wake-ups, at every block.
eb = ExitsBlocks(F + '/st.htr')
blocks, hblocks, wblocks, identity_bad = eb.states, eb.halts, eb.wakes, eb.identity_bad
def times(path):
    r, cpu = {}, None
    for l in open(path):
        f = l.split()
        if f[0] == 'cpu':
            cpu = [int(x) for x in f[1:]]
        elif f[0] == 'jiffies':
            continue
        else:
            r[int(f[0])] = (int(f[1]), int(f[2]), int(f[4]))  # on-CPU ns, run_delay ns, guest_time ticks
    return r, cpu
(s0, cpu0), (s1, cpu1) = times(F + '/st.schedstat0'), times(F + '/st.schedstat1')
tids = sorted(s0)
# The sender's process, "(tgid)", where the instance records it (record-tgid): st.ftrace's.
FTRACE_LINE = re.compile(r'^\s*.+?-(\d+)\s+(?:\(\s*(?:\d+|-+)\)\s+)?\[(\d+)\]\s+(\S+)\s+([\d.]+): (\w+): (.*)$')
FTRACE_TGID = re.compile(r'^\s*.+?-\d+\s+\(\s*(\d+|-+)\)\s+\[')
ftrace_parsed = {}
def ftrace_events(path):
    """The events of one of the nested machine's ftrace texts, each parsed
    once for every helper below: (line index, pid, CPU, flags, ns, name,
    the rest), in the text's order (each CPU's events in the order its
    probes ran)."""
    if path not in ftrace_parsed:
        ev = []
        for i, line in enumerate(open(path, errors='replace')):
            m = FTRACE_LINE.match(line)
            if m:
                ev.append((i, int(m.group(1)), int(m.group(2)), m.group(3), round(float(m.group(4)) * 1e9),
                           m.group(5), m.group(6)))
        ftrace_parsed[path] = ev
    return ftrace_parsed[path]
def ftrace_lost(path):
    """The events the buffer of an ftrace text lost (its header's count)."""
    for line in open(path, errors='replace'):
        m = re.match(r'# entries-in-buffer/entries-written: (\d+)/(\d+)', line)
        if m:
            return int(m.group(2)) - int(m.group(1))
        if not line.startswith('#'):
            return None
    return None
def sched_waits(path, tids):
    """Each thread's time waiting for the CPU, from the scheduler's own events
    on the machine's one CPU (ns): (1) from each sched_wakeup or preempting
    sched_switch to its switch-in, at the tracepoints' times (as the account
    takes them); (2) the least and (3) the most that schedstat (sched_info)
    can count for the same waits, which it takes from the run-queue clock.
    __schedule updates that clock, unless a wake-up that found the running
    task due for preemption asked it to skip that update
    (rq_clock_skip_update in check_preempt_curr, kernel/sched/core.c, 6.1;
    wakeup_preempt later): then the clock is the one of the last update
    before the switch, a wake-up or the tick (in tick_sched_timer's handler,
    between its hrtimer_expire_entry and the next event; other hrtimers
    update it only through the wake-ups they cause), and both the
    preempted thread's wait and the next one's run start there, a little
    before the switch. A wake-up updates the clock between its sched_waking
    and its sched_wakeup (try_to_wake_up: the rq lock, then update_rq_clock,
    then the enqueue and the preemption check), and the woken thread's wait
    starts at that update: no event marks it, so a clock a wake-up set is
    the interval between the two. (One end alone is not a bound: with
    sched_waking as the clock and sched_wakeup as the woken thread's start,
    run_delay fell 0.22% short in a CI run and 0.39% in another; with
    sched_wakeup as the clock it went 0.3% over beside two CPU hogs. The
    emulated wake-up path takes 30-90 us, and CFS's own sched_stat_wait,
    whose sum was run_delay to the nanosecond, put the update between them
    wait by wait.)
    Each wait is then between its latest start and earliest end (2) and its
    earliest start and latest end (3). A switch with no skip asked is taken
    at its tracepoint, a little after its update: those offsets, the same at
    both ends of a wait, summed to 0.07% of it."""
    state, tp, low, high = {}, {t: 0 for t in tids}, {t: 0 for t in tids}, {t: 0 for t in tids}
    skip_asked, last_update, waking, tick = False, None, {}, False
    for _, _, _, flags, ts, name, rest in ftrace_events(path):
        if tick:  # the tick's update is in its handler, before the next event
            last_update, tick = (last_update[0], ts), False
        if name == 'sched_waking':
            waking[int(re.search(r' pid=(\d+)', rest).group(1))] = ts
        elif name in ('sched_wakeup', 'sched_wakeup_new'):
            p = int(re.search(r' pid=(\d+)', rest).group(1))
            last_update = (waking.pop(p, ts), ts)
            skip_asked = skip_asked or 'N' in flags  # need-resched set when it was woken
            if p in tp and state.get(p, ('blk',))[0] == 'blk':
                state[p] = ('wait', last_update, ts)
        elif name == 'hrtimer_expire_entry' and re.search(r'function=(tick_sched_timer|tick_nohz_handler) ', rest + ' '):
            last_update, tick = (ts, ts), True
        elif name == 'sched_switch':
            m = re.search(r'prev_pid=(\d+) prev_prio=\S+ prev_state=(\S+) ==> .* next_pid=(\d+)', rest)
            prev, prev_state, nxt = int(m.group(1)), m.group(2), int(m.group(3))
            clock = last_update if skip_asked and last_update is not None else (ts, ts)
            if prev in tp and state.get(prev, ('blk',))[0] == 'run':
                state[prev] = ('wait', clock, ts) if prev_state.startswith('R') else ('blk',)
            if nxt in tp:
                s = state.get(nxt)
                if s and s[0] == 'wait':
                    low[nxt] += clock[0] - s[1][1]
                    high[nxt] += clock[1] - s[1][0]
                    tp[nxt] += ts - s[2]
                state[nxt] = ('run', clock, ts)
            skip_asked, last_update = False, None
    return tp, low, high
def switch_in_times(path, tids):
    """Per thread, its switch-ins and their time (ns): from the sched_switch
    that picks it to the kprobe at finish_task_switch that then runs in it,
    on the same CPU, where perf's task-clock starts to count it."""
    picked, n, ns = {}, {t: 0 for t in tids}, {t: 0 for t in tids}
    for _, pid, cpu, _, ts, name, rest in ftrace_events(path):
        if name == 'sched_switch':
            nxt = int(re.search(r'next_pid=(\d+)', rest).group(1))
            picked[cpu] = (nxt, ts) if nxt in n else None
        elif name == 'switch_in_done':
            p = picked.pop(cpu, None)
            if p and p[0] == pid:
                n[pid] += 1
                ns[pid] += ts - p[1]
    return n, ns
def guest_window_ticks(path, tids):
    """Where the tick that samples guest_time is handled, per vCPU thread,
    from the order of its handler (hrtimer_expire_entry of the tick) among
    the thread's kvm_entry, kvm_exit and sched_switch events. The kernel
    counts a tick as guest time when it is handled inside its guest-timing
    window (PF_VCPU, set with interrupts off before the entry, cleared
    after the exit's interrupts were taken: vcpu_enter_guest,
    arch/x86/kvm/x86.c); a tick that arrives while KVM runs with interrupts
    off around the entry is handled there too. Where kvm_exit fires with
    interrupts on (SVM up to 6.1: svm_handle_exit, after the window) the
    window's ticks are those handled between a kvm_entry and its kvm_exit
    (bounds: all of them); where it fires with interrupts off (since 6.12),
    those handled right after an interrupt exit, and at most also those
    right after another exit. Returns {tid: (low, high)} in ticks."""
    last, n, irqs_off_exit = {}, {t: {} for t in tids}, None
    for _, pid, _, flags, _, name, rest in ftrace_events(path):
        if name == 'kvm_exit' and pid in n:
            if irqs_off_exit is None:
                irqs_off_exit = flags.startswith('d')
            last[pid] = 'exit_intr' if re.search(r' reason (interrupt|EXTERNAL_INTERRUPT) ', rest) else 'exit'
        elif name == 'kvm_entry' and pid in n:
            last[pid] = 'entry'
        elif name == 'sched_switch':
            for p in re.findall(r'(?:prev|next)_pid=(\d+)', rest):
                last[int(p)] = 'switch'
        elif name == 'hrtimer_expire_entry' and re.search(r'function=(tick_sched_timer|tick_nohz_handler) ', rest + ' '):
            if pid in n:
                k = last.get(pid, 'none')
                n[pid][k] = n[pid].get(k, 0) + 1
                last[pid] = 'tick'  # the next tick of the same stretch is no longer the exit's
    r = {}
    for t in tids:
        c = n[t]
        if irqs_off_exit:
            r[t] = (c.get('exit_intr', 0), c.get('exit_intr', 0) + c.get('exit', 0))
        else:
            r[t] = (c.get('entry', 0), c.get('entry', 0))
    return r, irqs_off_exit
def tick_period_ns(paths):
    """The kernel's tick period, from its jiffies over the interval
    (thread_times reads them with their monotonic time at both ends). The
    gaps between tick handlers cannot give it: a starved machine handles
    its ticks late, and a late tick followed by one on time leaves a gap
    shorter than a period (beside two CPU hogs, on HZ 250, their median
    gave 10 ms and their tenth percentile 1 ms). Jiffies count every
    period, late or not (tick_do_update_jiffies64 adds the ticks missed)."""
    ends = []
    for path in paths:
        for l in open(path):
            f = l.split()
            if f[0] == 'jiffies':
                ends.append((int(f[1]), int(f[2])))
    if len(ends) != 2 or ends[1][1] <= ends[0][1]:
        return 0
    hz = (ends[1][0] - ends[0][0]) * 1e9 / (ends[1][1] - ends[0][1])
    return 10 ** 9 // min((100, 250, 300, 1000), key=lambda k: abs(k - hz))
try:
    tp_wait, low_wait, high_wait = sched_waits(F + '/st.ftrace', tids)
    window, irqs_off_exit = guest_window_ticks(F + '/st.ftrace', tids)
    tick_period = tick_period_ns((F + '/st.schedstat0', F + '/st.schedstat1'))
    switch_ins, switch_in_ns = switch_in_times(F + '/st.ftrace', tids)
except (OSError, AttributeError, ValueError):
    tp_wait, low_wait, high_wait, window, tick_period, irqs_off_exit = {}, {}, {}, {}, 0, None
    switch_ins, switch_in_ns = {}, {}
out = ['IDENTITY ' + ('ok %d blocks' % len(blocks) if blocks and not identity_bad else 'bad: ' + '; '.join(identity_bad[:5]))]
# The stops: blocks in which no thread's guest, kvm, vmm or wait moved.
stopped = eb.stopped(tids)
if not stopped:
    print('\n'.join(out + ['STOPS bad: no EXITS block of a stopped guest']))
    sys.exit()
first, last = blocks[stopped[0]], blocks[-1]
first_stop = stopped[0]
out.append('INFO the interval: EXITS block %d (the first of the guest stopped) to the last, %d' % (stopped[0], len(blocks) - 1))
taskclock = {}
for l in open(F + '/st.taskclock'):
    m = re.search(r'-(\d+),([0-9.]+),msec,task-clock', l)
    if m:
        taskclock[int(m.group(1))] = float(m.group(2)) * 1e6
try:
    kprobe_note = open(F + '/st.kprobe').read().strip()
except OSError:
    kprobe_note = 'never set up'
tick_ns = 10 ** 9 // 100  # USER_HZ
def pct(a, b):
    return 100.0 * (a - b) / b if b else 0.0
for tid in tids:
    d = [a - b for a, b in zip(last.get(tid, [0] * 6), first.get(tid, [0] * 6))]
    oncpu_ref, wait_ref, guest_ref = (s1[tid][k] - s0[tid][k] for k in range(3))
    oncpu = d[0] + d[1] + d[2]
    out.append('INFO vCPU thread %d over the interval: %s' % (tid, ', '.join('%s %.3f s' % (n, v / 1e9) for n, v in zip(STATES, d))))
    # Runnable (on a CPU or waiting for one): the kernel's own two numbers
    # together, within 1%. Where the kernel draws the line between running
    # and waiting is its own (schedstat takes both ends from its run-queue
    # clock, the account at the sched_switch tracepoint): after a wake-up
    # that preempts, the clock is held at the wake-up (sched_waits above),
    # so schedstat moves 1-2% of the runnable time from run to wait here;
    # each is compared on its own with a wider bound, and the cause checked
    # (SCHEDCLOCK).
    runnable, runnable_ref = oncpu + d[3], oncpu_ref + wait_ref
    ok = runnable_ref > 1e9 and abs(runnable - runnable_ref) <= 0.01 * runnable_ref
    out.append('RUNNABLE %d %s guest + kvm + vmm + wait %.4f s, schedstat run time + run_delay %.4f s (%+.2f%%)' % (tid, 'ok' if ok else 'bad', runnable / 1e9, runnable_ref / 1e9, pct(runnable, runnable_ref)))
    # Where the two part, from the scheduler's own events (sched_waits):
    # the account's wait is the tracepoints' (within 0.5%: measured +0.06%
    # to +0.09%, quiet and beside two CPU hogs, ftrace's clock against the
    # account's; -0.6% beside the hogs while ftrace's probes ran after the
    # recorder's, see ST_EVENTS), and run_delay lies within the bounds
    # the run-queue clock's updates put on it (0.2% either side for the
    # clocks' reads).
    explained = False
    if tid in tp_wait:
        tpw, lo, hi = tp_wait[tid], low_wait[tid], high_wait[tid]
        explained = ok = abs(d[3] - tpw) <= 0.005 * tpw and 0.998 * lo <= wait_ref <= 1.002 * hi
        sched_clock = ('SCHEDCLOCK %d %s wait %.4f s = the sched_switch/sched_wakeup times\' %.4f s (%+.2f%%); run_delay %.4f s, within the run-queue clock\'s %.4f to %.4f s (%.0f%% of the way)' %
                       (tid, 'ok' if ok else 'bad', d[3] / 1e9, tpw / 1e9, pct(d[3], tpw), wait_ref / 1e9, lo / 1e9, hi / 1e9, 100.0 * (wait_ref - lo) / (hi - lo) if hi > lo else 0))
    else:
        sched_clock = 'SCHEDCLOCK %d bad: no scheduler events of the thread in st.ftrace' % tid
    # The wait within 3% of run_delay, or further where SCHEDCLOCK explains
    # it: the held clock moved more of the runnable time to run_delay (the
    # host busier, more preempting wake-ups: -3.01% in a run beside a fuzzer,
    # run_delay inside its bounds).
    ok = wait_ref > 1e9 and (abs(d[3] - wait_ref) <= 0.03 * wait_ref or (explained and d[3] <= wait_ref))
    out.append('WAIT %d %s wait %.4f s, schedstat run_delay %.4f s (%+.2f%%%s)' % (tid, 'ok' if ok else 'bad', d[3] / 1e9, wait_ref / 1e9, pct(d[3], wait_ref),
               '' if abs(d[3] - wait_ref) <= 0.03 * wait_ref else ', beyond 3% by the held run-queue clock, within its bound'))
    out.append(sched_clock)
    # perf's task-clock runs from the end of a context switch (finish_task_switch)
    # to the start of the next; the account from one sched_switch tracepoint to
    # the next: the switch-in itself is the account's, never perf's. So the
    # account is above task-clock by at most its switch-ins' time, measured
    # here from the nested ftrace (switch_in_times): 34-46 us a switch-in
    # under this emulation on a quiet host, about 200 us beside two CPU hogs
    # (which put a fixed bound at +8%). Below task-clock is time lost; above
    # it by more than the switch-ins and 1% (the clocks' reads), time
    # counted that was not on the CPU.
    tc = taskclock.get(tid, 0)
    sw_n, sw_ns = switch_ins.get(tid, 0), switch_in_ns.get(tid, 0)
    ok = tc > 1e9 and sw_n > 0 and 0 <= oncpu - tc <= sw_ns + 0.01 * tc
    out.append('ONCPU %d %s guest + kvm + vmm %.4f s, perf task-clock %.4f s (%+.2f%%, %.1f ms above it); %d switch-ins took %.1f ms (%.0f us each); schedstat run time %.4f s (%+.2f%%)' %
               (tid, 'ok' if ok else 'bad', oncpu / 1e9, tc / 1e9, pct(oncpu, tc), (oncpu - tc) / 1e6, sw_n, sw_ns / 1e6, sw_ns / 1e3 / sw_n if sw_n else 0,
                oncpu_ref / 1e9, pct(oncpu, oncpu_ref)) + ('' if sw_n else ': no switch-in measured (kprobe: %s)' % kprobe_note))
    # guest_time is sampled at the tick (a tick that finds the thread in
    # guest mode counts a whole one): under emulation it was off by -15% to
    # +25% over ~250 ticks, either way from run to run (the emulator delivers
    # the timer's interrupts where it checks for them, not evenly in time).
    # guest_time is sampled by the tick where the kernel handles it, inside
    # a window wider than the guest state (guest_window_ticks): under
    # emulation, KVM's code with interrupts off around each entry is slow,
    # and the ticks that arrive there count as guest time. The check is that
    # guest_time is the ticks the tracepoints place in that window (within
    # 20% above its upper bound and 35% below its lower one, or 3 ticks:
    # measured 5.1-10.7% below them on 6.1, the ticks taken after the window
    # closes but before kvm_exit; on 6.12 6.5-23% above the ticks right after
    # an interrupt exit and 10-20% below those right after any exit, and in
    # one CI run beside the Debian 13 root's suites 24.7% and 25.3% below the
    # lower bound: the emulator delivers fewer ticks where it is starved);
    # the account's guest is printed beside it.
    lo, hi = window.get(tid, (0, 0))
    got = guest_ref * tick_ns / tick_period if tick_period else 0  # in the kernel's ticks
    ok = tick_period > 0 and hi > 0 and 0.65 * lo - 3 <= got <= 1.2 * hi + 3
    out.append('GUEST %d %s /proc guest_time %d USER_HZ ticks = %.0f ticks of %.0f ms, the tracepoints place %s ticks in the kernel\'s guest-timing window (kvm_exit fires with interrupts %s); the account\'s guest %.3f s is %+.1f%% of guest_time, its guest + kvm %.3f s %+.1f%%' %
               (tid, 'ok' if ok else 'bad', guest_ref, got, tick_period / 1e6, '%d' % lo if lo == hi else '%d-%d' % (lo, hi),
                'off' if irqs_off_exit else 'on', d[0] / 1e9, pct(d[0], guest_ref * tick_ns), (d[0] + d[1]) / 1e9, pct(d[0] + d[1], guest_ref * tick_ns)))
def halt_gaps(path, tids, marks, before_stop):
    """From the switch records (report --vcpu-switches --csv) of the vCPU
    threads, in ns, per thread: its time stopped at the first stop (from
    it to the continue) and its vCPU (vcpu_id); and its time off the CPU
    in halts (each voluntary switch-out in TASK_INTERRUPTIBLE, a block in
    KVM's halt or in the VMM, to the switch-in) within three windows: from
    the continue to the guest's first read of its /proc/stat after it
    (marks[0], the host's time), from its last read (marks[1]) to the last
    stop, and from its read before the first stop (before_stop) to that
    stop. Also each thread's switch-in after the continue and its
    switch-out at the last stop (the recording's times of both)."""
    recs = {t: [] for t in tids}
    vcpu = {}
    for r in csv.DictReader(open(path)):
        if int(r['host_tid']) in recs:
            recs[int(r['host_tid'])].append((int(r['time_ns']), r['switch'], int(r['prev_state']), int(r['involuntary'])))
            vcpu[int(r['host_tid'])] = int(r['vcpu_id'])
    stopped, gaps, anchors = {}, {}, {}
    for t, rs in recs.items():
        rs.sort()
        stops = [i for i, r in enumerate(rs) if r[1] == 'out' and r[2] & 4]  # __TASK_STOPPED
        if len(stops) < 2:
            raise ValueError('thread %d: %d stops in its switch records, want 2' % (t, len(stops)))
        s0, s1 = stops[0], stops[-1]
        resumed = next(r[0] for r in rs[s0:] if r[1] == 'in')
        stopped[t] = resumed - rs[s0][0]
        anchors[t] = (resumed, rs[s1][0])
        gaps[t] = [0, 0, 0]
        for k, (lo, hi) in enumerate(((resumed, marks[0]), (marks[1], rs[s1][0]), (before_stop, rs[s0][0]))):
            for i, r in enumerate(rs):
                if r[1] == 'out' and r[3] == 0 and r[2] == 1:
                    back = next((x[0] for x in rs[i + 1:] if x[1] == 'in'), hi)
                    gaps[t][k] += max(0, min(back, hi) - max(r[0], lo))
    return stopped, gaps, vcpu, anchors
def read_marks(path, reads):
    """The host's time of the guest's reads of its /proc/stat: the
    hypercall just before each (reads: their a0, the one after each is
    a0 + 1: hypercall --snapshot's bracket), and the widest window
    between the two, in ns."""
    at = {}
    for r in csv.DictReader(open(path)):
        at[int(r['a0'], 0)] = int(r['exit_ns'])
    return [at[a] for a in reads], max(at[a + 1] - at[a] for a in reads)
def guest_clock_lag(path, up0, up1, first, last):
    """How much less of the host's time than there was the guest's own
    clock saw between two reads of its /proc/uptime (up0, up1: seconds),
    each bracketed by two hypercalls (a0 first and first + 1, last and
    last + 1): the least and the most it can be (s), from the brackets and
    the file's 10 ms."""
    at = {}
    for r in csv.DictReader(open(path)):
        at[int(r['a0'], 0)] = int(r['exit_ns'])
    seen = up1 - up0
    return ((at[last] - at[first + 1]) / 1e9 - seen - 0.01, (at[last + 1] - at[first]) / 1e9 - seen + 0.01)
def halt_around(path, tids):
    """KVM's handling of each HLT exit around its halt, over both threads,
    from the nested machine's ftrace (ns): from the HLT kvm_exit to the
    halt's start (kvm_vcpu_wakeup's time less its ns) and from the halt's
    end to the next kvm_entry. Idle to the guest (in its HLT), kvm or wait
    to the account, and in no halt's time. Also the halts so measured, and
    per thread each one's span from its HLT exit to its entry (ftrace's
    clock): the guest's time in that HLT, as far as it is counted here."""
    hlt_at, ended, total, n = {}, {}, 0, 0
    spans = {t: [] for t in tids}
    for _, pid, _, _, ts, name, rest in ftrace_events(path):
        if pid not in tids:
            continue
        if name == 'kvm_exit':
            hlt_at[pid] = ts if re.search(r' reason (hlt|HLT) ', rest) else None
        elif name == 'kvm_vcpu_wakeup':
            start = ts - int(re.search(r'time (\d+) ns', rest).group(1))
            if hlt_at.get(pid) is not None and hlt_at[pid] <= start:
                total += start - hlt_at[pid]
                ended[pid] = (ts, hlt_at[pid])
                n += 1
            hlt_at[pid] = None
        elif name == 'kvm_entry' and pid in ended:
            woke, exited = ended.pop(pid)
            total += ts - woke
            spans[pid].append((exited, ts))
    # A halt the last stop woke (its signal) has no entry before the trace
    # ends: its span ends at its wake-up, as its time above does.
    for pid, (woke, exited) in ended.items():
        spans[pid].append((exited, woke))
    return total, n, spans
def ftrace_stop_anchors(path, tids):
    """Per thread, its switch-in after the first stop's continue and its
    switch-out at the last stop in the nested machine's ftrace (its clock,
    ns): the same two switches as the switch records' (halt_gaps), which
    put ftrace's times on the records' clock (halts_in_windows)."""
    first, last = {}, {}
    for _, pid, _, _, ts, name, rest in ftrace_events(path):
        if name != 'sched_switch':
            continue
        m = re.search(r'prev_pid=(\d+) prev_prio=\S+ prev_state=(\S+) ==> .* next_pid=(\d+)', rest)
        if int(m.group(3)) in tids and int(m.group(3)) not in first:
            first[int(m.group(3))] = ts
        if int(m.group(1)) in tids and m.group(2).startswith('T'):
            last[int(m.group(1))] = ts
    missing = [t for t in tids if t not in first or t not in last]
    if missing:
        raise ValueError('threads %s: no switch-in after the continue or no stop in st.ftrace' % missing)
    return {t: (first[t], last[t]) for t in tids}
def halts_in_windows(spans, ftrace_anchor, record_anchor, windows):
    """Per thread, the time of its halts' spans (halt_around: HLT exit to
    entry, ftrace's clock) within each window (records' clock, ns). The
    two clocks are tied by the same two switches on each (its switch-in
    after the continue, its switch-out at the last stop), a straight line
    between them: ftrace's clock is the scheduler's, the records' the
    monotonic one, apart by an offset and a rate (0.01%)."""
    out = {}
    for t, ss in spans.items():
        (f0, f1), (r0, r1) = ftrace_anchor[t], record_anchor[t]
        on_records = lambda f: r0 + (f - f0) * (r1 - r0) / (f1 - f0)
        out[t] = [sum(max(0, min(on_records(b), hi) - max(on_records(a), lo)) for a, b in ss) for lo, hi in windows[t]]
    return out
def cpu_line(name):
    """The guest's cpu line of /proc/stat, its cpuN lines ({N: fields})
    and its uptime (s), as command name printed them."""
    con = open(F + '/st.console', errors='replace').read().replace('\r', '')
    m = re.search(r'L2-BEGIN %s\ncpu +(.*)\n((?:cpu\d+ .*\n)*)(?:([\d.]+) [\d.]+\n)?' % name, con)
    if not m:
        return None, {}, None
    per_cpu = {int(l.split()[0][3:]): [int(x) for x in l.split()[1:]] for l in m.group(2).splitlines()}
    return [int(x) for x in m.group(1).split()], per_cpu, float(m.group(3)) if m.group(3) else None
# The guest's reads: before the first stop (st_steal0), after its continue
# (st_steal0c) and before the last stop (st_steal1).
(pre, pre_cpus, up_pre), (a, a_cpus, up_a), (b, b_cpus, up_b) = cpu_line('st_steal0'), cpu_line('st_steal0c'), cpu_line('st_steal1')
total_wait = sum(last[t][3] - first[t][3] for t in tids)
total_halted = sum(last[t][4] - first[t][4] for t in tids)
if a is None or b is None:
    out.append('STEAL bad: no /proc/stat line from the guest')
else:
    # USER_HZ ticks of 10 ms, over both vCPUs: steal (8th field) and idle (4th).
    d = (b[7] - a[7]) / 100.0
    ok = d >= 0.5 * total_wait / 1e9 and d <= 1.5 * total_wait / 1e9
    out.append('STEAL %s guest steal %.2f s, hypertrace-bpf wait of both vCPUs %.2f s' % ('ok' if ok else 'bad', d, total_wait / 1e9))
    # The guest's idle time is its vCPUs' time in their HLTs, which the
    # account has in each thread's halts: every halt's time in KVM
    # (kvm_vcpu_halt, KVM's own measure from its kvm_vcpu_wakeup event: the
    # polling, each block, the wait for a CPU after it, a spurious wake-up's
    # return to the block, a preemption on the way), counted when the halt
    # ends. A stop ends a halt (the signal), so the halts between two stops
    # are whole. The account's halted is the blocked part of them, and is
    # shown beside them: the rest of a halt is kvm or wait to the account.
    # (Before the halts were recorded this took halted, plus each block's
    # wait from the switch records and the polling from the nested ftrace,
    # which counted a halt woken spuriously twice: +3.3% in one run.)
    # Around each halt, KVM's handling of the HLT exit before it and up to
    # the entry after it is idle to the guest too (halt_around, from the
    # nested ftrace: 0.03-0.29 s per interval).
    # An idle CPU's time is iowait instead of idle while a task that last
    # ran on it waits for I/O (tick_nohz_stop_idle): both are the guest's
    # idle time (5th field too).
    idle = (b[3] - a[3] + b[4] - a[4]) / 100.0
    iowait = (b[4] - a[4]) / 100.0
    # The account's interval runs from the first stop to the last; the
    # guest's, from its first read of /proc/stat after the first stop's
    # continue to its read a little before the last stop (its console's
    # output, the host seeing it, the vCPUs halting), by a time that the
    # host's load moves: both vCPUs are mostly idle there, so one such gap
    # a second longer than the other moved the comparison by 2 s (the -5.4%
    # and +21.9% failures). The gaps are measured: the halts' time in them,
    # each halt's from its HLT exit to its entry (the nested ftrace, put on
    # the records' clock by the threads' own switches at the continue and
    # the last stop), from the continue to the first read and from the
    # last read (hypercalls around each, on the host's clock) to its stop,
    # is taken off, so that both sides cover the guest's interval. (Taking
    # off only the halts' time off the CPU there, from the switch records,
    # left their time in KVM on the CPU in: +0.26 s with gaps of 3.2 s, one
    # CI run in a few.)
    # No stop is in it. The guest took its idle vCPUs' time stopped as idle
    # in most runs, but not in all: with the first read before the first
    # stop, two CI runs had the parts over the guest's idle by about the
    # stopped time, 6.11 s of 6.12 s (both vCPUs) and 3.33 s of 6.94 s (one
    # vCPU's 3.47 s), the second with the guest's clock seeing the whole
    # interval. That read is kept: STOPIDLE shows, per vCPU, the guest's
    # idle across the stop beside the host's time halted and stopped.
    # What the host cannot see is the guest's own idle path around each HLT
    # (its idle entry, cpuidle's haltpoll polling, its idle exit: guest
    # time to the account), which the guest counts as idle: the parts fall
    # short of the guest's idle time by it, 0.2-4.8 ms per halt in 12 runs
    # under this emulation (4.8 on a quiet host: a 3 ms bound failed there).
    # The vCPU threads' preemptions in the nested ftrace, within three exits
    # of each HLT, explained less than half of that run's 1.1 s, so no
    # measured term replaces it. So the check is one-sided and per halt,
    # bounded at twice the largest spread seen: the parts may fall short by
    # at most 10 ms per halt, and
    # exceed the guest's idle time by no more than its reads' rounding (10
    # ms per read and vCPU) and 1% (the two clocks' tie, the reads'
    # brackets). A halt counted twice, or one left out, fails it.
    # The guest's idle time is on its own clock, the parts on the host's:
    # where the guest's clock saw less of the interval than the host's, its
    # idle can be short by that much on each vCPU. Its uptime, read in
    # brackets of hypercalls as its /proc/stat is (guest_clock_lag),
    # measures it; the bounds move by it (and by the brackets' width), each
    # way.
    try:
        marks, mark_width = read_marks(sys.argv[3], (0x1d1e4, 0x1d1e2))
        (before_stop,), _ = read_marks(sys.argv[3], (0x1d1e0,))
        stopped, gaps, vcpu_of, anchors = halt_gaps(sys.argv[2], tids, marks, before_stop)
        around, around_n, spans = halt_around(F + '/st.ftrace', tids)
        in_gaps = halts_in_windows(spans, ftrace_stop_anchors(F + '/st.ftrace', tids), anchors,
                                   {t: ((anchors[t][0], marks[0]), (marks[1], anchors[t][1])) for t in tids})
        if not hblocks or any(t not in hblocks[first_stop] or t not in hblocks[-1] for t in tids):
            raise ValueError('no halts in the thread records')
        hf, hl = hblocks[first_stop], hblocks[-1]
        halts = sum(hl[t][0] - hf[t][0] for t in tids)
        in_halts = sum(hl[t][3] - hf[t][3] + hl[t][5] - hf[t][5] for t in tids)  # caught_ns + slept_ns
        gap_first, gap_last = (sum(in_gaps[t][k] for t in tids) for k in (0, 1))
        off_first, off_last = (sum(gaps[t][k] for t in tids) for k in (0, 1))
        parts = (in_halts + around - gap_first - gap_last) / 1e9
        # Every field of the guest's cpu line over its interval, against the
        # host's time between its reads on both vCPUs: a vCPU's time that the
        # guest accounts nowhere (ticks lost while busy) shows as a shortfall.
        accounted = (sum(b[:8]) - sum(a[:8])) / 100.0
        span = 2 * (marks[1] - marks[0]) / 1e9
        looks = ' '.join(' '.join(open(F + '/st.halted%d' % k).read().split()) for k in (0, 1) if os.path.exists(F + '/st.halted%d' % k))
        if up_a is None or up_b is None:
            raise ValueError('no /proc/uptime line from the guest')
        lag_lo, lag_hi = guest_clock_lag(sys.argv[3], up_a, up_b, 0x1d1f4, 0x1d1f2)
        short, may_short, may_over = idle - parts, 0.010 * halts, 0.01 * idle + 0.04
        may_short += len(tids) * max(0.0, -lag_lo)
        may_over += len(tids) * max(0.0, lag_hi)
        # halted is part of the halts' time: a halted counted outside them would show here.
        ok = total_halted > 1e9 and idle > 0 and total_halted <= in_halts and -may_over <= short <= may_short
        out.append('HALTED %s the guest\'s own idle time %.2f s (its /proc/stat, both vCPUs; iowait %.2f s of it); %d halts %.2f s in KVM (halted %.2f s of it, the rest kvm and wait) + KVM\'s HLT exits around %d of them %.2f s - the halts from the continue to the first read %.2f s (off the CPU %.2f s) - from the last read to its stop %.2f s (off the CPU %.2f s) = %.2f s (%+.1f%%: the guest\'s idle path %.2f ms per halt, at most 10; each read less than %.1f ms after its hypercall; all of its cpu line %.2f s of the %.2f s between its reads on both vCPUs; its clock saw %.2f s, %.3f to %.3f s less than the host\'s; so the bounds %.2f s over, %.2f s short; the vCPU threads at the stops, tid:state:wchan %s)' %
                   ('ok' if ok else 'bad', idle, iowait, halts, in_halts / 1e9, total_halted / 1e9, around_n, around / 1e9,
                    gap_first / 1e9, off_first / 1e9, gap_last / 1e9, off_last / 1e9, parts, pct(parts, idle), 1e3 * short / max(halts, 1), mark_width / 1e6, accounted, span,
                    up_b - up_a, lag_lo, lag_hi, may_over, may_short, looks))
        # Across the first stop, per vCPU: the guest's idle and all of its
        # cpu line from its read before the stop to its read after, beside
        # the host's time of that vCPU's thread halted (off the CPU in
        # halts) and stopped over the same reads.
        across = []
        for t in tids:
            n = vcpu_of.get(t)
            if n not in pre_cpus or n not in a_cpus:
                across.append('vCPU %s (tid %d): no cpu%s line' % (n, t, n))
                continue
            g_idle = (a_cpus[n][3] - pre_cpus[n][3] + a_cpus[n][4] - pre_cpus[n][4]) / 100.0
            g_all = (sum(a_cpus[n][:8]) - sum(pre_cpus[n][:8])) / 100.0
            across.append('vCPU %d (tid %d): guest idle %.2f s of its cpu line\'s %.2f s; the host: halted %.2f s + stopped %.2f s + halted %.2f s = %.2f s of %.2f s' %
                          (n, t, g_idle, g_all, gaps[t][2] / 1e9, stopped[t] / 1e9, gaps[t][0] / 1e9,
                           (gaps[t][2] + stopped[t] + gaps[t][0]) / 1e9, (marks[0] - before_stop) / 1e9))
        out.append('STOPIDLE across the first stop, from the guest\'s read before it to its read after: ' + '; '.join(across))
    except (OSError, KeyError, ValueError, StopIteration, AttributeError) as e:
        out.append('HALTED bad: the thread records\' halts, the switch records, the nested ftrace or the marks of the guest\'s reads: %r' % e)
def kvm_halt_stats(path):
    return {l.split()[0]: int(l.split()[1]) for l in open(path) if len(l.split()) == 2}
def ftrace_halts(path, tids):
    """KVM's kvm_vcpu_wakeup of the vCPU threads in the nested machine's
    ftrace: halts, those that slept ("wait") and their ns, those that did
    not ("poll") and their ns; and whether the buffer lost events."""
    n, waited, waited_ns, poll, poll_ns = 0, 0, 0, 0, 0
    for _, pid, _, _, _, name, rest in ftrace_events(path):
        m = name == 'kvm_vcpu_wakeup' and pid in tids and re.match(r'(wait|poll) time (\d+) ns', rest)
        if not m:
            continue
        n += 1
        if m.group(1) == 'wait':
            waited, waited_ns = waited + 1, waited_ns + int(m.group(2))
        else:
            poll, poll_ns = poll + 1, poll_ns + int(m.group(2))
    return n, waited, waited_ns, poll, poll_ns, ftrace_lost(path)
def wake_event_key(tids, pid, name, rest):
    """An event that can begin or end a wake-up or one of its waits, as both
    trace instances show it (None for another): sched_wakeup of a vCPU
    thread, sched_switch from or to one, kvm_entry of one."""
    if name == 'sched_wakeup':
        woken = int(re.search(r' pid=(\d+)', rest).group(1))
        return (name, woken) if woken in tids else None
    if name == 'sched_switch':
        mm = re.search(r'prev_pid=(\d+) .* next_pid=(\d+)', rest)
        prev, nxt = int(mm.group(1)), int(mm.group(2))
        return (name, prev, nxt) if prev in tids or nxt in tids else None
    if name == 'kvm_entry':
        return (name, pid) if pid in tids else None
    if name == 'kvm_apic_accept_irq':
        return (name, pid, rest)
    return None
def ftrace_after_times(path, after_path, tids):
    """The time the second trace instance (its probe after the recorder's)
    gave each such event of the first (st.ftrace), by its line number: the
    same events on each CPU, each kind (its key) in the same order, else
    ValueError. Kinds may interleave differently: an interrupt of the CPU
    between the two probes of one event (the recorder's handler runs
    between them) puts its own events between them in one instance only."""
    def events(p):
        per_cpu = {}
        for i, pid, cpu, _, ts, name, rest in ftrace_events(p):
            key = wake_event_key(tids, pid, name, rest)
            if key:
                per_cpu.setdefault(cpu, []).append((i, ts, key))
        return per_cpu
    first, second, after = events(path), events(after_path), {}
    for cpu in sorted(set(first) | set(second)):
        a, b = first.get(cpu, []), second.get(cpu, [])
        by_key = {}
        for y in b:
            by_key.setdefault(y[2], []).append(y[1])
        used = {}
        for x in a:
            times = by_key.get(x[2], [])
            n = used.get(x[2], 0)
            if n >= len(times):
                raise ValueError('CPU %d: %r is in the first instance %d times or more, in the second %d' %
                                 (cpu, x[2], n + 1, len(times)))
            after[x[0]] = times[n]
            used[x[2]] = n + 1
        extra = [k for k, v in by_key.items() if len(v) != used.get(k, 0)]
        if extra:
            raise ValueError('CPU %d: %r is in the second instance more often than in the first' % (cpu, extra[0]))
    return after
def bracket(path, tids, after, bound, i, pid, ts, name, rest):
    """(begin, end) of event i of path at ts: ts both, or with bound an event
    both trace instances have (wake_event_key) 'low', from the second
    instance's time to the first's (the least the recorder can have read
    across it), 'high' the reverse."""
    if not bound or not wake_event_key(tids, pid, name, rest):
        return ts, ts
    if i not in after:
        raise ValueError('line %d of %s has no time in the second instance' % (i + 1, path))
    return (after[i], ts) if bound == 'low' else (ts, after[i])
def ftrace_wakeups(path, tids, timer_vector=0xec, after=None, bound=None):
    """The wake-ups of halted vCPU threads in the nested machine's ftrace,
    told the recording's way (struct ht_vcpu_wakeups) from the scheduler's
    and KVM's own events: a thread that blocks (sched_switch, prev_state not
    R) in a halt (its last kvm_exit a halt's, no kvm_userspace_exit since but
    KVM_EXIT_HLT) and is woken (sched_wakeup) has a wake-up until its next
    kvm_entry, classed by the first kvm_inj_virq in between (the guest's
    timer vector, Linux's 0xec; another; none); its wait is from the
    wake-up, or a preempting switch-out, to its switch-in. A thread that
    blocks again first is reblocked. Per class [count, ns, wait ns, waits].
    With after (ftrace_after_times) and bound 'low', each wake-up and wait
    begins at the second instance's time of its event and ends at the
    first's: the least the recorder can have read; 'high' the reverse, the
    most."""
    st = {t: dict(exit_hlt=False, vmm=False, uexit_hlt=False, halted=False, wake=None) for t in tids}
    res, reblocked = {c: [0, 0, 0, 0] for c in WAKE_CLASSES}, 0
    for i, pid, _, _, ts, name, rest in ftrace_events(path):
        begin, end = bracket(path, tids, after, bound, i, pid, ts, name, rest)
        if name == 'sched_wakeup':
            s = st.get(int(re.search(r' pid=(\d+)', rest).group(1)))
            if s and s['halted']:
                s['halted'], s['wake'] = False, [begin, None, 0, begin, 0]  # woken at, vector, wait so far, waiting since, waits
        elif name == 'sched_switch':
            mm = re.search(r'prev_pid=(\d+) prev_prio=\S+ prev_state=(\S+) ==> .* next_pid=(\d+)', rest)
            prev, prev_state, nxt = int(mm.group(1)), mm.group(2), int(mm.group(3))
            s = st.get(prev)
            if s and prev != nxt:
                if prev_state.startswith('R'):
                    if s['wake']:
                        s['wake'][3] = begin
                else:
                    if s['wake']:
                        reblocked, s['wake'] = reblocked + 1, None
                    s['halted'] = s['exit_hlt'] and (not s['vmm'] or s['uexit_hlt'])
            s = st.get(nxt)
            if s and s['wake'] and s['wake'][3] is not None:
                s['wake'][2] += end - s['wake'][3]
                s['wake'][3] = None
                s['wake'][4] += 1
        elif pid in st:
            s = st[pid]
            if name == 'kvm_exit':
                mm = re.search(r'reason (\S+)', rest)
                s['exit_hlt'] = bool(mm) and mm.group(1).lower() in ('hlt', 'idle_hlt')
                s['vmm'] = s['uexit_hlt'] = False
            elif name == 'kvm_userspace_exit':
                s['vmm'], s['uexit_hlt'] = True, 'KVM_EXIT_HLT' in rest
            elif name == 'kvm_inj_virq':
                mm = re.search(r'(?:irq|IRQ) (0x[0-9a-fA-F]+|\d+)', rest)
                if s['wake'] and s['wake'][1] is None and mm:
                    s['wake'][1] = int(mm.group(1), 0)
            elif name == 'kvm_entry':
                s['exit_hlt'] = s['vmm'] = False
                w = s['wake']
                if w:
                    c = 'none' if w[1] is None else 'timer' if w[1] == timer_vector else 'vector'
                    res[c][0] += 1
                    res[c][1] += end - w[0]
                    res[c][2] += w[2]
                    res[c][3] += w[4]
                    s['wake'] = None
    return res, reblocked
IRQ_CLASSES = ('timer', 'ipi', 'device')
def ftrace_irqs(path, tids, vm, timer_vector=0xec, after=None, bound=None):
    """The interrupts delivered to the vCPU threads tids of VM process vm in
    the nested machine's ftrace, told the recording's way (struct
    ht_vcpu_irqs, src/bpf/vcpu_irqs.bpf.h) from KVM's own events: a fixed or
    lowest-priority kvm_apic_accept_irq from a thread of vm (its tgid, the
    line's record-tgid column) for the APIC id of a vCPU (its kvm_entry's
    vcpu id) is level-triggered, or accepted: timed in one of the thread's
    four slots, scanned in order (overlapped if a slot holds its vector, or
    none is free; a slot a second old or more is stale and gives way),
    delivered at the thread's kvm_entry after kvm_inj_virq of its vector
    (the first slot that holds it), classed by who sent it (its own thread with the timer's vector
    (Linux's 0xec), a vCPU thread, another thread). Per thread: per class
    [count, ns], and accepted, overlapped, stale, level; and the
    injections of a thread's vector before any acceptance of it (an
    interrupt accepted before the trace began). With after and bound 'low'
    each delivery begins at the second instance's time of its acceptance
    and ends at the first's of its entry; 'high' the reverse."""
    lines = open(path, errors='replace').readlines()
    vcpu_of = {}
    for i, pid, _, _, ts, name, rest in ftrace_events(path):
        if name == 'kvm_entry' and pid in tids:
            mm = re.search(r'vcpu (\d+)', rest)
            if mm:
                vcpu_of[int(mm.group(1))] = pid
    res = {t: dict({c: [0, 0] for c in IRQ_CLASSES}, accepted=0, overlapped=0, stale=0, level=0, before=0) for t in tids}
    slots, injected, seen = {t: [None] * 4 for t in tids}, {}, set()
    for i, pid, _, _, ts, name, rest in ftrace_events(path):
        begin, end = bracket(path, tids, after, bound, i, pid, ts, name, rest)
        if name == 'kvm_apic_accept_irq':
            mm = re.match(r'apicid (\w+) vec (\d+) \((\w+)\|(\w+)\)', rest)
            tg = FTRACE_TGID.match(lines[i])
            target = vcpu_of.get(int(mm.group(1), 16))
            if mm.group(3) not in ('Fixed', 'LowPrio') or not tg or tg.group(1) != str(vm) or target is None:
                continue
            r = res[target]
            if mm.group(4) == 'level':
                r['level'] += 1
                continue
            r['accepted'] += 1
            seen.add(target)
            vec = int(mm.group(2))
            cls = 'device' if pid not in tids else 'timer' if pid == target and vec == timer_vector else 'ipi'
            sl, free, over = slots[target], None, False
            for k in range(4):
                if sl[k] is None:
                    free = k if free is None else free
                    continue
                stale = ts - sl[k][3] >= 10 ** 9
                if not stale and sl[k][1] == vec:
                    over = True
                    break
                if stale:
                    r['stale'] += 1
                    sl[k] = None
                    free = k if free is None else free
            if over or free is None:
                r['overlapped'] += 1
                continue
            sl[free] = (begin, vec, cls, ts)
        elif name == 'kvm_inj_virq' and pid in tids:
            mm = re.search(r'(?:irq|IRQ) (0x[0-9a-fA-F]+|\d+)', rest)
            vec = int(mm.group(1), 0) if mm else None
            k = next((k for k, x in enumerate(slots[pid]) if x and x[1] == vec), None)
            if k is not None:
                injected[pid] = k
            elif mm and pid not in seen:
                res[pid]['before'] += 1
        elif name == 'kvm_entry' and pid in injected:
            k = injected.pop(pid)
            a, _, cls, _ = slots[pid][k]
            slots[pid][k] = None
            res[pid][cls][0] += 1
            res[pid][cls][1] += end - a
    return res
# The interrupts delivered to the vCPU threads (record --exits, struct
# ht_vcpu_irqs) between the two stops, against the same told from the
# nested machine's ftrace (ftrace_irqs): per thread the same acceptances,
# overlapped, stale and level-triggered ones, and per class the same
# deliveries, exactly; their time within the bracket of the two trace
# instances (as the wake-ups'), give or take 1 us a delivery. An interrupt
# accepted before the trace began and delivered in it is the recording's
# alone: the stop (SIGSTOP) came between its acceptance and its entry (a
# signal pending makes KVM leave for user space with the interrupt
# accepted), and the thread injected it after the continue, in the trace,
# with no acceptance there. Such ones are told by their own records
# (report --latency --csv: accepted before the first stopped block's
# read, entered after it) and left out of the recording's side; the
# ftrace's injections before any acceptance of their thread are shown
# beside. A recorder that timed such a delivery from anything else than
# its acceptance would not be left out, and fails the counts.
try:
    ib = eb.irqs
    if not ib or any(t not in ib[first_stop] or t not in ib[-1] for t in tids):
        raise ValueError('no interrupts in the thread records (format version %d)' % eb.version)
    stop_ns, carried = eb.times[first_stop], {t: {c: [0, 0, 0, 0] for c in IRQ_CLASSES} for t in tids}
    for r in csv.DictReader(open(sys.argv[5], newline='')):
        t = int(r['host_tid'])
        if r['kind'] == 'irq' and t in carried and int(r['wake_ns']) < stop_ns < int(r['entry_ns']):
            for k, v in enumerate((1, int(r['total_ns']), int(r['wait_ns']), int(r['woken_ns']))):
                carried[t][r['class']][k] += v
    vm = int(open(F + '/st.qpid').read())
    fi = ftrace_irqs(F + '/st.ftrace', tids, vm)
    after = ftrace_after_times(F + '/st.ftrace', F + '/st.ftrace_after', tids)
    low, high = (ftrace_irqs(F + '/st.ftrace', tids, vm, after=after, bound=b) for b in ('low', 'high'))
    bad, parts = [], []
    for t in tids:
        a, z = ib[first_stop][t], ib[-1][t]
        for k in ('accepted', 'overlapped', 'stale', 'level'):
            if z[k] - a[k] != fi[t][k]:
                bad.append('tid %d: %s %d, ftrace %d' % (t, k, z[k] - a[k], fi[t][k]))
        for c in IRQ_CLASSES:
            cn, cns, cwait, cwoken = carried[t][c]
            n, ns = z[c][0] - a[c][0] - cn, z[c][1] - a[c][1] - cns
            parts.append('tid %d %s %d (ftrace %d) %.3f ms (ftrace %.3f-%.3f)%s' %
                         (t, c, n, fi[t][c][0], ns / 1e6, low[t][c][1] / 1e6, high[t][c][1] / 1e6,
                          ' + %d accepted before the trace, %.3f ms' % (cn, cns / 1e6) if cn else ''))
            if n != fi[t][c][0]:
                bad.append('tid %d: %s %d delivered, ftrace %d' % (t, c, n, fi[t][c][0]))
            elif not low[t][c][1] - 1000 * n <= ns <= high[t][c][1] + 1000 * n:
                bad.append('tid %d: %s %d ns, ftrace %d-%d ns' % (t, c, ns, low[t][c][1], high[t][c][1]))
            if z[c][2] - a[c][2] - cwait + z[c][3] - a[c][3] - cwoken > ns:
                bad.append('tid %d: %s waiting and waking more than the whole' % (t, c))
    if sum(fi[t][c][0] for t in tids for c in ('timer', 'ipi')) < 20:
        bad.append('only %d timer and IPI deliveries' % sum(fi[t][c][0] for t in tids for c in ('timer', 'ipi')))
    if ftrace_lost(F + '/st.ftrace'):
        bad.append('the nested ftrace lost events: no count to compare')
    out.append('IRQS %s %s; injections before any acceptance %s%s' %
               ('bad' if bad else 'ok', '; '.join(parts), {t: fi[t]['before'] for t in tids},
                ': ' + '; '.join(bad) if bad else ''))
except (OSError, KeyError, ValueError, IndexError, TypeError, AttributeError) as e:
    out.append('IRQS bad: the thread records\' interrupts or the ftrace of st: %r' % e)
# The wake-ups of halted vCPU threads (record --exits, struct
# ht_vcpu_wakeups) between the two stops, against the same wake-ups told
# from the nested machine's ftrace (ftrace_wakeups): the same number in
# each class and reblocked, exactly; their time and wait within the
# bracket of the two trace instances (ftrace_after_times: the recorder
# reads its clock between their probes at every event), give or take 1 us
# an interval (ftrace's text shows microseconds) and 0.01% (its clock is
# the scheduler's, the recorder's the monotonic one). The bracket's width
# is the time between the probes: the recorder's handlers, and the pauses
# of the emulated machine there.
try:
    if not wblocks or any(t not in wblocks[first_stop] or t not in wblocks[-1] for t in tids):
        raise ValueError('no wake-ups in the thread records (format version %d)' % eb.version)
    wf, wl = wblocks[first_stop], wblocks[-1]
    fres, freb = ftrace_wakeups(F + '/st.ftrace', tids)
    after = ftrace_after_times(F + '/st.ftrace', F + '/st.ftrace_after', tids)
    low, high = (ftrace_wakeups(F + '/st.ftrace', tids, after=after, bound=b)[0] for b in ('low', 'high'))
    flost = ftrace_halts(F + '/st.ftrace', tids)[5]
    bad, parts = [], []
    reb = sum(wl[t]['reblocked'] - wf[t]['reblocked'] for t in tids)
    for c in WAKE_CLASSES:
        ours = [sum(wl[t][c][k] - wf[t][c][k] for t in tids) for k in range(3)]
        theirs = fres[c]
        parts.append('%s %d (ftrace %d) %.3f ms (ftrace %.3f-%.3f) waiting %.3f ms (ftrace %.3f-%.3f)' %
                     (c, ours[0], theirs[0], ours[1] / 1e6, low[c][1] / 1e6, high[c][1] / 1e6,
                      ours[2] / 1e6, low[c][2] / 1e6, high[c][2] / 1e6))
        if ours[0] != theirs[0]:
            bad.append('%s: %d wake-ups, ftrace %d' % (c, ours[0], theirs[0]))
        for k, what in ((1, 'time'), (2, 'wait')):
            slack = 1000 * theirs[0 if k == 1 else 3] + high[c][k] // 10000
            if not low[c][k] - slack <= ours[k] <= high[c][k] + slack:
                bad.append('%s: %s %d ns, ftrace %d-%d ns' % (c, what, ours[k], low[c][k], high[c][k]))
    if reb != freb:
        bad.append('reblocked %d, ftrace %d' % (reb, freb))
    if fres['timer'][0] < 20:
        bad.append('only %d wake-ups for the timer' % fres['timer'][0])
    if flost:
        bad.append('the nested ftrace lost %d events: no count to compare' % flost)
    out.append('WAKEUPS %s %s; reblocked %d (ftrace %d)%s' % ('bad' if bad else 'ok', '; '.join(parts), reb, freb,
                                                             ': ' + '; '.join(bad) if bad else ''))
except (OSError, KeyError, ValueError, IndexError, TypeError, AttributeError) as e:
    out.append('WAKEUPS bad: the thread records\' wake-ups or the ftrace of st: %r' % e)
# The halts (record --exits, struct ht_vcpu_halts) between the two stops,
# against KVM's own statistics of the VM (debugfs, read at each stop) and
# its kvm_vcpu_wakeup events (ftrace): polled is KVM's
# halt_attempted_poll, caught its halt_successful_poll, the slept halts'
# time its halt_poll_fail_ns + halt_wait_ns (each halt's ns is from its
# start to its wake-up: the polling, then the sleep), exactly; the caught
# halts' time is their polling, halt_poll_success_ns, but for a wake-up
# that came after the polling loop and before the sleep (its ns runs on
# to the wake-up): shown. Every halt and every slept one is an event.
# The slept halts' polling is KVM's halt_poll_fail_ns but for a slack per
# halt (exits_blocks.poll_lost_bad), where enough of them polled.
try:
    if not hblocks or any(t not in hblocks[first_stop] or t not in hblocks[-1] for t in tids):
        raise ValueError('no halts in the thread records (format version %d)' % eb.version)
    hf, hl = hblocks[first_stop], hblocks[-1]
    ours = [sum(hl[t][k] - hf[t][k] for t in tids) for k in (0, 1, 2, 3, 4, 5, 7, 8)]
    halts, polled, caught, caught_ns, slept, slept_ns, unknown, slept_poll_ns = ours
    k0, k1 = kvm_halt_stats(F + '/st.kvmhalt0'), kvm_halt_stats(F + '/st.kvmhalt1')
    dk = {s: k1[s] - k0[s] for s in k1}
    fn, fw, fwns, fp, fpns, flost = ftrace_halts(F + '/st.ftrace', tids)
    bad = []
    if halts < 100:
        bad.append('only %d halts' % halts)
    if unknown:
        bad.append('%d halts with the polling unknown' % unknown)
    if polled != dk['halt_attempted_poll']:
        bad.append('polled %d, KVM halt_attempted_poll %d' % (polled, dk['halt_attempted_poll']))
    if caught != dk['halt_successful_poll']:
        bad.append('caught %d, KVM halt_successful_poll %d' % (caught, dk['halt_successful_poll']))
    if slept_ns != dk['halt_poll_fail_ns'] + dk['halt_wait_ns']:
        bad.append('slept %d ns, KVM halt_poll_fail_ns + halt_wait_ns %d' % (slept_ns, dk['halt_poll_fail_ns'] + dk['halt_wait_ns']))
    if flost:
        bad.append('the nested ftrace lost %d events: no count to compare' % flost)
    elif (halts, slept, slept_ns) != (fn, fw, fwns):
        bad.append('halts %d, slept %d (%d ns); kvm_vcpu_wakeup %d, wait %d (%d ns)' % (halts, slept, slept_ns, fn, fw, fwns))
    if caught_ns < dk['halt_poll_success_ns']:
        bad.append('caught %d ns, less than KVM halt_poll_success_ns %d' % (caught_ns, dk['halt_poll_success_ns']))
    # The polling lost: KVM's halt_poll_fail_ns per slept halt that polled, where there were enough to test (the
    # halt polling round tests it where they are many).
    wait_ns = sum(blocks[-1][t][3] - blocks[first_stop][t][3] for t in tids)
    lost_bad = poll_lost_bad('polling lost', slept_poll_ns, dk['halt_poll_fail_ns'], polled - caught, wait_ns)
    if lost_bad and 'nothing tested' not in lost_bad:
        bad.append(lost_bad)
    poll_now = ' '.join('%d' % hl[t][6] for t in tids)
    out.append('HALTS %s %d halts (kvm_vcpu_wakeup %d): %d polled (KVM %d), %d caught (KVM %d), %d slept; slept %.3f s in KVM (KVM polling that failed %.3f s, ours %.6f s, + sleep %.3f s); caught %.6f s (KVM halt_poll_success_ns %.6f s, %+d us over %d caught); halt_poll_ns at the end %s%s' %
               ('bad' if bad else 'ok', halts, fn, polled, dk['halt_attempted_poll'], caught, dk['halt_successful_poll'], slept,
                slept_ns / 1e9, dk['halt_poll_fail_ns'] / 1e9, slept_poll_ns / 1e9, dk['halt_wait_ns'] / 1e9, caught_ns / 1e9,
                dk['halt_poll_success_ns'] / 1e9, (caught_ns - dk['halt_poll_success_ns']) // 1000, caught, poll_now,
                ': ' + '; '.join(bad) if bad else ''))
except (OSError, KeyError, ValueError, IndexError, TypeError) as e:
    out.append('HALTS bad: the thread records\' halts, KVM\'s debugfs statistics or the ftrace of st: %r' % e)
print('\n'.join(out))
PY
)
grep '^INFO' <<<"$verdict" | sed 's/^INFO /  info: /'
v=$(sed -n 's/^IDENTITY //p' <<<"$verdict")
[[ $v == ok* ]] && pass ${CHECK_PREFIX}vcpu_states_add_up_to_the_wall_clock_at_every_block ||
	fail ${CHECK_PREFIX}vcpu_states_add_up_to_the_wall_clock_at_every_block "${v:-$verdict}"
v=$(sed -n 's/^STOPS //p' <<<"$verdict")
[ -z "$v" ] || fail ${CHECK_PREFIX}vcpu_account_stops "$v"
for kind in RUNNABLE WAIT SCHEDCLOCK ONCPU GUEST; do
	n=0
	case $kind in
	RUNNABLE) name=${CHECK_PREFIX}vcpu_on_cpu_and_wait_within_1pct_of_schedstat_run_time_and_run_delay ;;
	WAIT) name=${CHECK_PREFIX}vcpu_wait_within_3pct_of_schedstat_run_delay ;;
	SCHEDCLOCK) name=${CHECK_PREFIX}vcpu_wait_and_run_delay_part_where_the_run_queue_clock_was_held ;;
	ONCPU) name=${CHECK_PREFIX}vcpu_on_cpu_states_above_perf_task_clock_by_at_most_the_switch_ins ;;
	GUEST) name=${CHECK_PREFIX}vcpu_proc_guest_time_is_the_ticks_in_the_kernels_guest_window ;;
	esac
	while read -r k tid ok rest; do
		[ "$k" = $kind ] || continue
		n=$((n + 1))
		echo "  info: vCPU thread $tid: $rest"
		[ "$ok" = ok ] && pass "${name}_$n" || fail "${name}_$n" "$rest"
	done <<<"$verdict"
	[ $n = 2 ] || fail "${name}_threads" "$n vCPU threads compared, want 2: $verdict"
done
v=$(sed -n 's/^STEAL //p' <<<"$verdict")
echo "  info: $v"
[[ $v == ok* ]] && pass ${CHECK_PREFIX}guest_steal_moves_with_the_wait || fail ${CHECK_PREFIX}guest_steal_moves_with_the_wait "${v:-$verdict}"
v=$(sed -n 's/^HALTED //p' <<<"$verdict")
echo "  info: ${v#ok }"
[[ $v == ok* ]] && pass ${CHECK_PREFIX}guest_idle_is_its_halts_and_kvms_hlt_handling ||
	fail ${CHECK_PREFIX}guest_idle_is_its_halts_and_kvms_hlt_handling "${v:-$verdict}"
v=$(sed -n 's/^STOPIDLE //p' <<<"$verdict")
[ -z "$v" ] || echo "  info: $v"
v=$(sed -n 's/^HALTS //p' <<<"$verdict")
echo "  info: ${v#ok }"
sed -n '1,8s/^/  info: report --halts: /p' "$F/st.halts" 2>/dev/null
[[ $v == ok* ]] && pass ${CHECK_PREFIX}halts_polled_caught_and_slept_equal_kvms_own_statistics ||
	fail ${CHECK_PREFIX}halts_polled_caught_and_slept_equal_kvms_own_statistics "${v:-$verdict}"
v=$(sed -n 's/^WAKEUPS //p' <<<"$verdict")
echo "  info: wake-ups: ${v#ok }"
[[ $v == ok* ]] && pass ${CHECK_PREFIX}halt_wake_ups_by_interrupt_class_equal_the_schedulers_and_kvms_events ||
	fail ${CHECK_PREFIX}halt_wake_ups_by_interrupt_class_equal_the_schedulers_and_kvms_events "${v:-$verdict}"
v=$(sed -n 's/^IRQS //p' <<<"$verdict")
echo "  info: interrupts: ${v#ok }"
sed -n '1,12s/^/  info: report --irqs: /p' "$F/st.irqs" 2>/dev/null
[[ $v == ok* ]] && pass ${CHECK_PREFIX}interrupts_from_acceptance_to_entry_equal_kvms_events ||
	fail ${CHECK_PREFIX}interrupts_from_acceptance_to_entry_equal_kvms_events "${v:-$verdict}"

# --- halt polling on and off (kvm.halt_poll_ns; one kernel) -----------------------
# hp's halts from its first stop to its second (kvm.halt_poll_ns 0.2 s) and
# from the second to its end (0), against KVM's own statistics read at the
# stops, exactly as HALTS above: on, the polling caught the timers'
# wake-ups; off, no halt polled and every vCPU ends with halt_poll_ns 0.
# The cut at the second stop (KVM lowers the vCPU's value at its next halt,
# with no event) is tested only if a vCPU held a value there: else the
# check says so and fails.
if [ "$PANIC_BOOT" = 1 ]; then
	if [ "$(rc hp.rc)" != 0 ]; then
		fail ${CHECK_PREFIX}halt_polling_on_catches_off_polls_nothing_as_kvm_counts "record --exits exited with status $(rc hp.rc): $(tail_of "$F/hp.err")"
	else
		v=$(python3 - "$F" "$(dirname "$0")" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
from exits_blocks import ExitsBlocks, HALTS_FIELDS, poll_lost_bad
F = sys.argv[1]
FIELD = {f: i for i, f in enumerate(HALTS_FIELDS)}
def kvm_halt_stats(path):
    return {l.split()[0]: int(l.split()[1]) for l in open(path) if len(l.split()) == 2}
try:
    eb = ExitsBlocks(F + '/hp.htr')
    tids = sorted(eb.halts[-1]) if eb.halts else []
    stops = eb.stops(tids)
    if len(tids) != 2 or len(stops) < 2:
        raise ValueError('%d vCPU threads with halts and %d stops in %d EXITS blocks, want 2 and 2 or more' %
                         (len(tids), len(stops), len(eb.halts)))
    k = [kvm_halt_stats(F + '/hp.kvmhalt%d' % i) for i in range(3)]
    last = len(eb.halts) - 1
    held = [eb.halts[stops[1]][t][FIELD['poll_ns']] for t in tids]
    bad, parts = [], []
    if not any(held):
        bad.append('no vCPU held a halt_poll_ns at the cut (%s): the cut is not tested' % held)
    for name, b0, b1, k0, k1 in (('on', stops[0], stops[1], k[0], k[1]), ('off', stops[1], last, k[1], k[2])):
        d = {f: sum(eb.halts[b1][t][i] - eb.halts[b0][t][i] for t in tids) for f, i in FIELD.items() if f != 'poll_ns'}
        dk = {s: k1[s] - k0[s] for s in k1}
        kslept = dk['halt_poll_fail_ns'] + dk['halt_wait_ns']
        if d['poll_unknown']:
            bad.append('%s: %d halts with the polling unknown' % (name, d['poll_unknown']))
        if (d['polled'], d['caught'], d['slept_ns']) != (dk['halt_attempted_poll'], dk['halt_successful_poll'], kslept):
            bad.append('%s: polled %d, caught %d, slept %d ns; KVM halt_attempted_poll %d, halt_successful_poll %d, halt_poll_fail_ns + halt_wait_ns %d' %
                       (name, d['polled'], d['caught'], d['slept_ns'], dk['halt_attempted_poll'], dk['halt_successful_poll'], kslept))
        if name == 'on' and d['caught'] < 10:
            bad.append('on: the polling caught %d wake-ups of %d halts, want 10 or more' % (d['caught'], d['halts']))
        if name == 'on':
            wait_ns = sum(eb.states[b1][t][3] - eb.states[b0][t][3] for t in tids)
            lost_bad = poll_lost_bad('on', d['slept_poll_ns'], dk['halt_poll_fail_ns'], d['polled'] - d['caught'], wait_ns)
            if lost_bad:
                bad.append(lost_bad)
        elif d['slept_poll_ns'] or dk['halt_poll_fail_ns']:
            bad.append('off: polling lost %d ns, KVM halt_poll_fail_ns %d ns' % (d['slept_poll_ns'], dk['halt_poll_fail_ns']))
        if name == 'off' and (d['polled'] or any(eb.halts[last][t][FIELD['poll_ns']] for t in tids)):
            bad.append('off: %d halts polled, halt_poll_ns at the end %s' %
                       (d['polled'], [eb.halts[last][t][FIELD['poll_ns']] for t in tids]))
        parts.append('%s: %d halts, %d polled (KVM %d), %d caught (KVM %d), %d slept; polling lost %.6f s (KVM halt_poll_fail_ns %.6f s, %+.1f us per slept polled halt)' %
                     (name, d['halts'], d['polled'], dk['halt_attempted_poll'], d['caught'], dk['halt_successful_poll'], d['slept'],
                      d['slept_poll_ns'] / 1e9, dk['halt_poll_fail_ns'] / 1e9,
                      (d['slept_poll_ns'] - dk['halt_poll_fail_ns']) / 1e3 / max(1, d['polled'] - d['caught'])))
    print('%s %s; halt_poll_ns at the cut %s%s' % ('bad' if bad else 'ok', '; '.join(parts), held, ': ' + '; '.join(bad) if bad else ''))
except (OSError, KeyError, ValueError, IndexError) as e:
    print('bad: the halts of hp.htr or KVM\'s statistics at its stops: %r' % e)
PY
)
		echo "  info: halt polling: ${v#ok }"
		sed -n '1,4s/^/  info: report --halts: /p' "$F/hp.halts" 2>/dev/null
		[[ $v == ok* ]] && pass ${CHECK_PREFIX}halt_polling_on_catches_off_polls_nothing_as_kvm_counts ||
			fail ${CHECK_PREFIX}halt_polling_on_catches_off_polls_nothing_as_kvm_counts "$v"
	fi
fi

# --- record --wakeups: each wake-up's record against the halts' histograms ----------
# The records (report --latency --csv) and the thread records' wake-ups
# (report --halts --csv, the final EXITS block) come from the same reads in
# BPF (vcpu_wake_ended): per vCPU thread and class the count, the time,
# the wait and the longest must be equal, so no record was lost or put in
# another class; the recorder's summary says none was lost either. The
# interrupt deliveries' records (format 14): report --latency counts them in
# the file and sets beside them the final EXITS block's count of the
# interrupts it timed; both must equal the recorder's count of the records
# it drained, with none lost.
"$HT_STATIC" report --latency --csv "$F/st.htr" >"$work/st.latency.csv" 2>"$work/st.latency.err"
lrc=$?
"$HT_STATIC" report --latency "$F/st.htr" >"$work/st.latency.txt" 2>>"$work/st.latency.err" || lrc=$?
"$HT_STATIC" report --halts --csv "$F/st.htr" >"$work/st.halts_rows.csv" 2>>"$work/st.latency.err"
v=$(python3 - "$work/st.latency.csv" "$work/st.halts_rows.csv" "$F/st.out" "$work/st.latency.txt" <<'PY'
import csv, re, sys
recs, halts = {}, {}
for r in (r for r in csv.DictReader(open(sys.argv[1], newline='')) if r['kind'] == 'wakeup'):
    k = (int(r['host_tid']), r['class'])
    n, total, wait, mx = recs.get(k, (0, 0, 0, 0))
    t = int(r['total_ns'])
    recs[k] = (n + 1, total + t, wait + int(r['wait_ns']), max(mx, t))
for r in csv.DictReader(open(sys.argv[2], newline='')):
    for c in ('timer', 'vector', 'none'):
        if int(r['wake_' + c]):
            halts[(int(r['tid']), c)] = (int(r['wake_' + c]), int(r['wake_' + c + '_ns']), int(r['wake_' + c + '_wait_ns']),
                                         int(r['wake_' + c + '_max_ns']))
summary = open(sys.argv[3]).read()
m = re.search(r'(\d+) wake-ups of halted vCPUs and (\d+) interrupt deliveries \(report --latency\); (\d+) lost', summary)
bad = ['%s: records %s, halts %s' % (k, recs.get(k), halts.get(k)) for k in sorted(set(recs) | set(halts)) if recs.get(k) != halts.get(k)]
if not m or int(m.group(3)) or int(m.group(1)) != sum(v[0] for v in recs.values()):
    bad.append('the recorder\'s summary: %r' % (m.group(0) if m else 'no wake-up line'))
d = re.search(r'^(\d+) interrupt deliveries in the file, of (\d+) the recording counted', open(sys.argv[4]).read(), re.M)
if not d or not m or not int(d.group(1)) or len({int(d.group(1)), int(d.group(2)), int(m.group(2))}) != 1:
    bad.append('interrupt deliveries: file/EXITS %s, drained %s' % (d.groups() if d else 'no line', m.group(2) if m else '?'))
n = sum(v[0] for v in recs.values())
print('%s %d wake-up records in %d (thread, class) groups, each equal to the halts\' count, time, wait and longest; %s interrupt delivery records, as many as the EXITS blocks timed%s' %
      ('bad' if bad or n < 10 else 'ok', n, len(recs), d.group(1) if d else '?', ': ' + '; '.join(bad[:5]) if bad else ''))
PY
)
echo "  info: report --latency: ${v#ok }"
sed -n '/longest wake-ups/,/^$/p' "$F/st.latency" 2>/dev/null | sed -n '1,4s/^/  info: /p'
[ "$lrc" = 0 ] && [[ $v == ok* ]] && pass ${CHECK_PREFIX}wake_up_records_equal_the_halts_and_delivery_records_the_exits_blocks ||
	fail ${CHECK_PREFIX}wake_up_records_equal_the_halts_and_delivery_records_the_exits_blocks "rc $lrc: $(tail_of "$work/st.latency.err") ${v:-}"
# --- the host's part of a guest timer's lateness ------------------------------------
# Each sample of the guest's timer program (a0 0x1d1f8 idle, 0x1d1f9 beside a
# hog) is a hypercall carrying its deadline (a2) and how late its sleep
# ended (a1), on the guest's clock. The guest's clock on the host's: each
# sample's exit is its wake (deadline + lateness) plus the few instructions
# to the hypercall, so the least exit - deadline - lateness over all
# samples is the offset (a clock pair per sample; its spread is shown).
# The host's part of a sample: from its deadline (or the wake-up, if that
# came later) to the first entry after it, the end of the vCPU's wake-up
# from its halt (the last wake-up record ending between the deadline and
# the sample): the wait for a host CPU and KVM's way in. It must be no
# more than the lateness (+ 6 us: KVM's hrtimer may fire up to
# lapic_timer_advance_ns, at most 5 us, before the deadline), for every
# sample whose deadline found its vCPU halted (at least 20 over both
# rounds and 5 in each: a starved emulator wakes the guest so late that it
# may not have halted by its next deadline; beside two other CPU-bound
# loads on a two-CPU host, lateness p50 130-290 ms, 3 to 29 of 80 halted
# while the program slept to deadlines it had already passed, against
# 52-94% on a quieter host; it now sleeps a period from such a late wake);
# the rest of the lateness is the guest's own share (its interrupt, its
# scheduler), measured. A recorder that put the entry late, or the clocks
# apart, fails it. The waits beside the hog are shown, not compared: the
# scheduler lets a vCPU thread that slept preempt a CPU hog at its wake-up
# (its sleeper's credit), so the hog lengthens the wait little, while a
# pause of QEMU on the host, which the emulated machine's clock runs
# through, lands in either round (beside another nested suite the idle
# round's waits were the longer once).
# The same wake-ups' timer due times (KVM's hrtimer expiry): the guest's
# deadline on the host's clock less one constant, the offset's error (the
# least time from a wake to its hypercall) and KVM's timer advance (up to
# 5 us), so each one is within 6 us of their median, which lies between 0
# and the clock pairs' spread + 6 us. One after that band is a later
# timer's (the sample's own expiry woke nothing that ran: in CI beside other
# load, 2 of 132, 24 us and 20 ms after): the guest cannot have run its
# program before it, so its lateness must cover that; one before it is an
# earlier guest timer whose wake-up the host made so late (firing
# it, or in its wait for a CPU) that it ended after the sample's deadline
# (shown with the host's lateness in firing it). Nine in ten halted
# samples' wake-ups must carry one, and half of them (20 at least) be in
# the band (a due time taken from the wake-up itself leaves 11 of 155
# there). Measured on 6.1: 156 of 157, 159 of 159 and 159 of 159, 153 to
# 156 of them within 0.7-1.7 us of each other (Debian 13's 6.12: 145 of
# 151 within 2.1 us).
"$HT_STATIC" report --csv "$F/st.htr" >"$work/st.timer.csv" 2>>"$work/st.latency.err"
v=$(python3 - "$work/st.timer.csv" "$work/st.latency.csv" <<'PY'
import csv, sys
samples = {0x1d1f8: [], 0x1d1f9: []}
for r in csv.DictReader(open(sys.argv[1], newline='')):
    a0 = int(r['a0'], 16)
    if a0 in samples:
        samples[a0].append((int(r['exit_ns']), int(r['host_tid']), int(r['a1'], 16), int(r['a2'], 16)))
wakes = {}
for r in (r for r in csv.DictReader(open(sys.argv[2], newline='')) if r['kind'] == 'wakeup'):
    wakes.setdefault(int(r['host_tid']), []).append((int(r['entry_ns']), int(r['wake_ns']), int(r['wait_ns']), r['class'],
                                                     int(r['due_ns'] or 0)))
def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p / 100 * len(v)))] if v else 0
every = [s for ss in samples.values() for s in ss]
offset = min(at - due - late for at, _, late, due in every) if every else 0
spread = pct([at - due - late - offset for at, _, late, due in every], 99)
bad, res, dues = [], {}, []
for a0, ss in samples.items():
    ss.sort()
    halted, own, waits, early = 0, [], [], 0
    for at, tid, late, due in ss:
        due_host = due + offset
        ends = [w for w in wakes.get(tid, []) if due_host - 6000 < w[0] < at]
        if not ends:
            continue  # running, or polling caught it: no wake-up from a sleep
        entry, wake, wait, cls, due_ns = ends[0]
        halted += 1
        if due_ns:
            dues.append((due_host - due_ns, wake - due_ns, at, late))
        early += wake < due_host - 6000
        part = entry - max(wake, due_host)
        if part > late + 6000:
            bad.append('sample at %d (%s): deadline to entry %d ns (wait %d) > its lateness %d ns + 6 us' % (at, cls, part, wait, late))
        own.append(late - part)
        waits.append(min(wait, part))
    res[a0] = (len(ss), halted, own, waits, [s[2] for s in ss], early)
    if len(ss) != 80 or halted < 5:
        bad.append('round 0x%x: %d samples of 80, %d whose deadline found the vCPU halted (want 5 or more)' % (a0, len(ss), halted))
idle, hog = res[0x1d1f8], res[0x1d1f9]
if idle[1] + hog[1] < 20:
    bad.append('%d samples whose deadline found the vCPU halted in both rounds (want 20 or more)' % (idle[1] + hog[1]))
# The timer's due time of each such wake-up against the sample's deadline (see above).
c = pct([d for d, _, _, _ in dues], 50)
own = [d for d, _, _, _ in dues if abs(d - c) <= 6000]
earlier = [(d - c, late) for d, late, _, _ in dues if d - c > 6000]
later = [(c - d, late) for d, _, _, late in dues if c - d > 6000]
due_bad = ['sample at %d: its wake-up\'s timer due %.1f us after the deadline band, more than the guest\'s lateness %.1f us' %
           (at, (c - d) / 1e3, late / 1e3) for d, _, at, late in dues if c - d > 6000 and -d > late]
halted_all = idle[1] + hog[1]
if len(dues) < halted_all * 9 // 10 or len(own) < max(20, halted_all // 2) or not -1000 <= c <= spread + 6000:
    due_bad.append('%d of %d halted samples\' wake-ups have a due time, %d in the band, offset %.1f us (want 0 to the spread + 6 us)' %
                   (len(dues), halted_all, len(own), c / 1e3))
print('%s the clock pairs\' spread p99 %.1f us; %s' % ('bad' if bad else 'ok', spread / 1e3, '; '.join(
    '%s: %d samples, %d whose deadline found the vCPU halted (%d already woken by an earlier interrupt); lateness p50 %.0f us p99 %.0f us; the host\'s wait p50 %.0f us p99 %.0f us (%.1f ms in all); the guest\'s own share p50 %.0f us p99 %.0f us min %.1f us' %
    (n, r[0], r[1], r[5], pct(r[4], 50) / 1e3, pct(r[4], 99) / 1e3, pct(r[3], 50) / 1e3, pct(r[3], 99) / 1e3, sum(r[3]) / 1e6,
     pct(r[2], 50) / 1e3, pct(r[2], 99) / 1e3, min(r[2] or [0]) / 1e3) for n, r in (('idle', idle), ('beside a hog', hog))) +
    (': ' + '; '.join(bad[:5]) if bad else '')))
print('%s %d of %d halted samples\' wake-ups carry their timer\'s due time; %d of them due at the guest\'s deadline less %.1f us (the clock pairs\' offset error and KVM\'s timer advance), within %.1f us of each other; %d due earlier, a guest timer before the sample\'s whose wake-up the host made late past its deadline (before the band by, and the host\'s lateness, in ms: %s); %d due later, within the guest\'s own lateness (after the band by, and the lateness, in ms: %s)%s' %
      ('bad' if due_bad else 'ok', len(dues), halted_all, len(own), c / 1e3, (max(own or [0]) - min(own or [0])) / 1e3,
       len(earlier), ', '.join('%.2f %.2f' % (e / 1e6, l / 1e6) for e, l in earlier[:6]), len(later),
       ', '.join('%.2f %.2f' % (e / 1e6, l / 1e6) for e, l in later[:6]), ': ' + '; '.join(due_bad[:5]) if due_bad else ''))
# The delivery of each sample's timer interrupt (the first of the thread's
# timer deliveries entered after its deadline, halted or not): its due time
# is the same expiry's, so the same deadline less the same constant (the
# band above), never after its acceptance; where the sample's wake-up from
# a halt carries one too, both are the one expiry that woke it: equal.
irqs = {}
for r in (r for r in csv.DictReader(open(sys.argv[2], newline='')) if r['kind'] == 'irq' and r['class'] == 'timer'):
    irqs.setdefault(int(r['host_tid']), []).append((int(r['entry_ns']), int(r['wake_ns']), int(r['due_ns'] or 0)))
delivered, idues, both, irq_bad = 0, [], 0, []
for at, tid, late, due in every:
    due_host = due + offset
    ds = sorted(x for x in irqs.get(tid, []) if due_host - 6000 < x[0] < at)
    if not ds:
        continue
    entry, accept, due_ns = ds[0]
    delivered += 1
    if not due_ns:
        continue
    idues.append(due_host - due_ns)
    if due_ns > accept:
        irq_bad.append('sample at %d: its timer due %d ns after the acceptance' % (at, due_ns - accept))
    ends = [w for w in wakes.get(tid, []) if due_host - 6000 < w[0] < at]
    if ends and ends[0][0] == entry and ends[0][4]:
        both += 1
        if ends[0][4] != due_ns:
            irq_bad.append('sample at %d: the delivery due at %d, its wake-up at %d' % (at, due_ns, ends[0][4]))
in_band = [d for d in idues if abs(d - c) <= 6000]
if len(idues) < delivered * 9 // 10 or len(in_band) < max(20, len(idues) // 2):
    irq_bad.append('%d of %d samples\' timer deliveries have a due time, %d in the band' % (len(idues), delivered, len(in_band)))
print('%s %d of %d samples\' timer interrupt deliveries carry their timer\'s due time, %d in the wake-ups\' band (due at the deadline less %.1f us, within 6 us), %d outside it (off by, in ms: %s); %d of them also the sample\'s wake-up\'s, all equal to it%s' %
      ('bad' if irq_bad else 'ok', len(idues), delivered, len(in_band), c / 1e3, len(idues) - len(in_band),
       ', '.join('%.2f' % ((d - c) / 1e6) for d in [d for d in idues if abs(d - c) > 6000][:6]),
       both, ': ' + '; '.join(irq_bad[:5]) if irq_bad else ''))
PY
)
vdue=$(sed -n 2p <<<"$v")
virqdue=$(sed -n 3p <<<"$v")
v=$(sed -n 1p <<<"$v")
echo "  info: timer lateness: ${v#ok }"
echo "  info: timer due times: ${vdue#ok }"
[[ $vdue == ok* ]] && pass ${CHECK_PREFIX}timer_wake_ups_carry_the_guests_deadline_as_their_due_time ||
	fail ${CHECK_PREFIX}timer_wake_ups_carry_the_guests_deadline_as_their_due_time "${vdue:-no verdict}"
echo "  info: timer interrupts' due times: ${virqdue#ok }"
[[ $virqdue == ok* ]] && pass ${CHECK_PREFIX}timer_interrupts_carry_the_guests_deadline_as_their_due_time ||
	fail ${CHECK_PREFIX}timer_interrupts_carry_the_guests_deadline_as_their_due_time "${virqdue:-no verdict}"
# The same recording's thread records hold each vCPU thread's timer
# wake-ups from their due time (struct ht_vcpu_timer_due: what top's DUE99,
# the metrics and report --halts show). They are the wake-up records of
# class timer that carry a due time, counted as they end: per thread the
# same count, the same sum from due to entry and of the wait, and of the
# firing (due to wake-up), exactly, when no wake-up record was lost. A
# recorder that counted another wake-up's due time, or timed the
# histogram from anything else than the due time, fails it; the due time
# itself is proven against the guest's deadlines above.
vhist=$(python3 - "$F/st.htr" "$work/st.latency.csv" "$(dirname "$0")" "$F/st.out" <<'PY'
import csv, re, sys
sys.path.insert(0, sys.argv[3])
from exits_blocks import ExitsBlocks
eb = ExitsBlocks(sys.argv[1])
want = {}
for r in csv.DictReader(open(sys.argv[2], newline='')):
    if r['kind'] != 'wakeup' or r['class'] != 'timer' or not int(r['due_ns'] or 0):
        continue
    due, wake, entry, wait = int(r['due_ns']), int(r['wake_ns']), int(r['entry_ns']), int(r['wait_ns'])
    total = max(entry - due, 0)
    w = want.setdefault(int(r['host_tid']), [0, 0, 0, 0])
    for k, v in enumerate((1, total, wait, min(wake - due, total))):
        w[k] += v
last = eb.dues[-1] if eb.dues else {}
bad = []
# Records lost to a full ring (the summary's count, wake-ups and deliveries together): then each sum at least the records'.
m = re.search(r'interrupt deliveries \(report --latency\); (\d+) lost', open(sys.argv[4], errors='replace').read())
lost = int(m.group(1)) if m else None
if lost is None:
    bad.append('no summary of the wake-up records in the recorder\'s output')
for t in sorted(set(want) | set(t for t, d in last.items() if d[0])):
    n, total, wait, fire, _ = last.get(t, (0, 0, 0, 0, 0))
    have, rec = [n, total, wait, fire], want.get(t, [0, 0, 0, 0])
    if have != rec if not lost else any(h < r for h, r in zip(have, rec)):
        bad.append('tid %d: %d timer wake-ups from their due time, %d ns, %d waiting, %d firing; its records %s' %
                   (t, n, total, wait, fire, want.get(t)))
count = sum(w[0] for w in want.values())
if count < 20:
    bad.append('only %d timer wake-up records with a due time' % count)
print('%s %d timer wake-ups from their due time in %d threads\' records, %.1f ms in all, %.1f ms of it firing (%s records lost)%s' %
      ('bad' if bad else 'ok', count, len(want), sum(w[1] for w in want.values()) / 1e6,
       sum(w[3] for w in want.values()) / 1e6, lost, ': ' + '; '.join(bad[:4]) if bad else ''))
PY
)
echo "  info: timer due histograms: ${vhist#ok }"
[[ $vhist == ok* ]] && pass ${CHECK_PREFIX}thread_records_count_the_timer_wake_ups_from_their_due_time ||
	fail ${CHECK_PREFIX}thread_records_count_the_timer_wake_ups_from_their_due_time "${vhist:-no verdict}"
[[ $v == ok* ]] && pass ${CHECK_PREFIX}guest_timer_lateness_holds_the_hosts_part_of_each_wake_up ||
	fail ${CHECK_PREFIX}guest_timer_lateness_holds_the_hosts_part_of_each_wake_up "${v:-no verdict}"
if grep -q '^  vCPU 1 (CPU 1/KVM' "$F/st.time" 2>/dev/null; then
	pass ${CHECK_PREFIX}report_vcpu_time_names_each_vcpu
else
	fail ${CHECK_PREFIX}report_vcpu_time_names_each_vcpu "$(head -20 "$F/st.time" 2>&1)"
fi

# --- record --vcpu-sched: the switch records against the EXITS blocks' counters ------
# ex (one vCPU, stopped and continued) and st (two vCPUs and a hog on one CPU:
# preempted and blocked) were recorded with --vcpu-sched. The counters of
# each vCPU thread (preempt_count/_ns, voluntary_count/_ns of the final
# EXITS block) come from the same clock reads in BPF as the switch records
# (src/bpf/exits.bpf.h, vcpu_switch), so they must equal exactly what the
# records say, read back by report --vcpu-switches --csv:
#  - a count is the number of switch-outs of its kind (involuntary or not):
#    each one counted is recorded, and none is counted but not recorded;
#  - a time is the sum, over switch-outs of its kind that a switch-in of the
#    same thread follows, of in time - out time. A switch-out at the end of
#    the recording (no in) counts, its time does not.
#  - a thread's records alternate out, in, out...: it has its vcpu_thread_table
#    entry (and so its records) from its first kvm_entry (running) or from
#    the switch-out of an open exit (recorded), so its first record is an
#    out; a switch-in before its entry is neither recorded nor counted, nor
#    is a switch-out before it. A switch-in that no out precedes (possible
#    only as a thread's first record) adds nothing and is allowed there.
#  - none lost: the EXITS header's lost_vcpu_switches (offset 40) is 0. A
#    lost switch would leave a count without its record: the comparison
#    would then be void, and it fails saying so.
#  - the recordings trace their VM process from before any switch of it:
#    ex's with --vm while the guest is stopped, st's with -p. (A switch of a
#    process not yet traced, as --vm's of a running VM between the attach
#    and the VM found, is counted in its thread's numbers, not recorded.)
for r in ex st; do
	if ! "$HT_STATIC" report --vcpu-switches --csv "$F/$r.htr" >"$work/$r.switches.csv" 2>"$work/$r.switches.err"; then
		fail "${CHECK_PREFIX}vcpu_sched_report_$r" "report --vcpu-switches --csv failed: $(tail_of "$work/$r.switches.err")"
	fi
done
verdict=$(python3 - "$F" "$work" "$(dirname "$0")" <<'PY'
import csv, struct, sys
sys.path.insert(0, sys.argv[3])
from exits_blocks import ExitsBlocks
F, W = sys.argv[1], sys.argv[2]
def exits_threads(path):
    """The final EXITS state of each vCPU thread, and lost_vcpu_switches of the last block (docs/trace-format.md)."""
    eb = ExitsBlocks(path)
    return eb.switches, eb.lost_switches, eb.final
out = []
for r in ('ex', 'st'):
    try:
        threads, lost, final = exits_threads(F + '/%s.htr' % r)
        rows = list(csv.DictReader(open(W + '/%s.switches.csv' % r, newline='')))
    except (OSError, struct.error, ValueError) as e:
        out.append('SWITCHES %s bad: cannot read the file or its switches: %s' % (r, e))
        continue
    per = {}
    for i, row in enumerate(rows):
        per.setdefault(int(row['host_tid']), []).append((int(row['time_ns']), i, row['switch'], int(row['involuntary'])))
    bad = []
    if not final:
        bad.append('no final EXITS block')
    if lost is None:
        bad.append('no EXITS block')
    elif lost:
        bad.append('%d switches lost (ring full): the records cannot account for every count' % lost)
    if not threads:
        bad.append('no vCPU thread in the EXITS blocks')
    if set(per) != set(threads):
        bad.append('threads with switch records %s, in the EXITS blocks %s' % (sorted(per), sorted(threads)))
    tot = [0, 0, 0, 0]
    for tid in sorted(set(per) | set(threads)):
        seq = sorted(per.get(tid, []))
        want = [0, 0, 0, 0]  # preempt count, ns, voluntary count, ns, from the records
        prev, unpaired_in, repeats = None, 0, 0
        for k, (t, _, kind, invol) in enumerate(seq):
            if kind == 'out':
                if prev and prev[2] == 'out':
                    repeats += 1
                want[0 if invol else 2] += 1
            elif kind == 'in':
                if prev and prev[2] == 'out':
                    want[1 if prev[3] else 3] += t - prev[0]
                elif k == 0:
                    unpaired_in += 1
                else:
                    repeats += 1
            else:
                bad.append('tid %d: switch %r' % (tid, kind))
            prev = (t, _, kind, invol)
        got = list(threads.get(tid, (0, 0, 0, 0)))
        tot = [a + b for a, b in zip(tot, got)]
        outs, ins = sum(1 for x in seq if x[2] == 'out'), sum(1 for x in seq if x[2] == 'in')
        out.append('INFO %s tid %d: %d switch records (%d out, %d in%s); preempted %d times %.6f s, blocked %d times %.6f s (EXITS block); from the records %d %.6f s, %d %.6f s' %
                   (r, tid, len(seq), outs, ins, ', the first an in' if unpaired_in else '', got[0], got[1] / 1e9, got[2], got[3] / 1e9,
                    want[0], want[1] / 1e9, want[2], want[3] / 1e9))
        if repeats:
            bad.append('tid %d: %d records repeat the kind of the one before (out and in must alternate)' % (tid, repeats))
        if not outs or not ins:
            bad.append('tid %d: %d switch-outs and %d switch-ins recorded' % (tid, outs, ins))
        if got != want:
            bad.append('tid %d: EXITS block preempt %d/%d ns voluntary %d/%d ns, the records say %d/%d ns, %d/%d ns' % tuple([tid] + got + want))
    # The two vCPUs and the hog on one CPU must give both kinds (ex, mostly blocked, may not be preempted).
    if r == 'st' and (not tot[0] or not tot[2]):
        bad.append('st: %d preemptions and %d blocks over its vCPU threads, want both' % (tot[0], tot[2]))
    out.append('SWITCHES %s %s' % (r, 'ok' if not bad else 'bad: ' + '; '.join(bad)))
print('\n'.join(out))
PY
)
grep '^INFO' <<<"$verdict" | sed 's/^INFO /  info: /'
for r in ex st; do
	v=$(sed -n "s/^SWITCHES $r //p" <<<"$verdict")
	[ "$v" = ok ] && pass "${CHECK_PREFIX}vcpu_switch_records_equal_the_exits_counters_$r" ||
		fail "${CHECK_PREFIX}vcpu_switch_records_equal_the_exits_counters_$r" "${v:-$verdict}"
done

# --- the Perfetto export of the account, against the switches it shows ----------------
# convert --perfetto of ex and st, read back as a user of Perfetto would see
# them (tests/export/check_perfetto.py): each vCPU thread's account as
# counter tracks adding up to its time at every EXITS block, their last
# samples equal to report --vcpu-time --csv, and per thread and interval
# the account's wait + halted + blocked equal to the time its off-CPU
# slices cover, to the ns, with one vCPU thread per CPU at a time; and st's
# wake-ups from halts (record --wakeups) as slices equal to report --latency
# --csv, one for one, and its interrupt deliveries the same way.
PROTO=$TOP/third_party/perfetto/perfetto_trace.proto
for r in ex st; do
	if ! command -v protoc >/dev/null || ! /usr/bin/python3 -c 'import google.protobuf' 2>/dev/null; then
		skip "${CHECK_PREFIX}perfetto_account_agrees_with_the_switches_$r" "protobuf-compiler and python3-protobuf are not installed: run 'make deps' as root"
		continue
	fi
	"$HT_STATIC" report --csv "$F/$r.htr" >"$work/$r.records.csv" 2>/dev/null || true
	"$HT_STATIC" report --vcpu-time --csv "$F/$r.htr" >"$work/$r.vcpu-time.csv" 2>/dev/null || true
	# st was recorded with --wakeups: its wake-ups are slices too, report --latency --csv's.
	wake=()
	[ $r = st ] && wake=(--wakeups "$work/st.latency.csv")
	if out=$("$HT_STATIC" convert --perfetto "$work/$r.pftrace" "$F/$r.htr" 2>&1) &&
		out=$(/usr/bin/python3 "$TOP/tests/export/check_perfetto.py" "$PROTO" "$work/$r.pftrace" "$work/$r.records.csv" \
			--switches "$work/$r.switches.csv" --vcpu-time "$work/$r.vcpu-time.csv" ${wake[@]+"${wake[@]}"} \
			--attribute dev.hypertrace.vcpu_switches_recorded=1 2>&1) &&
		grep -q "intervals whose wait+halted+blocked is the off-CPU slices' time (largest difference 0 ns)" <<<"$out" &&
		{ [ $r != st ] || { grep -q "^  wake-ups: [1-9][0-9]* wake-up slices = report --latency --csv" <<<"$out" &&
			grep -q "^  interrupts: [1-9][0-9]* interrupt delivery slices = report --latency --csv" <<<"$out"; }; }; then
		pass "${CHECK_PREFIX}perfetto_account_agrees_with_the_switches_$r"
		grep 'vCPU account\|wake-ups:\|interrupts:' <<<"$out" | sed 's/^ */  info: /'
	else
		fail "${CHECK_PREFIX}perfetto_account_agrees_with_the_switches_$r" "$out"
	fi
done

# --- the causes of exits against perf's counts of their tracepoints ---------------
# Per cause, the exits record counted under it equal what perf stat counted
# of the tracepoint that names it, filtered alike, in the same run:
#  - io: outb to port 0x80 (kvm_pio); QEMU answers in user space, so each
#    also has a time in the VMM;
#  - cpuid: leaf 1 (kvm_cpuid), handled in KVM;
#  - mmio: 32-bit reads of the edu device's BAR 0 (kvm_mmio at its
#    guest-physical address); QEMU answers in user space (a time in the VMM
#    each). KVM fires kvm_mmio twice per read (see the guest script): perf's
#    count of each type must equal the exits. The exits are KVM's for a guest
#    access to a guest-physical address with no memory behind it: NPF (SVM
#    with nested paging), the #PF intercept (SVM with shadow paging, as this
#    machine's kvm_amd npt=0 makes it), EPT misconfig or violation (VMX);
#  - msr: RDMSR of IA32_APICBASE (0x1b) by the guest kernel's msr module
#    (kvm_msr, read), which KVM intercepts and answers itself.
[ "${HT_E2E_SHOW:-0}" = 1 ] && cat "$F/ca.report" "$F/ca.csv" "$F/ca_perf.txt" 2>/dev/null
info_work=$(l2_output "$F/ex.console" ca_work | tr '\n' '|')
echo "  info: the guest's workload: ${info_work:-no output} (status $(l2_status "$F/ex.console" ca_work))"
causes=$(python3 - "$F" <<'PY'
import csv, sys
F = sys.argv[1]
try:
    gpa = int(open(F + '/ca_edu_gpa').read().strip() or 0)
except (OSError, ValueError):
    gpa = 0
# perf stat -x, output: count,unit,event,...; kvm_mmio twice, in the order given (type 0, type 1).
perf = {}
for line in open(F + '/ca_perf.txt'):
    f = line.strip().split(',')
    if len(f) > 2 and f[2].startswith('kvm:') and f[0].isdigit():
        ev = f[2]
        if ev == 'kvm:kvm_mmio':
            ev = 'kvm:kvm_mmio/read_unsatisfied' if ev + '/read_unsatisfied' not in perf else 'kvm:kvm_mmio/read'
        perf[ev] = int(f[0])
# Reasons for a guest access to a guest-physical address without memory:
# SVM NPF 0x400 and the #PF intercept 0x4e; VMX EPT violation 48, misconfig 49.
MMIO_REASONS = {('SVM', 0x400), ('SVM', 0x4e), ('VMX', 48), ('VMX', 49)}
ours = {k: [0, 0, 0, set()] for k in ('io', 'cpuid', 'mmio', 'msr')}  # count, to the VMM, vmm ns, reasons
other = 0
for row in csv.DictReader(open(F + '/ca.csv')):
    kind, value, d = row['cause_kind'], int(row['cause_value']), row['direction']
    if kind == 'io' and value == 0x80 and d == 'out':
        k = 'io'
    elif kind == 'cpuid' and value == 1:
        k = 'cpuid'
    elif kind == 'mmio' and gpa and value == gpa and d == 'read':
        k = 'mmio'
    elif kind == 'msr' and value == 0x1b and d == 'read':
        k = 'msr'
    else:
        other += int(row['count']) if kind == 'other' else 0
        continue
    ours[k][0] += int(row['count'])
    ours[k][1] += int(row['vmm_count'])
    ours[k][2] += int(row['vmm_ns'])
    ours[k][3].add((row['isa'], int(row['exit_reason']), row['reason']))
def reasons(k):
    return '/'.join(sorted(r[2] for r in ours[k][3])) or '-'
out = ['INFO causes: io 0x80 out %d exits (%d to the VMM), cpuid 0x1 %d, mmio 0x%x read %d (%d to the VMM, exit reason %s), '
       'msr 0x1b read %d (exit reason %s); perf stat kvm_pio %s, kvm_cpuid %s, kvm_mmio unsatisfied read %s + read %s, kvm_msr %s; '
       '%d exits of other causes' %
       (ours['io'][0], ours['io'][1], ours['cpuid'][0], gpa, ours['mmio'][0], ours['mmio'][1], reasons('mmio'),
        ours['msr'][0], reasons('msr'), perf.get('kvm:kvm_pio'), perf.get('kvm:kvm_cpuid'),
        perf.get('kvm:kvm_mmio/read_unsatisfied'), perf.get('kvm:kvm_mmio/read'), perf.get('kvm:kvm_msr'), other)]
checks = (('io', ['kvm:kvm_pio'], 2000, True), ('cpuid', ['kvm:kvm_cpuid'], 3000, False),
          ('mmio', ['kvm:kvm_mmio/read_unsatisfied', 'kvm:kvm_mmio/read'], 2000, True), ('msr', ['kvm:kvm_msr'], 2000, False))
for k, evs, least, to_vmm in checks:
    got = ours[k][0]
    bad = []
    if k == 'mmio' and not gpa:
        bad.append('the guest found no edu device (vendor 0x1234, device 0x11e8)')
    for ev in evs:
        want = perf.get(ev)
        if want is None:
            bad.append('perf stat counted no %s (%s)' % (ev, open(F + '/ca_perf.out').read()[-200:]))
        elif got != want:
            bad.append('record counted %d, perf stat %d of %s' % (got, want, ev))
    if got < least:
        bad.append('record counted %d, the workload made %d' % (got, least))
    if to_vmm and (ours[k][1] != got or ours[k][2] <= 0):
        bad.append('%d of %d exits went to the VMM, %d ns in all' % (ours[k][1], got, ours[k][2]))
    if not to_vmm and ours[k][1]:
        bad.append('%d exits went to the VMM: KVM answers these itself' % ours[k][1])
    if k == 'mmio' and any((isa, r) not in MMIO_REASONS for isa, r, _ in ours[k][3]):
        bad.append('exit reasons %s, none of NPF, #PF, EPT violation or misconfig' % reasons(k))
    out.append('CAUSE %s %s' % (k, 'bad: ' + '; '.join(bad) if bad else 'ok'))
print('\n'.join(out))
PY
)
grep '^INFO' <<<"$causes" | sed 's/^INFO /  info: /'
if [ "$(rc ca.rc)" != 0 ]; then
	fail ${CHECK_PREFIX}exit_causes_record "record --exits exited with status $(rc ca.rc): $(tail_of "$F/ca.err")"
fi
for k in io cpuid mmio msr; do
	v=$(sed -n "s/^CAUSE $k //p" <<<"$causes")
	[ "$v" = ok ] && pass "${CHECK_PREFIX}exit_causes_equal_perf_$k" || fail "${CHECK_PREFIX}exit_causes_equal_perf_$k" "${v:-$causes}"
done

# --- a boot's causes: each one its exit can have; the I/O exits keep their ports ---
# The rule of docs/design.md ("Which events are an exit's cause"), written
# out again from its table: every cause of the boot's exits is of a kind
# its exit's reason can have (KVM's own lookups, the CPUID leaf 0 of an
# emulated string I/O instruction, are counted apart). An I/O exit without
# a port is one whose only event was such a lookup (a `rep ins`/`rep outs`
# that moved nothing): no more of them than the lookups counted apart.
[ "${HT_E2E_SHOW:-0}" = 1 ] && cat "$F/boot.causes.txt" 2>/dev/null
boot=$(python3 - "$F" <<'PY'
import csv, re, sys
F = sys.argv[1]
PORT, MMIO, MSR, CPUID, HCALL = 'io', 'mmio', 'msr', 'cpuid', 'hypercall'
EMULATED = {PORT, MMIO, MSR}
ANY = EMULATED | {CPUID, HCALL}
def kinds(isa, reason):
    if isa == 'VMX':
        return {30: {PORT}, 48: {MMIO}, 49: {MMIO}, 44: {MMIO}, 46: {MMIO}, 47: {MMIO}, 31: {MSR}, 32: {MSR},
                10: {CPUID}, 18: {HCALL}, 0: EMULATED, 33: EMULATED | {CPUID}, 77: ANY}.get(reason & 0xffff, set())
    if 0x40 <= reason <= 0x5f:
        return EMULATED
    return {0x7b: {PORT}, 0x400: {MMIO}, 0x402: {MMIO}, 0x7c: {MSR}, 0x72: {CPUID}, 0x81: {HCALL}, 0x403: ANY}.get(reason, set())
def is_io(isa, reason):
    return (isa, reason) in (('SVM', 0x7b), ('VMX', 30))
try:
    exits = list(csv.DictReader(open(F + '/boot.exits.csv')))
    causes = list(csv.DictReader(open(F + '/boot.causes.csv')))
    text = open(F + '/boot.causes.txt').read()
except OSError as e:
    print('FIT bad: %s' % e)
    print('PORTS bad: %s' % e)
    sys.exit(0)
m = re.search(r'^(\d+) seen during an exit, not its cause', text, re.M)
apart = int(m.group(1)) if m else 0
total = sum(int(r['count']) for r in exits)
io = sum(int(r['count']) for r in exits if is_io(r['isa'], int(r['exit_reason'])))
misfit = ['%s %s: %s x%s' % (r['isa'], r['reason'], r['cause'], r['count']) for r in causes
          if r['cause_kind'] != 'other' and r['cause_kind'] not in kinds(r['isa'], int(r['exit_reason']))]
# Under an I/O exit only ports fit: its "other" cause is ports past the 16 named.
ports = sum(int(r['count']) for r in causes
            if is_io(r['isa'], int(r['exit_reason'])) and r['cause_kind'] in (PORT, 'other'))
print('INFO boot: %d exits, %d of them I/O (%d with a port); %d cause rows; %d events seen during exits, not their cause'
      % (total, io, ports, len(causes), apart))
if not total or not io:
    print('FIT bad: the recording has %d exits, %d I/O' % (total, io))
else:
    print('FIT ' + ('bad: ' + '; '.join(misfit) if misfit else 'ok'))
if not io or ports > io or io - ports > apart:
    print('PORTS bad: %d I/O exits, %d with a port, %d events counted apart' % (io, ports, apart))
else:
    print('PORTS ok')
PY
)
grep '^INFO' <<<"$boot" | sed 's/^INFO /  info: /'
if [ "$(rc boot.rc)" != 0 ]; then
	fail ${CHECK_PREFIX}boot_record "record --exits exited with status $(rc boot.rc): $(tail_of "$F/boot.err")"
fi
v=$(sed -n 's/^FIT //p' <<<"$boot")
[ "$v" = ok ] && pass ${CHECK_PREFIX}boot_causes_fit_their_exits || fail ${CHECK_PREFIX}boot_causes_fit_their_exits "${v:-$boot}"
v=$(sed -n 's/^PORTS //p' <<<"$boot")
[ "$v" = ok ] && pass ${CHECK_PREFIX}boot_io_exits_keep_their_ports || fail ${CHECK_PREFIX}boot_io_exits_keep_their_ports "${v:-$boot}"

# --- record --boot: the boot's phases from the host, on the real boot above --------
# Every exit of the VM is a boot record (the --exits counts of the same
# recording, which the records never touch, say how many exits it had);
# the phases come in order, each shown by its exits; the kernel's starts at
# an address of the guest's own kernel text (its kallsyms of this boot).
boot=$(python3 - "$F" <<'PY'
import csv, re, sys
F = sys.argv[1]
def rows(path):
    try:
        return list(csv.DictReader(open(path)))
    except OSError:
        return []
phases = rows(F + '/boot.phases.csv')
exits = rows(F + '/boot.exits.csv')
pids = {r['pid'] for r in phases}
if len(pids) != 1:
    print('PHASES bad: %d VMs in the boot report (want the one guest): %s' % (len(pids), phases))
    sys.exit(0)
pid = pids.pop()
names = [r['phase'] for r in phases]
counted = sum(int(r['count']) for r in exits if r['vm_pid'] == pid)
recorded = sum(int(r['exits']) for r in phases)
syms = {}
for line in open(F + '/boot.kallsyms'):
    a, _, n = line.split()[:3]
    syms[n] = int(a, 16)
print('INFO boot phases: %s' % ', '.join('%s %.3f s (%s exits)' % (r['phase'], int(r['length_ns']) / 1e9, r['exits'])
                                      for r in phases))
bad = []
if names != ['firmware', 'decompressor', 'kernel', 'user space']:
    bad.append('phases %s' % names)
if phases and phases[0]['start_exact'] != '1':
    bad.append('the firmware does not start at the first entry')
for a, b in zip(phases, phases[1:]):
    if int(a['start_from_boot_ns']) + int(a['length_ns']) != int(b['start_from_boot_ns']):
        bad.append('%s does not end where %s starts' % (a['phase'], b['phase']))
if any(int(r['exits']) == 0 for r in phases if r['phase'] != 'user space'):
    bad.append('a phase without exits')
k = [r for r in phases if r['phase'] == 'kernel']
if k and not ('_stext' in syms and '_etext' in syms and syms['_stext'] <= int(k[0]['first_rip'], 16) < syms['_etext']):
    bad.append('the kernel phase starts at %s, outside the guest kernel text %s' % (k[0]['first_rip'], syms))
u = [r for r in phases if r['phase'] == 'user space']
if u and int(u[0]['first_rip'], 16) >= 1 << 47:
    bad.append('user space starts at %s' % u[0]['first_rip'])
print('PHASES ' + ('bad: ' + '; '.join(bad) if bad else 'ok'))
print('EVERY ' + ('ok' if recorded == counted and counted else
                  'bad: %d boot exits recorded, the exit statistics counted %d' % (recorded, counted)))
PY
)
grep '^INFO' <<<"$boot" | sed 's/^INFO /  info: /'
v=$(sed -n 's/^PHASES //p' <<<"$boot")
[ "$v" = ok ] && pass ${CHECK_PREFIX}boot_phases_come_in_order_from_the_first_entry || fail ${CHECK_PREFIX}boot_phases_come_in_order_from_the_first_entry "${v:-$boot} $(tail_of "$F/boot.err")"
v=$(sed -n 's/^EVERY //p' <<<"$boot")
[ "$v" = ok ] && pass ${CHECK_PREFIX}boot_records_every_exit_of_the_booting_vm || fail ${CHECK_PREFIX}boot_records_every_exit_of_the_booting_vm "${v:-$boot}"
if grep -Eq "shown by vCPU 0's exit at 0xffff[0-9a-f]+ (_stext|start_kernel|rest_init|kernel_init)?" "$F/boot.phases.txt" 2>/dev/null; then
	pass ${CHECK_PREFIX}boot_report_names_the_kernels_first_exit
else
	fail ${CHECK_PREFIX}boot_report_names_the_kernels_first_exit "$(grep -E '^  (kernel|decompressor):' "$F/boot.phases.txt" 2>&1 | sed -n 1,3p)"
fi
[ "${HT_E2E_SHOW:-0}" = 1 ] && cat "$F/boot.phases.txt" "$F/panic.txt" 2>/dev/null

# --- the guest's initcalls, from its own boot-time trace, on the host's clock ------------
# Compared with the guest's own record: its trace (read in the guest after
# boottrace ran) and initcall_debug's dmesg lines; and placed against the
# host's phases of the same boot, which know nothing of the guest's clock.
l2_output "$F/ex.console" ex_ftrace >"$work/ic.ftrace"
l2_output "$F/ex.console" ex_dmesg >"$work/ic.dmesg"
l2_output "$F/ex.console" ex_boottrace >"$work/ic.boottrace"
ic=$(python3 - "$F" "$work" "$(dirname "$0")" <<'PY'
import base64, csv, gzip, hashlib, re, sys
F, W = sys.argv[1], sys.argv[2]
sys.path.insert(0, sys.argv[3])
from guest_trace_lines import lines_of
def rows(path):
    try:
        return list(csv.DictReader(open(path)))
    except OSError:
        return []
# The lines as the hypercalls carried them (rebuilt from the raw arguments),
# rendered as the guest rendered its own: "TASK CPU SECS.USECS TEXT".
lines = lines_of(F + '/boot.lines.csv')
rendered = []
for l in lines:
    t = l['text'][:l['len']].decode('latin-1')
    if re.match(r'initcall_(level|start|finish): ', t):
        rendered.append((l, '%d %03d %d.%06d %s' % (l['pid'], l['cpu'], l['ns'] // 10**9, l['ns'] % 10**9 // 1000, t)))
digest = hashlib.md5(''.join(x[1] + '\n' for x in rendered).encode('latin-1')).hexdigest()
m = re.search(r'FTSUM (\d+) ([0-9a-f]{32})', open(W + '/ic.ftrace').read())
print('INFO guest trace: its %s initcall lines digest %s; the host carried %d, digest %s' %
      (m and m.group(1), m and m.group(2), len(rendered), digest))
print('CARRIED ' + ('ok' if m and int(m.group(1)) == len(rendered) and m.group(2) == digest and len(rendered) > 200 else
                    'bad: the guest has %s lines (%s), the host %d (%s)' % (m and m.group(1), m and m.group(2), len(rendered), digest)))
# The guest's levels and initcalls, from those lines: a level's initcalls are its task's up to the next level.
levels, calls, open_ = [], [], {}
for l, x in rendered:
    pid, _, _, ev, f = x.split(' ', 4)
    t = l['ns']
    if ev == 'initcall_level:':
        levels.append([f.split('=', 1)[1], t, t, 0, pid])
    elif ev == 'initcall_start:':
        name = f.split('=', 1)[1].split('+')[0].split(' ')[0]
        lv = len(levels) - 1 if levels and levels[-1][4] == pid and ' [' not in f else None
        calls.append([name, t, None, lv])
        open_[pid] = len(calls) - 1
        if lv is not None:
            levels[lv][3] += 1
    elif ev == 'initcall_finish:' and pid in open_:
        calls[open_.pop(pid)][2] = t
for a, b in zip(levels, levels[1:]):
    a[2] = b[1]
if levels:
    levels[-1][2] = max([c[2] for c in calls if c[2] and c[3] == len(levels) - 1] + [levels[-1][1]])
csvrows = rows(F + '/boot.initcalls.csv')
hlevels = [r for r in csvrows if r['kind'] == 'level']
hcalls = [r for r in csvrows if r['kind'] == 'initcall']
text = open(F + '/boot.initcalls.txt').read() if csvrows else ''
m = re.search(r'clock: (\d+) pairs, (\d+) used, (\d+) refused .*rate ([-+][\d.]+) ppm.*residual p50 ([\d.]+) us, p99 ([\d.]+) us, max ([\d.]+) us', text)
ppm = float(m.group(4)) if m else 0.0
print('INFO guest initcalls: the guest traced %d in %d levels, the host has %d in %d levels; %s' %
      (len(calls), len(levels), len(hcalls), len(hlevels), open(W + '/ic.boottrace').read().strip()))
if m:
    print('INFO guest trace clock: %s pairs, %s used, %s refused, rate %s ppm, residual p50 %s us, p99 %s us, max %s us' % m.groups())
bad = []
# Every initcall, in order, same name, same length (the guest's own, as printed).
if len(calls) < 100 or len(hcalls) != len(calls):
    bad.append('%d initcalls on the host, %d in the guest trace' % (len(hcalls), len(calls)))
for g, h in zip(calls, hcalls):
    if g[0] != h['name'] or str(g[1]) != h['guest_start_ns'] or (g[2] is not None and str(g[2] - g[1]) != h['guest_length_ns']):
        bad.append('guest %s at %d (%s ns) against host %s at %s (%s ns)' % (g[0], g[1], g[2] and g[2] - g[1], h['name'], h['guest_start_ns'], h['guest_length_ns']))
        break
print('ORDER ' + ('bad: ' + '; '.join(bad) if bad else 'ok'))
# Lengths on the host's clock: the guest's times the fitted rate; levels as the guest's.
bad = []
if not m or int(m.group(2)) < 10:
    fit = re.search(r'clock: .*\n.*', text)
    bad.append('no clock fit: %s' % (fit.group(0) if fit else text[:400]))
for h in hcalls:
    if h['guest_length_ns'] and h['length_ns']:
        want = int(h['guest_length_ns']) * (1 + ppm / 1e6)
        if abs(int(h['length_ns']) - want) > 2 + int(h['guest_length_ns']) * 0.0005e-6:
            bad.append('%s: %s ns on the host, the guest %s ns at %+.3f ppm' % (h['name'], h['length_ns'], h['guest_length_ns'], ppm))
            break
want_levels = [(l[0], l[2] - l[1], l[3]) for l in levels]
got_levels = [(h['name'], int(h['guest_length_ns']), int(h['initcalls'])) for h in hlevels]
if want_levels != got_levels:
    bad.append('levels: guest %s, host %s' % (want_levels, got_levels))
if len(levels) < 8:
    bad.append('%d levels in the guest trace' % len(levels))
print('LENGTHS ' + ('bad: ' + '; '.join(bad) if bad else 'ok'))
# initcall_debug, in the order of the returns: "NAME RET USECS", and where local_clock was marked stable.
try:
    dm = gzip.decompress(base64.b64decode(''.join(open(W + '/ic.dmesg').read().split()))).decode('latin-1').splitlines()
except Exception as e:
    dm = ['undecodable: %s' % e]
# Its usecs are not the trace's clock: ktime_get() or local_clock() by
# kernel version, coarse until the clocksource or sched_clock settles (0
# usecs for milliseconds early in boot), read after its own "calling"
# print, which the trace's interval holds. So names and return values are
# compared, each; lengths are shown, from where dmesg says the clock was
# marked stable (the initcall that marks it spans the change).
rets, stable_at, marked = [], None, False
for x in dm:
    if x == 'sched_clock: Marking stable':
        marked = True
    elif x.count(' ') == 2:
        rets.append(x.split(' '))
        if marked and stable_at is None:
            stable_at = len(rets)
ends = sorted((h for h in hcalls if h['length_ns']), key=lambda h: int(h['guest_start_ns']) + int(h['guest_length_ns']))
bad, named, gaps = [], 0, []
if len(rets) != len(ends) or len(rets) < 100:
    bad.append('%d initcall_debug lines, %d initcalls with their return on the host' % (len(rets), len(ends)))
for i, ((name, ret, us), h) in enumerate(zip(rets, ends)):
    # A module's init is freed once it ran: the trace, printed later, shows its address.
    if not h['name'].startswith('0x'):
        named += 1
        if name != h['name']:
            bad.append('initcall_debug says %s where the host has %s' % (name, h['name']))
            break
    if ret != h['ret']:
        bad.append('%s returned %s, the host says %s' % (name, ret, h['ret']))
        break
    if stable_at is not None and i >= stable_at:
        gaps.append(int(h['length_ns']) - int(us) * 1000)
gaps.sort()
print('INFO initcall_debug against the host: %d lines, %d names and every return value equal; %s' %
      (len(rets), named, '%d lengths after the clock was marked stable: host length - usecs p50 %d ns, min %d ns, max %d ns' %
       (len(gaps), gaps[len(gaps) // 2], gaps[0], gaps[-1]) if gaps else 'no length compared (no clock marked stable)'))
print('DEBUG ' + ('bad: ' + '; '.join(bad) if bad else 'ok'))
# Against the host's own phases of this boot: the levels run inside the kernel phase, before user space.
phases = {r['phase']: r for r in rows(F + '/boot.phases.csv')}
bad = []
if hlevels and 'kernel' in phases and 'user space' in phases:
    k, u = phases['kernel'], phases['user space']
    first, last = int(hlevels[0]['start_ns']), int(hlevels[-1]['start_ns']) + int(hlevels[-1]['length_ns'])
    k0 = int(k['start_ns']) - int(k['start_uncertainty_ns'])
    u0 = int(u['start_ns'])
    print('INFO initcall levels on the host: the first %.6f s after the kernel phase starts, the last ends %.6f s before user space' %
          ((first - int(k['start_ns'])) / 1e9, (u0 - last) / 1e9))
    if first < k0 - 1000000 or last > u0 + 1000000:
        bad.append('levels from %d to %d ns, the kernel phase from %d (uncertain from %d), user space from %d' % (first, last, int(k['start_ns']), k0, u0))
else:
    bad.append('no levels or no kernel and user space phases')
print('PHASES ' + ('bad: ' + '; '.join(bad) if bad else 'ok'))
PY
)
grep '^INFO' <<<"$ic" | sed 's/^INFO /  info: /'
for c in "CARRIED boot_guest_trace_lines_reach_the_host_byte_for_byte" \
	"ORDER boot_initcalls_are_the_guests_own_in_its_order_with_its_names" \
	"LENGTHS boot_initcall_lengths_and_levels_equal_the_guests_on_the_hosts_clock" \
	"DEBUG boot_initcall_debug_names_and_returns_equal_the_hosts" \
	"PHASES boot_initcall_levels_fall_inside_the_hosts_kernel_phase"; do
	v=$(sed -n "s/^${c%% *} //p" <<<"$ic")
	[ "$v" = ok ] && pass "${CHECK_PREFIX}${c#* }" || fail "${CHECK_PREFIX}${c#* }" "${v:-$ic} $(tail_of "$F/boot.err")"
done
if grep -q "the guest's own trace (boottrace)" "$F/boot.phases.txt" && grep -Eq '^  device +[0-9.]+ +[0-9.]+' "$F/boot.phases.txt"; then
	pass ${CHECK_PREFIX}boot_report_shows_the_guests_initcall_levels
else
	fail ${CHECK_PREFIX}boot_report_shows_the_guests_initcall_levels "$(sed -n '/own trace/,$p' "$F/boot.phases.txt" | sed -n 1,20p)"
fi
[ "${HT_E2E_SHOW:-0}" = 1 ] && cat "$F/boot.initcalls.txt" 2>/dev/null
# Under the CPU hog: the pairs still fit (the outliers of a wait refused), their residual shown.
if [ "$CHECK_PREFIX" = nested_ ]; then
	hog=$(grep -o 'clock: .*' "$F/hog.txt" 2>/dev/null)
	echo "  info: guest trace clock under a CPU hog in the nested machine: ${hog:-none} ($(l2_output "$F/ex.console" ex_hog | tr -d '\n'))"
	used=$(sed -n 's/^clock: [0-9]* pairs, \([0-9]*\) used.*/\1/p' <<<"$hog")
	if [ "${used:-0}" -ge 10 ]; then
		pass ${CHECK_PREFIX}boot_clock_pairs_fit_under_a_cpu_hog
	else
		fail ${CHECK_PREFIX}boot_clock_pairs_fit_under_a_cpu_hog "${hog:-no fit}: $(cat "$F/hog.txt" "$F/hog.err" 2>&1 | sed -n 1,5p)"
	fi
else
	skip ${CHECK_PREFIX}boot_clock_pairs_fit_under_a_cpu_hog "test_nested_exits.sh measures it on the default kernel (a pair's wait is the emulation's, not the guest kernel's)"
fi

# A boot that crashes: the file holds it up to the panic, says it ended there, and where.
if [ "$PANIC_BOOT" != 1 ]; then
	skip ${CHECK_PREFIX}a_boot_that_panics_is_kept_up_to_its_last_exit "a whole kernel boot of emulated time: test_nested_exits.sh runs it on the default kernel (keeping a crashed boot is the host's doing)"
else
panic=$(python3 - "$F" <<'PY'
import csv, sys
F = sys.argv[1]
try:
    phases = list(csv.DictReader(open(F + '/panic.csv')))
    exits = list(csv.DictReader(open(F + '/panic.exits.csv')))
    text = open(F + '/panic.txt').read()
    kmsg = open(F + '/panic.kmsg', errors='replace').read()
except OSError as e:
    print('PANIC bad: %s' % e)
    sys.exit(0)
names = [r['phase'] for r in phases]
bad = []
if 'Kernel panic' not in kmsg:
    bad.append("the guest's log has no panic: %s" % kmsg[-200:])
if names != ['firmware', 'decompressor', 'kernel']:
    bad.append('phases %s (want up to the kernel, no user space)' % names)
if not phases or phases[-1]['ended'] != '1' or 'ended: its vCPU threads ended at' not in text:
    bad.append('not said to have ended')
last = [l for l in text.splitlines() if l.startswith('    vCPU 0 ')]
if not last or ' at 0xffff' not in last[-1]:
    bad.append('its last exit is not in the kernel: %s' % last[-1:])
if 'not reached: user space' not in text:
    bad.append('the report does not say user space was not reached')
recorded = sum(int(r['exits']) for r in phases)
counted = sum(int(r['count']) for r in exits)
if recorded != counted or not counted:
    bad.append('%d boot exits recorded, the exit statistics counted %d' % (recorded, counted))
print('INFO panic: %s; last: %s' % (', '.join('%s %.3f s' % (r['phase'], int(r['length_ns']) / 1e9) for r in phases),
                                     last[-1].strip() if last else '-'))
print('PANIC ' + ('bad: ' + '; '.join(bad) if bad else 'ok'))
PY
)
grep '^INFO' <<<"$panic" | sed 's/^INFO /  info: /'
v=$(sed -n 's/^PANIC //p' <<<"$panic")
[ "$v" = ok ] && pass ${CHECK_PREFIX}a_boot_that_panics_is_kept_up_to_its_last_exit || fail ${CHECK_PREFIX}a_boot_that_panics_is_kept_up_to_its_last_exit "${v:-$panic} (qemu status $(cat "$F/panic.qemu_rc" 2>/dev/null), $(tail_of "$F/panic.err"))"
fi

# The guest that panicked while boottrace --follow streamed its trace: every
# line it marked reached the host (rebuilt from the raw arguments, as
# above), the replay never ended, and the guest's kernel did panic.
v=$(python3 - "$F" "$(dirname "$0")" <<'PY'
import re, sys
F = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from guest_trace_lines import lines_of
try:
    kmsg = open(F + '/ex.kmsg', errors='replace').read()
    text = open(F + '/crash.initcalls.txt', errors='replace').read()
except OSError as e:
    print('bad: %r' % e)
    sys.exit()
lines = lines_of(F + '/crash.lines.csv')
marks = set()
for l in lines:
    m = re.match(r'tracing_mark_write: ht-crash-mark (\d+)', l['text'][:l['len']].decode('latin-1'))
    if m:
        marks.add(int(m.group(1)))
bad = []
if marks != set(range(40)):
    bad.append('marks received: %d of 40, missing %s' % (len(marks), sorted(set(range(40)) - marks)[:10]))
if 'sysrq triggered crash' not in kmsg and 'SysRq : Trigger a crash' not in kmsg:
    bad.append('the guest did not panic (its kernel log has no sysrq crash)')
if 'its end never came' not in text:
    bad.append('the replay ended: %s' % text.splitlines()[:1])
print(('bad: ' + '; '.join(bad)) if bad else 'ok: %d of 40 marked lines, %d lines in all, the replay never ended, the guest panicked' % (len(marks), len(lines)))
PY
)
echo "  info: crash: $v"
[[ $v == ok* ]] && pass ${CHECK_PREFIX}a_guest_that_panics_keeps_every_line_boottrace_follow_read ||
	fail ${CHECK_PREFIX}a_guest_that_panics_keeps_every_line_boottrace_follow_read "$v (record status $(cat "$F/crash.rc" 2>/dev/null), $(tail_of "$F/crash.err"))"

# --- top -b shows the guest by name with its exits/s --------------------------------
if grep -Eq '^ +[0-9]+ st +[1-9][0-9]* ' "$F/top.txt" 2>/dev/null && grep -q 'vCPU 1 CPU 1/KVM' "$F/top.txt"; then
	pass ${CHECK_PREFIX}top_shows_the_guest_by_name_with_exits
else
	fail ${CHECK_PREFIX}top_shows_the_guest_by_name_with_exits "$(cat "$F/top.txt" "$F/top.err" 2>&1 | sed -n 1,20p)"
fi
suite_exit
