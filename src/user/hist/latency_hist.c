// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Log2 histograms, exact percentiles and the per-group series set (see latency_hist.h). */
#include "hist/latency_hist.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "common/nearest_rank.h"
#include "common/util.h"
#include "common/grow.h"

unsigned int ht_hist_slot(uint64_t ns)
{
	/* 0 and 1 share slot 0, as with libbpf-tools' log2l(). */
	return ns ? 63u - (unsigned int)__builtin_clzll(ns) : 0u;
}

uint64_t ht_hist_slot_low(unsigned int slot)
{
	if (slot == 0)
		return 0;
	if (slot >= HT_HIST_SLOTS)
		return UINT64_MAX;
	return 1ull << slot;
}

uint64_t ht_hist_slot_high(unsigned int slot)
{
	/* Slot 63's high bound is UINT64_MAX: 1 << 64 would be undefined. */
	if (slot >= HT_HIST_SLOTS - 1)
		return UINT64_MAX;
	return (1ull << (slot + 1)) - 1;
}

void ht_hist_reset(struct ht_hist *h)
{
	memset(h, 0, sizeof(*h));
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

void ht_hist_add(struct ht_hist *h, uint64_t ns)
{
	h->slots[ht_hist_slot(ns)]++;
	if (h->nvalues == 0 || ns < h->min)
		h->min = ns;
	if (h->nvalues == 0 || ns > h->max)
		h->max = ns;
	h->nvalues++;
	h->count++;
	h->sum = sat_add(h->sum, ns);
}

void ht_hist_add_slots(struct ht_hist *h, const uint64_t slots[HT_HIST_SLOTS])
{
	for (unsigned int i = 0; i < HT_HIST_SLOTS; i++) {
		h->slots[i] += slots[i];
		h->count += slots[i];
	}
}

void ht_hist_merge(struct ht_hist *dst, const struct ht_hist *src)
{
	ht_hist_add_slots(dst, src->slots);
	if (src->nvalues) {
		if (dst->nvalues == 0 || src->min < dst->min)
			dst->min = src->min;
		if (dst->nvalues == 0 || src->max > dst->max)
			dst->max = src->max;
		dst->nvalues += src->nvalues;
		dst->sum = sat_add(dst->sum, src->sum);
	}
}

uint64_t ht_hist_count(const struct ht_hist *h)
{
	return h->count;
}

static bool all_exact(const struct ht_hist *h)
{
	return h->nvalues == h->count;
}

struct ht_lat_value ht_hist_min(const struct ht_hist *h)
{
	if (all_exact(h))
		return (struct ht_lat_value){ h->count ? h->min : 0, true };
	for (unsigned int i = 0; i < HT_HIST_SLOTS; i++)
		if (h->slots[i])
			return (struct ht_lat_value){ ht_hist_slot_low(i), false };
	return (struct ht_lat_value){ 0, true };
}

struct ht_lat_value ht_hist_max(const struct ht_hist *h)
{
	if (all_exact(h))
		return (struct ht_lat_value){ h->count ? h->max : 0, true };
	for (unsigned int i = HT_HIST_SLOTS; i-- > 0;)
		if (h->slots[i])
			return (struct ht_lat_value){ ht_hist_slot_high(i), false };
	return (struct ht_lat_value){ 0, true };
}

bool ht_hist_sum(const struct ht_hist *h, uint64_t *sum)
{
	*sum = h->sum;
	return all_exact(h);
}

struct ht_lat_value ht_hist_percentile(const struct ht_hist *h, double p)
{
	uint64_t rank, seen = 0;

	if (h->count == 0)
		return (struct ht_lat_value){ 0, true };
	rank = ht_nearest_rank(p, h->count);
	if (rank == h->count)
		return ht_hist_max(h);
	for (unsigned int i = 0; i < HT_HIST_SLOTS; i++) {
		seen += h->slots[i];
		if (seen >= rank) {
			uint64_t high = ht_hist_slot_high(i);

			if (all_exact(h) && h->max < high)
				high = h->max;
			return (struct ht_lat_value){ high, false };
		}
	}
	return ht_hist_max(h); /* unreachable while count == sum of slots */
}

int ht_samples_push(struct ht_samples *s, uint64_t ns)
{
	if (HT_GROW(s->v, s->cap, s->len + 1, 256))
		return -ENOMEM;
	s->v[s->len++] = ns;
	s->sorted = false;
	return 0;
}

void ht_samples_clear(struct ht_samples *s)
{
	s->len = 0;
	s->sorted = true;
}

void ht_samples_free(struct ht_samples *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

bool ht_samples_percentile(struct ht_samples *s, double p, uint64_t *out)
{
	if (s->len == 0)
		return false;
	if (!s->sorted) {
		qsort(s->v, s->len, sizeof(*s->v), ht_cmp_u64);
		s->sorted = true;
	}
	*out = s->v[ht_nearest_rank(p, s->len) - 1];
	return true;
}

struct ht_latset {
	enum ht_lat_group_by by;
	size_t max_samples, samples_used;
	/* groups[0] is "all"; then nkeyed keyed groups sorted by key; "other" is separate. */
	size_t nkeyed;
	bool other_used;
	size_t last; /* index of the last keyed group hit: records come in runs per vCPU */
	struct ht_lat_group other;
	struct ht_lat_group groups[1 + HT_LAT_MAX_GROUPS];
};

struct ht_latset *ht_latset_new(enum ht_lat_group_by by, size_t max_samples)
{
	struct ht_latset *set = calloc(1, sizeof(*set));

	if (!set)
		return NULL;
	set->by = by;
	set->max_samples = max_samples ? max_samples : HT_LAT_DEFAULT_MAX_SAMPLES;
	set->groups[0].kind = HT_LAT_GROUP_ALL;
	set->other.kind = HT_LAT_GROUP_OTHER;
	return set;
}

static void group_free(struct ht_lat_group *g)
{
	for (int s = 0; s < HT_LAT_NSERIES; s++)
		ht_samples_free(&g->series[s].samples);
}

void ht_latset_free(struct ht_latset *set)
{
	if (!set)
		return;
	for (size_t i = 0; i <= set->nkeyed; i++)
		group_free(&set->groups[i]);
	group_free(&set->other);
	free(set);
}

enum ht_lat_group_by ht_latset_group_by(const struct ht_latset *set)
{
	return set->by;
}

static uint64_t group_key(enum ht_lat_group_by by, uint32_t host_pid, uint16_t vcpu_id)
{
	return by == HT_LAT_BY_VCPU ? (uint64_t)host_pid << 16 | vcpu_id : host_pid;
}

/* The keyed group of a record, created on first sight; "other" when full. */
static struct ht_lat_group *find_group(struct ht_latset *set, uint32_t host_pid, uint16_t vcpu_id)
{
	uint64_t key = group_key(set->by, host_pid, vcpu_id);
	size_t lo = 1, hi = set->nkeyed + 1; /* binary search in groups[1..nkeyed] */
	struct ht_lat_group *g;

	if (set->last && set->groups[set->last].key == key)
		return &set->groups[set->last];
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (set->groups[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo <= set->nkeyed && set->groups[lo].key == key) {
		set->last = lo;
		return &set->groups[lo];
	}
	if (set->nkeyed == HT_LAT_MAX_GROUPS) {
		set->other_used = true;
		return &set->other;
	}
	/* At most HT_LAT_MAX_GROUPS inserts per set: moving the tail is fine. */
	memmove(&set->groups[lo + 1], &set->groups[lo],
		(set->nkeyed + 1 - lo) * sizeof(set->groups[0]));
	set->nkeyed++;
	g = &set->groups[lo];
	memset(g, 0, sizeof(*g));
	g->kind = HT_LAT_GROUP_KEY;
	g->key = key;
	g->host_pid = host_pid;
	g->vcpu_id = set->by == HT_LAT_BY_VCPU ? vcpu_id : 0;
	set->last = lo;
	return g;
}

static void series_add(struct ht_latset *set, struct ht_lat_series *s, uint64_t ns)
{
	ht_hist_add(&s->interval, ns);
	ht_hist_add(&s->cumulative, ns);
	/*
	 * A series keeps samples only while it has all of its interval's values:
	 * once one is missing its percentiles are bucket bounds anyway.
	 */
	if (s->samples.len + 1 != s->interval.count)
		return;
	if (set->samples_used >= set->max_samples || ht_samples_push(&s->samples, ns) < 0)
		return;
	set->samples_used++;
}

static void group_add_record(struct ht_latset *set, struct ht_lat_group *g,
			     const struct ht_record *rec)
{
	uint64_t e2h = rec->exit_to_hcall_ns, h2e = rec->hcall_to_entry_ns;

	series_add(set, &g->series[HT_LAT_TOTAL], e2h + h2e);
	series_add(set, &g->series[HT_LAT_EXIT_HCALL], e2h);
	series_add(set, &g->series[HT_LAT_HCALL_ENTRY], h2e);
}

void ht_latset_add_record(struct ht_latset *set, const struct ht_record *rec)
{
	group_add_record(set, &set->groups[0], rec);
	if (set->by != HT_LAT_BY_NONE) {
		struct ht_lat_group *g = find_group(set, rec->host_pid, rec->vcpu_id);

		if (set->by == HT_LAT_BY_VCPU && !g->host_tid)
			g->host_tid = rec->host_tid; /* a vCPU is one thread of its VM process */
		group_add_record(set, g, rec);
	}
}

static void series_add_slots(struct ht_lat_series *s, const uint64_t slots[HT_HIST_SLOTS])
{
	ht_hist_add_slots(&s->interval, slots);
	ht_hist_add_slots(&s->cumulative, slots);
}

void ht_latset_add_slots(struct ht_latset *set, enum ht_lat_series_id series, uint32_t host_pid,
			 uint16_t vcpu_id, const uint64_t slots[HT_HIST_SLOTS])
{
	if ((unsigned int)series >= HT_LAT_NSERIES)
		return;
	series_add_slots(&set->groups[0].series[series], slots);
	if (set->by != HT_LAT_BY_NONE)
		series_add_slots(&find_group(set, host_pid, vcpu_id)->series[series], slots);
}

static void group_next_interval(struct ht_lat_group *g)
{
	for (int i = 0; i < HT_LAT_NSERIES; i++) {
		struct ht_lat_series *s = &g->series[i];

		/* Give back what a past burst grew and this interval did not need. */
		if (s->samples.cap > 4096 && s->samples.len < s->samples.cap / 4)
			ht_samples_free(&s->samples);
		ht_samples_clear(&s->samples);
		ht_hist_reset(&s->interval);
	}
}

void ht_latset_next_interval(struct ht_latset *set)
{
	for (size_t i = 0; i <= set->nkeyed; i++)
		group_next_interval(&set->groups[i]);
	group_next_interval(&set->other);
	set->samples_used = 0;
}

size_t ht_latset_ngroups(const struct ht_latset *set)
{
	return 1 + set->nkeyed + (set->other_used ? 1 : 0);
}

struct ht_lat_group *ht_latset_group(struct ht_latset *set, size_t i)
{
	if (i <= set->nkeyed)
		return &set->groups[i];
	if (i == set->nkeyed + 1 && set->other_used)
		return &set->other;
	return NULL;
}

const struct ht_hist *ht_lat_series_hist(const struct ht_lat_series *s, enum ht_lat_view view)
{
	return view == HT_LAT_CUMULATIVE ? &s->cumulative : &s->interval;
}

void ht_lat_series_stats(struct ht_lat_series *s, enum ht_lat_view view, struct ht_lat_stats *out)
{
	const struct ht_hist *h = ht_lat_series_hist(s, view);
	static const double pct[3] = { 50, 90, 99 };
	struct ht_lat_value *dst[3] = { &out->p50, &out->p90, &out->p99 };

	out->count = h->count;
	out->max = ht_hist_max(h);
	for (int i = 0; i < 3; i++) {
		uint64_t v;

		if (view == HT_LAT_INTERVAL && h->count && s->samples.len == h->count &&
		    ht_samples_percentile(&s->samples, pct[i], &v))
			*dst[i] = (struct ht_lat_value){ v, true };
		else
			*dst[i] = ht_hist_percentile(h, pct[i]);
	}
}
