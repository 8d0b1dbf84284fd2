// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "output_check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* RFC 3629: the code point of the character at s (at most n bytes) and its length, or 0. */
static size_t utf8(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t len;
	uint32_t min;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0) {
		len = 2, min = 0x80, *cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3, min = 0x800, *cp = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4, min = 0x10000, *cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		*cp = *cp << 6 | (s[i] & 0x3f);
	}
	if (*cp < min || *cp > 0x10ffff || (*cp >= 0xd800 && *cp <= 0xdfff))
		return 0;
	return len;
}

static bool shows_on_terminal(uint32_t cp)
{
	return !(cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x61c || cp == 0x200e || cp == 0x200f ||
		 (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069));
}

bool oc_terminal_safe(const char *s, size_t n, size_t *bad)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t len = p[i] == '\n' ? 1 : utf8(p + i, n - i, &cp);

		if (!len || (p[i] != '\n' && !shows_on_terminal(cp))) {
			*bad = i;
			return false;
		}
		i += len;
	}
	return true;
}

struct json {
	const unsigned char *s;
	size_t n, pos;
	int depth;
};

static void ws(struct json *j)
{
	while (j->pos < j->n && strchr(" \t\r\n", j->s[j->pos]) && j->s[j->pos])
		j->pos++;
}

/* Four hex digits at pos, their value in *v. */
static bool hex4(struct json *j, uint32_t *v)
{
	*v = 0;
	for (int i = 0; i < 4; i++, j->pos++) {
		const char *digits = "0123456789abcdef", *d;
		unsigned char c = j->pos < j->n ? j->s[j->pos] : 0;

		if (c >= 'A' && c <= 'F')
			c = (unsigned char)(c - 'A' + 'a');
		if (!c || !(d = strchr(digits, c)))
			return false;
		*v = *v << 4 | (uint32_t)(d - digits);
	}
	return true;
}

/* A \u escape at pos (after the u): a surrogate only as a whole pair, which many strict readers require. */
static bool unicode_escape(struct json *j)
{
	uint32_t v, low;

	if (!hex4(j, &v))
		return false;
	if (v >= 0xdc00 && v <= 0xdfff)
		return false;
	if (v < 0xd800 || v > 0xdbff)
		return true;
	if (j->n - j->pos < 2 || j->s[j->pos] != '\\' || j->s[j->pos + 1] != 'u')
		return false;
	j->pos += 2;
	return hex4(j, &low) && low >= 0xdc00 && low <= 0xdfff;
}

/* A string at pos; its raw text (between the quotes) in *start, *len. */
static bool string(struct json *j, size_t *start, size_t *len)
{
	if (j->pos >= j->n || j->s[j->pos] != '"')
		return false;
	*start = ++j->pos;
	while (j->pos < j->n) {
		unsigned char c = j->s[j->pos];
		uint32_t cp;
		size_t l;

		if (c == '"') {
			*len = j->pos++ - *start;
			return true;
		}
		if (c == '\\') {
			if (++j->pos >= j->n)
				return false;
			c = j->s[j->pos++];
			if (c == 'u') {
				if (!unicode_escape(j))
					return false;
			} else if (!c || !strchr("\"\\/bfnrt", c)) {
				return false;
			}
			continue;
		}
		if (c < 0x20 || !(l = utf8(j->s + j->pos, j->n - j->pos, &cp)))
			return false;
		j->pos += l;
	}
	return false;
}

static bool value(struct json *j);

static bool number(struct json *j)
{
	size_t digits;

	if (j->pos < j->n && j->s[j->pos] == '-')
		j->pos++;
	if (j->pos < j->n && j->s[j->pos] == '0') {
		j->pos++;
	} else {
		for (digits = 0; j->pos < j->n && j->s[j->pos] >= '0' && j->s[j->pos] <= '9'; digits++)
			j->pos++;
		if (!digits)
			return false;
	}
	if (j->pos < j->n && j->s[j->pos] == '.') {
		j->pos++;
		for (digits = 0; j->pos < j->n && j->s[j->pos] >= '0' && j->s[j->pos] <= '9'; digits++)
			j->pos++;
		if (!digits)
			return false;
	}
	if (j->pos < j->n && (j->s[j->pos] == 'e' || j->s[j->pos] == 'E')) {
		j->pos++;
		if (j->pos < j->n && (j->s[j->pos] == '+' || j->s[j->pos] == '-'))
			j->pos++;
		for (digits = 0; j->pos < j->n && j->s[j->pos] >= '0' && j->s[j->pos] <= '9'; digits++)
			j->pos++;
		if (!digits)
			return false;
	}
	return true;
}

#define MAX_KEYS 256

static bool object(struct json *j)
{
	size_t key_at[MAX_KEYS], key_len[MAX_KEYS], keys = 0;

	j->pos++;
	ws(j);
	if (j->pos < j->n && j->s[j->pos] == '}') {
		j->pos++;
		return true;
	}
	for (;;) {
		size_t at, len;

		ws(j);
		if (!string(j, &at, &len))
			return false;
		/* A key twice: readers keep one of them, silently. */
		for (size_t k = 0; k < keys; k++)
			if (key_len[k] == len && !memcmp(j->s + key_at[k], j->s + at, len))
				return false;
		if (keys < MAX_KEYS) {
			key_at[keys] = at;
			key_len[keys++] = len;
		}
		ws(j);
		if (j->pos >= j->n || j->s[j->pos++] != ':' || !value(j))
			return false;
		ws(j);
		if (j->pos >= j->n)
			return false;
		if (j->s[j->pos] == '}') {
			j->pos++;
			return true;
		}
		if (j->s[j->pos++] != ',')
			return false;
	}
}

