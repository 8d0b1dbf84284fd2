// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The guest clock's line on the host's clock (src/user/decode/clock_fit.c):
 * a known rate and offset come back, each pair is mapped within its gap,
 * pairs that contradict the others are refused and do not move the line,
 * a clock that stops or jumps (a paused VM) is fitted on each side of its
 * step, and any values a guest may send give a finite answer in bounded
 * memory.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "decode/clock_fit.h"
#include "test.h"

#define N 500

/* Pair i: host exit at 10 s + i ms; the guest read gap_i ns before, its clock (host - 7 s) / (1 + ppm). */
static void make_pairs(struct ht_clock_pair *p, size_t n, double ppm, uint64_t gap_spread)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t host = 10000000000ull + i * 1000000ull, gap = 1500 + (i * 7919) % (gap_spread + 1);

		p[i].host_ns = host;
		p[i].guest_ns = (uint64_t)llroundl((long double)(host - gap - 7000000000ull) / (1.0L + ppm / 1e6));
	}
}

/* Shuffled: the fit orders them itself. */
static void shuffle(struct ht_clock_pair *p, size_t n)
{
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = (i * 2654435761u) % (i + 1);
		struct ht_clock_pair t = p[i];

		p[i] = p[j];
		p[j] = t;
	}
}

static void a_known_rate_and_offset_come_back_and_each_pair_maps_within_its_gap(void)
{
	struct ht_clock_pair p[N];
	struct ht_clock_fit f;

	make_pairs(p, N, 40.0, 0);
	shuffle(p, N);
	CHECK(ht_clock_fit(p, N, &f) == 0, "fit");
	CHECK(f.used == N && f.refused_order == 0 && f.refused_outlier == 0, "%zu used", f.used);
	CHECK(f.has_rate && fabs(ht_clock_fit_ppm(&f) - 40.0) < 0.001, "%.6f ppm", ht_clock_fit_ppm(&f));
	/* A constant gap: every pair's host time less the gap, to the ns (rounding of the guest's clock). */
	for (size_t i = 0; i < N; i++) {
		int64_t d = (int64_t)(ht_clock_fit_map(&f, p[i].guest_ns) - p[i].host_ns);

		CHECK(llabs(d) <= 2, "pair %zu maps %lld ns off its exit", i, (long long)d);
	}
	CHECK(f.residual_max <= 2, "residual max %.1f ns", f.residual_max);
}

static void a_varying_gap_is_the_residual(void)
{
	struct ht_clock_pair p[N];
	struct ht_clock_fit f;

	make_pairs(p, N, -15.0, 800);
	CHECK(ht_clock_fit(p, N, &f) == 0, "fit");
	CHECK(f.used == N, "%zu used", f.used);
	CHECK(fabs(ht_clock_fit_ppm(&f) + 15.0) < 0.05, "%.6f ppm", ht_clock_fit_ppm(&f));
	/* The gap spans 800 ns: no residual beyond it, and the fit is within it at every pair. */
	CHECK(f.residual_max <= 800 && f.residual_p50 <= f.residual_p99 && f.residual_p99 <= f.residual_max,
	      "p50 %.0f p99 %.0f max %.0f", f.residual_p50, f.residual_p99, f.residual_max);
	CHECK(f.residual_max >= 300, "residual max %.0f: the gap's spread is not seen", f.residual_max);
}

static void pairs_that_contradict_the_others_are_refused_and_move_nothing(void)
{
	struct ht_clock_pair p[N], clean[N];
	struct ht_clock_fit f, g;

	make_pairs(clean, N, 40.0, 0);
	make_pairs(p, N, 40.0, 0);
	/* Read early by an interrupt (still in order), and a clock that went back. */
	p[50].guest_ns -= 400000;
	p[300].guest_ns -= 200000;
	p[200].guest_ns -= 900000000;
	CHECK(ht_clock_fit(p, N, &f) == 0 && ht_clock_fit(clean, N, &g) == 0, "fit");
	CHECK(f.refused_order == 1 && f.refused_outlier == 2 && f.used == N - 3, "%zu out of order, %zu outliers",
	      f.refused_order, f.refused_outlier);
	CHECK(fabs(ht_clock_fit_ppm(&f) - ht_clock_fit_ppm(&g)) < 0.001 && f.residual_max <= 2,
	      "%.6f ppm against %.6f clean, residual max %.0f", ht_clock_fit_ppm(&f), ht_clock_fit_ppm(&g),
	      f.residual_max);
}

