/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * CRC-32 exactly as zlib's crc32() computes it (the trace file's checksum),
 * several times faster on CPUs with PCLMULQDQ: zlib's table-driven crc32
 * would cost about half of the drain's time per record.
 */
#ifndef HT_CRC32_H
#define HT_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* Same contract as zlib: ht_crc32(0, buf, len), and chaining with the previous result. */
uint32_t ht_crc32(uint32_t crc, const void *buf, size_t len);
/* Whether the carry-less multiply path is in use on this CPU (for benchmarks). */
int ht_crc32_accelerated(void);

#endif
