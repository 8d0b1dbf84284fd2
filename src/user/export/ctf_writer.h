/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Writes records as a CTF 1.8 trace directory (TSDL `metadata` + binary data
 * streams) for babeltrace2 and Trace Compass. docs/exports.md describes the
 * layout: one stream per vCPU thread, one event class `hypercall` with every
 * field of the record, a clock anchored to wall-clock time, drops in
 * `events_discarded`, the file's identity in `env`.
 *
 * Streaming: each stream buffers one packet (export/ctf_trace.h, the CTF
 * layer under both CTF exports); memory grows with the number of vCPU
 * threads, not with the number of records.
 * The trace is built in a temporary directory next to DIR and renamed into
 * place only when complete (tracefile/output_file.h).
 */
#ifndef HT_CTF_WRITER_H
#define HT_CTF_WRITER_H

#include <stddef.h>
#include <sys/types.h>
#include "hypertrace/trace_file.h"
#include "tracefile/trace_reader.h"

struct ht_ctf_writer;

/*
 * Prepares DIR (new, or an existing empty directory); its files will have
 * mode, the directory mode plus x where mode has r. The header gives the
 * clock anchor and the identity. 0, or -errno with a one-line message (what
 * to do) in err.
 */
int ht_ctf_open(const char *dir, mode_t mode, const struct ht_file_header *h, struct ht_ctf_writer **out,
		char *err, size_t errlen);
/* Guest events (export/ctf_guest.h) as event classes of their own from now on; dec outlives w. */
struct ht_decoder;
void ht_ctf_decode(struct ht_ctf_writer *w, const struct ht_decoder *dec);
/* Adds one record to its vCPU thread's stream. 0, or -errno with err. */
int ht_ctf_add(struct ht_ctf_writer *w, const struct ht_record *r, char *err, size_t errlen);
/*
 * Writes the last packets, the recording's drop counts (from st's trailer,
 * if any) and the metadata, whose env block also names the source file, the
 * selection and how reading ended, then renames the trace into place as
 * DIR. Frees w. 0, or -errno with err (then DIR is as it was).
 */
int ht_ctf_close(struct ht_ctf_writer *w, const struct ht_read_status *st, const char *source,
		 const char *selection, char *err, size_t errlen);
/* Frees w and removes the unfinished trace: DIR stays as it was. NULL is fine. */
void ht_ctf_abandon(struct ht_ctf_writer *w);
/* Records whose time was raised to keep their stream in time order. */
unsigned long long ht_ctf_reordered(const struct ht_ctf_writer *w);

#endif