static void one_pair_gives_an_offset_and_no_rate(void)
{
	struct ht_clock_pair p = { .guest_ns = 5000, .host_ns = 9000 };
	struct ht_clock_fit f;

	CHECK(ht_clock_fit(&p, 1, &f) == 0 && f.used == 1 && !f.has_rate, "fit");
	CHECK(ht_clock_fit_map(&f, 6000) == 10000, "mapped to %llu", (unsigned long long)ht_clock_fit_map(&f, 6000));
	CHECK(ht_clock_fit(NULL, 0, &f) == 0 && f.used == 0, "no pair");
}

/* Whatever a guest sends: the extremes of 64 bits, equal and repeated values, a clock stuck at one value. */
static void any_guest_values_give_a_finite_fit(void)
{
	static const uint64_t values[] = { 0, 1, UINT64_MAX, UINT64_MAX - 1, 1ull << 63, 12345, 12345, 0 };
	struct ht_clock_pair p[64];
	struct ht_clock_fit f;

	for (size_t i = 0; i < 64; i++)
		p[i] = (struct ht_clock_pair){ .guest_ns = values[(i * 5) % 8], .host_ns = values[(i * 3) % 8] };
	CHECK(ht_clock_fit(p, 64, &f) == 0 && f.used >= 1 &&
		      f.used + f.refused_order + f.refused_outlier + f.refused_segments == 64,
	      "fit");
	CHECK(isfinite((double)f.rate) && isfinite((double)f.intercept) && isfinite(f.residual_max), "not finite");
	for (size_t i = 0; i < 64; i++)
		p[i] = (struct ht_clock_pair){ .guest_ns = 777, .host_ns = 1000 + i };
	CHECK(ht_clock_fit(p, 64, &f) == 0 && !f.has_rate && f.used == 64, "a stuck clock: %zu used", f.used);
	CHECK(isfinite((double)f.intercept), "not finite");
}

/*
 * A VM paused for 5 s (its clock held: every later pair's offset 5 s more)
 * and a clock set 3 s ahead: each side on its own line, each pair mapped
 * within its gap, the steps told. One line through all would be seconds off.
 */
static void a_clock_that_stops_or_jumps_is_fitted_on_each_side(void)
{
	struct ht_clock_pair p[N];
	struct ht_clock_fit f;

	make_pairs(p, N, 40.0, 0);
	for (size_t i = 0; i < N; i++) {
		if (i >= 200)
			p[i].host_ns += 5000000000ull; /* resumed 5 s later, the guest's clock where it stopped */
		if (i >= 350)
			p[i].guest_ns += 3000000000ull; /* then set 3 s ahead */
	}
	struct ht_clock_pair sorted[N];

	memcpy(sorted, p, sizeof(p));
	shuffle(p, N);
	CHECK(ht_clock_fit(p, N, &f) == 0, "fit");
	CHECK(f.nsegments == 3 && f.used == N && f.refused_outlier == 0, "%zu sides, %zu used, %zu refused",
	      f.nsegments, f.used, f.refused_outlier);
	CHECK(fabs(f.segments[1].step_ns - 5e9) < 1e3 && fabs(f.segments[2].step_ns + 3e9) < 1e3 &&
		      fabs(f.max_step_ns - 5e9) < 1e3,
	      "steps %.0f and %.0f ns", f.segments[1].step_ns, f.segments[2].step_ns);
	CHECK(f.segments[0].used == 200 && f.segments[1].used == 150 && f.segments[2].used == 150, "%zu, %zu, %zu",
	      f.segments[0].used, f.segments[1].used, f.segments[2].used);
	/* The main line: the side with the most pairs, its rate the clock's own. */
	CHECK(f.main_segment == 0 && f.intercept == f.segments[0].intercept && fabs(ht_clock_fit_ppm(&f) - 40.0) < 0.01,
	      "side %zu, %.6f ppm", f.main_segment, ht_clock_fit_ppm(&f));
	for (size_t i = 0; i < N; i++) {
		int64_t d = (int64_t)(ht_clock_fit_map(&f, sorted[i].guest_ns) - sorted[i].host_ns);

		CHECK(llabs(d) <= 2, "pair %zu maps %lld ns off its exit", i, (long long)d);
	}
	CHECK(f.residual_max <= 2, "residual max %.1f ns", f.residual_max);
	/* Between two sides' pairs: the nearer side's line. */
	uint64_t last = sorted[349].guest_ns, next = sorted[350].guest_ns;

	CHECK(ht_clock_fit_map(&f, last + 1000) == ht_clock_fit_map(&f, last) + 1000 &&
		      ht_clock_fit_map(&f, next - 1000) == ht_clock_fit_map(&f, next) - 1000,
	      "a time between two sides goes by the nearer one");
	/* Paused after the first 100 pairs and 50 before the last: sides of 100, 100, 150, 100, 50; the third is the main one. */
	for (size_t i = 0; i < 100; i++)
		sorted[i].host_ns -= 2000000000ull;
	for (size_t i = 450; i < N; i++)
		sorted[i].host_ns += 2000000000ull;
	CHECK(ht_clock_fit(sorted, N, &f) == 0 && f.nsegments == 5 && f.main_segment == 2 &&
		      f.segments[2].used == 150 && f.intercept == f.segments[2].intercept,
	      "%zu sides, main %zu", f.nsegments, f.main_segment);
}

