/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * record --exits --metrics: the causes of exits as two histograms per
 * (vm, reason, cause), hypertrace_exit_cause_kvm_seconds (the time in KVM)
 * and hypertrace_exit_cause_vmm_seconds (the time in the VMM, exits that
 * went to user space), the slots of HT_EXIT_SLOTS as buckets. Bounded three
 * times: BPF names at most HT_EXIT_CAUSES_PER_REASON causes per VM and reason
 * (the rest are cause="other"); a VM has at most HT_METRICS_CAUSE_SETS_PER_VM
 * label sets, its last one reason="other",cause="other" for the causes past
 * the others; and at most HT_METRICS_MAX_CAUSE_SETS label sets are shown, the
 * rest summed under vm="other",reason="other",cause="other".
 * Part of the metrics registry (metrics_registry.h); pure, no I/O but the
 * rendering into a stream.
 */
#ifndef HT_METRICS_CAUSES_H
#define HT_METRICS_CAUSES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "common/escape.h"
#include "metrics/metrics_exposition.h"
#include "exits/exit_table.h"

/*
 * A VM's share: as many as the BPF side lets a VM process have causes and
 * cause names (HT_EXIT_CAUSES_PER_VM), so a VM whose causes BPF counts
 * whole is shown whole; the share counts the VM's own "other" set. Five
 * VMs at their full share fill the sets: up to four VMs with every cause
 * they can name cannot take a fifth's. Beyond its share, a VM's causes go
 * to its own "other" set (counted in vm_overflow_exits), not anyone else's.
 */
#define HT_METRICS_CAUSE_SETS_PER_VM 128
#define HT_METRICS_MAX_CAUSE_SETS (5 * HT_METRICS_CAUSE_SETS_PER_VM)
#define HT_METRICS_CAUSE_VM_LABEL HT_METRICS_VM_LABEL

struct ht_metrics_cause_set {
	char vm[HT_METRICS_CAUSE_VM_LABEL];
	char reason[48];
	char cause[96];
	uint64_t kvm_buckets[HT_EXIT_SLOTS], vmm_buckets[HT_EXIT_SLOTS]; /* the last: beyond the finite buckets */
	uint64_t count, kvm_ns, vmm_count, vmm_ns;
};

/* A VM's label sets while they are computed: how many, and its own "other" set. */
struct ht_metrics_cause_vm {
	char vm[HT_METRICS_CAUSE_VM_LABEL];
	size_t sets;
	struct ht_metrics_cause_set *other;
};

struct ht_metrics_causes {
	size_t n;
	struct ht_metrics_cause_set *sets; /* HT_METRICS_MAX_CAUSE_SETS */
	struct ht_metrics_cause_vm *vms;   /* HT_METRICS_MAX_CAUSE_SETS: scratch of ht_metrics_causes_set */
	bool other_used;
	struct ht_metrics_cause_set other;
	uint64_t lost;              /* exits whose cause BPF could not count (HT_CNT_EXIT_CAUSE_LOST) */
	uint64_t not_theirs;        /* cause events seen during exits whose cause they cannot be (HT_CNT_EXIT_CAUSE_NOT_ITS) */
	uint64_t overflow_exits;    /* exits counted under the "other" label set */
	uint64_t vm_overflow_exits; /* exits counted under their VM's own "other" set: the VM's sets at its share */
};

/* 0 or -ENOMEM. */
int ht_metrics_causes_init(struct ht_metrics_causes *c);
void ht_metrics_causes_free(struct ht_metrics_causes *c);
/* dst (made by init) takes src's numbers; never allocates. */
void ht_metrics_causes_copy(struct ht_metrics_causes *dst, const struct ht_metrics_causes *src);
/*
 * Every label set recomputed from the cumulative causes of t; vm_label_of
 * writes a VM process's label value (HT_METRICS_CAUSE_VM_LABEL bytes) and
 * says whether its numbers are shown.
 */
void ht_metrics_causes_set(struct ht_metrics_causes *c, const struct ht_exit_cause_table *t,
			   bool (*vm_label_of)(char *out, uint32_t pid, void *ctx), void *ctx);
/* The exposition text of both histograms and the two counters; sorts the sets. */
void ht_metrics_causes_render(struct ht_metrics_causes *c, FILE *out);

#endif
