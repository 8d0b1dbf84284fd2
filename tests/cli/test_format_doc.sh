#!/usr/bin/env bash
# docs/trace-format.md is enough to write an independent reader and writer:
# a file written from the doc's tables alone must be read back exactly by
# `hypertrace-bpf report`, and the doc's own Python reader must read it too.
source "$(dirname "$0")/../lib.sh"

if ! command -v python3 >/dev/null; then
	fail format_doc "python3 is missing: run 'make deps'"
	suite_exit
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The doc's reader, verbatim: the first ```python block.
awk '/^```python$/{on=1;next} /^```$/{on=0} on' "$TOP/docs/trace-format.md" >"$work/doc_reader.py"

cat >"$work/independent.py" <<'PY'
import struct, sys, zlib
sys.path.insert(0, sys.argv[1])
from doc_reader import read_htr

path = sys.argv[2]
# Header, from the doc's table.
hdr = bytearray(256)
hdr[0:8] = b'HYPTRACE'
struct.pack_into('<IIII', hdr, 8, 2, 256, 80, 0)
struct.pack_into('<QQ', hdr, 24, 5_000_000_000, 1_700_000_000_000_000_000)
hdr[40:40 + 9] = b'6.1.0-doc'
hdr[105:105 + 12] = b'AuthenticAMD'
struct.pack_into('<I', hdr, 120, 1)
struct.pack_into('<I', hdr, 124, 1000)
struct.pack_into('<I', hdr, 252, zlib.crc32(bytes(hdr[:252])))

def record(i):
    return struct.pack('<QQQQQQIIIIIIHHHBB',
                       5_000_000_000 + i * 1000, 0x101e, i % 2, i, 0xa2a2a2a2, 0xa3a3a3a3,
                       1000, 0x81, 100 + i, 200 + i, 4242, 4243 + i % 2, i % 2, 1, 1, 2, 0)

def block(typ, count, payload):
    return struct.pack('<IHHIIII', 0x4b425448, typ, 0, len(payload), count, len(payload),
                       zlib.crc32(payload)) + payload

def delta_zlib_block(count, raw):
    # Encoding 1, from the doc: u64 columns, delta-coded, one after the other, deflated.
    words = [struct.unpack_from('<Q', raw, i * 80 + k * 8)[0] for i in range(count) for k in range(10)]
    cols = b''.join(struct.pack('<Q', (words[i * 10 + k] - (words[(i - 1) * 10 + k] if i else 0)) % 2**64)
                    for k in range(10) for i in range(count))
    payload = zlib.compress(cols)
    return struct.pack('<IHHIIII', 0x4b425448, 1, 1, len(payload), count, len(raw),
                       zlib.crc32(payload)) + payload

recs = b''.join(record(i) for i in range(10))
# Identity, from the doc's table: names thread 4244 of process 4242 (odd records).
ident = struct.pack('<QII16s16s64s', 5_000_000_001, 4242, 4244, b'qemu-system-x86', b'CPU 1/KVM', b'doc,vm')
trailer = struct.pack('<8Q', 10, 0, 0, 0, 0, 6_000_000_000, 1_700_000_001_000_000_000, 0)
with open(path, 'wb') as f:
    f.write(bytes(hdr) + block(3, 1, ident) + block(1, 6, recs[:480]) + delta_zlib_block(4, recs[480:]) +
            block(2, 1, trailer))

back, tr = read_htr(path)
assert len(back) == 10 and back[3][3] == 3 and back[9][6] == 1000 and back[8][3] == 8, back
assert tr[0] == 10
print("ok")
PY
out=$(python3 "$work/independent.py" "$work" "$work/doc.htr" 2>&1)
[ "$out" = ok ] && pass format_doc_python_reader_reads_a_doc_written_file || fail format_doc_python_reader_reads_a_doc_written_file "$out"

# The doc's reader reads a file of this version (the real writer's, with EXITS blocks it skips).
if "$OUTPUT/tests/tools/exits_craft" "$work/v.htr" causes &&
	out=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); from doc_reader import read_htr
recs, tr = read_htr(sys.argv[2]); assert recs == [] and tr[0] == 0, (recs, tr); print("ok")' "$work" "$work/v.htr" 2>&1) &&
	[ "$out" = ok ]; then
	pass format_doc_python_reader_reads_this_version
else
	fail format_doc_python_reader_reads_this_version "$out"
fi

