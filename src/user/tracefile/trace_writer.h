/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Writes a trace file: header, record blocks with CRC32, trailer.
 *
 * The file is a new one, never an existing file opened for writing: it is
 * created unnamed in the target's directory (O_TMPFILE, or a private
 * temporary name where the file system lacks it) and only gets its name when
 * the caller publishes it, replacing an older file atomically with --force.
 * Until then a failure or a kill leaves nothing behind and the old file intact.
 * The directory is reached without following a link that someone other than
 * root or the caller owns (tracefile/output_file.h).
 *
 * Blocks are written by a writer thread: the caller (the ring-buffer drain)
 * only copies records into a block buffer and hands full ones over, so no
 * write(2), page allocation or compression ever stalls the drain. A block the
 * file system refuses (ENOSPC, EDQUOT, EIO...) is cut off again, so the file
 * still ends at a whole block, and its records are counted as not written.
 */
#ifndef HT_TRACE_WRITER_H
#define HT_TRACE_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "hypertrace/trace_file.h"

struct ht_writer;

/* Records per block: 4096 * 80 B = 320 KiB, written with one write(2). */
#define HT_WRITER_BLOCK_RECORDS 4096
/* Blocks that can wait for the writer thread before the drain waits for it (2.5 MiB). */
#define HT_WRITER_QUEUE_BLOCKS 8
/* Mode of a new trace file unless told otherwise: guest arguments are not for every user. */
#define HT_WRITER_DEFAULT_MODE 0600

/*
 * Prepares PATH: resolves its directory (following only links of root or the
 * caller), refuses a symbolic link, anything but a regular file, and an
 * existing file unless force; creates the new, still unnamed, file next to it
 * (mode 0600) and writes the header. hdr's magic, version, sizes and crc are
 * filled in here. Returns 0, or -errno with a one-line reason (what to do) in err.
 */
int ht_writer_open(const char *path, bool force, const struct ht_file_header *hdr,
		   struct ht_writer **out, char *err, size_t errlen);
/* Sets the file's mode (exactly, whatever the umask) and, if uid != -1, its owner. 0 or -errno. */
int ht_writer_set_access(struct ht_writer *w, mode_t mode, uid_t uid, gid_t gid, char *err,
			 size_t errlen);
/*
 * Gives the file its name: PATH now is this file (with force, the old one is
 * replaced in one rename). From here on a crash leaves the file, readable up
 * to its last whole block. 0 or -errno with a reason in err.
 */
int ht_writer_publish(struct ht_writer *w, char *err, size_t errlen);
/* Takes the name away again if it still is this file's (a run that ends before recording anything). */
void ht_writer_unpublish(struct ht_writer *w);
/* HT_ENCODING_RAW (default) or HT_ENCODING_DELTA_ZLIB for the record blocks. 0 or -errno. */
int ht_writer_set_encoding(struct ht_writer *w, unsigned int encoding);
/*
 * Names a thread before its first record: the IDENTITY block holding id is
 * written just before the block that the next ht_writer_add fills, so a
 * reader always meets it before any record of that thread that follows.
 * 0 or -ENOMEM.
 */
int ht_writer_add_identity(struct ht_writer *w, const struct ht_identity *id);
/*
 * Queues a raw block of another kind (HT_BLOCK_EXITS) of items items: it is
 * written after the identities queued so far and before the records block
 * being filled, at the next hand-over (a flush, a full block or the close).
 * 0, -ENOMEM, or -E2BIG for a payload over HT_BLOCK_MAX_PAYLOAD.
 */
int ht_writer_add_block(struct ht_writer *w, __u16 type, const void *payload, __u32 len, __u32 items);
/* Buffers one record; hands the block to the writer thread when it is full. */
void ht_writer_add(struct ht_writer *w, const struct ht_record *rec);
/*
 * Adding without a copy, for the drain: the free record slots of the block
 * being filled (*room >= 1 of them). Fill the first n, then commit them; the
 * block goes to the writer thread when it is full.
 */
struct ht_record *ht_writer_slots(struct ht_writer *w, unsigned int *room);
void ht_writer_commit(struct ht_writer *w, unsigned int n);
/* Hands the buffered records (if any) to the writer thread as a block now, unless it is still busy. */
void ht_writer_flush(struct ht_writer *w);
/*
 * Writes every block, then the trailer (its records and not_written fields are
 * filled in here), publishes the file if not yet done, fsyncs and closes.
 * Frees w either way. Returns 0, or the -errno of the first failed write (some
 * records or the trailer are then missing, as trailer->not_written says).
 */
int ht_writer_close(struct ht_writer *w, struct ht_trailer *trailer);
/* Frees w without a trailer: an unpublished file disappears, a published one stays readable. */
void ht_writer_abandon(struct ht_writer *w);

/* Records handed to the writer so far. */
unsigned long long ht_writer_records(const struct ht_writer *w);
/* -errno of the first failed write so far, or 0; and how many records it cost. */
int ht_writer_error(struct ht_writer *w, unsigned long long *not_written);

/* Fills the identity part of a header: clocks, kernel release, CPU vendor. */
void ht_header_init(struct ht_file_header *hdr);

#endif
