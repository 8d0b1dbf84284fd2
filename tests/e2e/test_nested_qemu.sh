#!/usr/bin/env bash
# End-to-end test on the stack users run: inside the nested machine
# (tests/e2e/nested.sh), Debian's own qemu-system-x86 runs a Linux guest
# with KVM (Debian's kernel again, a busybox initramfs holding the static
# guest/hypercall), and hypertrace-bpf records the hypercalls that program
# issues from the guest's user space. Also checks that perf, counting the
# same tracepoints, sees every event while record runs.
#
# Layers: the host runs the emulated machine (QEMU/TCG, one CPU); in it,
# QEMU with KVM runs the guest, whose serial console is driven through a
# FIFO: each command line sent is answered by L2-BEGIN/L2-END markers.
#
# Needs `make static` and apt access on the first run (qemu, perf, the
# kernel and busybox are fetched into .cache/nested/). HT_E2E=0 skips it.
# Its verdicts are exact counts, none a time: its emulated machine may run
# on the other CPU while the other nested suites run (tests/run).
# tests/run: alongside the nested-machine suites
set -euo pipefail
# Before nested.sh, which sets its defaults.
export NESTED_TIMEOUT=${NESTED_TIMEOUT:-400}
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/nested.sh"
source "$(dirname "$0")/l2_guest.sh"

HT_STATIC=${HT_STATIC:-$OUTPUT/static/hypertrace-bpf}
MINIVM=${MINIVM:-$OUTPUT/guest/minivm}
HYPERCALL=${HYPERCALL:-$OUTPUT/guest/hypercall}
# Two CPUs under TCG froze the KVM guest in nearly every run (a lost SIPI or
# both vCPUs halted in PV-spinlock waits); with one, the guest's two vCPU
# threads still interleave on it. 2 GiB: the initramfs carries qemu and perf
# with their libraries (~70 MB) and the guest gets 256 MiB.
export NESTED_SMP=1 NESTED_MEM=${NESTED_MEM:-2048}
# tsc=reliable keeps the TSC clocksource (else HPET: every clock read of the
# BPF programs and the guest becomes an emulated device access). npt=0:
# about one run in 20-40 looped in nested page faults with NPT.
export NESTED_APPEND=${NESTED_APPEND:-tsc=reliable} NESTED_KVM_AMD_PARAMS=${NESTED_KVM_AMD_PARAMS:-npt=0}
export NESTED_STAGE_HOOK=l2_stage

if [ "${HT_E2E:-1}" = 0 ]; then
	skip nested_qemu "disabled by HT_E2E=0"
	exit 0
fi
for f in "$HT_STATIC" "$MINIVM" "$HYPERCALL"; do
	if [ ! -x "$f" ]; then
		fail nested_qemu "$f is missing: run 'make static' first"
		suite_exit
	fi
done

work=$(mktemp -d)
trap '[ "${HT_E2E_KEEP:-0}" = 1 ] && echo "  info: kept $work" || rm -rf "$work"' EXIT

# --- the KVM guest (L2): tests/e2e/l2_guest.sh, with guest/hypercall inside, and
# perf in the nested machine (L1) beside qemu.
L2_WORK=$work
L2_FILES=("$HYPERCALL:bin/hypercall")
L2_L1_PROGRAMS=(usr/bin/perf)

cat >"$work/guest.sh" <<'EOF'
. /bin/l2lib.sh
# rec NAME RECORD-ARGS...: records into /tmp/NAME.htr (or --no-file), exports
# the CSV; exit statuses in /out/NAME.rc and NAME.csv.rc.
rec() {
	name=$1
	shift
	timeout 150 hypertrace-bpf record -o /tmp/$name.htr "$@" >/out/$name.out 2>/out/$name.err
	echo $? >/out/$name.rc
	hypertrace-bpf report --csv /tmp/$name.htr >/out/$name.csv 2>>/out/$name.err
	echo $? >/out/$name.csv.rc
	# SELECT_VM=NAME: the same report selected by that VM name, and by a name not in the file.
	if [ -n "${SELECT_VM:-}" ]; then
		hypertrace-bpf report --csv --vm "$SELECT_VM" /tmp/$name.htr >/out/$name.vm.csv 2>>/out/$name.err
		hypertrace-bpf report --csv --vm no-such-vm /tmp/$name.htr >/out/$name.novm.csv 2>>/out/$name.err
	fi
	for m in dump json; do
		hypertrace-bpf report --$m /tmp/$name.htr 2>>/out/$name.err | sed -n 1,3p >/out/$name.$m
	done
	hypertrace-bpf report /tmp/$name.htr >/out/$name.report 2>>/out/$name.err
	rm -f /tmp/$name.htr
	say "$name: record status $(cat /out/$name.rc)"
}
nofile() {
	name=$1
	shift
	timeout 150 hypertrace-bpf record --no-file -i 60 "$@" >/out/$name.out 2>/out/$name.err
	echo $? >/out/$name.rc
	say "$name: record status $(cat /out/$name.rc)"
}

