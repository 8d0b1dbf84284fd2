// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "common/escape.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/*
 * The length of the valid UTF-8 character at p (at most left bytes) and its
 * code point, or 0: not the start of a shortest-form character of at most
 * U+10FFFF that is no surrogate (RFC 3629).
 */
static size_t utf8_char(const unsigned char *p, size_t left, uint32_t *cp)
{
	unsigned char c = p[0];
	size_t n;
	unsigned char lo = 0x80, hi = 0xbf; /* the second byte's range */

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		*cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		*cp = c & 0x0f;
		if (c == 0xe0)
			lo = 0xa0; /* overlong below */
		else if (c == 0xed)
			hi = 0x9f; /* surrogates above */
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		*cp = c & 0x07;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f; /* above U+10FFFF */
	} else {
		return 0;
	}
	if (left < n || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		*cp = *cp << 6 | (p[i] & 0x3f);
	}
	return n;
}

/* Characters that are valid but act on a terminal or reorder text: shown as \uNNNN. */
static bool is_format_control(uint32_t cp)
{
	return (cp >= 0x80 && cp <= 0x9f) ||          /* C1 controls: CSI, OSC, ... */
	       cp == 0x061c || cp == 0x200e || cp == 0x200f || /* bidi marks */
	       (cp >= 0x202a && cp <= 0x202e) ||      /* bidi embeddings and overrides */
	       (cp >= 0x2066 && cp <= 0x2069) ||      /* bidi isolates */
	       cp == 0x2028 || cp == 0x2029;          /* line and paragraph separators */
}

static const char hex[] = "0123456789abcdef";

/* "\xNN" (text) or "\u00NN" (JSON) for one byte into out; its length. */
static size_t byte_escape(unsigned char b, enum ht_escape_style style, char *out)
{
	if (style == HT_ESC_JSON) {
		memcpy(out, "\\u00", 4);
		out[4] = hex[b >> 4];
		out[5] = hex[b & 15];
		return 6;
	}
	out[0] = '\\';
	out[1] = 'x';
	out[2] = hex[b >> 4];
	out[3] = hex[b & 15];
	return 4;
}

/*
 * The escaped form of the character at p into out (at least
 * HT_ESC_MAX_GROWTH * 4 bytes); *used: the input bytes it stands for.
 */
static size_t escape_char(const unsigned char *p, size_t left, enum ht_escape_style style, char *out,
			  size_t *used)
{
	uint32_t cp;
	size_t n = utf8_char(p, left, &cp);

	*used = n ? n : 1;
	if (!n || cp < 0x20 || cp == 0x7f)
		return byte_escape(p[0], style, out);
	if (cp == '\\' || (cp == '"' && style != HT_ESC_TEXT)) {
		out[0] = '\\';
		out[1] = (char)cp;
		return 2;
	}
	if (is_format_control(cp)) {
		out[0] = '\\';
		out[1] = 'u';
		for (int i = 0; i < 4; i++)
			out[2 + i] = hex[(cp >> (12 - 4 * i)) & 15];
		return 6;
	}
	memcpy(out, p, n);
	return n;
}

size_t ht_escape_mem(char *buf, size_t size, const void *s, size_t len, enum ht_escape_style style)
{
	const unsigned char *p = s;
	size_t pos = 0;

	if (!size)
		return 0;
	while (len) {
		char unit[HT_ESC_MAX_GROWTH * 4];
		size_t used, n = escape_char(p, len, style, unit, &used);

		if (n >= size - pos)
			break; /* never half an escape or half a character */
		memcpy(buf + pos, unit, n);
		pos += n;
		p += used;
		len -= used;
	}
	buf[pos] = '\0';
	return pos;
}

char *ht_escape(char *buf, size_t size, const char *s, enum ht_escape_style style)
{
	ht_escape_mem(buf, size, s, strlen(s), style);
	return buf;
}

void ht_escape_fputs(FILE *f, const char *s, enum ht_escape_style style)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s);

	while (len) {
		char unit[HT_ESC_MAX_GROWTH * 4];
		size_t used, n = escape_char(p, len, style, unit, &used);

		fwrite(unit, 1, n, f);
		p += used;
		len -= used;
	}
}

/* A CSV field's opening: its quote, and a ' before a leading = + - @ (OWASP). */
static void csv_open(FILE *f, const char *s)
{
	fputc('"', f);
	if (s[0] && strchr("=+-@", s[0]))
		fputc('\'', f);
}

void ht_csv_quote(FILE *f, const char *shown)
{
	csv_open(f, shown);
	for (const char *p = shown; *p; p++) {
		if (*p == '"')
			fputc('"', f);
		fputc(*p, f);
	}
	fputc('"', f);
}

void ht_json_fputs(FILE *f, const char *s)
{
	fputc('"', f);
	ht_escape_fputs(f, s, HT_ESC_JSON);
	fputc('"', f);
}

void ht_csv_fputs(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s);

	csv_open(f, s);
	while (len) {
		char unit[HT_ESC_MAX_GROWTH * 4];
		size_t used, n = escape_char(p, len, HT_ESC_TEXT, unit, &used);

		for (size_t i = 0; i < n; i++) {
			if (unit[i] == '"')
				fputc('"', f);
			fputc(unit[i], f);
		}
		p += used;
		len -= used;
	}
	fputc('"', f);
}

size_t ht_utf8_prefix(const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t pos = 0;

	while (p[pos]) {
		uint32_t cp;
		size_t left = strnlen((const char *)p + pos, 4);
		size_t n = utf8_char(p + pos, left, &cp);

		n = n ? n : 1; /* an invalid byte is a character of its own */
		if (pos + n > max)
			break;
		pos += n;
	}
	return pos;
}
