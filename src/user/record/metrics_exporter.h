/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `record --metrics`: what the recording loop calls. The drain thread feeds
 * a registry (each record, or the BPF aggregates) and, every
 * HT_METRICS_PUBLISH_NS, copies it into a spare buffer and swaps that with
 * the published one under a mutex held only for the swap. The HTTP thread
 * swaps the published buffer with its own the same way and renders from it.
 * Three buffers, each owned by one side at a time: neither side ever waits
 * for the other's copying or rendering.
 */
#ifndef HT_METRICS_EXPORTER_H
#define HT_METRICS_EXPORTER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "metrics/metrics_http.h"
#include "record/recording.h"
#include "record/tracer.h"

/* How often the drain publishes: well under any scrape interval. */
#define HT_METRICS_PUBLISH_NS 250000000ull
/*
 * How long the series of a VM that ended stay (record --metrics-grace):
 * longer than scrape intervals and rate() windows, so the last counts are
 * scraped, and a VM restarted meanwhile goes on in the same series.
 */
#define HT_METRICS_DEFAULT_GRACE_S 300.0

struct ht_metrics_opts {
	struct ht_listen_addr addr;
	const struct ht_filters *filters; /* the recording's: nr indices of the aggregate keys */
	bool aggregate;      /* --no-file: read the BPF aggregates instead of records */
	size_t max_sets;     /* label sets; 0: HT_METRICS_DEFAULT_MAX_SETS */
	const char *version;
	int timeout_ms;      /* per HTTP connection; 0: the server's default */
	double grace_s;      /* series of a VM that ended go after this; 0: HT_METRICS_DEFAULT_GRACE_S */
	FILE *log;           /* the one-line cardinality warning (stderr) */
	bool exits;          /* record --exits: the exit and vCPU waiting metrics */
	bool exits_per_vcpu; /* --metrics-per-vcpu */
};

struct ht_metrics;

/* Starts serving (an empty registry until the first publish). 0, or -errno with err set. */
int ht_metrics_start(struct ht_metrics **out, const struct ht_metrics_opts *opts, char *err,
		     size_t errlen);
/* The recording's observer (file mode): one drained record. */
void ht_metrics_observe(void *metrics, const struct ht_record *rec);
/*
 * From the recording loop: reads the BPF counters (and aggregates with
 * --no-file) and publishes, if HT_METRICS_PUBLISH_NS passed since the last
 * time or force. rec: the file-mode recording (its malformed samples), or NULL.
 */
void ht_metrics_update(struct ht_metrics *m, const struct ht_tracer *t,
		       const struct ht_recording *rec, unsigned long long now_ns, bool force);
/* record --exits: the cumulative exit table of the latest sample (published with the next update). */
struct ht_exit_table;
void ht_metrics_observe_exits(struct ht_metrics *m, const struct ht_exit_table *t);
/* Whether the exit metrics still show VM process pid (its VM not past the grace period since it ended). */
bool ht_metrics_shows_vm(const struct ht_metrics *m, uint32_t pid);
uint16_t ht_metrics_port(const struct ht_metrics *m);
/* Hypercalls counted so far (all label sets, "other" and VMs dropped since included); 0 for NULL. */
unsigned long long ht_metrics_hypercalls(const struct ht_metrics *m);
/* What the HTTP server holds (connections, responses), for tests. */
void ht_metrics_server_stats(struct ht_metrics *m, struct ht_metrics_http_stats *out);
/* Stops the server and frees everything. NULL is fine. */
void ht_metrics_stop(struct ht_metrics *m);

#endif
