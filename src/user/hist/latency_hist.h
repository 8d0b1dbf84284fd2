/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Latency statistics for the live histograms: log2 histograms of nanosecond
 * values, exact percentiles from kept samples, and the "series set" that
 * `record` feeds one ht_record at a time. Pure computation: no I/O, no
 * clock; hist_view.h draws what this file computes.
 *
 * Bucket convention (the one of libbpf-tools' log2l() and print_log2_hist(),
 * so a BPF-side aggregate can bucket with the same few instructions and its
 * per-CPU arrays add in unchanged):
 *   slot 0      holds 0 and 1                       ("0 -> 1")
 *   slot k >= 1 holds [2^k, 2^(k+1) - 1]             ("1024 -> 2047" is slot 10)
 *   slot 63     holds [2^63, UINT64_MAX]
 * i.e. slot = v ? 63 - clz(v) : 0. 64 slots cover every uint64_t exactly.
 *
 * Percentiles use the nearest-rank definition: the p-th percentile of n
 * values is the value of rank ceil(p/100 * n) (1-based, at least 1) in sorted
 * order; p is taken to 0.001 precision. So p0 is the minimum, p100 the
 * maximum, and the result is always one of the values, never interpolated.
 */
#ifndef HT_LATENCY_HIST_H
#define HT_LATENCY_HIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hypertrace/record.h"

#define HT_HIST_SLOTS 64

/* Slot of a value, and the smallest and largest value a slot holds. */
unsigned int ht_hist_slot(uint64_t ns);
uint64_t ht_hist_slot_low(unsigned int slot);
uint64_t ht_hist_slot_high(unsigned int slot);

/*
 * A value read back from a histogram. When exact is false, ns is a bound
 * from the log2 buckets: an upper bound for percentiles and max (print as
 * "p99 <= 1023 ns"), a lower bound for min. An empty histogram gives
 * {0, true}: check the count first.
 */
struct ht_lat_value {
	uint64_t ns;
	bool exact;
};

/*
 * A log2 histogram. Plain data: embed it, zero it (or ht_hist_reset) and
 * use it; nothing to free. min, max and sum cover only the values added one
 * at a time (nvalues of them); raw slot arrays carry counts only.
 */
struct ht_hist {
	uint64_t slots[HT_HIST_SLOTS];
	uint64_t count;   /* all values, raw slot arrays included */
	uint64_t nvalues; /* values added by ht_hist_add */
	uint64_t min, max;
	uint64_t sum; /* saturates at UINT64_MAX */
};

void ht_hist_reset(struct ht_hist *h);
void ht_hist_add(struct ht_hist *h, uint64_t ns);
/* Adds a raw array of slot counts, e.g. one CPU's array of a BPF per-CPU map. */
void ht_hist_add_slots(struct ht_hist *h, const uint64_t slots[HT_HIST_SLOTS]);
void ht_hist_merge(struct ht_hist *dst, const struct ht_hist *src);
uint64_t ht_hist_count(const struct ht_hist *h);
/* Exact while every value came through ht_hist_add, else the bucket bound. */
struct ht_lat_value ht_hist_min(const struct ht_hist *h);
struct ht_lat_value ht_hist_max(const struct ht_hist *h);
/* False when part of the count came as raw slots (its sum is unknown). */
bool ht_hist_sum(const struct ht_hist *h, uint64_t *sum);
/*
 * Bucket-bound percentile: the upper bound of the slot holding the value of
 * the nearest rank, lowered to the maximum when that is known exactly. Exact
 * only when it is that maximum (the rank is the last one).
 */
struct ht_lat_value ht_hist_percentile(const struct ht_hist *h, double p);

/* A growable array of values, for exact percentiles. Zero-initialize it. */
struct ht_samples {
	uint64_t *v;
	size_t len, cap;
	bool sorted;
};

/* Amortized O(1); 0, or -ENOMEM (the array is unchanged). */
int ht_samples_push(struct ht_samples *s, uint64_t ns);
/* Empties the array, keeping its memory for the next interval. */
void ht_samples_clear(struct ht_samples *s);
void ht_samples_free(struct ht_samples *s);
/* Exact nearest-rank percentile; sorts the array in place. False if empty. */
bool ht_samples_percentile(struct ht_samples *s, double p, uint64_t *out);

/* The three series of a hypercall. */
enum ht_lat_series_id {
	HT_LAT_TOTAL = 0,   /* kvm_exit -> kvm_entry: exit_to_hcall_ns + hcall_to_entry_ns */
	HT_LAT_EXIT_HCALL,  /* kvm_exit -> kvm_hypercall */
	HT_LAT_HCALL_ENTRY, /* kvm_hypercall -> kvm_entry */
	HT_LAT_NSERIES,
};

