// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The generic hash map (src/common/hashmap.c): each insert strategy, growth
 * with every value kept, deletion (also while walking), composite keys
 * through pointer keys with their own hash and equality, and chains that stay
 * short for keys a guest would choose to collide.
 */
#include <errno.h>
#include <stdint.h>
#include "common/hashmap.h"
#include "common/util.h"
#include "test.h"

static void strategies_add_set_update(void)
{
	struct ht_hashmap map;
	long old_key, old_value, v;

	ht_hashmap_init(&map, ht_hash_long, ht_equal_long, NULL);
	if (!ASSERT_FALSE(ht_hashmap_find(&map, 1, &v), "found in an empty map") ||
	    !ASSERT_OK(ht_hashmap_insert(&map, 1, 10, HT_HASHMAP_ADD, NULL, NULL), "add") ||
	    !ASSERT_EQ(ht_hashmap_insert(&map, 1, 11, HT_HASHMAP_ADD, NULL, NULL), -EEXIST, "add of an existing key") ||
	    !ASSERT_TRUE(ht_hashmap_find(&map, 1, &v), "find") || !ASSERT_EQ(v, 10, "value"))
		goto cleanup;
	if (!ASSERT_OK(ht_hashmap_insert(&map, 1, 12, HT_HASHMAP_SET, &old_key, &old_value), "set") ||
	    !ASSERT_EQ(old_key, 1, "set returns the old key") || !ASSERT_EQ(old_value, 10, "set returns the old value"))
		goto cleanup;
	if (!ASSERT_EQ(ht_hashmap_insert(&map, 2, 20, HT_HASHMAP_UPDATE, NULL, NULL), -ENOENT, "update of a missing key") ||
	    !ASSERT_OK(ht_hashmap_insert(&map, 1, 13, HT_HASHMAP_UPDATE, NULL, &old_value), "update") ||
	    !ASSERT_EQ(old_value, 12, "update returns the old value"))
		goto cleanup;
	if (!ASSERT_OK(ht_hashmap_insert(&map, 2, 20, HT_HASHMAP_SET, &old_key, &old_value), "set of a new key") ||
	    !ASSERT_EQ(old_key, 0, "no old key") || !ASSERT_EQ(old_value, 0, "no old value"))
		goto cleanup;
	if (!ASSERT_EQ(ht_hashmap_size(&map), 2, "size") || !ASSERT_TRUE(ht_hashmap_find(&map, 1, &v), "find"))
		goto cleanup;
	ASSERT_EQ(v, 13, "updated value");
	ASSERT_TRUE(ht_hashmap_find(&map, 2, NULL), "find without a value");
cleanup:
	ht_hashmap_clear(&map);
}

static void growth_keeps_every_value_and_delete_removes_one(void)
{
	enum { N = 100000 };
	struct ht_hashmap map;
	long v, old_value;

	ht_hashmap_init(&map, ht_hash_long, ht_equal_long, NULL);
	for (long i = 0; i < N; i++)
		if (!ASSERT_OK(ht_hashmap_insert(&map, i * 7919, i, HT_HASHMAP_ADD, NULL, NULL), "add"))
			goto cleanup;
	if (!ASSERT_EQ(ht_hashmap_size(&map), N, "size") || !ASSERT_GE(map.cap, N * 4 / 3, "buckets") ||
	    !ASSERT_LE(map.cap, N * 4, "buckets"))
		goto cleanup;
	for (long i = 0; i < N; i++)
		if (!ASSERT_TRUE(ht_hashmap_find(&map, i * 7919, &v), "find") || !ASSERT_EQ(v, i, "value"))
			goto cleanup;
	ASSERT_FALSE(ht_hashmap_find(&map, 1, NULL), "absent key found");
	if (ASSERT_TRUE(ht_hashmap_delete(&map, 7919 * 5, NULL, &old_value), "delete"))
		ASSERT_EQ(old_value, 5, "deleted value");
	ASSERT_FALSE(ht_hashmap_delete(&map, 7919 * 5, NULL, NULL), "deleted twice");
	ASSERT_FALSE(ht_hashmap_find(&map, 7919 * 5, NULL), "deleted key found");
	ASSERT_EQ(ht_hashmap_size(&map), N - 1, "size after delete");
cleanup:
	ht_hashmap_clear(&map);
}

