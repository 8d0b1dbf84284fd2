// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Unit tests of src/common/parse_number.c, the number parser of the guest programs and the host tool. */
#include "common/parse_number.h"
#include "test.h"
#include "common/util.h"

static void test_parse_accepts(void)
{
	struct {
		const char *s;
		uint64_t want;
	} ok[] = {
		{ "0", 0 },	   { "42", 42 },	 { "0x2A", 42 },
		{ "0X2a", 42 },	   { "010", 10 },	 { "18446744073709551615", UINT64_MAX },
		{ "0xffffffffffffffff", UINT64_MAX },
	};
	uint64_t v;

	for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
		CHECK(ht_parse_u64(ok[i].s, 0, UINT64_MAX, &v), "rejected '%s'", ok[i].s);
		CHECK(v == ok[i].want, "'%s' -> %llu", ok[i].s, (unsigned long long)v);
	}
}

static void test_parse_rejects(void)
{
	const char *bad[] = { "",   "12abc", "-1",	 "+1",   " 1",  "1 ",
			      "0x", "0x-1",  "0x 1", "1e3", "18446744073709551616",
			      "0x10000000000000000", "abc", "1.5" };
	uint64_t v = 7;

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK(!ht_parse_u64(bad[i], 0, UINT64_MAX, &v), "accepted '%s'", bad[i]);
	CHECK(!ht_parse_u64(NULL, 0, UINT64_MAX, &v), "accepted NULL");
	CHECK(v == 7, "output written on failure");
}

static void test_parse_range(void)
{
	uint64_t v;

	CHECK(!ht_parse_u64("0", 1, 10, &v), "below min accepted");
	CHECK(!ht_parse_u64("11", 1, 10, &v), "above max accepted");
	CHECK(ht_parse_u64("1", 1, 10, &v) && v == 1, "min rejected");
	CHECK(ht_parse_u64("10", 1, 10, &v) && v == 10, "max rejected");
}

int main(void)
{
	RUN(test_parse_accepts);
	RUN(test_parse_rejects);
	RUN(test_parse_range);
	return ht_test_exit_status();
}
