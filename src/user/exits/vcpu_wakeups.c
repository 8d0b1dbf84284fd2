// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "exits/vcpu_wakeups.h"

#include "common/nearest_rank.h"
#include "common/util.h"

/* The upper bound of a slot: [2^k, 2^(k+1)); the last one has none. */
static uint64_t wake_slot_high(unsigned int k)
{
	return k >= HT_WAKE_SLOTS - 1 ? UINT64_MAX : (1ull << (k + 1)) - 1;
}

uint64_t ht_wake_count(const struct ht_vcpu_wake_hist *h)
{
	uint64_t n = 0;

	for (unsigned int k = 0; k < HT_WAKE_SLOTS; k++)
		n = ht_sat_add(n, h->slots[k]);
	return n;
}

/*
 * Wake-ups and interrupts are each a histogram per class and a few counts:
 * the per-class work is one set of functions over n histograms.
 */
static uint64_t hists_count(const struct ht_vcpu_wake_hist *c, int n)
{
	uint64_t sum = 0;

	for (int k = 0; k < n; k++)
		sum = ht_sat_add(sum, ht_wake_count(&c[k]));
	return sum;
}

uint64_t ht_wakeups_count(const struct ht_vcpu_wakeups *w)
{
	return hists_count(w->c, HT_WAKE_NCLASSES);
}

static void hist_add(struct ht_vcpu_wake_hist *sum, const struct ht_vcpu_wake_hist *h)
{
	sum->total_ns = ht_sat_add(sum->total_ns, h->total_ns);
	sum->wait_ns = ht_sat_add(sum->wait_ns, h->wait_ns);
	if (h->max_ns > sum->max_ns)
		sum->max_ns = h->max_ns;
	for (unsigned int k = 0; k < HT_WAKE_SLOTS; k++)
		sum->slots[k] = ht_sat_add(sum->slots[k], h->slots[k]);
}

static void hists_add(struct ht_vcpu_wake_hist *sum, const struct ht_vcpu_wake_hist *c, int n)
{
	for (int k = 0; k < n; k++)
		hist_add(&sum[k], &c[k]);
}

/* All classes in one histogram. */
static void hists_all(struct ht_vcpu_wake_hist *all, const struct ht_vcpu_wake_hist *c, int n)
{
	*all = (struct ht_vcpu_wake_hist){ 0 };
	for (int k = 0; k < n; k++)
		hist_add(all, &c[k]);
}

void ht_wakeups_add(struct ht_vcpu_wakeups *sum, const struct ht_vcpu_wakeups *w)
{
	hists_add(sum->c, w->c, HT_WAKE_NCLASSES);
	sum->reblocked = ht_sat_add(sum->reblocked, w->reblocked);
}

void ht_wakeups_all(struct ht_vcpu_wake_hist *all, const struct ht_vcpu_wakeups *w)
{
	hists_all(all, w->c, HT_WAKE_NCLASSES);
}

static void hist_sub(struct ht_vcpu_wake_hist *h, const struct ht_vcpu_wake_hist *n, const struct ht_vcpu_wake_hist *b,
		     uint64_t *went_down)
{
	int top = -1;

	h->total_ns = ht_sub_or_count(n->total_ns, b->total_ns, went_down);
	h->wait_ns = ht_sub_or_count(n->wait_ns, b->wait_ns, went_down);
	for (unsigned int k = 0; k < HT_WAKE_SLOTS; k++) {
		h->slots[k] = ht_sub_or_count(n->slots[k], b->slots[k], went_down);
		if (h->slots[k])
			top = (int)k;
	}
	if (n->max_ns > b->max_ns)
		h->max_ns = n->max_ns;
	else if (top < 0)
		h->max_ns = 0;
	else
		h->max_ns = wake_slot_high((unsigned int)top) < n->max_ns ? wake_slot_high((unsigned int)top) : n->max_ns;
}

static void hists_sub(struct ht_vcpu_wake_hist *d, const struct ht_vcpu_wake_hist *now,
		      const struct ht_vcpu_wake_hist *before, int n, uint64_t *went_down)
{
	for (int k = 0; k < n; k++)
		hist_sub(&d[k], &now[k], &before[k], went_down);
}

void ht_wakeups_sub(struct ht_vcpu_wakeups *d, const struct ht_vcpu_wakeups *now,
		    const struct ht_vcpu_wakeups *before, uint64_t *went_down)
{
	hists_sub(d->c, now->c, before->c, HT_WAKE_NCLASSES, went_down);
	d->reblocked = ht_sub_or_count(now->reblocked, before->reblocked, went_down);
}

uint64_t ht_irqs_delivered(const struct ht_vcpu_irqs *i)
{
	return hists_count(i->c, HT_IRQ_NCLASSES);
}

void ht_irqs_all(struct ht_vcpu_wake_hist *all, const struct ht_vcpu_irqs *i)
{
	hists_all(all, i->c, HT_IRQ_NCLASSES);
}

void ht_irqs_add(struct ht_vcpu_irqs *sum, const struct ht_vcpu_irqs *i)
{
	hists_add(sum->c, i->c, HT_IRQ_NCLASSES);
	for (int c = 0; c < HT_IRQ_NCLASSES; c++)
		sum->woken_ns[c] = ht_sat_add(sum->woken_ns[c], i->woken_ns[c]);
	sum->accepted = ht_sat_add(sum->accepted, i->accepted);
	sum->overlapped = ht_sat_add(sum->overlapped, i->overlapped);
	sum->stale = ht_sat_add(sum->stale, i->stale);
	sum->level = ht_sat_add(sum->level, i->level);
}

void ht_irqs_sub(struct ht_vcpu_irqs *d, const struct ht_vcpu_irqs *now, const struct ht_vcpu_irqs *before,
		 uint64_t *went_down)
{
	hists_sub(d->c, now->c, before->c, HT_IRQ_NCLASSES, went_down);
	for (int c = 0; c < HT_IRQ_NCLASSES; c++)
		d->woken_ns[c] = ht_sub_or_count(now->woken_ns[c], before->woken_ns[c], went_down);
	d->accepted = ht_sub_or_count(now->accepted, before->accepted, went_down);
	d->overlapped = ht_sub_or_count(now->overlapped, before->overlapped, went_down);
	d->stale = ht_sub_or_count(now->stale, before->stale, went_down);
	d->level = ht_sub_or_count(now->level, before->level, went_down);
}

void ht_timer_due_add(struct ht_vcpu_timer_due *sum, const struct ht_vcpu_timer_due *d)
{
	hist_add(&sum->h, &d->h);
	sum->fire_ns = ht_sat_add(sum->fire_ns, d->fire_ns);
}

void ht_timer_due_sub(struct ht_vcpu_timer_due *d, const struct ht_vcpu_timer_due *now,
		      const struct ht_vcpu_timer_due *before, uint64_t *went_down)
{
	hist_sub(&d->h, &now->h, &before->h, went_down);
	d->fire_ns = ht_sub_or_count(now->fire_ns, before->fire_ns, went_down);
}

uint64_t ht_wake_percentile(const struct ht_vcpu_wake_hist *h, double p)
{
	uint64_t n = ht_wake_count(h), cum = 0, rank;

	if (!n)
		return 0;
	rank = ht_nearest_rank(p, n);
	for (unsigned int k = 0; k < HT_WAKE_SLOTS; k++) {
		cum = ht_sat_add(cum, h->slots[k]);
		if (cum >= rank)
			return wake_slot_high(k) < h->max_ns ? wake_slot_high(k) : h->max_ns;
	}
	return h->max_ns;
}
