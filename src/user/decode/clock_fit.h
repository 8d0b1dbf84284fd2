/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A guest clock on the host's clock, from clock pairs: the guest's clock
 * value sent in a hypercall (the module's clock_pair, nr 1107) and the
 * host's time of that hypercall's exit. The guest reads its clock with
 * interrupts off right before the hypercall, so each pair's host time is
 * later than the read by the rest of that path (a few instructions and the
 * exit), and the fit takes the pairs' common part of that into its offset.
 *
 * Every value is the guest's, so hostile: a pair that contradicts the
 * others is refused, not fitted. Taken in the host's order, the guest's
 * clock must not go back: the longest run of pairs in which it does not is
 * kept, the rest refused as out of order. Then a straight line (offset and
 * rate) is fitted by least squares, and a pair whose residual is far from
 * the others' (beyond 8 median absolute deviations, and 10 us) is refused
 * as an outlier and the line fitted again. Time O(n log n), memory O(n).
 */
#ifndef HT_DECODE_CLOCK_FIT_H
#define HT_DECODE_CLOCK_FIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ht_clock_pair {
	uint64_t guest_ns, host_ns;
};

/* A residual beyond this many median absolute deviations of the others (and HT_CLOCK_FIT_MIN_OUTLIER_NS) is refused. */
#define HT_CLOCK_FIT_OUTLIER_MADS 8.0
#define HT_CLOCK_FIT_MIN_OUTLIER_NS 10000.0

struct ht_clock_fit {
	size_t pairs;            /* given */
	size_t used;             /* fitted */
	size_t refused_order;    /* the guest's clock went back against the host's order */
	size_t refused_outlier;  /* too far from the line of the others */
	bool has_rate;           /* two used pairs at different guest times: else the rate is 1 */
	long double rate;        /* host ns per guest ns */
	long double intercept;   /* host ns = intercept + rate * guest ns */
	/* |residual| of the used pairs, ns: host time less the line's. */
	double residual_p50, residual_p99, residual_max;
};

/*
 * Fits pairs (n of them; sorted here by host time, in place). 0, or -1 when
 * out of memory. With no pair used (n == 0), used is 0 and nothing else is
 * meaningful.
 */
int ht_clock_fit(struct ht_clock_pair *pairs, size_t n, struct ht_clock_fit *fit);

/* Where guest_ns falls on the host's clock, by fit (rounded to the ns; 0 and UINT64_MAX bound it). */
uint64_t ht_clock_fit_map(const struct ht_clock_fit *fit, uint64_t guest_ns);

/* The rate's distance from 1, in parts per million. */
double ht_clock_fit_ppm(const struct ht_clock_fit *fit);

#endif
