/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Exit statistics as text: per VM, its exits per reason (count, rate,
 * min/p50/p99/max time in the host) and its vCPUs' waiting and switching;
 * for the live view of record --exits and for report --exits. Names pass
 * through ht_escape (common/escape.h). Percentiles are log2 bucket bounds, printed as
 * "<=" values; min and max are exact where the table knows them.
 */
#ifndef HT_EXIT_VIEW_H
#define HT_EXIT_VIEW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "exits/exit_table.h"

struct ht_exit_view_opts {
	uint64_t elapsed_ns;      /* the table's time span, for rates and wait shares; 0: none */
	unsigned int width;       /* columns; 0: 80 */
	unsigned int max_reasons; /* reasons listed per VM (the busiest); 0: all */
	bool per_vcpu_reasons;    /* report: a reason table per vCPU too */
	unsigned int causes_per_reason; /* under each of a VM's reasons its busiest causes (t->causes); 0: none */
	uint64_t start_ns;        /* CLOCK_MONOTONIC of the recording's start: a thread's start is shown from it */
	const char *(*vm_name)(void *ctx, uint32_t pid);            /* NULL or "" if unknown */
	const char *(*thread_name)(void *ctx, uint32_t pid, uint32_t tid);
	void *name_ctx;
};

/* Writes the view of t; lines are cut to the width. 0 or -errno. */
int ht_exit_view_write(FILE *out, const struct ht_exit_table *t, const struct ht_exit_view_opts *o);

/*
 * The causes of exits as text: per VM and exit reason (busiest first) each
 * cause's count, rate, and time in KVM and in the VMM (p50, p99 as log2
 * bucket bounds). Nothing if t has no causes. 0 or -errno.
 */
int ht_exit_causes_view_write(FILE *out, const struct ht_exit_table *t, const struct ht_exit_view_opts *o);
/* One cause in a line: "io 0x3f8 out 1: 1200/s, kvm p50 <=4.1us, vmm p50 <=262us" (no vmm part if none went there). */
void ht_exit_cause_summary(char *buf, size_t len, const struct ht_exit_cause_row *c, uint64_t elapsed_ns);

/*
 * How many of n thread rows (of one VM) are of the same vCPU as each:
 * counts[i] for rows[i]. A vCPU's exits are counted per vCPU, not per
 * thread, so a vCPU with several threads (a thread id that came back, or a
 * new thread) names each by its start. n log n; 0 or -ENOMEM.
 */
int ht_exit_view_threads_per_vcpu(const struct ht_vcpu_thread_row *const *rows, size_t n, size_t *counts);
/* ", from +1.234 s": a thread's start, from start_ns (the recording's); "" for a thread of no known start. */
void ht_exit_view_thread_start(char *buf, size_t len, const struct ht_vcpu_thread_row *r, uint64_t start_ns);

/* ns in a short form, three digits at most: "812ns", "16.4us", "3.21ms", "1.20s", "750s". */
void ht_exit_fmt_ns(char *buf, size_t len, uint64_t ns);

#endif
