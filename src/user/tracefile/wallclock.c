// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "tracefile/wallclock.h"

#include <stdio.h>
#include <time.h>

#define NS_PER_S 1000000000

void ht_format_wallclock(char *buf, size_t len, const struct ht_file_header *h, __u64 monotonic_ns,
			 enum ht_time_style style)
{
	/*
	 * The header read both clocks at the same instant when recording started.
	 * A file can hold any 64-bit values there and in a record, so the sum is
	 * taken in 128 bits: it never overflows, and a time before 1970 (a record
	 * before the start, or a crafted file) stays negative instead of wrapping.
	 * |real| < 2^65 ns, about 1170 years either side of 1970: gmtime_r covers it.
	 */
	__int128 real = (__int128)h->start_realtime_ns +
			((__int128)monotonic_ns - (__int128)h->start_monotonic_ns);
	__int128 secs = real / NS_PER_S;
	long long frac = (long long)(real % NS_PER_S);
	struct tm tm;
	char date[40];

	if (frac < 0) { /* floor, so that 0.5 s before 1970 is 23:59:59.5 */
		frac += NS_PER_S;
		secs--;
	}
	time_t t = (time_t)secs;
	if (!gmtime_r(&t, &tm)) {
		snprintf(buf, len, "(time out of range)");
		return;
	}
	if (style == HT_TIME_ISO) {
		strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
		snprintf(buf, len, "%s.%09lldZ", date, frac);
	} else {
		strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S", &tm);
		snprintf(buf, len, "%s.%06lld UTC", date, frac / 1000);
	}
}

double ht_seconds_between(__u64 from_ns, __u64 to_ns)
{
	return to_ns >= from_ns ? (double)(to_ns - from_ns) / 1e9 : -((double)(from_ns - to_ns) / 1e9);
}
