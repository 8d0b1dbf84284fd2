/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Exit statistics as user space keeps them: series (VM process, vCPU, ISA,
 * exit reason) with their log2 histograms of the time in the host, and vCPU
 * threads with their waiting and switching. The same table is filled from
 * the BPF maps by record and top, and from a trace file's EXITS blocks by
 * report; values are cumulative, and two tables give an interval by
 * difference. Pure: no I/O, no clock.
 */
#ifndef HT_EXIT_TABLE_H
#define HT_EXIT_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "common/hashmap.h"
#include "common/util.h" /* ht_sat_add */
#include "common/vcpu_states.h"
#include "exits/exit_causes.h"
#include "exits/exit_slots.h"
#include "hypertrace/record.h"

struct ht_exit_series {
	struct ht_exit_key key;
	bool changed;            /* since ht_exit_table_clear_changed */
	bool minmax_exact;       /* min_ns/max_ns are the exits' own, not bucket bounds */
	bool written;            /* record: in the file once (its first row says it counts from zero) */
	struct ht_exit_hist h;
	uint64_t in_host_at_end; /* exits seen whose entry had not come when the recording ended */
};

/* A vCPU thread: (w.tid, a.start_ns) names it (a thread id can come back as another thread). */
struct ht_vcpu_thread_row {
	struct ht_vcpu_wait w;
	struct ht_vcpu_account a; /* where its time went: from from_ns up to a.as_of_ns */
	struct ht_vcpu_halts h;   /* its halts in KVM (poll_ns: the value at a.as_of_ns) */
	uint64_t from_ns;         /* a.start_ns; in an interval (ht_exit_table_delta) where it begins */
	bool changed;
	bool gone;               /* no longer in BPF (the thread ended): its last numbers */
	struct ht_vcpu_irqs irqs; /* the interrupts delivered to it */
	struct ht_vcpu_timer_due due; /* its timer wake-ups from their due time */
	bool no_slept_poll;      /* h.slept_poll_ns is not known: its file (version 11 or older) holds none */
	bool no_irqs;            /* irqs is not known: its file (version 12 or older) holds none */
	bool no_due;             /* due is not known: its file (version 14 or older) holds none */
	bool seen;               /* scratch of whoever fills the table (e.g. seen in this read) */
};

struct ht_exit_table {
	struct ht_exit_series *series; /* sorted by key, unless series_unordered */
	size_t nseries, series_cap;
	/*
	 * key -> index in series, so that a lookup costs the same whatever the
	 * table holds (a file's blocks may name up to the reader's bound, in any
	 * order). Its keys point into series: rebuilt when series moves.
	 */
	struct ht_hashmap series_index;
	bool series_unordered;      /* appended out of key order: ht_exit_table_sort restores it */
	struct ht_vcpu_thread_row *threads; /* sorted by (tid, start) */
	size_t nthreads, threads_cap;
	uint64_t lost_series_full;  /* exits lost: HT_CNT_EXIT_SERIES_FULL */
	uint64_t lost_no_thread;    /* exits lost: HT_CNT_EXIT_NO_THREAD */
	uint64_t lost_vcpu_switches; /* --vcpu-sched: switch records lost: HT_CNT_SWITCH_DROPS */
	/*
	 * Exits whose new entry a VM process's share refused (record, top:
	 * struct ht_vm_share, summed over the VMs): a series (the exit lost,
	 * in lost_series_full too), a cause (under its reason's "other"), a
	 * vCPU thread's entry (the exit lost, in lost_no_thread too).
	 */
	uint64_t share_series_over, share_causes_over, share_threads_over;
	struct ht_exit_cause_table causes; /* the causes of the exits (record --exits, format version 6 on; not_theirs 7 on) */
	/*
	 * ht_exit_table_delta: numbers of one series or thread that went down
	 * between the two tables (a bug, or a damaged file: a thread id that
	 * came back is another row), taken as no change.
	 */
	uint64_t went_down;
};

void ht_exit_table_init(struct ht_exit_table *t);
void ht_exit_table_free(struct ht_exit_table *t);
/* Empties the table, keeping its memory. */
void ht_exit_table_reset(struct ht_exit_table *t);
/* dst becomes a copy of src. 0 or -ENOMEM. */
int ht_exit_table_copy(struct ht_exit_table *dst, const struct ht_exit_table *src);

/* The series of key, added (zero) if create; NULL if absent or out of memory. */
struct ht_exit_series *ht_exit_table_series(struct ht_exit_table *t, const struct ht_exit_key *key, bool create);
/*
 * The same, for a reader adding many series in any order (a file's blocks):
 * an absent key is appended, without moving the series after it, and the
 * table is marked unordered until ht_exit_table_sort. NULL if out of memory.
 */
