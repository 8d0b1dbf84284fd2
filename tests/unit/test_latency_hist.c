// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Log2 bucketing, percentiles and the series set of latency_hist.c. */
#include "hist/latency_hist.h"
#include "test.h"

#include <stdint.h>
#include "common/util.h"

static struct ht_record rec(uint32_t pid, uint16_t vcpu, uint32_t e2h, uint32_t h2e)
{
	struct ht_record r = { 0 };

	r.host_pid = pid;
	r.vcpu_id = vcpu;
	r.exit_to_hcall_ns = e2h;
	r.hcall_to_entry_ns = h2e;
	return r;
}

static void test_slot_of_known_values(void)
{
	CHECK_EQ_U64(ht_hist_slot(0), 0);
	CHECK_EQ_U64(ht_hist_slot(1), 0);
	CHECK_EQ_U64(ht_hist_slot(2), 1);
	CHECK_EQ_U64(ht_hist_slot(3), 1);
	CHECK_EQ_U64(ht_hist_slot(4), 2);
	CHECK_EQ_U64(ht_hist_slot(1023), 9);
	CHECK_EQ_U64(ht_hist_slot(1024), 10);
	CHECK_EQ_U64(ht_hist_slot(UINT64_MAX), 63);
	CHECK_EQ_U64(ht_hist_slot(1ull << 63), 63);
	CHECK_EQ_U64(ht_hist_slot((1ull << 63) - 1), 62);
}

static void test_slot_bounds_tile_u64(void)
{
	CHECK_EQ_U64(ht_hist_slot_low(0), 0);
	CHECK_EQ_U64(ht_hist_slot_high(0), 1);
	CHECK_EQ_U64(ht_hist_slot_low(10), 1024);
	CHECK_EQ_U64(ht_hist_slot_high(10), 2047);
	CHECK_EQ_U64(ht_hist_slot_low(63), 1ull << 63);
	CHECK_EQ_U64(ht_hist_slot_high(63), UINT64_MAX);
	/* Every slot's bounds map back to it and slots follow each other without gaps. */
	for (unsigned int k = 0; k < HT_HIST_SLOTS; k++) {
		CHECK_EQ_U64(ht_hist_slot(ht_hist_slot_low(k)), k);
		CHECK_EQ_U64(ht_hist_slot(ht_hist_slot_high(k)), k);
		if (k + 1 < HT_HIST_SLOTS)
			CHECK_EQ_U64(ht_hist_slot_high(k) + 1, ht_hist_slot_low(k + 1));
	}
}

static void test_hist_add_count_min_max_sum(void)
{
	struct ht_hist h = { 0 };
	static const uint64_t vals[] = { 0, 1, 2, 3, 4, 1023, 1024, UINT64_MAX };
	uint64_t sum;

	for (size_t i = 0; i < ARRAY_SIZE(vals); i++)
		ht_hist_add(&h, vals[i]);
	CHECK_EQ_U64(ht_hist_count(&h), 8);
	CHECK_EQ_U64(h.slots[0], 2);
	CHECK_EQ_U64(h.slots[1], 2);
	CHECK_EQ_U64(h.slots[2], 1);
	CHECK_EQ_U64(h.slots[9], 1);
	CHECK_EQ_U64(h.slots[10], 1);
	CHECK_EQ_U64(h.slots[63], 1);
	CHECK(ht_hist_min(&h).exact && ht_hist_min(&h).ns == 0, "min %llu",
	      (unsigned long long)ht_hist_min(&h).ns);
	CHECK(ht_hist_max(&h).exact && ht_hist_max(&h).ns == UINT64_MAX, "max");
	CHECK(ht_hist_sum(&h, &sum), "sum of values added one by one is known");
	CHECK_EQ_U64(sum, UINT64_MAX); /* saturated */

	ht_hist_reset(&h);
	ht_hist_add(&h, 5);
	ht_hist_add(&h, 7);
	CHECK(ht_hist_sum(&h, &sum), "sum known");
	CHECK_EQ_U64(sum, 12);
	CHECK_EQ_U64(ht_hist_min(&h).ns, 5);
	CHECK_EQ_U64(ht_hist_max(&h).ns, 7);
}

