/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Times in the Chrome trace JSON: microseconds, written with every digit of
 * the ns ("12.345"), and the double a JSON reader makes of that text, which
 * the writers need to keep ends and starts in the order the viewers compare
 * them in.
 */
#ifndef HT_CHROME_TIME_H
#define HT_CHROME_TIME_H

#include <stddef.h>
#include <linux/types.h>

/* ns as microseconds with all digits kept: "12.345", "-0.001". */
void ht_chrome_us_text(char *buf, size_t len, __s64 ns);
/* The double a JSON reader makes of that text (strtod rounds as JavaScript does). */
double ht_chrome_us_value(__s64 ns);
/*
 * A duration's text when the next slice of its track starts at next (the
 * double of its ts text): exact, or shorter by less than a ns when start +
 * dur, added in doubles as the viewers do, would pass next (then they would
 * nest the next slice in this one).
 */
void ht_chrome_dur_text_before(char *buf, size_t len, double start, __u64 ns, double next);

#endif
