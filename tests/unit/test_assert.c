// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The test harness's ASSERT_* (tests/support/test.h): each says whether it
 * held, marks the test failed when not, and compares integers by value
 * across signedness. A failed assertion here is expected: the test reads
 * ht_test_failed and then clears it.
 */
#include <stdint.h>
#include "test.h"

/* Runs one assertion that must fail: it returns false and marks the test failed. */
#define EXPECT_FAILS(assertion)                                                              \
	do {                                                                                 \
		bool held_ = (assertion);                                                    \
		int marked_ = ht_test_failed;                                                \
		ht_test_failed = 0;                                                          \
		CHECK(!held_ && marked_, "%s held (or did not mark the test failed)", #assertion); \
	} while (0)

static void integers_compare_by_value_across_signedness(void)
{
	size_t three = 3;
	int minus_one = -1;

	CHECK(ASSERT_EQ(three, 3, "size_t and int"), "3 == 3");
	CHECK(ASSERT_LT(minus_one, 0u, "signed below unsigned"), "-1 < 0u");
	CHECK(ASSERT_GT(UINT64_MAX, INT64_MAX, "u64 max"), "UINT64_MAX > INT64_MAX");
	CHECK(ASSERT_NE(UINT64_MAX, -1, "all ones is not -1"), "UINT64_MAX != -1");
	CHECK(ASSERT_LE(INT64_MIN, -1, "signed order") && ASSERT_GE(0, INT64_MIN, "signed order"), "order");
	EXPECT_FAILS(ASSERT_EQ(UINT64_MAX, -1, "expected failure"));
	EXPECT_FAILS(ASSERT_GE(minus_one, 0u, "expected failure"));
	EXPECT_FAILS(ASSERT_EQ(three, 4, "expected failure"));
}

static void each_operand_is_evaluated_once(void)
{
	int calls = 0;

	CHECK(ASSERT_EQ(++calls, 1, "once"), "evaluated again");
	CHECK(calls == 1, "evaluated %d times", calls);
}

static void strings_pointers_and_conditions(void)
{
	const char *none = NULL;
	int x;

	CHECK(ASSERT_STREQ("abc", "abc", "equal") && ASSERT_STRNEQ("abc", "abd", "different"), "strings");
	CHECK(ASSERT_STREQ(none, NULL, "NULL equals NULL"), "NULL");
	EXPECT_FAILS(ASSERT_STREQ(none, "", "expected failure"));
	EXPECT_FAILS(ASSERT_STREQ("a", "b", "expected failure"));
	CHECK(ASSERT_OK_PTR(&x, "pointer") && ASSERT_TRUE(1 + 1 == 2, "true") && ASSERT_FALSE(0, "false") &&
		      ASSERT_OK(0, "ok"), "conditions");
	EXPECT_FAILS(ASSERT_OK_PTR(none, "expected failure"));
	EXPECT_FAILS(ASSERT_OK(-22, "expected failure"));
	EXPECT_FAILS(ASSERT_TRUE(0, "expected failure"));
	CHECK(ASSERT_MSG(1 + 1 == 2, "%d", 2), "a condition with a message");
	EXPECT_FAILS(ASSERT_MSG(1 + 1 == 3, "1 + 1 is %d (expected failure)", 1 + 1));
}

int main(void)
{
	RUN(integers_compare_by_value_across_signedness);
	RUN(each_operand_is_evaluated_once);
	RUN(strings_pointers_and_conditions);
	return ht_test_exit_status();
}
