// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The exports' per-thread table: every (pid, tid) keeps its value as the table grows. */
#include <stdint.h>
#include "export/thread_table.h"
#include "test.h"

static struct ht_thread_table *table;

static void free_table(void)
{
	ht_thread_table_free(table);
	table = NULL;
}

static void values_survive_growth_and_keep_insertion_order(void)
{
	enum { N = 10000 };
	static int values[N];

	table = ht_thread_table_new();
	CHECK(table != NULL, "no table");
	/* Dense tids in a few processes, as on a host with many VMs. */
	for (uint32_t i = 0; i < N; i++)
		CHECK(ht_thread_table_put(table, 1000 + i % 7, 5000 + i, &values[i]) == 0, "put %u", i);
	CHECK_EQ_U64(ht_thread_table_len(table), N);
	for (uint32_t i = 0; i < N; i++) {
		CHECK(ht_thread_table_get(table, 1000 + i % 7, 5000 + i) == &values[i], "get %u", i);
		CHECK(ht_thread_table_at(table, i) == &values[i], "at %u", i);
	}
	CHECK(ht_thread_table_get(table, 1001, 5000) == NULL, "same tid, other pid");
	CHECK(ht_thread_table_get(table, 1000, 5000 + N) == NULL, "unknown tid");
	CHECK(ht_thread_table_at(table, N) == NULL, "past the end");
}

static void putting_a_key_again_replaces_its_value(void)
{
	int a, b;

	table = ht_thread_table_new();
	CHECK(table != NULL, "no table");
	CHECK(ht_thread_table_put(table, 1, 2, &a) == 0 && ht_thread_table_put(table, 1, 2, &b) == 0, "put");
	CHECK_EQ_U64(ht_thread_table_len(table), 1);
	CHECK(ht_thread_table_get(table, 1, 2) == &b, "old value");
}

int main(void)
{
	ht_test_cleanup = free_table;
	RUN(values_survive_growth_and_keep_insertion_order);
	RUN(putting_a_key_again_replaces_its_value);
	return ht_test_exit_status();
}
