/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The summary of a trace file: counts per vCPU and nr, latency statistics. */
#ifndef HT_REPORT_SUMMARY_H
#define HT_REPORT_SUMMARY_H

#include <stdio.h>
#include "hypertrace/trace_file.h"
#include "tracefile/trace_reader.h"

struct ht_summary;

struct ht_summary *ht_summary_new(void);
/* 0, or -ENOMEM. */
int ht_summary_add(struct ht_summary *s, const struct ht_record *r);
void ht_summary_print(struct ht_summary *s, FILE *out, const char *path,
		      const struct ht_file_header *h, const struct ht_read_status *st);
void ht_summary_free(struct ht_summary *s);

#endif
