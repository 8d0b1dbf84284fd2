#!/usr/bin/env bash
# Hypertracing on real guest events: inside the nested machine
# (tests/e2e/nested.sh), Debian's qemu runs a Linux KVM guest (Debian's
# kernel, 2 vCPUs) that loads the guest module (guest/module, built against
# that kernel's headers); hypertrace-bpf records its hypercalls in the
# nested machine and `report` decodes and analyses them there.
#
# What is checked against the guest's own account:
#   - sched_switch: the guest's ftrace records sched_switch at the same time;
#     per guest CPU the host's decoded (prev_tid, next_tid) sequence is one
#     unbroken run of ftrace's (nothing lost, nothing added), the run covers
#     the whole workload, and neither side dropped anything;
#   - function entry/exit of __x64_sys_sync and iterate_supers while the
#     workload runs `sync` a known number of times: all paired, nested,
#     durations > 0, named by --guest-symbols with the nested machine's own
#     kallsyms (the same kernel at another KASLR base: the offset comes from
#     the module's anchor event), and the addresses are the guest's;
#   - user markers from the guest's hypercall program, decoded with a user
#     catalog;
#   - a paused VM (its QEMU's stop and cont between two guest markers): each
#     marker's ftrace time, mapped by report --clock --map, lands just
#     before its hypercall's exit, and a clock held through the pause is
#     found as a step of that size;
#   - clock pairs: the guest's ftrace timestamps of those sched_switch
#     events, mapped onto the host's clock with report --clock's fit, fall
#     just before the host's exit of the module's hypercall for the same
#     event (the module's probe runs after ftrace's, interrupts off);
#   - the module's own nr issued from guest user space (KVM traces them
#     before its privilege check) are dropped by the BPF programs, counted
#     and said at the end of record, never in the file; the module's load
#     event carries its text range, which holds its own RIP;
#   - unloading under load leaves the guest healthy and a second load works;
#   - the LTTng exports of the --vcpu-sched recording and of a default one
#     give Trace Compass's fused VM analysis a complete view, replayed as
#     its source is written (tests/export/check_lttng.py);
#   - the module refuses to load where the hypervisor is not KVM (the nested
#     machine itself runs under QEMU's TCG).
#
# Needs `make static` and apt access on the first run. HT_E2E=0 skips it.
set -euo pipefail
export NESTED_TIMEOUT=${NESTED_TIMEOUT:-900}
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/nested.sh"
source "$(dirname "$0")/l2_guest.sh"
source "$TOP/tests/guest_kernel.sh"

HT_STATIC=${HT_STATIC:-$OUTPUT/static/hypertrace-bpf}
HYPERCALL=${HYPERCALL:-$OUTPUT/guest/hypercall}
# As tests/e2e/test_nested_qemu.sh: one emulated CPU (two froze the KVM
# guest under TCG), memory for qemu in the initramfs, TSC clocksource, no NPT.
export NESTED_SMP=1 NESTED_MEM=${NESTED_MEM:-2048}
export NESTED_APPEND="tsc=reliable" NESTED_KVM_AMD_PARAMS="npt=0"
export NESTED_STAGE_HOOK=stage_qemu_and_guest

if [ "${HT_E2E:-1}" = 0 ]; then
	skip nested_hypertrace "disabled by HT_E2E=0"
	exit 0
fi
for f in "$HT_STATIC" "$HYPERCALL"; do
	if [ ! -x "$f" ]; then
		fail nested_hypertrace "$f is missing: run 'make static' first"
		suite_exit
	fi
done
if ! declare -F nested_stage_program >/dev/null; then
	skip nested_hypertrace "tests/e2e/nested.sh cannot stage qemu and a KVM guest yet (no nested_stage_program)"
	exit 0
fi

work=$(mktemp -d)
L2_WORK=$work
trap '[ "${HT_E2E_KEEP:-0}" = 1 ] && echo "  info: kept $work" || rm -rf "$work"' EXIT

KO=$OUTPUT/guest/module/hypertrace_guest.ko

# The functions probed, and the workload's known number of sync() calls.
SYNCS=5
FUNCS=__x64_sys_sync,iterate_supers
# Hypercalls with the module's sched_switch nr from guest user space.
FORGED=4
# The module's clock pairs: one every CLOCK_MS ms (and at load and unload).
CLOCK_MS=20

# --- the KVM guest (L2): tests/e2e/l2_guest.sh, with the module and these scripts ---
# In the guest: ftrace and the module over the same workload. Prints the
# guest's kallsyms lines of the probed functions (L2SYM), ftrace's
# sched_switch events (FT CPU TIME PREV NEXT), the workload's bounds in
# ftrace time (FTMARK BEGIN|END TIME) and ftrace's overruns (FTOVERRUN).
l2_sched_and_functions() {
	cat <<EOF
#!/bin/sh
T=/sys/kernel/tracing
mount -t tracefs nodev \$T || exit 1
echo 1 >\$T/events/sched/sched_switch/enable
echo 1 >\$T/tracing_on
# The probed functions' addresses here, with every alias at them.
for f in __x64_sys_sync iterate_supers; do
	a=\$(grep " \$f\$" /proc/kallsyms | cut -d' ' -f1)
	grep "^\$a " /proc/kallsyms | sed "s/^/L2SYM \$f /"
done
insmod /hypertrace_guest.ko sched_switch=1 irq=1 functions=$FUNCS clock_ms=$CLOCK_MS || exit 1
echo HT-BEGIN >\$T/trace_marker
hypercall -N 3 --nr 1201 --text 'workload begins' >/dev/null
taskset 1 sh -c 'i=0; while [ \$i -lt $SYNCS ]; do sync; usleep 3000; i=\$((i + 1)); done' &
# Console output raises the serial port's interrupt: IRQ events.
taskset 2 sh -c 'i=0; while [ \$i -lt 20 ]; do usleep 2000; echo "tick \$i"; i=\$((i + 1)); done'
wait
# Guest user space forging the module's sched_switch: recorded, never decoded.
hypercall -N $FORGED --nr 1101 --a1 0 >/dev/null
echo HT-END >\$T/trace_marker
rmmod hypertrace_guest || exit 1
echo 0 >\$T/tracing_on
awk '/ sched_switch: / {
	cpu = \$0; sub(/^.*\\[/, "", cpu); sub(/\\].*/, "", cpu)
	t = \$0; sub(/: sched_switch: .*/, "", t); sub(/.* /, "", t)
	p = \$0; sub(/.* prev_pid=/, "", p); sub(/ .*/, "", p)
	n = \$0; sub(/.* next_pid=/, "", n); sub(/ .*/, "", n)
	print "FT", cpu + 0, t, p, n
}
/tracing_mark_write: HT-(BEGIN|END)/ {
	t = \$0; sub(/: tracing_mark_write: .*/, "", t); sub(/.* /, "", t)
	m = \$0; sub(/.*HT-/, "", m)
	print "FTMARK", m, t
}' \$T/trace
for s in \$T/per_cpu/cpu*/stats; do sed -n 's/^overrun: /FTOVERRUN /p' \$s; done
EOF
}

