// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Chrome trace JSON times: microseconds with every digit of the ns, for
 * every 64-bit value a crafted file can give (no signed overflow: this runs
 * under UBSan), and the double a JSON reader makes of them.
 */
#include <stdint.h>
#include "export/chrome_time.h"
#include "test.h"

static const char *us_text(__s64 ns)
{
	static char buf[32];

	ht_chrome_us_text(buf, sizeof(buf), ns);
	return buf;
}

static void microseconds_keep_every_digit_of_the_ns(void)
{
	ASSERT_STREQ(us_text(0), "0.000", "0");
	ASSERT_STREQ(us_text(12345), "12.345", "12345 ns");
	ASSERT_STREQ(us_text(-1), "-0.001", "-1 ns");
	ASSERT_STREQ(us_text(-1234567), "-1234.567", "-1234567 ns");
}

/* The extremes: INT64_MIN has no positive twin in 64 signed bits. */
static void the_extremes_of_64_bits_are_written_whole(void)
{
	ASSERT_STREQ(us_text(INT64_MAX), "9223372036854775.807", "INT64_MAX");
	ASSERT_STREQ(us_text(INT64_MIN), "-9223372036854775.808", "INT64_MIN");
	ASSERT_MSG(ht_chrome_us_value(INT64_MIN) < -9.2e15, "INT64_MIN read back as %f", ht_chrome_us_value(INT64_MIN));
}

int main(void)
{
	RUN(microseconds_keep_every_digit_of_the_ns);
	RUN(the_extremes_of_64_bits_are_written_whole);
	return ht_test_exit_status();
}
