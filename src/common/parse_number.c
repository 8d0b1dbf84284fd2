// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "common/parse_number.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

bool ht_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	const char *digits;
	char *end;
	int base = 10;

	/* strtoull would accept blanks and a sign ("-1" wraps to 2^64-1): demand a digit first. */
	if (!s || !isdigit((unsigned char)s[0]))
		return false;
	digits = s;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		digits = s + 2;
		/* "0x", "0x-1" and "0x 1" must not parse as zero or wrap. */
		if (!isxdigit((unsigned char)digits[0]))
			return false;
	}
	errno = 0;
	v = strtoull(digits, &end, base);
	if (errno || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

bool ht_parse_u64_option(const char *name, const char *arg, uint64_t min, uint64_t max,
			 uint64_t *out, char *err, size_t err_size)
{
	if (ht_parse_u64(arg, min, max, out))
		return true;
	snprintf(err, err_size,
		 "invalid %s '%s': expected an integer from %llu to %llu (decimal or 0x hex); see --help",
		 name, arg, (unsigned long long)min, (unsigned long long)max);
	return false;
}

bool ht_parse_u32_option(const char *name, const char *arg, uint32_t min, uint32_t max,
			 uint32_t *out, char *err, size_t err_size)
{
	uint64_t v;

	if (!ht_parse_u64_option(name, arg, min, max, &v, err, err_size))
		return false;
	*out = (uint32_t)v;
	return true;
}