static void test_hist_empty(void)
{
	struct ht_hist h = { 0 };
	struct ht_lat_value v;

	CHECK_EQ_U64(ht_hist_count(&h), 0);
	v = ht_hist_max(&h);
	CHECK(v.exact && v.ns == 0, "max of empty");
	v = ht_hist_percentile(&h, 99);
	CHECK(v.exact && v.ns == 0, "p99 of empty");
}

static void test_hist_add_per_cpu_slot_arrays(void)
{
	uint64_t cpu0[HT_HIST_SLOTS] = { 0 }, cpu1[HT_HIST_SLOTS] = { 0 };
	struct ht_hist h = { 0 };
	uint64_t sum;

	cpu0[3] = 5;
	cpu0[10] = 1;
	cpu1[3] = 2;
	cpu1[12] = 4;
	cpu1[63] = 1;
	ht_hist_add_slots(&h, cpu0);
	ht_hist_add_slots(&h, cpu1);
	CHECK_EQ_U64(ht_hist_count(&h), 13);
	CHECK_EQ_U64(h.slots[3], 7);
	CHECK_EQ_U64(h.slots[10], 1);
	CHECK_EQ_U64(h.slots[12], 4);
	CHECK_EQ_U64(h.slots[63], 1);
	/* Raw counts carry no values: min and max are bucket bounds, the sum unknown. */
	CHECK(!ht_hist_min(&h).exact && ht_hist_min(&h).ns == 8, "min bound %llu",
	      (unsigned long long)ht_hist_min(&h).ns);
	CHECK(!ht_hist_max(&h).exact && ht_hist_max(&h).ns == UINT64_MAX, "max bound");
	CHECK(!ht_hist_sum(&h, &sum), "sum must be unknown after raw slots");

	/* Mixed with values: still bounds, as the raw part may hold anything in its slots. */
	ht_hist_reset(&h);
	ht_hist_add(&h, 100);
	cpu0[10] = 0;
	ht_hist_add_slots(&h, cpu0); /* 5 values in 8..15 */
	CHECK_EQ_U64(ht_hist_count(&h), 6);
	CHECK(!ht_hist_max(&h).exact && ht_hist_max(&h).ns == 127, "max %llu",
	      (unsigned long long)ht_hist_max(&h).ns);
}

static void test_hist_merge(void)
{
	struct ht_hist a = { 0 }, b = { 0 };
	uint64_t sum;

	ht_hist_add(&a, 10);
	ht_hist_add(&a, 20);
	ht_hist_add(&b, 5);
	ht_hist_add(&b, 3000);
	ht_hist_merge(&a, &b);
	CHECK_EQ_U64(ht_hist_count(&a), 4);
	CHECK_EQ_U64(ht_hist_min(&a).ns, 5);
	CHECK_EQ_U64(ht_hist_max(&a).ns, 3000);
	CHECK(ht_hist_max(&a).exact, "max exact after merging exact hists");
	CHECK(ht_hist_sum(&a, &sum), "sum known");
	CHECK_EQ_U64(sum, 3035);
	CHECK_EQ_U64(a.slots[ht_hist_slot(3000)], 1);

	/* Into an empty one: min and max come over. */
	ht_hist_reset(&b);
	ht_hist_merge(&b, &a);
	CHECK_EQ_U64(ht_hist_min(&b).ns, 5);
	CHECK_EQ_U64(ht_hist_max(&b).ns, 3000);
}

