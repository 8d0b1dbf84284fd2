// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "tracefile/exits_restarts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "common/exit_hists.h"

/* A key of the file (a series' or a cause's) and its numbers as last written; the map's key points at key. */
struct restart {
	void *before;           /* the key's numbers before its last restart; NULL: it never restarted */
	unsigned char key[24];  /* the key's bytes (key_len of them) */
	__u64 last[];           /* its hist as the file wrote it last */
};

/* The larger of the two hists: a sum's room on the stack. */
#define MAX_HIST_WORDS (sizeof(struct ht_exit_cause_hist) / sizeof(__u64))
_Static_assert(sizeof(struct ht_exit_hist) <= sizeof(struct ht_exit_cause_hist), "MAX_HIST_WORDS");
_Static_assert(sizeof(struct ht_exit_cause_key) <= sizeof(((struct restart *)0)->key), "restart.key");

/* ctx: the key's length. */
static size_t hash_key(long key, void *ctx)
{
	return (size_t)ht_hash_bytes((const void *)key, (size_t)ctx);
}

static bool equal_key(long a, long b, void *ctx)
{
	return !memcmp((const void *)a, (const void *)b, (size_t)ctx);
}

void ht_exits_restarts_init(struct ht_exits_restarts *r)
{
	memset(r, 0, sizeof(*r));
	ht_hashmap_init(&r->series, hash_key, equal_key, (void *)sizeof(struct ht_exit_key));
	ht_hashmap_init(&r->causes, hash_key, equal_key, (void *)sizeof(struct ht_exit_cause_key));
}

static void free_entries(struct ht_hashmap *m)
{
	struct ht_hashmap_entry *cur;
	size_t bkt;

	ht_hashmap_for_each(m, cur, bkt) {
		struct restart *e = (struct restart *)cur->value;

		free(e->before);
		free(e);
	}
	ht_hashmap_clear(m);
}

void ht_exits_restarts_free(struct ht_exits_restarts *r)
{
	free_entries(&r->series);
	free_entries(&r->causes);
}

static void add_series(void *sum, const void *h)
{
	ht_exit_hist_add(sum, h);
}

static void add_cause(void *sum, const void *h)
{
	ht_exit_cause_hist_add(sum, h);
}

/*
 * One row of key (key_len bytes) with hist h (hist_len bytes, summed by
 * add): a row from zero of a key seen before is a restart, whose last
 * numbers join what the key had before; h becomes that plus h. 0 or -ENOMEM.
 */
static int apply_row(struct ht_exits_restarts *r, struct ht_hashmap *m, const void *key, size_t key_len,
		     bool from_zero, void *h, size_t hist_len, void (*add)(void *sum, const void *h))
{
	struct restart *e;
	long found;

	if (ht_hashmap_find(m, (long)key, &found)) {
		e = (struct restart *)found;
		if (from_zero) {
			if (!e->before && !(e->before = calloc(1, hist_len)))
				return -ENOMEM;
			add(e->before, e->last);
			r->restarts++;
		}
	} else {
		if (!(e = calloc(1, sizeof(*e) + hist_len)))
			return -ENOMEM;
		memcpy(e->key, key, key_len);
		if (ht_hashmap_insert(m, (long)e->key, (long)e, HT_HASHMAP_ADD, NULL, NULL)) {
			free(e);
			return -ENOMEM;
		}
	}
	memcpy(e->last, h, hist_len);
	if (e->before) {
		__u64 sum[MAX_HIST_WORDS];

		memcpy(sum, e->before, hist_len);
		add(sum, h);
		memcpy(h, sum, hist_len);
	}
	return 0;
}

int ht_exits_restarts_apply(struct ht_exits_restarts *r, struct ht_exit_series_rec *series, size_t nseries,
			    struct ht_exit_cause_rec *causes, size_t ncauses)
{
	for (size_t i = 0; i < nseries; i++) {
		struct ht_exit_series_rec *s = &series[i];
		bool from_zero = s->flags & HT_EXIT_ROW_F_FROM_ZERO;

		s->flags &= ~HT_EXIT_ROW_F_FROM_ZERO;
		if (apply_row(r, &r->series, &s->key, sizeof(s->key), from_zero, &s->h, sizeof(s->h), add_series))
			return -ENOMEM;
	}
	for (size_t i = 0; i < ncauses; i++) {
		struct ht_exit_cause_rec *c = &causes[i];
		bool from_zero = c->key.pad & HT_EXIT_ROW_F_FROM_ZERO;

		c->key.pad &= ~HT_EXIT_ROW_F_FROM_ZERO;
		if (apply_row(r, &r->causes, &c->key, sizeof(c->key), from_zero, &c->h, sizeof(c->h), add_cause))
			return -ENOMEM;
	}
	return 0;
}
