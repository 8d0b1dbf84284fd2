// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "exits/exit_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "common/grow.h"
#include "common/sorted_u32.h"
#include "common/nearest_rank.h"
#include "common/util.h"
#include "exits/vcpu_wakeups.h"
#include "hist/latency_hist.h"

/* The index's keys are pointers to keys in the series array; probes point to the caller's key. */
static size_t hash_key(long key, void *ctx)
{
	const struct ht_exit_key *k = (const struct ht_exit_key *)key;

	(void)ctx;
	/* Seeded (common/hashmap.h): keys come from files. pad is left out: it is not part of the key. */
	return (size_t)ht_hash_mix(ht_hash_u64((uint64_t)k->pid | (uint64_t)k->vcpu << 32 | (uint64_t)k->isa << 48),
				   k->reason);
}

static bool equal_key(long a, long b, void *ctx)
{
	const struct ht_exit_key *x = (const struct ht_exit_key *)a, *y = (const struct ht_exit_key *)b;

	(void)ctx;
	return x->pid == y->pid && x->vcpu == y->vcpu && x->isa == y->isa && x->reason == y->reason;
}

void ht_exit_table_init(struct ht_exit_table *t)
{
	memset(t, 0, sizeof(*t));
	ht_hashmap_init(&t->series_index, hash_key, equal_key, NULL);
	ht_exit_causes_init(&t->causes);
}

void ht_exit_table_free(struct ht_exit_table *t)
{
	free(t->series);
	free(t->threads);
	ht_hashmap_clear(&t->series_index);
	ht_exit_causes_free(&t->causes);
	ht_exit_table_init(t);
}

void ht_exit_table_reset(struct ht_exit_table *t)
{
	t->nseries = t->nthreads = 0;
	t->series_unordered = false;
	ht_hashmap_clear(&t->series_index);
	t->lost_series_full = t->lost_no_thread = t->lost_vcpu_switches = 0;
	t->share_series_over = t->share_causes_over = t->share_threads_over = 0;
	t->went_down = 0;
	ht_exit_causes_reset(&t->causes);
}

/* Indexes series [from, nseries). A table zeroed rather than initialised gets its functions here. */
static int index_from(struct ht_exit_table *t, size_t from)
{
	if (!t->series_index.hash_fn)
		ht_hashmap_init(&t->series_index, hash_key, equal_key, NULL);
	for (size_t i = from; i < t->nseries; i++)
		if (ht_hashmap_insert(&t->series_index, (long)&t->series[i].key, (long)i, HT_HASHMAP_SET, NULL, NULL))
			return -ENOMEM;
	return 0;
}

/* After the series moved (grown, sorted, shifted): every key pointer changed. */
static int reindex(struct ht_exit_table *t)
{
	ht_hashmap_clear(&t->series_index);
	int ret = index_from(t, 0);
	if (ret)
		t->nseries = 0; /* never an index that points outside the array */
	return ret;
}

/* Room for need series; the index follows if the array moved. */
static int grow_series(struct ht_exit_table *t, size_t need)
{
	const struct ht_exit_series *before = t->series;

	if (HT_GROW(t->series, t->series_cap, need, 16))
		return -ENOMEM;
	return t->series != before && t->nseries ? reindex(t) : 0;
}

int ht_exit_table_copy(struct ht_exit_table *dst, const struct ht_exit_table *src)
{
	if (HT_GROW(dst->series, dst->series_cap, src->nseries, 16) ||
	    HT_GROW(dst->threads, dst->threads_cap, src->nthreads, 16))
		return -ENOMEM;
	if (src->nseries)
		memcpy(dst->series, src->series, src->nseries * sizeof(*src->series));
	if (src->nthreads)
		memcpy(dst->threads, src->threads, src->nthreads * sizeof(*src->threads));
	dst->nseries = src->nseries;
	dst->nthreads = src->nthreads;
	dst->series_unordered = src->series_unordered;
	if (reindex(dst))
		return -ENOMEM;
	dst->lost_series_full = src->lost_series_full;
	dst->lost_no_thread = src->lost_no_thread;
	dst->lost_vcpu_switches = src->lost_vcpu_switches;
	dst->share_series_over = src->share_series_over;
	dst->share_causes_over = src->share_causes_over;
	dst->share_threads_over = src->share_threads_over;
	dst->went_down = src->went_down;
	return ht_exit_causes_copy(&dst->causes, &src->causes);
}