static void test_samples_percentile_empty_and_one(void)
{
	struct ht_samples s = { 0 };
	uint64_t v = 42;

	if (!ASSERT_MSG(!ht_samples_percentile(&s, 50, &v), "empty has no percentile"))
		goto cleanup;
	if (!ASSERT_EQ(v, 42, "v"))
		goto cleanup;
	if (!ASSERT_MSG(ht_samples_push(&s, 777) == 0, "push"))
		goto cleanup;
	if (!ASSERT_MSG(ht_samples_percentile(&s, 0, &v) && v == 777, "p0 of one"))
		goto cleanup;
	if (!ASSERT_MSG(ht_samples_percentile(&s, 50, &v) && v == 777, "p50 of one"))
		goto cleanup;
	if (!ASSERT_MSG(ht_samples_percentile(&s, 100, &v) && v == 777, "p100 of one"))
		goto cleanup;
cleanup:
	ht_samples_free(&s);
}

static void test_samples_percentile_known_sets(void)
{
	struct ht_samples s = { 0 };
	/* 1..10 shuffled. Nearest rank: p50 -> rank 5, p90 -> 9, p99 -> ceil(9.9) = 10. */
	static const uint64_t ten[] = { 7, 3, 10, 1, 9, 5, 2, 8, 6, 4 };
	/* An outlier: p50 is rank 5 (50), p90 rank 9 (90), p99 rank 10 (the outlier). */
	static const uint64_t tail[] = { 90, 10, 1000, 30, 20, 50, 40, 70, 60, 80 };
	uint64_t v;

	for (size_t i = 0; i < 10; i++)
		if (!ASSERT_MSG(ht_samples_push(&s, ten[i]) == 0, "push"))
			goto cleanup;
	if (!ASSERT_MSG(ht_samples_percentile(&s, 50, &v) && v == 5, "p50 = %llu", (unsigned long long)v))
		goto cleanup;
	if (!ASSERT_MSG(ht_samples_percentile(&s, 90, &v) && v == 9, "p90 = %llu", (unsigned long long)v))
		goto cleanup;
	if (!ASSERT_MSG(ht_samples_percentile(&s, 99, &v) && v == 10, "p99 = %llu", (unsigned long long)v))
		goto cleanup;
	if (!ASSERT_MSG(ht_samples_percentile(&s, 0, &v) && v == 1, "p0 = %llu", (unsigned long long)v))
		goto cleanup;
	if (!ASSERT_MSG(ht_samples_percentile(&s, 10, &v) && v == 1, "p10 = %llu", (unsigned long long)v))
		goto cleanup;
	if (!ASSERT_MSG(ht_samples_percentile(&s, 11, &v) && v == 2, "p11 = %llu", (unsigned long long)v))
		goto cleanup;

	ht_samples_clear(&s);
	for (size_t i = 0; i < 10; i++)
		if (!ASSERT_MSG(ht_samples_push(&s, tail[i]) == 0, "push"))
			goto cleanup;
	if (!ASSERT_MSG(ht_samples_percentile(&s, 50, &v) && v == 50, "p50 = %llu", (unsigned long long)v))
		goto cleanup;
	if (!ASSERT_MSG(ht_samples_percentile(&s, 90, &v) && v == 90, "p90 = %llu", (unsigned long long)v))
		goto cleanup;
	if (!ASSERT_MSG(ht_samples_percentile(&s, 99, &v) && v == 1000, "p99 = %llu", (unsigned long long)v))
		goto cleanup;

	/* 100 values 100..1 (reversed): p50 = 50, p90 = 90, p99 = 99 with no rounding slip. */
	ht_samples_clear(&s);
	for (uint64_t i = 100; i >= 1; i--)
		if (!ASSERT_MSG(ht_samples_push(&s, i) == 0, "push"))
			goto cleanup;
	if (!ASSERT_MSG(ht_samples_percentile(&s, 50, &v) && v == 50, "p50 = %llu", (unsigned long long)v))
		goto cleanup;
	if (!ASSERT_MSG(ht_samples_percentile(&s, 90, &v) && v == 90, "p90 = %llu", (unsigned long long)v))
		goto cleanup;
	if (!ASSERT_MSG(ht_samples_percentile(&s, 99, &v) && v == 99, "p99 = %llu", (unsigned long long)v))
		goto cleanup;

	/* 1000 values 1..1000: p99.9 is rank 999; adding after a read re-sorts. */
	ht_samples_clear(&s);
	for (uint64_t i = 1; i <= 999; i++)
		if (!ASSERT_MSG(ht_samples_push(&s, i) == 0, "push"))
			goto cleanup;
	if (!ASSERT_MSG(ht_samples_percentile(&s, 50, &v) && v == 500, "p50 = %llu", (unsigned long long)v))
		goto cleanup;
	if (!ASSERT_MSG(ht_samples_push(&s, 0) == 0, "push"))
		goto cleanup; /* now 0..999 */
	if (!ASSERT_MSG(ht_samples_percentile(&s, 99.9, &v) && v == 998, "p99.9 = %llu",
			(unsigned long long)v))
		goto cleanup;
	if (!ASSERT_MSG(ht_samples_percentile(&s, 0, &v) && v == 0, "p0 = %llu", (unsigned long long)v))
		goto cleanup;
cleanup:
	ht_samples_free(&s);
}

