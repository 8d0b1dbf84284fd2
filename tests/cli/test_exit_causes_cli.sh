#!/usr/bin/env bash
# report --causes and the causes section of report --exits, on EXITS blocks
# as a recording writes them (tests/tools/exits_craft causes: three blocks,
# one second apart, of a VM's I/O, MSR and CPUID exits with their causes):
# exact counts and times per (VM, reason, cause) as text, CSV and JSON (its
# 64-bit values, and those of --vcpu-time, as strings), a
# time window as the difference of two blocks, and causes no recording
# writes (buckets that do not hold the count, or the time in KVM or the
# VMM; counts that go down) refused with one line.
# Files only, no port, no verdict on time: tests/run runs it beside the
# nested-machine suites.
# tests/run: alongside the nested-machine suites
# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"

CRAFT=$OUTPUT/tests/tools/exits_craft
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! "$CRAFT" "$work/c.htr" causes; then
	fail exit_causes_file "exits_craft failed"
	suite_exit
fi

# Text: a section per VM and reason, each cause with its count, rate and times.
"$HT" report --exits "$work/c.htr" >"$work/out" 2>"$work/err"
rc=$?
if [ "$rc" -eq 0 ] && grep -q "^causes of exits" "$work/out" &&
	grep -Eq "^    io 0x80 out 1 +300 +100.0 +511ns +511ns +300 +524us +524us$" "$work/out" &&
	grep -Eq "^    msr 0x6e0 IA32_TSC_DEADLINE write +60 +20.0 +1.02us" "$work/out" &&
	grep -Eq "^    cpuid 0xd.1 +9 +3.0 " "$work/out"; then
	pass exit_causes_text_per_vm_reason_and_cause
else
	fail exit_causes_text_per_vm_reason_and_cause "rc $rc: $(cat "$work/err") / $(tail -12 "$work/out")"
fi

# CSV: one row per (VM, reason, cause), its parts as fields, then its buckets.
"$HT" report --causes --csv "$work/c.htr" >"$work/csv" 2>"$work/err"
rc=$?
header=$(head -1 "$work/csv")
row=$(grep '"io 0x80 out 1"' "$work/csv")
if [ "$rc" -eq 0 ] && [ "$(wc -l <"$work/csv")" -eq 5 ] &&
	[[ $header == vm_pid,vm_name,isa,exit_reason,reason,cause_kind,cause_value,cause_detail,direction,size,cause,count,kvm_ns,kvm_p50_ns,kvm_p99_ns,vmm_count,vmm_ns,vmm_p50_ns,vmm_p99_ns,kvm_bucket_0,* ]] &&
	[ "$(awk -F, '{ print NF }' <<<"$header")" -eq $((19 + 2 * 40)) ] &&
	[[ $row == '1000,"",VMX,30,"IO_INSTRUCTION",io,128,257,out,1,"io 0x80 out 1",300,120000,511,511,300,90000000,524287,524287,'* ]] &&
	[ "$(awk -F, '{ print $(19 + 9) "/" $(19 + 40 + 19) }' <<<"$row")" = "300/300" ]; then
	pass exit_causes_csv_one_row_per_cause
else
	fail exit_causes_csv_one_row_per_cause "rc $rc: $header / $row"
fi

# JSON, a window from +1.5 s: the last block minus the first (two seconds of the three).
"$HT" report --causes --json --since 1.5 "$work/c.htr" >"$work/json" 2>"$work/err"
rc=$?
if [ "$rc" -eq 0 ] && [ "$(wc -l <"$work/json")" -eq 4 ] &&
	grep -q '"cause_kind":"io","cause_value":"128","cause_detail":257,"direction":"out","size":1,"cause":"io 0x80 out 1","count":200,"kvm_ns":80000,.*"vmm_count":200,"vmm_ns":60000000,' "$work/json" &&
	grep -q '"cause":"msr 0x6e0 IA32_TSC_DEADLINE write","count":40,' "$work/json" &&
	python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$work/json"; then
	pass exit_causes_json_in_a_time_window