/* Pair i of n, 100 ms apart (the module's pace is slower), the guest's clock 7 s behind the host's. */
static void make_spaced_pairs(struct ht_clock_pair *p, size_t n, uint64_t spacing_ns)
{
	for (size_t i = 0; i < n; i++) {
		p[i].host_ns = 10000000000ull + i * spacing_ns;
		p[i].guest_ns = p[i].host_ns - 7000000000ull;
	}
}

/* Pairs held back (a vCPU preempted between its read and its hypercall, once and twice in a row): no step. */
static void pairs_held_back_are_not_a_step(void)
{
	struct ht_clock_pair p[N];
	struct ht_clock_fit f;

	make_spaced_pairs(p, N, 100000000);
	p[100].host_ns += 40000000;
	p[101].host_ns += 25000000;
	p[300].host_ns += 60000000;
	CHECK(ht_clock_fit(p, N, &f) == 0, "fit");
	CHECK(f.nsegments == 1 && f.refused_order == 0 && f.refused_outlier == 3 && f.used == N - 3 &&
		      f.max_step_ns == 0,
	      "%zu sides, %zu refused (%zu out of order), largest step %.0f ns", f.nsegments,
	      f.refused_outlier + f.refused_order, f.refused_order, f.max_step_ns);
	CHECK(f.residual_max <= 1, "residual max %.1f ns", f.residual_max);
}

/* A guest that steps its clock every few pairs: at most HT_CLOCK_FIT_MAX_SEGMENTS sides, the rest refused and counted. */
static void a_guest_that_steps_at_every_turn_gets_bounded_sides(void)
{
	enum { SIDES = 1000, EACH = 4 };
	static struct ht_clock_pair p[SIDES * EACH];
	struct ht_clock_fit f;

	make_spaced_pairs(p, SIDES * EACH, 1000000000);
	for (size_t i = 0; i < SIDES * EACH; i++)
		p[i].host_ns += (i / EACH % 2) * 500000000ull;
	CHECK(ht_clock_fit(p, SIDES * EACH, &f) == 0, "fit");
	CHECK(f.nsegments == HT_CLOCK_FIT_MAX_SEGMENTS && f.used == HT_CLOCK_FIT_MAX_SEGMENTS * EACH &&
		      f.refused_segments == (size_t)(SIDES - HT_CLOCK_FIT_MAX_SEGMENTS) * EACH,
	      "%zu sides, %zu used, %zu refused beyond them", f.nsegments, f.used, f.refused_segments);
	CHECK(fabs(f.max_step_ns - 5e8) < 1, "largest step %.0f ns", f.max_step_ns);
}

int main(void)
{
	RUN(a_known_rate_and_offset_come_back_and_each_pair_maps_within_its_gap);
	RUN(a_varying_gap_is_the_residual);
	RUN(pairs_that_contradict_the_others_are_refused_and_move_nothing);
	RUN(a_clock_that_stops_or_jumps_is_fitted_on_each_side);
	RUN(pairs_held_back_are_not_a_step);
	RUN(a_guest_that_steps_at_every_turn_gets_bounded_sides);
	RUN(one_pair_gives_an_offset_and_no_rate);
	RUN(any_guest_values_give_a_finite_fit);
	return ht_test_exit_status();
}
