/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * For tests that run the command as a user would: crafted trace files (with
 * the names of their threads), the sanitized binary's output, and the
 * property every text output must have on a terminal.
 */
#ifndef HT_TEST_FIXTURE_H
#define HT_TEST_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "hypertrace/trace_file.h"

/* The sanitized binary ($HT, else .output/san/hypertrace-bpf). */
const char *ht_test_bin(void);
/* Runs cmd with sh; its stdout (malloc'd, NUL-terminated; *len without it) and wait status. NULL on failure. */
char *ht_test_run(const char *cmd, size_t *len, int *status);
/*
 * Writes a trace file at path: header h (NULL: a default one selecting nrs),
 * the identities (each before the records), the records, a trailer. 0 or -1
 * with the reason in err.
 */
int ht_test_write_trace(const char *path, const struct ht_file_header *h, const struct ht_identity *ids,
			size_t nids, const struct ht_record *recs, size_t n, const uint32_t *nrs,
			unsigned int nnrs, char *err, size_t errlen);
/* Writes text to path; 0 or -1. */
int ht_test_write_file(const char *path, const void *text, size_t len);
/* The same for a NUL-terminated text. */
int ht_test_write_text(const char *path, const char *text);
/*
 * True if s[0..len) is safe to show on a terminal: valid UTF-8, no control
 * character but '\n' (C0, DEL, C1), no bidi control or line separator. Else
 * false with the offset of the first offending byte in *bad.
 */
bool ht_test_terminal_safe(const char *s, size_t len, size_t *bad);

#endif
