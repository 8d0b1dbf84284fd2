// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The exit statistics model: cumulative tables, intervals by difference,
 * percentiles and min/max from log2 buckets, short times.
 */
#include <stdio.h>
#include <string.h>
#include "exits/exit_table.h"
#include "exits/exit_view.h"
#include "test.h"

static struct ht_exit_key key(__u32 pid, __u16 vcpu, __u32 reason)
{
	return (struct ht_exit_key){ .pid = pid, .vcpu = vcpu, .isa = HT_ISA_SVM, .reason = reason };
}

/* A histogram of n exits of ns each. */
static struct ht_exit_hist hist_of(__u64 n, __u64 ns)
{
	struct ht_exit_hist h = { .count = n, .total_ns = n * ns, .min_ns = ns, .max_ns = ns };
	unsigned int k = 0;

	while (k < HT_EXIT_SLOTS - 1 && ns >> (k + 1))
		k++;
	h.slots[k] = n;
	return h;
}

static void series_stay_sorted_and_unique(void)
{
	struct ht_exit_hist h = hist_of(1, 100);
	struct ht_exit_key keys[] = { key(5, 1, 0x7b), key(5, 0, 0x78), key(3, 9, 1), key(5, 0, 0x7b), key(5, 0, 0x78) };
	struct ht_exit_key missing = key(4, 0, 0);
	struct ht_exit_table a;

	ht_exit_table_init(&a);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!ASSERT_MSG(ht_exit_table_set_series(&a, &keys[i], &h) == 0, "set"))
			goto cleanup;
	if (!ASSERT_EQ(a.nseries, 4, "value"))
		goto cleanup;
	if (!ASSERT_MSG(a.series[0].key.pid == 3 && a.series[1].key.reason == 0x78 && a.series[2].key.reason == 0x7b &&
			a.series[3].key.vcpu == 1, "order"))
		goto cleanup;
	if (!ASSERT_MSG(ht_exit_table_series(&a, &keys[2], false) == &a.series[0], "lookup"))
		goto cleanup;
	ASSERT_MSG(ht_exit_table_series(&a, &missing, false) == NULL, "missing key found");
cleanup:
	ht_exit_table_free(&a);
}

static void an_interval_is_the_difference_with_bucket_bound_min_and_max(void)
{
	struct ht_exit_key k1 = key(7, 0, 0x7b), k2 = key(7, 1, 0x400);
	struct ht_exit_hist h = hist_of(10, 1000); /* slot 9 */
	struct ht_exit_hist h2 = hist_of(4, 50);
	struct ht_vcpu_wait w = { .pid = 7, .tid = 70, .wait_ns = 100, .preempt_count = 1 };
	const struct ht_exit_series *s;
	struct ht_exit_table a, b, d;

	ht_exit_table_init(&a);
	ht_exit_table_init(&b);
	ht_exit_table_init(&d);
	if (!ASSERT_MSG(ht_exit_table_set_series(&b, &k1, &h) == 0 && ht_exit_table_set_thread(&b, &w, &(struct ht_vcpu_account){ 0 }, false) == 0, "before"))
		goto cleanup;
	/* Then 5 more exits of 3000 ns (slot 11) on k1, and a new series k2. */
	h.count += 5;
	h.total_ns += 5 * 3000;
	h.max_ns = 3000;
	h.slots[11] += 5;
	w.wait_ns = 350;
	w.preempt_count = 3;
	if (!ASSERT_MSG(ht_exit_table_copy(&a, &b) == 0, "copy"))
		goto cleanup;
	if (!ASSERT_MSG(ht_exit_table_set_series(&a, &k1, &h) == 0 && ht_exit_table_set_series(&a, &k2, &h2) == 0 &&
			ht_exit_table_set_thread(&a, &w, &(struct ht_vcpu_account){ 0 }, false) == 0, "after"))
		goto cleanup;
	if (!ASSERT_MSG(ht_exit_table_delta(&d, &a, &b) == 0, "delta"))
		goto cleanup;
	if (!ASSERT_EQ(d.nseries, 2, "value"))
		goto cleanup;
	s = ht_exit_table_series(&d, &k1, false);
	if (!ASSERT_MSG(s && s->h.count == 5 && s->h.total_ns == 15000 && s->h.slots[11] == 5 && s->h.slots[9] == 0,
			"k1"))
		goto cleanup;
	if (!ASSERT_MSG(!s->minmax_exact && s->h.min_ns == 2048 && s->h.max_ns == 4095, "k1 min/max as bounds: %llu %llu",
			(unsigned long long)s->h.min_ns, (unsigned long long)s->h.max_ns))
		goto cleanup;
	s = ht_exit_table_series(&d, &k2, false);
	if (!ASSERT_MSG(s && s->h.count == 4 && s->minmax_exact && s->h.min_ns == 50, "k2: new in the interval, exact"))
		goto cleanup;
	if (!ASSERT_EQ(d.nthreads, 1, "value"))
		goto cleanup;
	if (!ASSERT_EQ(d.threads[0].w.wait_ns, 250, "value"))
		goto cleanup;
	if (!ASSERT_EQ(d.threads[0].w.preempt_count, 2, "value"))
		goto cleanup;
	/* Nothing new: an empty interval. */
	ASSERT_MSG(ht_exit_table_delta(&d, &a, &a) == 0 && d.nseries == 0 && d.nthreads == 0, "no change");
cleanup:
	ht_exit_table_free(&a);
	ht_exit_table_free(&b);
	ht_exit_table_free(&d);
}