int ht_exit_key_cmp(const struct ht_exit_key *a, const struct ht_exit_key *b)
{
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->vcpu != b->vcpu)
		return a->vcpu < b->vcpu ? -1 : 1;
	if (a->isa != b->isa)
		return a->isa < b->isa ? -1 : 1;
	return (a->reason > b->reason) - (a->reason < b->reason);
}

/* Index of key, or where it would go in key order (*found false; only meaningful in an ordered table). */
static size_t series_index(const struct ht_exit_table *t, const struct ht_exit_key *key, bool *found)
{
	long i;

	if (ht_hashmap_find(&t->series_index, (long)key, &i)) {
		*found = true;
		return (size_t)i;
	}
	*found = false;
	if (t->series_unordered || !t->nseries || ht_exit_key_cmp(&t->series[t->nseries - 1].key, key) < 0)
		return t->nseries;
	/* A key inside the order (a new series of an earlier VM): found by bisection. */
	size_t lo = 0, hi = t->nseries;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ht_exit_key_cmp(&t->series[mid].key, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* A zero series of key at i (where series_index put it). */
static struct ht_exit_series *insert_series(struct ht_exit_table *t, size_t i, const struct ht_exit_key *key)
{
	if (grow_series(t, t->nseries + 1))
		return NULL;
	bool shift = i < t->nseries;
	if (shift)
		memmove(&t->series[i + 1], &t->series[i], (t->nseries - i) * sizeof(*t->series));
	t->nseries++;
	memset(&t->series[i], 0, sizeof(t->series[i]));
	t->series[i].key = *key;
	t->series[i].key.pad = 0;
	t->series[i].minmax_exact = true;
	/*
	 * Appending indexes one series; a shift moves every later one, as costly
	 * as the move itself. Those come from BPF in key order, so only a series
	 * new since the last read shifts; a file's blocks use the any-order path.
	 */
	if (shift) {
		if (reindex(t))
			return NULL; /* reindex emptied the table */
	} else if (index_from(t, i)) {
		t->nseries = i;
		return NULL;
	}
	return &t->series[i];
}

struct ht_exit_series *ht_exit_table_series(struct ht_exit_table *t, const struct ht_exit_key *key, bool create)
{
	bool found;
	size_t i = series_index(t, key, &found);

	if (found)
		return &t->series[i];
	return create ? insert_series(t, i, key) : NULL;
}

struct ht_exit_series *ht_exit_table_series_any_order(struct ht_exit_table *t, const struct ht_exit_key *key)
{
	long i;

	if (ht_hashmap_find(&t->series_index, (long)key, &i))
		return &t->series[i];
	if (t->nseries && ht_exit_key_cmp(&t->series[t->nseries - 1].key, key) > 0)
		t->series_unordered = true;
	return insert_series(t, t->nseries, key);
}

int ht_exit_table_series_moved(struct ht_exit_table *t)
{
	return reindex(t);
}

static int cmp_series(const void *a, const void *b)
{
	return ht_exit_key_cmp(&((const struct ht_exit_series *)a)->key, &((const struct ht_exit_series *)b)->key);
}

int ht_exit_table_sort(struct ht_exit_table *t)
{
	if (!t->series_unordered)
		return 0;
	qsort(t->series, t->nseries, sizeof(*t->series), cmp_series);
	t->series_unordered = false;
	return reindex(t);
}

static int thread_cmp(const struct ht_vcpu_thread_row *r, uint32_t tid, uint64_t start_ns)
{
	if (r->w.tid != tid)
		return r->w.tid < tid ? -1 : 1;
	return (r->a.start_ns > start_ns) - (r->a.start_ns < start_ns);
}

static size_t thread_index(const struct ht_exit_table *t, uint32_t tid, uint64_t start_ns, bool *found)
{
	size_t lo = 0, hi = t->nthreads;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = thread_cmp(&t->threads[mid], tid, start_ns);

		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

struct ht_vcpu_thread_row *ht_exit_table_thread(struct ht_exit_table *t, uint32_t tid, uint64_t start_ns, bool create)
{
	bool found;
	size_t i = thread_index(t, tid, start_ns, &found);

	if (found)
		return &t->threads[i];
	if (!create || HT_GROW(t->threads, t->threads_cap, t->nthreads + 1, 16))
		return NULL;
	memmove(&t->threads[i + 1], &t->threads[i], (t->nthreads - i) * sizeof(*t->threads));
	t->nthreads++;
	memset(&t->threads[i], 0, sizeof(t->threads[i]));
	t->threads[i].w.tid = tid;
	t->threads[i].a.start_ns = start_ns;
	t->threads[i].from_ns = start_ns;
	return &t->threads[i];
}

static int key_order(const struct ht_vcpu_thread_key *x, const struct ht_vcpu_thread_key *y)
{
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

static int cmp_thread_keys(const void *a, const void *b)
{
	return key_order(a, b);
}

int ht_exit_table_threads(struct ht_exit_table *t, const struct ht_vcpu_thread_key *keys, size_t n,
			  struct ht_vcpu_thread_row **rows)
{
	struct ht_vcpu_thread_key *missing = n ? malloc(n * sizeof(*missing)) : NULL;
	size_t nmissing = 0, m = 0;
	bool found;

	if (n && !missing)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		thread_index(t, keys[i].tid, keys[i].start_ns, &found);
		if (!found)
			missing[nmissing++] = keys[i];
	}
	qsort(missing, nmissing, sizeof(*missing), cmp_thread_keys);
	for (size_t i = 0; i < nmissing; i++)
		if (!m || key_order(&missing[m - 1], &missing[i]))
			missing[m++] = missing[i];
	if (HT_GROW(t->threads, t->threads_cap, t->nthreads + m, 16)) {
		free(missing);
		return -ENOMEM;
	}
	/* One merge from the back: every row moves once, whatever the order of the keys. */
	size_t a = t->nthreads, b = m, out = t->nthreads + m;
	while (b > 0) {
		if (a > 0 && thread_cmp(&t->threads[a - 1], missing[b - 1].tid, missing[b - 1].start_ns) > 0) {
			t->threads[--out] = t->threads[--a];
			continue;
		}
		struct ht_vcpu_thread_row *r = &t->threads[--out];
		memset(r, 0, sizeof(*r));
		b--;
		r->w.tid = missing[b].tid;
		r->a.start_ns = missing[b].start_ns;
		r->from_ns = missing[b].start_ns;
	}
	t->nthreads += m;
	free(missing);
	for (size_t i = 0; i < n; i++)
		rows[i] = &t->threads[thread_index(t, keys[i].tid, keys[i].start_ns, &found)];
	return 0;
}

int ht_exit_table_set_series(struct ht_exit_table *t, const struct ht_exit_key *key, const struct ht_exit_hist *h)
{
	struct ht_exit_series *s = ht_exit_table_series(t, key, true);

	if (!s)
		return -ENOMEM;
	if (s->h.count != h->count || s->h.total_ns != h->total_ns)
		s->changed = true;
	s->h = *h;
	s->minmax_exact = true;
	return 0;
}

int ht_exit_table_set_thread(struct ht_exit_table *t, const struct ht_vcpu_wait *w, const struct ht_vcpu_account *a,
			     const struct ht_vcpu_halts *h, bool gone)
{
	struct ht_vcpu_thread_row *r = ht_exit_table_thread(t, w->tid, a->start_ns, true);
	const struct ht_vcpu_halts none = { .poll_ns = HT_HALT_POLL_NS_UNKNOWN };

	if (!r)
		return -ENOMEM;
	if (!h)
		h = &none;
	if (memcmp(&r->w, w, sizeof(*w)) || memcmp(&r->a, a, sizeof(*a)) || memcmp(&r->h, h, sizeof(*h)) ||
	    r->gone != gone)
		r->changed = true;
	r->w = *w;
	r->a = *a;
	r->h = *h;
	r->from_ns = a->start_ns;
	r->gone = gone;
	return 0;
}

void ht_exit_table_clear_changed(struct ht_exit_table *t)
{
	for (size_t i = 0; i < t->nseries; i++)
		t->series[i].changed = false;
	for (size_t i = 0; i < t->nthreads; i++)
		t->threads[i].changed = false;
	ht_exit_causes_clear_changed(&t->causes);
}

int ht_exit_table_forget(struct ht_exit_table *t, const uint32_t *pids, size_t n, struct ht_exit_forgotten *out)
{
	struct ht_exit_forgotten none = { 0 }, *f = out ? out : &none;
	size_t kept = 0;

	if (!n)
		return 0;
	f->vms += n;
	for (size_t i = 0; i < t->nseries; i++) {
		const struct ht_exit_series *s = &t->series[i];

		if (ht_u32_listed(pids, n, s->key.pid)) {
			f->series++;
			f->exits += s->h.count;
			continue;
		}
		if (kept != i)
			t->series[kept] = *s;
		kept++;
	}
	bool moved = kept != t->nseries;

	t->nseries = kept;
	kept = 0;
	/* Sorted by (tid, start) stays sorted with rows taken out. */
	for (size_t i = 0; i < t->nthreads; i++) {
		const struct ht_vcpu_thread_row *r = &t->threads[i];

		if (ht_u32_listed(pids, n, r->w.pid)) {
			f->threads++;
			f->irqs_delivered += ht_irqs_delivered(&r->irqs);
			continue;
		}
		if (kept != i)
			t->threads[kept] = *r;
		kept++;
	}
	t->nthreads = kept;
	int ret = moved ? reindex(t) : 0;

	return ret ? ret : ht_exit_causes_forget(&t->causes, pids, n, &f->causes);
}

/* The interval's min and max from its buckets. */
static void minmax_from_slots(struct ht_exit_hist *h)
{
	int lo = -1, hi = -1;

	for (int k = 0; k < HT_EXIT_SLOTS; k++) {
		if (!h->slots[k])
			continue;
		if (lo < 0)
			lo = k;
		hi = k;
	}
	h->min_ns = lo < 0 ? 0 : ht_exit_slot_low((unsigned int)lo);
	h->max_ns = hi < 0 ? 0 : ht_exit_slot_high((unsigned int)hi);
}

/* a - b, or 0 (counted in *went_down) if the number went down: never a wrapped difference. */
int ht_exit_table_delta(struct ht_exit_table *out, const struct ht_exit_table *now,
			const struct ht_exit_table *before)
{
	uint64_t *down = &out->went_down;

	ht_exit_table_reset(out);
	out->lost_series_full = ht_sub_or_count(now->lost_series_full, before->lost_series_full, down);
	out->lost_no_thread = ht_sub_or_count(now->lost_no_thread, before->lost_no_thread, down);
	out->lost_vcpu_switches = ht_sub_or_count(now->lost_vcpu_switches, before->lost_vcpu_switches, down);
	out->share_series_over = ht_sub_or_count(now->share_series_over, before->share_series_over, down);
	out->share_causes_over = ht_sub_or_count(now->share_causes_over, before->share_causes_over, down);
	out->share_threads_over = ht_sub_or_count(now->share_threads_over, before->share_threads_over, down);
	for (size_t i = 0; i < now->nseries; i++) {
		const struct ht_exit_series *n = &now->series[i];
		bool found;
		size_t j = series_index(before, &n->key, &found);
		const struct ht_exit_series *b = found ? &before->series[j] : NULL;

		if (b && n->h.count == b->h.count && n->in_host_at_end == b->in_host_at_end)
			continue;
		struct ht_exit_series *d = ht_exit_table_series_any_order(out, &n->key);
		if (!d)
			return -ENOMEM;
		*d = *n;
		d->changed = true;
		if (!b || !b->h.count)
			continue; /* everything of this series is in the interval: min/max as they are */
		d->h.count = ht_sub_or_count(n->h.count, b->h.count, down);
		d->h.total_ns = ht_sub_or_count(n->h.total_ns, b->h.total_ns, down);
		for (int k = 0; k < HT_EXIT_SLOTS; k++)
			d->h.slots[k] = ht_sub_or_count(n->h.slots[k], b->h.slots[k], down);
		d->in_host_at_end = ht_sub_or_count(n->in_host_at_end, b->in_host_at_end, down);
		d->minmax_exact = false;
		minmax_from_slots(&d->h);
	}
	for (size_t i = 0; i < now->nthreads; i++) {
		const struct ht_vcpu_thread_row *n = &now->threads[i];
		bool found;
		size_t j = thread_index(before, n->w.tid, n->a.start_ns, &found);
		const struct ht_vcpu_thread_row *b = found ? &before->threads[j] : NULL;

		if (b && !memcmp(&n->w, &b->w, sizeof(n->w)) && !memcmp(&n->a, &b->a, sizeof(n->a)) &&
		    !memcmp(&n->h, &b->h, sizeof(n->h)) && !memcmp(&n->irqs, &b->irqs, sizeof(n->irqs)) &&
		    !memcmp(&n->due, &b->due, sizeof(n->due)))
			continue;
		struct ht_vcpu_thread_row *d = ht_exit_table_thread(out, n->w.tid, n->a.start_ns, true);
		if (!d)
			return -ENOMEM;
		*d = *n;
		d->changed = true;
		if (!b)
			continue;
		d->w.wait_ns = ht_sub_or_count(n->w.wait_ns, b->w.wait_ns, down);
		d->w.preempt_count = ht_sub_or_count(n->w.preempt_count, b->w.preempt_count, down);
		d->w.preempt_ns = ht_sub_or_count(n->w.preempt_ns, b->w.preempt_ns, down);
		d->w.voluntary_count = ht_sub_or_count(n->w.voluntary_count, b->w.voluntary_count, down);
		d->w.voluntary_ns = ht_sub_or_count(n->w.voluntary_ns, b->w.voluntary_ns, down);
		/* The interval's account: from the time the before table's ended. */
		d->from_ns = b->a.as_of_ns <= n->a.as_of_ns ? b->a.as_of_ns : n->a.as_of_ns;
		for (int k = 0; k < HT_VCPU_NSTATES; k++)
			d->a.state_ns[k] = ht_sub_or_count(n->a.state_ns[k], b->a.state_ns[k], down);
		/* The interval's halts; the polling in force is the end's. */
		d->h.halts = ht_sub_or_count(n->h.halts, b->h.halts, down);
		d->h.polled = ht_sub_or_count(n->h.polled, b->h.polled, down);
		d->h.caught = ht_sub_or_count(n->h.caught, b->h.caught, down);
		d->h.caught_ns = ht_sub_or_count(n->h.caught_ns, b->h.caught_ns, down);
		d->h.slept = ht_sub_or_count(n->h.slept, b->h.slept, down);
		d->h.slept_ns = ht_sub_or_count(n->h.slept_ns, b->h.slept_ns, down);
		d->h.slept_poll_ns = ht_sub_or_count(n->h.slept_poll_ns, b->h.slept_poll_ns, down);
		d->h.poll_unknown = (__u32)ht_sub_or_count(n->h.poll_unknown, b->h.poll_unknown, down);
		ht_wakeups_sub(&d->h.wake, &n->h.wake, &b->h.wake, down);
		ht_irqs_sub(&d->irqs, &n->irqs, &b->irqs, down);
		ht_timer_due_sub(&d->due, &n->due, &b->due, down);
	}
	if (ht_exit_causes_delta(&out->causes, &now->causes, &before->causes))
		return -ENOMEM;
	out->went_down += out->causes.went_down;
	return 0;
}

uint64_t ht_exit_percentile(const struct ht_exit_series *s, double p)
{
	uint64_t cum = 0;

	if (!s->h.count)
		return 0;
	uint64_t rank = ht_nearest_rank(p, s->h.count);
	for (unsigned int k = 0; k < HT_EXIT_SLOTS; k++) {
		cum = ht_sat_add(cum, s->h.slots[k]);
		if (cum >= rank) {
			uint64_t bound = ht_exit_slot_high(k);
			if (!s->minmax_exact)
				return bound;
			/* Exact min and max bound every exit: a percentile never lies outside them. */
			return bound > s->h.max_ns ? s->h.max_ns : bound < s->h.min_ns ? s->h.min_ns : bound;
		}
	}
	return s->h.max_ns;
}

uint64_t ht_exit_min(const struct ht_exit_series *s)
{
	return s->h.min_ns;
}

uint64_t ht_exit_max(const struct ht_exit_series *s)
{
	return s->h.max_ns;
}

void ht_exit_series_add(struct ht_exit_series *sum, const struct ht_exit_series *s)
{
	if (s->h.count && !s->minmax_exact)
		sum->minmax_exact = false;
	ht_exit_hist_add(&sum->h, &s->h);
	sum->in_host_at_end = ht_sat_add(sum->in_host_at_end, s->in_host_at_end);
}

uint64_t ht_vcpu_account_span(const struct ht_vcpu_thread_row *r)
{
	uint64_t sum = 0;

	for (int k = 0; k < HT_VCPU_NSTATES; k++)
		sum = ht_sat_add(sum, r->a.state_ns[k]);
	return sum;
}

int ht_exit_series_ptr_cmp(const void *a, const void *b)
{
	return ht_exit_key_cmp(&(*(const struct ht_exit_series *const *)a)->key,
			       &(*(const struct ht_exit_series *const *)b)->key);
}

int ht_vcpu_thread_ptr_cmp_by_vm(const void *a, const void *b)
{
	const struct ht_vcpu_thread_row *x = *(const struct ht_vcpu_thread_row *const *)a;
	const struct ht_vcpu_thread_row *y = *(const struct ht_vcpu_thread_row *const *)b;

	if (x->w.pid != y->w.pid)
		return x->w.pid < y->w.pid ? -1 : 1;
	if (x->w.tid != y->w.tid)
		return x->w.tid < y->w.tid ? -1 : 1;
	return (x->a.start_ns > y->a.start_ns) - (x->a.start_ns < y->a.start_ns);
}