static void test_hist_bucket_bound_percentiles(void)
{
	struct ht_hist h = { 0 };
	uint64_t raw[HT_HIST_SLOTS] = { 0 };
	struct ht_lat_value v;

	/*
	 * 1..100 by slot: {1} {2,3} {4..7} {8..15} {16..31} {32..63} {64..100},
	 * cumulative 1 3 7 15 31 63 100.
	 */
	for (uint64_t i = 1; i <= 100; i++)
		ht_hist_add(&h, i);
	v = ht_hist_percentile(&h, 50); /* rank 50: slot 32..63 */
	CHECK(!v.exact && v.ns == 63, "p50 %llu exact %d", (unsigned long long)v.ns, v.exact);
	v = ht_hist_percentile(&h, 10); /* rank 10: slot 8..15 */
	CHECK(!v.exact && v.ns == 15, "p10 %llu", (unsigned long long)v.ns);
	/* rank 90: slot 64..127, bound lowered to the known max */
	v = ht_hist_percentile(&h, 90);
	CHECK(!v.exact && v.ns == 100, "p90 %llu exact %d", (unsigned long long)v.ns, v.exact);
	v = ht_hist_percentile(&h, 100); /* the last rank is the max itself */
	CHECK(v.exact && v.ns == 100, "p100 %llu exact %d", (unsigned long long)v.ns, v.exact);

	/* From raw slots nothing lowers the bound. */
	ht_hist_reset(&h);
	raw[9] = 90;  /* 512..1023 */
	raw[10] = 10; /* 1024..2047 */
	ht_hist_add_slots(&h, raw);
	v = ht_hist_percentile(&h, 90);
	CHECK(!v.exact && v.ns == 1023, "p90 %llu", (unsigned long long)v.ns);
	v = ht_hist_percentile(&h, 99);
	CHECK(!v.exact && v.ns == 2047, "p99 %llu", (unsigned long long)v.ns);
	v = ht_hist_percentile(&h, 100);
	CHECK(!v.exact && v.ns == 2047, "p100 %llu", (unsigned long long)v.ns);
}