static void percentiles_are_bucket_upper_bounds_lowered_to_an_exact_max(void)
{
	struct ht_exit_series s = { .minmax_exact = true };

	s.h.slots[9] = 90;   /* 512..1023 */
	s.h.slots[20] = 10;  /* 1048576..2097151 */
	s.h.count = 100;
	s.h.min_ns = 600;
	s.h.max_ns = 1500000;
	CHECK_EQ_U64(ht_exit_percentile(&s, 50), 1023);
	CHECK_EQ_U64(ht_exit_percentile(&s, 90), 1023);
	CHECK_EQ_U64(ht_exit_percentile(&s, 91), 1500000); /* slot 20's bound, lowered to the max */
	s.minmax_exact = false;
	CHECK_EQ_U64(ht_exit_percentile(&s, 99), 2097151);
	CHECK_EQ_U64(ht_exit_slot_low(0), 0);
	CHECK_EQ_U64(ht_exit_slot_high(0), 1);
	CHECK_EQ_U64(ht_exit_slot_low(10), 1024);
	CHECK_EQ_U64(ht_exit_slot_high(10), 2047);
	CHECK_EQ_U64(ht_exit_slot_high(HT_EXIT_SLOTS - 1), UINT64_MAX);
}

static void short_times_keep_three_digits(void)
{
	static const struct { unsigned long long ns; const char *want; } cases[] = {
		{ 0, "0ns" }, { 999, "999ns" }, { 1000, "1.00us" }, { 8191, "8.19us" }, { 16384, "16.4us" },
		{ 999999, "1000us" }, { 2000000, "2.00ms" }, { 1500000000, "1.50s" }, { 750000000000ull, "750s" },
	};
	char buf[16];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ht_exit_fmt_ns(buf, sizeof(buf), cases[i].ns);
		CHECK(!strcmp(buf, cases[i].want), "%llu: %s, want %s", cases[i].ns, buf, cases[i].want);
	}
}

/* An account of a thread started at start, with ns in state k and the rest in guest, up to as_of. */
static struct ht_vcpu_account account_of(__u64 start, __u64 as_of, int k, __u64 ns)
{
	struct ht_vcpu_account a = { .start_ns = start, .as_of_ns = as_of };

	a.state_ns[k] = ns;
	a.state_ns[HT_VCPU_GUEST] += as_of - start - ns;
	return a;
}

/*
 * A thread id the kernel gives again is another thread: (tid, start) names a
 * row, so the first thread's last numbers stay and the second's interval
 * starts from nothing; an interval's account covers exactly the interval.
 */
