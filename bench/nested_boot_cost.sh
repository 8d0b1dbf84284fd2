#!/usr/bin/env bash
# make bench, item 7: what recording a guest's boot costs, on a real boot.
# In the nested machine of tests/e2e, a Linux KVM guest (tests/e2e/l2_guest.sh,
# one vCPU, booted with its initcall events on, as users boot it to send
# them) boots three ways, rotated from round to round:
#   off     nothing traced
#   record  hypertrace-bpf record --exits --boot -z (every exit of the boot,
#           from its first instruction, one record each)
#   ftrace  the nested machine's own ftrace of kvm_exit and kvm_entry (the
#           events a record is made of), in the first round only: its
#           buffer's bytes per exit are the reference for the file's
# The boot's wall time runs from qemu's start to the guest's /init saying it
# is up, on the nested machine's clock, which counts instructions (QEMU's
# -icount, as in item 6): what the machine executed for the boot, the BPF
# programs in its vCPU thread included, the same from round to round where
# the host's time to emulate it is not. The ratio is the median of the
# rounds' record/off. After the recorded boot, guest/boottrace drains the
# guest's initcall trace through hypercalls: the time from one of its
# hypercalls to the next is compared with guest/hypercall's bare ones under
# the same recording (information: the guest's cost per drained boot event).
# Prints "TARGET" lines for bench/run and a table; software-emulated: only
# the ratios mean something.
set -euo pipefail
BENCH_NAME=nested_boot_cost
export NESTED_TIMEOUT=${NESTED_TIMEOUT:-1200}
# shellcheck source=bench/nested_l2_lib.sh
source "$(dirname "$0")/nested_l2_lib.sh"
# BOOTCOST_ICOUNT="" measures in the host's time instead.
export NESTED_ICOUNT=${BOOTCOST_ICOUNT-shift=0,sleep=off}
ROUNDS=${BOOTCOST_ROUNDS:-3}

L2_FILES=("$OUTPUT/guest/boottrace:bin/boottrace" "$OUTPUT/guest/hypercall:bin/hypercall")
for p in boottrace hypercall; do
	[ -x "$OUTPUT/guest/$p" ] || { echo "nested_boot_cost: $OUTPUT/guest/$p is missing: run make static" >&2; exit 1; }
done

cat >"$work/guest.sh" <<EOF
. /bin/l2lib.sh
ROUNDS=$ROUNDS
EOF
cat >>"$work/guest.sh" <<'EOF'
T=/sys/kernel/tracing
# The boot's end is seen within 50 ms (the default look is every 0.5 s).
L2_POLL=0.05
L2_APPEND="trace_event=initcall:initcall_level,initcall:initcall_start,initcall:initcall_finish"
up() { cut -d' ' -f1 /proc/uptime; }
stop() { l2_stop_process "$1" 30; }
failed() { echo "FAILED $*" >>/out/failed.txt; say "failed: $*"; }
# boot WAY ROUND: one boot of the guest; "BOOT WAY ROUND START END" (s).
boot() {
	way=$1 r=$2
	case $way in
	record)
		hypertrace-bpf record --exits --boot --boot-window 900 -z -q -o /tmp/b.htr >/out/rec$r.out 2>&1 &
		REC=$!
		l2_wait_file /tmp/b.htr 60 || failed "record $r did not start: $(tr '\n' ' ' </out/rec$r.out | cut -c 1-300)" ;;
	ftrace)
		echo 0 >$T/tracing_on
		echo 131072 >$T/buffer_size_kb
		echo >$T/trace
		echo 1 >$T/events/kvm/kvm_exit/enable
		echo 1 >$T/events/kvm/kvm_entry/enable
		echo 1 >$T/tracing_on ;;
	esac
	t0=$(up)
	l2_start boot$way$r 1 || { failed "boot $way $r: the guest did not come up"; return; }
	t1=$(up)
	echo "BOOT $way $r $t0 $t1" >>/out/boot.txt
	say "boot $way $r: $t0 -> $t1"
	case $way in
	record)
		stop $REC
		exits=$(hypertrace-bpf report --boot --csv /tmp/b.htr 2>>/out/rec$r.out |
			awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "exits") c = i; next } c { s += $c } END { print s + 0 }')
		echo "FILE $r $(stat -c %s /tmp/b.htr) $exits" >>/out/bytes.txt
		rm -f /tmp/b.htr
		# The drain, recorded: boottrace's hypercalls, then 2000 bare ones.
		hypertrace-bpf record --nr 1000 --nr 1150 --nr 1151 --nr 1152 -q -o /tmp/d.htr >/out/drain$r.out 2>&1 &
		D=$!
		l2_wait_file /tmp/d.htr 60 || failed "record of drain $r did not start"
		l2cmd drain$r 'mount -t tracefs nodev /sys/kernel/tracing; boottrace 2>&1; hypercall -N 2000 2>&1' >/dev/null
		stop $D
		tr -d '\r' <"$CON" | sed -n "/^L2-BEGIN drain$r\$/,/^L2-END drain$r /p" >/out/drain$r.txt
		hypertrace-bpf report --csv /tmp/d.htr >/out/drain$r.csv 2>>/out/drain$r.out
		rm -f /tmp/d.htr ;;
	ftrace)
		echo 0 >$T/tracing_on
		cat $T/per_cpu/cpu0/stats >/out/ftrace_stats.txt
		echo 0 >$T/events/kvm/kvm_exit/enable
		echo 0 >$T/events/kvm/kvm_entry/enable
		echo >$T/trace
		echo 1408 >$T/buffer_size_kb
		echo 1 >$T/tracing_on ;;
	esac
	l2_stop
}

