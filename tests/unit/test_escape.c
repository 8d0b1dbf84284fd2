// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The one escaping of foreign text (src/common/escape.c): what a terminal,
 * a JSON reader and a spreadsheet get for control bytes, invalid UTF-8,
 * valid text in other scripts, and buffers too small for the escaped form.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include "common/escape.h"
#include "fixture.h"
#include "common/util.h"
#include "test.h"

static bool escapes_to(const char *in, enum ht_escape_style style, const char *want)
{
	char buf[256];

	ht_escape(buf, sizeof(buf), in, style);
	if (strcmp(buf, want)) {
		printf("    '%s' -> '%s', want '%s'\n", in, buf, want);
		return false;
	}
	return true;
}

static void text_shows_control_bytes_and_invalid_utf8_keeps_other_scripts(void)
{
	CHECK(escapes_to("\x1b[2J\x1b[H", HT_ESC_TEXT, "\\x1b[2J\\x1b[H"), "ESC");
	CHECK(escapes_to("\x1b]0;title\x07", HT_ESC_TEXT, "\\x1b]0;title\\x07"), "OSC");
	CHECK(escapes_to("tab\there\r\n\x7f", HT_ESC_TEXT, "tab\\x09here\\x0d\\x0a\\x7f"), "C0 and DEL");
	CHECK(escapes_to("a\\x1b", HT_ESC_TEXT, "a\\\\x1b"), "a backslash doubles: the escape is unambiguous");
	CHECK(escapes_to("say \"hi\"", HT_ESC_TEXT, "say \"hi\""), "quotes stay in text");
	CHECK(escapes_to("say \"hi\"", HT_ESC_QUOTED, "say \\\"hi\\\""), "quotes escaped in quoted text");
	CHECK(escapes_to("网站-α-é-😀", HT_ESC_TEXT, "网站-α-é-😀"), "valid UTF-8 is readable");
	CHECK(escapes_to("\xff\xfe", HT_ESC_TEXT, "\\xff\\xfe"), "invalid bytes");
	CHECK(escapes_to("\xc0\xaf", HT_ESC_TEXT, "\\xc0\\xaf"), "overlong '/'");
	CHECK(escapes_to("\xed\xa0\x80", HT_ESC_TEXT, "\\xed\\xa0\\x80"), "a surrogate");
	CHECK(escapes_to("\xf4\x90\x80\x80", HT_ESC_TEXT, "\\xf4\\x90\\x80\\x80"), "above U+10FFFF");
	CHECK(escapes_to("ab\xe7\xbd", HT_ESC_TEXT, "ab\\xe7\\xbd"), "a character cut short");
	CHECK(escapes_to("\x9b" "31m", HT_ESC_TEXT, "\\x9b31m"), "a raw 8-bit CSI");
	CHECK(escapes_to("\xc2\x9b" "31m", HT_ESC_TEXT, "\\u009b31m"), "C1 CSI as UTF-8");
	CHECK(escapes_to("abc\xe2\x80\xae" "fed", HT_ESC_TEXT, "abc\\u202efed"), "right-to-left override");
	CHECK(escapes_to("x\xe2\x80\xa8y", HT_ESC_TEXT, "x\\u2028y"), "line separator");
}

static void json_is_valid_utf8_and_keeps_valid_text_exact(void)
{
	CHECK(escapes_to("\x1b[2J", HT_ESC_JSON, "\\u001b[2J"), "ESC");
	CHECK(escapes_to("\"q\" \\", HT_ESC_JSON, "\\\"q\\\" \\\\"), "quote and backslash");
	CHECK(escapes_to("\n\x7f", HT_ESC_JSON, "\\u000a\\u007f"), "newline and DEL");
	CHECK(escapes_to("é网", HT_ESC_JSON, "é网"), "valid UTF-8 as it is");
	CHECK(escapes_to("\xe9\xff", HT_ESC_JSON, "\\u00e9\\u00ff"), "invalid bytes as their code points");
	CHECK(escapes_to("\xc2\x9b\xe2\x80\xae", HT_ESC_JSON, "\\u009b\\u202e"), "C1 and bidi as \\u escapes");
}

