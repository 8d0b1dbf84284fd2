// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The small shared helpers: src/common/util.h and grow.h. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include "common/grow.h"
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

static void values_far_apart_sort_in_order(void)
{
	/* A comparison by subtraction cut to int would order these wrongly. */
	uint64_t v[] = { UINT64_MAX, 0, 1ull << 32, 1, UINT64_MAX - 1, 1ull << 63, 1ull << 32 };
	const uint64_t sorted[] = { 0, 1, 1ull << 32, 1ull << 32, 1ull << 63, UINT64_MAX - 1, UINT64_MAX };

	qsort(v, ARRAY_SIZE(v), sizeof(*v), ht_cmp_u64);
	for (size_t i = 0; i < ARRAY_SIZE(v); i++)
		ASSERT_EQ(v[i], sorted[i], "sorted value");
	ASSERT_EQ(ht_cmp_u64(&v[2], &v[3]), 0, "equal values compare equal");
}

static void an_array_grows_by_doubling_and_keeps_its_elements(void)
{
	uint32_t *v = NULL;
	size_t cap = 0, reallocs = 0;

	for (uint32_t i = 0; i < 1000; i++) {
		size_t before = cap;

		if (!ASSERT_OK(HT_GROW(v, cap, (size_t)i + 1, 8), "HT_GROW"))
			goto cleanup;
		reallocs += cap != before;
		v[i] = i;
	}
	ASSERT_EQ(cap, 1024u, "capacity: 8 doubled until 1000 fit");
	ASSERT_EQ(reallocs, 8u, "reallocations: 8, 16, ..., 1024");
	for (uint32_t i = 0; i < 1000; i++)
		if (!ASSERT_EQ(v[i], i, "element kept"))
			goto cleanup;
	ASSERT_OK(HT_GROW(v, cap, 3, 8), "room already there");
	ASSERT_EQ(cap, 1024u, "capacity unchanged");
cleanup:
	free(v);
}

static void a_size_past_size_t_is_refused_and_the_array_kept(void)
{
	struct sixteen {
		char b[16];
	} *v = malloc(4 * sizeof(*v));
	void *before = v;
	size_t cap = 4;

	if (!ASSERT_OK_PTR(v, "malloc"))
		return;
	ASSERT_EQ(HT_GROW(v, cap, SIZE_MAX / 2 + 2, 4), -ENOMEM, "elements past SIZE_MAX");
	ASSERT_EQ(HT_GROW(v, cap, SIZE_MAX / 8, 4), -ENOMEM, "bytes past SIZE_MAX");
	ASSERT_EQ(cap, 4u, "capacity kept");
	ASSERT_TRUE(v == before, "array kept");
	free(v);
}

int main(void)
{
	RUN(the_time_until_due_is_zero_once_overdue);
	RUN(values_far_apart_sort_in_order);
	RUN(an_array_grows_by_doubling_and_keeps_its_elements);
	RUN(a_size_past_size_t_is_refused_and_the_array_kept);
	return ht_test_exit_status();
}
