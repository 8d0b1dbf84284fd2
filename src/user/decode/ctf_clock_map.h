/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A CTF 1.8 trace the guest wrote by itself (LTTng's, kernel or user
 * space), put on the host's clock by rewriting its metadata: each clock
 * class counts the guest clock that fit is of (LTTng's "monotonic":
 * CLOCK_MONOTONIC), so a count c, at c / freq guest seconds, is at
 * intercept + rate * c / freq on the host's monotonic clock. The clock's
 * freq becomes freq / rate (rounded: an integer in CTF) and its offset the
 * host's time of the guest clock's 0 plus wall_offset_ns, the host's
 * CLOCK_REALTIME less its CLOCK_MONOTONIC, as convert --lttng offsets the
 * host's own traces: both then read in UTC on one time line. The streams
 * are not touched.
 *
 * The metadata may be packetized (LTTng writes it so) or plain TSDL; the
 * result is plain TSDL, which every CTF reader takes. It is the guest's
 * file, so hostile: packets are checked against its length, and time and
 * memory grow with its length alone.
 */
#ifndef HT_DECODE_CTF_CLOCK_MAP_H
#define HT_DECODE_CTF_CLOCK_MAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "decode/clock_fit.h"

/* Metadata packets start with this (CTF 1.8, section 7.1), in the trace's byte order. */
#define HT_CTF_METADATA_MAGIC 0x75D11D57u

/*
 * data (len bytes: a metadata file) to out as plain TSDL with every clock
 * block put on the host's clock by fit. freq, an integer, is rounded; that
 * costs nothing at guest_ref_ns (the guest time in the middle of the pairs)
 * and less than 1 ns per second of guest time away from it. The clock
 * blocks rewritten (at least 1), or -1 with the reason in err (not
 * metadata, a packet past the end, no clock block).
 */
int ht_ctf_clock_map(const unsigned char *data, size_t len, FILE *out, const struct ht_clock_fit *fit,
		     int64_t wall_offset_ns, uint64_t guest_ref_ns, char *err, size_t errlen);

#endif
