/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What every output must be, whatever the input, checked by the fuzzers on
 * the real output (written independently of src/common/escape.c, so a
 * mistake there is not repeated here):
 *   - on a terminal: valid UTF-8, no control character but '\n' (C0, DEL,
 *     C1), no bidi control or line separator;
 *   - JSON: exactly one value per text, RFC 8259 strictly (valid UTF-8,
 *     escapes whole, no raw control character in a string), no key twice
 *     in an object;
 *   - CSV: a row of well-formed fields (RFC 4180), counted.
 */
#ifndef HT_FUZZ_OUTPUT_CHECK_H
#define HT_FUZZ_OUTPUT_CHECK_H

#include <stdbool.h>
#include <stddef.h>

/* How a run's output is checked. */
enum oc_kind {
	OC_TEXT,       /* terminal-safe */
	OC_JSON_LINES, /* terminal-safe, each line one JSON value */
	OC_CSV,        /* terminal-safe, each line a CSV row with the header's columns */
	OC_JSON_FILE,  /* terminal-safe, one JSON value */
};

/*
 * The checks of kind on one output: its lines (rows) checked. On a
 * violation *what says which and *at where (a byte offset); else *what is
 * NULL.
 */
size_t oc_check(enum oc_kind kind, const char *text, size_t len, const char **what, size_t *at);
/* A run's output file, whole and NUL-terminated (the caller frees it); aborts if it cannot be read. */
char *oc_read_output(const char *path, size_t *len);
/* The checkers must catch what they are for: aborts if one lets a bad output through, or refuses a good one. */
void oc_self_test(void);

/* False with the offset of the first offending byte in *bad. */
bool oc_terminal_safe(const char *s, size_t n, size_t *bad);
/* True if s[0..n) is one JSON value (whitespace around it allowed). */
bool oc_json_value(const char *s, size_t n);
/* True if s[0..n) (one line, no newline) is a CSV row; its fields in *fields. */
bool oc_csv_row(const char *s, size_t n, size_t *fields);

#endif
