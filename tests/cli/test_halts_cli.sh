#!/usr/bin/env bash
# report --halts on a file of known halts (tests/tools/exits_craft halts:
# two EXITS blocks 1 s apart; vCPU 0 at the end 30 halts, 28 polled, 20
# caught in 400 us, 10 slept in 10 ms of which 500 us polling, 2 whose
# polling was not known,
# halt_poll_ns 400000; vCPU 1 3 halts, all slept and not known, its
# halt_poll_ns never known; vCPU 0's wake-ups at the end: 10 of the timer,
# 6 of 20 us and 4 of 100 us, 130 us of it waiting, 2 of 1.5 ms of another
# vector, 2 ms waiting, 3 reblocked): the text view, the CSV and JSON rows,
# a time window's differences, and the option that excludes it.
# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"

CRAFT=$OUTPUT/tests/tools/exits_craft
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! "$CRAFT" "$work/h.htr" halts; then
	fail halts_file "exits_craft failed"
	suite_exit
fi

"$HT" report --halts "$work/h.htr" >"$work/out" 2>"$work/err"
rc=$?
# Caught of polled 20/28; means 400 us / 20 and 10 ms / 10; the polling lost ("-": none polled); a thread's
# unknown polling "?", a sum's "-".
if [ "$rc" -eq 0 ] &&
	grep -Eq "^  vCPU 0 \(tid 2000\) +30 +28 +20 +71\.4% +20\.0us +10 +1\.00ms +500us +2 +400000$" "$work/out" &&
	grep -Eq "^  vCPU 1 \(tid 2001\) +3 +0 +0 +- +- +3 +1\.00us +- +3 +\?$" "$work/out" &&
	grep -Eq "^  all its vCPU threads +33 +28 +20 +71\.4% +20\.0us +13 +769us +500us +5 +-$" "$work/out"; then
	pass halts_text_view_per_thread_and_vm
else
	fail halts_text_view_per_thread_and_vm "rc $rc: $(cat "$work/err") / $(cat "$work/out")"
fi
# The wake-ups: a row per class, then all; percentiles are their slots' upper bounds, no more than the longest.
if [ "$rc" -eq 0 ] &&
	grep -Eq "^  vCPU 0 \(tid 2000\) +timer +10 +52\.0us +32\.8us +100us +100us +25\.0% +3$" "$work/out" &&
	grep -Eq "^  vCPU 0 \(tid 2000\) +vector +2 +1\.50ms +1\.60ms +1\.60ms +1\.60ms +66\.7% +0$" "$work/out" &&
	grep -Eq "^  vCPU 0 \(tid 2000\) +all +12 +293us +32\.8us +1\.60ms +1\.60ms +60\.5% +3$" "$work/out" &&
	! grep -Eq "^  vCPU 1 \(tid 2001\) +(timer|vector|none|all) " "$work/out"; then
	pass halts_wake_ups_per_thread_and_class
else
	fail halts_wake_ups_per_thread_and_class "rc $rc: $(cat "$work/err") / $(cat "$work/out")"
fi
# The timer wake-ups from their due time: 5 of 25 us (slot 14) and 3 of 110 us (slot 16), 455 us
# in all, 32 us of it firing (7.0%) and 100 us waiting (22.0%); vCPU 1 had none.
if [ "$rc" -eq 0 ] && grep -q "^Timer wake-ups from their timer's due time" "$work/out" &&
	grep -Eq "^  vCPU 0 \(tid 2000\) +8 +56\.9us +32\.8us +110us +110us +7\.0% +22\.0%$" "$work/out" &&
	grep -Eq "^  vCPU 1 \(tid 2001\) +0 +- +- +- +- +- +-$" "$work/out" &&
	grep -Eq "^  all its vCPU threads +8 +56\.9us +32\.8us +110us +110us +7\.0% +22\.0%$" "$work/out"; then
	pass halts_timer_wake_ups_from_their_due_time
else
	fail halts_timer_wake_ups_from_their_due_time "rc $rc: $(cat "$work/err") / $(cat "$work/out")"
fi

"$HT" report --halts --csv "$work/h.htr" >"$work/csv" 2>"$work/err"
rc=$?
want='vm_pid,vm_name,vcpu,tid,thread_name,thread_start_ns,from_ns,to_ns,ended,halts,polled,caught,caught_ns,slept,slept_ns,slept_poll_ns,poll_unknown,halt_poll_ns,wake_timer,wake_timer_ns,wake_timer_wait_ns,wake_timer_max_ns,wake_timer_p99_ns,wake_vector,wake_vector_ns,wake_vector_wait_ns,wake_vector_max_ns,wake_vector_p99_ns,wake_none,wake_none_ns,wake_none_wait_ns,wake_none_max_ns,wake_none_p99_ns,wake_reblocked,timer_due,timer_due_ns,timer_due_fire_ns,timer_due_wait_ns,timer_due_max_ns,timer_due_p99_ns
1000,"",0,2000,"",1000000000,1000000000,3000000000,0,30,28,20,400000,10,10000000,500000,2,400000,10,520000,130000,100000,100000,2,3000000,2000000,1600000,1600000,0,0,0,0,0,3,8,455000,32000,100000,110000,110000
1000,"",1,2001,"",1000000000,1000000000,3000000000,0,3,0,0,0,3,3000,0,3,,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0'
if [ "$rc" -eq 0 ] && [ "$(cat "$work/csv")" = "$want" ]; then
	pass halts_csv_rows_are_the_last_blocks_numbers
else
	fail halts_csv_rows_are_the_last_blocks_numbers "rc $rc: $(cat "$work/err") / $(cat "$work/csv")"
fi

