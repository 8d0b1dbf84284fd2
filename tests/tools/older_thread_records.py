"""A trace file as an older format version wrote it: argv[1] copied to
argv[2] with the header's version set to argv[3] and each EXITS block's
thread records cut to their first argv[4] bytes (the layout of that
version, docs/trace-format.md), each CRC made again. The file's own
version must be the current one (threads of 2440 bytes); EXITS blocks
are always raw."""
import struct
import sys
import zlib

THREAD_NOW, SERIES = 2440, 376

src, dst, version, keep = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
data = open(src, 'rb').read()
hdr = bytearray(data[:256])
struct.pack_into('<I', hdr, 8, version)
struct.pack_into('<I', hdr, 252, zlib.crc32(bytes(hdr[:252])))
out, off = bytearray(hdr), 256
while off + 24 <= len(data):
    magic, typ, enc, plen, count, raw, crc = struct.unpack_from('<IHHIIII', data, off)
    payload = data[off + 24:off + 24 + plen]
    off += 24 + plen
    if typ == 4:  # EXITS: a 64-byte header, then the series, the threads, the causes
        _, nseries, nthreads = struct.unpack_from('<QII', payload, 0)
        at = 64 + nseries * SERIES
        payload = payload[:at] + b''.join(payload[at + i * THREAD_NOW:at + i * THREAD_NOW + keep]
                                          for i in range(nthreads)) + payload[at + nthreads * THREAD_NOW:]
        plen = raw = len(payload)
        crc = zlib.crc32(payload)
    out += struct.pack('<IHHIIII', magic, typ, enc, plen, count, raw, crc) + payload
open(dst, 'wb').write(out)
