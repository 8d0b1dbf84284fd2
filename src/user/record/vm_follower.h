/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --vm NAME (record, top): the VM's processes in the tracer's process filter
 * while the VM stops, starts and restarts. Processes of it that ended leave
 * the filter; a new one is traced from the first exit the kernel reports
 * from it (a kvm_exit comes only from a thread running a vCPU of a KVM VM,
 * so a process that is not a VM never counts, whatever its arguments say):
 * the BPF programs list the untraced processes they saw exit
 * (ht_tracer_vm_candidates), and each tick looks at the new ones' names.
 */
#ifndef HT_VM_FOLLOWER_H
#define HT_VM_FOLLOWER_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include <linux/types.h>
#include "record/tracer.h"

/* How often the VM population is looked at, and how many processes of one VM are followed. */
#define HT_VM_FOLLOW_INTERVAL_NS 250000000ull
#define HT_VM_FOLLOW_MAX_PIDS 64
/* The users told apart when several run processes under the VM's name (a warning lists them). */
#define HT_VM_FOLLOW_MAX_UIDS 8

struct ht_vm_follower {
	struct ht_tracer *tracer;
	const char *name;        /* QEMU's guest name (-name), matched whole */
	/*
	 * --vm-user: only processes this user runs. Without it, whoever starts
	 * a VM under the name joins it, and a second user is warned about.
	 */
	bool uid_on;
	uid_t uid;
	const char *proc;        /* "/proc" */
	FILE *log;               /* where problems go; NULL: nowhere (a full-screen view) */
	bool verbose;            /* also each process taken on */
	const char *found_by;    /* how a new process is found, for -v: "its first exit" */
	__u32 pids[HT_VM_FOLLOW_MAX_PIDS];
	size_t npids;
	unsigned long long looked_ns; /* when the population was last looked at */
	uid_t uids[HT_VM_FOLLOW_MAX_UIDS]; /* the users of the processes taken on */
	size_t nuids;
};

/*
 * At start, with the privileges to read other processes' descriptors: the
 * VM's processes running now go into the filter. How many, or -errno; with
 * none, a note that it is traced once it starts (unless some could not be
 * checked: *unverified, as ht_find_vms).
 */
int ht_vm_follower_start(struct ht_vm_follower *f, size_t *unverified);
/* From the loop: ended processes leave the filter, new ones join it; at most every HT_VM_FOLLOW_INTERVAL_NS. */
void ht_vm_follower_tick(struct ht_vm_follower *f, unsigned long long now);

#endif
