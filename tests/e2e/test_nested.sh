#!/usr/bin/env bash
# End-to-end test on REAL KVM events: boots a nested machine under QEMU
# software emulation (tests/e2e/nested.sh), loads kvm-amd inside it and runs
# the static hypertrace-bpf against minivm, which issues known hypercalls
# from a tiny VM. All scenarios share one boot; the guest leaves its outputs
# in /out and every check below runs on the host on what came back.
#
# Needs `make static` (.output/static/hypertrace-bpf, .output/guest/minivm)
# and apt access on the first run (nested.sh fetches qemu, the kernel and
# busybox into .cache/nested/). HT_E2E=0 skips it.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/nested.sh"

HT_STATIC=${HT_STATIC:-$OUTPUT/static/hypertrace-bpf}
MINIVM=${MINIVM:-$OUTPUT/guest/minivm}
HYPERCALL=${HYPERCALL:-$OUTPUT/guest/hypercall}
LOAD_MATRIX=${LOAD_MATRIX:-$OUTPUT/static/test_load_matrix}
CSV_HEADER=exit_ns,wallclock,host_pid,host_tid,vcpu_id,exit_cpu,entry_cpu,isa,exit_reason,nr,a0,a1,a2,a3,guest_rip,exit_to_hcall_ns,hcall_to_entry_ns,total_ns,flags,vm_name,process_name,thread_name
# The test concerns per-vCPU-thread state, so the two vCPUs of minivm must
# really run in parallel: two emulated CPUs (costs ~1 s of boot).
export NESTED_SMP=${NESTED_SMP:-2}

if [ "${HT_E2E:-1}" = 0 ]; then
	skip nested_e2e "disabled by HT_E2E=0"
	exit 0
fi
for f in "$HT_STATIC" "$MINIVM" "$HYPERCALL" "$LOAD_MATRIX"; do
	if [ ! -x "$f" ]; then
		fail nested_e2e "$f is missing: run 'make static' first"
		suite_exit
	fi
done

work=$(mktemp -d)
trap '[ "${HT_E2E_KEEP:-0}" = 1 ] && echo "  info: kept $work" || rm -rf "$work"' EXIT

# --- the guest side ------------------------------------------------------------
# busybox sh. rec NAME RECORD-ARGS...: records into /tmp/NAME.htr, then
# exports the CSV and the summary; every exit status goes to /out/NAME.*.rc.
cat >"$work/guest.sh" <<'EOF'
rec() {
	name=$1
	shift
	timeout 120 hypertrace-bpf record -o /tmp/$name.htr "$@" >/out/$name.out 2>/out/$name.err
	echo $? >/out/$name.rc
	hypertrace-bpf report --csv /tmp/$name.htr >/out/$name.csv 2>>/out/$name.err
	echo $? >/out/$name.csv.rc
	hypertrace-bpf report /tmp/$name.htr >/out/$name.report 2>>/out/$name.err
	echo $? >/out/$name.report.rc
	echo "$name: record status $(cat /out/$name.rc): $(grep '^hypertrace-bpf:' /out/$name.out)"
}
MIX="--vcpus 2 --count 1000 --mix io,other-nr"

# Every BPF configuration of record, loaded and attached on this kernel.
timeout 300 test_load_matrix >/out/load_matrix.out 2>&1
echo $? >/out/load_matrix.rc
# --no-file: histograms kept in BPF; the last "since start" counts must be the
# hypercalls issued (-i 60: the end of CMD draws the only interval).
for g in "" --per-vcpu; do
	name=nofile${g:+_per_vcpu}
	timeout 120 hypertrace-bpf record --no-file $g -i 60 -- minivm $MIX >/out/$name.out 2>/out/$name.err
	echo $? >/out/$name.rc
