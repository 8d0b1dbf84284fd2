#!/usr/bin/env bash
# make bench, item 6: the whole tool's CPU against what a KVM operator runs
# instead, on real exits. In the nested machine of tests/e2e, a Linux KVM
# guest (tests/e2e/l2_guest.sh, one vCPU) runs a fixed workload of exits
# (guest/exitload: CPUID, handled in KVM, and OUT to port 0x80, handled in
# QEMU's user space) three ways, rotated from round to round:
#   off     nothing traced
#   record  hypertrace-bpf record --exits (the vCPU account and the exit
#           causes included) + report --exits
#   perf    perf kvm stat record + perf kvm stat report (Debian's perf)
# The cost of a way is the nested machine's busy CPU time (/proc/stat: every
# process and the kernel, the BPF programs and perf's tracepoint handlers run
# in the vCPU thread included) from before the tool starts to after its
# report, minus the off way's in the same round; the ratio is the median of
# the rounds' record/perf ratios. The guest is stopped (SIGSTOP) while a tool
# starts and stops, so each way sees the workload's exits and the same idle
# ones. A last round runs both tools at once: their exit counts must be equal.
# The emulated machine counts its time in instructions (QEMU's -icount, one
# nanosecond each, its clock jumping over idle time): a way's cost is then
# what the machine executed for it, the same from round to round, where the
# host's time to emulate it moved a round's ratio from 0.22 to 1.95
# (docs/performance.md, section 6).
# Each tool process's peak RSS (VmHWM) is compared too, the largest of the
# rounds'. Prints "TARGET" lines for bench/run and a table;
# software-emulated: only the ratios mean something.
set -euo pipefail
BENCH_NAME=nested_exits_cost
export NESTED_TIMEOUT=${NESTED_TIMEOUT:-900}
# shellcheck source=bench/nested_l2_lib.sh
source "$(dirname "$0")/nested_l2_lib.sh"
# EXITCOST_ICOUNT="" measures in the host's time instead.
export NESTED_ICOUNT=${EXITCOST_ICOUNT-shift=0,sleep=off}
# Exits of each kind per run, and rounds (the ratio is their median).
CPUIDS=${EXITCOST_CPUIDS:-100000}
OUTS=${EXITCOST_OUTS:-20000}
# Five: the first round's perf costs more than the others (its first run in
# the machine), and a median of five leaves it out.
ROUNDS=${EXITCOST_ROUNDS:-5}
# More options for both record --exits runs (as a user would add them).
RECORD_ARGS=${EXITCOST_RECORD_ARGS:-}

L2_FILES=("$OUTPUT/guest/exitload:bin/exitload")
L2_L1_PROGRAMS=(usr/bin/perf)
[ -x "$OUTPUT/guest/exitload" ] || { echo "nested_exits_cost: $OUTPUT/guest/exitload is missing: run make static" >&2; exit 1; }

cat >"$work/guest.sh" <<EOF
. /bin/l2lib.sh
WORK="exitload cpuid $CPUIDS && exitload pio 0x80 $OUTS"
ROUNDS=$ROUNDS
RECORD_ARGS="$RECORD_ARGS"
EOF
cat >>"$work/guest.sh" <<'EOF'
# busy: the machine's non-idle time in USER_HZ ticks (guest time is in user).
busy() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8; exit }' /proc/stat; }
# started FILE: perf has created FILE, and 3 s more for its events to be on
# (the guest is stopped meanwhile: waiting costs nothing).
started() {
	l2_wait_file "$1" 60
	sleep 3
}
# started_or_failed WAY ROUND OUTPUT: a tool that is not running (it could
# not start) is a failed measurement, with its message, never a cost.
started_or_failed() {
	kill -0 $T 2>/dev/null || echo "FAILED $1 $2: $(tr '\n' ' ' <"$3" | cut -c 1-400)" >>/out/failed.txt
}
# stop PID: SIGINT, and what will not end in 30 s is killed; then reaped.
stop() { l2_stop_process "$1" 30; }
# way NAME ROUND: the workload under NAME; prints "COST NAME ROUND TICKS".
way() {
	b0=$(busy)
	case $1 in
	record)
		kill -STOP $QPID
		hypertrace-bpf record --exits $RECORD_ARGS --vm cost -q -o /tmp/c.htr >/out/rec$2.out 2>&1 &
		T=$!
		i=0
		while [ ! -e /tmp/c.htr ] && [ $i -lt 600 ] && kill -0 $T 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
		started_or_failed $1 $2 /out/rec$2.out
		kill -CONT $QPID ;;
	perf)
		kill -STOP $QPID
		perf kvm stat record -a -o /tmp/c.data >/out/perf$2.out 2>&1 &
		T=$!
		started /tmp/c.data
		started_or_failed $1 $2 /out/perf$2.out
		kill -CONT $QPID ;;
	esac
	l2cmd $1$2 "$WORK" >/dev/null
	[ $1 = off ] || echo "CPU $1 $2 $(cut -d' ' -f14-15 /proc/$T/stat)" >>/out/cpu.txt
	# Its peak resident memory so far, as ps and top count it (kB).
	[ $1 = off ] || echo "RSS $1 $2 $(awk '$1 == "VmHWM:" { print $2 }' /proc/$T/status)" >>/out/rss.txt
	case $1 in
	record)
		kill -STOP $QPID
		stop $T
		kill -CONT $QPID
		hypertrace-bpf report --exits /tmp/c.htr >/out/rec$2.report 2>&1
		rm -f /tmp/c.htr ;;
	perf)
		kill -STOP $QPID
		stop $T
		kill -CONT $QPID
		perf kvm -i /tmp/c.data stat report --event=vmexit >/out/perf$2.report 2>&1
		rm -f /tmp/c.data ;;
	esac
	echo "COST $1 $2 $(($(busy) - b0))" >>/out/cost.txt
	say "$1 $2: $(tail -n 1 /out/cost.txt)"
}

