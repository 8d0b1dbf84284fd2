// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "latency_stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "common/nearest_rank.h"

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

void latency_summarize(uint64_t *samples, size_t count, struct latency_summary *out)
{
	double mean = 0, m2 = 0;

	memset(out, 0, sizeof(*out));
	if (count == 0)
		return;
	for (size_t i = 0; i < count; i++) {
		double x = (double)samples[i];
		double delta = x - mean;

		mean += delta / (double)(i + 1);
		m2 += delta * (x - mean);
	}
	qsort(samples, count, sizeof(samples[0]), compare_u64);

	out->count = count;
	out->mean = mean;
	/* Rounding can leave m2 a hair below zero when all samples are equal. */
	out->stddev = m2 > 0 ? sqrt(m2 / (double)count) : 0;
	out->min = samples[0];
	out->max = samples[count - 1];
	if (count % 2)
		out->median = (double)samples[count / 2];
	else
		out->median = ((double)samples[count / 2 - 1] + (double)samples[count / 2]) / 2;
	out->p99 = samples[ht_nearest_rank(99, count) - 1];
}
