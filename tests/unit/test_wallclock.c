// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Record times as wall-clock text: true for every pair of 64-bit clock values a
 * file can hold, including crafted ones (no signed overflow: this runs under
 * UBSan) and times before 1970; durations never wrap around.
 */
#include <stdint.h>
#include "tracefile/wallclock.h"
#include "test.h"

static const char *wallclock(__u64 start_realtime, __u64 start_monotonic, __u64 t,
			     enum ht_time_style style)
{
	static char buf[64];
	struct ht_file_header h = { .start_realtime_ns = start_realtime,
				    .start_monotonic_ns = start_monotonic };

	ht_format_wallclock(buf, sizeof(buf), &h, t, style);
	return buf;
}

#define CHECK_STR(got, want) ASSERT_STREQ((got), (want), #got)

static void a_record_time_is_the_start_plus_its_monotonic_offset(void)
{
	/* 2026-11-22T03:40:01.123456789Z started at monotonic 5 s; a record 2.5 s later. */
	__u64 start = 1795318801123456789ull;

	CHECK_STR(wallclock(start, 5000000000ull, 7500000000ull, HT_TIME_ISO),
		  "2026-11-22T03:40:03.623456789Z");
	CHECK_STR(wallclock(start, 5000000000ull, 7500000000ull, HT_TIME_HUMAN),
		  "2026-11-22 03:40:03.623456 UTC");
}

static void a_time_before_1970_counts_back_from_the_epoch(void)
{
	CHECK_STR(wallclock(0, 2000000000ull, 1500000000ull, HT_TIME_ISO),
		  "1969-12-31T23:59:59.500000000Z");
	CHECK_STR(wallclock(0, 1, 0, HT_TIME_ISO), "1969-12-31T23:59:59.999999999Z");
	CHECK_STR(wallclock(1000000000ull, 3000000000ull, 0, HT_TIME_HUMAN),
		  "1969-12-31 23:59:58.000000 UTC");
}

static void the_extremes_of_crafted_clocks_neither_overflow_nor_wrap(void)
{
	CHECK_STR(wallclock(UINT64_MAX, 0, UINT64_MAX, HT_TIME_ISO), "3139-02-09T23:09:07.419103230Z");
	CHECK_STR(wallclock(0, UINT64_MAX, 0, HT_TIME_ISO), "1385-06-12T00:25:26.290448385Z");
	CHECK_STR(wallclock(UINT64_MAX, UINT64_MAX, 0, HT_TIME_ISO), "1970-01-01T00:00:00.000000000Z");
}

static void a_duration_with_the_end_before_the_start_is_negative(void)
{
	CHECK(ht_seconds_between(10000000000ull, 6710000000ull) == -3.29, "%f",
	      ht_seconds_between(10000000000ull, 6710000000ull));
	CHECK(ht_seconds_between(1, 1000000001ull) == 1.0, "%f", ht_seconds_between(1, 1000000001ull));
	CHECK(ht_seconds_between(UINT64_MAX, 0) < -1.8e10, "%f", ht_seconds_between(UINT64_MAX, 0));
}

int main(void)
{
	RUN(a_record_time_is_the_start_plus_its_monotonic_offset);
	RUN(a_time_before_1970_counts_back_from_the_epoch);
	RUN(the_extremes_of_crafted_clocks_neither_overflow_nor_wrap);
	RUN(a_duration_with_the_end_before_the_start_is_negative);
	return ht_test_exit_status();
}
