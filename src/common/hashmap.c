// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "common/hashmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define MIN_CAP_BITS 4

/* Drawn before main: every map of the process hashes with it for its whole life. */
static uint64_t seed;

__attribute__((constructor)) static void draw_seed(void)
{
	struct timespec ts;

	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) == (ssize_t)sizeof(seed))
		return;
	/* No entropy yet (early boot): still different per run and per process. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	seed = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)&ts;
}

/* splitmix64's finalizer: every input bit changes every output bit with probability ~1/2. */
static uint64_t finalize(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint64_t ht_hash_u64(uint64_t v)
{
	return finalize(v ^ seed);
}

uint64_t ht_hash_mix(uint64_t h, uint64_t v)
{
	return finalize(h * 0x9e3779b97f4a7c15ull ^ v ^ seed);
}

uint64_t ht_hash_bytes(const void *p, size_t len)
{
	const unsigned char *b = p;
	uint64_t h = ht_hash_u64(len);

	for (; len >= 8; b += 8, len -= 8) {
		uint64_t w;

		memcpy(&w, b, 8);
		h = ht_hash_mix(h, w);
	}
	if (len) {
		uint64_t w = 0;

		memcpy(&w, b, len);
		h = ht_hash_mix(h, w);
	}
	return h;
}

size_t ht_hash_long(long key, void *ctx)
{
	(void)ctx;
	return (size_t)ht_hash_u64((uint64_t)key);
}

bool ht_equal_long(long a, long b, void *ctx)
{
	(void)ctx;
	return a == b;
}

size_t ht_hash_str(long key, void *ctx)
{
	const char *s = (const char *)key;

	(void)ctx;
	return (size_t)ht_hash_bytes(s, strlen(s));
}

bool ht_equal_str(long a, long b, void *ctx)
{
	(void)ctx;
	return strcmp((const char *)a, (const char *)b) == 0;
}

void ht_hashmap_init(struct ht_hashmap *m, ht_hashmap_hash_fn hash, ht_hashmap_equal_fn equal, void *ctx)
{
	*m = (struct ht_hashmap)HT_HASHMAP_INIT(hash, equal, ctx);
}

void ht_hashmap_clear(struct ht_hashmap *m)
{
	struct ht_hashmap_entry *cur, *tmp;
	size_t bkt;

	ht_hashmap_for_each_safe(m, cur, tmp, bkt)
		free(cur);
	free(m->buckets);
	m->buckets = NULL;
	m->cap = 0;
	m->cap_bits = 0;
	m->size = 0;
}

/* The bucket of a hash: its top bits after a multiply, so even a weak hash function spreads. */
static size_t bucket_of(const struct ht_hashmap *m, long key)
{
	uint64_t h = (uint64_t)m->hash_fn(key, m->ctx) * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> (64 - m->cap_bits));
}

/* The link that points at key's entry (to read it or unlink it), or NULL. */
static struct ht_hashmap_entry **find_link(const struct ht_hashmap *m, long key)
{
	struct ht_hashmap_entry **link;

	if (!m->cap)
		return NULL;
	for (link = &m->buckets[bucket_of(m, key)]; *link; link = &(*link)->next)
		if (m->equal_fn((*link)->key, key, m->ctx))
			return link;
	return NULL;
}

/* Doubles the buckets when the map is 3/4 full: chains stay about one entry long. */
static int grow_if_needed(struct ht_hashmap *m)
{
	struct ht_hashmap_entry **old = m->buckets, *cur, *tmp;
	size_t old_cap = m->cap, bkt;
	unsigned int bits = m->cap ? m->cap_bits + 1 : MIN_CAP_BITS;

	if (m->cap && (m->size + 1) * 4 <= m->cap * 3)
		return 0;
	m->buckets = calloc((size_t)1 << bits, sizeof(*m->buckets));
	if (!m->buckets) {
		m->buckets = old;
		return -ENOMEM;
	}
	m->cap = (size_t)1 << bits;
	m->cap_bits = bits;
	for (bkt = 0; bkt < old_cap; bkt++)
		for (cur = old[bkt]; cur && (tmp = cur->next, 1); cur = tmp) {
			size_t b = bucket_of(m, cur->key);

			cur->next = m->buckets[b];
			m->buckets[b] = cur;
		}
	free(old);
	return 0;
}

int ht_hashmap_insert(struct ht_hashmap *m, long key, long value, enum ht_hashmap_insert_strategy strategy,
		      long *old_key, long *old_value)
{
	struct ht_hashmap_entry **link = find_link(m, key), *e;

	if (old_key)
		*old_key = 0;
	if (old_value)
		*old_value = 0;
	if (link) {
		if (strategy == HT_HASHMAP_ADD)
			return -EEXIST;
		if (old_key)
			*old_key = (*link)->key;
		if (old_value)
			*old_value = (*link)->value;
		(*link)->key = key;
		(*link)->value = value;
		return 0;
	}
	if (strategy == HT_HASHMAP_UPDATE)
		return -ENOENT;
	if (grow_if_needed(m))
		return -ENOMEM;
	e = malloc(sizeof(*e));
	if (!e)
		return -ENOMEM;
	size_t b = bucket_of(m, key);
	e->key = key;
	e->value = value;
	e->next = m->buckets[b];
	m->buckets[b] = e;
	m->size++;
	return 0;
}

bool ht_hashmap_find(const struct ht_hashmap *m, long key, long *value)
{
	struct ht_hashmap_entry **link = find_link(m, key);

	if (!link)
		return false;
	if (value)
		*value = (*link)->value;
	return true;
}

bool ht_hashmap_delete(struct ht_hashmap *m, long key, long *old_key, long *old_value)
{
	struct ht_hashmap_entry **link = find_link(m, key), *e;

	if (!link)
		return false;
	e = *link;
	if (old_key)
		*old_key = e->key;
	if (old_value)
		*old_value = e->value;
	*link = e->next;
	free(e);
	m->size--;
	return true;
}
