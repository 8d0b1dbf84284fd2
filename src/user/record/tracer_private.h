/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The tracer's own state, shared by its files: tracer.c (load, attach, the
 * filters), tracer_read.c (the readers of what the BPF programs counted)
 * and tracer_free.c (the freeing of ended VMs' entries). Nothing else
 * includes it.
 */
#ifndef HT_RECORD_TRACER_PRIVATE_H
#define HT_RECORD_TRACER_PRIVATE_H

#include <stddef.h>
#include "bpf/vcpu_state.h" /* before the skeleton, whose .bss holds the CPU slots */
#include "hypertrace.skel.h"
#include "record/tracer.h"

struct exit_part;

struct ht_tracer {
	struct hypertrace_bpf *skel;
	/* The one kvm_exit program loaded (VMX, SVM raw or classic, or generic) and its synthetic twin. */
	struct bpf_program *exit_prog, *synthetic_exit_prog;
	struct bpf_link **exit_link;
	char exit_fallback[384]; /* why SVM's raw kvm_exit program gave way to the classic one; "" if it did not */
	int stats_fd; /* holds BPF run-time statistics on while open; -1 if not asked */
	int ring_fds[HT_MAX_RINGS]; /* also held by the rings map */
	unsigned int nrings;        /* created and in the map */
	/* --exits: the CPUs' series tables, mapped, and the sums of a read. */
	struct exit_cache_entry *exit_cache;
	size_t exit_cache_entries, exit_cache_bytes;
	struct vcpu_thread *vcpu_thread_table; /* --exits: the mapping of vcpu_thread_table */
	struct vcpu_thread_used *vcpu_thread_used; /* --exits: the mapping of vcpu_thread_used: which entries to read */
	size_t vcpu_thread_table_bytes;
	unsigned int vcpu_threads; /* --exits: vcpu_thread_table's entries (1 without --exits) */
	struct exit_part *exit_parts; /* a read's parts: see ht_tracer_read_exits */
	size_t exit_parts_cap;
	/* The batches of a hash map's read, kept from read to read (see ht_tracer_read_hash). */
	void *batch_keys, *batch_values;
	size_t batch_keys_bytes, batch_values_bytes;
};

/* One entry of a hash map: its key and its value (a per-CPU map's: on each of ncpus CPUs, one after another). */
typedef int (*ht_hash_entry_fn)(void *ctx, const void *key, const void *values, int ncpus);
/* Every entry of the hash map fd, read in batches (tracer_read.c): 0, -errno, or fn's first error. */
int ht_tracer_read_hash(struct ht_tracer *t, int fd, size_t key_size, size_t value_size, bool per_cpu,
			ht_hash_entry_fn fn, void *ctx);

/* How many maps ht_tracer_vcpu_thread_maps names. */
#define HT_VCPU_THREAD_MAPS 6

/*
 * The preallocated tables --exits keeps per vCPU thread (the threads and
 * what is kept for each, the thread and APIC id maps), into maps: made with
 * one entry each when --exits is off, else with ht_tracer_vcpu_threads'.
 * --boot's threads and the VMs' shares are sized on their own.
 */
static inline void ht_tracer_vcpu_thread_maps(const struct hypertrace_bpf *skel, struct bpf_map *maps[HT_VCPU_THREAD_MAPS])
{
	maps[0] = skel->maps.vcpu_thread_table;
	maps[1] = skel->maps.vcpu_halts;
	maps[2] = skel->maps.vcpu_irqs;
	maps[3] = skel->maps.vcpu_timer_dues;
	maps[4] = skel->maps.vcpu_apic_ids;
	maps[5] = skel->maps.vcpu_thread_ids;
}

#endif
