#!/usr/bin/env bash
# report --latency on a file of known wake-ups (tests/tools/exits_craft
# wakeups: VM 1000, whose name holds a quote, a newline and an escape
# sequence; vCPU 0 (thread 2000) 100 timer wake-ups, the i-th (i + 1) us
# long of which 10 i ns waiting, its timer due (i % 4 + 1) us before it but
# every tenth's (none); vCPU 1 (thread 2001) 10 of vector 253,
# 5 us of which 1 us waiting, and one of class 7, which no recording
# writes, 200 us; an EXITS block whose halts counted 105 and 11; interrupt
# deliveries: vCPU 0 four timer ones, (i + 1) * 2 us of which i * 100 ns
# waiting, and one of class 9, vector 300, 1 us with parts past its whole;
# vCPU 1 two IPIs of 10 and 20 us (3 and 5 us waking, 2 and 1 us waiting)
# and a device's of 50 us; its EXITS block counted 6 timer ones): the text
# view's exact percentiles, the longest wake-ups, the count the file lacks,
# the CSV rows checked against the file's numbers, a selection, and the
# options that exclude it or that it needs.
# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"

CRAFT=$OUTPUT/tests/tools/exits_craft
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! "$CRAFT" "$work/w.htr" wakeups; then
	fail latency_file "exits_craft failed"
	suite_exit
fi

"$HT" report --latency --worst 3 "$work/w.htr" >"$work/out" 2>"$work/err"
rc=$?
# Nearest rank: p50 of 1..100 us is the 50th, p99 the 99th; mean wait 10 * 49.5 ns; the name escaped.
if [ "$rc" -eq 0 ] &&
	grep -Fxq '  vcpu 0 pid 1000 (vm web"1\x0a\x1b[31m) tid 2000 (CPU 0/KVM) timer: 100 wake-ups, p50 50.0us, p99 99.0us, max 100us; mean 50.5us = wait 495ns + rest 50.0us' "$work/out" &&
	grep -Fxq '  vcpu 1 pid 1000 tid 2001 vector: 10 wake-ups, p50 5.00us, p99 5.00us, max 5.00us; mean 5.00us = wait 1.00us + rest 4.00us' "$work/out" &&
	grep -Fxq '  vcpu 1 pid 1000 tid 2001 class-7: 1 wake-ups, p50 200us, p99 200us, max 200us; mean 200us = wait 0ns + rest 200us' "$work/out" &&
	! grep -q $'\x1b' "$work/out"; then
	pass latency_per_thread_and_class_exact_percentiles
else
	fail latency_per_thread_and_class_exact_percentiles "rc $rc: $(cat "$work/err") / $(cat -v "$work/out")"
fi
# The histogram of the timer's: 1 us in 0.512-1.023 us, then doubling counts, the last 35 in 65.5-131 us.
if [ "$rc" -eq 0 ] && grep -Eq '^ +0\.512 -> 1\.023 +: 1 ' "$work/out" && grep -Eq '^ +65\.536 -> 131\.071 +: 35 ' "$work/out"; then
	pass latency_log2_histogram_per_group
else
	fail latency_log2_histogram_per_group "$(cat -v "$work/out")"
