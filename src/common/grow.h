/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one way an array grows: its capacity doubles (from a first size) until
 * the elements needed fit, so n appends cost O(n) copies in all.
 */
#ifndef HT_COMMON_GROW_H
#define HT_COMMON_GROW_H

#include <stddef.h>

/*
 * Room for need elements of size bytes in *v, which has room for *cap: the
 * capacity doubles from *cap (first if 0) until need fits. 0, or -ENOMEM
 * with *v and *cap as they were (also if the bytes would overflow size_t).
 */
int ht_grow(void **v, size_t *cap, size_t need, size_t size, size_t first);

/* ht_grow for an array of any element type: HT_GROW(t->items, t->cap, t->n + 1, 16). */
#define HT_GROW(arr, cap, need, first)                                                        \
	({                                                                                    \
		void *ht_grow_v_ = (arr);                                                     \
		int ht_grow_ret_ = ht_grow(&ht_grow_v_, &(cap), (need), sizeof(*(arr)), (first)); \
		(arr) = ht_grow_v_;                                                           \
		ht_grow_ret_;                                                                 \
	})

#endif
