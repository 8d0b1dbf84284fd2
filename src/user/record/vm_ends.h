/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * record --exits and top: VM processes that ended. Their entries in the
 * BPF programs' host-wide tables are freed once their last numbers are
 * read, so that VMs coming and going never fill a table later VMs need;
 * their rows stay in the cumulative table (the file and the metrics have
 * them). A pid that comes back is a new process whose BPF entries start
 * from zero: its numbers go on top of the rows the ended one left.
 */
#ifndef HT_RECORD_VM_ENDS_H
#define HT_RECORD_VM_ENDS_H

#include <stdbool.h>
#include <stddef.h>
#include "exits/exit_table.h"
#include "record/tracer.h"

struct ht_vm_ends {
	__u32 *ending;  /* ended before this read, not freed yet */
	size_t nending, ending_cap;
	__u32 *freed;   /* sorted: entries freed, the pid not seen in BPF since */
	size_t nfreed, freed_cap;
	__u32 *back;    /* sorted: freed, and seen in BPF again (a new process) */
	size_t nback, back_cap;
	struct ht_exit_table bases; /* the rows of back's pids when they came back */
	__u32 *looked;  /* sorted: the pids this find has looked at, each looked at once */
	size_t nlooked, looked_cap;
	/* Whether process pid has ended (tests may pretend); NULL: kill(pid, 0) says ESRCH. */
	bool (*ended)(__u32 pid);
};

void ht_vm_ends_init(struct ht_vm_ends *e);
void ht_vm_ends_free(struct ht_vm_ends *e);
/*
 * Before a read of BPF: the VM processes of total (series or causes) that
 * have ended, so that the read has their last numbers; each process looked
 * at once (one kill(pid, 0) a VM per interval). 0 or -ENOMEM.
 */
int ht_vm_ends_find(struct ht_vm_ends *e, const struct ht_exit_table *total);
/*
 * After the read (and its block): frees the entries of those
 * ht_vm_ends_find found (still in ending until the next find). Entries
 * freed, or -errno.
 */
long ht_vm_ends_release(struct ht_vm_ends *e, struct ht_tracer *t);
/*
 * What a read of BPF adds to for pid (*base): NULL for a pid never freed;
 * else the rows its ended process left in total (taken when it first comes
 * back): a series or cause of pid is base's row + BPF's numbers. 0 or
 * -ENOMEM.
 */
int ht_vm_ends_base(struct ht_vm_ends *e, const struct ht_exit_table *total, __u32 pid,
		    struct ht_exit_table **base);

/* Whether pid's entries were freed and it has not come back since. */
bool ht_vm_ends_freed(const struct ht_vm_ends *e, __u32 pid);
/*
 * The ended VM processes pids[n] (sorted, freed, not back) are forgotten:
 * out of freed and bases. A pid that comes back after is new to it (its
 * rows start from zero). 0 or -ENOMEM.
 */
int ht_vm_ends_forget(struct ht_vm_ends *e, const __u32 *pids, size_t n);

#endif
