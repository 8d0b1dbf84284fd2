// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The fast CRC-32 must equal zlib's crc32 bit for bit: it checksums the trace file. */
#include <stdlib.h>
#include <zlib.h>
#include "tracefile/crc32.h"
#include "test.h"

static unsigned char buf[70000];

static void fill(unsigned int seed)
{
	srand(seed);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)rand();
}

static void every_length_up_to_1100_matches_zlib(void)
{
	fill(1);
	for (size_t len = 0; len <= 1100; len++)
		CHECK((uint32_t)crc32(0, buf, (uInt)len) == ht_crc32(0, buf, len), "length %zu", len);
}

static void unaligned_starts_and_big_blocks_match_zlib(void)
{
	fill(2);
	for (size_t off = 0; off < 16; off++)
		for (size_t len = 60000; len < 60100; len += 7)
			CHECK((uint32_t)crc32(0, buf + off, (uInt)len) == ht_crc32(0, buf + off, len),
			      "offset %zu length %zu", off, len);
}

static void chaining_matches_zlib(void)
{
	fill(3);
	uint32_t z = (uint32_t)crc32(0, buf, 1000);
	z = (uint32_t)crc32(z, buf + 1000, 50000);
	uint32_t h = ht_crc32(0, buf, 1000);
	h = ht_crc32(h, buf + 1000, 50000);
	CHECK(z == h, "chained %08x != %08x", z, h);
}

static void known_answer(void)
{
	/* The standard check value of CRC-32/ISO-HDLC. */
	CHECK(ht_crc32(0, "123456789", 9) == 0xcbf43926u, "check value");
	static unsigned char zeros[4096];
	CHECK(ht_crc32(0, zeros, sizeof(zeros)) == (uint32_t)crc32(0, zeros, sizeof(zeros)), "zeros");
	printf("    (carry-less multiply path %s on this CPU)\n", ht_crc32_accelerated() ? "used" : "NOT available");
}

int main(void)
{
	RUN(every_length_up_to_1100_matches_zlib);
	RUN(unaligned_starts_and_big_blocks_match_zlib);
	RUN(chaining_matches_zlib);
	RUN(known_answer);
	return ht_test_exit_status();
}
