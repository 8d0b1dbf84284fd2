/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one escaping of text that someone else chose: guest strings (task
 * names, marker text), VM, process and thread names, symbol names from a
 * guest's kallsyms, strings of a crafted trace file. The bytes are kept as
 * they are everywhere; they are escaped only when written out, here:
 *
 *   HT_ESC_TEXT    for a terminal (every report mode, the live view): valid
 *                  UTF-8 stays readable; control bytes (C0, DEL) and every
 *                  byte of invalid UTF-8 become \xNN, the C1 controls,
 *                  bidirectional overrides and line separators U+2028/9
 *                  \uNNNN, a backslash \\. Nothing a terminal interprets
 *                  gets through, and the escaping can be undone.
 *   HT_ESC_QUOTED  the same inside "...": a quote becomes \".
 *   HT_ESC_JSON    the inside of a JSON string (RFC 8259), valid UTF-8
 *                  whatever the input: quote, backslash and C0 controls as
 *                  JSON escapes, DEL, C1 controls, bidi overrides and
 *                  U+2028/9 as \u00NN / \uNNNN (the same characters, terminal-safe),
 *                  and each byte of invalid UTF-8 as \u00NN, its value as a
 *                  code point (U+0080..U+00FF). Valid UTF-8 reads back exactly.
 *
 * An escape is never cut: a buffer too small ends before the character that
 * does not fit. One input byte gives at most HT_ESC_MAX_GROWTH output bytes.
 */
#ifndef HT_COMMON_ESCAPE_H
#define HT_COMMON_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

enum ht_escape_style { HT_ESC_TEXT, HT_ESC_QUOTED, HT_ESC_JSON };

#define HT_ESC_MAX_GROWTH 6
/* A buffer that holds the escaped form of n bytes whole, NUL included. */
#define HT_ESC_SIZE(n) (HT_ESC_MAX_GROWTH * (n) + 1)

/* The escaped form of the C string s into buf (always NUL-terminated); returns buf. */
char *ht_escape(char *buf, size_t size, const char *s, enum ht_escape_style style);
/* The same of len bytes (NULs included); returns the length written. */
size_t ht_escape_mem(char *buf, size_t size, const void *s, size_t len, enum ht_escape_style style);
/* Writes the escaped form of s to f, whole. */
void ht_escape_fputs(FILE *f, const char *s, enum ht_escape_style style);
/* A JSON string of s, in its quotes: valid JSON whatever s holds (names are the VM owner's). */
void ht_json_fputs(FILE *f, const char *s);

/*
 * A CSV field (RFC 4180) of text: always quoted, quotes doubled, escaped as
 * HT_ESC_TEXT, and a leading = + - or @ neutralised with a ' before it
 * (OWASP's rule against formula injection) so spreadsheets show text.
 */
void ht_csv_fputs(FILE *f, const char *s);
/* The same for text already escaped for display (HT_ESC_TEXT/QUOTED): quoted and neutralised, not escaped again. */
void ht_csv_quote(FILE *f, const char *shown);

/* The longest prefix of s, at most max bytes, that ends at a character boundary of UTF-8. */
size_t ht_utf8_prefix(const char *s, size_t max);

#endif
