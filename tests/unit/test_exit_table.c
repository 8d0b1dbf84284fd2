// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The exit statistics model: cumulative tables, intervals by difference,
 * percentiles and min/max from log2 buckets, short times.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "exits/exit_table.h"
#include "exits/exit_view.h"
#include "common/util.h"
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
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
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
	if (!ASSERT_MSG(ht_exit_table_set_series(&b, &k1, &h) == 0 && ht_exit_table_set_thread(&b, &w, &(struct ht_vcpu_account){ 0 }, NULL, false) == 0, "before"))
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
			ht_exit_table_set_thread(&a, &w, &(struct ht_vcpu_account){ 0 }, NULL, false) == 0, "after"))
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

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		ht_exit_fmt_ns(buf, sizeof(buf), cases[i].ns);
		ASSERT_STREQ(buf, cases[i].want, "buf");
	}
}

/* A file's series in any order: appended, found through the index, in key order after one sort. */
static void series_in_any_order_are_found_and_sorted_once(void)
{
	struct ht_exit_key k42 = key(7 + (42u * 7919) % 5000, 0, 42);
	const struct ht_exit_series *s;
	struct ht_exit_table a;
	const unsigned int n = 5000;

	ht_exit_table_init(&a);
	for (unsigned int i = 0; i < n; i++) {
		struct ht_exit_key k = key(7 + (i * 7919) % n, (__u16)(i % 3), i);
		struct ht_exit_series *added = ht_exit_table_series_any_order(&a, &k);

		if (!ASSERT_MSG(added != NULL, "add %u", i))
			goto cleanup;
		added->h.count = i;
	}
	if (!ASSERT_MSG(a.nseries == n && a.series_unordered, "%zu series, unordered", a.nseries))
		goto cleanup;
	s = ht_exit_table_series(&a, &k42, false);
	if (!ASSERT_MSG(s && s->h.count == 42, "lookup before the sort"))
		goto cleanup;
	if (!ASSERT_MSG(ht_exit_table_sort(&a) == 0 && !a.series_unordered, "sort"))
		goto cleanup;
	for (size_t i = 1; i < a.nseries; i++)
		if (!ASSERT_MSG(a.series[i - 1].key.pid <= a.series[i].key.pid, "order at %zu", i))
			goto cleanup;
	s = ht_exit_table_series(&a, &k42, false);
	ASSERT_MSG(s && s->h.count == 42, "lookup after the sort");
cleanup:
	ht_exit_table_free(&a);
}

/* A block's threads in any order, one twice among them: one row each, in (tid, start) order, the last numbers win. */
static void a_blocks_threads_merge_in_tid_order(void)
{
	struct ht_vcpu_wait w = { .pid = 1, .tid = 50, .wait_ns = 1 };
	struct ht_vcpu_account acc = { .start_ns = 5 };
	/* tid 10 twice, and once more as another thread (a later start). */
	struct ht_vcpu_thread_key keys[] = { { 90, 5 }, { 10, 5 }, { 50, 5 }, { 70, 5 }, { 10, 5 }, { 30, 5 }, { 10, 9 } };
	struct ht_vcpu_thread_row *rows[7];
	struct ht_exit_table a;

	ht_exit_table_init(&a);
	if (!ASSERT_MSG(ht_exit_table_set_thread(&a, &w, &acc, NULL, false) == 0, "set"))
		goto cleanup;
	if (!ASSERT_MSG(ht_exit_table_threads(&a, keys, 7, rows) == 0, "threads"))
		goto cleanup;
	for (int i = 0; i < 7; i++)
		rows[i]->w.wait_ns = 100 + (uint64_t)i;
	if (!ASSERT_EQ(a.nthreads, 6, "rows"))
		goto cleanup;
	for (size_t i = 1; i < a.nthreads; i++)
		if (!ASSERT_MSG(a.threads[i - 1].w.tid < a.threads[i].w.tid ||
					(a.threads[i - 1].w.tid == a.threads[i].w.tid &&
					 a.threads[i - 1].a.start_ns < a.threads[i].a.start_ns),
				"order at %zu", i))
			goto cleanup;
	ASSERT_MSG(ht_exit_table_thread(&a, 10, 5, false)->w.wait_ns == 104 &&
			   ht_exit_table_thread(&a, 10, 9, false)->w.wait_ns == 106 &&
			   ht_exit_table_thread(&a, 50, 5, false)->w.wait_ns == 102,
		   "the rows of (10, 5), (10, 9) and (50, 5)");
cleanup:
	ht_exit_table_free(&a);
}

/* Sums that would pass 2^64 stop there; an exact min bounds a percentile from below. */
static void sums_saturate_and_percentiles_stay_within_min_and_max(void)
{
	struct ht_exit_series sum = { .minmax_exact = true }, s = { .minmax_exact = true };

	s.h = hist_of(1ull << 63, 0);
	ht_exit_series_add(&sum, &s);
	ht_exit_series_add(&sum, &s);
	CHECK_EQ_U64(sum.h.count, UINT64_MAX);
	CHECK_EQ_U64(sum.h.slots[0], UINT64_MAX);
	/* A series read while counting: its min (1000 ns) above the bucket of its lowest exit. */
	s.h = hist_of(10, 1000);
	s.h.slots[3] = 1;
	s.h.slots[9] = 9;
	CHECK_EQ_U64(ht_exit_percentile(&s, 1), 1000);
	CHECK_EQ_U64(ht_exit_percentile(&s, 99), 1000);
}

