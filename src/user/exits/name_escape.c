// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "exits/name_escape.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if s does not start one. */
static size_t utf8_sequence(const unsigned char *s)
{
	unsigned char c = s[0];
	size_t n;
	unsigned int cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0; /* also stops at the terminating NUL */
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates and beyond U+10FFFF are not UTF-8. */
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

char *ht_escape_name(const char *name, char *out, size_t outlen)
{
	const unsigned char *s = (const unsigned char *)name;
	size_t used = 0, room_for_dots = 0; /* the last piece boundary that leaves room for "..." */

	while (*s) {
		char piece[8];
		size_t n = utf8_sequence(s), len;

		if (n == 1 && *s >= 0x20 && *s != 0x7f && *s != '\\') {
			piece[0] = (char)*s;
			len = 1;
		} else if (n == 1 && *s == '\\') {
			memcpy(piece, "\\\\", 2);
			len = 2;
		} else if (n == 2 && s[0] == 0xc2 && s[1] < 0xa0) {
			len = (size_t)snprintf(piece, sizeof(piece), "\\u%04x", s[1]); /* C1: U+0080..U+009F */
		} else if (n > 1) {
			memcpy(piece, s, n);
			len = n;
		} else {
			len = (size_t)snprintf(piece, sizeof(piece), "\\x%02x", *s);
			n = 1;
		}
		if (used + len + 1 > outlen) {
			used = room_for_dots;
			if (used + 4 <= outlen) {
				memcpy(out + used, "...", 3);
				used += 3;
			}
			break;
		}
		memcpy(out + used, piece, len);
		used += len;
		if (used + 4 <= outlen)
			room_for_dots = used;
		s += n;
	}
	out[used] = '\0';
	return out;
}