static void test_set_ungrouped_series(void)
{
	struct ht_latset *set = ht_latset_new(HT_LAT_BY_NONE, 0);
	struct ht_lat_group *g;
	struct ht_lat_stats st;
	struct ht_record r;

	if (!ASSERT_MSG(set, "new"))
		goto cleanup;
	for (uint32_t i = 1; i <= 10; i++) {
		r = rec(100 + i, (uint16_t)i, i * 100, i * 10);
		ht_latset_add_record(set, &r);
	}
	if (!ASSERT_EQ(ht_latset_ngroups(set), 1, "ht_latset_ngroups(set)"))
		goto cleanup;
	g = ht_latset_group(set, 0);
	if (!ASSERT_MSG(g->kind == HT_LAT_GROUP_ALL, "group 0 is all"))
		goto cleanup;
	ht_lat_series_stats(&g->series[HT_LAT_TOTAL], HT_LAT_INTERVAL, &st);
	if (!ASSERT_EQ(st.count, 10, "st.count"))
		goto cleanup;
	if (!ASSERT_MSG(st.p50.exact && st.p50.ns == 550, "total p50 %llu", (unsigned long long)st.p50.ns))
		goto cleanup;
	if (!ASSERT_MSG(st.p90.exact && st.p90.ns == 990, "total p90 %llu", (unsigned long long)st.p90.ns))
		goto cleanup;
	if (!ASSERT_MSG(st.p99.exact && st.p99.ns == 1100, "total p99 %llu", (unsigned long long)st.p99.ns))
		goto cleanup;
	if (!ASSERT_MSG(st.max.exact && st.max.ns == 1100, "total max"))
		goto cleanup;
	ht_lat_series_stats(&g->series[HT_LAT_EXIT_HCALL], HT_LAT_INTERVAL, &st);
	if (!ASSERT_MSG(st.p50.exact && st.p50.ns == 500, "exit-hcall p50 %llu", (unsigned long long)st.p50.ns))
		goto cleanup;
	if (!ASSERT_MSG(st.max.ns == 1000, "exit-hcall max"))
		goto cleanup;
	ht_lat_series_stats(&g->series[HT_LAT_HCALL_ENTRY], HT_LAT_INTERVAL, &st);
	if (!ASSERT_MSG(st.p90.exact && st.p90.ns == 90, "hcall-entry p90 %llu",
			(unsigned long long)st.p90.ns))
		goto cleanup;

	/* Saturated components still add up without overflow. */
	r = rec(1, 0, UINT32_MAX, UINT32_MAX);
	ht_latset_add_record(set, &r);
	ht_lat_series_stats(&g->series[HT_LAT_TOTAL], HT_LAT_INTERVAL, &st);
	if (!ASSERT_EQ(st.max.ns, 2ull * UINT32_MAX, "st.max.ns"))
		goto cleanup;
cleanup:
	ht_latset_free(set);
}

static void test_set_grouping_and_other_group(void)
{
	struct ht_latset *set = ht_latset_new(HT_LAT_BY_VCPU, 0);
	struct ht_lat_group *g;
	struct ht_record r;
	const int nkeys = HT_LAT_MAX_GROUPS + 6;

	if (!ASSERT_MSG(set, "new"))
		goto cleanup;
	/* Keys arrive in descending order: the first 64 seen get groups. */
	for (int v = nkeys - 1; v >= 0; v--) {
		r = rec(4242, (uint16_t)v, 100, 10);
		ht_latset_add_record(set, &r);
	}
	/* A key that has a group stays in it. */
	r = rec(4242, (uint16_t)(nkeys - 1), 200, 20);
	ht_latset_add_record(set, &r);

	if (!ASSERT_EQ(ht_latset_ngroups(set), 1 + HT_LAT_MAX_GROUPS + 1, "ht_latset_ngroups(set)"))
		goto cleanup;
	if (!ASSERT_EQ(ht_latset_group(set, 0)->series[HT_LAT_TOTAL].interval.count, nkeys + 1, "ht_latset_group(set, 0)->series[HT_LAT_TOTAL].interval.count"))
		goto cleanup;
	/* Keyed groups come sorted by key. */
	for (size_t i = 1; i <= HT_LAT_MAX_GROUPS; i++) {
		g = ht_latset_group(set, i);
		if (!ASSERT_MSG(g->kind == HT_LAT_GROUP_KEY, "group %zu keyed", i))
			goto cleanup;
		if (!ASSERT_EQ(g->host_pid, 4242, "g->host_pid"))
			goto cleanup;
		if (!ASSERT_EQ(g->vcpu_id, i + 5, "g->vcpu_id"))
			goto cleanup;
	}
	g = ht_latset_group(set, HT_LAT_MAX_GROUPS);
	if (!ASSERT_EQ(g->series[HT_LAT_TOTAL].interval.count, 2, "g->series[HT_LAT_TOTAL].interval.count"))
		goto cleanup;
	if (!ASSERT_EQ(g->series[HT_LAT_TOTAL].interval.max, 220, "g->series[HT_LAT_TOTAL].interval.max"))
		goto cleanup;
	g = ht_latset_group(set, HT_LAT_MAX_GROUPS + 1);
	if (!ASSERT_MSG(g->kind == HT_LAT_GROUP_OTHER, "last is other"))
		goto cleanup;
	if (!ASSERT_EQ(g->series[HT_LAT_TOTAL].interval.count, 6, "g->series[HT_LAT_TOTAL].interval.count"))
		goto cleanup;
	if (!ASSERT_MSG(ht_latset_group(set, HT_LAT_MAX_GROUPS + 2) == NULL, "no group past the end"))
		goto cleanup;
cleanup:
	ht_latset_free(set);
}

