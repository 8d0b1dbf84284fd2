// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/id_pair_table.h"

#include <errno.h>
#include <stdlib.h>
#include "common/hashmap.h"
#include "common/grow.h"

/*
 * The project's map (seeded: see common/hashmap.h) from (first, second) to an
 * index into values[], which keeps insertion order: the exports walk the
 * values by index, so what they print never depends on the map's order.
 */
struct ht_id_pair_table {
	struct ht_hashmap index; /* key_of(first, second) -> index into values */
	void **values;
	size_t len, cap;
};

static long key_of(uint32_t first, uint32_t second)
{
	return (long)((uint64_t)first << 32 | second);
}

struct ht_id_pair_table *ht_id_pair_table_new(void)
{
	struct ht_id_pair_table *t = calloc(1, sizeof(*t));

	if (t)
		ht_hashmap_init(&t->index, ht_hash_long, ht_equal_long, NULL);
	return t;
}

void *ht_id_pair_table_get(struct ht_id_pair_table *t, uint32_t first, uint32_t second)
{
	long i;

	return ht_hashmap_find(&t->index, key_of(first, second), &i) ? t->values[i] : NULL;
}

void *ht_id_pair_table_get_or_add(struct ht_id_pair_table *t, uint32_t first, uint32_t second, size_t size,
				  bool *is_new)
{
	void *v = ht_id_pair_table_get(t, first, second);

	if (is_new)
		*is_new = !v;
	if (v)
		return v;
	v = calloc(1, size);
	if (v && ht_id_pair_table_put(t, first, second, v)) {
		free(v);
		v = NULL;
	}
	return v;
}

int ht_id_pair_table_put(struct ht_id_pair_table *t, uint32_t first, uint32_t second, void *value)
{
	long key = key_of(first, second), i;

	if (ht_hashmap_find(&t->index, key, &i)) {
		t->values[i] = value;
		return 0;
	}
	if (HT_GROW(t->values, t->cap, t->len + 1, 16))
		return -ENOMEM;
	if (ht_hashmap_insert(&t->index, key, (long)t->len, HT_HASHMAP_ADD, NULL, NULL))
		return -ENOMEM;
	t->values[t->len++] = value;
	return 0;
}

size_t ht_id_pair_table_len(const struct ht_id_pair_table *t)
{
	return t->len;
}

void *ht_id_pair_table_at(const struct ht_id_pair_table *t, size_t i)
{
	return i < t->len ? t->values[i] : NULL;
}

void ht_id_pair_table_free(struct ht_id_pair_table *t)
{
	if (!t)
		return;
	ht_hashmap_clear(&t->index);
	free(t->values);
	free(t);
}
