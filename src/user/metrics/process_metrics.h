/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The standard process metrics every Prometheus client library exports
 * (process_cpu_seconds_total, process_resident_memory_bytes,
 * process_start_time_seconds, process_open_fds, process_max_fds, ...), read
 * from /proc at each scrape as the Go and Python clients read them, so that
 * the dashboards and alerts written for any exporter work here too.
 */
#ifndef HT_PROCESS_METRICS_H
#define HT_PROCESS_METRICS_H

#include <stdio.h>

/* Where to read: /proc/self (stat, limits, fd/) and /proc/stat (btime); tests give fake trees. */
struct ht_process_paths {
	const char *self; /* "/proc/self" */
	const char *stat; /* "/proc/stat" */
};
extern const struct ht_process_paths ht_process_paths_live;

/*
 * Appends the process metrics to out. A value that cannot be read is left
 * out (with its HELP and TYPE), never rendered as a made-up 0. 0 or -EIO.
 */
int ht_process_metrics_render(const struct ht_process_paths *p, FILE *out);

#endif