# perf counting the tracepoints record attaches to, without and with record
# running: the counts must not change (a BPF program returning 0 hides every
# event from perf). System-wide (-a): counted per task, perf saw no
# sched_process_exit at all. Nothing else runs here meanwhile, so the exits
# are the same both times: ten /bin/true plus minivm's threads and sh.
EV="-e kvm:kvm_hypercall -e kvm:kvm_exit -e sched:sched_process_exit"
LOAD='minivm --vcpus 1 --count 1000 >/dev/null; for i in 1 2 3 4 5 6 7 8 9 10; do /bin/true; done'
perf stat -a -x, -o /out/perf_off.txt $EV -- sh -c "$LOAD" >/out/perf_off.out 2>&1
echo $? >/out/perf_off.rc
rec perf_on -- perf stat -a -x, -o /out/perf_on.txt $EV -- sh -c "$LOAD"
say "perf done"

l2_start one 1 || exit 1
rec one -p $QPID -- l2cmd one_a hypercall -N 200
rec one_z -z -p $QPID -- l2cmd one_z hypercall -N 200
nofile one_nofile -p $QPID -- l2cmd one_nofile hypercall -N 200
l2_stop

# Two vCPUs, one hypercall program pinned to each guest CPU at the same time;
# a1 says which CPU issued it.
TWO='taskset 1 hypercall -N 100 --a1 0 & taskset 2 hypercall -N 100 --a1 1; wait'
l2_start two 2 || exit 1
SELECT_VM=two rec two -p $QPID -- l2cmd two_a "$TWO"
# Compressed, and the VM selected by its QEMU name instead of its pid.
rec two_z -z --vm two -- l2cmd two_z "$TWO"
rec two_vcpu1 -p $QPID --vcpu 1 -- l2cmd two_vcpu1 "$TWO"
nofile two_nofile --per-vcpu -p $QPID -- l2cmd two_nofile "$TWO"
# Another process's pid: the guest's hypercalls happen, none is recorded.
rec two_other -p 1 -- l2cmd two_other "$TWO"
l2_stop
EOF

start=$(date +%s)
if ! nested_fetch 2>"$work/fetch.log"; then
	fail nested_qemu_boot "cannot fetch qemu/perf/kernel/busybox: $NESTED_ERR"
	suite_exit
fi
fetched=$(date +%s)
out=$work/out
# After an emulation stall (an L2 guest that did not boot included),
# nested_run runs the whole machine once more (tests/e2e/nested.sh).
# shellcheck disable=SC2046
if ! nested_run "$out" "$work/guest.sh" "$HT_STATIC" "$MINIVM" $(l2_l1_files) 2>"$work/run.log"; then
	fail nested_qemu_boot "$NESTED_ERR"
	suite_exit
fi
pass nested_qemu_boot
echo "  info: fetch/validate $((fetched - start)) s, qemu run $(cat "$out/qemu_seconds") s (script exit status $(cat "$out/status")), $NESTED_KICKS console kicks"
F=$out/files

rc() { cat "$F/$1" 2>/dev/null || echo missing; }
tail_of() { tail -n 3 "$1" 2>/dev/null | tr '\n' '|'; }

# guest_output NAME ID: what the guest printed for command ID.
guest_output() { l2_output "$F/$1.console" "$2"; }

# tid_of NAME VCPU: the tid of thread "CPU VCPU/KVM" of guest NAME's qemu.
tid_of() { awk -v want="CPU $2/KVM" '{ tid = $1; $1 = ""; sub(/^ /, "") } $0 == want { print tid }' "$F/$1.threads" 2>/dev/null; }

