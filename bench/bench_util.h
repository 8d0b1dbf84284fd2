/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Small helpers the benchmark drivers share: pinning, sorting, a discarding ring callback. */
#ifndef HT_BENCH_UTIL_H
#define HT_BENCH_UTIL_H

#include "record/preflight.h"

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
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

/*
 * libbpf finds a tracepoint's id under tracefs, which a freshly booted host
 * has not mounted until something mounts it: mount it as record does (the
 * same helper), and say so, since the run then changed the machine.
 * 0, or -1 after printing why on stderr.
 */
static inline int bench_mount_tracefs(const char *prog)
{
	char err[256];
	bool mounted;

	if (ht_mount_tracefs(&ht_preflight_system_paths, 1, &mounted, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return -1;
	}
	if (mounted)
		printf("%s: tracefs was not mounted: mounted it at %s, as record does\n", prog,
		       ht_preflight_system_paths.tracefs);
	return 0;
}

#endif