done
# Hypercall rate without tracing, for comparison with the traced runs.
timeout 60 minivm --vcpus 1 --count 2000 >/out/rate_off.out 2>&1
# a: everything, -v so libbpf shows where the kvm types were relocated.
rec a -v -- minivm $MIX
cp /tmp/a.htr /out/a.htr
timeout 60 minivm $MIX >/out/a_off.out 2>&1
# b: filters on real events.
rec vcpu1 --vcpu 1 -- minivm $MIX
rec pid1 -p 1 -- minivm $MIX
rec nr1001 --nr 1001 -- minivm $MIX
rec rate_on -- minivm --vcpus 1 --count 2000
# -p with two VM processes issuing hypercalls at once: only the chosen one
# is recorded; a second recording without -p sees both.
minivm --vcpus 1 --count 1000000 --timeout 60 >/dev/null 2>&1 &
pa=$!
minivm --vcpus 1 --count 1000000 --timeout 60 >/dev/null 2>&1 &
pb=$!
echo "$pa $pb" >/out/pidsel.pids
rec pidsel -p $pa -d 1
rec pidall -d 1
kill $pa $pb
wait
# record --metrics on real events, with a trace file and with --no-file: CMD
# scrapes /metrics on the guest's loopback once minivm is done (records are
# published every 250 ms, so after 1 s all of them).
ifconfig lo 127.0.0.1 up
SCRAPE='sleep 1; wget -q -O /out/$0.prom http://127.0.0.1:$1/metrics; echo $? >/out/$0.prom.rc'
rec metrics --metrics 9470 -- sh -c "minivm $MIX; $SCRAPE" metrics 9470
timeout 120 hypertrace-bpf record --no-file -i 60 --metrics 127.0.0.1:9471 -- \
	sh -c "minivm $MIX; $SCRAPE" metrics_nf 9471 \
	>/out/metrics_nf.out 2>/out/metrics_nf.err
echo $? >/out/metrics_nf.rc
# c: the Intel instruction on this AMD machine, with the raw tracepoints on
# as well so the #UD exit can be seen.
T=/sys/kernel/tracing
echo 4096 >$T/buffer_size_kb
for e in kvm_exit kvm_hypercall kvm_entry; do echo 1 >$T/events/kvm/$e/enable; done
echo >$T/trace
rec vmcall -- minivm --vcpus 1 --count 50 --insn vmcall
echo 0 >$T/tracing_on
grep -v '^#' $T/trace >/out/vmcall.trace
# The guest test program in this machine, whose hypervisor is QEMU's TCG, not
# KVM: it must refuse cleanly instead of executing a hypercall instruction.
hypercall -n 1 >/out/hypercall.out 2>/out/hypercall.err
echo $? >/out/hypercall.rc
EOF

start=$(date +%s)
if ! nested_fetch 2>"$work/fetch.log"; then
	fail nested_boot "cannot fetch qemu/kernel/busybox: $NESTED_ERR"
	suite_exit
fi
fetched=$(date +%s)
out=$work/out
if ! nested_run "$out" "$work/guest.sh" "$HT_STATIC" "$MINIVM" "$HYPERCALL" "$LOAD_MATRIX" 2>"$work/run.log"; then
	fail nested_boot "$NESTED_ERR"
	suite_exit
fi
pass nested_boot
echo "  info: fetch/validate $((fetched - start)) s, qemu run $(cat "$out/qemu_seconds") s (script started at guest uptime $(cat "$out/boot_seconds") s, exit status $(cat "$out/status")), ${NESTED_SMP} emulated CPUs"
F=$out/files

# --- helpers -------------------------------------------------------------------
# rc NAME: exit status the guest recorded in F/NAME ("missing" if none).
rc() { cat "$F/$1" 2>/dev/null || echo missing; }
# tail_of FILE: last lines of FILE on one line, for failure messages.
tail_of() { tail -n 3 "$1" 2>/dev/null | tr '\n' '|'; }

