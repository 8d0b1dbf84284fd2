/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The vCPU threads an export has met, keyed by (VM process, thread): the
 * exports keep per-thread state (a CTF stream, a Chrome track), so their
 * memory grows with the threads of the trace, never with its records. The
 * guest exports key guest tasks, CPUs and functions the same way: the
 * hash is seeded, so a guest cannot choose keys that collide.
 */
#ifndef HT_THREAD_TABLE_H
#define HT_THREAD_TABLE_H

#include <stddef.h>
#include <stdint.h>

struct ht_thread_table;

struct ht_thread_table *ht_thread_table_new(void);
/* The value stored for (pid, tid), or NULL. */
void *ht_thread_table_get(struct ht_thread_table *t, uint32_t pid, uint32_t tid);
/* Stores value (not NULL) for (pid, tid). 0 or -ENOMEM. */
int ht_thread_table_put(struct ht_thread_table *t, uint32_t pid, uint32_t tid, void *value);
size_t ht_thread_table_len(const struct ht_thread_table *t);
/* The i-th value stored, in insertion order. */
void *ht_thread_table_at(const struct ht_thread_table *t, size_t i);
/* Frees the table, not the values. */
void ht_thread_table_free(struct ht_thread_table *t);

#endif
