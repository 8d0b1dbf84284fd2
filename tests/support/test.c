// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "test.h"

int ht_test_failed;
int ht_test_skipped;
int ht_suite_failures;
const char *ht_test_current = "";

void ht_run_test(const char *name, ht_test_fn fn)
{
	const char *only = getenv("HT_TEST_ONLY"); /* tests/run -t NAME */

	if (only && *only && strcmp(only, name) != 0)
		return;
	ht_test_current = name;
	ht_test_failed = 0;
	ht_test_skipped = 0;
	fflush(stdout);
	fn();
	if (ht_test_skipped)
		return;
	if (ht_test_failed) {
		printf("FAIL: %s\n", name);
		ht_suite_failures++;
	} else {
		printf("PASS: %s\n", name);
	}
	fflush(stdout);
}

/* a OP b by the integers' values, whatever their types' signedness. */
static int compare(bool a_neg, unsigned long long a, bool b_neg, unsigned long long b)
{
	if (a_neg != b_neg)
		return a_neg ? -1 : 1;
	if (a_neg)
		return (long long)a < (long long)b ? -1 : (long long)a > (long long)b;
	return a < b ? -1 : a > b;
}

static void print_int(bool neg, unsigned long long v)
{
	if (neg)
		printf("%lld", (long long)v);
	else
		printf("%llu", v);
	if (!neg && v > 9)
		printf(" (0x%llx)", v);
}

bool ht_assert_int(const char *file, int line, const char *name, const char *a_text, const char *b_text,
		   enum ht_assert_op op, bool a_neg, unsigned long long a, bool b_neg, unsigned long long b)
{
	static const char *const ops[] = { "==", "!=", "<", "<=", ">", ">=" };
	int c = compare(a_neg, a, b_neg, b);
	bool ok = op == HT_OP_EQ ? c == 0 : op == HT_OP_NE ? c != 0 : op == HT_OP_LT ? c < 0 :
		  op == HT_OP_LE ? c <= 0 : op == HT_OP_GT ? c > 0 : c >= 0;

	if (ok)
		return true;
	printf("    %s:%d: %s: want %s %s %s, got ", file, line, name, a_text, ops[op], b_text);
	print_int(a_neg, a);
	printf(" and ");
	print_int(b_neg, b);
	putchar('\n');
	ht_test_failed = 1;
	return false;
}

bool ht_assert_str(const char *file, int line, const char *name, const char *a_text, const char *b_text,
		   bool want_equal, const char *a, const char *b)
{
	bool equal = a && b ? strcmp(a, b) == 0 : a == b;

	if (equal == want_equal)
		return true;
	printf("    %s:%d: %s: want %s %s %s, got \"%s\" and \"%s\"\n", file, line, name, a_text,
	       want_equal ? "==" : "!=", b_text, a ? a : "(null)", b ? b : "(null)");
	ht_test_failed = 1;
	return false;
}

bool ht_assert_true(const char *file, int line, const char *name, const char *text, bool ok)
{
	if (ok)
		return true;
	printf("    %s:%d: %s: want %s\n", file, line, name, text);
	ht_test_failed = 1;
	return false;
}

int ht_test_exit_status(void)
{
	return ht_suite_failures ? 1 : 0;
}
