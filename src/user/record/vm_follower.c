// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "record/vm_follower.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include "record/vm_identity.h"

static bool process_gone(__u32 pid)
{
	/* EPERM: it exists, it is only another user's. */
	return kill((pid_t)pid, 0) && errno == ESRCH;
}

/*
 * Notes the user of a process that joins the VM: the name is whoever
 * starts a VM under it, so a second user is said once, with every uid.
 */
static void note_user(struct ht_vm_follower *f, uid_t uid)
{
	char list[HT_VM_FOLLOW_MAX_UIDS * 12];
	size_t len = 0;

	for (size_t i = 0; i < f->nuids; i++)
		if (f->uids[i] == uid)
			return;
	if (f->nuids == HT_VM_FOLLOW_MAX_UIDS)
		return; /* already warned about, several times over */
	f->uids[f->nuids++] = uid;
	if (f->nuids < 2 || !f->log)
		return;
	for (size_t i = 0; i < f->nuids; i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%u", i ? ", " : "", (unsigned int)f->uids[i]);
	fprintf(f->log, "hypertrace-bpf: warning: VM '%s' is run by processes of %zu users (uids %s): their numbers are merged; to follow one user's only, add --vm-user USER\n",
		f->name, f->nuids, list);
}

/* Whether process pid, named as the VM, is taken on: run by --vm-user's user, or by anyone without it. */
static bool owner_admits(struct ht_vm_follower *f, __u32 pid)
{
	uid_t uid;

	if (ht_process_uid(f->proc, pid, &uid))
		return false; /* gone meanwhile */
	if (f->uid_on && uid != f->uid) {
		if (f->verbose && f->log)
			fprintf(f->log, "hypertrace-bpf: VM '%s': process %u is run by uid %u, not --vm-user's %u: not traced\n",
				f->name, pid, (unsigned int)uid, (unsigned int)f->uid);
		return false;
	}
	note_user(f, uid);
	return true;
}

static void take_on(struct ht_vm_follower *f, __u32 pid, const char *why)
{
	for (size_t i = 0; i < f->npids; i++)
		if (f->pids[i] == pid)
			return;
	if (!owner_admits(f, pid))
		return;
	if (f->npids == HT_VM_FOLLOW_MAX_PIDS) {
		if (f->log)
			fprintf(f->log, "hypertrace-bpf: VM '%s': more than %d processes at once: process %u is not traced\n",
				f->name, HT_VM_FOLLOW_MAX_PIDS, pid);
		return;
	}
	int err = ht_tracer_trace_tgid(f->tracer, pid, true);

	if (err) {
		if (f->log)
			fprintf(f->log, "hypertrace-bpf: VM '%s': cannot trace process %u: %s\n", f->name, pid,
				strerror(-err));
		return;
	}
	f->pids[f->npids++] = pid;
	if (f->verbose && f->log)
		fprintf(f->log, "hypertrace-bpf: VM '%s': tracing process %u (%s)\n", f->name, pid, why);
}

/* A process that exited and is not traced: is it (a new process of) the VM? */
static void candidate(void *ctx, __u32 tgid, bool fresh)
{
	struct ht_vm_follower *f = ctx;

	if (fresh && ht_is_vm_named(f->proc, tgid, f->name))
		take_on(f, tgid, f->found_by);
	else if (!fresh && process_gone(tgid))
		ht_tracer_forget_candidate(f->tracer, tgid); /* its pid may come back as a new process */
}

int ht_vm_follower_start(struct ht_vm_follower *f, size_t *unverified)
{
	__u32 pids[HT_VM_FOLLOW_MAX_PIDS];
	int n = ht_find_vms(f->proc, f->name, pids, HT_VM_FOLLOW_MAX_PIDS, unverified);

	for (int i = 0; i < n; i++)
		take_on(f, pids[i], "running at start");
	if (n >= 0 && f->npids == 0 && !*unverified && f->log) {
		if (f->uid_on)
			fprintf(f->log, "hypertrace-bpf: no VM with QEMU guest name '%s' (-name %s) of uid %u runs yet: it is traced once it starts\n",
				f->name, f->name, (unsigned int)f->uid);
		else
			fprintf(f->log, "hypertrace-bpf: no VM with QEMU guest name '%s' (-name %s) runs yet: it is traced once it starts\n",
				f->name, f->name);
	}
	return n < 0 ? n : (int)f->npids;
}

void ht_vm_follower_tick(struct ht_vm_follower *f, unsigned long long now)
{
	if (now - f->looked_ns < HT_VM_FOLLOW_INTERVAL_NS)
		return;
	f->looked_ns = now;
	for (size_t i = 0; i < f->npids;) {
		if (process_gone(f->pids[i])) {
			ht_tracer_trace_tgid(f->tracer, f->pids[i], false);
			f->pids[i] = f->pids[--f->npids];
		} else {
			i++;
		}
	}
	ht_tracer_vm_candidates(f->tracer, candidate, f);
}