static bool array(struct json *j)
{
	j->pos++;
	ws(j);
	if (j->pos < j->n && j->s[j->pos] == ']') {
		j->pos++;
		return true;
	}
	for (;;) {
		if (!value(j))
			return false;
		ws(j);
		if (j->pos >= j->n)
			return false;
		if (j->s[j->pos] == ']') {
			j->pos++;
			return true;
		}
		if (j->s[j->pos++] != ',')
			return false;
	}
}

static bool literal(struct json *j, const char *word)
{
	size_t len = strlen(word);

	if (j->n - j->pos < len || memcmp(j->s + j->pos, word, len))
		return false;
	j->pos += len;
	return true;
}

static bool value(struct json *j)
{
	size_t at, len;
	bool ok;

	ws(j);
	if (j->pos >= j->n || ++j->depth > 64)
		return false;
	switch (j->s[j->pos]) {
	case '{':
		ok = object(j);
		break;
	case '[':
		ok = array(j);
		break;
	case '"':
		ok = string(j, &at, &len);
		break;
	case 't':
		ok = literal(j, "true");
		break;
	case 'f':
		ok = literal(j, "false");
		break;
	case 'n':
		ok = literal(j, "null");
		break;
	default:
		ok = number(j);
		break;
	}
	j->depth--;
	return ok;
}

bool oc_json_value(const char *s, size_t n)
{
	struct json j = { .s = (const unsigned char *)s, .n = n };

	if (!value(&j))
		return false;
	ws(&j);
	return j.pos == n;
}

bool oc_csv_row(const char *s, size_t n, size_t *fields)
{
	size_t i = 0;

	*fields = 0;
	for (;;) {
		(*fields)++;
		if (i < n && s[i] == '"') {
			/* Quoted: up to the closing quote; "" is a quote inside. */
			for (i++;; i++) {
				if (i >= n)
					return false;
				if (s[i] == '"') {
					if (i + 1 < n && s[i + 1] == '"') {
						i++;
						continue;
					}
					i++;
					break;
				}
			}
		} else {
			while (i < n && s[i] != ',') {
				if (s[i] == '"')
					return false;
				i++;
			}
		}
		if (i == n)
			return true;
		if (s[i++] != ',')
			return false;
	}
}

/* The checkers must catch what they are for: a harness that checks nothing is no test. */
void oc_self_test(void)
{
	static const char *const bad_json[] = {
		"{\"a\":\"\x1b\"}", "{\"a\":\"\xff\"}", "{\"a\":\"\\u00\"}", "{\"a\":\"x\\\"}", "{\"a\":1,\"a\":2}",
		"{\"a\":\"\\udc00\"}", "{\"a\":1}}", "{\"rip_sym\":\"na",
	};
	size_t fields, bad;

	for (size_t i = 0; i < ARRAY_SIZE(bad_json); i++)
		if (oc_json_value(bad_json[i], strlen(bad_json[i])))
			abort();
	static const char good_json[] = "{\"a\":[1,-2.5e3,true,null],\"b\":\"\\u00e9\xc3\xa9\\ud83d\\ude00\"}";

	if (!oc_json_value(good_json, strlen(good_json)) ||
	    oc_terminal_safe("a\x1b[2J", 5, &bad) || oc_terminal_safe("\xc2\x9b", 2, &bad) ||
	    oc_terminal_safe("\xe9", 1, &bad) || !oc_terminal_safe("\xe7\xbd\x91\n", 4, &bad) ||
	    !oc_csv_row("1,\"a,\"\"b\",", 11, &fields) || fields != 3 || oc_csv_row("a\"b", 3, &fields))
		abort();
}

size_t oc_check(enum oc_kind kind, const char *text, size_t len, const char **what, size_t *at)
{
	size_t bad, header_fields = 0, rows = 0;

	*what = NULL;
	if (!oc_terminal_safe(text, len, &bad)) {
		*what = "a byte a terminal would interpret";
		*at = bad;
		return 0;
	}
	if (kind == OC_JSON_FILE) {
		if (len && !oc_json_value(text, len)) {
			*what = "not one JSON value";
			*at = 0;
		}
		return len ? 1 : 0;
	}
	for (size_t pos = 0; pos < len; rows++) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos, fields;

		*at = pos;
		if (kind == OC_JSON_LINES && !oc_json_value(text + pos, n)) {
			*what = "a line that is not one JSON value";
			return rows;
		}
		if (kind == OC_CSV) {
			if (!oc_csv_row(text + pos, n, &fields)) {
				*what = "a malformed CSV row";
				return rows;
			}
			if (rows == 0) {
				header_fields = fields;
			} else if (fields != header_fields) {
				*what = "a CSV row with another number of columns than the header";
				return rows;
			}
		}
		pos += n + 1;
	}
	return rows;
}

char *oc_read_output(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long size;

	if (!f || fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		abort();
	buf = malloc((size_t)size + 1);
	if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size)
		abort();
	fclose(f);
	buf[size] = '\0';
	*len = (size_t)size;
	return buf;
}
