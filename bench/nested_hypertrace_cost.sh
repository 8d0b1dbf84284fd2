#!/usr/bin/env bash
# make bench, item 5: what hypertracing costs the guest, on real events. In
# the nested machine of tests/e2e, a KVM guest (tests/e2e/l2_guest.sh) runs a
# workload of short sleeps on one CPU (sched_switch events) four ways:
#   off        nothing traced
#   ftrace     the guest's own ftrace records sched_switch
#   module     hypertrace_guest.ko sched_switch=1, the host not recording
#   recorded   the same with hypertrace-bpf record on the host
# The slowdown per event is (time - off time) / events; bytes per event are
# ftrace's buffer bytes against the host's file (plain and --compress).
# Everything is software-emulated (the nested machine runs under QEMU's TCG):
# only the ratios mean something, and not much about hardware (see
# docs/performance.md). No target. Prints "HTCOST key value..." lines and a
# table.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
OUTPUT=${OUTPUT:-$TOP/.output}
export NESTED_TIMEOUT=${NESTED_TIMEOUT:-600}
source "$TOP/tests/e2e/nested.sh"
source "$TOP/tests/e2e/l2_guest.sh"
source "$TOP/tests/guest_kernel.sh"
export NESTED_SMP=1 NESTED_MEM=${NESTED_MEM:-2048}
export NESTED_APPEND="tsc=reliable" NESTED_KVM_AMD_PARAMS="npt=0"
export NESTED_STAGE_HOOK=stage_cost
# Workload iterations and repetitions of each way (medians are reported).
ITER=${HTCOST_ITER:-100}
REPS=${HTCOST_REPS:-3}

work=$(mktemp -d)
L2_WORK=$work
trap 'rm -rf "$work"' EXIT

nested_fetch 2>"$work/fetch.log" || { echo "nested_hypertrace_cost: $NESTED_ERR" >&2; exit 1; }
# The module for exactly the kernel the guest boots.
guest_kernel_fetch "$(cat "$NESTED_ROOT/kernel/release" 2>/dev/null)" || { echo "nested_hypertrace_cost: $GK_ERR" >&2; exit 1; }
make -C "$TOP" -s guest-module KDIR="$GK_KDIR" >"$work/kmod.log" 2>&1 ||
	{ echo "nested_hypertrace_cost: make guest-module failed: $(tail -n 3 "$work/kmod.log")" >&2; exit 1; }

# In the guest: ht_cost WAY ITER prints "COST WAY SECONDS EVENTS BYTES" (events
# and bytes from ftrace's statistics for the ftrace way, else 0).
cat >"$work/ht_cost" <<'EOF'
#!/bin/sh
way=$1
n=$2
T=/sys/kernel/tracing
mountpoint -q $T || mount -t tracefs nodev $T
case $way in
module | recorded) insmod /hypertrace_guest.ko sched_switch=1 || exit 1 ;;
ftrace)
	echo >$T/trace
	echo 1 >$T/events/sched/sched_switch/enable
	echo 1 >$T/tracing_on
	;;
esac
t0=$(cut -d' ' -f1 /proc/uptime)
taskset 1 sh -c "i=0; while [ \$i -lt $n ]; do usleep 200; i=\$((i + 1)); done"
t1=$(cut -d' ' -f1 /proc/uptime)
events=0
bytes=0
case $way in
module | recorded) rmmod hypertrace_guest ;;
ftrace)
	echo 0 >$T/tracing_on
	echo 0 >$T/events/sched/sched_switch/enable
	events=$(cat $T/per_cpu/cpu*/stats | awk '$1 == "entries:" { s += $2 } END { print s + 0 }')
	bytes=$(cat $T/per_cpu/cpu*/stats | awk '$1 == "bytes:" { s += $2 } END { print s + 0 }')
	;;
esac
echo "COST $way $t0 $t1 $events $bytes"
EOF
chmod 755 "$work/ht_cost"

stage_cost() {
	L2_FILES=("$OUTPUT/guest/module/hypertrace_guest.ko:hypertrace_guest.ko" "$work/ht_cost:bin/ht_cost")
	l2_stage "$1"
}