static void test_set_vcpu_and_vm_keys(void)
{
	struct ht_latset *vcpu = ht_latset_new(HT_LAT_BY_VCPU, 0);
	struct ht_latset *vm = ht_latset_new(HT_LAT_BY_VM, 0);
	/* vCPU 0 of two VMs, and vCPU 1 of the first. */
	struct ht_record rs[] = { rec(200, 0, 1, 1), rec(100, 0, 1, 1), rec(100, 1, 1, 1),
				  rec(100, 0, 1, 1) };

	if (!ASSERT_MSG(vcpu && vm, "new"))
		goto cleanup;
	for (size_t i = 0; i < 4; i++) {
		ht_latset_add_record(vcpu, &rs[i]);
		ht_latset_add_record(vm, &rs[i]);
	}
	if (!ASSERT_EQ(ht_latset_ngroups(vcpu), 4, "ht_latset_ngroups(vcpu)"))
		goto cleanup; /* all + (100,0) (100,1) (200,0) */
	if (!ASSERT_EQ(ht_latset_group(vcpu, 1)->host_pid, 100, "ht_latset_group(vcpu, 1)->host_pid"))
		goto cleanup;
	if (!ASSERT_EQ(ht_latset_group(vcpu, 1)->vcpu_id, 0, "ht_latset_group(vcpu, 1)->vcpu_id"))
		goto cleanup;
	if (!ASSERT_EQ(ht_latset_group(vcpu, 1)->series[HT_LAT_TOTAL].interval.count, 2, "ht_latset_group(vcpu, 1)->series[HT_LAT_TOTAL].interval.count"))
		goto cleanup;
	if (!ASSERT_EQ(ht_latset_group(vcpu, 2)->vcpu_id, 1, "ht_latset_group(vcpu, 2)->vcpu_id"))
		goto cleanup;
	if (!ASSERT_EQ(ht_latset_group(vcpu, 3)->host_pid, 200, "ht_latset_group(vcpu, 3)->host_pid"))
		goto cleanup;
	if (!ASSERT_EQ(ht_latset_ngroups(vm), 3, "ht_latset_ngroups(vm)"))
		goto cleanup; /* all + pid 100 + pid 200 */
	if (!ASSERT_EQ(ht_latset_group(vm, 1)->host_pid, 100, "ht_latset_group(vm, 1)->host_pid"))
		goto cleanup;
	if (!ASSERT_EQ(ht_latset_group(vm, 1)->series[HT_LAT_EXIT_HCALL].interval.count, 3, "ht_latset_group(vm, 1)->series[HT_LAT_EXIT_HCALL].interval.count"))
		goto cleanup;
	if (!ASSERT_EQ(ht_latset_group(vm, 2)->host_pid, 200, "ht_latset_group(vm, 2)->host_pid"))
		goto cleanup;
cleanup:
	ht_latset_free(vcpu);
	ht_latset_free(vm);
}

