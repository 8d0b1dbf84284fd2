/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Drains the BPF ring buffers (one per CPU) and hands the fused records to a
 * sink, merged in time order.
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

/*
 * Where drained records go, a run at a time, with one copy each: the drain
 * copies records straight out of the ring into the sink's slots, so no call
 * is made per record.
 */
struct ht_record_sink {
	/* Room for at least one record (*room of them) to be copied into. */
	struct ht_record *(*slots)(void *ctx, unsigned int *room);
	/* The first n slots now hold records. 0 to go on, or -errno to stop the drain. */
	int (*commit)(void *ctx, unsigned int n);
	void *ctx;
};

/* Most records one call consumes: about 25 ms of work at 10 M records/s. */
#define HT_DRAIN_BATCH (256u * 1024)
/*
 * ht_drain_poll writes records at least this old (by their kvm_entry time):
 * by then every record of an earlier time is in its ring, so records of all
 * CPUs go to the file in time order.
 */
#define HT_DRAIN_ORDER_SLACK_NS 5000000ull

struct ht_drain;

/* nrings ring buffers, 1..HT_MAX_RINGS (every ring a recording makes). 0 or -errno (-EINVAL: not a ring buffer). */
int ht_drain_new(const int *ring_fds, unsigned int nrings, const struct ht_record_sink *sink,
		 struct ht_drain **out);
/*
 * Unless its last pass stopped at HT_DRAIN_BATCH, waits up to timeout_ms for
 * a wake-up of the producers (sent each time a ring's fill level crosses a
 * multiple of the wake-up bytes); then consumes up to HT_DRAIN_BATCH
 * records, in time order (see HT_DRAIN_ORDER_SLACK_NS). Records too recent
 * for this pass wait for the next wake-up or timeout. Records drained, or
 * -errno (a sink error).
 */
int ht_drain_poll(struct ht_drain *d, int timeout_ms);
/*
 * Consumes until the ring is empty. Only for when producers have stopped
 * (after detaching); otherwise use ht_drain_poll. Records drained, or -errno.
 */
int ht_drain_all(struct ht_drain *d);
/* Bytes waiting in the ring buffers right now. */
unsigned long long ht_drain_pending_bytes(const struct ht_drain *d);
/* Ring buffer samples that were not a whole struct ht_record (never expected). */
unsigned long long ht_drain_malformed(const struct ht_drain *d);
void ht_drain_free(struct ht_drain *d);

#endif
