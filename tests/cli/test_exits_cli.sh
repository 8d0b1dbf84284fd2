#!/usr/bin/env bash
# record --exits and report --exits end to end without a guest: exits_feed
# drives synthetic exits at exact times through the real BPF handlers, the
# real exit sampler writes them into a trace file, and report --exits must
# print exactly those numbers as text, CSV and JSON, for every selection.
# Also the options' errors, a file recorded without --exits, and the real
# record --exits (no guest here: zero exits).
# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"

FEED=$OUTPUT/tests/tools/exits_feed
if [ "$(id -u)" -ne 0 ]; then
	skip exits_cli "exits_feed loads BPF programs and needs root"
	exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A hostile name: a quote, a backslash, an escape sequence and a byte that is not UTF-8.
NAME=$'we"b1\\\e[31m\xff'
touch "$work/stop"
if ! "$FEED" "$work/ready" "$work/stop" --file "$work/e.htr" -name "$NAME" 2>"$work/feed.err"; then
	fail exits_feed "$(cat "$work/feed.err")"
	suite_exit
fi
pid=$(awk '$1 == "pid" { print $2 }' "$work/ready")

# The rows: vm_pid, vm_name, vcpu, isa, exit_reason, reason, count, total_ns, min, p50, p99, max, buckets.
csv=$("$HT" report --exits --csv "$work/e.htr")
want_header="vm_pid,vm_name,vcpu,isa,exit_reason,reason,count,total_ns,min_ns,p50_ns,p99_ns,max_ns,$(seq -s, -f 'bucket_%g' 0 39)"
if [ "$(head -1 <<<"$csv")" = "$want_header" ]; then
	pass report_exits_csv_header
else
	fail report_exits_csv_header "$(head -1 <<<"$csv")"
