/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Values keyed by a pair of 32-bit ids, kept in insertion order: the
 * exports' per-thread state keyed by (VM process, thread) (a CTF stream, a
 * Chrome track), and their guest tasks, CPUs, names and functions keyed the
 * same way, so their memory grows with what the trace names, never with its
 * records. The hash is seeded, so a guest cannot choose keys that collide.
 */
#ifndef HT_ID_PAIR_TABLE_H
#define HT_ID_PAIR_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ht_id_pair_table;

struct ht_id_pair_table *ht_id_pair_table_new(void);
/* The value stored for (first, second), or NULL. */
void *ht_id_pair_table_get(struct ht_id_pair_table *t, uint32_t first, uint32_t second);
/* Stores value (not NULL) for (first, second). 0 or -ENOMEM. */
int ht_id_pair_table_put(struct ht_id_pair_table *t, uint32_t first, uint32_t second, void *value);
/*
 * The value stored for (first, second), or a new one of size bytes, zeroed
 * (calloc: the table's user frees it, as every value); *is_new (may be
 * NULL) says which. NULL when out of memory.
 */
void *ht_id_pair_table_get_or_add(struct ht_id_pair_table *t, uint32_t first, uint32_t second, size_t size,
				  bool *is_new);
size_t ht_id_pair_table_len(const struct ht_id_pair_table *t);
/* The i-th value stored, in insertion order. */
void *ht_id_pair_table_at(const struct ht_id_pair_table *t, size_t i);
/* Frees the table, not the values. */
void ht_id_pair_table_free(struct ht_id_pair_table *t);

#endif
