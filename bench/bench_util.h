/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Small helpers the benchmark drivers share: pinning, sorting, a discarding ring callback. */
#ifndef HT_BENCH_UTIL_H
#define HT_BENCH_UTIL_H

#include <sched.h>
#include <stddef.h>
#include <sys/resource.h>

/*
 * Pinned, and at the highest priority of the normal scheduler: other work on
 * a shared machine then takes little from the threads measured. Threads
 * created later (a writer thread) inherit both.
 */
static inline void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	(void)!setpriority(PRIO_PROCESS, 0, -20);
}

/* qsort order of doubles, for medians and quartiles. */
static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* A ring_buffer__new callback that drops every sample: drains between rounds. */
static inline int discard(void *ctx, void *data, size_t size)
{
	(void)ctx; (void)data; (void)size;
	return 0;
}

#endif