fi
esc='"we""b1\\\x1b[31m\xff"'
zeros() { printf '0,%.0s' $(seq "$1"); }
b() { # b SLOT=COUNT...: the 40 buckets
	local -a v
	for i in $(seq 0 39); do v[i]=0; done
	for kv in "$@"; do v[${kv%=*}]=${kv#*=}; done
	local IFS=,
	echo "${v[*]}"
}
want=$(printf '%s\n' \
	"$pid,$esc,0,SVM,120,\"hlt\",20,40000000,2000000,2000000,2000000,2000000,$(b 20=20)" \
	"$pid,$esc,0,SVM,123,\"io\",1000,5500000,1000,8191,10000,10000,$(b 9=100 10=100 11=200 12=400 13=200)" \
	"$pid,$esc,1,SVM,1024,\"npf\",300,210000,700,700,700,700,$(b 9=300)")
if [ "$(tail -n +2 <<<"$csv")" = "$want" ]; then
	pass report_exits_csv_rows_are_exact
else
	fail report_exits_csv_rows_are_exact "got:
$(tail -n +2 <<<"$csv")
want:
$want"
fi

# JSON lines: exactly the columns, the buckets as an array, parsed by a real JSON reader.
verdict=$("$HT" report --exits --json "$work/e.htr" | python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin]
keys = ["vm_pid", "vm_name", "vcpu", "isa", "exit_reason", "reason", "count", "total_ns", "min_ns", "p50_ns", "p99_ns", "max_ns", "buckets"]
bad = [r for r in rows if list(r) != keys or len(r["buckets"]) != 40 or sum(r["buckets"]) != r["count"]]
got = sorted((r["vcpu"], r["reason"], r["count"], r["total_ns"]) for r in rows)
want = [(0, "hlt", 20, 40000000), (0, "io", 1000, 5500000), (1, "npf", 300, 210000)]
names = {r["vm_name"] for r in rows}
print("ok" if not bad and got == want and names == {"we\"b1\\\x1b[31m\xff"} else "bad %s got %s names %s" % (bad[:1], got, names))' 2>&1)
[ "$verdict" = ok ] && pass report_exits_json_rows || fail report_exits_json_rows "$verdict"

# Text: per VM, per reason, per vCPU; the made-up vCPU thread's waiting; the name escaped.
text=$("$HT" report --exits "$work/e.htr")
if grep -qF "VM we\"b1\\\\\\x1b[31m\\xff (pid $pid): 1320 exits" <<<"$text" &&
	grep -Eq '^  io +1000 ' <<<"$text" &&
	grep -q "vCPU 2 (tid 4000001): 0 exits, wait 5.00ms (.*), preempted 3 (3.00ms), voluntary 2 (12.0ms)" <<<"$text" &&
	grep -q '^  vCPU 1: 300 exits' <<<"$text" && ! grep -q $'\e' <<<"$text"; then
	pass report_exits_text
else
	fail report_exits_text "$text"
fi

# The shared selection.
rows() { "$HT" report --exits --csv "$@" "$work/e.htr" | tail -n +2 | cut -d, -f3,6,7 | tr '\n' ' '; }
check_sel() { # NAME WANT ARGS...
	local name=$1 want=$2 got
	shift 2
	got=$(rows "$@")
	[ "$got" = "$want" ] && pass "report_exits_selects_$name" || fail "report_exits_selects_$name" "got '$got', want '$want'"
}
check_sel pid '0,"hlt",20 0,"io",1000 1,"npf",300 ' -p "$pid"
check_sel other_pid "" -p $((pid + 1))
check_sel vm '0,"hlt",20 0,"io",1000 1,"npf",300 ' --vm "$NAME"
check_sel vcpu '1,"npf",300 ' --vcpu 1
# The halves were sampled a second apart: up to 0.5 s the first one, from 0.5 s the second.
check_sel until '0,"hlt",10 0,"io",500 1,"npf",150 ' --until 0.5
check_sel since '0,"hlt",10 0,"io",500 1,"npf",150 ' --since 0.5
check_sel since_past_the_end "" --since 100
# In a window cut by an interval, min and max are bucket bounds.
got=$("$HT" report --exits --csv --since 0.5 --vcpu 0 "$work/e.htr" | awk -F, '$6 == "\"io\"" { print $9, $12 }')
[ "$got" = "512 16383" ] && pass report_exits_window_min_max_are_bucket_bounds ||
	fail report_exits_window_min_max_are_bucket_bounds "io min/max '$got', want '512 16383'"

# Errors.
expect_run report_exits_with_dump_is_refused 2 "drop --dump" -- "$HT" report --exits --dump "$work/e.htr"
expect_run report_exits_with_nr_is_refused 2 "exits have no nr" -- "$HT" report --exits --nr 1000 "$work/e.htr"
expect_run record_metrics_per_vcpu_needs_exits 2 "needs --exits and --metrics" -- "$HT" record --metrics-per-vcpu --metrics 9999 -d 1
"$HT" record -q -o "$work/plain.htr" -d 0.3 >/dev/null 2>&1
expect_run report_exits_of_a_file_without_exits 1 "recorded without --exits" -- "$HT" report --exits "$work/plain.htr"
expect_run report_vcpu_switches_of_a_file_without_them 1 "recorded without --vcpu-sched" -- \
	"$HT" report --vcpu-switches --dump "$work/plain.htr"
expect_run report_vcpu_switches_needs_a_listing 2 "add --dump, --csv or --json" -- "$HT" report --vcpu-switches "$work/plain.htr"
expect_run report_vcpu_switches_with_exits_is_refused 2 "not --hist or --exits" -- \
	"$HT" report --vcpu-switches --exits --csv "$work/plain.htr"
expect_run report_vcpu_switches_with_nr_is_refused 2 "drop --nr" -- "$HT" report --vcpu-switches --json --nr 1000 "$work/plain.htr"
expect_run record_vcpu_sched_without_file_is_refused 2 "drop --no-file" -- "$HT" record --vcpu-sched --no-file -d 1

# -i with -q: how often the exit statistics are kept, with --exits; nothing without.
expect_run record_quiet_interval_without_exits_is_refused 2 "only changes the live histograms" -- "$HT" record -q -i 1 -d 1
out=$("$HT" record --exits -q -i 0.2 -o "$work/q.htr" -d 0.7 2>&1)
if [ $? -eq 0 ] && grep -q "^hypertrace-bpf: 0 exits" <<<"$out"; then
	pass record_exits_quiet_takes_an_interval
else
	fail record_exits_quiet_takes_an_interval "$out"
fi

# The real record --exits, with and without a file (no guest here: no exits).
out=$("$HT" record --exits -o "$work/r.htr" -d 1 -i 0.4 2>&1)
if grep -q "^exits: 0, 0.0/s" <<<"$out" && grep -q "^hypertrace-bpf: 0 exits of 0 VM processes" <<<"$out" &&
	"$HT" report --exits "$work/r.htr" | grep -q "^exits: 0"; then
	pass record_exits_file
else
	fail record_exits_file "$out"
fi
# The real record --vcpu-sched (no guest here: no vCPU thread, no switch); the file says it had them on.
out=$("$HT" record --vcpu-sched -q -o "$work/s.htr" -d 0.5 2>&1)
if [ $? -eq 0 ] && grep -q "^hypertrace-bpf: of the records, 0 switches of vCPU threads; 0 lost" <<<"$out" &&
	"$HT" report "$work/s.htr" | grep -q "^switches of vCPU threads: 0 " &&
	[ "$("$HT" report --vcpu-switches --csv "$work/s.htr" | wc -l)" -eq 1 ] &&
	"$HT" report --exits "$work/s.htr" | grep -q "^exits: 0"; then
	pass record_vcpu_sched_file
else
	fail record_vcpu_sched_file "$out"
fi
out=$("$HT" record --exits --no-file -d 0.6 -i 0.2 2>&1)
grep -q "^hypertrace-bpf: 0 exits of 0 VM processes" <<<"$out" && pass record_exits_no_file || fail record_exits_no_file "$out"
# --bpf-stats: a line for every tracepoint program the configuration loaded,
# in the object's order, the switches of this busy host counted, and what
# verifying each program took (the kernel's verified_insns: never 0 for a
# loaded program).
bpf_stats_names() { sed -n 's/^hypertrace-bpf: bpf-stats \([a-z_]*\): [0-9]* runs, [0-9]* ns, .*/\1/p' <<<"$1" | tr '\n' ' '; }
out=$("$HT" record --exits --bpf-stats -q -o "$work/b.htr" -d 0.5 2>&1)
want="kvm_exit kvm_hypercall kvm_entry kvm_userspace_exit kvm_pio kvm_mmio kvm_msr kvm_cpuid sched_process_exit sched_switch hrtimer_expire_entry sched_wakeup kvm_vcpu_wakeup kvm_inj_virq kvm_apic_accept_irq kvm_halt_poll_ns "
verified=$(grep -Ec '^hypertrace-bpf: bpf-stats [a-z_]*: .*, [1-9][0-9]* instructions verified$' <<<"$out")
if [ "$(bpf_stats_names "$out")" = "$want" ] && grep -Eq '^hypertrace-bpf: bpf-stats sched_switch: [1-9][0-9]* runs' <<<"$out" &&
	[ "$verified" = 16 ]; then
	pass record_bpf_stats_names_every_loaded_program
else
	fail record_bpf_stats_names_every_loaded_program "got '$(bpf_stats_names "$out")', want '$want': $out"
fi
out=$("$HT" record --bpf-stats -q -o "$work/b2.htr" -d 0.3 2>&1)
want="kvm_exit kvm_hypercall kvm_entry sched_process_exit sched_switch "
[ "$(bpf_stats_names "$out")" = "$want" ] && pass record_bpf_stats_without_exits ||
	fail record_bpf_stats_without_exits "got '$(bpf_stats_names "$out")', want '$want': $out"
suite_exit
