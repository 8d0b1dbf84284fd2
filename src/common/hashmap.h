/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one hash map of the project: chained buckets, keys and values the size
 * of a long (an integer, or a pointer to the caller's own struct), a hash and
 * an equality function chosen per map. Shaped after retsnoop's (and libbpf's)
 * hashmap, so code written against one reads the same against the other.
 *
 * Keys often come from the guest (tids, addresses) or from files: a guest
 * that could choose keys which all land in one bucket would make every
 * lookup a walk of all of them. So the hashes below mix the key with a seed
 * drawn at random when the program starts: nobody outside the process knows
 * which keys collide. Nothing printed may depend on the order of a walk over
 * a map: sort first.
 *
 * Not thread safe: one map, one thread at a time.
 *
 *   struct ht_hashmap m = HT_HASHMAP_INIT(ht_hash_long, ht_equal_long, NULL);
 *   ht_hashmap_insert(&m, key, (long)value, HT_HASHMAP_ADD, NULL, NULL);
 *   if (ht_hashmap_find(&m, key, &v)) ...
 *   ht_hashmap_clear(&m);
 */
#ifndef HT_COMMON_HASHMAP_H
#define HT_COMMON_HASHMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

_Static_assert(sizeof(long) == sizeof(void *) && sizeof(long) == sizeof(uint64_t),
	       "keys and values hold a pointer or a 64-bit integer");

typedef size_t (*ht_hashmap_hash_fn)(long key, void *ctx);
typedef bool (*ht_hashmap_equal_fn)(long a, long b, void *ctx);

struct ht_hashmap_entry {
	union {
		long key;
		const void *pkey;
	};
	union {
		long value;
		void *pvalue;
	};
	struct ht_hashmap_entry *next;
};

struct ht_hashmap {
	ht_hashmap_hash_fn hash_fn;
	ht_hashmap_equal_fn equal_fn;
	void *ctx; /* passed to both functions */
	struct ht_hashmap_entry **buckets;
	size_t cap;      /* buckets: 0 or a power of two */
	unsigned int cap_bits;
	size_t size;     /* entries */
};

#define HT_HASHMAP_INIT(hash, equal, context) \
	{ .hash_fn = (hash), .equal_fn = (equal), .ctx = (context) }

void ht_hashmap_init(struct ht_hashmap *m, ht_hashmap_hash_fn hash, ht_hashmap_equal_fn equal, void *ctx);
/* Frees every entry and the buckets (not what keys or values point to); the map stays usable. */
void ht_hashmap_clear(struct ht_hashmap *m);

static inline size_t ht_hashmap_size(const struct ht_hashmap *m)
{
	return m->size;
}

enum ht_hashmap_insert_strategy {
	HT_HASHMAP_ADD,    /* only a new key: -EEXIST if it is there */
	HT_HASHMAP_SET,    /* add, or replace the key's value */
	HT_HASHMAP_UPDATE, /* only an existing key: -ENOENT if it is not there */
};

/*
 * Adds or replaces key -> value as strategy says. old_key/old_value (may be
 * NULL) receive the replaced pair, 0 if none, so the caller can free them.
 * Returns 0, -EEXIST, -ENOENT or -ENOMEM (the map is unchanged then).
 */
int ht_hashmap_insert(struct ht_hashmap *m, long key, long value, enum ht_hashmap_insert_strategy strategy,
		      long *old_key, long *old_value);
/* True if key is in the map; its value into *value (may be NULL). */
bool ht_hashmap_find(const struct ht_hashmap *m, long key, long *value);
/* Removes key; true if it was there, with the removed pair in old_key/old_value (may be NULL). */
bool ht_hashmap_delete(struct ht_hashmap *m, long key, long *old_key, long *old_value);

/* Every entry, in no particular order. cur: struct ht_hashmap_entry *, bkt: size_t. */
#define ht_hashmap_for_each(m, cur, bkt)                    \
	for ((bkt) = 0; (bkt) < (m)->cap; (bkt)++)          \
		for ((cur) = (m)->buckets[bkt]; (cur); (cur) = (cur)->next)

/* The same, where the body may delete cur: tmp holds the next entry. */
#define ht_hashmap_for_each_safe(m, cur, tmp, bkt)                                     \
	for ((bkt) = 0; (bkt) < (m)->cap; (bkt)++)                                     \
		for ((cur) = (m)->buckets[bkt]; (cur) && ((tmp) = (cur)->next, 1); (cur) = (tmp))

/* Seeded hashing (see above). Combine the parts of a composite key with ht_hash_mix. */
uint64_t ht_hash_u64(uint64_t v);
uint64_t ht_hash_mix(uint64_t h, uint64_t v);
uint64_t ht_hash_bytes(const void *p, size_t len);
/* Ready-made functions for keys that are the long itself, and for C strings. */
size_t ht_hash_long(long key, void *ctx);
bool ht_equal_long(long a, long b, void *ctx);
size_t ht_hash_str(long key, void *ctx);
bool ht_equal_str(long a, long b, void *ctx);

#endif
