/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The summary of a trace file: counts per vCPU and nr, latency min/avg/max and
 * exact p50/p99 in bounded memory (report_summary.c says how).
 */
#ifndef HT_REPORT_SUMMARY_H
#define HT_REPORT_SUMMARY_H

#include <stdbool.h>
#include <stdio.h>
#include "hypertrace/trace_file.h"
#include "tracefile/trace_reader.h"

/* vCPUs (pid, vcpu) and nrs listed each; records of further keys are counted together. */
#define HT_SUMMARY_MAX_KEYS 65536

struct ht_summary;

struct ht_summary *ht_summary_new(void);
/*
 * Tests: keep every latency of up to exact_records records (default 2^18), and
 * collect a percentile's bucket when it holds at most collect_values values.
 */
void ht_summary_set_limits(struct ht_summary *s, size_t exact_records, size_t collect_values);
/*
 * When only the records that match(ctx, record, reader) were added (a
 * selection), the percentiles' reads of the file skip the others too; reader
 * is the struct ht_reader of that read (it knows the file's VM names).
 */
void ht_summary_set_filter(struct ht_summary *s,
			   bool (*match)(const void *ctx, const struct ht_record *r, void *reader),
			   const void *ctx);
/* Reads of the file so far, the first included (the percentiles may read it again). */
unsigned int ht_summary_passes(const struct ht_summary *s);
/* 0, or -ENOMEM. */
int ht_summary_add(struct ht_summary *s, const struct ht_record *r);
/* Of the records added, those with the guest module's nr that guest user space forged (shown if any). */
void ht_summary_set_forged(struct ht_summary *s, unsigned long long forged);
/*
 * Prints the summary. Beyond the exact limit it reads PATH again (its first
 * records, as many as were added) to pin down the percentiles. names: the
 * reader, for VM and thread names (IDENTITY blocks); NULL: none.
 */
void ht_summary_print(struct ht_summary *s, FILE *out, const char *path,
		      const struct ht_file_header *h, const struct ht_read_status *st,
		      struct ht_reader *names);
void ht_summary_free(struct ht_summary *s);

#endif
