/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The compressed record block encoding (HT_ENCODING_DELTA_ZLIB), optional in
 * trace files (record --compress). The records of a block are seen as ten
 * little-endian u64 columns; each column is delta-coded against the previous
 * record (mod 2^64), the columns are stored one after the other, and the
 * whole is deflated (zlib format). Consecutive hypercall records differ in few
 * bytes, so this turns 80 bytes into about a tenth of that.
 */
#ifndef HT_BLOCK_CODEC_H
#define HT_BLOCK_CODEC_H

#include <stddef.h>
#include "hypertrace/record.h"

#define HT_RECORD_WORDS (sizeof(struct ht_record) / 8)

/* Largest encoded size for n records (zlib's bound on the transformed bytes). */
size_t ht_block_encoded_bound(unsigned int n);
/*
 * Encodes n records into out (capacity out_cap), using scratch of
 * n * sizeof(struct ht_record) bytes. Returns the encoded length, or 0 on failure.
 */
size_t ht_block_encode(const struct ht_record *recs, unsigned int n, unsigned char *out,
		       size_t out_cap, void *scratch);
/* Decodes into n records; scratch as above. 0, or -EINVAL if the data is not n records. */
int ht_block_decode(const unsigned char *in, size_t in_len, unsigned int n, struct ht_record *out,
		    void *scratch);

#endif
