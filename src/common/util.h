/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Small helpers shared by the host tool and the guest programs, so each is
 * written once: array length, min/max, a saturating sum and clock reads.
 */
#ifndef HT_COMMON_UTIL_H
#define HT_COMMON_UTIL_H

#include <stdint.h>
#include <time.h>

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif
#define HT_MIN(a, b) ((a) < (b) ? (a) : (b))
#define HT_MAX(a, b) ((a) > (b) ? (a) : (b))
/* A macro's value as a string literal (a limit in a help text). */
#define HT_STR_(x) #x
#define HT_STR(x) HT_STR_(x)

/* qsort's comparison of two uint64_t, ascending. */
static inline int ht_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* a + b, or UINT64_MAX where that would wrap: sums of counts a file gives never wrap. */
static inline uint64_t ht_sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/*
 * a - b of two cumulative counts, the later first; a count that went down
 * (a file that is not a recording's) is 0 and counted in *went_down.
 */
static inline uint64_t ht_sub_or_count(uint64_t a, uint64_t b, uint64_t *went_down)
{
	if (a >= b)
		return a - b;
	(*went_down)++;
	return 0;
}

/* clk in ns. CLOCK_MONOTONIC is the clock bpf_ktime_get_ns() reads, so record times compare. */
static inline uint64_t ht_clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t ht_monotonic_ns(void)
{
	return ht_clock_ns(CLOCK_MONOTONIC);
}

/* The time left until due: 0 once it is due or past (an overdue time never wraps around). */
static inline uint64_t ht_ns_until(uint64_t due, uint64_t now)
{
	return due > now ? due - now : 0;
}

#endif