fi
# The longest three, longest first, each with its parts; a class no table names as its number.
worst=$(sed -n '/longest wake-ups/,/^$/p' "$work/out" | sed 1d | sed '/^$/d' | sed 's/^  [^ ]* //')
want='vcpu 1 pid 1000 tid 2001 class-7 vector 65: 200us = wait 0ns + rest 200us (cpu 1)
vcpu 0 pid 1000 (vm web"1\x0a\x1b[31m) tid 2000 (CPU 0/KVM) timer vector 236: 100us = wait 990ns + rest 99.0us (cpu 1)
vcpu 0 pid 1000 (vm web"1\x0a\x1b[31m) tid 2000 (CPU 0/KVM) timer vector 236: 99.0us = wait 980ns + rest 98.0us (cpu 1; its timer due 3.00us before)'
if [ "$rc" -eq 0 ] && [ "$worst" = "$want" ]; then
	pass latency_worst_n_longest_first_with_their_parts
else
	fail latency_worst_n_longest_first_with_their_parts "got: $worst"
fi
# The timer wake-ups with their due time: 90 of 111, 25 due 1 us before
# the wake-up, 20 (the 45th of them: the median) 2 us, the longest 4 us.
if [ "$rc" -eq 0 ] &&
	grep -Fxq "Timer wake-ups from their timer's due time (KVM's hrtimer expiry) to the wake-up: 90 of 111, p50 2.00us, p99 4.00us, max 4.00us" "$work/out"; then
	pass latency_timer_wake_ups_from_their_due_time
else
	fail latency_timer_wake_ups_from_their_due_time "$(grep -i "due" "$work/out" | cat -v)"
fi
# 111 records against the recording's 116: the 5 the file lacks are shown.
if [ "$rc" -eq 0 ] &&
	grep -Fxq '111 wake-ups in the file, of 116 the recording counted (5 not in the file: lost to a full ring buffer)' "$work/out"; then
	pass latency_counts_the_wake_ups_the_file_lacks
else
	fail latency_counts_the_wake_ups_the_file_lacks "$(tail -2 "$work/out")"
fi

# The interrupt deliveries, after the wake-ups: per thread and class, the
# longest with their parts (a part past the whole is cut to it), the count.
deliveries=$(sed -n '/^Interrupts delivered to vCPUs/,$p' "$work/out")
want_worst='vcpu 1 pid 1000 tid 2001 device vector 35: 50.0us = waking 0ns + wait 0ns + rest 50.0us (cpu 1)
vcpu 1 pid 1000 tid 2001 ipi vector 251: 20.0us = waking 5.00us + wait 1.00us + rest 14.0us (cpu 1)
vcpu 1 pid 1000 tid 2001 ipi vector 251: 10.0us = waking 3.00us + wait 2.00us + rest 5.00us (cpu 1)'
got_worst=$(sed -n '/longest interrupt deliveries/,/^$/p' <<<"$deliveries" | sed 1d | sed '/^$/d' | sed 's/^  [^ ]* //')
if [ "$rc" -eq 0 ] &&
	grep -Fxq '  vcpu 0 pid 1000 (vm web"1\x0a\x1b[31m) tid 2000 (CPU 0/KVM) timer: 4 interrupts, p50 4.00us, p99 8.00us, max 8.00us; mean 5.00us = waking 0ns + wait 150ns + rest 4.85us' <<<"$deliveries" &&
	grep -Fxq '  vcpu 0 pid 1000 (vm web"1\x0a\x1b[31m) tid 2000 (CPU 0/KVM) class-9: 1 interrupts, p50 1.00us, p99 1.00us, max 1.00us; mean 1.00us = waking 1.00us + wait 0ns + rest 0ns' <<<"$deliveries" &&
	grep -Fxq '  vcpu 1 pid 1000 tid 2001 ipi: 2 interrupts, p50 10.0us, p99 20.0us, max 20.0us; mean 15.0us = waking 4.00us + wait 1.50us + rest 9.50us' <<<"$deliveries" &&
	grep -Fxq '  vcpu 1 pid 1000 tid 2001 device: 1 interrupts, p50 50.0us, p99 50.0us, max 50.0us; mean 50.0us = waking 0ns + wait 0ns + rest 50.0us' <<<"$deliveries" &&
	[ "$got_worst" = "$want_worst" ] &&
	grep -Fxq "Timer interrupts from their timer's due time (KVM's hrtimer expiry) to their acceptance: 3 of 8, p50 1.00us, p99 1.50us, max 1.50us" <<<"$deliveries" &&
	grep -Fxq '8 interrupt deliveries in the file, of 9 the recording counted (1 not in the file: lost to a full ring buffer)' <<<"$deliveries"; then
	pass latency_interrupt_deliveries_per_thread_and_class_with_their_parts
else
	fail latency_interrupt_deliveries_per_thread_and_class_with_their_parts "rc $rc: $(cat -v <<<"$deliveries")"
fi

# --csv: one row per wake-up in file order, then one per interrupt delivery; total, waking, wait
# and rest agree with the craft's numbers (parts cut to what the whole leaves: a file is input).
"$HT" report --latency --csv "$work/w.htr" >"$work/csv" 2>"$work/err"
rc=$?
if [ "$rc" -eq 0 ] && python3 - "$work/csv" <<'PY'; then
import csv, sys
every = list(csv.DictReader(open(sys.argv[1], newline='')))
assert [r['kind'] for r in every] == ['wakeup'] * 111 + ['irq'] * 8, [r['kind'] for r in every]
rows = every[:111]
assert all(r['woken_ns'] == '' and r['timer_vector'] != '' for r in rows)
irqs = [(r['host_tid'], int(r['wake_ns']) - 1000000000, int(r['entry_ns']) - int(r['wake_ns']), int(r['total_ns']),
         int(r['woken_ns']), int(r['wait_ns']), int(r['rest_ns']), r['class'], r['vector'], r['timer_vector'],
         r['vcpu_id']) for r in every[111:]]
want = [('2000', i * 1000000 + 100, (i + 1) * 2000, (i + 1) * 2000, 0, i * 100, (i + 1) * 2000 - i * 100, 'timer',
         '236', '', '0') for i in range(4)]
want += [('2000', 900000, 1000, 1000, 1000, 0, 0, 'class-9', '300', '', '0'),
         ('2001', 600000, 10000, 10000, 3000, 2000, 5000, 'ipi', '251', '', '1'),
         ('2001', 700000, 20000, 20000, 5000, 1000, 14000, 'ipi', '251', '', '1'),
         ('2001', 690000, 50000, 50000, 0, 0, 50000, 'device', '35', '', '1')]
assert irqs == want, irqs
timer = [r for r in rows if r['host_tid'] == '2000']
assert [int(r['total_ns']) for r in timer] == [(i + 1) * 1000 for i in range(100)]
assert [int(r['wait_ns']) for r in timer] == [i * 10 for i in range(100)]
assert [r['due_ns'] for r in timer] == ['' if i % 10 == 9 else str(int(r['wake_ns']) - (i % 4 + 1) * 1000)
                                        for i, r in enumerate(timer)]
assert all(r['due_ns'] == '' for r in rows if r['host_tid'] != '2000')
assert [r['due_ns'] for r in every[111:]] == [str(int(r['wake_ns']) - (i + 1) * 500) for i, r in enumerate(every[111:114])] + [''] * 5
assert all(int(r['rest_ns']) == int(r['total_ns']) - int(r['wait_ns']) for r in rows)
assert all(int(r['entry_ns']) - int(r['wake_ns']) == int(r['total_ns']) for r in rows)
assert all(r['class'] == 'timer' and r['vector'] == '236' and r['vm_name'] == 'web"1\\x0a\\x1b[31m' for r in timer)
other = [r for r in rows if r['host_tid'] == '2001']
assert [r['class'] for r in other] == ['vector'] * 10 + ['class-7'], [r['class'] for r in other]
assert other[-1]['vector'] == '65' and other[-1]['total_ns'] == '200000'
PY
	pass latency_csv_one_row_per_wake_up_and_interrupt_delivery
else
	fail latency_csv_one_row_per_wake_up_and_interrupt_delivery "rc $rc: $(cat "$work/err")"
fi

# --json: the same rows as JSON lines, field for field (the times as decimal strings, a vector or
# waking part that is none as null, a name its own bytes as a JSON string), each line one strict
# JSON value (Python's parser, which refuses NaN and control bytes in strings).
"$HT" report --latency --json "$work/w.htr" >"$work/json" 2>"$work/err"
rc=$?
if [ "$rc" -eq 0 ] && python3 - "$work/csv" "$work/json" <<'PY'; then
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1], newline='')))
objs = [json.loads(l, parse_constant=lambda c: sys.exit('constant ' + c)) for l in open(sys.argv[2])]
assert len(objs) == len(rows) == 119, (len(objs), len(rows))
for r, o in zip(rows, objs):
    assert list(o) == ['kind', 'wake_ns', 'entry_ns', 'wallclock', 'host_pid', 'host_tid', 'vcpu_id', 'cpu', 'class',
                       'vector', 'timer_vector', 'total_ns', 'wait_ns', 'rest_ns', 'woken_ns', 'vm_name',
                       'process_name', 'thread_name', 'due_ns'], list(o)
    assert set(o) == set(r), set(o) ^ set(r)
    for k in r:
        v = o[k]
        want = r[k]
        if k in ('wake_ns', 'entry_ns') or (k == 'due_ns' and want != ''):
            assert isinstance(v, str) and v == want, (k, v, want)
        elif k in ('vm_name', 'process_name', 'thread_name'):
            # A JSON string holds the name's own bytes (JSON escapes them); the CSV shows them escaped as text.
            continue
        elif want == '':
            assert v is None, (k, v)
        elif isinstance(v, int):
            assert v == int(want), (k, v, want)
        else:
            assert v == want, (k, v, want)
