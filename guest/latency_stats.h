/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Summary statistics of round-trip latency samples (nanoseconds). */
#ifndef GUEST_LATENCY_STATS_H
#define GUEST_LATENCY_STATS_H

#include <stddef.h>
#include <stdint.h>

struct latency_summary {
	size_t count;
	double mean;
	double median; /* mean of the two middle samples for an even count */
	double stddev; /* population standard deviation (divides by count) */
	uint64_t min;
	uint64_t p99; /* nearest rank: the smallest sample >= 99% of all samples */
	uint64_t max;
};

/*
 * Summarizes samples[0..count). Sorts the array in place (the median and
 * p99 need order). With count == 0 every field is zero. Mean and standard
 * deviation use Welford's running update in double, so sums of huge samples
 * cannot overflow.
 */
void latency_summarize(uint64_t *samples, size_t count, struct latency_summary *out);

#endif
