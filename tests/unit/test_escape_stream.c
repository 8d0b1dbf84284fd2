// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The terminal's stream of someone else's text (src/common/escape_stream.c):
 * each line escaped as the rest of the product escapes text, its newline
 * kept, whatever the writes' boundaries, in bounded memory, and a failed
 * write reported at fclose.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "common/escape.h"
#include "common/escape_stream.h"
#include "fixture.h"
#include "test.h"

/* What the stream writes for in[0..n), written `step` bytes at a time (0: at once), flushed after each. */
static char *through_stream(const char *in, size_t n, size_t step, size_t *out_len)
{
	char *out = NULL;
	FILE *to = open_memstream(&out, out_len);
	FILE *f = to ? ht_escape_stream(to) : NULL;

	if (!f)
		return NULL;
	for (size_t at = 0; at < n;) {
		size_t k = step && n - at > step ? step : n - at;

		fwrite(in + at, 1, k, f);
		fflush(f);
		at += k;
	}
	if (fclose(f) || fclose(to)) {
		free(out);
		return NULL;
	}
	return out;
}

/* The same text escaped line by line with ht_escape_mem, newlines kept. */
static char *line_by_line(const char *in, size_t n, size_t *len)
{
	char *out = malloc(HT_ESC_SIZE(n)), *w = out;

	for (size_t at = 0; out && at < n;) {
		const char *nl = memchr(in + at, '\n', n - at);
		size_t k = nl ? (size_t)(nl - in) - at : n - at;

		w += ht_escape_mem(w, HT_ESC_SIZE(k), in + at, k, HT_ESC_TEXT);
		at += k;
		if (nl) {
			*w++ = '\n';
			at++;
		}
	}
	*len = out ? (size_t)(w - out) : 0;
	return out;
}

static void control_bytes_are_escaped_and_newlines_kept(void)
{
	const char in[] = "guest\x1b]0;owned\x07 \x1b[2J\tx\r\n\xff\xfe\x9b" "31m\n";
	size_t len;
	char *out = through_stream(in, sizeof(in) - 1, 0, &len);

	ASSERT_STREQ(out, "guest\\x1b]0;owned\\x07 \\x1b[2J\\x09x\\x0d\n\\xff\\xfe\\x9b31m\n", "escaped line by line");
	free(out);
}

static void a_character_split_across_writes_stays_readable(void)
{
	const char in[] = "é-网-😀\nend";
	size_t len;
	char *out = through_stream(in, sizeof(in) - 1, 1, &len);

	ASSERT_STREQ(out, "é-网-😀\nend", "written a byte at a time");
	free(out);
}

static void any_writes_give_the_line_by_line_escape_and_a_safe_terminal(void)
{
	static char in[20000];
	uint32_t state = 7;

	for (int round = 0; round < 20; round++) {
		size_t n = 1000 + (size_t)round * 900;

		for (size_t i = 0; i < n; i++) {
			state = state * 1103515245u + 12345u;
			/* Controls, lead and continuation bytes, and newlines. */
			unsigned char c = state >> 16 & 1 ? (state >> 8) & 0xff : 0x80 | ((state >> 8) & 0x3f);
			in[i] = (char)(state >> 24 < 8 ? '\n' : c);
		}
		size_t want_len, got_len, whole_len;
		char *want = line_by_line(in, n, &want_len);
		char *got = through_stream(in, n, 1 + (size_t)round * 37 % 101, &got_len);
		char *whole = through_stream(in, n, 0, &whole_len);
		size_t bad = 0;

		CHECK(want && got && whole, "round %d: a stream failed", round);
		if (want && got && whole) {
			CHECK(got_len == want_len && !memcmp(got, want, want_len), "round %d: written in pieces", round);
			CHECK(whole_len == want_len && !memcmp(whole, want, want_len), "round %d: written at once", round);
			CHECK(ht_test_terminal_safe(got, got_len, &bad), "round %d: unsafe byte at %zu", round, bad);
		}
		free(want);
		free(got);
		free(whole);
	}
}

static void a_line_longer_than_what_is_held_keeps_its_characters(void)
{
	/* 100000 two-byte characters, no newline: drained in pieces, never between a character's bytes. */
	size_t n = 200000;
	char *in = malloc(n + 1);

	for (size_t i = 0; in && i < n; i += 2)
		memcpy(in + i, "\xc3\xa9", 2);
	size_t len;
	char *out = in ? through_stream(in, n, 4093, &len) : NULL;

	CHECK(out && len == n && !memcmp(out, in, n), "a long line of é came back escaped");
	free(out);
	free(in);
}

static void a_failed_write_is_reported_at_close(void)
{
	FILE *full = fopen("/dev/full", "w");
	FILE *f = full ? ht_escape_stream(full) : NULL;

	CHECK(f != NULL, "a stream onto /dev/full");
	if (!f) {
		if (full)
			fclose(full);
		return;
	}
	fputs("line\n", f);
	CHECK(fclose(f) != 0, "fclose reports the failed write");
	fclose(full);
}

int main(void)
{
	RUN(control_bytes_are_escaped_and_newlines_kept);
	RUN(a_character_split_across_writes_stays_readable);
	RUN(any_writes_give_the_line_by_line_escape_and_a_safe_terminal);
	RUN(a_line_longer_than_what_is_held_keeps_its_characters);
	RUN(a_failed_write_is_reported_at_close);
	return ht_test_exit_status();
}
