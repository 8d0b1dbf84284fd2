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

#endif