# From the first block on (--since 1.5 s: the window starts at the block of +1 s): the second block minus the first.
"$HT" report --halts --json --since 1.5 "$work/h.htr" >"$work/json" 2>"$work/err"
rc=$?
if [ "$rc" -eq 0 ] && python3 - "$work/json" <<'PY'; then
import json, sys
rows = {r['tid']: r for r in map(json.loads, open(sys.argv[1]))}
a, b = rows[2000], rows[2001]
assert (a['halts'], a['polled'], a['caught'], a['caught_ns'], a['slept'], a['slept_ns'], a['slept_poll_ns'], a['poll_unknown'],
        a['halt_poll_ns']) == (20, 20, 14, 280000, 6, 6000000, 300000, 0, 400000), a
assert a['from_ns'] == '2000000000' and a['to_ns'] == '3000000000', a
assert b['halts'] == 0 and b['halt_poll_ns'] is None, b
# The window's wake-ups: the timer's 4 of 20 us and 2 of 100 us (its longest no longer known
# exactly: the bound of its highest slot, no more than the end's longest), the vector's 2 whole.
w = a['wakeups']
assert w['timer'] == {'count': 6, 'ns': 280000, 'wait_ns': 70000, 'max_ns': 100000, 'p99_ns': 100000}, w
assert w['vector'] == {'count': 2, 'ns': 3000000, 'wait_ns': 2000000, 'max_ns': 1600000, 'p99_ns': 1600000}, w
assert w['none']['count'] == 0 and w['reblocked'] == 2, w
assert b['wakeups']['timer']['count'] == 0, b
# And the window's timer wake-ups from their due time: 3 of 25 us and 2 of 110 us.
assert a['timer_due'] == {'count': 5, 'ns': 295000, 'fire_ns': 20000, 'wait_ns': 70000, 'max_ns': 110000,
                          'p99_ns': 110000}, a['timer_due']
assert b['timer_due']['count'] == 0, b
PY
	pass halts_json_window_is_the_difference_and_unknown_is_null
else
	fail halts_json_window_is_the_difference_and_unknown_is_null "rc $rc: $(cat "$work/err") / $(cat "$work/json")"
fi

# A file of format version 11 (the same file, its thread records cut before slept_poll_ns, as
# that version wrote them): the slept halts' polling is not known there, "?" in the text view,
# empty in CSV and null in JSON, never 0; the rest reads as before.
python3 "$TOP/tests/tools/older_thread_records.py" "$work/h.htr" "$work/v11.htr" 11 1120
if "$HT" report --halts "$work/v11.htr" >"$work/out" 2>"$work/err" &&
	grep -Eq "^  vCPU 0 \(tid 2000\) +30 +28 +20 +71\.4% +20\.0us +10 +1\.00ms +\? +2 +400000$" "$work/out" &&
	grep -Eq "^  all its vCPU threads +33 +28 +20 +71\.4% +20\.0us +13 +769us +\? +5 +-$" "$work/out" &&
	"$HT" report --halts --csv "$work/v11.htr" >"$work/csv" 2>>"$work/err" &&
	grep -q '^1000,"",0,2000,"",1000000000,1000000000,3000000000,0,30,28,20,400000,10,10000000,,2,400000,' "$work/csv" &&
	"$HT" report --halts --json "$work/v11.htr" 2>>"$work/err" | python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin]
assert len(rows) == 2 and all(r["slept_poll_ns"] is None for r in rows), rows'; then
	pass halts_of_a_version_11_file_have_their_polling_unknown
else
	fail halts_of_a_version_11_file_have_their_polling_unknown "$(cat "$work/err") / $(cat "$work/out") / $(cat "$work/csv" 2>/dev/null)"
fi

# A file of format version 14 (thread records cut before the timer wake-ups from their due time):
# those are not known there, "?" in the text view, empty in CSV and null in JSON, never 0.
python3 "$TOP/tests/tools/older_thread_records.py" "$work/h.htr" "$work/v14.htr" 14 2120
if "$HT" report --halts "$work/v14.htr" >"$work/out" 2>"$work/err" &&
	grep -Eq "^  vCPU 0 \(tid 2000\) +\? +- +- +- +- +- +-$" "$work/out" &&
	grep -Eq "^  all its vCPU threads +\? +- +- +- +- +- +-$" "$work/out" &&
	"$HT" report --halts --csv "$work/v14.htr" >"$work/csv" 2>>"$work/err" &&
	grep -q '^1000,"",0,2000,"",.*,3,,,,,,$' "$work/csv" &&
	"$HT" report --halts --json "$work/v14.htr" 2>>"$work/err" | python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin]
assert len(rows) == 2 and all(r["timer_due"] is None for r in rows), rows
assert rows[0]["wakeups"]["timer"]["count"] == 10, rows'; then
	pass halts_of_a_version_14_file_have_their_timer_due_unknown
else
	fail halts_of_a_version_14_file_have_their_timer_due_unknown "$(cat "$work/err") / $(cat "$work/out") / $(cat "$work/csv" 2>/dev/null)"
fi

"$HT" report --halts --vcpu-time "$work/h.htr" >"$work/out" 2>"$work/err"
rc=$?
if [ "$rc" -eq 2 ] && [ "$(wc -l <"$work/err")" -eq 1 ] && grep -q "give one" "$work/err"; then
	pass halts_and_vcpu_time_exclude_each_other
else
	fail halts_and_vcpu_time_exclude_each_other "rc $rc: $(cat "$work/err")"
fi
"$HT" report --halts --dump "$work/h.htr" >"$work/out" 2>"$work/err"
rc=$?
[ "$rc" -eq 2 ] && pass halts_refuses_dump || fail halts_refuses_dump "rc $rc: $(cat "$work/err")"

suite_exit