# check_summary NAME WANT: record exited 0 and said "WANT records, 0 dropped".
check_summary() {
	local name=$1 want=$2
	if [ "$(rc "$name.rc")" != 0 ]; then
		fail "${name}_record" "record exited with status $(rc "$name.rc"): $(tail_of "$F/$name.err")"
	elif ! grep -q "^hypertrace-bpf: $want records, 0 dropped" "$F/$name.out"; then
		fail "${name}_record" "summary is not '$want records, 0 dropped': $(grep '^hypertrace-bpf:' "$F/$name.out" || true)"
	else
		pass "${name}_record"
	fi
}

# qemu_csv_verdict CSV QPID PER_VCPU TIDS VM: nothing if the CSV holds, for
# each vCPU id in TIDS ("vcpu:tid ..."), PER_VCPU records with a0 =
# 0..PER_VCPU-1 once each and a1 = the vCPU id (the guest CPU the program was
# pinned to), from the qemu pid QPID and that vCPU's thread, nr 1000, SVM
# hypercall exit, named (quoted, as every CSV text field): guest VM, process
# qemu-system-x86, thread "CPU n/KVM"; else the first violation.
qemu_csv_verdict() {
	awk -F, -v qpid="$2" -v per="$3" -v tids="$4" -v vm="$5" '
	function hex(s,   i, c, v) {
		s = tolower(s); if (substr(s, 1, 2) != "0x") return -1
		v = 0
		for (i = 3; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)) - 1; if (c < 0) return -1; v = v * 16 + c }
		return v
	}
	function bad(msg) { if (!err) err = "line " NR ": " msg }
	BEGIN { nv = split(tids, tl, " "); for (i = 1; i <= nv; i++) { split(tl[i], p, ":"); tidof[p[1]] = p[2] } }
	NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
	err { next }
	{
		n++
		v = $col["vcpu_id"]; a0 = hex($col["a0"]); a1 = hex($col["a1"])
		if (!(v in tidof)) bad("vcpu_id " v)
		else if ($col["host_tid"] != tidof[v]) bad("vcpu " v " on thread " $col["host_tid"] ", want " tidof[v] " (CPU " v "/KVM)")
		if ($col["host_pid"] != qpid) bad("host_pid " $col["host_pid"] ", want qemu " qpid)
		if ($col["nr"] != 1000) bad("nr " $col["nr"])
		if ($col["isa"] != "SVM" || hex($col["exit_reason"]) != 129) bad("exit " $col["isa"] " " $col["exit_reason"])
		if (a1 != v) bad("a1 " $col["a1"] " (guest CPU) on vcpu " v)
		if (a0 < 0 || a0 >= per) bad("a0 " $col["a0"] " out of 0.." per - 1)
		if ((v, a0) in seen) bad("vcpu " v " a0 " a0 " twice")
		seen[v, a0] = 1
		if (!($col["total_ns"] > 0)) bad("total_ns " $col["total_ns"])
		# Text fields are always quoted (docs/exports.md); these names hold no comma or quote.
		if ($col["vm_name"] != "\"" vm "\"" || $col["process_name"] != "\"qemu-system-x86\"" ||
		    $col["thread_name"] != "\"CPU " v "/KVM\"")
			bad("names vm " $col["vm_name"] " process " $col["process_name"] " thread " $col["thread_name"])
	}
	END { if (!err && n != per * nv) err = n + 0 " records, want " per * nv; printf "%s", err }' "$1"
}

# check_qemu_csv NAME QPID PER_VCPU TIDS VM
check_qemu_csv() {
	local name=$1 verdict
	if [ "$(rc "$name.csv.rc")" != 0 ]; then
		fail "${name}_csv" "report --csv exited with status $(rc "$name.csv.rc")"
		return
	fi
	verdict=$(qemu_csv_verdict "$F/$name.csv" "$2" "$3" "$4" "$5" 2>&1) || verdict=${verdict:-awk failed}
	if [ -n "$verdict" ]; then fail "${name}_csv" "$verdict"; else pass "${name}_csv"; fi
}