static void test_set_interval_reset_vs_cumulative(void)
{
	struct ht_latset *set = ht_latset_new(HT_LAT_BY_VM, 0);
	struct ht_lat_series *s;
	struct ht_lat_stats st;
	struct ht_record r;

	if (!ASSERT_MSG(set, "new"))
		goto cleanup;
	for (uint32_t i = 1; i <= 3; i++) {
		r = rec(7, 0, i * 1000, 0);
		ht_latset_add_record(set, &r);
	}
	ht_latset_next_interval(set);
	s = &ht_latset_group(set, 1)->series[HT_LAT_EXIT_HCALL];
	if (!ASSERT_EQ(s->interval.count, 0, "s->interval.count"))
		goto cleanup;
	if (!ASSERT_EQ(s->samples.len, 0, "s->samples.len"))
		goto cleanup;
	if (!ASSERT_EQ(s->cumulative.count, 3, "s->cumulative.count"))
		goto cleanup;
	ht_lat_series_stats(s, HT_LAT_INTERVAL, &st);
	if (!ASSERT_EQ(st.count, 0, "st.count"))
		goto cleanup;

	r = rec(7, 0, 50, 0);
	ht_latset_add_record(set, &r);
	r = rec(7, 0, 60, 0);
	ht_latset_add_record(set, &r);
	s = &ht_latset_group(set, 1)->series[HT_LAT_EXIT_HCALL];
	ht_lat_series_stats(s, HT_LAT_INTERVAL, &st);
	if (!ASSERT_EQ(st.count, 2, "st.count"))
		goto cleanup;
	if (!ASSERT_MSG(st.p50.exact && st.p50.ns == 50, "interval p50 %llu", (unsigned long long)st.p50.ns))
		goto cleanup;
	if (!ASSERT_MSG(st.max.exact && st.max.ns == 60, "interval max"))
		goto cleanup;
	/* Since start: 50 60 1000 2000 3000, percentiles from buckets, max exact. */
	ht_lat_series_stats(s, HT_LAT_CUMULATIVE, &st);
	if (!ASSERT_EQ(st.count, 5, "st.count"))
		goto cleanup;
	if (!ASSERT_MSG(!st.p50.exact && st.p50.ns == 1023, "cumulative p50 %llu",
			(unsigned long long)st.p50.ns))
		goto cleanup;
	/* p90 is rank 5 of 5: the maximum, known exactly. */
	if (!ASSERT_MSG(st.p90.exact && st.p90.ns == 3000, "cumulative p90 %llu",
			(unsigned long long)st.p90.ns))
		goto cleanup;
	if (!ASSERT_MSG(st.max.exact && st.max.ns == 3000, "cumulative max"))
		goto cleanup;
	if (!ASSERT_EQ(ht_latset_group(set, 0)->series[HT_LAT_TOTAL].cumulative.count, 5, "ht_latset_group(set, 0)->series[HT_LAT_TOTAL].cumulative.count"))
		goto cleanup;
cleanup:
	ht_latset_free(set);
}