assert all(o['vm_name'] == 'web"1\n\x1b[31m' and o['thread_name'] == 'CPU 0/KVM' for o in objs if o['host_tid'] == 2000)
assert all(o['vm_name'] == '' for o in objs if o['host_tid'] == 2001)
PY
	pass latency_json_lines_equal_the_csv_rows
else
	fail latency_json_lines_equal_the_csv_rows "rc $rc: $(cat "$work/err") $(head -c 300 "$work/json")"
fi

# --vcpu 1: vCPU 0's are left out, and so is its count.
"$HT" report --latency --vcpu 1 --worst 0 "$work/w.htr" >"$work/sel" 2>"$work/err"
rc=$?
if [ "$rc" -eq 0 ] && ! grep -q "tid 2000" "$work/sel" &&
	grep -Fxq '11 wake-ups in the file, of 11 the recording counted (0 not in the file: lost to a full ring buffer)' "$work/sel" &&
	grep -Fxq 'The 0 longest wake-ups (wake-up to guest running = wait for a host CPU + the rest):' "$work/sel" &&
	grep -Fxq '3 interrupt deliveries in the file, of 3 the recording counted (0 not in the file: lost to a full ring buffer)' "$work/sel"; then
	pass latency_selects_by_vcpu
else
	fail latency_selects_by_vcpu "rc $rc: $(cat "$work/err") / $(cat -v "$work/sel")"