/*
 * Buckets the reader lets through (their sum within a read's torn exits of
 * the count) may pass 2^64 together: the running sums of a percentile and
 * of an account's span stop at 2^64 - 1 rather than wrap to a small number.
 */
static void percentile_and_span_sums_saturate(void)
{
	struct ht_exit_series s = { .minmax_exact = false };
	struct ht_vcpu_thread_row r = { 0 };
	__u64 slots[HT_EXIT_SLOTS] = { 0 };

	s.h.count = UINT64_MAX;
	s.h.slots[0] = s.h.slots[1] = 1ull << 63;
	s.h.slots[5] = 1000;
	/* Rank 0.99 * (2^64 - 1) is in bucket 1: a wrapped sum would have run to the last bucket. */
	CHECK_EQ_U64(ht_exit_percentile(&s, 99), ht_exit_slot_high(1));
	memcpy(slots, s.h.slots, sizeof(slots));
	CHECK_EQ_U64(ht_exit_cause_percentile(slots, UINT64_MAX, 99), ht_exit_slot_high(1));
	r.a.state_ns[HT_VCPU_GUEST] = UINT64_MAX;
	r.a.state_ns[HT_VCPU_KVM] = 11;
	CHECK_EQ_U64(ht_vcpu_account_span(&r), UINT64_MAX);
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
	if (!ASSERT_OK(ht_exit_table_set_thread(&before, &w, &first, NULL, false), "first thread"))
		goto cleanup;
	/* It ends at 6000; its id comes back at 9000, with less wait so far. */
	first = account_of(1000, 6000, HT_VCPU_WAIT, 400);
	if (!ASSERT_OK(ht_exit_table_copy(&now, &before), "copy") ||
	    !ASSERT_OK(ht_exit_table_set_thread(&now, &w, &first, NULL, true), "first ends"))
		goto cleanup;
	w.wait_ns = 100;
	if (!ASSERT_OK(ht_exit_table_set_thread(&now, &w, &second, NULL, false), "second thread") ||
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

/* A number that goes down (a bug, or a damaged file) is no change, counted and shown: never a wrapped difference. */
static void a_number_that_goes_down_is_counted_shown_not_wrapped(void)
{
	struct ht_exit_key k = key(7, 0, 0x7b);
	struct ht_exit_hist h = hist_of(10, 1000), less = hist_of(4, 1000);
	struct ht_exit_table before, now, d;
	const struct ht_exit_series *s;
	struct ht_exit_view_opts o = { .width = 200 };
	char text[4096] = "", want[96];
	FILE *f;

	ht_exit_table_init(&before);
	ht_exit_table_init(&now);
	ht_exit_table_init(&d);
	if (!ASSERT_OK(ht_exit_table_set_series(&before, &k, &h), "before") ||
	    !ASSERT_OK(ht_exit_table_set_series(&now, &k, &less), "now") ||
	    !ASSERT_OK(ht_exit_table_delta(&d, &now, &before), "delta"))
		goto cleanup;
	s = ht_exit_table_series(&d, &k, false);
	if (!ASSERT_OK_PTR(s, "series") || !ASSERT_EQ(s->h.count, 0, "no exits, not 2^64 - 6") ||
	    !ASSERT_EQ(s->h.total_ns, 0, "no time") || !ASSERT_TRUE(d.went_down > 0, "counted"))
		goto cleanup;
	/* And shown, so that the zero is not taken for an idle VM. */
	f = fmemopen(text, sizeof(text) - 1, "w");
	if (!ASSERT_OK_PTR(f, "fmemopen"))
		goto cleanup;
	ASSERT_OK(ht_exit_view_write(f, &d, &o), "view written");
	fclose(f);
	snprintf(want, sizeof(want), "numbers that went down since the read before, shown as no change: %llu\n",
		 (unsigned long long)d.went_down);
	ASSERT_MSG(strstr(text, want) != NULL, "view says so: %s", text);
cleanup:
	ht_exit_table_free(&before);
	ht_exit_table_free(&now);
	ht_exit_table_free(&d);
}

int main(void)
{
	RUN(series_in_any_order_are_found_and_sorted_once);
	RUN(a_blocks_threads_merge_in_tid_order);
	RUN(sums_saturate_and_percentiles_stay_within_min_and_max);
	RUN(percentile_and_span_sums_saturate);
	RUN(series_stay_sorted_and_unique);
	RUN(an_interval_is_the_difference_with_bucket_bound_min_and_max);
	RUN(percentiles_are_bucket_upper_bounds_lowered_to_an_exact_max);
	RUN(short_times_keep_three_digits);
	RUN(a_thread_id_that_comes_back_is_another_row);
	RUN(a_number_that_goes_down_is_counted_shown_not_wrapped);
	return ht_test_exit_status();
}
