/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Minimal test harness shared by the C tests. Every test prints one line:
 *   PASS: name | FAIL: name: reason | SKIP: name: reason
 * which tests/run counts.
 *
 * Two kinds of check. CHECK(cond, fmt, ...) returns from the test at its
 * first failure: for tests that hold nothing to free. ASSERT_*(..., name)
 * (the BPF selftests' test_progs.h style) mark the test failed, print both
 * sides, and return whether they held, so that a test holding resources
 * frees them on one path:
 *
 *     struct thing *t = thing_new();
 *     if (!ASSERT_OK_PTR(t, "thing_new"))
 *             return;
 *     if (!ASSERT_EQ(thing_count(t), 3, "count"))
 *             goto cleanup;
 *     ASSERT_STREQ(thing_name(t), "x", "name");
 * cleanup:
 *     thing_free(t);
 *
 * ASSERT_EQ/NE/LT/LE/GT/GE compare integers of any types by their values
 * (-1 is less than 0u), each evaluated once.
 */
#ifndef HT_TEST_H
#define HT_TEST_H

#include <limits.h>
#include <stdbool.h>
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

enum ht_assert_op { HT_OP_EQ, HT_OP_NE, HT_OP_LT, HT_OP_LE, HT_OP_GT, HT_OP_GE };

/*
 * An integer of any type, by its value: negative only if its type is signed
 * (a function call, so no compiler range warning fires for unsigned types).
 */
#define HT_ASSERT_SIGNED(v)                                                                  \
	_Generic((v), char: CHAR_MIN < 0, signed char: 1, short: 1, int: 1, long: 1, long long: 1, \
		 default: 0)
static inline bool ht_assert_neg(int is_signed, long long v)
{
	return is_signed && v < 0;
}
#define HT_ASSERT_NEG(v) ht_assert_neg(HT_ASSERT_SIGNED(v), (long long)(v))

bool ht_assert_int(const char *file, int line, const char *name, const char *a_text, const char *b_text,
		   enum ht_assert_op op, bool a_neg, unsigned long long a, bool b_neg, unsigned long long b);
bool ht_assert_str(const char *file, int line, const char *name, const char *a_text, const char *b_text,
		   bool want_equal, const char *a, const char *b);
bool ht_assert_true(const char *file, int line, const char *name, const char *text, bool ok);

#define HT_ASSERT_CMP(a, op, b, name)                                                        \
	({                                                                                   \
		__typeof__(a) ht_a_ = (a);                                                   \
		__typeof__(b) ht_b_ = (b);                                                   \
		ht_assert_int(__FILE__, __LINE__, name, #a, #b, op, HT_ASSERT_NEG(ht_a_),    \
			      (unsigned long long)ht_a_, HT_ASSERT_NEG(ht_b_),               \
			      (unsigned long long)ht_b_);                                    \
	})

#define ASSERT_EQ(a, b, name) HT_ASSERT_CMP(a, HT_OP_EQ, b, name)
#define ASSERT_NE(a, b, name) HT_ASSERT_CMP(a, HT_OP_NE, b, name)
#define ASSERT_LT(a, b, name) HT_ASSERT_CMP(a, HT_OP_LT, b, name)
#define ASSERT_LE(a, b, name) HT_ASSERT_CMP(a, HT_OP_LE, b, name)
#define ASSERT_GT(a, b, name) HT_ASSERT_CMP(a, HT_OP_GT, b, name)
#define ASSERT_GE(a, b, name) HT_ASSERT_CMP(a, HT_OP_GE, b, name)
/* Strings; NULL is shown as (null) and equals only NULL. */
#define ASSERT_STREQ(a, b, name) ht_assert_str(__FILE__, __LINE__, name, #a, #b, true, a, b)
#define ASSERT_STRNEQ(a, b, name) ht_assert_str(__FILE__, __LINE__, name, #a, #b, false, a, b)
#define ASSERT_TRUE(cond, name) ht_assert_true(__FILE__, __LINE__, name, #cond, !!(cond))
#define ASSERT_FALSE(cond, name) ht_assert_true(__FILE__, __LINE__, name, "!(" #cond ")", !(cond))
/* A call that returns 0 on success (an errno-style status otherwise). */
#define ASSERT_OK(v, name) ASSERT_EQ(v, 0, name)
#define ASSERT_OK_PTR(p, name) ht_assert_true(__FILE__, __LINE__, name, #p " != NULL", (p) != NULL)
/*
 * A condition with CHECK's message (printf-style: the output it judged, the
 * values that explain it), for tests that must go on to free what they hold:
 *     if (!ASSERT_MSG(strstr(out, "x"), "no x in:\n%s", out))
 *             goto cleanup;
 */
#define ASSERT_MSG(cond, ...)                                                                  \
	({                                                                                     \
		bool ht_ok_ = !!(cond);                                                        \
		if (!ht_ok_) {                                                                 \
			fprintf(stdout, "    %s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stdout, __VA_ARGS__);                                          \
			fputc('\n', stdout);                                                   \
			ht_test_failed = 1;                                                    \
		}                                                                              \
		ht_ok_;                                                                        \
	})

extern const char *ht_test_current;

typedef void (*ht_test_fn)(void);
void ht_run_test(const char *name, ht_test_fn fn);
/* Returns the exit status for main(): 1 if any test failed. */
int ht_test_exit_status(void);

#define RUN(fn) ht_run_test(#fn, fn)

#endif
