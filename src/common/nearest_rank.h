/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one definition of a percentile's rank, for the host's histograms and
 * reports and the guest's latency summary alike: nearest rank, the smallest
 * value with at least p% of all values at or below it.
 */
#ifndef HT_COMMON_NEAREST_RANK_H
#define HT_COMMON_NEAREST_RANK_H

#include <stdint.h>

/* The 1-based nearest rank of percentile p (clamped to 0..100) among n values; n > 0. */
uint64_t ht_nearest_rank(double p, uint64_t n);

#endif
