#!/usr/bin/env bash
# report --irqs on a file of known interrupts (tests/tools/exits_craft irqs:
# two EXITS blocks 1 s apart; vCPU 0 at the end: the timer's 10 of 2 us,
# IPIs 2 of 3 us (2 us of them waking) and 2 of 100 us (100 us waiting), a
# device's 1 of 50 us, 20 accepted, 2 overlapped, 1 stale, 3 level-triggered;
# at the first block the timer's 4, the IPIs' first 2, 8 accepted, 1
# overlapped, 1 level-triggered; vCPU 1 none): the text view, the CSV and
# JSON rows, a time window's differences, a version-12 file's unknown
# interrupts, and the options that exclude it.
# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"

CRAFT=$OUTPUT/tests/tools/exits_craft
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! "$CRAFT" "$work/i.htr" irqs; then
	fail irqs_file "exits_craft failed"
	suite_exit
fi

"$HT" report --irqs "$work/i.htr" >"$work/out" 2>"$work/err"
rc=$?
# A row per class that had one: count, mean = waking + waiting + rest, p50/p99 (their slots' upper bounds,
# no more than the longest), the longest; the untimed ones on a line of their own; a VM's sum rows.
if [ "$rc" -eq 0 ] &&
	grep -Eq "^  vCPU 0 \(tid 2000\) +timer +10 +2\.00us +0ns +0ns +2\.00us +2\.00us +2\.00us +2\.00us$" "$work/out" &&
	grep -Eq "^  vCPU 0 \(tid 2000\) +ipi +4 +51\.5us +500ns +25\.0us +26\.0us +4\.09us +100us +100us$" "$work/out" &&
	grep -Eq "^  vCPU 0 \(tid 2000\) +device +1 +50\.0us +0ns +0ns +50\.0us +50\.0us +50\.0us +50\.0us$" "$work/out" &&
	grep -Eq "^  vCPU 0 \(tid 2000\) +not timed: 2 while their vector was, 1 never seen injected, 3 level-triggered$" "$work/out" &&
	grep -Eq "^  vCPU 1 \(tid 2001\) +- +none$" "$work/out" &&
	grep -Eq "^  all its vCPU threads +ipi +4 +51\.5us " "$work/out"; then
	pass irqs_text_view_per_thread_class_and_vm
else
	fail irqs_text_view_per_thread_class_and_vm "rc $rc: $(cat "$work/err") / $(cat "$work/out")"
fi

"$HT" report --irqs --csv "$work/i.htr" >"$work/csv" 2>"$work/err"
rc=$?
want='vm_pid,vm_name,vcpu,tid,thread_name,thread_start_ns,from_ns,to_ns,ended,irqs_accepted,irqs_overlapped,irqs_stale,irqs_level,timer,timer_ns,timer_woken_ns,timer_wait_ns,timer_max_ns,timer_p99_ns,ipi,ipi_ns,ipi_woken_ns,ipi_wait_ns,ipi_max_ns,ipi_p99_ns,device,device_ns,device_woken_ns,device_wait_ns,device_max_ns,device_p99_ns
1000,"",0,2000,"",1000000000,1000000000,3000000000,0,20,2,1,3,10,20000,0,0,2000,2000,4,206000,2000,100000,100000,100000,1,50000,0,0,50000,50000
1000,"",1,2001,"",1000000000,1000000000,3000000000,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0'
if [ "$rc" -eq 0 ] && [ "$(cat "$work/csv")" = "$want" ]; then
	pass irqs_csv_rows_are_the_last_blocks_numbers
else
	fail irqs_csv_rows_are_the_last_blocks_numbers "rc $rc: $(cat "$work/err") / $(cat "$work/csv")"
fi

