/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The causes of exits as user space keeps them: per (VM process, ISA, exit
 * reason, cause) the count and log2 histograms of the time in KVM and in
 * the VMM (struct ht_exit_cause_hist), cumulative; two tables give an
 * interval by difference. Filled from BPF by record and top, from a trace
 * file's EXITS blocks by report. And how a cause is named: "io 0x80 out 1",
 * "msr 0x6e0 IA32_TSC_DEADLINE write", ... Pure: no I/O, no clock.
 */
#ifndef HT_EXIT_CAUSES_H
#define HT_EXIT_CAUSES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "common/exit_hists.h" /* ht_exit_cause_hist_add */
#include "common/hashmap.h"
#include "hypertrace/record.h"

struct ht_exit_cause_row {
	struct ht_exit_cause_key key;
	struct ht_exit_cause_hist h;
	bool changed; /* since ht_exit_causes_clear_changed */
	bool written; /* record: in the file once (its first row says it counts from zero) */
};

/* Rows in the order they came (key -> row through index); ht_exit_causes_sorted gives them in key order. */
struct ht_exit_cause_table {
	struct ht_exit_cause_row *rows;
	size_t n, cap;
	struct ht_hashmap index; /* its keys point into rows: rebuilt when rows move */
	uint64_t lost;           /* exits whose cause could not be counted: HT_CNT_EXIT_CAUSE_LOST */
	uint64_t not_theirs;     /* cause events seen during exits whose cause they cannot be: HT_CNT_EXIT_CAUSE_NOT_ITS */
	uint64_t went_down;      /* ht_exit_causes_delta: numbers that went down, taken as no change */
};

void ht_exit_causes_init(struct ht_exit_cause_table *c);
void ht_exit_causes_free(struct ht_exit_cause_table *c);
/* Empties the table, keeping its memory. */
void ht_exit_causes_reset(struct ht_exit_cause_table *c);
/* dst becomes a copy of src. 0 or -ENOMEM. */
int ht_exit_causes_copy(struct ht_exit_cause_table *dst, const struct ht_exit_cause_table *src);
/* The row of key, added (zero) if create; NULL if absent or out of memory. */
struct ht_exit_cause_row *ht_exit_causes_row(struct ht_exit_cause_table *c, const struct ht_exit_cause_key *key,
					     bool create);
/* Sets a cause to cumulative numbers; changed if they moved. 0 or -ENOMEM. */
int ht_exit_causes_set(struct ht_exit_cause_table *c, const struct ht_exit_cause_key *key,
		       const struct ht_exit_cause_hist *h);
void ht_exit_causes_clear_changed(struct ht_exit_cause_table *c);
/*
 * Takes out the rows of the VM processes pids[n] (sorted): ended VMs a
 * recording forgets. *rows (may be NULL) += the rows taken. 0 or -ENOMEM.
 */
int ht_exit_causes_forget(struct ht_exit_cause_table *c, const uint32_t *pids, size_t n, uint64_t *rows);
/* out = now - before, cause by cause; causes with nothing in the interval are left out. 0 or -ENOMEM. */
int ht_exit_causes_delta(struct ht_exit_cause_table *out, const struct ht_exit_cause_table *now,
			 const struct ht_exit_cause_table *before);
/*
 * The rows as pointers in key order (VM, ISA, reason, then the most exits
 * first); *n of them. NULL (and *n 0) if there are none or out of memory
 * (then *n is SIZE_MAX). The caller frees the array.
 */
const struct ht_exit_cause_row **ht_exit_causes_sorted(const struct ht_exit_cause_table *c, size_t *n);

/*
 * In rows sorted by ht_exit_causes_sorted: the run of the causes of (pid,
 * isa, reason), busiest first, by bisection. Its length; *first its start.
 */
size_t ht_exit_causes_of_reason(const struct ht_exit_cause_row *const *sorted, size_t n, uint32_t pid, uint8_t isa,
				uint32_t reason, size_t *first);

/* The order of keys: pid, isa, reason, kind, value, detail. <0, 0, >0 as strcmp. */
int ht_exit_cause_key_cmp(const struct ht_exit_cause_key *a, const struct ht_exit_cause_key *b);

/* The p-th percentile (nearest rank) of a histogram of count values, as its bucket's upper bound; 0 if empty. */
uint64_t ht_exit_cause_percentile(const __u64 slots[HT_EXIT_SLOTS], uint64_t count, double p);

/* A kind's name: "io", "mmio", "msr", "cpuid", "hypercall", "other"; "?" for another number. */
const char *ht_exit_cause_kind_name(unsigned int kind);
/*
 * The kernel's name of an MSR (arch/x86/include/asm/msr-index.h and the
 * UAPI asm/kvm_para.h, without "MSR_"), for the common ones; NULL else.
 */
const char *ht_msr_name(uint32_t index);
/*
 * A cause in words, as every output writes it: "io 0x80 out 1" (port,
 * direction, size), "mmio 0xfebf1000 read 4", "msr 0x6e0 IA32_TSC_DEADLINE
 * write", "cpuid 0xd.1" (leaf.subleaf), "hypercall 1042", "other".
 */
void ht_exit_cause_format(char *buf, size_t len, const struct ht_exit_cause_key *k);
/* The direction of a cause as its kind says it ("in"/"out", "read"/"write"); "" where it has none. */
const char *ht_exit_cause_direction(const struct ht_exit_cause_key *k);

#endif