# In the guest: unload while a load runs, check the guest still answers, load again.
l2_unload_under_load() {
	cat <<'EOF'
#!/bin/sh
taskset 1 sh -c 'while :; do sync; usleep 500; done' &
L1=$!
taskset 2 sh -c 'while :; do usleep 300; done' &
L2=$!
usleep 300000
rmmod hypertrace_guest || { echo "UNLOAD-FAILED"; kill $L1 $L2; exit 1; }
usleep 200000
insmod /hypertrace_guest.ko sched_switch=1 functions=__x64_sys_sync || { echo "RELOAD-FAILED"; kill $L1 $L2; exit 1; }
usleep 300000
rmmod hypertrace_guest || { echo "SECOND-UNLOAD-FAILED"; kill $L1 $L2; exit 1; }
kill $L1 $L2
wait 2>/dev/null
echo "ALIVE $(cat /proc/loadavg)"
# From the module's first load on (the boot may warn about the emulated CPU),
# with each report's RIP line: it tells a halted vCPU woken late (stalls.sh).
dmesg | awk '/hypertrace_guest/ { on = 1 } on' | grep -E 'BUG|Oops|WARNING|hypertrace_guest|RIP: ' | sed 's/^/DMESG /'
ht_cpu_times
EOF
}

# In the guest: its uptime and each CPU's idle time (idle and iowait, in
# USER_HZ ticks, from /proc/stat), at the module's load and at the end of the
# unload test: the window over which stall_verdict --idle tells a vCPU halted
# and woken late from one stuck running.
l2_cpu_times() {
	cat <<'EOF'
#!/bin/sh
echo "CPUTIMES-AT $(cut -d' ' -f1 /proc/uptime)"
awk '/^cpu[0-9]/ { print "CPUTIMES-IDLE", substr($1, 4), $5 + $6 }' /proc/stat
EOF
}

# cpu_idle_window FROM TO: stall_verdict's --idle lines from two outputs of
# ht_cpu_times (the window's start and end).
cpu_idle_window() {
	awk 'FNR == 1 { part++ }
		$1 == "CPUTIMES-AT" { at[part] = $2 }
		$1 == "CPUTIMES-IDLE" { ticks[part, $2] = $3; cpus[$2] = 1 }
		END {
			if (!(1 in at) || !(2 in at)) exit
			print "window", at[1], at[2]
			for (c in cpus) if ((1, c) in ticks && (2, c) in ticks)
				printf "idle %d %.2f\n", c, (ticks[2, c] - ticks[1, c]) / 100
		}' "$1" "$2"
}

# In the guest: the module's clock pairs, a trace marker and a hypercall
# (nr 1201) before and after a sleep in which the host pauses the VM (its
# QEMU's stop and cont); ftrace's lines of the two markers (PZTRACE).
l2_pause_marks() {
	cat <<EOF
#!/bin/sh
T=/sys/kernel/tracing
echo >\$T/trace
echo 1 >\$T/tracing_on
insmod /hypertrace_guest.ko clock_ms=$CLOCK_MS || exit 1
usleep 300000
echo PZ-A >\$T/trace_marker
hypercall -N 1 --nr 1201 --text A >/dev/null
echo PZ-WAITING
usleep 4000000
echo PZ-B >\$T/trace_marker
hypercall -N 1 --nr 1201 --text B >/dev/null
usleep 300000
rmmod hypertrace_guest || exit 1
grep 'tracing_mark_write: PZ-' \$T/trace | sed 's/^/PZTRACE /'
EOF
}

stage_qemu_and_guest() {
	local stage=$1
	l2_sched_and_functions >"$work/ht_sched_and_functions"
	l2_unload_under_load >"$work/ht_unload_under_load"
	l2_pause_marks >"$work/ht_pause_marks"
	l2_cpu_times >"$work/ht_cpu_times"
	chmod 755 "$work/ht_sched_and_functions" "$work/ht_unload_under_load" "$work/ht_pause_marks" "$work/ht_cpu_times"
	L2_FILES=("$KO:hypertrace_guest.ko" "$HYPERCALL:bin/hypercall"
		"$work/ht_sched_and_functions:bin/ht_sched_and_functions"
		"$work/ht_unload_under_load:bin/ht_unload_under_load"
		"$work/ht_pause_marks:bin/ht_pause_marks" "$work/ht_cpu_times:bin/ht_cpu_times")
	l2_stage "$stage" || return 1
	# The nested machine tries the module too: it must refuse there.
	mkdir -p "$stage/ht" && cp "$KO" "$stage/ht/"
}

# --- the nested machine's side (L1) -----------------------------------------------------
cat >"$work/guest.sh" <<'EOF'
. /bin/l2lib.sh

