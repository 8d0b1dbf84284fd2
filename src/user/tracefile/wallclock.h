/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Record times (CLOCK_MONOTONIC) as wall-clock time, through the file header's anchor. */
#ifndef HT_WALLCLOCK_H
#define HT_WALLCLOCK_H

#include <stddef.h>
#include "hypertrace/trace_file.h"

enum ht_time_style {
	HT_TIME_ISO,     /* 2026-11-22T03:40:01.123456789Z */
	HT_TIME_HUMAN,   /* 2026-11-22 03:40:01.123456 UTC */
};

void ht_format_wallclock(char *buf, size_t len, const struct ht_file_header *h, __u64 monotonic_ns,
			 enum ht_time_style style);
/* to - from in seconds, negative if to is earlier (no unsigned wrap-around). */
double ht_seconds_between(__u64 from_ns, __u64 to_ns);

#endif