static void a_small_buffer_never_cuts_an_escape_or_a_character(void)
{
	char buf[8];

	ASSERT_STREQ(ht_escape(buf, 6, "ab\x1b", HT_ESC_TEXT), "ab", "ht_escape(buf, 6, \"ab\\x1b\", HT_ESC_TEXT)");
	ASSERT_STREQ(ht_escape(buf, 7, "ab\x1b", HT_ESC_TEXT), "ab\\x1b", "ht_escape(buf, 7, \"ab\\x1b\", HT_ESC_TEXT)");
	ASSERT_STREQ(ht_escape(buf, 5, "a网", HT_ESC_TEXT), "a网", "ht_escape(buf, 5, \"a网\", HT_ESC_TEXT)");
	ASSERT_STREQ(ht_escape(buf, 4, "a网", HT_ESC_TEXT), "a", "ht_escape(buf, 4, \"a网\", HT_ESC_TEXT)");
	ASSERT_STREQ(ht_escape(buf, 8, "\xff", HT_ESC_JSON), "\\u00ff", "ht_escape(buf, 8, \"\\xff\", HT_ESC_JSON)");
	ASSERT_STREQ(ht_escape(buf, 6, "\xff", HT_ESC_JSON), "", "ht_escape(buf, 6, \"\\xff\", HT_ESC_JSON)");
	CHECK(ht_escape_mem(buf, sizeof(buf), "a\0b", 3, HT_ESC_TEXT) == 6 && !strcmp(buf, "a\\x00b"),
	      "NUL bytes of a buffer: '%s'", buf);
	CHECK(ht_utf8_prefix("网站", 5) == 3 && ht_utf8_prefix("网站", 6) == 6 && ht_utf8_prefix("ab\xff", 2) == 2,
	      "UTF-8 prefixes");
}

static void csv_fields_are_quoted_and_formulas_neutralised(void)
{
	static const struct { const char *in, *want; } cases[] = {
		{ "web1", "\"web1\"" },
		{ "", "\"\"" },
		{ "a,b", "\"a,b\"" },
		{ "say \"hi\"", "\"say \"\"hi\"\"\"" },
		{ "=HYPERLINK(\"http://x\")", "\"'=HYPERLINK(\"\"http://x\"\")\"" },
		{ "+cmd|' /C calc'!A0", "\"'+cmd|' /C calc'!A0\"" },
		{ "-2+3", "\"'-2+3\"" },
		{ "@SUM(A1)", "\"'@SUM(A1)\"" },
		{ "\tline\r\nbreak", "\"\\x09line\\x0d\\x0abreak\"" },
		{ "a=b", "\"a=b\"" },
	};
	char *mem = NULL;
	size_t len = 0;
	FILE *m;

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		m = open_memstream(&mem, &len);
		if (!ASSERT_OK_PTR(m, "open_memstream"))
			return;
		ht_csv_fputs(m, cases[i].in);
		fclose(m);
		if (!ASSERT_STREQ(mem, cases[i].want, cases[i].in))
			goto cleanup;
		free(mem);
		mem = NULL;
	}
	/* Text already escaped for display is quoted and neutralised, not escaped again. */
	m = open_memstream(&mem, &len);
	if (!ASSERT_OK_PTR(m, "open_memstream"))
		return;
	ht_csv_quote(m, "-x=\\x1b \"q\"");
	fclose(m);
	ASSERT_STREQ(mem, "\"'-x=\\x1b \"\"q\"\"\"", "already escaped text, quoted");
cleanup:
	free(mem);
}

static void any_bytes_escape_to_safe_text_and_json(void)
{
	unsigned int state = 12345;
	char in[64], out[HT_ESC_SIZE(64)];

	for (int round = 0; round < 20000; round++) {
		size_t n = 1 + round % 63;

		for (size_t i = 0; i < n; i++) {
			state = state * 1103515245u + 12345u;
			/* Bias towards the interesting bytes: controls, lead and continuation bytes. */
			in[i] = (char)(state >> 16 & 1 ? (state >> 8) & 0xff : 0x80 | ((state >> 8) & 0x3f));
			if (!in[i])
				in[i] = 1;
		}
		in[n] = '\0';
		for (int style = HT_ESC_TEXT; style <= HT_ESC_JSON; style++) {
			size_t len = ht_escape_mem(out, sizeof(out), in, n, style);

			CHECK(len == strlen(out) && len < sizeof(out), "a whole escape fits HT_ESC_SIZE");
			size_t bad;
			CHECK(ht_test_terminal_safe(out, len, &bad), "round %d style %d: unsafe output", round,
			      style);
		}
	}
}

int main(void)
{
	RUN(text_shows_control_bytes_and_invalid_utf8_keeps_other_scripts);
	RUN(json_is_valid_utf8_and_keeps_valid_text_exact);
	RUN(a_small_buffer_never_cuts_an_escape_or_a_character);
	RUN(csv_fields_are_quoted_and_formulas_neutralised);
	RUN(any_bytes_escape_to_safe_text_and_json);
	return ht_test_exit_status();
}