static void walk_visits_each_entry_once_and_may_delete(void)
{
	struct ht_hashmap_entry *cur, *tmp;
	struct ht_hashmap map;
	size_t bkt, seen = 0;
	long sum = 0;

	ht_hashmap_init(&map, ht_hash_long, ht_equal_long, NULL);
	for (long i = 1; i <= 1000; i++)
		if (!ASSERT_OK(ht_hashmap_insert(&map, i, i, HT_HASHMAP_ADD, NULL, NULL), "add"))
			goto cleanup;
	ht_hashmap_for_each(&map, cur, bkt) {
		seen++;
		sum += cur->value;
	}
	if (!ASSERT_EQ(seen, 1000, "entries walked") || !ASSERT_EQ(sum, 500500, "sum of the values walked"))
		goto cleanup;
	ht_hashmap_for_each_safe(&map, cur, tmp, bkt)
		if (cur->key % 2)
			ht_hashmap_delete(&map, cur->key, NULL, NULL);
	ASSERT_EQ(ht_hashmap_size(&map), 500, "size after deleting while walking");
	ASSERT_TRUE(ht_hashmap_find(&map, 2, NULL) && !ht_hashmap_find(&map, 3, NULL), "odd keys deleted");
	ht_hashmap_clear(&map);
	ASSERT_TRUE(ht_hashmap_size(&map) == 0 && !ht_hashmap_find(&map, 2, NULL), "cleared");
	ASSERT_OK(ht_hashmap_insert(&map, 2, 2, HT_HASHMAP_ADD, NULL, NULL), "usable after clear");
cleanup:
	ht_hashmap_clear(&map);
}

/* A composite key (VM, vCPU, task): the key is a pointer to it. */
struct task_key {
	uint32_t pid, tid;
	uint16_t vcpu;
};

static size_t hash_task(long key, void *ctx)
{
	const struct task_key *k = (const struct task_key *)key;

	(void)ctx;
	return (size_t)ht_hash_mix(ht_hash_mix(ht_hash_u64(k->pid), k->tid), k->vcpu);
}

static bool equal_task(long a, long b, void *ctx)
{
	const struct task_key *x = (const struct task_key *)a, *y = (const struct task_key *)b;

	(void)ctx;
	return x->pid == y->pid && x->tid == y->tid && x->vcpu == y->vcpu;
}

static void pointer_keys_with_their_own_hash_and_equality(void)
{
	static struct task_key keys[3] = { { 1, 2, 0 }, { 1, 2, 1 }, { 2, 1, 0 } };
	struct task_key probe = { 1, 2, 1 };
	char a[] = "vfs_read", b[] = "vfs_read";
	struct ht_hashmap map;
	long v;

	ht_hashmap_init(&map, hash_task, equal_task, NULL);
	for (long i = 0; i < 3; i++)
		if (!ASSERT_OK(ht_hashmap_insert(&map, (long)&keys[i], i, HT_HASHMAP_ADD, NULL, NULL), "add"))
			goto cleanup;
	if (ASSERT_TRUE(ht_hashmap_find(&map, (long)&probe, &v), "an equal key elsewhere in memory finds it"))
		ASSERT_EQ(v, 1, "its value");
	probe.vcpu = 2;
	ASSERT_FALSE(ht_hashmap_find(&map, (long)&probe, NULL), "another vCPU found");
	ht_hashmap_clear(&map);
	ht_hashmap_init(&map, ht_hash_str, ht_equal_str, NULL);
	if (!ASSERT_OK(ht_hashmap_insert(&map, (long)a, 7, HT_HASHMAP_ADD, NULL, NULL), "add string"))
		goto cleanup;
	if (ASSERT_TRUE(ht_hashmap_find(&map, (long)b, &v), "string keys compare by content"))
		ASSERT_EQ(v, 7, "its value");
cleanup:
	ht_hashmap_clear(&map);
}

static size_t longest_chain(const struct ht_hashmap *m)
{
	size_t longest = 0;

	for (size_t b = 0; b < m->cap; b++) {
		size_t n = 0;

		for (const struct ht_hashmap_entry *e = m->buckets[b]; e; e = e->next)
			n++;
		if (n > longest)
			longest = n;
	}
	return longest;
}

/*
 * Keys that share their low bits (page-aligned addresses), that differ only
 * in high bits (tids << 32), or that an unseeded multiplicative hash sends
 * to one bucket (multiples of its inverse): chains stay short.
 */
static void keys_chosen_to_collide_still_spread(void)
{
	enum { N = 1 << 16 };
	const uint64_t inverse_of_golden = 0xf1de83e19937733dull; /* 0x9e3779b97f4a7c15^-1 mod 2^64 */
	const uint64_t patterns[] = { 1ull << 12, 1ull << 32, inverse_of_golden };
	struct ht_hashmap map;

	for (size_t p = 0; p < ARRAY_SIZE(patterns); p++) {
		bool added = true;

		ht_hashmap_init(&map, ht_hash_long, ht_equal_long, NULL);
		for (uint64_t i = 0; i < N && added; i++)
			added = ASSERT_OK(ht_hashmap_insert(&map, (long)(0xffffffff81000000ull + i * patterns[p]), 1,
							    HT_HASHMAP_ADD, NULL, NULL), "add");
		/* A uniform hash gives about 8 here (the maximum of 65536 balls in 131072 bins). */
		if (added)
			ASSERT_LE(longest_chain(&map), 16, "longest chain of a pattern");
		ht_hashmap_clear(&map);
	}
}

int main(void)
{
	RUN(strategies_add_set_update);
	RUN(growth_keeps_every_value_and_delete_removes_one);
	RUN(walk_visits_each_entry_once_and_may_delete);
	RUN(pointer_keys_with_their_own_hash_and_equality);
	RUN(keys_chosen_to_collide_still_spread);
	return ht_test_exit_status();
}