static void a_thread_id_that_comes_back_is_another_row(void)
{
	struct ht_vcpu_wait w = { .pid = 7, .tid = 70, .wait_ns = 300 };
	struct ht_vcpu_account first = account_of(1000, 5000, HT_VCPU_WAIT, 300);
	struct ht_vcpu_account second = account_of(9000, 9500, HT_VCPU_WAIT, 100);
	const struct ht_vcpu_thread_row *r;
	struct ht_exit_table before, now, d;
	__u64 sum = 0;

	ht_exit_table_init(&before);
	ht_exit_table_init(&now);
	ht_exit_table_init(&d);
	if (!ASSERT_OK(ht_exit_table_set_thread(&before, &w, &first, false), "first thread"))
		goto cleanup;
	/* It ends at 6000; its id comes back at 9000, with less wait so far. */
	first = account_of(1000, 6000, HT_VCPU_WAIT, 400);
	if (!ASSERT_OK(ht_exit_table_copy(&now, &before), "copy") ||
	    !ASSERT_OK(ht_exit_table_set_thread(&now, &w, &first, true), "first ends"))
		goto cleanup;
	w.wait_ns = 100;
	if (!ASSERT_OK(ht_exit_table_set_thread(&now, &w, &second, false), "second thread") ||
	    !ASSERT_EQ(now.nthreads, 2, "two rows for one id") || !ASSERT_OK(ht_exit_table_delta(&d, &now, &before), "delta"))
		goto cleanup;
	if (!ASSERT_EQ(d.went_down, 0, "nothing went down") || !ASSERT_EQ(d.nthreads, 2, "both in the interval"))
		goto cleanup;
	r = ht_exit_table_thread(&d, 70, 1000, false);
	if (!ASSERT_OK_PTR(r, "first") || !ASSERT_EQ(r->from_ns, 5000, "its interval starts at the last read") ||
	    !ASSERT_EQ(r->a.state_ns[HT_VCPU_WAIT], 100, "its wait in the interval") || !ASSERT_TRUE(r->gone, "ended"))
		goto cleanup;
	for (int k = 0; k < HT_VCPU_NSTATES; k++)
		sum += r->a.state_ns[k];
	if (!ASSERT_EQ(sum, r->a.as_of_ns - r->from_ns, "its states add up to its interval"))
		goto cleanup;
	r = ht_exit_table_thread(&d, 70, 9000, false);
	if (ASSERT_OK_PTR(r, "second") && ASSERT_EQ(r->w.wait_ns, 100, "its own wait, not a difference with the first's"))
		ASSERT_EQ(r->from_ns, 9000, "from its start");
cleanup:
	ht_exit_table_free(&before);
	ht_exit_table_free(&now);
	ht_exit_table_free(&d);
}

/* A number that goes down (a bug, or a damaged file) is no change, counted: never a wrapped difference. */
static void a_number_that_goes_down_is_counted_not_wrapped(void)
{
	struct ht_exit_key k = key(7, 0, 0x7b);
	struct ht_exit_hist h = hist_of(10, 1000), less = hist_of(4, 1000);
	struct ht_exit_table before, now, d;
	const struct ht_exit_series *s;

	ht_exit_table_init(&before);
	ht_exit_table_init(&now);
	ht_exit_table_init(&d);
	if (!ASSERT_OK(ht_exit_table_set_series(&before, &k, &h), "before") ||
	    !ASSERT_OK(ht_exit_table_set_series(&now, &k, &less), "now") ||
	    !ASSERT_OK(ht_exit_table_delta(&d, &now, &before), "delta"))
		goto cleanup;
	s = ht_exit_table_series(&d, &k, false);
	if (ASSERT_OK_PTR(s, "series") && ASSERT_EQ(s->h.count, 0, "no exits, not 2^64 - 6") &&
	    ASSERT_EQ(s->h.total_ns, 0, "no time"))
		ASSERT_TRUE(d.went_down > 0, "counted");
cleanup:
	ht_exit_table_free(&before);
	ht_exit_table_free(&now);
	ht_exit_table_free(&d);
}

int main(void)
{
	RUN(series_stay_sorted_and_unique);
	RUN(an_interval_is_the_difference_with_bucket_bound_min_and_max);
	RUN(percentiles_are_bucket_upper_bounds_lowered_to_an_exact_max);
	RUN(short_times_keep_three_digits);
	RUN(a_thread_id_that_comes_back_is_another_row);
	RUN(a_number_that_goes_down_is_counted_not_wrapped);
	return ht_test_exit_status();
}
