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
# tests/run: prepare ahead with --prepare
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/nested.sh"
source "$(dirname "$0")/minivm_checks.sh"

HT_STATIC=${HT_STATIC:-$OUTPUT/static/hypertrace-bpf}
MINIVM=${MINIVM:-$OUTPUT/guest/minivm}
HYPERCALL=${HYPERCALL:-$OUTPUT/guest/hypercall}
LOAD_MATRIX=${LOAD_MATRIX:-$OUTPUT/static/test_load_matrix}
# The test concerns per-vCPU-thread state, so the two vCPUs of minivm must
# really run in parallel: two emulated CPUs (costs ~1 s of boot).
export NESTED_SMP=${NESTED_SMP:-2}
nested_prepare_ahead "$@"

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
# busybox sh; the scenarios shared with the Debian 13 kernel suite come from
# tests/e2e/minivm_checks.sh.
{
	minivm_guest_prelude
	minivm_guest_load_matrix
	minivm_guest_nofile
	cat <<'EOF'
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
EOF
	# c: vmcall on this AMD machine.
	minivm_guest_vmcall
	cat <<'EOF'
# The guest test program in this machine, whose hypervisor is QEMU's TCG, not
# KVM: it must refuse cleanly instead of executing a hypercall instruction.
hypercall -N 1 >/out/hypercall.out 2>/out/hypercall.err
echo $? >/out/hypercall.rc
EOF
} >"$work/guest.sh"

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

# --- a: the full path on real events -------------------------------------------
check_mix_recording a

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
check_vmcall

# --- record --metrics on real events: what a scrape says is what was recorded -----
# metric_sum FILE SERIES-REGEX: the sum of the values of the matching series.
# The value is the last field: a label value may hold spaces (vm="pid 123").
metric_sum() {
	awk -v re="$2" '$0 !~ /^#/ { series = $0; sub(/ [^ ]*$/, "", series); if (series ~ re) s += $NF } END { print s + 0 }' "$1" 2>/dev/null || echo none
}
check_metrics() {
	local name=$1 prom=$F/$1.prom total v0 v1 inf
	if [ "$(rc "$name.prom.rc")" != 0 ]; then
		fail "${name}_scrape" "wget of /metrics exited with $(rc "$name.prom.rc"); record: $(tail_of "$F/$name.err")"
		return
	fi
	total=$(metric_sum "$prom" '^hypertrace_hypercalls_total[{]')
	v0=$(metric_sum "$prom" '^hypertrace_hypercalls_total[{]vm="[^"]+",vcpu="0",nr="1000"[}]$')
	v1=$(metric_sum "$prom" '^hypertrace_hypercalls_total[{]vm="[^"]+",vcpu="1",nr="1000"[}]$')
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
check_nofile

# --- the load matrix on the nested machine's kernel ---------------------------------
check_load_matrix nested_kernel_ "nested kernel"

# --- the guest test program under a real non-KVM hypervisor -------------------------
if [ "$(cat "$F/hypercall.rc" 2>/dev/null)" = 1 ] && grep -q "not KVM" "$F/hypercall.err"; then
	pass hypercall_refuses_under_a_non_kvm_hypervisor
else
	fail hypercall_refuses_under_a_non_kvm_hypervisor "status $(cat "$F/hypercall.rc" 2>/dev/null), stderr: $(cat "$F/hypercall.err" 2>/dev/null)"
fi

# --- rates (information only: TCG timing is noisy) --------------------------------
rate() { sed -n 's/.*hypercalls_per_second=\([0-9]*\).*/\1/p' "$F/$1" 2>/dev/null | sed -n 1p; }
echo "  info: guest hypercall rate, 1 vCPU x 2000: $(rate rate_off.out)/s untraced, $(rate rate_on.out)/s traced"
echo "  info: guest hypercall rate, 2 vCPUs x 1000 + mix: $(rate a_off.out)/s untraced, $(rate a.out)/s traced (with -v)"

suite_exit