# Here, under QEMU's TCG, the module must refuse.
insmod /ht/hypertrace_guest.ko sched_switch=1 >/out/l1_insmod.out 2>&1
echo $? >/out/l1_insmod.rc
dmesg | grep hypertrace_guest >/out/l1_dmesg.txt
# This machine runs the guest's kernel at another KASLR base: its kallsyms is
# the guest's symbol table with an offset, as a System.map would be.
cat /proc/kallsyms >/tmp/l1.kallsyms
cat >/tmp/marker.cat <<'CAT'
# The test's user marker: hypercall --nr 1201 --text TEXT.
1201 test_marker tag=a0-a3:str
CAT
NRS="--nr 1100 --nr 1101 --nr 1103 --nr 1104 --nr 1105 --nr 1106 --nr 1107 --nr 1201"

# Two vCPUs whose KVM vcpu_ids (the APIC IDs QEMU gives) have a gap: one in
# socket 0, one hot-plugged at start into socket 1 of 2-core sockets: 0 and 2,
# while the guest numbers its CPUs 0 and 1.
# Its QEMU's monitor on two FIFOs (QEMU opens them read-write: no wait), to pause it below.
mkfifo /tmp/hyper.mon.in /tmp/hyper.mon.out
l2_start hyper "1,sockets=2,cores=2,maxcpus=4 -device host-x86_64-cpu,socket-id=1,core-id=0,thread-id=0 -monitor pipe:/tmp/hyper.mon" || exit 1
# --vcpu-sched: the host's switches of the vCPU threads too, for the exports' preempted state.
timeout 900 hypertrace-bpf record -q --vcpu-sched -o /tmp/s.htr -p $QPID $NRS -- l2cmd s ht_sched_and_functions >/out/s.out 2>/out/s.err
echo $? >/out/s.rc
hypertrace-bpf report --dump --catalog /tmp/marker.cat /tmp/s.htr >/out/s.dump 2>/out/s.dump.err
echo $? >/out/s.dump.rc
hypertrace-bpf report --graph --guest-symbols /tmp/l1.kallsyms /tmp/s.htr >/out/s.graph 2>/out/s.graph.err
echo $? >/out/s.graph.rc
hypertrace-bpf report --dump --guest-symbols /tmp/l1.kallsyms /tmp/s.htr 2>&1 | grep ' => func_entry: ' >/out/s.symdump
hypertrace-bpf report --sched /tmp/s.htr >/out/s.sched 2>/out/s.sched.err
# The trace itself, for the exports on the host (babeltrace2, Python's json,
# the LTTng and Perfetto readers), and the symbols that name its functions.
cp /tmp/s.htr /out/s.htr
cp /tmp/l1.kallsyms /out/l1.kallsyms
echo $? >/out/s.sched.rc
say "sched and functions done"
# Loaded before this recording: it holds the unload, the reload and the second unload.
l2cmd u0 "insmod /hypertrace_guest.ko sched_switch=1 functions=__x64_sys_sync && ht_cpu_times" >/dev/null
echo $? >/out/u0.rc
timeout 900 hypertrace-bpf record -q -o /tmp/u.htr -p $QPID $NRS -- l2cmd u ht_unload_under_load >/out/u.out 2>/out/u.err
echo $? >/out/u.rc
hypertrace-bpf report --dump /tmp/u.htr >/out/u.dump 2>/out/u.dump.err
echo $? >/out/u.dump.rc
cp /tmp/u.htr /out/u.htr
# The VM paused for 2 s (QEMU's stop and cont, as an operator, a snapshot or
# a migration pauses it) between the guest's two markers, while its module
# sends clock pairs.
timeout 900 hypertrace-bpf record -q -o /tmp/pz.htr -p $QPID --nr 1107 --nr 1201 -- l2cmd pz ht_pause_marks >/out/pz.out 2>/out/pz.err &
REC=$!
i=0
while ! grep -q '^PZ-WAITING' "$CON" && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
usleep 500000
echo stop >/tmp/hyper.mon.in
cut -d' ' -f1 /proc/uptime >/out/pz.stopped
sleep 2
echo cont >/tmp/hyper.mon.in
cut -d' ' -f1 /proc/uptime >/out/pz.continued
wait $REC
echo $? >/out/pz.rc
cp /tmp/pz.htr /out/pz.htr
l2cmd alive "echo STILL-ALIVE" >/dev/null
echo $? >/out/alive.rc
l2_stop
EOF

start=$(date +%s)
if ! nested_fetch 2>"$work/fetch.log"; then
	fail nested_hypertrace_boot "cannot fetch qemu/kernel/busybox: $NESTED_ERR"
	suite_exit
fi
# --- the guest module, for exactly the kernel the guest boots -------------------------------
if ! guest_kernel_fetch "$(cat "$NESTED_ROOT/kernel/release" 2>/dev/null)"; then
	fail nested_hypertrace_module_build "cannot fetch the guest kernel headers: $GK_ERR"
	suite_exit
fi
if ! make -C "$TOP" -s guest-module KDIR="$GK_KDIR" >"$work/kmod.log" 2>&1; then
	fail nested_hypertrace_module_build "make guest-module failed: $(tail -n 3 "$work/kmod.log" | tr '\n' ' ')"
	suite_exit
fi
out=$work/out
# After an emulation stall (the L2 guest did not boot, say), nested_run runs
# the whole machine once more (tests/e2e/nested.sh).
# shellcheck disable=SC2046
if ! nested_run "$out" "$work/guest.sh" "$HT_STATIC" $(l2_l1_files) 2>"$work/run.log"; then
	fail nested_hypertrace_boot "$NESTED_ERR"
	suite_exit
fi
pass nested_hypertrace_boot
echo "  info: qemu run $(cat "$out/qemu_seconds") s, whole test $(($(date +%s) - start)) s"
F=$out/files

rc() { cat "$F/$1" 2>/dev/null || echo missing; }
tail_of() { tail -n 3 "$1" 2>/dev/null | tr '\n' '|'; }
guest_output() { l2_output "$F/hyper.console" "$1"; }
guest_status() { l2_status "$F/hyper.console" "$1"; }