# check_guest_stats GUEST ID N [N2]: the guest's hypercall program(s) of
# command ID exited 0, each reporting N calls issued, every one refused with
# -KVM_EPERM (ret=-1: a call from guest user space is traced, then refused),
# and round-trip statistics of N samples that are ordered.
check_guest_stats() {
	local guest=$1 id=$2 n=$3 progs=${4:-1} o verdict
	o=$(guest_output "$guest" "$id")
	verdict=$(awk -v n="$n" -v progs="$progs" '
		/^hypercall: issued=/ {
			issued++
			if ($2 != "issued=" n || $3 != "nr=1000") bad = bad " [" $0 "]"
			if ($0 !~ / ret=-1 ret_mismatches=0$/) bad = bad " [not all -KVM_EPERM: " $0 "]"
		}
		/^hypercall: round_trip_ns / {
			for (i = 3; i <= NF; i++) { split($i, kv, "="); s[kv[1]] = kv[2] }
			if (s["count"] != n || !(s["min"] > 0 && s["min"] <= s["median"] && s["median"] <= s["max"] && s["p99"] <= s["max"]))
				bad = bad " [round trip stats: " $0 "]"
			stats++
		}
		END {
			if (issued != progs || stats != progs) printf "%d issue lines and %d statistics lines, want %d", issued, stats, progs
			else printf "%s", bad
		}' <<<"$o")
	if [ "$(tr -d '\r' <"$F/$guest.console" 2>/dev/null | grep -c "^L2-END $id 0$")" = 0 ]; then
		fail "${id}_guest_program" "the guest command did not exit 0: $(tr '\n' '|' <<<"$o" | tail -c 300)"
	elif [ -n "$verdict" ]; then
		fail "${id}_guest_program" "$verdict"
	else
		pass "${id}_guest_program"
	fi
}

# check_nofile NAME WANT [VM]: --no-file loaded and its last cumulative counts
# are WANT ("N" overall, or "vcpu=count ..." per vCPU of the VM named VM).
check_nofile() {
	local name=$1 want=$2 got
	if [ "$(rc "$name.rc")" != 0 ]; then
		fail "${name}_record" "record --no-file exited with status $(rc "$name.rc"): $(tail_of "$F/$name.err")"
		return
	fi
	if [[ $want == *=* ]]; then
		# "vcpu N (pid P, vm NAME): C hypercalls": the live view names the VM too.
		got=$(sed -n 's/^since start: .*/--/p; s/^vcpu \([0-9]*\) (pid [0-9]*, vm '"$3"'): \([0-9]*\) hypercalls.*/\1=\2/p' "$F/$name.out" |
			awk '$0 == "--" { g = ""; next } { g = g (g == "" ? "" : " ") $0 } END { print g }')
	else
		got=$(sed -n 's/^since start: \([0-9]*\) hypercalls.*/\1/p' "$F/$name.out" | tail -n 1)
	fi
	if [ "$got" = "$want" ]; then
		pass "${name}_live_counts_equal_hypercalls_issued"
	else
		fail "${name}_live_counts_equal_hypercalls_issued" "got '${got:-none}', want '$want'"
	fi
}

# --- one vCPU -----------------------------------------------------------------------
qpid=$(cat "$F/one.qpid" 2>/dev/null || true)
tid0=$(tid_of one 0)
if [ -n "$qpid" ] && [ -n "$tid0" ]; then
	pass one_guest_booted_with_named_vcpu_thread
else
	fail one_guest_booted_with_named_vcpu_thread "qemu pid '${qpid}', 'CPU 0/KVM' tid '${tid0}': $(tail_of "$work/run.log")"
fi
check_guest_stats one one_a 200
check_summary one 200
check_qemu_csv one "$qpid" 200 "0:$tid0" one
check_guest_stats one one_z 200
check_summary one_z 200
check_qemu_csv one_z "$qpid" 200 "0:$tid0" one
# The names in every report form.
dump=$(head -n 1 "$F/one.dump" 2>/dev/null)
if [[ $dump == *" pid $qpid (vm one) tid $tid0 (CPU 0/KVM) vcpu 0 "* ]]; then
	pass one_dump_names_vm_and_thread
else
	fail one_dump_names_vm_and_thread "first --dump line: $dump"
fi
json=$(head -n 1 "$F/one.json" 2>/dev/null)
if [[ $json == *'"vm_name":"one","process_name":"qemu-system-x86","thread_name":"CPU 0/KVM"}' ]]; then
	pass one_json_names_vm_and_thread
else
	fail one_json_names_vm_and_thread "first --json line: $json"
fi
if grep -Eq "^ +$qpid +0 +200 +one +CPU 0/KVM\$" "$F/one.report" 2>/dev/null; then
	pass one_summary_names_vm_and_thread
else
	fail one_summary_names_vm_and_thread "per-vCPU table: $(sed -n '/^per vCPU:/,/^$/p' "$F/one.report" | tr '\n' '|')"
fi
check_guest_stats one one_nofile 200
check_nofile one_nofile 200

# --- two vCPUs ----------------------------------------------------------------------
qpid=$(cat "$F/two.qpid" 2>/dev/null || true)
tid0=$(tid_of two 0)
tid1=$(tid_of two 1)
if [ -n "$qpid" ] && [ -n "$tid0" ] && [ -n "$tid1" ] && [ "$tid0" != "$tid1" ]; then
	pass two_guest_booted_with_named_vcpu_threads
else
	fail two_guest_booted_with_named_vcpu_threads "qemu pid '${qpid}', vCPU thread tids '${tid0}' '${tid1}'"
fi
check_guest_stats two two_a 100 2
check_summary two 200
check_qemu_csv two "$qpid" 100 "0:$tid0 1:$tid1" two
# report --vm selects by the names the file recorded: all of this VM's records, none for another name.
if [ -s "$F/two.csv" ] && cmp -s "$F/two.csv" "$F/two.vm.csv" && [ "$(wc -l <"$F/two.novm.csv")" = 1 ]; then
	pass two_report_selects_by_vm_name
else
	fail two_report_selects_by_vm_name "--vm two: $(wc -l <"$F/two.vm.csv" 2>&1) lines for $(wc -l <"$F/two.csv" 2>&1); --vm no-such-vm: $(wc -l <"$F/two.novm.csv" 2>&1)"
fi
check_guest_stats two two_z 100 2
check_summary two_z 200
check_qemu_csv two_z "$qpid" 100 "0:$tid0 1:$tid1" two
check_guest_stats two two_vcpu1 100 2
check_summary two_vcpu1 100
check_qemu_csv two_vcpu1 "$qpid" 100 "1:$tid1" two
check_guest_stats two two_nofile 100 2
check_nofile two_nofile "0=100 1=100" two
check_guest_stats two two_other 100 2
check_summary two_other 0

# --- perf sees every event while record runs -----------------------------------------
# perf_count FILE EVENT: the count perf stat -x, wrote for EVENT.
perf_count() { awk -F, -v ev="$2" '$3 == ev { print $1 }' "$F/$1" 2>/dev/null; }
hc_off=$(perf_count perf_off.txt kvm:kvm_hypercall)
hc_on=$(perf_count perf_on.txt kvm:kvm_hypercall)
ex_off=$(perf_count perf_off.txt kvm:kvm_exit)
ex_on=$(perf_count perf_on.txt kvm:kvm_exit)
pe_off=$(perf_count perf_off.txt sched:sched_process_exit)
pe_on=$(perf_count perf_on.txt sched:sched_process_exit)
echo "  info: perf without record: kvm_hypercall $hc_off, kvm_exit $ex_off, sched_process_exit $pe_off; with record: $hc_on, $ex_on, $pe_on"
if [ "$(rc perf_off.rc)" != 0 ] || [ -z "$hc_off" ]; then
	fail perf_counts_without_record "perf stat failed (status $(rc perf_off.rc)): $(tail_of "$F/perf_off.out")"
elif [ "$hc_off" != 1000 ] || ! [ "$ex_off" -ge 1000 ] 2>/dev/null || ! [ "$pe_off" -ge 10 ] 2>/dev/null; then
	fail perf_counts_without_record "want 1000 kvm_hypercall, at least 1000 kvm_exit and 10 sched_process_exit"
else
	pass perf_counts_without_record
fi
check_summary perf_on 1000
if [ "$hc_on" = "$hc_off" ] && [ "$pe_on" = "$pe_off" ] && [ -n "$ex_on" ] && [ "$ex_on" -ge 1000 ] 2>/dev/null; then
	pass perf_counts_the_same_while_record_runs
else
	fail perf_counts_the_same_while_record_runs "with record: kvm_hypercall '$hc_on' (want $hc_off), sched_process_exit '$pe_on' (want $pe_off), kvm_exit '$ex_on' (want >= 1000)"
fi

suite_exit
