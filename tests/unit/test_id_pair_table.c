// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The exports' per-thread table: every (pid, tid) keeps its value as the table grows. */
#include <stdint.h>
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

int main(void)
{
	RUN(values_survive_growth_and_keep_insertion_order);
	RUN(putting_a_key_again_replaces_its_value);
	return ht_test_exit_status();
}