# --- the module refuses outside KVM -------------------------------------------------------
if [ "$(rc l1_insmod.rc)" != 0 ] && grep -q "the hypervisor is not KVM" "$F/l1_dmesg.txt" 2>/dev/null; then
	pass module_refuses_to_load_under_a_non_kvm_hypervisor
else
	fail module_refuses_to_load_under_a_non_kvm_hypervisor "insmod status $(rc l1_insmod.rc), dmesg: $(tail_of "$F/l1_dmesg.txt")"
fi

# --- recording --------------------------------------------------------------------------
S=$(guest_output s)
if [ "$(guest_status s)" != 0 ]; then
	fail module_loads_in_a_kvm_guest "the guest script exited with '$(guest_status s)': $(tail -n 5 <<<"$S" | tr '\n' '|')"
	suite_exit
fi
pass module_loads_in_a_kvm_guest
if [ "$(rc s.rc)" = 0 ] && grep -q "^hypertrace-bpf: [0-9]* records, 0 dropped" "$F/s.out" &&
	grep -q "^hypertrace-bpf: of the records, [1-9][0-9]* switches of vCPU threads; 0 lost" "$F/s.out"; then
	pass record_of_guest_events_drops_nothing
else
	fail record_of_guest_events_drops_nothing "record status $(rc s.rc): $(grep '^hypertrace-bpf:' "$F/s.out" || tail_of "$F/s.err")"
fi
overruns=$(awk '$1 == "FTOVERRUN" { s += $2 } END { print s + 0 }' <<<"$S")
echo "  info: $(grep '^hypertrace-bpf:' "$F/s.out" || true); guest ftrace overruns $overruns"

