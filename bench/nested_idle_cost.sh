#!/usr/bin/env bash
# make bench, item 6b: the whole tool's CPU and memory on an idle host with
# many idle VMs, where item 6 measures a busy one. In the nested machine of
# tests/e2e, Debian's QEMU with KVM runs 20 VMs (IDLECOST_VMS) whose whole
# guest is tests/e2e/tick_firmware.S at the PIT's slowest rate, 18.2 Hz:
# each tick an interrupt, a halt, the PIC's end of interrupt and one
# hypercall, about 55 exits a second per VM, as an idle guest's timer keeps
# waking it. Three ways, rotated from round to round as in item 6:
#   off     nothing traced
#   record  hypertrace-bpf record --exits (every VM of the host) + report --exits
#   perf    perf kvm stat record -a + perf kvm stat report
# for 60 s of the VMs' running time each (IDLECOST_SECONDS). The cost of a
# way is the nested machine's busy CPU time from before the tool starts to
# after its report, minus the off way's in the same round; the ratio is the
# median of the rounds' record/perf ratios. Every VM is stopped (SIGSTOP)
# while a tool starts and stops, so each way sees the same running time of
# the VMs. The machine counts its time in instructions (QEMU's -icount, as
# item 6): a way's cost is what the machine executed for it.
# Each tool process's peak RSS (VmHWM) is compared too, the largest of the
# rounds'. Prints "TARGET" lines for bench/run and a table;
# software-emulated: only the ratios mean something.
set -euo pipefail
BENCH_NAME=nested_idle_cost
export NESTED_TIMEOUT=${NESTED_TIMEOUT:-900}
export NESTED_STAGE_HOOK=idle_stage
# shellcheck source=bench/nested_l2_lib.sh
source "$(dirname "$0")/nested_l2_lib.sh"
# IDLECOST_ICOUNT="" measures in the host's time instead.
export NESTED_ICOUNT=${IDLECOST_ICOUNT-shift=0,sleep=off}
VMS=${IDLECOST_VMS:-20}
DURATION=${IDLECOST_SECONDS:-60}
ROUNDS=${IDLECOST_ROUNDS:-3}

# The slowest tick the PIT gives: an idle guest's timer, not a workload.
if ! { as --32 --defsym PIT_DIVISOR=65535 -o "$work/tick.o" "$TOP/tests/e2e/tick_firmware.S" &&
	ld -m elf_i386 -Ttext=0 --oformat=binary -o "$work/tick.bin" "$work/tick.o"; } 2>"$work/as.log"; then
	echo "$BENCH_NAME: cannot assemble tests/e2e/tick_firmware.S: $(tr '\n' ' ' <"$work/as.log")" >&2
	exit 1
fi

# The nested machine gets qemu and perf with their libraries, the option
# ROM qemu loads with KVM, and the firmware.
idle_stage() {
	local stage=$1
	nested_stage_program "$stage" usr/bin/qemu-system-x86_64 usr/bin/perf || return 1
	mkdir -p "$stage/usr/share/qemu" "$stage/fw" &&
		cp -L "$NESTED_ROOT/usr/share/qemu/kvmvapic.bin" "$stage/usr/share/qemu/" &&
		cp "$work/tick.bin" "$stage/fw/tick.bin"
}

cat >"$work/guest.sh" <<EOF
VMS=$VMS
DURATION=$DURATION
ROUNDS=$ROUNDS
EOF
cat >>"$work/guest.sh" <<'EOF'
say() { echo "L1: $*"; }
# busy: the machine's non-idle time in USER_HZ ticks (guest time is in user).
busy() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
holds_kvm_vm() { ls -l /proc/$1/fd 2>/dev/null | grep 'anon_inode:kvm-vm' >/dev/null; }
wait_file() {
	i=0
	while [ ! -e "$1" ] && [ $i -lt 600 ] && kill -0 $T 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
}
# started_or_failed WAY ROUND OUTPUT: a tool that is not running (it could
# not start) is a failed measurement, with its message, never a cost.
started_or_failed() {
	kill -0 $T 2>/dev/null || echo "FAILED $1 $2: $(tr '\n' ' ' <"$3" | cut -c 1-400)" >>/out/failed.txt
}
# stop PID: SIGINT, and what will not end in 30 s is killed; then reaped.
stop() {
	kill -INT $1 2>/dev/null
	i=0
	while kill -0 $1 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	kill -KILL $1 2>/dev/null
	wait $1 || true
}

PIDS=
v=1
while [ $v -le $VMS ]; do
	qemu-system-x86_64 -name idle$v,debug-threads=on -enable-kvm -cpu host -smp 1 -m 16 \
		-bios /fw/tick.bin -L /usr/share/qemu -nodefaults -display none -no-reboot \
		</dev/null >/out/qemu$v.log 2>&1 &
	PIDS="$PIDS $!"
	v=$((v + 1))
