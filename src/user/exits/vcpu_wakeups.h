/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The wake-ups of halted vCPU threads (struct ht_vcpu_wakeups, in their
 * halts) and the interrupts delivered to vCPU threads (struct
 * ht_vcpu_irqs), and the timer wake-ups from their due time (struct
 * ht_vcpu_timer_due), as the views read them: counts, sums, intervals and
 * percentiles of each class's log2 histogram (HT_WAKE_SLOTS). Pure.
 */
#ifndef HT_VCPU_WAKEUPS_H
#define HT_VCPU_WAKEUPS_H

#include <stdint.h>

#include "common/wake_classes.h"
#include "hypertrace/record.h"

/* A class's wake-ups: the sum of its slots. */
uint64_t ht_wake_count(const struct ht_vcpu_wake_hist *h);
/* Every class's. */
uint64_t ht_wakeups_count(const struct ht_vcpu_wakeups *w);
/* sum += w, each class's histogram and the reblocked. */
void ht_wakeups_add(struct ht_vcpu_wakeups *sum, const struct ht_vcpu_wakeups *w);
/* All classes in one histogram (the "all" row of a view). */
void ht_wakeups_all(struct ht_vcpu_wake_hist *all, const struct ht_vcpu_wakeups *w);
/*
 * d = now - before, the wake-ups in between; a count that went down (a
 * file that is not a recording's) is 0 and counted in *went_down. The
 * interval's longest is now's if it grew, else the upper bound of its
 * highest slot (no larger than now's).
 */
void ht_wakeups_sub(struct ht_vcpu_wakeups *d, const struct ht_vcpu_wakeups *now,
		    const struct ht_vcpu_wakeups *before, uint64_t *went_down);
/*
 * The p-th percentile (nearest rank) of a class: the upper bound of the slot
 * that holds it, no larger than the longest; 0 for no wake-ups.
 */
uint64_t ht_wake_percentile(const struct ht_vcpu_wake_hist *h, double p);

/* The interrupts delivered, every class's. */
uint64_t ht_irqs_delivered(const struct ht_vcpu_irqs *i);
/* All classes in one histogram (the "all" row, top's IRQ99). */
void ht_irqs_all(struct ht_vcpu_wake_hist *all, const struct ht_vcpu_irqs *i);
/* sum += i, each class's histogram and part, and the counts. */
void ht_irqs_add(struct ht_vcpu_irqs *sum, const struct ht_vcpu_irqs *i);
/* d = now - before, as ht_wakeups_sub. */
void ht_irqs_sub(struct ht_vcpu_irqs *d, const struct ht_vcpu_irqs *now, const struct ht_vcpu_irqs *before,
		 uint64_t *went_down);

/* sum += d: the timer wake-ups from their due time. */
void ht_timer_due_add(struct ht_vcpu_timer_due *sum, const struct ht_vcpu_timer_due *d);
/* d = now - before, as ht_wakeups_sub. */
void ht_timer_due_sub(struct ht_vcpu_timer_due *d, const struct ht_vcpu_timer_due *now,
		      const struct ht_vcpu_timer_due *before, uint64_t *went_down);

#endif
