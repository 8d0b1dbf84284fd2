/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * For fuzz_blocks: a mutated trace file made whole again where a checksum
 * would stop the reader at once, so mutations reach what the blocks hold
 * (EXITS headers, series and threads; records and vCPU switches).
 */
#ifndef HT_FUZZ_FIX_CRCS_H
#define HT_FUZZ_FIX_CRCS_H

#include <stddef.h>
#include <stdint.h>

/*
 * Recomputes the header's CRC and each whole block's, and an EXITS block's
 * item count from its own nseries and nthreads. Anything else stays as the
 * mutation left it.
 */
void ht_fuzz_fix_crcs(uint8_t *data, size_t size);

#endif
