/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Minimal test harness shared by the C tests. Every test prints one line:
 *   PASS: name | FAIL: name: reason | SKIP: name: reason
 * which tests/run counts. A test fails on its first failed CHECK.
 */
#ifndef HT_TEST_H
#define HT_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern int ht_test_failed;     /* set by CHECK in the current test */
extern int ht_test_skipped;
extern int ht_suite_failures;  /* tests failed in this binary */

#define CHECK(cond, ...)                                                          \
	do {                                                                      \
		if (!(cond)) {                                                    \
			fprintf(stdout, "    %s:%d: check failed: %s: ", __FILE__,    \
				__LINE__, #cond);                                 \
			fprintf(stdout, __VA_ARGS__);                             \
			fputc('\n', stdout);                                      \
			ht_test_failed = 1;                                       \
			return;                                                   \
		}                                                                 \
	} while (0)

#define CHECK_EQ_U64(a, b)                                                          \
	CHECK((unsigned long long)(a) == (unsigned long long)(b), "%s = %llu, want %llu", #a, \
	      (unsigned long long)(a), (unsigned long long)(b))

#define SKIP(...)                                                                 \
	do {                                                                      \
		fprintf(stdout, "SKIP: %s: ", ht_test_current);                   \
		fprintf(stdout, __VA_ARGS__);                                     \
		fputc('\n', stdout);                                              \
		ht_test_skipped = 1;                                              \
		return;                                                           \
	} while (0)

extern const char *ht_test_current;

typedef void (*ht_test_fn)(void);
/* Called after every test, passed or failed: frees what a failed CHECK left behind. */
extern ht_test_fn ht_test_cleanup;
void ht_run_test(const char *name, ht_test_fn fn);
/* Returns the exit status for main(): 1 if any test failed. */
int ht_test_exit_status(void);

#define RUN(fn) ht_run_test(#fn, fn)

#endif