l2_start cost 1 || exit 1
r=1
while [ $r -le $ROUNDS ]; do
	set -- off record perf
	n=$(( (r - 1) % 3 ))
	while [ $n -gt 0 ]; do first=$1; shift; set -- "$@" $first; n=$((n - 1)); done
	for w in "$@"; do way $w $r; done
	r=$((r + 1))
done
# Counts: both tools at once, the guest stopped while they start and stop.
kill -STOP $QPID
perf kvm stat record -a -o /tmp/both.data >/out/both_perf.out 2>&1 &
P=$!
started /tmp/both.data
hypertrace-bpf record --exits $RECORD_ARGS --bpf-stats --vm cost -q -o /tmp/both.htr >/out/both_rec.out 2>&1 &
R=$!
i=0
while [ ! -e /tmp/both.htr ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
kill -CONT $QPID
l2cmd both "$WORK" >/dev/null
kill -STOP $QPID
stop $R
stop $P
kill -CONT $QPID
hypertrace-bpf report --exits /tmp/both.htr >/out/both_rec.report 2>&1
perf kvm -i /tmp/both.data stat report --event=vmexit >/out/both_perf.report 2>&1
l2_stop
EOF

# EXITCOST_KEEP=DIR keeps the nested machine's files (reports, tool output).
bench_nested_run "${EXITCOST_KEEP:-}"
[ -s "$F/cost.txt" ] ||
	{ echo "nested_exits_cost: no results: $(tail -n 5 "$F/cost.console" 2>/dev/null | tr '\n' '|')" >&2; exit 1; }
PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$TOP/bench" python3 - "$F" "$ROUNDS" "$CPUIDS" "$OUTS" <<'PY'
import re, sys
from tool_cost import Rounds
F, rounds, cpuids, outs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
try:
    failed = open(F + '/failed.txt').read()
except FileNotFoundError:
    failed = ''
if failed:
    sys.exit('nested_exits_cost: a tool did not start: ' + failed.splitlines()[0])
costs = Rounds(F, rounds)

def exits_of_record(path):
    """Per reason, the VM's exits in report --exits (its first table), and those still in the host at the end."""
    text = open(path, errors='replace').read()
    m = re.search(r'^VM .*\(pid \d+\): (\d+) exits, [^;\n]*(?:; (\d+) still in the host at the end)?$', text, re.M)
    if not m:
        return None, None
    per = {}
    for line in text[m.end():].split('\n')[2:]:
        row = re.match(r'^  (\S.*?)\s+(\d+)\s+[\d.]+\s', line)
        if not row:
            break
        per[row.group(1)] = int(row.group(2))
    return per, int(m.group(2) or 0)

def exits_of_perf(path):
    """Per reason, perf kvm stat report's samples (an exit and its entry)."""
    per = {}
    for line in open(path, errors='replace'):
        row = re.match(r'^\s+(\S.*?)\s+(\d+)\s+[\d.]+%\s+[\d.]+%', line)
        if row:
            per[row.group(1)] = int(row.group(2))
    return per

print('Whole-tool CPU on %d CPUID + %d port 0x80 exits per run, %d rounds (nested machine busy time in 1/100 s; SOFTWARE-EMULATED: ratios only)'
      % (cpuids, outs, len(costs.ratios)))
costs.print_costs('workload, nothing traced')
costs.print_processes('of which the record process (loading the BPF programs included)')
costs.cpu_verdict("whole-tool CPU, record --exits vs perf kvm stat", '; run on an idle machine')
# The tool process's peak RSS (VmHWM): record's rings are mapped into it
# twice over (the kernel's layout of a BPF ring buffer), and count so.
costs.rss_verdict("peak RSS, record --exits vs perf kvm stat record")
# perf kvm stat counts an exit once its entry comes; the exit the stopped guest
# is in at the end (SIGSTOP took it to user space) is one more in the host.
for line in open(F + '/both_rec.out', errors='replace'):
    m = re.match(r'hypertrace-bpf: bpf-stats (\S+): (\d+) runs, (\d+) ns, [0-9.]+ ns/run, (\d+) instructions verified', line)
    if m:
        print('  BPF program %-18s %8s runs %8.1f us/run, %6s instructions verified (kernel bpf_stats, in the run with both tools)'
              % (m.group(1), m.group(2), int(m.group(3)) / max(int(m.group(2)), 1) / 1e3, m.group(4)))
rec, open_at_end = exits_of_record(F + '/both_rec.report')
perf = exits_of_perf(F + '/both_perf.report')
if rec is None or not perf:
    print('  exits of one run with both tools at once: not read (record --exits %s, perf kvm stat %s)' % (rec, perf))
else:
    differ = ['%s %d/%d' % (r, rec.get(r, 0), perf.get(r, 0)) for r in sorted(set(rec) | set(perf)) if rec.get(r, 0) != perf.get(r, 0)]
    print('  exits of one run with both tools at once: record --exits %d (+%d still in the host at the end), perf kvm stat %d; per reason %s'
          % (sum(rec.values()), open_at_end, sum(perf.values()), 'equal (%d reasons)' % len(perf) if not differ else 'differing: ' + ', '.join(differ)))
    print('TARGET %-52s %6.3fx  (limit 1.00x)  %s' % ("exits counted, record --exits vs perf kvm stat", sum(rec.values()) / sum(perf.values()),
                                                       'met' if not differ else 'NOT MET'))
PY
