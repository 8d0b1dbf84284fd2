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
sum=$("$HT" report "$work/doc.htr" 2>&1)
grep -q "^records: 10$" <<<"$sum" && grep -q "host kernel 6.1.0-doc, CPU AuthenticAMD" <<<"$sum" \
	&& pass format_doc_header_fields_are_read || fail format_doc_header_fields_are_read "$sum"

suite_exit
