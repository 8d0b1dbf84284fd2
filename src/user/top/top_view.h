/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What `hypertrace-bpf top` shows, as lines: one row per VM (pid, name,
 * exits/s, p50/p99 time in the host, wait %, hypercalls/s), optionally its
 * vCPUs and its exit reasons under it, sorted by a key, cut to the screen.
 * Pure: the caller gives the interval's exit table and the names.
 */
#ifndef HT_TOP_VIEW_H
#define HT_TOP_VIEW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include "exits/exit_table.h"

enum ht_top_sort {
	HT_TOP_SORT_EXITS,  /* exits/s, most first */
	HT_TOP_SORT_WAIT,   /* wait %, most first */
	HT_TOP_SORT_HCALLS, /* hypercalls/s, most first */
	HT_TOP_SORT_P99,    /* p99 time in the host, longest first */
	HT_TOP_SORT_NAME,   /* VM name */
	HT_TOP_SORT_PID,    /* VM process id */
	HT_TOP_NSORTS,
};

/* "exits", "wait", "hcalls", "p99", "name", "pid" */
const char *ht_top_sort_name(enum ht_top_sort s);
bool ht_top_sort_parse(const char *arg, enum ht_top_sort *out);

struct ht_top_view_opts {
	enum ht_top_sort sort;
	bool vcpus;              /* a row per vCPU thread under each VM */
	bool reasons;            /* a row per exit reason under each VM */
	unsigned int width;      /* columns; 0: 80 */
	unsigned int height;     /* rows; 0: no limit (batch) */
	bool terminal;           /* the key help in the header */
	uint64_t interval_ns;    /* the interval the table covers */
	time_t now;              /* wall clock for the header */
	bool (*alive)(void *ctx, uint32_t pid);                    /* a VM process still there; NULL: all */
	const char *(*vm_name)(void *ctx, uint32_t pid);            /* raw; escaped here */
	const char *(*thread_name)(void *ctx, uint32_t pid, uint32_t tid);
	void *ctx;
};

/*
 * Writes the frame for the interval table (exits and waiting of the
 * interval) and total (every vCPU thread known: the rows of idle ones too).
 * Lines end with "\n"; the caller positions the cursor. Returns lines
 * written, or -errno.
 */
int ht_top_view_write(FILE *out, const struct ht_exit_table *interval, const struct ht_exit_table *total,
		      const struct ht_top_view_opts *o);

#endif