# check_record NAME WANT: record exited 0 and printed its one summary line,
# and report exited 0 with "records: WANT" (WANT: extended regex) and
# "dropped: 0".
check_record() {
	local name=$1 want=$2 summary
	if [ "$(rc "$name.rc")" != 0 ]; then
		fail "${name}_record" "record exited with status $(rc "$name.rc"): $(tail_of "$F/$name.err")"
		return
	fi
	summary=$(grep -c '^hypertrace-bpf: ' "$F/$name.out" || true)
	if [ "$summary" != 1 ]; then
		fail "${name}_record" "want one summary line on stdout, got $summary"
	elif ! grep -Eq "^hypertrace-bpf: $want records, 0 dropped" "$F/$name.out"; then
		fail "${name}_record" "summary does not say '$want records, 0 dropped': $(grep '^hypertrace-bpf: ' "$F/$name.out")"
	else
		pass "${name}_record"
	fi
	if [ "$(rc "$name.report.rc")" != 0 ]; then
		fail "${name}_report" "report exited with status $(rc "$name.report.rc"): $(tail_of "$F/$name.err")"
	elif ! grep -Eqx "records: $want" "$F/$name.report"; then
		fail "${name}_report" "want 'records: $want', got '$(grep '^records:' "$F/$name.report" || true)'"
	elif ! grep -Eq '^dropped: 0( |$)' "$F/$name.report"; then
		fail "${name}_report" "want 'dropped: 0', got '$(grep '^dropped:' "$F/$name.report" || true)'"
	else
		pass "${name}_report"
	fi
}

# csv_verdict FILE ROWS NR VCPUS SEQS: prints nothing if the CSV holds exactly
# ROWS records, all of hypercall NR, vCPU ids in VCPUS (space-separated),
# each (vcpu, sequence) exactly once with sequence a1 in 0..SEQS-1, a0 = the
# vCPU index, the minivm constants in a2/a3, SVM exit 0x81, positive
# latencies adding up, one vCPU thread per vCPU, and per vCPU the sequence
# and exit time increasing in file order; otherwise the first violation.
csv_verdict() {
	awk -F, -v rows="$2" -v nr="$3" -v vcpus="$4" -v seqs="$5" -v header="$CSV_HEADER" '
	function hex(s,   i, c, v) {
		s = tolower(s)
		if (substr(s, 1, 2) != "0x") return -1
		v = 0
		for (i = 3; i <= length(s); i++) {
			c = index("0123456789abcdef", substr(s, i, 1)) - 1
			if (c < 0) return -1
			v = v * 16 + c
		}
		return v
	}
	function bad(msg) { if (!err) err = "line " NR ": " msg }
	BEGIN { split(vcpus, vl, " "); for (i in vl) okv[vl[i]] = 1 }
	NR == 1 { if ($0 != header) err = "header is \"" $0 "\""; for (i = 1; i <= NF; i++) col[$i] = i; next }
	err { next }
	{
		n++
		v = $col["vcpu_id"]; seq = hex($col["a1"])
		if (NF != split(header, h, ",")) bad(NF " fields")
		if (!(v in okv)) bad("vcpu_id " v " not in {" vcpus "}")
		if ($col["isa"] != "SVM") bad("isa " $col["isa"])
		if (hex($col["exit_reason"]) != 129) bad("exit_reason " $col["exit_reason"])
		if ($col["nr"] != nr) bad("nr " $col["nr"])
		if (hex($col["a0"]) != v) bad("a0 " $col["a0"] " for vcpu " v)
		if (seq < 0 || seq >= seqs) bad("a1 " $col["a1"] " out of 0.." seqs - 1)
		if (hex($col["a2"]) != 2728567458) bad("a2 " $col["a2"])
		if (hex($col["a3"]) != 2745410467) bad("a3 " $col["a3"])
		if (hex($col["guest_rip"]) <= 0) bad("guest_rip " $col["guest_rip"])
		e2h = $col["exit_to_hcall_ns"]; h2e = $col["hcall_to_entry_ns"]; tot = $col["total_ns"]
		if (!(e2h > 0 && h2e > 0 && tot > 0)) bad("latency not positive: " e2h "/" h2e "/" tot)
		if (hex($col["flags"]) == 0 && e2h + h2e != tot) bad("total_ns " tot " != " e2h " + " h2e)
		key = v " " seq
		if (key in seen) bad("vcpu " v " sequence " seq " twice")
		seen[key] = 1
		tid = $col["host_tid"]
		if ((v in tidof) && tidof[v] != tid) bad("vcpu " v " on threads " tidof[v] " and " tid)
		tidof[v] = tid
		if ((v in lastseq) && seq <= lastseq[v]) bad("vcpu " v " sequence " seq " after " lastseq[v])
		if ((v in lastns) && $col["exit_ns"] <= lastns[v]) bad("vcpu " v " exit_ns not increasing")
		lastseq[v] = seq; lastns[v] = $col["exit_ns"]
		pids[$col["host_pid"]] = 1
	}
	END {
		if (!err && n != rows) err = n + 0 " records, want " rows
		if (!err) { np = 0; for (p in pids) np++; if (rows > 0 && np != 1) err = np " host pids, want 1" }
		printf "%s", err
	}' "$1"
}

