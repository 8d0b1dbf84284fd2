/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Strict number parsing for options: the whole string must be a number in range. */
#ifndef HT_PARSE_H
#define HT_PARSE_H

#include <stdbool.h>
#include <stdint.h>

/* Decimal or 0x-hex unsigned integer in [0, max]. No sign, no trailing junk. */
bool ht_parse_u64(const char *s, uint64_t max, uint64_t *out);
/* Non-negative decimal seconds, e.g. "1", "0.5"; max bounds it. */
bool ht_parse_seconds(const char *s, double max, double *out);
/* Byte size with an optional K, M or G suffix (powers of 1024). */
bool ht_parse_size(const char *s, uint64_t *out);

#endif
