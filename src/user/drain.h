/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Drains the BPF ring buffer and hands each fused record to a sink. */
#ifndef HT_DRAIN_H
#define HT_DRAIN_H

#include "hypertrace/record.h"

/* Returns 0 to go on, or -errno to stop the drain (e.g. the file write failed). */
typedef int (*ht_record_sink)(void *ctx, const struct ht_record *rec);

struct ht_drain;

int ht_drain_new(int ringbuf_fd, ht_record_sink sink, void *ctx, struct ht_drain **out);
/* Waits up to timeout_ms for records and consumes them. Records drained, or -errno. */
int ht_drain_poll(struct ht_drain *d, int timeout_ms);
/* Consumes everything in the ring buffer now, without waiting. Records drained, or -errno. */
int ht_drain_all(struct ht_drain *d);
/* Ring buffer samples that were not a whole struct ht_record (never expected). */
unsigned long long ht_drain_malformed(const struct ht_drain *d);
void ht_drain_free(struct ht_drain *d);

#endif
