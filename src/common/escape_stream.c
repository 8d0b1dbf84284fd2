// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "common/escape_stream.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include "common/escape.h"

/* Text held back at most, when a line has no end yet. */
#define LINE_MAX_HELD 65536
/* Escaped a chunk at a time, into a buffer on the stack. */
#define CHUNK 4096

struct escape_stream {
	FILE *to;
	char line[LINE_MAX_HELD + CHUNK];
	size_t len;
	bool failed;
};

/*
 * How much of s[0..n) ends at a UTF-8 character's boundary: a lead byte in
 * the last 3 bytes whose character needs more than what follows it is left
 * for the next write. (An invalid byte is a character of its own.)
 */
static size_t whole_chars(const unsigned char *s, size_t n)
{
	for (size_t back = 1; back <= 3 && back <= n; back++) {
		unsigned char c = s[n - back];
		size_t need = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xc2 && c <= 0xdf ? 2 : 0;

		if (c >= 0x80 && c <= 0xbf)
			continue; /* a continuation byte: its lead is further back */
		return need > back ? n - back : n;
	}
	return n;
}

/* The escaped form of s[0..n) to the stream's output; true if written. */
static bool put_escaped(struct escape_stream *e, const char *s, size_t n)
{
	char buf[HT_ESC_SIZE(CHUNK)];

	while (n) {
		size_t k = n < CHUNK ? n : whole_chars((const unsigned char *)s, CHUNK);
		size_t w = ht_escape_mem(buf, sizeof(buf), s, k, HT_ESC_TEXT);

		if (fwrite(buf, 1, w, e->to) != w)
			return false;
		s += k;
		n -= k;
	}
	return true;
}

/*
 * Writes out what is held, up to its last newline (all of it if final;
 * else, if more than LINE_MAX_HELD is held without one, up to a character
 * boundary), and keeps the rest.
 */
static void drain(struct escape_stream *e, bool final)
{
	size_t at = 0;

	for (size_t i = 0; i < e->len; i++) {
		if (e->line[i] != '\n')
			continue;
		if (!put_escaped(e, e->line + at, i - at) || fputc(e->line[i], e->to) == EOF)
			e->failed = true;
		at = i + 1;
	}
	size_t rest = e->len - at;
	if (final || rest > LINE_MAX_HELD) {
		size_t k = final ? rest : whole_chars((const unsigned char *)e->line + at, rest);

		if (!put_escaped(e, e->line + at, k))
			e->failed = true;
		at += k;
	}
	memmove(e->line, e->line + at, e->len - at);
	e->len -= at;
}

static ssize_t escape_write(void *cookie, const char *buf, size_t size)
{
	struct escape_stream *e = cookie;
	size_t done = 0;

	while (done < size) {
		size_t room = sizeof(e->line) - e->len, k = size - done < room ? size - done : room;

		memcpy(e->line + e->len, buf + done, k);
		e->len += k;
		done += k;
		drain(e, false);
	}
	return e->failed ? -1 : (ssize_t)size;
}

static int escape_close(void *cookie)
{
	struct escape_stream *e = cookie;

	drain(e, true);
	bool failed = e->failed || fflush(e->to) != 0;
	free(e);
	return failed ? -1 : 0;
}

FILE *ht_escape_stream(FILE *to)
{
	struct escape_stream *e = calloc(1, sizeof(*e));
	cookie_io_functions_t io = { .write = escape_write, .close = escape_close };
	FILE *f;

	if (!e)
		return NULL;
	e->to = to;
	if (!(f = fopencookie(e, "w", io)))
		free(e);
	return f;
}