csv=$("$HT" report --csv "$work/doc.htr" 2>&1); status=$?
line4=$(sed -n 5p <<<"$csv")
line8=$(sed -n 9p <<<"$csv") # record 7 comes from the compressed block
# Records of thread 4244 carry the names of the IDENTITY block (the VM name,
# every text field quoted); thread 4243 has none.
want='5000003000,2023-11-14T22:13:20.000003000Z,4242,4244,1,1,1,SVM,0x81,1000,0x1,0x3,0xa2a2a2a2,0xa3a3a3a3,0x101e,103,203,306,0x0,"doc,vm","qemu-system-x86","CPU 1/KVM"'
want8='5000007000,2023-11-14T22:13:20.000007000Z,4242,4244,1,1,1,SVM,0x81,1000,0x1,0x7,0xa2a2a2a2,0xa3a3a3a3,0x101e,107,207,314,0x0,"doc,vm","qemu-system-x86","CPU 1/KVM"'
want2='5000002000,2023-11-14T22:13:20.000002000Z,4242,4243,0,1,1,SVM,0x81,1000,0x0,0x2,0xa2a2a2a2,0xa3a3a3a3,0x101e,102,202,304,0x0,"","",""'
line3=$(sed -n 4p <<<"$csv")
if [ $status -eq 0 ] && [ "$(wc -l <<<"$csv")" -eq 11 ] && [ "$line4" = "$want" ] && [ "$line8" = "$want8" ] &&
	[ "$line3" = "$want2" ]; then
	pass format_doc_report_reads_a_doc_written_file
else
	fail format_doc_report_reads_a_doc_written_file "status $status; record 2: $line3; want $want2; record 3: $line4; want $want; record 7: $line8; want $want8"
fi
# Version 3: two EXITS blocks written from the doc's tables; the second only
# what changed (series 2), cumulative; the state at the end is both applied.
cat >"$work/exits.py" <<'PY'
import struct, sys, zlib
path = sys.argv[1]
hdr = bytearray(256)
hdr[0:8] = b'HYPTRACE'
struct.pack_into('<IIII', hdr, 8, 3, 256, 80, 0)
struct.pack_into('<QQ', hdr, 24, 5_000_000_000, 1_700_000_000_000_000_000)
struct.pack_into('<I', hdr, 120, 1)
struct.pack_into('<I', hdr, 124, 1000)
struct.pack_into('<I', hdr, 252, zlib.crc32(bytes(hdr[:252])))
def block(typ, count, payload):
    return struct.pack('<IHHIIII', 0x4b425448, typ, 0, len(payload), count, len(payload), zlib.crc32(payload)) + payload
def series(pid, vcpu, isa, reason, slots, in_host=0):
    count = sum(slots)
    total = sum(n * (1 << k) for k, n in enumerate(slots))
    lo = min(k for k, n in enumerate(slots) if n)
    hi = max(k for k, n in enumerate(slots) if n)
    return struct.pack('<IHBBIIQQQQQ40Q', pid, vcpu, isa, 0, reason, 0, in_host, count, total, 1 << lo, 1 << hi,
                       *(slots + [0] * (40 - len(slots))))
def thread(pid, tid, vcpu, wait, pc, pns, vc, vns, gone=0):
    return struct.pack('<IIHHIQQQQQ', pid, tid, vcpu, 0, gone, wait, pc, pns, vc, vns)
def exits(time, flags, ser, thr, lost_switches=0):
    return block(4, len(ser) + len(thr), struct.pack('<QIIIIQQQ', time, len(ser), len(thr), flags, 0, 0, 0, lost_switches) + b''.join(ser + thr))
ident = struct.pack('<QII16s16s64s', 5_000_000_001, 4242, 4250, b'qemu-system-x86', b'CPU 0/KVM', b'docvm')
b1 = exits(6_000_000_000, 0, [series(4242, 0, 2, 0x7b, [0] * 10 + [5]), series(4242, 1, 2, 0x78, [0] * 20 + [2])],
           [thread(4242, 4250, 0, 1000, 1, 1000, 2, 5000)])
b2 = exits(7_000_000_000, 1, [series(4242, 1, 2, 0x78, [0] * 20 + [3], in_host=1)], [thread(4242, 4250, 0, 3000, 2, 3000, 3, 9000, 1)],
           lost_switches=7)
