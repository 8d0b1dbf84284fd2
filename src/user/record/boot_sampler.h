/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * record --boot in user space: once per interval, the booting VMs' numbers
 * (what their boots recorded, left out past their bound, lost) into a BOOT
 * block, those that changed; a VM whose process ended gets its last
 * numbers written and its BPF entry freed, so the table holds only the
 * boots going on. The records themselves come through the rings.
 */
#ifndef HT_BOOT_SAMPLER_H
#define HT_BOOT_SAMPLER_H

#include <stdbool.h>
#include "record/tracer.h"
#include "tracefile/trace_writer.h"

struct ht_boot_sampler {
	struct ht_tracer *tracer;       /* not owned */
	struct ht_writer *writer;       /* not owned */
	struct ht_boot_vm_rec *vms;     /* the live VMs' numbers as last written */
	size_t nvms, vms_cap;
	struct ht_boot_vm_rec *block;   /* the block being built */
	size_t nblock, block_cap;
	__u64 refused;                  /* VMs refused (HT_CNT_BOOT_VMS_FULL) as last written */
	struct ht_boot_vm ended;        /* the sums of the VMs that ended */
	unsigned long long vms_seen;    /* booting VMs seen in all */
	/* Whether process pid has ended (tests may pretend); NULL: kill(pid, 0) says ESRCH. */
	bool (*gone)(__u32 pid);
	int write_error;                /* -errno of the first block that could not be queued */
};

void ht_boot_sampler_init(struct ht_boot_sampler *s, struct ht_tracer *t, struct ht_writer *writer);
/* One interval's BOOT block (none if nothing changed). 0 or -errno. */
int ht_boot_sampler_sample(struct ht_boot_sampler *s);
/* The numbers of every VM so far, summed (for the summary). */
void ht_boot_sampler_totals(const struct ht_boot_sampler *s, struct ht_boot_vm *sum);
void ht_boot_sampler_free(struct ht_boot_sampler *s);

#endif