# --- sched_switch: the host's decoded events against the guest's ftrace ------------------
# host: "CPU PREV NEXT" per decoded sched_switch, in file order (per vCPU, time order).
sed -n 's/.* => sched_switch: prev_tid=\([0-9]*\) next_tid=\([0-9]*\) .* cpu_id=\([0-9]*\) .*/\3 \1 \2/p' "$F/s.dump" >"$work/host.seq"
awk '$1 == "FT" { print $2, $3, $4, $5 }' <<<"$S" >"$work/ftrace.seq"
verdict=$(awk -v begin="$(awk '$1 == "FTMARK" && $2 == "BEGIN" { print $3 }' <<<"$S")" \
	-v end="$(awk '$1 == "FTMARK" && $2 == "END" { print $3 }' <<<"$S")" '
	FNR == NR { h[$1, ++hn[$1]] = $2 ">" $3; cpus[$1] = 1; next }
	{ f[$1, ++fn[$1]] = $3 ">" $4; ft[$1, fn[$1]] = $2; cpus[$1] = 1 }
	END {
		if (begin == "" || end == "") { print "no workload markers in the guest ftrace"; exit }
		for (c in cpus) {
			if (!hn[c]) { print "cpu " c ": no host events, ftrace has " fn[c] + 0; exit }
			# Where the host run starts in ftrace: the first position whose
			# whole run matches.
			start = 0
			for (s = 1; s + hn[c] - 1 <= fn[c] && !start; s++) {
				ok = 1
				for (i = 1; i <= hn[c] && ok; i++) if (f[c, s + i - 1] != h[c, i]) ok = 0
				if (ok) start = s
			}
			if (!start) { print "cpu " c ": the host sequence (" hn[c] " events) is no unbroken run of ftrace s (" fn[c] ")"; exit }
			last = start + hn[c] - 1
			for (i = 1; i <= fn[c]; i++)
				if (ft[c, i] + 0 >= begin + 0 && ft[c, i] + 0 <= end + 0 && (i < start || i > last)) {
					print "cpu " c ": ftrace event " i " (" f[c, i] " at " ft[c, i] ") in the workload is missing on the host"; exit
				}
			total += hn[c]
			info = info " cpu" c "=" hn[c] "/" fn[c]
		}
		print "OK" total info
	}' "$work/host.seq" "$work/ftrace.seq")
echo "  info: sched_switch host/ftrace per CPU:${verdict#OK* }"
if [[ $verdict == OK* ]] && [ "$overruns" = 0 ] && [ -s "$work/host.seq" ]; then
	pass sched_switch_equals_guest_ftrace_per_cpu
else
	fail sched_switch_equals_guest_ftrace_per_cpu "${verdict} (ftrace overruns $overruns)"
fi

# --- clock pairs: the guest's own ftrace on the host's clock --------------------------------
# report --clock's line for ftrace's "local" clock (sched_clock, the guest's
# trace_clock_local),
# then each sched_switch ftrace recorded, mapped by it, against the host's
# exit of the module's hypercall for the same event (matched as above).
"$HT" report --clock --csv "$F/s.htr" >"$work/clock.csv" 2>"$work/clock.err"
read -r used refused has_rate rate intercept ppm res_max < <(awk -F, 'NR > 1 && $3 == "ftrace" { print $5, $6 + $7, $8, $9, $10, $11, $14; exit }' "$work/clock.csv")
echo "  info: guest ftrace clock: ${used:-no} pairs used, ${refused:-?} refused, ${ppm:-?} ppm, residual max ${res_max:-?} ns"
if [ "${has_rate:-0}" = 1 ] && [ "${used:-0}" -ge 5 ]; then
	pass clock_pairs_fit_the_guests_ftrace_clock
else
	fail clock_pairs_fit_the_guests_ftrace_clock "$(cat "$work/clock.csv" "$work/clock.err")"
fi
"$HT" report --csv -n 1101 "$F/s.htr" |
	sed -n 's/^\([0-9]*\),.*prev_tid=\([0-9]*\) next_tid=\([0-9]*\) .* cpu_id=\([0-9]*\) .*/\4 \2 \3 \1/p' >"$work/host.tseq"
# d = host exit - mapped ftrace time, ns, per matched event; ftrace prints microseconds.
clock_verdict=$(awk -v r="${rate:-1}" -v b="${intercept:-0}" '
	FNR == NR { h[$1, ++hn[$1]] = $2 ">" $3; hx[$1, hn[$1]] = $4; cpus[$1] = 1; next }
	{ f[$1, ++fn[$1]] = $3 ">" $4; ft[$1, fn[$1]] = $2 }
	END {
		n = 0
		for (c in cpus) {
			start = 0
			for (s = 1; s + hn[c] - 1 <= fn[c] && !start; s++) {
				ok = 1
				for (i = 1; i <= hn[c] && ok; i++) if (f[c, s + i - 1] != h[c, i]) ok = 0
				if (ok) start = s
			}
			if (!start) { print "cpu " c ": no run of ftrace matches the host"; exit }
			for (i = 1; i <= hn[c]; i++) d[++n] = hx[c, i] - (b + r * ft[c, start + i - 1] * 1e9)
		}
		if (!n) { print "no event"; exit }
		# sort d (insertion: a few hundred events)
		for (i = 2; i <= n; i++) { v = d[i]; for (j = i - 1; j >= 1 && d[j] > v; j--) d[j + 1] = d[j]; d[j + 1] = v }
		printf "OK %d %.0f %.0f %.0f %.0f\n", n, d[1], d[int((n + 1) / 2)], d[int(n * 0.99 + 0.999)], d[n]
	}' "$work/host.tseq" "$work/ftrace.seq")
read -r cv_ok cv_n cv_min cv_p50 cv_p99 cv_max <<<"$clock_verdict"
echo "  info: guest ftrace sched_switch on the host's clock, host exit - mapped ftrace time: ${cv_n:-0} events, min ${cv_min:-?} p50 ${cv_p50:-?} p99 ${cv_p99:-?} max ${cv_max:-?} ns"
# Causality: no event lands after its own hypercall's exit, beyond the fit's
# residual and ftrace's microsecond; and half of them land within 1 ms before
# it (the module's probe runs right after ftrace's, interrupts off; a vCPU
# preempted by this machine in between takes longer). A clock off by more
# than that, either way, fails one of the two.
if [ "${cv_ok:-}" = OK ] && [ "${cv_n:-0}" -ge 100 ] && [ "$cv_min" -ge $((-${res_max:-0} - 1000)) ] && [ "$cv_p50" -le 1000000 ]; then
	pass guest_ftrace_events_land_just_before_their_hypercalls_on_the_host_clock
else
	fail guest_ftrace_events_land_just_before_their_hypercalls_on_the_host_clock "$clock_verdict (residual max ${res_max:-?} ns)"
fi
if grep -q "^guest scheduling: [1-9][0-9]* sched_switch events on 2 vCPU(s), 0 gap(s)" "$F/s.sched" &&
	grep -q "  swapper/0 " "$F/s.sched" && grep -q "  usleep " "$F/s.sched"; then
	pass sched_summary_shows_guest_tasks_without_gaps
else
	fail sched_summary_shows_guest_tasks_without_gaps "$(head -n 3 "$F/s.sched" | tr '\n' '|')"
fi

# --- function entry/exit ---------------------------------------------------------------
G=$F/s.graph
# The syscall's name in the graph: the symbolizer picks one of the names the
# guest's kallsyms has at that address (__x64_sys_sync, __ia32_sys_sync, ...).
SYS=$(sed -n 's/.*|  \([A-Za-z0-9_]*\)() {$/\1/p' "$G" | sed -n 1p)
aliases=$(awk '$1 == "L2SYM" && $2 == "__x64_sys_sync" { print $5 }' <<<"$S" | tr '\n' ' ')
calls() { awk -v fn="$1" '$NF == fn && $1 ~ /^[0-9]+$/ { print $1 }' "$G"; }
if [ "$(rc s.graph.rc)" = 0 ] && grep -q "exits: [0-9]* paired calls, 0 exits without entry, 0 entries without exit; max depth 1" "$G" &&
	[ -n "$SYS" ] && [ "$(calls "$SYS")" = "$SYNCS" ] && [ "$(calls iterate_supers)" = $((3 * SYNCS)) ]; then
	pass function_calls_paired_and_counted
else
	fail function_calls_paired_and_counted "status $(rc s.graph.rc), '$SYS' $(calls "$SYS") (want $SYNCS), iterate_supers $(calls iterate_supers) (want $((3 * SYNCS))): $(grep '^# [0-9]* entries' "$G" || tail_of "$F/s.graph.err")"
fi
# Nesting: iterate_supers one level inside the syscall, three times per call.
nest=$(awk -v sys="$SYS" '$0 ~ "\\|  " sys "\\(\\) \\{$" { in_ = 1; n = 0; next }
	in_ && /\|    iterate_supers\(\);$/ { n++; next }
	in_ && index($0, "|  } /* " sys " */") { print n; in_ = 0 }' "$G" | sort -u | tr '\n' ' ')
durations=$(awk -v sys="$SYS" '/iterate_supers\(\);$/ || index($0, "} /* " sys " */") { for (i = 1; i < NF; i++) if ($(i + 1) == "us") { if ($i + 0 > 0) pos++; else zero++ } } END { print pos + 0, zero + 0 }' "$G")
if [ "$nest" = "3 " ] && [ "${durations#* }" = 0 ] && [ "${durations% *}" -gt 0 ]; then
	pass function_graph_nests_with_positive_durations
else
	fail function_graph_nests_with_positive_durations "iterate_supers per $SYS: '$nest' (want 3), durations >0/0: $durations"
fi
# The names came from the nested machine's kallsyms; the addresses are the
# guest's own (its kallsyms, printed in the guest): symbolized across KASLR bases.
guest_addr=$(awk '$1 == "L2SYM" && $2 == "__x64_sys_sync" && $5 == "__x64_sys_sync" { print $3 }' <<<"$S")
host_addr=$(sed -n 's/.* => func_entry: addr=\(0x[0-9a-f]*\) .*/\1/p' "$F/s.dump" | sed -n 1p)
l1_note=$(cat "$F/s.graph.err" 2>/dev/null)
if [ -n "$guest_addr" ] && [ "$((0x$guest_addr))" = "$((host_addr))" ] 2>/dev/null && [[ " $aliases" == *" $SYS "* ]] && [ -z "$l1_note" ]; then
	pass function_addresses_are_the_guests_and_symbolized
else
	fail function_addresses_are_the_guests_and_symbolized "guest kallsyms __x64_sys_sync '$guest_addr' (names there: $aliases), first func_entry addr '$host_addr' named '$SYS', report said '$l1_note'"
fi

# Call sites: the syscall is called from the syscall dispatcher, and
# iterate_supers from inside the syscall (or ksys_sync, where not inlined).
sites=$(awk -v sys="$SYS" '{
	for (i = 1; i <= NF; i++) { if ($i ~ /^addr=/) a = substr($i, 6); if ($i ~ /^call_site=/) c = substr($i, 11) }
	if (a ~ "^iterate_supers[+]" && index(c, sys "+") != 1 && c !~ /^ksys_sync[+]/) bad++
	else if (a ~ "^" sys "[+]" && c !~ /^do_syscall_64[+]/) bad++
	else n++
} END { print n + 0, bad + 0 }' "$F/s.symdump")
# The hypercalls come from the module, whose load address the nested
# machine's kallsyms (another boot) cannot know: no RIP may be named.
if [ "${sites% *}" = $((4 * SYNCS)) ] && [ "${sites#* }" = 0 ] && ! grep -q ' rip_sym=' "$F/s.symdump"; then
	pass function_call_sites_are_the_callers
else
	fail function_call_sites_are_the_callers "entries with the expected caller / not: $sites (want $((4 * SYNCS)) / 0), module RIPs named $(grep -c ' rip_sym=' "$F/s.symdump") times (want 0): $(head -n 2 "$F/s.symdump" | tr '\n' '|')"
fi

# --- IRQ handlers ---------------------------------------------------------------------------
# Per guest CPU, in time order: every entry of the serial port's handler has
# its exit next; the only exits without an entry come before the CPU's first
# entry (an interrupt in its handler when the module loaded: the module
# registers the exits first, and removes them last, so no entry loses its
# exit at either end).
irq_verdict=$(awk '
	/ => irq_handler_entry: / {
		c = $0; sub(/.* cpu_id=/, "", c); sub(/ .*/, "", c)
		if ($0 !~ / name="ttyS0"$/) { other++; next }
		if (open[c]) bad = bad " cpu " c ": an entry while one is open;"
		open[c] = 1; seen[c] = 1; n_in++
		next
	}
	/ => irq_handler_exit: / {
		c = $0; sub(/.* cpu_id=/, "", c); sub(/ .*/, "", c)
		if (open[c]) { open[c] = 0; paired++ } else if (!seen[c]) lead++; else bad = bad " cpu " c ": an exit without its entry;"
	}
	END {
		for (c in open) if (open[c]) bad = bad " cpu " c ": its last entry has no exit;"
		printf "%s %d %d %d %d%s\n", bad == "" ? "ok" : "bad", n_in, paired, lead, other, bad
	}' "$F/s.dump")
read -r irq_ok irq_in irq_paired irq_lead irq_other _ <<<"$irq_verdict"
echo "  info: serial port handler: $irq_in entries, $irq_paired with their exits, $irq_lead exits before the first entry, $irq_other other IRQs' entries"
if [ "$irq_ok" = ok ] && [ "$irq_in" -gt 0 ] && [ "$irq_paired" = "$irq_in" ] && [ "$irq_other" = 0 ]; then
	pass irq_handler_entries_and_exits_decoded
else
	fail irq_handler_entries_and_exits_decoded "$irq_verdict (ok/bad, serial entries, paired, exits before the first entry, other IRQs' entries)"
fi

# --- user markers -------------------------------------------------------------------------
markers=$(grep -c ' => test_marker: tag="workload begins"$' "$F/s.dump" || true)
if [ "$(rc s.dump.rc)" = 0 ] && [ "$markers" = 3 ]; then
	pass user_markers_decoded_with_user_catalog
else
	fail user_markers_decoded_with_user_catalog "$markers decoded markers, want 3 (report status $(rc s.dump.rc))"
fi

# --- forged events: the module's nr from guest user space -------------------------------------
# Dropped in BPF: none in the file (not even as forged), all counted by record.
forged_lines=$(grep -c " nr 1101 .* => (forged: " "$F/s.dump" || true)
forged_said=$(sed -n "s/^hypertrace-bpf: \([0-9]*\) hypercalls of the project's guest kernel events (nr 1100..1149) came from guest user space, not its kernel: forged, not recorded$/\1/p" "$F/s.out")
# The load event: its RIP inside the text range it announces.
load=$(grep -m 1 ' => hypertrace_module: state=1 ' "$F/s.dump" || true)
rip=$(sed -n 's/.* rip \(0x[0-9a-f]*\) .*/\1/p' <<<"$load")
text_start=$(sed -n 's/.* text_start=\(0x[0-9a-f]*\) .*/\1/p' <<<"$load")
text_size=$(sed -n 's/.* text_size=\([0-9]*\) .*/\1/p' <<<"$load")
in_text=no
if [ -n "$rip" ] && [ -n "$text_start" ] && [ "${text_size:-0}" -gt 0 ] &&
	python3 -c 'import sys; r, s, n = (int(x, 0) for x in sys.argv[1:]); s |= 0xffffffff00000000; sys.exit(not s <= r < s + n)' \
		"$rip" "$text_start" "$text_size"; then
	in_text=yes
fi
if [ "$forged_lines" = 0 ] && [ "$forged_said" = "$FORGED" ] && ! grep -q "forged" "$F/s.sched" &&
	[ "$in_text" = yes ]; then
	pass forged_module_events_from_guest_user_space_are_dropped_and_counted
else
	fail forged_module_events_from_guest_user_space_are_dropped_and_counted "$forged_lines forged lines in --dump (want 0), record said '${forged_said:-nothing}' forged (want $FORGED), --sched says '$(grep forged "$F/s.sched" || true)', load event rip $rip in its text $text_start+$text_size: $in_text"
fi

# --- the exports of the real trace ---------------------------------------------------------
switches=$(grep -c ' => sched_switch: ' "$F/s.dump" || true)
if [ -s "$F/s.htr" ] && "$HT" convert --ctf "$work/ctf" "$F/s.htr" >/dev/null 2>&1 &&
	command -v babeltrace2 >/dev/null; then
	ctf_switches=$(babeltrace2 "$work/ctf" 2>/dev/null | grep -c ' sched_switch: .* next_comm = "' || true)
	if [ "$ctf_switches" = "$switches" ] && [ "$switches" -gt 0 ]; then
		pass ctf_export_has_guest_sched_switch_events
	else
		fail ctf_export_has_guest_sched_switch_events "babeltrace2 read $ctf_switches sched_switch events, the dump has $switches"
	fi
else
	fail ctf_export_has_guest_sched_switch_events "no trace file back, convert --ctf failed, or no babeltrace2 (run 'make deps')"
fi
if [ -s "$F/s.htr" ] && "$HT" convert --chrome "$work/s.json" "$F/s.htr" >/dev/null 2>&1 &&
	verdict=$(python3 -c 'import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
cpu = [e for e in ev if e.get("cat") == "guest_sched" and e["ph"] == "B"]
calls = [e for e in ev if e.get("cat") == "guest_call"]
print(len(cpu), len({e["tid"] for e in cpu}), len(calls))' "$work/s.json" 2>&1) &&
	[ "$verdict" = "$switches 2 $((8 * SYNCS))" ]; then
	pass chrome_export_has_guest_cpu_and_call_tracks
else
	fail chrome_export_has_guest_cpu_and_call_tracks "task slices, guest CPUs, call events: '${verdict:-convert failed}', want '$switches 2 $((8 * SYNCS))'"
fi

# The kernel-shaped exports of the real recording: LTTng for Trace Compass's VM
# analysis (lttng-modules' declarations for the recording's 6.1 kernel, the
# vCPU state model equal to report), Perfetto (protoc, report --csv).
if [ -s "$F/s.htr" ]; then
	source "$TOP/tests/export/export_checks.sh"
	check_kernel_exports real_guest "$F/s.htr" "$F/l1.kallsyms"
else
	fail real_guest_lttng_export_matches "no trace file came back from the nested machine"
fi

# The guest's CPUs 0 and 1 are KVM's vcpu_ids 0 and 2: the records carry
# both, and the LTTng guest trace numbers its CPUs by vcpu_id.
if [ -s "$F/s.htr" ] && ids=$("$HT" report --csv "$F/s.htr" 2>/dev/null | python3 -c '
import csv, re, sys
pairs = set()
for r in csv.DictReader(sys.stdin):
    m = re.search(r"\bcpu_id=(\d+)", r["fields"])
    if r["event"] and m:
        pairs.add((int(m[1]), int(r["vcpu_id"])))
print(" ".join(f"{c}:{v}" for c, v in sorted(pairs)))') &&
	"$HT" convert --lttng "$work/ids-exp" "$F/s.htr" >/dev/null 2>&1 &&
	streams=$(ls "$work"/ids-exp/guest-*/ | grep channel0_ | tr '\n' ' ') &&
	[ "$ids" = "0:0 1:2" ] && [ "$streams" = "channel0_0 channel0_2 " ]; then
	pass real_guest_cpus_are_kvm_vcpu_ids_with_a_gap
else
	fail real_guest_cpus_are_kvm_vcpu_ids_with_a_gap "guest CPU:vcpu_id pairs '${ids:-}' (want 0:0 1:2), LTTng guest streams '${streams:-}'"
fi

# The default mode (no --vcpu-sched: the unload-under-load recording): its
# LTTng export replayed as Trace Compass's fused VM analysis is written
# (tests/export/check_lttng.py); the --vcpu-sched one is in check_kernel_exports.
if ! command -v babeltrace2 >/dev/null || ! /usr/bin/python3 -c 'import bt2' 2>/dev/null; then
	skip real_guest_default_mode_lttng_fused_view "babeltrace2 and python3-bt2 are not installed: run 'make deps' as root"
elif [ -s "$F/u.htr" ] && "$HT" report --csv "$F/u.htr" >"$work/u.csv" 2>/dev/null &&
	"$HT" report --sched "$F/u.htr" >"$work/u.sched" 2>/dev/null &&
	"$HT" convert --lttng "$work/u-exp" "$F/u.htr" >/dev/null 2>&1 &&
	out=$(/usr/bin/python3 "$TOP/tests/export/check_lttng.py" "$work/u-exp" "$work/u.csv" "$work/u.sched" 2>&1) &&
	grep -q "kvm_x86_entry placing its VM [1-9]" <<<"$out" && grep -q "guest events placed [1-9]" <<<"$out"; then
	pass real_guest_default_mode_lttng_fused_view
	echo "$out" | sed -n 1p
else
	fail real_guest_default_mode_lttng_fused_view "${out:-no default-mode trace file came back from the nested machine}"
fi
# The default-mode recording's Perfetto export, read back as the --vcpu-sched
# one's is (check_kernel_exports: protoc and the Perfetto checker's import
# rules against report); its LTTng export is checked just above.
if [ -s "$F/u.htr" ]; then
	source "$TOP/tests/export/export_checks.sh"
	check_kernel_exports real_guest_default_mode "$F/u.htr" "$F/l1.kallsyms" perfetto
else
	fail real_guest_default_mode_perfetto_export_matches "no default-mode trace file came back from the nested machine"
fi

# --- unload under load, reload --------------------------------------------------------------
U=$(guest_output u)
states=$(sed -n 's/.* => hypertrace_module: state=\([01]\) .*/\1/p' "$F/u.dump" | tr -d '\n')
switches=$(grep -c ' => sched_switch: ' "$F/u.dump" || true)
# Any BUG, Oops or WARNING fails; a soft lockup only where it is a halted vCPU
# woken late (the emulator's, tests/e2e/stalls.sh: "pause"), told by the
# guest's own idle time from the module's load to the end.
guest_output u0 >"$work/u0.out"
guest_output u >"$work/u.out"
cpu_idle_window "$work/u0.out" "$work/u.out" >"$work/u.idle"
idle_opt=()
[ -s "$work/u.idle" ] && idle_opt=(--idle "$work/u.idle")
reports=$(stall_verdict "${idle_opt[@]}" 2 <(sed -n 's/^DMESG //p' <<<"$U"))
if [ "$(guest_status u)" = 0 ] && grep -q "^ALIVE " <<<"$U" && { [ -z "$reports" ] || [[ $reports == pause:* ]]; } &&
	[ "$(rc alive.rc)" = 0 ] && [ "$states" = 010 ] && [ "$switches" -gt 0 ]; then
	pass unload_under_load_leaves_guest_healthy_and_reload_works
	[ -z "$reports" ] || echo "  info: the guest's kernel log: $reports; its CPUs' idle time: $(tr '\n' ' ' <"$work/u.idle")"
else
	fail unload_under_load_leaves_guest_healthy_and_reload_works "guest status '$(guest_status u)', module states '$states' (want 010), $switches sched_switch, alive $(rc alive.rc), kernel reports '${reports:-none}', CPUs' idle time '$(tr '\n' ' ' <"$work/u.idle")': $(grep -E '^(DMESG|[A-Z-]*FAILED)' <<<"$U" | tr '\n' '|')"
fi

# --- a paused VM: the guest's clock on each side of the pause -------------------------------
# The guest's ftrace lines of its two markers, mapped onto the host's clock by
# report --clock --map, against the host's exits of the hypercalls the guest
# made right after each (d = exit - mapped time): no marker after its exit
# beyond the fit's residual and ftrace's microsecond, none more than 1.5 s
# before it (the fork and exec of hypercall took 230-290 ms here). Whether
# the guest's clock was held is the guest's own measure: the host's time
# between the two exits less the guest's between the two markers; held,
# report --clock must find one step, within 250 ms of the pause as this
# machine timed its stop and cont (the recording's clock); not held, none.
# One line through both sides would put the few pairs before the pause on
# the line of the many after it: the first marker 2 s late, after its exit.
PZ=$(guest_output pz)
sed -n 's/^PZTRACE //p' <<<"$PZ" | tr -d '\r' >"$work/pz.trace"
"$HT" report --clock --csv "$F/pz.htr" >"$work/pz.csv" 2>"$work/pz.clock.err"
"$HT" report --clock --map "$work/pz.trace" "$F/pz.htr" >"$work/pz.mapped" 2>"$work/pz.map.err"
"$HT" report --csv -n 1201 "$F/pz.htr" 2>/dev/null |
	awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "exit_ns") e = i; next } { print $e }' >"$work/pz.exits"
read -r pz_used pz_sides pz_step pz_res < <(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	$c["clock"] == "ftrace" { print $c["used"], $c["sides"], $c["max_step_ns"], $c["residual_max_ns"]; exit }' "$work/pz.csv")
# marker time: the field before ": tracing_mark_write:", in seconds.
mark_times() { sed -n 's/^.* \([0-9.]*\): tracing_mark_write: PZ-[AB].*$/\1/p' "$1"; }
pz_pause=$(awk -v a="$(rc pz.stopped)" -v b="$(rc pz.continued)" 'BEGIN { printf "%.0f", (b - a) * 1e9 }')
pz_verdict=$(awk -v res="${pz_res:-0}" -v sides="${pz_sides:-0}" -v step="${pz_step:-0}" -v pause="$pz_pause" '
	FILENAME == ARGV[1] { exit_ns[++ne] = $1; next }
	FILENAME == ARGV[2] { guest[++ng] = $1 * 1e9; next }
	{ mapped[++nm] = $1 * 1e9 }
	END {
		if (ne != 2 || ng != 2 || nm != 2) { printf "bad: %d exits, %d markers, %d mapped", ne, ng, nm; exit }
		bad = ""
		for (i = 1; i <= 2; i++) {
			d[i] = exit_ns[i] - mapped[i]
			if (d[i] < -res - 1000 || d[i] > 1.5e9) bad = bad " marker " i " " d[i] " ns before its exit;"
		}
		held = (exit_ns[2] - exit_ns[1]) - (guest[2] - guest[1])
		if (held > 1e9 && (sides != 2 || step - pause > 250e6 || pause - step > 250e6)) bad = bad " clock held " held " ns, " sides " sides, step " step " ns against a pause of " pause " ns;"
		if (held <= 1e9 && sides != 1) bad = bad " clock not held (" held " ns) but " sides " sides;"
		printf "%s held %.0f ns, %d sides, step %.0f ns, exit - mapped %.0f and %.0f ns%s", bad == "" ? "ok" : "bad", held, sides, step, d[1], d[2], bad
	}' "$work/pz.exits" <(mark_times "$work/pz.trace") <(mark_times "$work/pz.mapped"))
echo "  info: paused VM: $pz_verdict; stopped at $(rc pz.stopped) s, continued at $(rc pz.continued) s (the nested machine's uptime)"
if [ "$(rc pz.rc)" = 0 ] && [ "$(guest_status pz)" = 0 ] && [[ $pz_verdict == ok* ]]; then
	pass paused_vms_clock_maps_each_side_of_the_pause_onto_the_host
else
	fail paused_vms_clock_maps_each_side_of_the_pause_onto_the_host "record $(rc pz.rc), guest $(guest_status pz): $pz_verdict: $(cat "$work/pz.csv" "$work/pz.map.err" "$F/pz.err" 2>/dev/null | tr '\n' '|')"
fi
suite_exit