trailer = struct.pack('<8Q', 0, 0, 0, 0, 0, 7_000_000_000, 1_700_000_002_000_000_000, 0)
open(path, 'wb').write(bytes(hdr) + block(3, 1, ident) + b1 + b2 + block(2, 1, trailer))
PY
python3 "$work/exits.py" "$work/exits.htr"
got=$("$HT" report --exits --csv "$work/exits.htr" 2>&1 | cut -d, -f1-12 | tail -n +2 | tr '\n' ' ')
want='4242,"docvm",0,SVM,123,"io",5,5120,1024,1024,1024,1024 4242,"docvm",1,SVM,120,"hlt",3,3145728,1048576,1048576,1048576,1048576 '
[ "$got" = "$want" ] && pass format_doc_exits_blocks_are_read_as_documented ||
	fail format_doc_exits_blocks_are_read_as_documented "got '$got', want '$want'"
text=$("$HT" report --exits "$work/exits.htr" 2>&1)
grep -q "vCPU 0 (CPU 0/KVM, tid 4250, ended): 5 exits, wait 3.00us" <<<"$text" && grep -q "1 still in the host at the end" <<<"$text" &&
	grep -q "^switches of vCPU threads not recorded (ring buffer full): 7$" <<<"$text" &&
	pass format_doc_exits_threads_are_read_as_documented || fail format_doc_exits_threads_are_read_as_documented "$text"

sum=$("$HT" report "$work/doc.htr" 2>&1)
grep -q "^records: 10$" <<<"$sum" && grep -q "host kernel 6.1.0-doc, CPU AuthenticAMD" <<<"$sum" \
	&& pass format_doc_header_fields_are_read || fail format_doc_header_fields_are_read "$sum"

# Version 4: vCPU switches in a record's place, from the doc's table, in a raw
# and a compressed block between hypercall records; the doc's reader and
# report count only the hypercalls, report --vcpu-switches lists the switches.
# The parts of a file both files below are written with, from the tables alone.
cat >"$work/doc_writer.py" <<'PY'
import struct, zlib
def header(version, filter_flags=0):
    hdr = bytearray(256)
    hdr[0:8] = b'HYPTRACE'
    struct.pack_into('<IIII', hdr, 8, version, 256, 80, 0)
    struct.pack_into('<QQ', hdr, 24, 5_000_000_000, 1_700_000_000_000_000_000)
    struct.pack_into('<I', hdr, 120, 1)
    struct.pack_into('<I', hdr, 124, 1000)
    struct.pack_into('<I', hdr, 156, filter_flags)
    struct.pack_into('<I', hdr, 252, zlib.crc32(bytes(hdr[:252])))
    return bytes(hdr)
def block(typ, count, payload, enc=0, raw=None):
    return struct.pack('<IHHIIII', 0x4b425448, typ, enc, len(payload), count, len(raw or payload), zlib.crc32(payload)) + payload
def record(t, a1):
    return struct.pack('<QQQQQQIIIIIIHHHBB', t, 0x101e, 0, a1, 0, 0, 1000, 0x81, 10, 20, 4242, 4250, 0, 1, 1, 2, 0)
def compressed(items):
    raw = b''.join(items)
    n = len(items)
    w = [struct.unpack_from('<Q', raw, i * 80 + k * 8)[0] for i in range(n) for k in range(10)]
    cols = b''.join(struct.pack('<Q', (w[i * 10 + k] - (w[(i - 1) * 10 + k] if i else 0)) % 2**64)
                    for k in range(10) for i in range(n))
    return block(1, n, zlib.compress(cols), 1, raw)
PY
cat >"$work/switches.py" <<'PY'
import struct, sys
sys.path.insert(0, sys.argv[1])
from doc_reader import read_htr
from doc_writer import header, block, record, compressed
path = sys.argv[2]
hdr = header(4)
def switch(t, state, other, comm, kind, involuntary):
    return struct.pack('<QQII16sII16xIIHHHBB', t, state, other, other, comm, kind, involuntary,
                       4242, 4250, 0, 1, 0, 0, 0x80)
first = [record(5_000_001_000, 1), switch(5_000_002_000, 0, 4300, b'kworker/1:1', 1, 1), switch(5_000_003_000, 0, 4300, b'kworker/1:1', 2, 0)]
second = [record(5_000_004_000, 2), switch(5_000_005_000, 1, 0, b'swapper/1', 1, 0), switch(5_000_009_000, 0, 0, b'swapper/1', 2, 0)]
trailer = struct.pack('<8Q', 6, 0, 0, 0, 0, 6_000_000_000, 1_700_000_001_000_000_000, 0)
open(path, 'wb').write(bytes(hdr) + block(1, 3, b''.join(first)) + compressed(second) + block(2, 1, trailer))
back, tr = read_htr(path)
assert [r[3] for r in back] == [1, 2] and tr[0] == 6, (back, tr)
print("ok")
PY
out=$(python3 "$work/switches.py" "$work" "$work/switches.htr" 2>&1)
[ "$out" = ok ] && pass format_doc_vcpu_switches_are_skipped_by_the_doc_reader ||
	fail format_doc_vcpu_switches_are_skipped_by_the_doc_reader "$out"
