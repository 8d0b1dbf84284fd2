// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Unit tests of guest/latency_stats.c on data with known answers. */
#include <math.h>

#include "latency_stats.h"
#include "test.h"
#include "common/util.h"

/* Equal up to double rounding: relative error 1e-9, absolute near zero. */
static int near(double got, double want)
{
	return fabs(got - want) <= 1e-9 * (fabs(want) > 1 ? fabs(want) : 1);
}

static void test_latency_empty(void)
{
	struct latency_summary s;

	latency_summarize(NULL, 0, &s);
	CHECK_EQ_U64(s.count, 0);
	CHECK(s.mean == 0 && s.median == 0 && s.stddev == 0, "mean %f median %f stddev %f", s.mean,
	      s.median, s.stddev);
	CHECK(s.min == 0 && s.p99 == 0 && s.max == 0, "min/p99/max not zero");
}

static void test_latency_one_sample(void)
{
	uint64_t v[] = { 310 };
	struct latency_summary s;

	latency_summarize(v, 1, &s);
	CHECK_EQ_U64(s.count, 1);
	CHECK(s.mean == 310 && s.median == 310 && s.stddev == 0, "mean %f median %f stddev %f",
	      s.mean, s.median, s.stddev);
	CHECK(s.min == 310 && s.p99 == 310 && s.max == 310, "min/p99/max not 310");
}

/* The textbook set: mean 5, population standard deviation 2. */
static void test_latency_even_count(void)
{
	uint64_t v[] = { 9, 2, 5, 4, 7, 4, 5, 4 };
	struct latency_summary s;

	latency_summarize(v, 8, &s);
	CHECK(near(s.mean, 5), "mean %f", s.mean);
	CHECK(near(s.stddev, 2), "stddev %f", s.stddev);
	CHECK(near(s.median, 4.5), "median %f, want the mean of the middle two 4 and 5", s.median);
	CHECK(s.min == 2 && s.max == 9 && s.p99 == 9, "min %llu max %llu p99 %llu",
	      (unsigned long long)s.min, (unsigned long long)s.max, (unsigned long long)s.p99);
	CHECK(v[0] == 2 && v[7] == 9, "samples are not sorted in place");
}

static void test_latency_odd_count(void)
{
	uint64_t v[] = { 30, 10, 20 };
	struct latency_summary s;

	latency_summarize(v, 3, &s);
	CHECK(near(s.median, 20), "median %f", s.median);
	CHECK(near(s.mean, 20), "mean %f", s.mean);
	CHECK(near(s.stddev, sqrt(200.0 / 3)), "stddev %f", s.stddev);
}

/* Nearest rank: p99 of 1..100 is 99, of 1..200 is 198, of 1..101 is 100. */
static void test_latency_p99_nearest_rank(void)
{
	static uint64_t v[1000];
	struct latency_summary s;
	const size_t counts[] = { 100, 200, 101, 1000, 2 };
	const uint64_t want[] = { 99, 198, 100, 990, 2 };

	for (size_t c = 0; c < ARRAY_SIZE(counts); c++) {
		for (size_t i = 0; i < counts[c]; i++)
			v[i] = counts[c] - i; /* descending: the function must sort */
		latency_summarize(v, counts[c], &s);
		CHECK(s.p99 == want[c], "count %zu: p99 %llu, want %llu", counts[c],
		      (unsigned long long)s.p99, (unsigned long long)want[c]);
	}
}

/* One outlier among many small values: the shape of real round trips. */
static void test_latency_outlier(void)
{
	static uint64_t v[1000];
	struct latency_summary s;

	for (size_t i = 0; i < 1000; i++)
		v[i] = 300;
	v[500] = 100300;
	latency_summarize(v, 1000, &s);
	CHECK(near(s.mean, 400), "mean %f", s.mean);
	CHECK(near(s.median, 300), "median %f", s.median);
	CHECK(s.p99 == 300 && s.max == 100300, "p99 %llu max %llu", (unsigned long long)s.p99,
	      (unsigned long long)s.max);
	CHECK(near(s.stddev, sqrt(100000.0 * 100000.0 * 999 / 1000 / 1000)), "stddev %f", s.stddev);
}

/* Sums of such samples overflow 64 bits; the summary must not. */
static void test_latency_huge_values(void)
{
	uint64_t v[] = { UINT64_MAX, UINT64_MAX - 1, UINT64_MAX, UINT64_MAX - 1 };
	struct latency_summary s;

	latency_summarize(v, 4, &s);
	CHECK(s.mean > 1.8e19 && s.mean < 1.9e19, "mean %g", s.mean);
	CHECK(s.median > 1.8e19 && s.median < 1.9e19, "median %g", s.median);
	CHECK(s.stddev >= 0 && s.stddev < 1e4, "stddev %g", s.stddev);
	CHECK(s.min == UINT64_MAX - 1 && s.max == UINT64_MAX && s.p99 == UINT64_MAX,
	      "min/max/p99 wrong");
}

/* Identical samples: rounding must not produce a negative variance or NaN. */
static void test_latency_identical(void)
{
	static uint64_t v[777];
	struct latency_summary s;

	for (size_t i = 0; i < 777; i++)
		v[i] = 123456789;
	latency_summarize(v, 777, &s);
	CHECK(s.stddev == 0, "stddev %g", s.stddev);
	CHECK(near(s.mean, 123456789), "mean %f", s.mean);
}

int main(void)
{
	RUN(test_latency_empty);
	RUN(test_latency_one_sample);
	RUN(test_latency_even_count);
	RUN(test_latency_odd_count);
	RUN(test_latency_p99_nearest_rank);
	RUN(test_latency_outlier);
	RUN(test_latency_huge_values);
	RUN(test_latency_identical);
	return ht_test_exit_status();
}