struct ht_exit_series *ht_exit_table_series_any_order(struct ht_exit_table *t, const struct ht_exit_key *key);
/* Restores key order after ht_exit_table_series_any_order: n log n once. 0 or -ENOMEM. */
int ht_exit_table_sort(struct ht_exit_table *t);
/* After a caller removed or moved series itself (a selection): the index follows. 0 or -ENOMEM. */
int ht_exit_table_series_moved(struct ht_exit_table *t);
/* The thread (tid, start_ns), added (zero) if create; NULL if absent or out of memory. */
struct ht_vcpu_thread_row *ht_exit_table_thread(struct ht_exit_table *t, uint32_t tid, uint64_t start_ns, bool create);

/* A thread's name in a table: a thread id can come back as another thread. */
struct ht_vcpu_thread_key {
	uint32_t tid;
	uint64_t start_ns;
};

/*
 * The rows of n threads at once, in any order (a file's block): rows[i]
 * becomes the row of keys[i], added (zero) where absent, as
 * ht_exit_table_thread would, but with one sort and one merge instead of a
 * move of the array for each new thread. The pointers stay valid until the
 * next addition. 0 or -ENOMEM.
 */
int ht_exit_table_threads(struct ht_exit_table *t, const struct ht_vcpu_thread_key *keys, size_t n,
			  struct ht_vcpu_thread_row **rows);

/* Sets a series to cumulative numbers read from BPF (min and max exact); changed if they moved. 0 or -ENOMEM. */
int ht_exit_table_set_series(struct ht_exit_table *t, const struct ht_exit_key *key, const struct ht_exit_hist *h);
/*
 * The same for a vCPU thread, its account and its halts (h NULL: none;
 * gone: the thread ended, these are its last numbers).
 */
int ht_exit_table_set_thread(struct ht_exit_table *t, const struct ht_vcpu_wait *w, const struct ht_vcpu_account *a,
			     const struct ht_vcpu_halts *h, bool gone);
void ht_exit_table_clear_changed(struct ht_exit_table *t);

/* What ht_exit_table_forget took out: a recording's totals keep it. */
struct ht_exit_forgotten {
	uint64_t vms, series, threads, causes; /* VM processes and their rows */
	uint64_t exits;                        /* counted in the series */
	uint64_t irqs_delivered;               /* to the threads */
};

/*
 * Takes out every series, cause and vCPU thread of the VM processes
 * pids[n] (sorted; each counted as a VM in *out): ended VMs whose last
 * numbers a recording has written, forgotten so that VM churn does not
 * grow it. out may be NULL. 0 or -ENOMEM.
 */
int ht_exit_table_forget(struct ht_exit_table *t, const uint32_t *pids, size_t n, struct ht_exit_forgotten *out);

/*
 * out = now - before, series by series and thread by thread (out is reset
 * first; its series in the order of now's). Min and max of an interval are known only as bucket bounds unless
 * the series had no exit before. Series and threads with nothing in the
 * interval are left out. A thread's account in out covers the interval:
 * from the before table's as_of_ns (from_ns) to now's. 0 or -ENOMEM.
 */
int ht_exit_table_delta(struct ht_exit_table *out, const struct ht_exit_table *now,
			const struct ht_exit_table *before);


/*
 * The p-th percentile (nearest rank) as the upper bound of its bucket,
 * lowered to max_ns where that is exact and smaller. 0 for no exits.
 */
uint64_t ht_exit_percentile(const struct ht_exit_series *s, double p);
/* Min and max: the exits' own when exact, else the bounds of the lowest and highest bucket. */
uint64_t ht_exit_min(const struct ht_exit_series *s);
uint64_t ht_exit_max(const struct ht_exit_series *s);

/* The order of series: (pid, vcpu, isa, reason). <0, 0, >0 as strcmp. */
int ht_exit_key_cmp(const struct ht_exit_key *a, const struct ht_exit_key *b);
/*
 * qsort comparators of arrays of pointers: series by key; thread rows by
 * VM, then tid, then start (a thread id that came back, in order).
 */
int ht_exit_series_ptr_cmp(const void *a, const void *b);
int ht_vcpu_thread_ptr_cmp_by_vm(const void *a, const void *b);

/* The time of a thread row's account: what its states add up to (0 if the span is empty). */
uint64_t ht_vcpu_account_span(const struct ht_vcpu_thread_row *r);


/*
 * Sums of a group of series (a VM, a vCPU, everything): count and time; min/max over them.
 * Sums stop at UINT64_MAX rather than wrap (only a crafted file gets there).
 */
void ht_exit_series_add(struct ht_exit_series *sum, const struct ht_exit_series *s);

#endif
