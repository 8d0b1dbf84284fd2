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

void ht_metrics_family(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void ht_metrics_counter(FILE *out, const char *name, const char *help, uint64_t value)
{
	ht_metrics_family(out, name, "counter", help);
	fprintf(out, "%s %" PRIu64 "\n", name, value);
}

void ht_metrics_histogram(FILE *out, const char *name, const char *labels, const uint64_t *buckets,
			  unsigned int nbounded, uint64_t (*upper_ns)(unsigned int k), uint64_t count,
			  const uint64_t *sum_ns)
{
	char le[32], sum[32];
	uint64_t cum = 0;

	for (unsigned int k = 0; k < nbounded; k++) {
		cum += buckets[k];
		ht_metrics_format_seconds(upper_ns(k), le, sizeof(le));
		fprintf(out, "%s_bucket{%s,le=\"%s\"} %" PRIu64 "\n", name, labels, le, cum);
	}
	fprintf(out, "%s_bucket{%s,le=\"+Inf\"} %" PRIu64 "\n", name, labels, count);
	if (sum_ns) {
		ht_metrics_format_seconds(*sum_ns, sum, sizeof(sum));
		fprintf(out, "%s_sum{%s} %s\n", name, labels, sum);
	}
	fprintf(out, "%s_count{%s} %" PRIu64 "\n", name, labels, count);
}

void ht_metrics_each_set(FILE *out, const void *sets, size_t n, size_t size, const void *other, bool other_used,
			 ht_metrics_set_writer write, void *ctx)
{
	for (size_t i = 0; i < n; i++)
		write(out, (const char *)sets + i * size, false, ctx);
	if (other_used)
		write(out, other, true, ctx);
}
