// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "metrics/metrics_exposition.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

bool ht_metrics_escape_label(const char *value, char *out, size_t outlen)
{
	size_t n = 0;

	for (const char *c = value; *c; c++) {
		const char *rep = *c == '\\' ? "\\\\" : *c == '"' ? "\\\"" : *c == '\n' ? "\\n" : NULL;
		size_t len = rep ? 2 : 1;

		if (n + len >= outlen)
			return false;
		if (rep)
			memcpy(out + n, rep, 2);
		else
			out[n] = *c;
		n += len;
	}
	if (n >= outlen)
		return false;
	out[n] = '\0';
	return true;
}

void ht_metrics_format_seconds(uint64_t ns, char *out, size_t outlen)
{
	uint64_t sec = ns / 1000000000u;
	unsigned int frac = (unsigned int)(ns % 1000000000u);
	int len;

	if (!frac) {
		snprintf(out, outlen, "%" PRIu64, sec);
		return;
	}
	len = snprintf(out, outlen, "%" PRIu64 ".%09u", sec, frac);
	/* Trailing zeros say nothing: "0.000001023", not "0.000001023000". */
	while (len > 0 && (size_t)len < outlen && out[len - 1] == '0')
		out[--len] = '\0';
}
