#!/usr/bin/env bash
# make bench, item 5: what hypertracing costs the guest, on real events. In
# the nested machine of tests/e2e, a KVM guest (tests/e2e/l2_guest.sh) runs a
# workload of short sleeps on one CPU (sched_switch events) four ways:
#   off        nothing traced
#   ftrace     the guest's own ftrace records sched_switch
#   module     hypertrace_guest.ko sched_switch=1, the host not recording
#   recorded   the same with hypertrace-bpf record on the host
# Each round runs the four ways back to back, in an order rotated from round
# to round (no way always runs first, after the machine settled); the
# slowdown per event is the median over rounds of each round's paired
# (time - off time) / events, so a slow moment of the machine hits both
# sides of a difference. When the paired differences of a way do not all lie
# on one side of zero, the machine's noise is as large as the cost: the
# table says "inconclusive on this machine" with their range rather than
# print a cost that may be negative. Bytes per event are ftrace's buffer
# bytes against the host's file (plain and --compress).
# Everything is software-emulated (the nested machine runs under QEMU's TCG):
# only the ratios mean something, and not much about hardware (see
# docs/performance.md). No target. Prints "HTCOST key value..." lines and a
# table.
set -euo pipefail
BENCH_NAME=nested_hypertrace_cost
export NESTED_STAGE_HOOK=stage_cost
# shellcheck source=bench/nested_l2_lib.sh
source "$(dirname "$0")/nested_l2_lib.sh"
source "$TOP/tests/guest_kernel.sh"
# Workload iterations and repetitions of each way (medians are reported).
ITER=${HTCOST_ITER:-100}
REPS=${HTCOST_REPS:-5}

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
	# The four ways, rotated by one per round.
	set -- off ftrace module recorded
	n=\$(( (r - 1) % 4 ))
	while [ \$n -gt 0 ]; do first=\$1; shift; set -- "\$@" \$first; n=\$((n - 1)); done
	for way in "\$@"; do
		if [ \$way = recorded ]; then
			z=
			[ \$r = 2 ] && z=-z
			hypertrace-bpf record -q \$z -o /tmp/rec\$r.htr -p \$QPID --nr 1101 -- l2cmd recorded\$r "ht_cost recorded $ITER" >/out/rec\$r.out 2>&1
			echo "REC \$r \$(stat -c %s /tmp/rec\$r.htr) \$(sed -n 's/^hypertrace-bpf: \\([0-9]*\\) records, \\([0-9]*\\) dropped.*/\\1 \\2/p' /out/rec\$r.out) \$z" >>/out/rec.txt
			rm -f /tmp/rec\$r.htr
			# One line per step on the console: the silence watchdog watches it.
			say "recorded \$r: \$(tail -n 1 /out/rec.txt)"
		else
			l2cmd \$way\$r "ht_cost \$way $ITER" >/dev/null
			say "\$way \$r: \$(tr -d '\\r' <\$CON | grep "^COST \$way " | tail -n 1)"
		fi
	done
	r=\$((r + 1))
done
l2_stop
EOF