# check_csv NAME ROWS NR VCPUS SEQS
check_csv() {
	local name=$1 verdict
	if [ "$(rc "$name.csv.rc")" != 0 ]; then
		fail "${name}_csv" "report --csv exited with status $(rc "$name.csv.rc")"
		return
	fi
	verdict=$(csv_verdict "$F/$name.csv" "$2" "$3" "$4" "$5" 2>&1) || verdict=${verdict:-awk failed on $name.csv}
	if [ -n "$verdict" ]; then fail "${name}_csv" "$verdict"; else pass "${name}_csv"; fi
}

# minivm_total NAME: the "minivm: total" line minivm printed under record.
minivm_total() { grep -h '^minivm: total' "$F/$1" 2>/dev/null || true; }

# check_issued NAME WANT: minivm says it issued WANT hypercalls of its nr,
# all returning -KVM_ENOSYS (so the events really happened in that run).
check_issued() {
	local name=$1 want=$2 total
	total=$(minivm_total "$name.out")
	if ! grep -q "hypercalls=$want " <<<"$total"; then
		fail "${name}_issued" "minivm did not report $want hypercalls: '${total:-no output}'"
	elif grep '^minivm: vcpu=' "$F/$name.out" | grep -qv 'ret=-1000 ret_mismatches=0 '; then
		fail "${name}_issued" "a hypercall returned something other than -1000 (-KVM_ENOSYS)"
	else
		pass "${name}_issued"
	fi
}

