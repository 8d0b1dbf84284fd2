// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "tracefile/wallclock.h"

#include <stdio.h>
#include <time.h>

void ht_format_wallclock(char *buf, size_t len, const struct ht_file_header *h, __u64 monotonic_ns,
			 enum ht_time_style style)
{
	/* The header read both clocks at the same instant when recording started. */
	__s64 real = (__s64)h->start_realtime_ns + ((__s64)monotonic_ns - (__s64)h->start_monotonic_ns);
	time_t secs = (time_t)(real / 1000000000);
	long long frac = real % 1000000000;
	struct tm tm;
	char date[40];

	gmtime_r(&secs, &tm);
	if (style == HT_TIME_ISO) {
		strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
		snprintf(buf, len, "%s.%09lldZ", date, frac);
	} else {
		strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S", &tm);
		snprintf(buf, len, "%s.%06lld UTC", date, frac / 1000);
	}
}
