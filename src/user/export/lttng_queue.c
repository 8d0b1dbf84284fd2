// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert --lttng, the queue that puts events in time order
 * (lttng_private.h): a min-heap keyed by time, each event written to its
 * stream once no later record can precede it; leaving it, a host event
 * updates which thread runs on its CPU, and a mark does what it says.
 */
#include "export/lttng_private.h"

#include <assert.h>
#include <errno.h>
#include <string.h>
#include "common/errf.h"
#include "common/grow.h"

static bool before(const struct pending *a, const struct pending *b)
{
	return a->ts < b->ts || (a->ts == b->ts && a->seq < b->seq);
}

static void swap(struct pending *a, struct pending *b)
{
	struct pending t = *a;
	*a = *b;
	*b = t;
}

int lt_push_switch(struct ht_lttng_export *x, struct ht_lttng_trace *trace, uint32_t cpu, uint64_t ts, int id,
		   const struct ht_lttng_ctx *ctx, const struct ht_lttng_ctx *next, const struct payload *p)
{
	struct pending *e;
	size_t i;

	/* Every payload is built below its limit (the largest, sched_switch, takes 56 bytes). */
	assert(p->len <= HT_LTTNG_MAX_PAYLOAD);
	if (HT_GROW(x->heap, x->cap, x->npending + 1, 1024))
		return -ENOMEM;
	i = x->npending++;
	e = &x->heap[i];
	e->ts = ts;
	e->seq = x->seq++;
	e->trace = trace;
	e->cpu = cpu;
	e->id = id;
	e->ctx = *ctx;
	if (next)
		e->next = *next;
	e->mark = MARK_NONE;
	e->len = (uint8_t)p->len;
	memcpy(e->payload, p->buf, p->len);
	while (i && before(&x->heap[i], &x->heap[(i - 1) / 2])) {
		swap(&x->heap[i], &x->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	return 0;
}

int lt_push(struct ht_lttng_export *x, struct ht_lttng_trace *trace, uint32_t cpu, uint64_t ts, int id,
	    const struct ht_lttng_ctx *ctx, const struct payload *p)
{
	return lt_push_switch(x, trace, cpu, ts, id, ctx, NULL, p);
}

/* Marks the event pushed last (found by its seq: it sifted up from the end of the heap). */
void lt_mark_last_pushed(struct ht_lttng_export *x, enum mark mark)
{
	for (size_t j = x->npending; j-- > 0;)
		if (x->heap[j].seq == x->seq - 1) {
			x->heap[j].mark = (uint8_t)mark;
			return;
		}
}

/* Writes the earliest waiting event to its stream. */
static int pop(struct ht_lttng_export *x, char *err, size_t errlen)
{
	struct pending top = x->heap[0];
	size_t i = 0;
	int ret;

	x->heap[0] = x->heap[--x->npending];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < x->npending && before(&x->heap[l], &x->heap[m]))
			m = l;
		if (r < x->npending && before(&x->heap[r], &x->heap[m]))
			m = r;
		if (m == i)
			break;
		swap(&x->heap[i], &x->heap[m]);
		i = m;
	}
	if (top.mark == MARK_RESTATE)
		return lt_write_restatement(x, top.cpu, top.ts, err, errlen);
	if (top.trace == x->host) {
		bool switched = top.id == x->hcls.sched_switch;
		if ((ret = lt_thread_runs(x, top.cpu, top.ts, switched ? &top.next : &top.ctx, switched, err, errlen)))
			return ret;
	}
	ret = ht_lttng_trace_event(top.trace, top.cpu, top.ts, top.id, &top.ctx, top.payload, top.len, err, errlen);
	if (ret >= 0 && top.mark == MARK_FIRST_LINK && lt_queue_restatements(x, top.ts))
		return ht_errf(err, errlen, "out of memory");
	return ret < 0 ? ret : 0;
}

/* Writes what no later record can precede (all of it with drain). */
int lt_release(struct ht_lttng_export *x, bool drain, char *err, size_t errlen)
{
	int ret = 0;

	while (!ret && x->npending &&
	       (drain || x->npending > ORDER_MAX_PENDING || x->heap[0].ts + ORDER_WINDOW_NS < x->last_entry_ns))
		ret = pop(x, err, errlen);
	return ret;
}

/*
 * An event at ts that came in the records' entry order: the trace's span
 * takes it in, the queue may move on to it, and writes what it can.
 */
int lt_release_after(struct ht_lttng_export *x, uint64_t ts, char *err, size_t errlen)
{
	if (ts < x->first_ns)
		x->first_ns = ts;
	if (ts > x->last_ns)
		x->last_ns = ts;
	if (ts > x->last_entry_ns)
		x->last_entry_ns = ts;
	return lt_release(x, false, err, errlen);
}