# --- a: the full path on real events -------------------------------------------
check_issued a 2000
check_record a 2000
check_csv a 2000 1000 "0 1" 1000
# Concurrency actually exercised: how often one vCPU's exit->entry window
# was open while the other vCPU's record started (information only).
if [ "$(rc a.csv.rc)" = 0 ]; then
	overlap=$(awk -F, 'NR > 1 { s[NR] = $1; e[NR] = $1 + $18; v[NR] = $5 }
		END { for (i in s) { m++; for (j in s) if (v[i] != v[j] && s[j] >= s[i] && s[j] <= e[i]) { n++; break } }
		      printf "%d of %d", n, m }' "$F/a.csv" || true)
	echo "  info: a: records whose window contained an exit of the other vCPU: $overlap"
fi

# d: the BPF programs were relocated against the kvm module's BTF (Debian
# builds kvm as a module, so its trace_event_raw_kvm_* types are only there).
missing_rel=
for t in kvm_exit kvm_hypercall kvm_entry; do
	grep -Eq "struct trace_event_raw_$t in \[kvm\]" "$F/a.err" || missing_rel+=" $t"
done
if [ -z "$missing_rel" ]; then
	pass a_core_kvm_module_btf
else
	fail a_core_kvm_module_btf "record -v shows no CO-RE relocation against [kvm] for:$missing_rel"
fi

# The trace file written in the guest reads the same on the host.
if [ -x "$OUTPUT/hypertrace-bpf" ] && [ -f "$F/a.htr" ] && [ "$(rc a.csv.rc)" = 0 ]; then
	if "$OUTPUT/hypertrace-bpf" report --csv "$F/a.htr" 2>/dev/null | cmp -s - "$F/a.csv"; then
		pass a_host_report_matches
	else
		fail a_host_report_matches "report --csv on the host differs from the guest's"
	fi
else
	skip a_host_report_matches "no host build $OUTPUT/hypertrace-bpf"
fi
# Its exports on the host, read by babeltrace2 and Chrome DevTools' trace engine.
if [ -x "$OUTPUT/hypertrace-bpf" ] && [ -f "$F/a.htr" ]; then
	source "$TOP/tests/export/export_checks.sh"
	check_exports a "$F/a.htr"
fi

# --- b: filters on real events ---------------------------------------------------
check_issued vcpu1 2000
check_record vcpu1 1000
check_csv vcpu1 1000 1000 1 1000
# -p 1 (init): minivm's hypercalls happen, none is recorded.
check_issued pid1 2000
check_record pid1 0
check_csv pid1 0 1000 "0 1" 1000
# -p PID of one of two running minivm processes.
read -r pa pb <"$F/pidsel.pids" || true
check_record pidsel "[0-9]*"
verdict=$(awk -F, -v pa="${pa:-none}" 'NR > 1 { n++; if ($3 != pa) bad++ }
	END { if (n == 0) print "no records"; else if (bad) print bad " of " n " records not from pid " pa }' "$F/pidsel.csv" 2>&1) || verdict="no CSV"
if [ -n "$verdict" ]; then fail pidsel_csv "$verdict"; else pass pidsel_csv; fi
pids=$(awk -F, 'NR > 1 { p[$3] = 1 } END { for (i in p) printf "%s ", i }' "$F/pidall.csv" 2>/dev/null || true)
if [[ " $pids" == *" ${pa:-none} "* && " $pids" == *" ${pb:-none} "* ]]; then
	pass pidsel_other_pid_was_active
else
	fail pidsel_other_pid_was_active "a recording without -p saw pids '$pids', want $pa and $pb"
fi
# --nr 1001: only the mixed-in other-nr hypercalls (same arguments).
check_issued nr1001 2000
check_record nr1001 2000
check_csv nr1001 2000 1001 "0 1" 1000

# --- c: vmcall on AMD ---------------------------------------------------------
# Observed with Debian's 6.1 kernel: the first vmcall takes a "UD excp" exit
# (0x46) with no kvm_hypercall event; KVM rewrites the instruction to vmmcall
# and re-enters at the same RIP, which then exits as a normal hypercall
# (0x81 + kvm_hypercall + kvm_entry). Later calls are plain vmmcall. So all
# M hypercalls are recorded, every one with exit_reason 0x81; the #UD exit
# itself is not.
check_issued vmcall 50
check_record vmcall 50
check_csv vmcall 50 1000 0 50
trace=$F/vmcall.trace
ud=$(grep -c 'kvm_exit: .*reason UD excp' "$trace" || true)
hc=$(grep -c 'kvm_hypercall: nr 0x3e8 ' "$trace" || true)
ud_rip=$(grep -m1 'kvm_exit: .*reason UD excp' "$trace" | sed -n 's/.* rip \(0x[0-9a-f]*\).*/\1/p')
hc_rip=$(grep -m1 'kvm_exit: .*reason hypercall' "$trace" | sed -n 's/.* rip \(0x[0-9a-f]*\).*/\1/p')
if [ "$ud" = 1 ] && [ "$hc" = 50 ] && [ -n "$ud_rip" ] && [ "$ud_rip" = "$hc_rip" ]; then
	pass vmcall_ud_then_rewritten
else
	fail vmcall_ud_then_rewritten "raw tracepoints: $ud #UD exits (want 1), $hc kvm_hypercall (want 50), #UD rip ${ud_rip:-none}, first hypercall exit rip ${hc_rip:-none}"
fi

# --- record --metrics on real events: what a scrape says is what was recorded -----
# metric_sum FILE SERIES-REGEX: the sum of the values of the matching series.
metric_sum() { awk -v re="$2" '$0 !~ /^#/ && $1 ~ re { s += $2 } END { print s + 0 }' "$1" 2>/dev/null || echo none; }
check_metrics() {
	local name=$1 prom=$F/$1.prom total v0 v1 inf
	if [ "$(rc "$name.prom.rc")" != 0 ]; then
		fail "${name}_scrape" "wget of /metrics exited with $(rc "$name.prom.rc"); record: $(tail_of "$F/$name.err")"
		return
	fi
	total=$(metric_sum "$prom" '^hypertrace_hypercalls_total[{]')
	v0=$(metric_sum "$prom" '^hypertrace_hypercalls_total[{]vm_pid="[0-9]+",vcpu="0",nr="1000"[}]$')
	v1=$(metric_sum "$prom" '^hypertrace_hypercalls_total[{]vm_pid="[0-9]+",vcpu="1",nr="1000"[}]$')
	inf=$(metric_sum "$prom" '^hypertrace_hypercall_duration_seconds_bucket[{]phase="exit_to_entry",.*le="[+]Inf"[}]$')
	if [ "$total" = 2000 ] && [ "$v0" = 1000 ] && [ "$v1" = 1000 ] && [ "$inf" = 2000 ]; then
		pass "${name}_scrape_counts_every_hypercall"
	else
		fail "${name}_scrape_counts_every_hypercall" "hypercalls_total sum $total (vcpu 0: $v0, vcpu 1: $v1), exit_to_entry +Inf $inf; want 2000 (1000 per vCPU)"
	fi
	if [ "$(metric_sum "$prom" '^hypertrace_dropped_hypercalls_total[{]')" = 0 ] &&
		[ "$(metric_sum "$prom" '^hypertrace_unselected_hypercalls_total$')" = 2000 ]; then
		pass "${name}_scrape_drops_and_unselected"
	else
		fail "${name}_scrape_drops_and_unselected" "$(grep -E '^hypertrace_(dropped|unselected)' "$prom" | tr '\n' '|')"
	fi
}
check_issued metrics 2000
check_record metrics 2000
check_metrics metrics
if [ "$(rc metrics_nf.rc)" = 0 ] && grep -q '^hypertrace-bpf: 2000 hypercalls, 0 dropped' "$F/metrics_nf.out"; then
	pass metrics_nf_record
else
	fail metrics_nf_record "status $(rc metrics_nf.rc): $(grep '^hypertrace-bpf: ' "$F/metrics_nf.out" 2>/dev/null) $(tail_of "$F/metrics_nf.err")"
fi
check_issued metrics_nf 2000
check_metrics metrics_nf

# --- live histograms on real events: their counts are the file's records ----------
# record's stdout is not a terminal here, so every interval is a plain block.
since=$(sed -n 's/^since start: \([0-9]*\) hypercalls.*/\1/p' "$F/a.out")
intervals=$(sed -n 's/^interval [0-9]*: \([0-9]*\) hypercalls.*/\1/p' "$F/a.out" | awk '{ s += $1 } END { print s + 0 }')
if [ "$since" = 2000 ] && [ "$intervals" = 2000 ] && grep -q '^exit->entry: ' "$F/a.out"; then
	pass a_live_histogram_counts_equal_records
else
	fail a_live_histogram_counts_equal_records "since start '${since:-none}', intervals sum '$intervals', want 2000 (the file's records)"
fi

# --- --no-file on real events: the BPF histograms count every hypercall ---------------
# The 6.1 verifier rejected the aggregate program once; record must load it and
# its last cumulative frame must count the 2000 hypercalls minivm issued.
if [ "$(rc nofile.rc)" != 0 ]; then
	fail nofile_record "record --no-file exited with status $(rc nofile.rc): $(tail_of "$F/nofile.err")"
else
	since=$(sed -n 's/^since start: \([0-9]*\) hypercalls.*/\1/p' "$F/nofile.out" | tail -n 1)
	if [ "$since" = 2000 ]; then
		pass nofile_live_counts_equal_hypercalls_issued
	else
		fail nofile_live_counts_equal_hypercalls_issued "last 'since start' count '${since:-none}', want 2000"
	fi
fi
if [ "$(rc nofile_per_vcpu.rc)" != 0 ]; then
	fail nofile_per_vcpu_record "record --no-file --per-vcpu exited with status $(rc nofile_per_vcpu.rc): $(tail_of "$F/nofile_per_vcpu.err")"
else
	# The groups of the last cumulative frame: vcpu 0 and vcpu 1, 1000 each.
	# Drawn after minivm exited, so /proc has no name left to show for it.
	groups=$(sed -n 's/^since start: .*/--/p; s/^vcpu \([0-9]*\) (pid [0-9]*\(, vm [^)]*\)\{0,1\}): \([0-9]*\) hypercalls.*/\1=\3/p' "$F/nofile_per_vcpu.out" |
		awk '$0 == "--" { g = ""; next } { g = g $0 " " } END { print g }')
	if [ "$groups" = "0=1000 1=1000 " ]; then
		pass nofile_per_vcpu_counts_equal_hypercalls_issued
	else
		fail nofile_per_vcpu_counts_equal_hypercalls_issued "per-vCPU counts '${groups:-none}', want '0=1000 1=1000'"
	fi
fi

# --- the load matrix on the nested machine's kernel ---------------------------------
# Its PASS/FAIL lines, renamed so they are told apart from the host's.
if [ -s "$F/load_matrix.out" ]; then
	sed -n 's/^\(PASS\|FAIL\|SKIP\): /\1: nested_kernel_/p' "$F/load_matrix.out"
	grep -q '^FAIL: ' "$F/load_matrix.out" && SUITE_FAILED=1
	grep '^    [0-9]* configurations' "$F/load_matrix.out" | sed 's/^ */  info: nested kernel: /'
	if [ "$(rc load_matrix.rc)" != 0 ] && ! grep -q '^FAIL: ' "$F/load_matrix.out"; then
		fail nested_kernel_load_matrix "exited with status $(rc load_matrix.rc): $(tail_of "$F/load_matrix.out")"
	fi
else
	fail nested_kernel_load_matrix "no output (status $(rc load_matrix.rc))"
fi

# --- the guest test program under a real non-KVM hypervisor -------------------------
if [ "$(cat "$F/hypercall.rc" 2>/dev/null)" = 1 ] && grep -q "not KVM" "$F/hypercall.err"; then
	pass hypercall_refuses_under_a_non_kvm_hypervisor
else
	fail hypercall_refuses_under_a_non_kvm_hypervisor "status $(cat "$F/hypercall.rc" 2>/dev/null), stderr: $(cat "$F/hypercall.err" 2>/dev/null)"
fi

# --- rates (information only: TCG timing is noisy) --------------------------------
rate() { sed -n 's/.*hypercalls_per_second=\([0-9]*\).*/\1/p' "$F/$1" 2>/dev/null | head -n 1; }
echo "  info: guest hypercall rate, 1 vCPU x 2000: $(rate rate_off.out)/s untraced, $(rate rate_on.out)/s traced"
echo "  info: guest hypercall rate, 2 vCPUs x 1000 + mix: $(rate a_off.out)/s untraced, $(rate a.out)/s traced (with -v)"

suite_exit
