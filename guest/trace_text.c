// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "trace_text.h"

#include <string.h>

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Decimal digits at s[*i] (at least one, at most max) into *v; advances *i. */
static bool digits(const char *s, size_t len, size_t *i, unsigned int max, uint64_t *v, unsigned int *count)
{
	unsigned int n = 0;

	*v = 0;
	while (*i < len && is_digit(s[*i]) && n < max) {
		*v = *v * 10 + (uint64_t)(s[*i] - '0');
		(*i)++;
		n++;
	}
	if (count)
		*count = n;
	return n > 0 && !(*i < len && is_digit(s[*i]));
}

static void skip_spaces(const char *s, size_t len, size_t *i)
{
	while (*i < len && s[*i] == ' ')
		(*i)++;
}

/* "SECS[.FRACTION]: " at s[*i]: the time in ns; *i past the ": ". */
static bool parse_time(const char *s, size_t len, size_t *i, uint64_t *ns)
{
	uint64_t secs, frac = 0;
	unsigned int nfrac = 0;

	if (!digits(s, len, i, 19, &secs, NULL))
		return false;
	if (*i < len && s[*i] == '.') {
		(*i)++;
		if (!digits(s, len, i, 9, &frac, &nfrac))
			return false;
		for (unsigned int k = nfrac; k < 9; k++)
			frac *= 10;
		if (secs > (UINT64_MAX - frac) / 1000000000ull)
			return false;
		secs = secs * 1000000000ull + frac;
	}
	if (*i + 1 >= len || s[*i] != ':' || s[*i + 1] != ' ')
		return false;
	*i += 2;
	*ns = secs;
	return true;
}

/* The "-PID" right before position end (spaces between skipped), or 0. */
static uint32_t pid_before(const char *s, size_t end)
{
	size_t j = end;
	uint64_t pid = 0, scale = 1;

	while (j > 0 && s[j - 1] == ' ')
		j--;
	size_t last = j;
	while (j > 0 && is_digit(s[j - 1]) && last - j < 10) {
		pid += (uint64_t)(s[j - 1] - '0') * scale;
		scale *= 10;
		j--;
	}
	return j < last && j > 0 && s[j - 1] == '-' && pid <= UINT32_MAX ? (uint32_t)pid : 0;
}

/* The line from a '[' at b: "[CPU] FLAGS TIME: " or "[CPU] TIME: ". */
static bool parse_from_cpu(const char *s, size_t len, size_t b, struct ht_trace_text_line *out)
{
	size_t i = b + 1, after_cpu;
	uint64_t cpu;

	if (!digits(s, len, &i, 10, &cpu, NULL) || cpu > UINT32_MAX || i >= len || s[i] != ']')
		return false;
	i++;
	skip_spaces(s, len, &i);
	after_cpu = i;
	if (!parse_time(s, len, &i, &out->ns)) {
		/* A flags column: one token, then the time. */
		i = after_cpu;
		while (i < len && s[i] != ' ')
			i++;
		skip_spaces(s, len, &i);
		if (i == after_cpu || !parse_time(s, len, &i, &out->ns))
			return false;
	}
	out->cpu = (uint32_t)cpu;
	out->pid = pid_before(s, b);
	out->text = s + i;
	out->text_len = len - i;
	return true;
}

bool ht_trace_text_parse(const char *line, size_t len, struct ht_trace_text_line *out)
{
	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	if (!len || line[0] == '#')
		return false;
	for (size_t b = 0; b < len; b++) {
		const char *p = memchr(line + b, '[', len - b);

		if (!p)
			return false;
		b = (size_t)(p - line);
		if (b > 0 && line[b - 1] == ' ' && parse_from_cpu(line, len, b, out))
			return true;
	}
	return false;
}

uint64_t ht_trace_text_lost(const char *line, size_t len)
{
	static const char head[] = "CPU:", mid[] = " [LOST ";
	size_t i = sizeof(head) - 1;
	uint64_t cpu, lost;

	if (len < i || memcmp(line, head, i) || !digits(line, len, &i, 10, &cpu, NULL))
		return 0;
	if (len - i < sizeof(mid) - 1 || memcmp(line + i, mid, sizeof(mid) - 1))
		return 0;
	i += sizeof(mid) - 1;
	return digits(line, len, &i, 19, &lost, NULL) ? lost : 0;
}
