// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The exports' per-thread table: every (pid, tid) keeps its value as the table grows. */
#include <stdint.h>
#include <stdlib.h>
#include "export/id_pair_table.h"
#include "test.h"

static void values_survive_growth_and_keep_insertion_order(void)
{
	enum { N = 10000 };
	static int values[N];
	struct ht_id_pair_table *table = ht_id_pair_table_new();

	if (!ASSERT_OK_PTR(table, "ht_id_pair_table_new"))
		return;
	/* Dense tids in a few processes, as on a host with many VMs. */
	for (uint32_t i = 0; i < N; i++)
		if (!ASSERT_OK(ht_id_pair_table_put(table, 1000 + i % 7, 5000 + i, &values[i]), "put"))
			goto cleanup;
	if (!ASSERT_EQ(ht_id_pair_table_len(table), N, "len"))
		goto cleanup;
	for (uint32_t i = 0; i < N; i++)
		if (!ASSERT_TRUE(ht_id_pair_table_get(table, 1000 + i % 7, 5000 + i) == &values[i], "get") ||
		    !ASSERT_TRUE(ht_id_pair_table_at(table, i) == &values[i], "at"))
			goto cleanup;
	ASSERT_TRUE(ht_id_pair_table_get(table, 1001, 5000) == NULL, "same tid, other pid");
	ASSERT_TRUE(ht_id_pair_table_get(table, 1000, 5000 + N) == NULL, "unknown tid");
	ASSERT_TRUE(ht_id_pair_table_at(table, N) == NULL, "past the end");
cleanup:
	ht_id_pair_table_free(table);
}

static void putting_a_key_again_replaces_its_value(void)
{
	struct ht_id_pair_table *table = ht_id_pair_table_new();
	int a, b;

	if (!ASSERT_OK_PTR(table, "ht_id_pair_table_new"))
		return;
	if (ASSERT_OK(ht_id_pair_table_put(table, 1, 2, &a), "put") &&
	    ASSERT_OK(ht_id_pair_table_put(table, 1, 2, &b), "put again")) {
		ASSERT_EQ(ht_id_pair_table_len(table), 1, "len");
		ASSERT_TRUE(ht_id_pair_table_get(table, 1, 2) == &b, "the new value");
	}
	ht_id_pair_table_free(table);
}

/* get_or_add: a zeroed value the first time, the same one after, and says which. */
static void get_or_add_makes_a_zeroed_value_once(void)
{
	struct ht_id_pair_table *table = ht_id_pair_table_new();
	bool is_new = false;
	uint64_t *v, *again = NULL;

	if (!ASSERT_OK_PTR(table, "ht_id_pair_table_new"))
		return;
	v = ht_id_pair_table_get_or_add(table, 7, 70, sizeof(*v), &is_new);
	if (!ASSERT_OK_PTR(v, "added") || !ASSERT_TRUE(is_new, "new") || !ASSERT_EQ(*v, 0, "zeroed"))
		goto cleanup;
	*v = 42;
	again = ht_id_pair_table_get_or_add(table, 7, 70, sizeof(*v), &is_new);
	if (!ASSERT_TRUE(again == v, "the same value") || !ASSERT_FALSE(is_new, "not new") ||
	    !ASSERT_EQ(*again, 42, "kept"))
		goto cleanup;
	ASSERT_TRUE(ht_id_pair_table_get_or_add(table, 7, 71, sizeof(*v), NULL) != v, "another key, another value");
	ASSERT_EQ(ht_id_pair_table_len(table), 2, "two values");
cleanup:
	for (size_t i = 0; table && i < ht_id_pair_table_len(table); i++)
		free(ht_id_pair_table_at(table, i));
	ht_id_pair_table_free(table);
}

int main(void)
{
	RUN(values_survive_growth_and_keep_insertion_order);
	RUN(putting_a_key_again_replaces_its_value);
	RUN(get_or_add_makes_a_zeroed_value_once);
	return ht_test_exit_status();
}
