/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The numbers `record --metrics` exports, and their Prometheus text
 * exposition (format 0.0.4). Pure: no I/O but the FILE * it renders into or
 * logs to, no clock, no locks. The drain thread owns one registry and feeds it
 * (one record at a time, or the BPF aggregates); the HTTP thread renders a
 * copy of it (ht_metrics_registry_copy), so a scrape never touches the one
 * being fed. docs/metrics.md describes every metric.
 *
 * Memory is bounded when the registry is made: max_sets label sets (VM
 * process, vCPU, nr), allocated then, and an index of at most one entry per
 * set in use. Hypercalls of further label sets are counted in one
 * set labelled "other", with an overflow counter and one log line, so the
 * sum over all sets stays the number of hypercalls traced.
 *
 * Latency buckets are the log2 slots of latency_hist.h, written as Prometheus
 * `le` bounds in seconds: slot k holds [2^k, 2^(k+1) - 1] ns, so its bucket is
 * le = (2^(k+1) - 1) ns (integer nanoseconds: "<= 2^(k+1) - 1" is "< 2^(k+1)").
 */
#ifndef HT_METRICS_REGISTRY_H
#define HT_METRICS_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "common/escape.h"
#include "common/hashmap.h"
#include "exits/exit_table.h"
#include "metrics/metrics_causes.h"
#include "metrics/metrics_exposition.h"
#include "hist/latency_hist.h"
#include "hypertrace/record.h"

/*
 * Buckets of slots 0..32: a phase saturates at UINT32_MAX ns (slot 31) and the
 * exit->entry sum of two phases stays below 2^33 ns (slot 32). Counts of any
 * higher slot (none are expected) still reach the +Inf bucket.
 */
#define HT_METRICS_BUCKETS 33

/* Label sets kept before the "other" set takes the rest. */
#define HT_METRICS_DEFAULT_MAX_SETS 256

enum ht_metrics_drop {
	HT_METRICS_DROP_RINGBUF_FULL = 0, /* HT_CNT_RINGBUF_DROPS */
	HT_METRICS_DROP_NO_THREAD_STATE,  /* HT_CNT_STATE_ALLOC_FAIL */
	HT_METRICS_DROP_SUPERSEDED,       /* HT_CNT_SUPERSEDED */
	HT_METRICS_DROP_AGG_GROUPS_FULL,  /* HT_CNT_AGG_GROUPS_FULL (--no-file) */
	HT_METRICS_DROP_MALFORMED_SAMPLE, /* user space: a ring sample that was not a whole record */
	HT_METRICS_NDROPS,
};


/*
 * One label set: (VM, vCPU, nr), or "other" past the cap. The VM is a key
 * the caller gives with its label: every process of one VM (a QEMU
 * restarted) counts into the same series.
 */
struct ht_metrics_set {
	uint32_t vm_key;
	char vm[HT_METRICS_VM_LABEL];
	uint32_t nr;
	uint16_t vcpu;
	uint64_t hypercalls;
	/* Per phase (enum ht_lat_series_id): counts of slots 0..32, then of any higher slot. */
	uint64_t buckets[HT_LAT_NSERIES][HT_METRICS_BUCKETS + 1];
	uint64_t sum_ns[HT_LAT_NSERIES]; /* only while exact_sums */
};

/*
 * record --exits: hypertrace_exit_duration_seconds per (vm, reason[, vcpu]),
 * the slots of HT_EXIT_SLOTS as buckets (the last slot, open-ended, only in
 * +Inf), and the vCPU threads' waiting per (vm, vcpu). Label sets are capped
 * like the hypercalls'; the rest are summed under vm="other". The exit
 * histograms' are also capped per VM (HT_METRICS_EXIT_SETS_PER_VM).
 */
#define HT_METRICS_EXIT_BUCKETS (HT_EXIT_SLOTS - 1)
#define HT_METRICS_MAX_EXIT_SETS 1024
/*
 * A VM's share of the exit label sets, its own reason="other" (vcpu="other")
 * set among them, which sums its series past the others: eight VMs at their
 * full share fill the sets, so up to seven cannot take an eighth's. Without
 * --metrics-per-vcpu a VM has one set per reason, fewer than the share (the
 * hardware's reasons: about 70 on VMX, 150 on SVM).
 */
#define HT_METRICS_EXIT_SETS_PER_VM 128
/* The vcpu of a VM's own "other" set with --metrics-per-vcpu (written vcpu="other"). */
#define HT_METRICS_VCPU_OTHER (-2)
#define HT_METRICS_MAX_VCPU_SETS 1024

struct ht_metrics_exit_set {
	char vm[HT_METRICS_VM_LABEL];
	char reason[48];
	int32_t vcpu; /* -1: the VM's vCPUs together */
	uint64_t buckets[HT_METRICS_EXIT_BUCKETS + 1]; /* the last: slots beyond the finite buckets */
	uint64_t count, sum_ns;
};

struct ht_metrics_vcpu_set {
	char vm[HT_METRICS_VM_LABEL];
	uint32_t vcpu;
	uint64_t wait_ns, preemptions;
	uint64_t state_ns[HT_VCPU_NSTATES]; /* where its threads' time went (hypertrace_vcpu_seconds_total) */
	/* Its threads' halts and their wake-ups, summed (hypertrace_vcpu_halts_total, hypertrace_vcpu_wakeup_seconds); poll_ns unused. */
	struct ht_vcpu_halts halts;
	struct ht_vcpu_irqs irqs; /* its threads' interrupts, summed (hypertrace_vcpu_irq_seconds) */
	struct ht_vcpu_timer_due due; /* its threads' timer wake-ups from their due time (hypertrace_vcpu_timer_due_seconds) */
};