else
	fail exit_causes_json_in_a_time_window "rc $rc: $(cat "$work/err") / $(head -2 "$work/json")"
fi

# 64-bit values in JSON are decimal strings, as report --json writes exit_ns:
# a hypercall nr of 2^64 - 59 and a thread first seen past 2^53 ns (104
# days of uptime) come back exact where numbers would round (jq, JavaScript).
"$CRAFT" "$work/big.htr" past_2_53
"$HT" report --causes --json "$work/big.htr" >"$work/causes.json" 2>"$work/err" &&
	"$HT" report --vcpu-time --json "$work/big.htr" >"$work/time.json" 2>>"$work/err"
rc=$?
if [ "$rc" -eq 0 ] && python3 - "$work/causes.json" "$work/time.json" <<'PY' 2>>"$work/err"
import json, sys
causes = [json.loads(l) for l in open(sys.argv[1])]
rows = [json.loads(l) for l in open(sys.argv[2])]
assert len(causes) == 1 and causes[0]["cause_value"] == str(2**64 - 59), causes
assert len(rows) == 6, rows
for r in rows:
    assert (r["thread_start_ns"], r["from_ns"], r["to_ns"]) == (str(2**53 + 1), str(2**53 + 1), str(2**53 + 1001)), r
PY
then
	pass json_64_bit_values_of_causes_and_vcpu_time_are_strings
else
	fail json_64_bit_values_of_causes_and_vcpu_time_are_strings "rc $rc: $(cat "$work/err") / $(head -c 400 "$work/causes.json" "$work/time.json")"
fi

# -p of another VM: no causes, said so.
"$HT" report --causes -p 999 "$work/c.htr" >"$work/out" 2>"$work/err"
rc=$?
if [ "$rc" -eq 0 ] && grep -q "^no causes of exits" "$work/out"; then
	pass exit_causes_follow_the_vm_selection
else
	fail exit_causes_follow_the_vm_selection "rc $rc: $(cat "$work/out" "$work/err")"
fi

# --causes is a view of the exits: not with --vcpu-time.
"$HT" report --causes --vcpu-time "$work/c.htr" >"$work/out" 2>"$work/err"
rc=$?
if [ "$rc" -eq 2 ] && [ "$(wc -l <"$work/err")" -eq 1 ] && grep -q -- "--causes and --vcpu-time" "$work/err"; then
	pass exit_causes_and_vcpu_time_exclude_each_other
else
	fail exit_causes_and_vcpu_time_exclude_each_other "rc $rc: $(cat "$work/err")"
fi

# Causes no recording writes: refused, one line naming the file and the block.
for shape in cause_slots cause_down cause_time vmm_time; do
	"$CRAFT" "$work/$shape.htr" "$shape" || { fail "exit_causes_refused_$shape" "exits_craft failed"; continue; }
	"$HT" report --causes "$work/$shape.htr" >"$work/out" 2>"$work/err"
	rc=$?
	case $shape in
	cause_slots) want="a cause counts 100000 exits (0 to user space) but its buckets hold 10 (0)" ;;
	cause_down) want="a cause of pid 1000, reason 30 goes down from 10 exits to 9" ;;
	cause_time) want="a cause's time in KVM (18446744073709551615 ns) does not fit its 10 exits in buckets up to 8" ;;
	vmm_time) want="a cause's time in the VMM (18446744073709551614 ns) does not fit its 10 exits in buckets up to 18" ;;
	esac
	if [ "$rc" -eq 1 ] && [ "$(wc -l <"$work/err")" -eq 1 ] && grep -q "$shape.htr.*exits block at byte [0-9]*: $want.*the file is corrupt" "$work/err"; then
		pass "exit_causes_refused_$shape"
	else
		fail "exit_causes_refused_$shape" "rc $rc: $(cat "$work/err")"
	fi
done
suite_exit
