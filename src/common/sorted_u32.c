// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "common/sorted_u32.h"

size_t ht_u32_lower_bound(const uint32_t *v, size_t n, uint32_t x)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool ht_u32_listed(const uint32_t *v, size_t n, uint32_t x)
{
	size_t at = ht_u32_lower_bound(v, n, x);

	return at < n && v[at] == x;
}