struct ht_metrics_exits {
	bool on;       /* render the exit metrics (record --exits) */
	bool per_vcpu; /* a vcpu label on the exit histograms */
	size_t nsets, nvcpus;
	struct ht_metrics_exit_set *sets;   /* HT_METRICS_MAX_EXIT_SETS */
	struct ht_metrics_vcpu_set *vcpus;  /* HT_METRICS_MAX_VCPU_SETS */
	bool other_used, vcpu_other_used;
	struct ht_metrics_exit_set other;
	struct ht_metrics_vcpu_set vcpu_other;
	uint64_t lost;           /* exits the BPF side could not count */
	uint64_t overflow_exits; /* exits counted under vm="other" */
	uint64_t vm_overflow_exits; /* exits counted under their VM's own reason="other": the VM's sets at its share */
	uint64_t share_series_over, share_causes_over, share_threads_over; /* exits whose new entry a VM's share refused */
	struct ht_metrics_causes causes; /* the causes of the exits (metrics_causes.h) */
};

struct ht_metrics_registry {
	const char *version;   /* hypertrace_build_info{version} */
	const char *mode;      /* hypertrace_recording_info{mode}: "file" or "no_file" */
	/*
	 * True when fed with records: the _sum series are exact. The BPF
	 * aggregates carry counts only, so without records there is no _sum.
	 */
	bool exact_sums;
	uint64_t drops[HT_METRICS_NDROPS];
	uint64_t unselected_nr; /* HT_CNT_HCALL_UNSELECTED_NR: not recorded, by design */
	uint64_t overflow_hypercalls; /* hypercalls counted in the "other" set */
	uint64_t dropped_vm_hypercalls; /* the hypercalls of the sets of VMs dropped (ht_metrics_drop_vm) */
	bool other_used;
	struct ht_metrics_set other;
	size_t max_sets, nsets;
	struct ht_metrics_set *sets; /* max_sets of them; the first nsets in use */
	/*
	 * (VM, vCPU, nr) -> index into sets: one entry per set in use, so at
	 * most max_sets. Keys point at the sets themselves. A copy's stays empty.
	 */
	struct ht_hashmap index;
	size_t last;      /* the set of the last record: records come in runs per vCPU */
	FILE *log;        /* the overflow line goes here (NULL: nowhere) */
	bool overflow_logged;
	struct ht_metrics_exits exits;
};

/* max_sets 0: HT_METRICS_DEFAULT_MAX_SETS. */
int ht_metrics_registry_init(struct ht_metrics_registry *r, size_t max_sets);
void ht_metrics_registry_free(struct ht_metrics_registry *r);

/*
 * File mode: one drained record of the VM vm_key, labelled vm (its first
 * record names the set). Allocates only the index entry of a label set it
 * has not seen; if that fails the record is counted in the "other" set.
 */
void ht_metrics_add_record(struct ht_metrics_registry *r, uint32_t vm_key, const char *vm,
			   const struct ht_record *rec);

/*
 * Aggregate-only mode: BPF histograms are cumulative since load, so each read
 * starts every label set from zero and adds every group read (the groups of
 * all processes of one VM add up). Call begin, then set for every group.
 */
void ht_metrics_begin_aggregates(struct ht_metrics_registry *r);
void ht_metrics_set_aggregate(struct ht_metrics_registry *r, uint32_t vm_key, const char *vm, uint16_t vcpu,
			      uint32_t nr, const struct ht_agg_hist *cumulative);
/*
 * The VM vm_key ended long enough ago: its label sets go (a later one starts
 * again from 0); their hypercalls stay counted in dropped_vm_hypercalls.
 */
void ht_metrics_drop_vm(struct ht_metrics_registry *r, uint32_t vm_key);
/*
 * A VM's label value into out (HT_METRICS_VM_LABEL bytes): the guest name as
 * every output of hypertrace-bpf shows it (HT_ESC_TEXT: valid UTF-8 stays,
 * control bytes and invalid UTF-8 become \xNN; a label must be valid UTF-8,
 * and a VM owner chooses the name), or "pid N" without one. The hypercall
 * and the exit metrics label a VM alike.
 */
void ht_metrics_vm_label(const char *guest_name, uint32_t pid, char *out);

/* Turns the exit metrics on (record --exits), optionally by vCPU too. 0 or -ENOMEM. */
int ht_metrics_registry_enable_exits(struct ht_metrics_registry *r, bool per_vcpu);
/*
 * Sets the exit metrics to a cumulative exit table: every label set is
 * recomputed from it. vm_label gives a VM process's label value (raw: it is
 * escaped here); NULL or "" for none, then "pid N"; ht_metrics_vm_skip: the
 * process's series and vCPUs are left out (a VM gone past the grace period).
 */
extern const char ht_metrics_vm_skip[];
void ht_metrics_set_exits(struct ht_metrics_registry *r, const struct ht_exit_table *t,
			  const char *(*vm_label)(void *ctx, uint32_t pid), void *ctx);

/* Copies the numbers of src into dst, made with the same max_sets. Never allocates. */
void ht_metrics_registry_copy(struct ht_metrics_registry *dst, const struct ht_metrics_registry *src);

/*
 * Writes the exposition text, label sets sorted by (vm label, vcpu, nr),
 * "other" last. Sorts r->sets in place (a copy's, never the fed registry's). 0 or -errno.
 */
int ht_metrics_render(struct ht_metrics_registry *r, FILE *out);


#endif
