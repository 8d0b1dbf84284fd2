// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/chrome_time.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

void ht_chrome_us_text(char *buf, size_t len, __s64 ns)
{
	/* Negated as unsigned: -ns overflows for INT64_MIN (a crafted file's time can be anything). */
	__u64 abs_ns = ns < 0 ? -(__u64)ns : (__u64)ns;

	snprintf(buf, len, "%s%llu.%03llu", ns < 0 ? "-" : "", (unsigned long long)(abs_ns / 1000),
		 (unsigned long long)(abs_ns % 1000));
}

double ht_chrome_us_value(__s64 ns)
{
	char buf[32];

	ht_chrome_us_text(buf, sizeof(buf), ns);
	return strtod(buf, NULL);
}

void ht_chrome_dur_text_before(char *buf, size_t len, double start, __u64 ns, double next)
{
	double d = ht_chrome_us_value((__s64)ns);

	if (start + d <= next || d <= 0) {
		ht_chrome_us_text(buf, len, (__s64)ns);
		return;
	}
	for (int i = 0; i < 8 && start + d > next; i++)
		d = nextafter(d, 0);
	snprintf(buf, len, "%.17g", d);
}
