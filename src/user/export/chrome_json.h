/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Writes records as Chrome trace event JSON (the JSON Object Format), which
 * Perfetto UI, chrome://tracing and Chrome DevTools open: a track per vCPU
 * thread inside its VM process, one complete event ("ph":"X") per hypercall
 * with the two phases nested in it; each VM's boot phases (record --boot)
 * on a track of its own, and its guest's initcalls (guest/boottrace) on
 * tracks of their own. docs/exports.md describes it.
 *
 * Streaming: events are written as records come; memory grows with the
 * number of vCPU threads (for their name events) and of booting VMs, and
 * with the records of the guests' own traces (nr 1150..1152), not with
 * the others.
 * The file is written unnamed and gets its name only when complete
 * (tracefile/output_file.h).
 */
#ifndef HT_CHROME_JSON_H
#define HT_CHROME_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "export/initcall_spans.h"
#include "hypertrace/trace_file.h"
#include "tracefile/trace_reader.h"

struct ht_chrome_writer;

/*
 * Creates the file for PATH, unnamed, with mode (refusing an existing file
 * unless force). 0, or -errno with err.
 */
int ht_chrome_open(const char *path, bool force, mode_t mode, const struct ht_file_header *h,
		   struct ht_chrome_writer **out, char *err, size_t errlen);
/* Adds the decoded guest events (export/chrome_guest.h) to every later record. 0 or -ENOMEM. */
struct ht_decoder;
int ht_chrome_decode(struct ht_chrome_writer *w, const struct ht_decoder *dec);
/* 0, or -errno with err. */
int ht_chrome_add(struct ht_chrome_writer *w, const struct ht_record *r, char *err, size_t errlen);
/* One exit of a booting VM (record --boot): its boot phases are written at close (export/chrome_boot.h). 0 or -ENOMEM. */
int ht_chrome_add_boot_exit(struct ht_chrome_writer *w, const struct ht_boot_exit *be, char *err, size_t errlen);
/*
 * One record of a guest's own trace (nr 1150..1152) of a selected VM: its
 * initcalls are written at close (export/chrome_initcalls.h). 0 or -ENOMEM.
 */
int ht_chrome_add_guest_trace(struct ht_chrome_writer *w, const struct ht_record *r, char *err, size_t errlen);
/*
 * Ends the event array and writes the trace's identity (metadata) so the
 * file is valid JSON even when the input was damaged, then gives the file
 * its name (replacing the old one with force). Frees w. What of the
 * guests' initcalls was not drawn goes to *initcalls (if not NULL). 0, or
 * -errno (then nothing is named).
 */
int ht_chrome_close(struct ht_chrome_writer *w, const struct ht_read_status *st, const char *source,
		    const char *selection, struct ht_initcall_counts *initcalls, char *err, size_t errlen);
/* Frees w and the unnamed file: PATH stays as it was. NULL is fine. */
void ht_chrome_abandon(struct ht_chrome_writer *w);

#endif