got=$("$HT" report --vcpu-switches --csv "$work/switches.htr" 2>&1 | cut -d, -f1,3-12 | tr '\n' ' ')
want='time_ns,host_pid,host_tid,vcpu_id,cpu,switch,prev_state,involuntary,other_tid,other_pid,other_comm 5000002000,4242,4250,0,1,out,0,1,4300,4300,"kworker/1:1" 5000003000,4242,4250,0,1,in,0,0,4300,4300,"kworker/1:1" 5000005000,4242,4250,0,1,out,1,0,0,0,"swapper/1" 5000009000,4242,4250,0,1,in,0,0,0,0,"swapper/1" '
[ "$got" = "$want" ] && pass format_doc_vcpu_switches_are_read_as_documented ||
	fail format_doc_vcpu_switches_are_read_as_documented "got '$got', want '$want'"
sum=$("$HT" report "$work/switches.htr" 2>&1); status=$?
[ $status -eq 0 ] && grep -q "^records: 2$" <<<"$sum" && grep -q "^switches of vCPU threads: 4 " <<<"$sum" &&
	pass format_doc_vcpu_switches_are_not_hypercalls || fail format_doc_vcpu_switches_are_not_hypercalls "status $status: $sum"

# A file of version 11 with wake-ups of halted vCPUs, written from the vCPU
# wake-up table alone (raw and compressed): the doc's reader skips them,
# report counts only the hypercalls, report --latency reads each field.
cat >"$work/wakeups.py" <<'PY'
import struct, sys
sys.path.insert(0, sys.argv[1])
from doc_reader import read_htr
from doc_writer import header, block, record, compressed
path = sys.argv[2]
hdr = header(11, 1 << 5)
def wakeup(entry, wake, wait, vector, timer, cls):
    return struct.pack('<QQQIII28xIIHHHBB', entry, wake, wait, vector, timer, cls, 4242, 4250, 3, 1, 0, 0, 0x20)
first = [wakeup(5_000_001_000, 5_000_000_400, 100, 236, 236, 0), record(5_000_001_500, 1)]
second = [wakeup(5_000_009_000, 5_000_002_000, 6000, 0xffffffff, 236, 2), record(5_000_009_500, 2)]
trailer = struct.pack('<8Q', 4, 0, 0, 0, 0, 6_000_000_000, 1_700_000_001_000_000_000, 0)
open(path, 'wb').write(bytes(hdr) + block(1, 2, b''.join(first)) + compressed(second) + block(2, 1, trailer))
back, tr = read_htr(path)
assert [r[3] for r in back] == [1, 2] and tr[0] == 4, (back, tr)
print("ok")
PY
out=$(python3 "$work/wakeups.py" "$work" "$work/wakeups.htr" 2>&1)
[ "$out" = ok ] && pass format_doc_vcpu_wakeups_are_skipped_by_the_doc_reader ||
	fail format_doc_vcpu_wakeups_are_skipped_by_the_doc_reader "$out"
got=$("$HT" report --latency --csv "$work/wakeups.htr" 2>&1 | cut -d, -f1,2,4-13 | tr '\n' ' ')
want='wake_ns,entry_ns,host_pid,host_tid,vcpu_id,cpu,class,vector,timer_vector,total_ns,wait_ns,rest_ns 5000000400,5000001000,4242,4250,3,1,timer,236,236,600,100,500 5000002000,5000009000,4242,4250,3,1,none,,236,7000,6000,1000 '
[ "$got" = "$want" ] && pass format_doc_vcpu_wakeups_are_read_as_documented ||
	fail format_doc_vcpu_wakeups_are_read_as_documented "got '$got', want '$want'"
sum=$("$HT" report "$work/wakeups.htr" 2>&1); status=$?
[ $status -eq 0 ] && grep -q "^records: 2$" <<<"$sum" && grep -q "^wake-ups of halted vCPUs: 2 " <<<"$sum" &&
	pass format_doc_vcpu_wakeups_are_not_hypercalls || fail format_doc_vcpu_wakeups_are_not_hypercalls "status $status: $sum"

suite_exit