bench_nested_run ""
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
	function lowest(list,   n, a, i, m) { n = split(list, a, " "); m = a[1] + 0; for (i = 2; i <= n; i++) if (a[i] + 0 < m) m = a[i] + 0; return m }
	function highest(list,   n, a, i, m) { n = split(list, a, " "); m = a[1] + 0; for (i = 2; i <= n; i++) if (a[i] + 0 > m) m = a[i] + 0; return m }
	# A cost per event from paired differences: the median, or "inconclusive"
	# when the rounds do not agree on its sign.
	function cost(list) {
		if (split(list, x, " ") == 0) return "n/a"
		if (lowest(list) <= 0) return "inconclusive"
		return sprintf("%.1f", median(list))
	}
	function spread(list) { return split(list, x, " ") ? sprintf("%.1f..%.1f", lowest(list), highest(list)) : "" }
	# The k-th COST line of a way is that way in round k.
	FILENAME ~ /cost/ { k = ++seen[$2]; secs[$2, k] = $4 - $3; if ($2 == "ftrace") { fev[k] = $5; fby = fby " " $6 } next }
	$1 == "REC" { hev[$2] = $4; recs = recs " " $4; if ($6 == "-z") { zb = $3; zr = $4 } else { pb = pb " " $3; pr = pr " " $4 }; drops += $5 }
	END {
		rounds = seen["off"]
		for (r = 1; r <= rounds; r++) {
			off = secs["off", r]; all_off = all_off " " off
			all_ft = all_ft " " secs["ftrace", r]; all_mo = all_mo " " secs["module", r]; all_re = all_re " " secs["recorded", r]
			if (fev[r] > 0 && ("ftrace", r) in secs) d_ft = d_ft " " (secs["ftrace", r] - off) / fev[r] * 1e6
			if (hev[r] > 0 && ("module", r) in secs) d_mo = d_mo " " (secs["module", r] - off) / hev[r] * 1e6
			if (hev[r] > 0 && ("recorded", r) in secs) d_re = d_re " " (secs["recorded", r] - off) / hev[r] * 1e6
			if (fev[r] > 0 && hev[r] > 0 && secs["ftrace", r] > off) {
				rt_mo = rt_mo " " ((secs["module", r] - off) / hev[r]) / ((secs["ftrace", r] - off) / fev[r])
				rt_re = rt_re " " ((secs["recorded", r] - off) / hev[r]) / ((secs["ftrace", r] - off) / fev[r])
			}
		}
		fe = median(fev_list()); fb = median(fby); ev = median(recs)
		cft = cost(d_ft); cmo = cost(d_mo); cre = cost(d_re)
		printf "HTCOST seconds off %.2f ftrace %.2f module %.2f recorded %.2f\n", median(all_off), median(all_ft), median(all_mo), median(all_re)
		printf "HTCOST us_per_event ftrace %s module %s recorded %s\n", cft, cmo, cre
		printf "HTCOST events ftrace %d host %d drops %d\n", fe, ev, drops
		printf "HTCOST bytes ftrace %d plain %d/%d compressed %d/%d\n", fb, median(pb), median(pr), zb, zr
		printf "Guest-side cost per sched_switch event, %d iterations, %d rounds in rotated order; paired medians (SOFTWARE-EMULATED: ratios only)\n", iter, rounds
		printf "  %-42s %8s %10s %14s %14s %7s\n", "", "seconds", "events", "us/event", "round range", "ratio"
		printf "  %-42s %8.2f %10s %14s %14s %7s\n", "workload, nothing traced", median(all_off), "", "", "", ""
		printf "  %-42s %8.2f %10d %14s %14s %7s\n", "guest ftrace (sched_switch)", median(all_ft), fe, cft, spread(d_ft), cft == "inconclusive" ? "" : "1.00"
		printf "  %-42s %8.2f %10d %14s %14s %7s\n", "hypertrace_guest.ko, host not recording", median(all_mo), ev, cmo, spread(d_mo),
			(cmo == "inconclusive" || cft == "inconclusive" || rt_mo == "") ? "" : sprintf("%.2f", median(rt_mo))
		printf "  %-42s %8.2f %10d %14s %14s %7s\n", "hypertrace_guest.ko + hypertrace-bpf record", median(all_re), ev, cre, spread(d_re),
			(cre == "inconclusive" || cft == "inconclusive" || rt_re == "") ? "" : sprintf("%.2f", median(rt_re))
		if (cft == "inconclusive" || cmo == "inconclusive" || cre == "inconclusive")
			printf "  inconclusive on this machine: in some rounds the untraced run was as slow as a traced one (the range above); no cost is shown for that way\n"
		printf "Bytes per event\n"
		printf "  %-42s %10.1f %7.2f\n", "guest ftrace buffer", fb / fe, 1
		printf "  %-42s %10.1f %7.2f\n", "host file, plain blocks", median(pb) / median(pr), (median(pb) / median(pr)) / (fb / fe)
		if (zr) printf "  %-42s %10.1f %7.2f\n", "host file, --compress", zb / zr, (zb / zr) / (fb / fe)
		if (drops) printf "  note: the host dropped %d events\n", drops
	}
	function fev_list(   r, l) { for (r = 1; r <= rounds; r++) l = l " " fev[r]; return l }' "$work/cost.txt" "$work/rec.txt"
