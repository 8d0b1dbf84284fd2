// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "decode/guest_trace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "common/grow.h"
#include "hypertrace/guest.h"

/* The bytes a trace_line and a trace_text carry (guest.h). */
#define HEAD_TEXT 8u
#define CHUNK_TEXT 24u

void ht_guest_traces_init(struct ht_guest_traces *t)
{
	memset(t, 0, sizeof(*t));
	ht_hashmap_init(&t->by_pid, ht_hash_long, ht_equal_long, NULL);
}

static void free_lines(struct ht_guest_trace *g)
{
	for (size_t i = 0; i < g->nlines; i++)
		free(g->lines[i].text);
	free(g->lines);
	g->lines = NULL;
	g->nlines = g->lines_cap = 0;
}

void ht_guest_traces_free(struct ht_guest_traces *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free_lines(&t->vms[i]);
		free(t->vms[i].pairs);
		free(t->vms[i].recs);
	}
	free(t->vms);
	ht_hashmap_clear(&t->by_pid);
	memset(t, 0, sizeof(*t));
}

bool ht_guest_trace_nr(uint32_t nr)
{
	return nr == HT_GUEST_NR_TRACE_LINE || nr == HT_GUEST_NR_TRACE_TEXT || nr == HT_GUEST_NR_TRACE_REPLAY;
}

int ht_guest_traces_add(struct ht_guest_traces *t, const struct ht_record *r)
{
	struct ht_guest_trace *g;
	long idx;

	if (!ht_guest_trace_nr(r->nr))
		return 0;
	if (!ht_hashmap_find(&t->by_pid, r->host_pid, &idx)) {
		if (HT_GROW(t->vms, t->cap, t->n + 1, 4))
			return -ENOMEM;
		idx = (long)t->n;
		if (ht_hashmap_insert(&t->by_pid, r->host_pid, idx, HT_HASHMAP_ADD, NULL, NULL))
			return -ENOMEM;
		memset(&t->vms[t->n], 0, sizeof(t->vms[0]));
		t->vms[t->n++].host_pid = r->host_pid;
	}
	g = &t->vms[idx];
	if (HT_GROW(g->recs, g->recs_cap, g->nrecs + 1, 64))
		return -ENOMEM;
	g->recs[g->nrecs] = (struct ht_guest_trace_rec){ .rec = *r, .order = g->nrecs };
	g->nrecs++;
	return 0;
}

static int by_exit(const void *a, const void *b)
{
	const struct ht_guest_trace_rec *x = a, *y = b;

	if (x->rec.exit_ns != y->rec.exit_ns)
		return x->rec.exit_ns < y->rec.exit_ns ? -1 : 1;
	/* Equal times: the order read. */
	return (x->order > y->order) - (x->order < y->order);
}

static void put_word(char *dst, uint64_t v, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		dst[i] = (char)(v >> (8 * i));
}

/* Appends up to n bytes (of words w[0..]) at the line's end, as far as its length allows. */
static int append_text(struct ht_trace_line *l, const uint64_t *w, uint32_t n)
{
	uint32_t room = l->len - l->have, take = n < room ? n : room;
	char buf[CHUNK_TEXT];
	char *grown;

	if (!take)
		return 0;
	for (uint32_t i = 0; i * 8 < take; i++)
		put_word(buf + 8 * i, w[i], 8);
	if (!(grown = realloc(l->text, l->have + take + 1)))
		return -ENOMEM;
	l->text = grown;
	memcpy(l->text + l->have, buf, take);
	l->have += take;
	l->text[l->have] = '\0';
	return 0;
}

static int take_line(struct ht_guest_trace *g, const struct ht_record *r)
{
	struct ht_trace_line *l;
	uint32_t len = (uint32_t)(r->a1 >> 48);

	if (HT_GROW(g->lines, g->lines_cap, g->nlines + 1, 64))
		return -ENOMEM;
	l = &g->lines[g->nlines++];
	*l = (struct ht_trace_line){
		.guest_ns = r->a0,
		.sent_ns = r->exit_ns,
		.seq = (uint32_t)r->a1,
		.cpu = (uint32_t)(r->a1 >> 32) & 0xffffu,
		.tid = (uint32_t)r->a2,
		.cut = (r->a2 >> 32 & 0xff) != 0,
		.len = len > HT_GUEST_TRACE_TEXT_MAX ? HT_GUEST_TRACE_TEXT_MAX : len,
	};
	if (len > HT_GUEST_TRACE_TEXT_MAX)
		l->cut = true;
	if (!(l->text = calloc(1, 1)))
		return -ENOMEM;
	uint64_t head = r->a3;
	return append_text(l, &head, HEAD_TEXT);
}

/* A piece of text belongs to the last line, at its end, in order; else it is stray. */
static int take_text(struct ht_guest_trace *g, const struct ht_record *r)
{
	struct ht_trace_line *l = g->nlines ? &g->lines[g->nlines - 1] : NULL;
	uint64_t w[3] = { r->a1, r->a2, r->a3 };

	if (!l || l->seq != (uint32_t)r->a0 || (uint32_t)(r->a0 >> 32 & 0xffff) != l->have || l->have >= l->len) {
		g->stray++;
		return 0;
	}
	return append_text(l, w, CHUNK_TEXT);
}

