/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What `report` does with guest events: the decoder for --dump/--csv/--json,
 * and the --graph / --sched analyses fed record by record and printed at
 * the end. A NULL handle (nothing asked) decodes nothing.
 */
#ifndef HT_DECODE_REPORT_GUEST_H
#define HT_DECODE_REPORT_GUEST_H

#include <stdio.h>
#include "decode/decoder.h"

struct ht_report_guest;

/* Returns 0, or -1 with a one-line message in err. */
int ht_report_guest_open(struct ht_report_guest **out, const struct ht_decode_config *cfg,
			 const char *trace_path, const struct ht_file_header *h, char *err,
			 size_t errlen);
/* The decoder; an empty one (catalog-less, symbol-less) for a NULL handle. */
const struct ht_decoder *ht_report_guest_decoder(const struct ht_report_guest *g);
/* Every record of the file, in file order, selected or not (ht_decoder_note). -1 when out of memory. */
int ht_report_guest_note(struct ht_report_guest *g, const struct ht_record *r);
/* A selected record: counted if forged, else fed to the analysis. Returns -1 when out of memory. */
int ht_report_guest_observe(struct ht_report_guest *g, const struct ht_record *r);
/* The selected records that were forged (the project's nr, not from the guest kernel's module). */
unsigned long long ht_report_guest_forged(const struct ht_report_guest *g);
/* Prints the analysis: times relative to start_ns; end_ns ends the last task's run. */
void ht_report_guest_finish(struct ht_report_guest *g, FILE *out, uint64_t start_ns, uint64_t end_ns);
void ht_report_guest_close(struct ht_report_guest *g);

#endif
