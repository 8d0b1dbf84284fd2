/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Drains the BPF ring buffer and hands each fused record to a sink.
 *
 * A consumer of our own rather than libbpf's ring_buffer: libbpf 1.1 consumes
 * until the ring is empty, which never happens while producers keep up with
 * the consumer, so a busy host could keep the daemon from ever seeing Ctrl-C.
 * Here every call consumes a bounded batch, and the consumer position is
 * published once per batch instead of once per record.
 */
#ifndef HT_DRAIN_H
#define HT_DRAIN_H

#include "hypertrace/record.h"

/* Returns 0 to go on, or -errno to stop the drain (e.g. the file write failed). */
typedef int (*ht_record_sink)(void *ctx, const struct ht_record *rec);

/* Most records one call consumes: about 25 ms of work at 10 M records/s. */
#define HT_DRAIN_BATCH (256u * 1024)

struct ht_drain;

int ht_drain_new(int ringbuf_fd, ht_record_sink sink, void *ctx, struct ht_drain **out);
/*
 * If the ring is empty, waits up to timeout_ms for a wake-up; then consumes up
 * to HT_DRAIN_BATCH records. Records drained, or -errno (a sink error).
 */
int ht_drain_poll(struct ht_drain *d, int timeout_ms);
/*
 * Consumes until the ring is empty. Only for when producers have stopped
 * (after detaching); otherwise use ht_drain_poll. Records drained, or -errno.
 */
int ht_drain_all(struct ht_drain *d);
/* Bytes waiting in the ring buffer right now. */
unsigned long long ht_drain_pending_bytes(const struct ht_drain *d);
/* Ring buffer samples that were not a whole struct ht_record (never expected). */
unsigned long long ht_drain_malformed(const struct ht_drain *d);
void ht_drain_free(struct ht_drain *d);

#endif
