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

/* False with the offset of the first offending byte in *bad. */
bool oc_terminal_safe(const char *s, size_t n, size_t *bad);
/* True if s[0..n) is one JSON value (whitespace around it allowed). */
bool oc_json_value(const char *s, size_t n);
/* True if s[0..n) (one line, no newline) is a CSV row; its fields in *fields. */
bool oc_csv_row(const char *s, size_t n, size_t *fields);

#endif