static void test_set_sample_budget(void)
{
	/* 4 samples per interval: the second record only fits its total. */
	struct ht_latset *set = ht_latset_new(HT_LAT_BY_NONE, 4);
	struct ht_lat_group *g;
	struct ht_lat_stats st;
	struct ht_record r;

	if (!ASSERT_MSG(set, "new"))
		goto cleanup;
	r = rec(1, 0, 100, 10);
	ht_latset_add_record(set, &r);
	r = rec(1, 0, 300, 30);
	ht_latset_add_record(set, &r);
	g = ht_latset_group(set, 0);
	ht_lat_series_stats(&g->series[HT_LAT_TOTAL], HT_LAT_INTERVAL, &st);
	if (!ASSERT_MSG(st.p50.exact && st.p50.ns == 110, "total p50 exact %llu",
			(unsigned long long)st.p50.ns))
		goto cleanup;
	ht_lat_series_stats(&g->series[HT_LAT_EXIT_HCALL], HT_LAT_INTERVAL, &st);
	if (!ASSERT_MSG(!st.p50.exact && st.p50.ns == 127, "exit-hcall p50 bound %llu",
			(unsigned long long)st.p50.ns))
		goto cleanup;
	if (!ASSERT_MSG(st.max.exact && st.max.ns == 300, "max stays exact"))
		goto cleanup;

	/* A new interval has a new budget. */
	ht_latset_next_interval(set);
	r = rec(1, 0, 100, 10);
	ht_latset_add_record(set, &r);
	ht_lat_series_stats(&g->series[HT_LAT_HCALL_ENTRY], HT_LAT_INTERVAL, &st);
	if (!ASSERT_MSG(st.p50.exact && st.p50.ns == 10, "hcall-entry p50 exact again"))
		goto cleanup;
cleanup:
	ht_latset_free(set);
}

static void test_set_raw_slots(void)
{
	struct ht_latset *set = ht_latset_new(HT_LAT_BY_VCPU, 0);
	uint64_t cpu0[HT_HIST_SLOTS] = { 0 }, cpu1[HT_HIST_SLOTS] = { 0 };
	struct ht_lat_stats st;
	struct ht_lat_group *g;

	if (!ASSERT_MSG(set, "new"))
		goto cleanup;
	cpu0[10] = 3;
	cpu1[10] = 1;
	cpu1[11] = 1;
	ht_latset_add_slots(set, HT_LAT_TOTAL, 9, 2, cpu0);
	ht_latset_add_slots(set, HT_LAT_TOTAL, 9, 2, cpu1);
	ht_latset_add_slots(set, HT_LAT_NSERIES, 9, 2, cpu1); /* ignored */
	if (!ASSERT_EQ(ht_latset_ngroups(set), 2, "ht_latset_ngroups(set)"))
		goto cleanup;
	g = ht_latset_group(set, 1);
	if (!ASSERT_EQ(g->vcpu_id, 2, "g->vcpu_id"))
		goto cleanup;
	ht_lat_series_stats(&g->series[HT_LAT_TOTAL], HT_LAT_INTERVAL, &st);
	if (!ASSERT_EQ(st.count, 5, "st.count"))
		goto cleanup;
	if (!ASSERT_MSG(!st.p50.exact && st.p50.ns == 2047, "p50 bound %llu", (unsigned long long)st.p50.ns))
		goto cleanup;
	if (!ASSERT_MSG(!st.max.exact && st.max.ns == 4095, "max bound %llu", (unsigned long long)st.max.ns))
		goto cleanup;
	if (!ASSERT_EQ(g->series[HT_LAT_EXIT_HCALL].interval.count, 0, "g->series[HT_LAT_EXIT_HCALL].interval.count"))
		goto cleanup;
	if (!ASSERT_EQ(ht_latset_group(set, 0)->series[HT_LAT_TOTAL].cumulative.count, 5, "ht_latset_group(set, 0)->series[HT_LAT_TOTAL].cumulative.count"))
		goto cleanup;
cleanup:
	ht_latset_free(set);
}

int main(void)
{
	RUN(test_slot_of_known_values);
	RUN(test_slot_bounds_tile_u64);
	RUN(test_hist_add_count_min_max_sum);
	RUN(test_hist_empty);
	RUN(test_hist_add_per_cpu_slot_arrays);
	RUN(test_hist_merge);
	RUN(test_samples_percentile_empty_and_one);
	RUN(test_samples_percentile_known_sets);
	RUN(test_hist_bucket_bound_percentiles);
	RUN(test_set_ungrouped_series);
	RUN(test_set_grouping_and_other_group);
	RUN(test_set_vcpu_and_vm_keys);
	RUN(test_set_interval_reset_vs_cumulative);
	RUN(test_set_sample_budget);
	RUN(test_set_raw_slots);
	return ht_test_exit_status();
}
