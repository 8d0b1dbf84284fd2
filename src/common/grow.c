// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "common/grow.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

int ht_grow(void **v, size_t *cap, size_t need, size_t size, size_t first)
{
	size_t n = *cap ? *cap : first ? first : 1;
	void *p;

	if (need <= *cap)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 2)
			return -ENOMEM;
		n *= 2;
	}
	if (size && n > SIZE_MAX / size)
		return -ENOMEM;
	p = realloc(*v, n * size);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = n;
	return 0;
}
