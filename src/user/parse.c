// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

bool ht_parse_seconds(const char *s, double max, double *out)
{
	double v;
	char *end;

	if (!s || !(isdigit((unsigned char)s[0]) || s[0] == '.'))
		return false;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v < 0 || v > max)
		return false;
	*out = v;
	return true;
}

bool ht_parse_size(const char *s, uint64_t *out)
{
	char num[32];
	size_t len;
	unsigned int shift = 0;
	uint64_t v;

	if (!s)
		return false;
	len = strlen(s);
	if (len == 0 || len >= sizeof(num))
		return false;
	memcpy(num, s, len + 1);
	switch (num[len - 1]) {
	case 'k': case 'K': shift = 10; break;
	case 'm': case 'M': shift = 20; break;
	case 'g': case 'G': shift = 30; break;
	}
	if (shift)
		num[len - 1] = '\0';
	if (!ht_parse_u64(num, 0, UINT64_MAX >> shift, &v))
		return false;
	*out = v << shift;
	return true;
}

bool ht_parse_mode(const char *s, unsigned int *out)
{
	unsigned int v = 0;

	if (!*s || strlen(s) > 4)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '7')
			return false;
		v = v * 8 + (unsigned int)(*s - '0');
	}
	if (v > 0777)
		return false;
	*out = v;
	return true;
}
