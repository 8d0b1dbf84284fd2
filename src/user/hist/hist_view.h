/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Text rendering of a latency series set (latency_hist.h): a header with
 * count, rate, drops and p50/p90/p99/max, then, per group and per selected
 * series, a log2 histogram in the layout of libbpf-tools' print_log2_hist:
 *
 *      nsecs               : count    distribution
 *        512 -> 1023       : 12       |****                                    |
 *       1024 -> 2047       : 40       |****************************************|
 *
 * Rows run from the lowest to the highest non-empty slot (empty rows between
 * them are kept). The star bar is at most 40 wide and narrows to fit the
 * width; below 10 stars the columns are first made as narrow as their values
 * allow, and if even then no bar fits, rows end after the count. No line is
 * ever longer than the width: whatever still does not fit is cut off.
 *
 * Units: nanoseconds when the series' maximum is below 10000 ns, else
 * microseconds. Values are always bucketed in nanoseconds; in usecs the same
 * bounds are shown divided by 1000 with three decimals ("1.024 -> 2.047"),
 * which is exact and keeps the rows of adjacent buckets from overlapping.
 * Percentiles that are bucket bounds print as "p99 <= 1023 ns".
 */
#ifndef HT_HIST_VIEW_H
#define HT_HIST_VIEW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "hist/latency_hist.h"

enum ht_hv_mode {
	/* Blocks appended one after the other, each ended by a blank line; no escape codes. */
	HT_HV_PLAIN,
	/*
	 * Redraw in place: cursor home, each line cleared before it is written,
	 * the rest of the screen cleared after the last. At most height - 1 lines,
	 * so the last newline never scrolls; longer frames end with "... N more lines".
	 */
	HT_HV_TERMINAL,
};

#define HT_HV_DEFAULT_WIDTH 80
#define HT_HV_MAX_BAR 40 /* stars, as print_log2_hist */
#define HT_HV_MIN_BAR 10 /* below it, narrow the columns first */
#define HT_HV_NSECS_BELOW 10000 /* ns: a series with a smaller max is shown in nsecs */

/* Bit of a series in ht_hv_opts.series. */
#define HT_HV_SERIES(id) (1u << (id))
#define HT_HV_SERIES_ALL ((1u << HT_LAT_NSERIES) - 1)

/* What stays the same from frame to frame. */
struct ht_hv_opts {
	enum ht_hv_mode mode;  /* the caller decides, e.g. from isatty(1) */
	unsigned int width;    /* columns (TIOCGWINSZ); 0: HT_HV_DEFAULT_WIDTH */
	unsigned int height;   /* rows, terminal mode only; 0: no limit */
	unsigned int series;   /* HT_HV_SERIES() bits; 0: HT_LAT_TOTAL only */
	bool timestamp;        /* -T: prefix the header with the wall-clock time */
	/* Optional: a VM process's name (QEMU guest name), shown next to its pid; NULL: none. */
	const char *(*vm_name)(void *ctx, uint32_t pid);
	/* Optional, same ctx: a vCPU thread's name ("CPU 1/KVM"), shown per vCPU group; NULL: none. */
	const char *(*thread_name)(void *ctx, uint32_t pid, uint32_t tid);
	void *vm_name_ctx;
};

/* What changes every frame. */
struct ht_hv_frame {
	enum ht_lat_view view; /* HT_LAT_CUMULATIVE for a summary since start */
	unsigned int interval; /* interval number, shown in the interval view */
	uint64_t elapsed_ns;   /* length of the interval (or run) for the rate; 0: no rate */
	uint64_t drops;        /* records lost in the interval (or run) */
	time_t now;            /* wall clock, printed in local time with opts.timestamp */
	const char *extra;     /* more lines after the histograms ("\n"-separated), cut to fit as they are; NULL: none */
};

/*
 * Draws one frame of the set. Not const: exact percentiles sort the kept
 * samples. 0, or -errno (output or allocation failure).
 */
int ht_hv_render(FILE *out, struct ht_latset *set, const struct ht_hv_opts *opts,
		 const struct ht_hv_frame *frame);

/* One histogram alone (unit line and rows), e.g. for `report --hist`. 0 or -errno. */
int ht_hv_render_hist(FILE *out, const struct ht_hist *h, unsigned int width);

/*
 * Parses a --hist argument: "total", "exit-hcall", "hcall-entry", "all", or
 * a comma-separated list of them. False, leaving *mask alone, if unknown.
 */
bool ht_hv_parse_series(const char *arg, unsigned int *mask);

#endif
