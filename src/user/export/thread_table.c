// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/thread_table.h"

#include <errno.h>
#include <stdlib.h>
#include "common/hashmap.h"

/* Open addressing over indices into values[] (insertion order); 0 marks a free slot. */
struct ht_thread_table {
	uint64_t *keys;    /* per slot */
	size_t *index;     /* per slot: 1 + index into values */
	size_t slots;      /* power of two */
	void **values;
	size_t len, cap;
};

static uint64_t key_of(uint32_t pid, uint32_t tid)
{
	return (uint64_t)pid << 32 | tid;
}

static size_t hash(uint64_t key, size_t slots)
{
	/*
	 * Seeded (common/hashmap.h): the guest exports key guest tids, CPUs and
	 * addresses here, and with a fixed hash a guest could choose keys whose
	 * slots run together, making every insertion a walk of all of them.
	 */
	return (size_t)ht_hash_u64(key) & (slots - 1);
}

struct ht_thread_table *ht_thread_table_new(void)
{
	struct ht_thread_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->slots = 64;
	t->keys = calloc(t->slots, sizeof(*t->keys));
	t->index = calloc(t->slots, sizeof(*t->index));
	if (!t->keys || !t->index) {
		ht_thread_table_free(t);
		return NULL;
	}
	return t;
}

static size_t find_slot(const uint64_t *keys, const size_t *index, size_t slots, uint64_t key)
{
	size_t i = hash(key, slots);

	while (index[i] && keys[i] != key)
		i = (i + 1) & (slots - 1);
	return i;
}

void *ht_thread_table_get(struct ht_thread_table *t, uint32_t pid, uint32_t tid)
{
	size_t i = find_slot(t->keys, t->index, t->slots, key_of(pid, tid));

	return t->index[i] ? t->values[t->index[i] - 1] : NULL;
}

static int grow(struct ht_thread_table *t)
{
	size_t slots = t->slots * 2;
	uint64_t *keys = calloc(slots, sizeof(*keys));
	size_t *index = calloc(slots, sizeof(*index));

	if (!keys || !index) {
		free(keys);
		free(index);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->slots; i++) {
		if (!t->index[i])
			continue;
		size_t j = find_slot(keys, index, slots, t->keys[i]);
		keys[j] = t->keys[i];
		index[j] = t->index[i];
	}
	free(t->keys);
	free(t->index);
	t->keys = keys;
	t->index = index;
	t->slots = slots;
	return 0;
}

int ht_thread_table_put(struct ht_thread_table *t, uint32_t pid, uint32_t tid, void *value)
{
	uint64_t key = key_of(pid, tid);

	if ((t->len + 1) * 2 > t->slots && grow(t))
		return -ENOMEM;
	if (t->len == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		void **values = realloc(t->values, cap * sizeof(*values));
		if (!values)
			return -ENOMEM;
		t->values = values;
		t->cap = cap;
	}
	size_t i = find_slot(t->keys, t->index, t->slots, key);
	if (!t->index[i]) {
		t->keys[i] = key;
		t->index[i] = ++t->len;
	}
	t->values[t->index[i] - 1] = value;
	return 0;
}

size_t ht_thread_table_len(const struct ht_thread_table *t)
{
	return t->len;
}

void *ht_thread_table_at(const struct ht_thread_table *t, size_t i)
{
	return i < t->len ? t->values[i] : NULL;
}

void ht_thread_table_free(struct ht_thread_table *t)
{
	if (!t)
		return;
	free(t->keys);
	free(t->index);
	free(t->values);
	free(t);
}
