// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The small shared helpers of src/common/util.h. */
#include <stdint.h>
#include "common/util.h"
#include "test.h"

static void the_time_until_due_is_zero_once_overdue(void)
{
	ASSERT_EQ(ht_ns_until(1000, 400), 600u, "due later");
	ASSERT_EQ(ht_ns_until(1000, 1000), 0u, "due now");
	/* Overdue: an unsigned due - now would wrap around to nearly 2^64 ns. */
	ASSERT_EQ(ht_ns_until(1000, 1001), 0u, "overdue by 1 ns");
	ASSERT_EQ(ht_ns_until(0, UINT64_MAX), 0u, "overdue by all");
	ASSERT_EQ(HT_MIN(100000000ull, ht_ns_until(5, 9)), 0u, "a wait capped by an overdue sample");
}

int main(void)
{
	RUN(the_time_until_due_is_zero_once_overdue);
	return ht_test_exit_status();
}
