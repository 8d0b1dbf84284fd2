// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "common/nearest_rank.h"

/*
 * Nearest rank, in integers so that e.g. p99 of 100 values is rank 99 and
 * not 100 through a rounding error of 0.99 * 100. p is clamped to [0, 100].
 */
uint64_t ht_nearest_rank(double p, uint64_t n)
{
	uint64_t q, rank;

	if (!(p > 0)) /* also NaN */
		p = 0;
	if (p > 100)
		p = 100;
	q = (uint64_t)(p * 1000 + 0.5); /* thousandths of a percent */
	rank = (uint64_t)(((unsigned __int128)q * n + 99999) / 100000);
	return rank ? rank : 1;
}
