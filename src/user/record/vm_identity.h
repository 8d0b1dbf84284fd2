/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Who a VM process and its vCPU threads are, for people reading a trace: the
 * process name, QEMU's guest name (-name) and the thread name ("CPU 1/KVM"),
 * read from /proc when `record` first drains a record of a thread (never in
 * BPF), and the reverse: the VM processes with a guest name (record --vm).
 * /proc is a parameter so that tests can use fake trees.
 */
#ifndef HT_VM_IDENTITY_H
#define HT_VM_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "hypertrace/trace_file.h"

/*
 * How much of /proc/PID/cmdline is read. A guest name is matched whole
 * (record/top --vm): it is never longer than this. The trace file keeps the
 * first 63 bytes of it (struct ht_identity's vm_name, cut between two
 * characters), and so do the live views' names.
 */
#define HT_CMDLINE_READ 8192

/*
 * QEMU's guest name from its command line (arguments separated by NULs, as
 * in /proc/PID/cmdline): the value of -name or --name, "NAME[,key=value...]"
 * or "guest=NAME,...", with ",," standing for a comma. false if there is none.
 */
bool ht_qemu_guest_name(const char *cmdline, size_t len, char *out, size_t outlen);

/* Fills id for thread tid of process pid; what cannot be read (gone) stays "". */
void ht_identity_read(const char *proc, __u32 pid, __u32 tid, __u64 first_seen_ns,
		      struct ht_identity *id);

/*
 * 1 if process pid holds a KVM VM (an anon_inode:kvm-vm descriptor in
 * /proc/PID/fd), 0 if not or gone, -EACCES/-EPERM if its descriptors cannot
 * be read (another user's process, without CAP_SYS_PTRACE).
 */
int ht_holds_kvm_vm(const char *proc, __u32 pid);
/*
 * The real uid of process pid (the first field of Uid: in /proc/PID/status):
 * the user who runs it. 0, or -ENOENT if it is gone.
 */
int ht_process_uid(const char *proc, __u32 pid, uid_t *uid);
/*
 * The processes with QEMU guest name `name` (the whole name) that hold a
 * KVM VM: a process that merely has "-name NAME" in its arguments is not one. Up to max pids;
 * returns how many, or -errno. *unverified: processes with that name whose
 * descriptors could not be read (left out: the kernel vouches for them at
 * their first hypercall exit, see ht_tracer_vm_candidates).
 */
int ht_find_vms(const char *proc, const char *name, __u32 *pids, size_t max, size_t *unverified);
/* True if process pid has QEMU guest name `name`, whole (its command line). */
bool ht_is_vm_named(const char *proc, __u32 pid, const char *name);

/*
 * Names of running VM processes for the live view, read from /proc once per
 * pid: the QEMU guest name, else the process name.
 */
#define HT_VM_NAMES_MAX 64
#define HT_THREAD_NAMES_MAX 256
struct ht_vm_names {
	const char *proc;
	unsigned int count, next;
	__u32 pid[HT_VM_NAMES_MAX];
	char name[HT_VM_NAMES_MAX][64];
	unsigned int thread_count, thread_next;
	__u64 thread_key[HT_THREAD_NAMES_MAX]; /* pid << 32 | tid */
	char thread[HT_THREAD_NAMES_MAX][16];
};
/* ctx: a struct ht_vm_names; "" if the process is gone or has no name. */
const char *ht_vm_names_lookup(void *ctx, __u32 pid);
/* ctx: a struct ht_vm_names; the thread's name ("CPU 1/KVM"), "" if gone; read once per thread. */
const char *ht_vm_names_thread(void *ctx, __u32 pid, __u32 tid);

/* A set of (pid, tid) pairs: the threads whose identity is written. */
struct ht_thread_set;
struct ht_thread_set *ht_thread_set_new(void);
/* 1 if (pid, tid) was not in the set and is now, 0 if it was, -ENOMEM. */
int ht_thread_set_add(struct ht_thread_set *s, __u32 pid, __u32 tid);
/* (pid, tid) out of the set: a thread of a forgotten VM, named again if its ids come back. */
void ht_thread_set_remove(struct ht_thread_set *s, __u32 pid, __u32 tid);
/*
 * Out of the set: the threads alive (by tid) says were gone at this call
 * and at the one before, so a thread id that comes back (a new thread) is
 * named again and the set holds the threads alive and just gone. Called
 * seconds apart, a thread's records were drained between its two looks.
 * Returns how many went.
 */
size_t ht_thread_set_prune(struct ht_thread_set *s, bool (*alive)(__u32 tid));
void ht_thread_set_free(struct ht_thread_set *s);

#endif