mountpoint -q $T 2>/dev/null || mount -t tracefs nodev $T 2>/dev/null
r=1
while [ $r -le $ROUNDS ]; do
	if [ $((r % 2)) = 1 ]; then set -- off record; else set -- record off; fi
	[ $r = 1 ] && set -- "$@" ftrace
	for w in "$@"; do boot $w $r; done
	r=$((r + 1))
done
EOF

# BOOTCOST_KEEP=DIR keeps the nested machine's files.
bench_nested_run "${BOOTCOST_KEEP:-}"
[ -s "$F/boot.txt" ] || { echo "nested_boot_cost: no boot was timed: $(tail -n 3 "$work/out/console.log" | tr '\n' '|')" >&2; exit 1; }
python3 - "$F" <<'PY'
import os, re, statistics, sys
F = sys.argv[1]
failed = open(F + '/failed.txt').read() if os.path.exists(F + '/failed.txt') else ''
if failed:
    sys.exit('nested_boot_cost: ' + failed.splitlines()[0])
boots = {}
for line in open(F + '/boot.txt'):
    _, way, r, t0, t1 = line.split()
    boots[way, int(r)] = float(t1) - float(t0)
rounds = sorted({r for _, r in boots})
print('A guest boot (1 vCPU, qemu start to /init), nested machine seconds (instructions; SOFTWARE-EMULATED: ratios only)')
for way, label in (('off', 'nothing traced'), ('record', 'record --exits --boot -z'), ('ftrace', "the machine's ftrace of kvm_exit + kvm_entry")):
    print('  %-48s %s' % (label, ' '.join('%.2f' % boots[way, r] if (way, r) in boots else '-' for r in rounds)))
ratios = [boots['record', r] / boots['off', r] for r in rounds if ('record', r) in boots and ('off', r) in boots and boots['off', r] > 0]
name = "--boot: L2 boot wall time, recorded vs not"
if ratios:
    ratio = statistics.median(ratios)
    print('  record/off per round: %s' % ' '.join('%.3f' % x for x in ratios))
    print('TARGET %-52s %6.3fx  (limit 1.10x)  %s' % (name, ratio, 'met' if ratio <= 1.10 else 'NOT MET'))
else:
    print('TARGET %-52s %7s  (limit 1.10x)  NOT MET (not measured: no round timed both ways)' % (name, 'n/a'))
files = []
for line in open(F + '/bytes.txt') if os.path.exists(F + '/bytes.txt') else []:
    p = line.split()
    if p[0] == 'FILE' and int(p[3]) > 0:
        files.append((int(p[2]), int(p[3])))
stats = {}
for line in open(F + '/ftrace_stats.txt') if os.path.exists(F + '/ftrace_stats.txt') else []:
    m = re.match(r'^(\w[\w ]*): (\d+)', line)
    if m:
        stats[m.group(1)] = int(m.group(2))
name = "--boot: bytes per boot exit vs ftrace"
if files and stats.get('entries') and 'bytes' in stats and stats.get('overrun', 0) == 0:
    per_file = statistics.median(b / n for b, n in files)
    per_ftrace = stats['bytes'] / (stats['entries'] / 2)
    print('Bytes per exit of a boot: the file (-z, its exits blocks too) %.1f (%s), ftrace\'s buffer %.1f (%d events, kvm_exit + kvm_entry)'
          % (per_file, ', '.join('%d B / %d exits' % f for f in files), per_ftrace, stats['entries']))
    r = per_file / per_ftrace
    print('TARGET %-52s %6.3fx  (limit 0.10x)  %s' % (name, r, 'met' if r <= 0.10 else 'NOT MET'))
else:
    print('TARGET %-52s %7s  (limit 0.10x)  NOT MET (not measured: file %s, ftrace %s)' % (name, 'n/a', files, stats))
# The drain (information): the guest's time from one hypercall to the next,
# on the host's clock of their exits (the median, which leaves out
# boottrace's waits between its clock pairs): boottrace's, which read and
# cut its trace's lines, against guest/hypercall's bare ones.
import csv
def median_gap(rows):
    t = sorted(int(x['exit_ns']) for x in rows)
    gaps = [b - a for a, b in zip(t, t[1:])]
    return statistics.median(gaps) if gaps else None
r = 1
while os.path.exists(F + '/drain%d.csv' % r):
    rows = list(csv.DictReader(open(F + '/drain%d.csv' % r)))
    text = open(F + '/drain%d.txt' % r).read() if os.path.exists(F + '/drain%d.txt' % r) else ''
    m = re.search(r'boottrace: (\d+) lines in (\d+) hypercalls', text)
    boot = [x for x in rows if x.get('nr') in ('1150', '1151', '1152')]
    bare = [x for x in rows if x.get('nr') == '1000']
    gb, gh = median_gap(boot), median_gap(bare)
    if m and gb and gh:
        lines, calls = int(m.group(1)), int(m.group(2))
        print('Drain %d: boottrace sent %d lines in %d hypercalls (%d recorded): %.1f us from one to the next, %.1f us per line; '
              'bare hypercalls (%d recorded) %.1f us apart: a drained line costs the guest %.2f bare hypercalls'
              % (r, lines, calls, len(boot), gb / 1e3, gb * calls / lines / 1e3, len(bare), gh / 1e3, gb * calls / lines / gh))
    else:
        print('Drain %d: not read (%d + %d records; %s)' % (r, len(boot), len(bare), text[-200:].replace('\n', '|')))
    r += 1
PY
