// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "tracefile/block_codec.h"

#include <errno.h>
#include <string.h>
#include <zlib.h>

/* Speed matters more than the last percent: the drain runs it on every block. */
#define DEFLATE_LEVEL Z_BEST_SPEED

_Static_assert(sizeof(struct ht_record) % 8 == 0, "records are whole u64 words");

size_t ht_block_encoded_bound(unsigned int n)
{
	return compressBound((uLong)n * sizeof(struct ht_record));
}

size_t ht_block_encode(const struct ht_record *recs, unsigned int n, unsigned char *out,
		       size_t out_cap, void *scratch)
{
	const unsigned char *in = (const unsigned char *)recs;
	__u64 *cols = scratch;
	uLongf len = out_cap;

	for (size_t k = 0; k < HT_RECORD_WORDS; k++) {
		__u64 prev = 0, w;
		for (unsigned int i = 0; i < n; i++) {
			memcpy(&w, in + (size_t)i * sizeof(struct ht_record) + k * 8, 8);
			cols[k * n + i] = w - prev;
			prev = w;
		}
	}
	if (compress2(out, &len, scratch, (uLong)n * sizeof(struct ht_record), DEFLATE_LEVEL) != Z_OK)
		return 0;
	return len;
}

int ht_block_decode(const unsigned char *in, size_t in_len, unsigned int n, struct ht_record *out,
		    void *scratch)
{
	uLongf len = (uLongf)n * sizeof(struct ht_record);
	unsigned char *dst = (unsigned char *)out;
	const __u64 *cols = scratch;

	if (uncompress(scratch, &len, in, (uLong)in_len) != Z_OK || len != (uLongf)n * sizeof(struct ht_record))
		return -EINVAL;
	for (size_t k = 0; k < HT_RECORD_WORDS; k++) {
		__u64 w = 0;
		for (unsigned int i = 0; i < n; i++) {
			w += cols[k * n + i];
			memcpy(dst + (size_t)i * sizeof(struct ht_record) + k * 8, &w, 8);
		}
	}
	return 0;
}
