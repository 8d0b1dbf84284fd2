// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320) by folding with
 * carry-less multiplication, after "Fast CRC Computation for Generic
 * Polynomials Using PCLMULQDQ Instruction" (Gopal, Ozturk et al., Intel,
 * 2009): four 128-bit lanes fold 64 bytes per step, then fold to 128 bits,
 * to 64, and a Barrett reduction gives the 32-bit remainder. Lengths that are
 * not a multiple of 16, and CPUs without PCLMULQDQ, go through zlib.
 */
#include "tracefile/crc32.h"

#include <zlib.h>

#if defined(__x86_64__)
#include <immintrin.h>

#define TARGET __attribute__((target("pclmul,sse4.1")))

/* The paper's constants for the reflected CRC-32 polynomial. */
static const uint64_t fold_by_4[2] __attribute__((aligned(16))) = { 0x0154442bd4ull, 0x01c6e41596ull };
static const uint64_t fold_by_1[2] __attribute__((aligned(16))) = { 0x01751997d0ull, 0x00ccaa009eull };
static const uint64_t fold_64[2] __attribute__((aligned(16))) = { 0x0163cd6124ull, 0 };
static const uint64_t barrett[2] __attribute__((aligned(16))) = { 0x01db710641ull, 0x01f7011641ull };

static TARGET inline __m128i fold(__m128i acc, __m128i k, __m128i next)
{
	__m128i lo = _mm_clmulepi64_si128(acc, k, 0x00);
	__m128i hi = _mm_clmulepi64_si128(acc, k, 0x11);

	return _mm_xor_si128(_mm_xor_si128(hi, lo), next);
}

/* crc is zlib's internal (inverted) register; len >= 64 and a multiple of 16. */
static TARGET uint32_t crc32_clmul(uint32_t crc, const unsigned char *buf, size_t len)
{
	__m128i x1 = _mm_loadu_si128((const __m128i *)(buf + 0));
	__m128i x2 = _mm_loadu_si128((const __m128i *)(buf + 16));
	__m128i x3 = _mm_loadu_si128((const __m128i *)(buf + 32));
	__m128i x4 = _mm_loadu_si128((const __m128i *)(buf + 48));
	__m128i k = _mm_load_si128((const __m128i *)fold_by_4);
	__m128i x0, mask;

	x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)crc));
	buf += 64;
	len -= 64;
	while (len >= 64) {
		x1 = fold(x1, k, _mm_loadu_si128((const __m128i *)(buf + 0)));
		x2 = fold(x2, k, _mm_loadu_si128((const __m128i *)(buf + 16)));
		x3 = fold(x3, k, _mm_loadu_si128((const __m128i *)(buf + 32)));
		x4 = fold(x4, k, _mm_loadu_si128((const __m128i *)(buf + 48)));
		buf += 64;
		len -= 64;
	}
	/* Four lanes into one. */
	k = _mm_load_si128((const __m128i *)fold_by_1);
	x1 = fold(x1, k, x2);
	x1 = fold(x1, k, x3);
	x1 = fold(x1, k, x4);
	for (; len >= 16; buf += 16, len -= 16)
		x1 = fold(x1, k, _mm_loadu_si128((const __m128i *)buf));

	/* 128 bits to 64. */
	x2 = _mm_clmulepi64_si128(x1, k, 0x10);
	mask = _mm_setr_epi32(~0, 0, ~0, 0);
	x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), x2);
	x0 = _mm_loadl_epi64((const __m128i *)fold_64);
	x2 = _mm_srli_si128(x1, 4);
	x1 = _mm_and_si128(x1, mask);
	x1 = _mm_xor_si128(_mm_clmulepi64_si128(x1, x0, 0x00), x2);

	/* Barrett reduction to 32 bits. */
	x0 = _mm_load_si128((const __m128i *)barrett);
	x2 = _mm_and_si128(x1, mask);
	x2 = _mm_clmulepi64_si128(x2, x0, 0x10);
	x2 = _mm_and_si128(x2, mask);
	x2 = _mm_clmulepi64_si128(x2, x0, 0x00);
	x1 = _mm_xor_si128(x1, x2);
	return (uint32_t)_mm_extract_epi32(x1, 1);
}

int ht_crc32_accelerated(void)
{
	static int has = -1;

	if (has < 0)
		has = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
	return has;
}

uint32_t ht_crc32(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	if (len >= 64 && ht_crc32_accelerated()) {
		size_t body = len & ~(size_t)15;
		crc = ~crc32_clmul(~crc, p, body);
		p += body;
		len -= body;
	}
	return len ? (uint32_t)crc32(crc, p, (uInt)len) : crc;
}

#else

int ht_crc32_accelerated(void)
{
	return 0;
}

uint32_t ht_crc32(uint32_t crc, const void *buf, size_t len)
{
	return (uint32_t)crc32(crc, buf, (uInt)len);
}

#endif
