/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Live latency histograms while recording: collects each interval's
 * latencies (from records, or from the BPF histograms in aggregate-only mode),
 * and every interval draws them — in place on a terminal, as appended plain
 * blocks otherwise. `report --hist` draws a file's frames with it too, which
 * is why it lives in hist/ and knows nothing of record/.
 */
#ifndef HT_LIVE_VIEW_H
#define HT_LIVE_VIEW_H

#include <stdbool.h>
#include <stdio.h>
#include "hypertrace/record.h"
#include "hist/hist_view.h"
#include "hist/latency_hist.h"

struct ht_live_opts {
	unsigned long long interval_ns;
	unsigned int series;            /* HT_HV_SERIES() mask; 0: all three */
	enum ht_lat_group_by group_by;
	bool timestamp;                 /* -T */
	int terminal;                   /* 1: redraw in place, 0: plain blocks, -1: isatty(out) */
	const char *(*vm_name)(void *ctx, uint32_t pid); /* names next to pids; NULL: none */
	const char *(*thread_name)(void *ctx, uint32_t pid, uint32_t tid); /* same ctx; NULL: none */
	void *vm_name_ctx;
	/* Optional: more lines for each frame (record --exits), written to out for a view and width. */
	void (*extra)(void *ctx, enum ht_lat_view view, unsigned int width, FILE *out);
	void *extra_ctx;
};

struct ht_live;

/* out: where frames go (stdout). NULL on out of memory. */
struct ht_live *ht_live_new(const struct ht_live_opts *opts, FILE *out, unsigned long long now_ns);
/* The recording's observer: one call per drained record. */
void ht_live_observe(void *live, const struct ht_record *rec);
/* Aggregate-only mode: one group's cumulative BPF histograms; the interval's share is derived. */
void ht_live_add_aggregate(void *live, __u64 key, const struct ht_agg_hist *cumulative);
/* Nanoseconds until the next frame is due (0: now). */
unsigned long long ht_live_until_due(const struct ht_live *l, unsigned long long now_ns);
/* Draws the interval's frame if due, then starts the next interval. Returns frames drawn so far. */
unsigned int ht_live_tick(struct ht_live *l, unsigned long long now_ns, unsigned long long lost_total);
/* At the end of a recording: draws the last, partial interval if it saw any hypercall. */
void ht_live_end_interval(struct ht_live *l, unsigned long long now_ns, unsigned long long lost_total);
/* Draws the cumulative frame since start (the end of a recording; report --hist). */
void ht_live_final(struct ht_live *l, unsigned long long now_ns, unsigned long long lost_total);
/* Hypercalls counted since start. */
unsigned long long ht_live_total(const struct ht_live *l);
void ht_live_free(struct ht_live *l);

#endif