struct sync {
	uint32_t seq;
	uint64_t host_ns;
};

static int take_replay(struct ht_guest_trace *g, const struct ht_record *r, struct ht_hashmap *syncs)
{
	uint32_t run = (uint32_t)r->a0;

	switch ((uint32_t)(r->a0 >> 32) & 0xffu) {
	case HT_GUEST_REPLAY_BEGIN:
		/* A new replay: the last one begun is kept whole. */
		free_lines(g);
		ht_hashmap_clear(syncs);
		g->since_ns = r->exit_ns;
		g->run = run;
		g->runs++;
		g->ended = false;
		g->stray = g->syncs = 0;
		break;
	case HT_GUEST_REPLAY_SYNC:
		if (run != g->run)
			break;
		g->syncs++;
		/* The first sync of a seq counts (a repeated one: -EEXIST); the host's time is its exit. */
		if (ht_hashmap_insert(syncs, (long)(uint32_t)r->a1, (long)r->exit_ns, HT_HASHMAP_ADD, NULL, NULL) == -ENOMEM)
			return -ENOMEM;
		break;
	case HT_GUEST_REPLAY_END:
		if (run != g->run)
			break;
		g->ended = true;
		g->said_lines = (uint32_t)r->a2;
		g->said_unparsed = r->a2 >> 32;
		g->said_cut = (uint32_t)r->a3;
		g->said_lost = r->a3 >> 32;
		break;
	}
	return 0;
}

/* "tracing_mark_write: hypertrace-sync RUN SEQ": its RUN and SEQ. */
static bool marker_of(const struct ht_trace_line *l, uint32_t *run, uint32_t *seq)
{
	static const char head[] = "tracing_mark_write: " HT_GUEST_SYNC_MARKER " ";
	unsigned long long a, b;
	char *end;

	if (l->have < sizeof(head) - 1 || memcmp(l->text, head, sizeof(head) - 1))
		return false;
	const char *p = l->text + sizeof(head) - 1;
	if (*p < '0' || *p > '9')
		return false;
	a = strtoull(p, &end, 10);
	if (*end != ' ' || end[1] < '0' || end[1] > '9')
		return false;
	b = strtoull(end + 1, &end, 10);
	if ((*end && *end != ' ' && *end != '\n') || a > UINT32_MAX || b > UINT32_MAX)
		return false;
	*run = (uint32_t)a;
	*seq = (uint32_t)b;
	return true;
}

static int pair_markers(struct ht_guest_trace *g, const struct ht_hashmap *syncs)
{
	size_t cap = 0;

	for (size_t i = 0; i < g->nlines; i++) {
		uint32_t run, seq;
		long host;

		if (!marker_of(&g->lines[i], &run, &seq) || run != g->run || !ht_hashmap_find(syncs, (long)seq, &host))
			continue;
		if (HT_GROW(g->pairs, cap, g->npairs + 1, 32))
			return -ENOMEM;
		g->pairs[g->npairs++] = (struct ht_clock_pair){ .guest_ns = g->lines[i].guest_ns, .host_ns = (uint64_t)host };
	}
	return ht_clock_fit(g->pairs, g->npairs, &g->fit);
}

static int rebuild(struct ht_guest_trace *g)
{
	struct ht_hashmap syncs;
	int err = 0;

	ht_hashmap_init(&syncs, ht_hash_long, ht_equal_long, NULL);
	qsort(g->recs, g->nrecs, sizeof(g->recs[0]), by_exit);
	g->since_ns = g->nrecs ? g->recs[0].rec.exit_ns : 0;
	for (size_t i = 0; i < g->nrecs && !err; i++) {
		const struct ht_record *r = &g->recs[i].rec;

		if (r->nr == HT_GUEST_NR_TRACE_LINE)
			err = take_line(g, r);
		else if (r->nr == HT_GUEST_NR_TRACE_TEXT)
			err = take_text(g, r);
		else
			err = take_replay(g, r, &syncs);
	}
	if (!err)
		err = pair_markers(g, &syncs);
	ht_hashmap_clear(&syncs);
	free(g->recs);
	g->recs = NULL;
	g->nrecs = g->recs_cap = 0;
	return err;
}

static int by_pid(const void *a, const void *b)
{
	const struct ht_guest_trace *x = a, *y = b;

	return (x->host_pid > y->host_pid) - (x->host_pid < y->host_pid);
}

int ht_guest_traces_finish(struct ht_guest_traces *t)
{
	for (size_t i = 0; i < t->n; i++)
		if (rebuild(&t->vms[i]))
			return -ENOMEM;
	if (t->n > 1)
		qsort(t->vms, t->n, sizeof(t->vms[0]), by_pid);
	ht_hashmap_clear(&t->by_pid);
	return 0;
}

const struct ht_guest_trace *ht_guest_traces_find(const struct ht_guest_traces *t, uint32_t host_pid)
{
	struct ht_guest_trace key = { .host_pid = host_pid };

	/* Sorted by process at finish: a search, not a walk per VM. */
	return t->n ? bsearch(&key, t->vms, t->n, sizeof(t->vms[0]), by_pid) : NULL;
}

const struct ht_guest_trace *ht_guest_traces_get(const struct ht_guest_traces *t, size_t i)
{
	return i < t->n ? &t->vms[i] : NULL;
}