/* Which numbers to read: this interval, or everything since the set was made. */
enum ht_lat_view {
	HT_LAT_INTERVAL,
	HT_LAT_CUMULATIVE,
};

struct ht_lat_series {
	struct ht_hist interval;
	struct ht_hist cumulative; /* since start; never reset */
	/* The interval's values: percentiles are exact while len == interval.count. */
	struct ht_samples samples;
};

enum ht_lat_group_by {
	HT_LAT_BY_NONE, /* one group: everything */
	HT_LAT_BY_VCPU, /* key (host_pid, vcpu_id): vcpu_id alone is shared by all VMs */
	HT_LAT_BY_VM,   /* key host_pid */
};

enum ht_lat_group_kind {
	HT_LAT_GROUP_ALL,   /* every record of the set, whatever the grouping */
	HT_LAT_GROUP_KEY,   /* one key */
	HT_LAT_GROUP_OTHER, /* keys seen after HT_LAT_MAX_GROUPS keys had groups */
};

/* Keyed groups per set; the records of further keys go to one "other" group. */
#define HT_LAT_MAX_GROUPS 64

struct ht_lat_group {
	enum ht_lat_group_kind kind;
	uint32_t host_pid; /* HT_LAT_GROUP_KEY, HT_LAT_BY_VCPU or HT_LAT_BY_VM */
	uint16_t vcpu_id;  /* HT_LAT_GROUP_KEY, HT_LAT_BY_VCPU */
	uint32_t host_tid; /* HT_LAT_BY_VCPU from records: the vCPU's thread; 0 if unknown (aggregates) */
	uint64_t key;      /* sort key */
	struct ht_lat_series series[HT_LAT_NSERIES];
};

/* Default budget of kept samples per interval, all series and groups together. */
#define HT_LAT_DEFAULT_MAX_SAMPLES (1u << 21)

/*
 * The series set. Each record adds to the "all" group and, when grouping, to
 * its key's group; every group keeps an interval and a cumulative histogram
 * per series plus the interval's samples. Once max_samples values are kept in
 * an interval (all arrays together), series that need more stop keeping them
 * and their interval percentiles become bucket bounds, so memory stays near
 * 8 bytes x max_samples (arrays that used under a quarter of their capacity
 * are freed at the interval's end). Cumulative percentiles are always bucket
 * bounds: the samples of a whole run are not kept.
 */
struct ht_latset;

/* max_samples 0: HT_LAT_DEFAULT_MAX_SAMPLES. NULL on allocation failure. */
struct ht_latset *ht_latset_new(enum ht_lat_group_by by, size_t max_samples);
void ht_latset_free(struct ht_latset *set);
enum ht_lat_group_by ht_latset_group_by(const struct ht_latset *set);

/* Per record, from the drain callback: no allocation but sample growth. */
void ht_latset_add_record(struct ht_latset *set, const struct ht_record *rec);
/*
 * Adds raw slot counts (e.g. one CPU's array of a BPF aggregate) to one
 * series of the group of (host_pid, vcpu_id) and of "all"; the key is ignored
 * without grouping. Counts are added as given: pass this interval's counts,
 * not a map's running totals.
 */
void ht_latset_add_slots(struct ht_latset *set, enum ht_lat_series_id series, uint32_t host_pid,
			 uint16_t vcpu_id, const uint64_t slots[HT_HIST_SLOTS]);
/* Ends the interval: clears interval histograms and samples, keeps cumulative ones. */
void ht_latset_next_interval(struct ht_latset *set);

/*
 * Groups in display order: index 0 is "all", then keyed groups by key, then
 * "other" once used. Pointers stay valid until the next add.
 */
size_t ht_latset_ngroups(const struct ht_latset *set);
struct ht_lat_group *ht_latset_group(struct ht_latset *set, size_t i);

struct ht_lat_stats {
	uint64_t count;
	struct ht_lat_value p50, p90, p99, max;
};

/*
 * What the display prints for one series: exact percentiles from the
 * samples when they hold all of the interval's values, else bucket bounds.
 * Not const: sorts the samples in place.
 */
void ht_lat_series_stats(struct ht_lat_series *s, enum ht_lat_view view,
			 struct ht_lat_stats *out);
/* The histogram of one series in one view. */
const struct ht_hist *ht_lat_series_hist(const struct ht_lat_series *s, enum ht_lat_view view);

#endif
