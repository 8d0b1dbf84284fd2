/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The one search of a sorted array of ids (pids of VM processes). */
#ifndef HT_COMMON_SORTED_U32_H
#define HT_COMMON_SORTED_U32_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The index of x in sorted v[n], or where it would go. */
size_t ht_u32_lower_bound(const uint32_t *v, size_t n, uint32_t x);
/* Whether x is in sorted v[n]. */
bool ht_u32_listed(const uint32_t *v, size_t n, uint32_t x);

#endif