done
for p in $PIDS; do
	i=0
	while ! holds_kvm_vm $p && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
	holds_kvm_vm $p || { echo "FAILED setup: QEMU $p holds no KVM VM after 60 s" >>/out/failed.txt; kill $PIDS; exit 1; }
done
say "$VMS idle VMs running"
# Their first ticks before any measurement.
sleep 5

# way NAME ROUND: DURATION seconds of the VMs under NAME; writes
# "COST NAME ROUND TICKS", the tool's CPU and its peak RSS.
way() {
	b0=$(busy)
	kill -STOP $PIDS
	case $1 in
	record)
		hypertrace-bpf record --exits -q -o /tmp/c.htr >/out/rec$2.out 2>&1 &
		T=$!
		wait_file /tmp/c.htr
		started_or_failed $1 $2 /out/rec$2.out ;;
	perf)
		perf kvm stat record -a -o /tmp/c.data >/out/perf$2.out 2>&1 &
		T=$!
		wait_file /tmp/c.data
		# 3 s more for its events to be on (the VMs are stopped meanwhile).
		sleep 3
		started_or_failed $1 $2 /out/perf$2.out ;;
	esac
	# Its CPU once started, before the VMs run again: its start-up.
	[ $1 = off ] || echo "START $1 $2 $(cut -d' ' -f14-15 /proc/$T/stat)" >>/out/cpu_start.txt
	kill -CONT $PIDS
	sleep $DURATION
	kill -STOP $PIDS
	if [ $1 != off ]; then
		echo "CPU $1 $2 $(cut -d' ' -f14-15 /proc/$T/stat)" >>/out/cpu.txt
		# Its peak resident memory so far, as ps and top count it (kB).
		echo "RSS $1 $2 $(awk '$1 == "VmHWM:" { print $2 }' /proc/$T/status)" >>/out/rss.txt
		stop $T
	fi
	kill -CONT $PIDS
	case $1 in
	record)
		hypertrace-bpf report --exits /tmp/c.htr >/out/rec$2.report 2>&1
		rm -f /tmp/c.htr ;;
	perf)
		perf kvm -i /tmp/c.data stat report --event=vmexit >/out/perf$2.report 2>&1
		rm -f /tmp/c.data ;;
	esac
	echo "COST $1 $2 $(($(busy) - b0))" >>/out/cost.txt
	say "$1 $2: $(tail -n 1 /out/cost.txt)"
}

r=1
while [ $r -le $ROUNDS ]; do
	set -- off record perf
	n=$(( (r - 1) % 3 ))
	while [ $n -gt 0 ]; do first=$1; shift; set -- "$@" $first; n=$((n - 1)); done
	for w in "$@"; do way $w $r; done
	r=$((r + 1))
done
kill $PIDS
EOF

# IDLECOST_KEEP=DIR keeps the nested machine's files (reports, tool output).
bench_nested_run "${IDLECOST_KEEP:-}"
[ -s "$F/cost.txt" ] ||
	{ echo "$BENCH_NAME: no results: $(cat "$F/failed.txt" 2>/dev/null | tr '\n' '|')" >&2; exit 1; }
PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$TOP/bench" python3 - "$F" "$ROUNDS" "$VMS" "$DURATION" <<'PY'
import os, re, sys
from tool_cost import Rounds
F, rounds, vms, duration = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
if os.path.exists(F + '/failed.txt'):
    sys.exit('nested_idle_cost: ' + open(F + '/failed.txt').read().splitlines()[0])
costs = Rounds(F, rounds)

def exits_in(path):
    """(VMs, exits) in report --exits: its per-VM lines and the sum of their exits."""
    n = total = 0
    for line in open(path, errors='replace') if os.path.exists(path) else []:
        m = re.match(r'^VM .*\(pid \d+\): (\d+) exits', line)
        if m:
            n += 1
            total += int(m.group(1))
    return n, total

seen = [exits_in(F + '/rec%d.report' % r) for r in range(1, rounds + 1)]
exits = [e for _, e in seen]
# A recording that missed a VM or saw no exits measured less than the work.
missed = ['round %d: %d VMs, %d exits' % (r + 1, n, e) for r, (n, e) in enumerate(seen) if n != vms or e == 0]
print('Whole-tool CPU on an idle host: %d idle VMs (18.2 Hz ticks), %d s each way, %d rounds; exits recorded per round %s'
      ' (nested machine busy time in 1/100 s; SOFTWARE-EMULATED: ratios only)'
      % (vms, duration, len(costs.ratios), ' '.join(map(str, exits)) or 'none'))
costs.print_costs('the idle VMs, nothing traced')
costs.print_processes('of which the record process', starts=True)
name = "whole-tool CPU, idle host, record --exits vs perf"
if missed:
    print('TARGET %-52s %7s  (limit 0.25x)  NOT MET (report --exits did not show the %d VMs: %s)' % (name, 'n/a', vms, '; '.join(missed)))
else:
    costs.cpu_verdict(name)
costs.rss_verdict("peak RSS, idle host, record --exits vs perf")
PY
