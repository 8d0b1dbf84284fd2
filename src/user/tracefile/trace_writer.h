/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Writes a trace file: header, record blocks with CRC32, trailer. */
#ifndef HT_TRACE_WRITER_H
#define HT_TRACE_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include "hypertrace/trace_file.h"

struct ht_writer;

/* Records per block: 4096 * 80 B = 320 KiB, written with one write(2). */
#define HT_WRITER_BLOCK_RECORDS 4096

/*
 * Creates PATH (refusing to replace an existing file unless force) and writes
 * the header; hdr's magic, version, sizes and crc are filled in here.
 * Returns 0, or -errno with a one-line reason (what to do) in err.
 */
int ht_writer_open(const char *path, bool force, const struct ht_file_header *hdr,
		   struct ht_writer **out, char *err, size_t errlen);
/* HT_ENCODING_RAW (default) or HT_ENCODING_DELTA_ZLIB for the record blocks. 0 or -errno. */
int ht_writer_set_encoding(struct ht_writer *w, unsigned int encoding);
/* Buffers one record; writes a block when it is full. 0 or -errno. */
int ht_writer_add(struct ht_writer *w, const struct ht_record *rec);
/* Writes the buffered records (if any) as a block now. 0 or -errno. */
int ht_writer_flush(struct ht_writer *w);
/* Flushes, writes the trailer, fsyncs and closes. Frees w either way. 0 or -errno. */
int ht_writer_close(struct ht_writer *w, const struct ht_trailer *trailer);
/* Frees w without a trailer (the file stays readable up to its last block). */
void ht_writer_abandon(struct ht_writer *w);

unsigned long long ht_writer_records(const struct ht_writer *w);

/* Fills the identity part of a header: clocks, kernel release, CPU vendor. */
void ht_header_init(struct ht_file_header *hdr);

#endif
