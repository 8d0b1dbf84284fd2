// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Option values are parsed strictly: the whole string, in range, or refused. */
#include <stdint.h>
#include "parse.h"
#include "test.h"

static void integers_are_whole_and_in_range(void)
{
	uint64_t v;

	CHECK(ht_parse_u64("1000", UINT32_MAX, &v) && v == 1000, "1000");
	CHECK(ht_parse_u64("0x81", UINT32_MAX, &v) && v == 0x81, "0x81");
	CHECK(ht_parse_u64("4294967295", UINT32_MAX, &v) && v == 4294967295u, "max");
	CHECK(!ht_parse_u64("4294967296", UINT32_MAX, &v), "over max");
	CHECK(!ht_parse_u64("12abc", UINT32_MAX, &v), "trailing junk");
	CHECK(!ht_parse_u64("-1", UINT32_MAX, &v), "negative");
	CHECK(!ht_parse_u64(" 1", UINT32_MAX, &v), "leading blank");
	CHECK(!ht_parse_u64("", UINT32_MAX, &v), "empty");
	CHECK(!ht_parse_u64("99999999999999999999999", UINT64_MAX, &v), "overflow");
}

static void seconds_allow_decimals_only_when_finite_and_positive(void)
{
	double d;

	CHECK(ht_parse_seconds("1", 100, &d) && d == 1.0, "1");
	CHECK(ht_parse_seconds("0.25", 100, &d) && d == 0.25, "0.25");
	CHECK(!ht_parse_seconds("-1", 100, &d), "negative");
	CHECK(!ht_parse_seconds("1s", 100, &d), "unit suffix");
	CHECK(!ht_parse_seconds("inf", 100, &d), "inf");
	CHECK(!ht_parse_seconds("nan", 100, &d), "nan");
	CHECK(!ht_parse_seconds("101", 100, &d), "over max");
}

static void sizes_take_binary_suffixes(void)
{
	uint64_t v;

	CHECK(ht_parse_size("4096", &v) && v == 4096, "plain");
	CHECK(ht_parse_size("16M", &v) && v == 16u << 20, "16M");
	CHECK(ht_parse_size("64k", &v) && v == 64u << 10, "64k");
	CHECK(ht_parse_size("1G", &v) && v == 1u << 30, "1G");
	CHECK(!ht_parse_size("M", &v), "suffix only");
	CHECK(!ht_parse_size("16MB", &v), "two-letter suffix");
	CHECK(!ht_parse_size("17179869184G", &v), "overflow");
}

int main(void)
{
	RUN(integers_are_whole_and_in_range);
	RUN(seconds_allow_decimals_only_when_finite_and_positive);
	RUN(sizes_take_binary_suffixes);
	return ht_test_exit_status();
}
