// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "decode/clock_map.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Seconds with up to 9 decimals at s[*i] (digits '.' digits), as ns; *i past them. False if none or too large. */
static bool parse_seconds(const char *s, size_t len, size_t *i, uint64_t *ns)
{
	uint64_t whole = 0, frac = 0;
	size_t j = *i, digits = 0, fdigits = 0;

	while (j < len && isdigit((unsigned char)s[j]) && digits < 11) {
		whole = whole * 10 + (uint64_t)(s[j++] - '0');
		digits++;
	}
	if (!digits || j >= len || s[j] != '.')
		return false;
	j++;
	while (j < len && isdigit((unsigned char)s[j]) && fdigits < 9) {
		frac = frac * 10 + (uint64_t)(s[j++] - '0');
		fdigits++;
	}
	if (!fdigits || (j < len && isdigit((unsigned char)s[j])))
		return false;
	for (size_t k = fdigits; k < 9; k++)
		frac *= 10;
	*ns = whole * 1000000000ull + frac;
	*i = j;
	return true;
}

/*
 * Where the line's guest time is: [*from, *to). dmesg's "[   1.234567]"
 * first (*dmesg true), else ftrace's " 123.456789:" after "]".
 */
static bool find_time(const char *s, size_t len, size_t *from, size_t *to, uint64_t *ns, bool *dmesg)
{
	size_t i = 0;

	if (len && s[0] == '[') {
		for (i = 1; i < len && s[i] == ' '; i++)
			;
		size_t start = i;

		if (parse_seconds(s, len, &i, ns) && i < len && s[i] == ']') {
			*from = start;
			*to = i;
			*dmesg = true;
			return true;
		}
	}
	const char *cpu = memchr(s, ']', len);

	if (!cpu)
		return false;
	for (i = (size_t)(cpu - s) + 1; i < len; i++) {
		size_t start = i, end = i;

		if (s[i - 1] != ' ' || !isdigit((unsigned char)s[i]))
			continue;
		if (parse_seconds(s, len, &end, ns) && end < len && s[end] == ':') {
			*from = start;
			*to = end;
			*dmesg = false;
			return true;
		}
	}
	return false;
}

long long ht_clock_map_text(FILE *in, FILE *out, const struct ht_clock_fit *ftrace_fit,
			    const struct ht_clock_fit *printk_fit)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t got;
	long long mapped = 0;

	while ((got = getline(&line, &cap, in)) >= 0) {
		size_t len = (size_t)got, from, to;
		uint64_t ns;
		bool dmesg;

		if (!find_time(line, len, &from, &to, &ns, &dmesg)) {
			fwrite(line, 1, len, out);
			continue;
		}
		uint64_t host = ht_clock_fit_map(dmesg ? printk_fit : ftrace_fit, ns);

		fwrite(line, 1, from, out);
		fprintf(out, "%llu.%09llu", (unsigned long long)(host / 1000000000ull),
			(unsigned long long)(host % 1000000000ull));
		fwrite(line + to, 1, len - to, out);
		mapped++;
	}
	free(line);
	return ferror(in) || ferror(out) ? -1 : mapped;
}