fi

# A --wakeups file of format 13, before interrupt deliveries: the wake-ups,
# then a line that says the file has none (not an empty view). The same
# file with its version set back, its thread records cut as version 13
# wrote them, and the checksums made again.
python3 "$TOP/tests/tools/older_thread_records.py" "$work/w.htr" "$work/w13.htr" 13 2120
"$HT" report --latency "$work/w13.htr" >"$work/v13" 2>"$work/err"
rc=$?
if [ "$rc" -eq 0 ] && grep -Fxq "  (none: the file's format, 13, is older than interrupt delivery records, 14)" "$work/v13" &&
	! grep -q "interrupts, p50" "$work/v13"; then
	pass latency_of_a_format_13_file_says_it_has_no_interrupt_deliveries
else
	fail latency_of_a_format_13_file_says_it_has_no_interrupt_deliveries "rc $rc: $(cat "$work/err") / $(tail -5 "$work/v13")"
fi

# A file recorded without --wakeups: a runtime error that says how to record one.
"$CRAFT" "$work/h.htr" halts >/dev/null 2>&1
"$HT" report --latency "$work/h.htr" >/dev/null 2>"$work/err"
rc=$?
if [ "$rc" -eq 1 ] && grep -q "recorded without --wakeups (record --wakeups -o FILE)" "$work/err" && [ "$(wc -l <"$work/err")" -eq 1 ]; then
	pass latency_of_a_file_without_wake_ups_says_how_to_record_them
else
	fail latency_of_a_file_without_wake_ups_says_how_to_record_them "rc $rc: $(cat "$work/err")"
fi

# Usage errors: exit 2, one line each.
usage_case() {
	local name=$1 want=$2
	shift 2
	"$HT" report "$@" "$work/w.htr" >/dev/null 2>"$work/err"
	local rc=$?
	if [ "$rc" -eq 2 ] && grep -q -- "$want" "$work/err" && [ "$(wc -l <"$work/err")" -eq 1 ]; then
		pass "$name"
	else
		fail "$name" "rc $rc: $(cat "$work/err")"
	fi
}
usage_case latency_worst_needs_latency "--worst is how many wake-ups --latency lists" --worst 3
usage_case latency_worst_must_be_a_count "invalid --worst '-1'" --latency --worst -1
usage_case latency_excludes_the_other_views "--latency is a view of its own" --latency --halts
usage_case latency_is_text_csv_or_json "--latency prints the wake-ups as text, --csv or --json" --latency --dump

suite_exit