cat >"$work/guest.sh" <<EOF
. /bin/l2lib.sh
l2_start cost 1 || exit 1
r=1
while [ \$r -le $REPS ]; do
	# One line per step on the console: the silence watchdog watches it.
	for way in off ftrace module; do
		l2cmd \$way\$r "ht_cost \$way $ITER" >/dev/null
		say "\$way \$r: \$(tr -d '\\r' <\$CON | grep "^COST \$way " | tail -n 1)"
	done
	z=
	[ \$r = 2 ] && z=-z
	hypertrace-bpf record -q \$z -o /tmp/rec\$r.htr -p \$QPID --nr 1101 -- l2cmd recorded\$r "ht_cost recorded $ITER" >/out/rec\$r.out 2>&1
	echo "REC \$r \$(stat -c %s /tmp/rec\$r.htr) \$(sed -n 's/^hypertrace-bpf: \\([0-9]*\\) records, \\([0-9]*\\) dropped.*/\\1 \\2/p' /out/rec\$r.out) \$z" >>/out/rec.txt
	rm -f /tmp/rec\$r.htr
	say "recorded \$r: \$(tail -n 1 /out/rec.txt)"
	r=\$((r + 1))
done
l2_stop
EOF

# nested_run runs the machine once more after an emulation stall (tests/e2e/nested.sh).
# shellcheck disable=SC2046
if ! nested_run "$work/out" "$work/guest.sh" "$OUTPUT/static/hypertrace-bpf" $(l2_l1_files) 2>"$work/run.log"; then
	echo "nested_hypertrace_cost: $NESTED_ERR" >&2
	exit 1
fi
F=$work/out/files
tr -d '\r' <"$F/cost.console" | grep '^COST ' >"$work/cost.txt" || true
cat "$F/rec.txt" >"$work/rec.txt" 2>/dev/null || true
[ -s "$work/cost.txt" ] && [ -s "$work/rec.txt" ] ||
	{ echo "nested_hypertrace_cost: no results: $(tail -n 5 "$F/cost.console" 2>/dev/null | tr '\n' '|')" >&2; exit 1; }

awk -v iter="$ITER" '
	function median(list,   n, a, i, j, t) {
		n = split(list, a, " ")
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	FILENAME ~ /cost/ { secs[$2] = secs[$2] " " ($4 - $3); if ($2 == "ftrace") { fev = fev " " $5; fby = fby " " $6 } next }
	$1 == "REC" { recs = recs " " $4; if ($6 == "-z") { zb = $3; zr = $4 } else { pb = pb " " $3; pr = pr " " $4 }; drops += $5 }
	END {
		off = median(secs["off"]); ft = median(secs["ftrace"]); mo = median(secs["module"]); re = median(secs["recorded"])
		fe = median(fev); fb = median(fby); ev = median(recs)
		# The module offloads the same events ftrace records: the host counted them when recording.
		cft = (ft - off) / fe * 1e6; cmo = (mo - off) / ev * 1e6; cre = (re - off) / ev * 1e6
		printf "HTCOST seconds off %.2f ftrace %.2f module %.2f recorded %.2f\n", off, ft, mo, re
		printf "HTCOST events ftrace %d host %d drops %d\n", fe, ev, drops
		printf "HTCOST bytes ftrace %d plain %d/%d compressed %d/%d\n", fb, median(pb), median(pr), zb, zr
		printf "Guest-side cost per sched_switch event, %d iterations, median of %d (SOFTWARE-EMULATED: ratios only)\n", iter, split(secs["off"], x, " ")
		printf "  %-42s %8s %10s %12s %7s\n", "", "seconds", "events", "us/event", "ratio"
		printf "  %-42s %8.2f %10s %12s %7s\n", "workload, nothing traced", off, "", "", ""
		printf "  %-42s %8.2f %10d %12.1f %7.2f\n", "guest ftrace (sched_switch)", ft, fe, cft, 1
		printf "  %-42s %8.2f %10d %12.1f %7.2f\n", "hypertrace_guest.ko, host not recording", mo, ev, cmo, cft ? cmo / cft : 0
		printf "  %-42s %8.2f %10d %12.1f %7.2f\n", "hypertrace_guest.ko + hypertrace-bpf record", re, ev, cre, cft ? cre / cft : 0
		printf "Bytes per event\n"
		printf "  %-42s %10.1f %7.2f\n", "guest ftrace buffer", fb / fe, 1
		printf "  %-42s %10.1f %7.2f\n", "host file, plain blocks", median(pb) / median(pr), (median(pb) / median(pr)) / (fb / fe)
		if (zr) printf "  %-42s %10.1f %7.2f\n", "host file, --compress", zb / zr, (zb / zr) / (fb / fe)
		if (drops) printf "  note: the host dropped %d events\n", drops
	}' "$work/cost.txt" "$work/rec.txt"