# From the first block on (--since 1.5 s: the window starts at the block of +1 s): the second block minus the first.
"$HT" report --irqs --json --since 1.5 "$work/i.htr" >"$work/json" 2>"$work/err"
rc=$?
if [ "$rc" -eq 0 ] && python3 - "$work/json" <<'PY'; then
import json, sys
rows = {r['tid']: r for r in map(json.loads, open(sys.argv[1]))}
a, b = rows[2000]['irqs'], rows[2001]['irqs']
assert rows[2000]['from_ns'] == '2000000000' and rows[2000]['to_ns'] == '3000000000', rows[2000]
assert (a['accepted'], a['overlapped'], a['stale'], a['level']) == (12, 1, 1, 2), a
assert a['timer'] == {'count': 6, 'ns': 12000, 'woken_ns': 0, 'wait_ns': 0, 'max_ns': 2000, 'p99_ns': 2000}, a
assert a['ipi'] == {'count': 2, 'ns': 200000, 'woken_ns': 0, 'wait_ns': 100000, 'max_ns': 100000, 'p99_ns': 100000}, a
assert a['device']['count'] == 1 and a['device']['ns'] == 50000, a
assert b['accepted'] == 0 and b['ipi']['count'] == 0, b
PY
	pass irqs_json_window_is_the_difference
else
	fail irqs_json_window_is_the_difference "rc $rc: $(cat "$work/err") / $(cat "$work/json")"
fi

# A file of format version 12 (the same file, its thread records cut before the interrupts, as that
# version wrote them): they are not known there, "?" in the text view, empty in CSV and null in
# JSON, never 0.
python3 "$TOP/tests/tools/older_thread_records.py" "$work/i.htr" "$work/v12.htr" 12 1128
if "$HT" report --irqs "$work/v12.htr" >"$work/out" 2>"$work/err" &&
	grep -Eq "^  vCPU 0 \(tid 2000\) +\? +\(the file holds no interrupts" "$work/out" &&
	grep -Eq "^  all its vCPU threads +\? " "$work/out" &&
	"$HT" report --irqs --csv "$work/v12.htr" >"$work/csv" 2>>"$work/err" &&
	grep -q '^1000,"",0,2000,"",1000000000,1000000000,3000000000,0,,,,,,,,,,,,,,,,,,,,,,$' "$work/csv" &&
	"$HT" report --irqs --json "$work/v12.htr" 2>>"$work/err" | python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin]
assert len(rows) == 2 and all(r["irqs"] is None for r in rows), rows' &&
	"$HT" report --halts "$work/v12.htr" >/dev/null 2>>"$work/err"; then
	pass irqs_of_a_version_12_file_are_unknown
else
	fail irqs_of_a_version_12_file_are_unknown "$(cat "$work/err") / $(cat "$work/out") / $(cat "$work/csv" 2>/dev/null)"
fi

# An acceptance count below its endings is no recording's: the reader refuses the block.
python3 - "$work/i.htr" "$work/bad.htr" <<'PY'
import struct, sys, zlib
data = bytearray(open(sys.argv[1], 'rb').read())
off = 256
while off + 24 <= len(data):
    magic, typ, enc, plen, count, raw, crc = struct.unpack_from('<IHHIIII', data, off)
    if typ == 4:
        _, nseries, nthreads = struct.unpack_from('<QII', data, off + 24)
        accepted = off + 24 + 64 + nseries * 376 + 1128 + 960  # the first thread's irqs.accepted
        struct.pack_into('<Q', data, accepted, 1)
        struct.pack_into('<I', data, off + 20, zlib.crc32(bytes(data[off + 24:off + 24 + plen])))
    off += 24 + plen
open(sys.argv[2], 'wb').write(data)
PY
"$HT" report --irqs "$work/bad.htr" >"$work/out" 2>"$work/err"
rc=$?
if [ "$rc" -eq 1 ] && grep -q "more interrupts delivered, overlapped and stale" "$work/out" "$work/err"; then
	pass irqs_that_do_not_add_up_are_refused
else
	fail irqs_that_do_not_add_up_are_refused "rc $rc: $(cat "$work/err") / $(cat "$work/out")"
fi

for other in --halts --vcpu-time --latency; do
	"$HT" report --irqs "$other" "$work/i.htr" >"$work/out" 2>"$work/err"
	rc=$?
	if [ "$rc" -eq 2 ] && [ "$(wc -l <"$work/err")" -eq 1 ]; then
		pass "irqs_and_${other#--}_exclude_each_other"
	else
		fail "irqs_and_${other#--}_exclude_each_other" "rc $rc: $(cat "$work/err")"
	fi
done
"$HT" report --irqs --dump "$work/i.htr" >"$work/out" 2>"$work/err"
rc=$?
[ "$rc" -eq 2 ] && pass irqs_refuses_dump || fail irqs_refuses_dump "rc $rc: $(cat "$work/err")"

suite_exit
