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
 *
 * A guest clock that stops while the host's runs on (a VM paused: its
 * kvmclock is held) or that jumps (set, or a clock that ran while the VM
 * did not) moves every later pair's offset by the same step: one line
 * through both sides would be off by half the step everywhere. So the pairs
 * are split where the offset steps between two neighbours (by more than
 * HT_CLOCK_FIT_STEP_NS and HT_CLOCK_FIT_STEP_PPM of their guest interval),
 * each side is fitted on its own, and a guest time is mapped by the side
 * that holds it. A side of fewer than HT_CLOCK_FIT_MIN_SEGMENT pairs is not
 * a step but pairs off the others' line (a vCPU preempted between its read
 * and its hypercall): refused as outliers. At most HT_CLOCK_FIT_MAX_SEGMENTS
 * sides are kept (a guest can make as many as it sends pairs); the pairs of
 * later ones are refused and counted.
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

#define HT_CLOCK_FIT_STEP_NS 10000000.0
#define HT_CLOCK_FIT_STEP_PPM 1000.0
#define HT_CLOCK_FIT_MIN_SEGMENT 3
#define HT_CLOCK_FIT_MAX_SEGMENTS 64

/* One side of the guest clock's steps: its own line. */
struct ht_clock_segment {
	uint64_t guest_first, guest_last; /* the guest times of its first and last used pair */
	uint64_t host_first;              /* the host time of its first used pair */
	size_t used;
	bool has_rate;
	long double rate, intercept;
	double step_ns; /* its offset (host less guest) at its first pair less the side before's at its last; 0 for the first */
};

struct ht_clock_fit {
	size_t pairs;            /* given */
	size_t used;             /* fitted */
	size_t refused_order;    /* the guest's clock went back against the host's order */
	size_t refused_outlier;  /* too far from the line of the others */
	size_t refused_segments; /* on sides beyond HT_CLOCK_FIT_MAX_SEGMENTS */
	/* The line of the side with the most used pairs (the only one when the clock never stepped). */
	bool has_rate;           /* two used pairs at different guest times: else the rate is 1 */
	long double rate;        /* host ns per guest ns */
	long double intercept;   /* host ns = intercept + rate * guest ns */
	/* |residual| of the used pairs, ns: host time less their side's line. */
	double residual_p50, residual_p99, residual_max;
	size_t nsegments;        /* 1 + the steps (0 with no pair used) */
	size_t main_segment;     /* the index in segments[] of the side whose line is above */
	double max_step_ns;      /* the largest step's size (absolute), ns */
	struct ht_clock_segment segments[HT_CLOCK_FIT_MAX_SEGMENTS];
};

/*
 * Fits pairs (n of them; sorted here by host time, in place). 0, or -1 when
 * out of memory. With no pair used (n == 0), used is 0 and nothing else is
 * meaningful.
 */
int ht_clock_fit(struct ht_clock_pair *pairs, size_t n, struct ht_clock_fit *fit);

/*
 * Where guest_ns falls on the host's clock, by the line of the side that
 * holds it (rounded to the ns; 0 and UINT64_MAX bound it). A guest time
 * between two sides' pairs (where the step happened is not known) goes by
 * the nearer side.
 */
uint64_t ht_clock_fit_map(const struct ht_clock_fit *fit, uint64_t guest_ns);

/* The rate's distance from 1, in parts per million. */
double ht_clock_fit_ppm(const struct ht_clock_fit *fit);

#endif
