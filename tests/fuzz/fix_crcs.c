// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "fix_crcs.h"

#include <string.h>
#include "hypertrace/trace_file.h"
#include "tracefile/crc32.h"

void ht_fuzz_fix_crcs(uint8_t *data, size_t size)
{
	const size_t crc_at = offsetof(struct ht_file_header, header_crc32);
	struct ht_block_header bh;
	size_t off = HT_FILE_HEADER_SIZE;

	if (size < HT_FILE_HEADER_SIZE)
		return;
	uint32_t crc = ht_crc32(0, data, crc_at);
	memcpy(data + crc_at, &crc, sizeof(crc));
	while (size - off >= sizeof(bh)) {
		memcpy(&bh, data + off, sizeof(bh));
		if (bh.payload_len > size - off - sizeof(bh))
			return; /* a cut block: the reader says so, whatever its CRC */
		uint8_t *payload = data + off + sizeof(bh);
		if (bh.type == HT_BLOCK_EXITS && bh.payload_len >= sizeof(struct ht_exits_header)) {
			struct ht_exits_header eh;

			memcpy(&eh, payload, sizeof(eh));
			bh.item_count = eh.nseries + eh.nthreads + eh.ncauses;
		}
		bh.crc32 = ht_crc32(0, payload, bh.payload_len);
		memcpy(data + off, &bh, sizeof(bh));
		off += sizeof(bh) + bh.payload_len;
	}
}
