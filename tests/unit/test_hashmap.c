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
#include "test.h"

static struct ht_hashmap map;

static void clear_map(void)
{
	ht_hashmap_clear(&map);
}

static void strategies_add_set_update(void)
{
	long old_key, old_value, v;

	ht_hashmap_init(&map, ht_hash_long, ht_equal_long, NULL);
	CHECK(!ht_hashmap_find(&map, 1, &v), "found in an empty map");
	CHECK(ht_hashmap_insert(&map, 1, 10, HT_HASHMAP_ADD, NULL, NULL) == 0, "add");
	CHECK(ht_hashmap_insert(&map, 1, 11, HT_HASHMAP_ADD, NULL, NULL) == -EEXIST, "add of an existing key");
	CHECK(ht_hashmap_find(&map, 1, &v) && v == 10, "value %ld", v);
	CHECK(ht_hashmap_insert(&map, 1, 12, HT_HASHMAP_SET, &old_key, &old_value) == 0 && old_key == 1 &&
		      old_value == 10, "set returns the old pair");
	CHECK(ht_hashmap_insert(&map, 2, 20, HT_HASHMAP_UPDATE, NULL, NULL) == -ENOENT, "update of a missing key");
	CHECK(ht_hashmap_insert(&map, 1, 13, HT_HASHMAP_UPDATE, NULL, &old_value) == 0 && old_value == 12, "update");
	CHECK(ht_hashmap_insert(&map, 2, 20, HT_HASHMAP_SET, &old_key, &old_value) == 0 && old_key == 0 &&
		      old_value == 0, "set of a new key");
	CHECK_EQ_U64(ht_hashmap_size(&map), 2);
	CHECK(ht_hashmap_find(&map, 1, &v) && v == 13, "value %ld", v);
	CHECK(ht_hashmap_find(&map, 2, NULL), "find without a value");
}

static void growth_keeps_every_value_and_delete_removes_one(void)
{
	enum { N = 100000 };
	long v, old_value;

	ht_hashmap_init(&map, ht_hash_long, ht_equal_long, NULL);
	for (long i = 0; i < N; i++)
		CHECK(ht_hashmap_insert(&map, i * 7919, i, HT_HASHMAP_ADD, NULL, NULL) == 0, "add %ld", i);
	CHECK_EQ_U64(ht_hashmap_size(&map), N);
	CHECK(map.cap >= N * 4 / 3 && map.cap <= N * 4, "buckets %zu for %d entries", map.cap, N);
	for (long i = 0; i < N; i++)
		CHECK(ht_hashmap_find(&map, i * 7919, &v) && v == i, "key %ld -> %ld", i * 7919, v);
	CHECK(!ht_hashmap_find(&map, 1, NULL), "absent key found");
	CHECK(ht_hashmap_delete(&map, 7919 * 5, NULL, &old_value) && old_value == 5, "delete");
	CHECK(!ht_hashmap_delete(&map, 7919 * 5, NULL, NULL), "deleted twice");
	CHECK(!ht_hashmap_find(&map, 7919 * 5, NULL), "deleted key found");
	CHECK_EQ_U64(ht_hashmap_size(&map), N - 1);
}

static void walk_visits_each_entry_once_and_may_delete(void)
{
	struct ht_hashmap_entry *cur, *tmp;
	size_t bkt, seen = 0;
	long sum = 0;

	ht_hashmap_init(&map, ht_hash_long, ht_equal_long, NULL);
	for (long i = 1; i <= 1000; i++)
		CHECK(ht_hashmap_insert(&map, i, i, HT_HASHMAP_ADD, NULL, NULL) == 0, "add");
	ht_hashmap_for_each(&map, cur, bkt) {
		seen++;
		sum += cur->value;
	}
	CHECK(seen == 1000 && sum == 500500, "walked %zu entries, sum %ld", seen, sum);
	ht_hashmap_for_each_safe(&map, cur, tmp, bkt)
		if (cur->key % 2)
			ht_hashmap_delete(&map, cur->key, NULL, NULL);
	CHECK_EQ_U64(ht_hashmap_size(&map), 500);
	CHECK(ht_hashmap_find(&map, 2, NULL) && !ht_hashmap_find(&map, 3, NULL), "odd keys deleted");
	ht_hashmap_clear(&map);
	CHECK(ht_hashmap_size(&map) == 0 && !ht_hashmap_find(&map, 2, NULL), "cleared");
	CHECK(ht_hashmap_insert(&map, 2, 2, HT_HASHMAP_ADD, NULL, NULL) == 0, "usable after clear");
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
	long v;

	ht_hashmap_init(&map, hash_task, equal_task, NULL);
	for (long i = 0; i < 3; i++)
		CHECK(ht_hashmap_insert(&map, (long)&keys[i], i, HT_HASHMAP_ADD, NULL, NULL) == 0, "add %ld", i);
	CHECK(ht_hashmap_find(&map, (long)&probe, &v) && v == 1, "an equal key elsewhere in memory finds it");
	probe.vcpu = 2;
	CHECK(!ht_hashmap_find(&map, (long)&probe, NULL), "another vCPU found");
	ht_hashmap_clear(&map);
	ht_hashmap_init(&map, ht_hash_str, ht_equal_str, NULL);
	char a[] = "vfs_read", b[] = "vfs_read";
	CHECK(ht_hashmap_insert(&map, (long)a, 7, HT_HASHMAP_ADD, NULL, NULL) == 0, "add string");
	CHECK(ht_hashmap_find(&map, (long)b, &v) && v == 7, "string keys compare by content");
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

	for (size_t p = 0; p < sizeof(patterns) / sizeof(patterns[0]); p++) {
		ht_hashmap_init(&map, ht_hash_long, ht_equal_long, NULL);
		for (uint64_t i = 0; i < N; i++)
			CHECK(ht_hashmap_insert(&map, (long)(0xffffffff81000000ull + i * patterns[p]), 1, HT_HASHMAP_ADD,
						NULL, NULL) == 0, "add");
		size_t longest = longest_chain(&map);
		/* A uniform hash gives about 8 here (the maximum of 65536 balls in 131072 bins). */
		CHECK(longest <= 16, "pattern %zu: a chain of %zu entries", p, longest);
		ht_hashmap_clear(&map);
	}
}

int main(void)
{
	ht_test_cleanup = clear_map;
	RUN(strategies_add_set_update);
	RUN(growth_keeps_every_value_and_delete_removes_one);
	RUN(walk_visits_each_entry_once_and_may_delete);
	RUN(pointer_keys_with_their_own_hash_and_equality);
	RUN(keys_chosen_to_collide_still_spread);
	return ht_test_exit_status();
}
