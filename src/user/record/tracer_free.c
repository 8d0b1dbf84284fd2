// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The freeing (and counting) of VM processes' entries in the tracer's
 * host-wide tables of --exits (record/tracer.h): their series in every CPU's
 * exit_cache and in exit_hists, their causes and cause names, and their
 * shares (vm_shares), so that VMs that come and go never fill a table that
 * later VMs need.
 */
#include "record/tracer_private.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "common/grow.h"

static int cmp_u32(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return (x > y) - (x < y);
}

/* Is pid among the n sorted pids? */
static bool among(const __u32 *pids, size_t n, __u32 pid)
{
	return bsearch(&pid, pids, n, sizeof(*pids), cmp_u32) != NULL;
}

/*
 * Deletes every entry of hash map fd whose key begins with one of the n
 * sorted pids (each key type here has its VM process first). The keys are
 * collected in one walk and deleted after it: deleting the key a walk
 * stands on sends it back to the start. Returns the number deleted, or
 * -errno.
 */
static long delete_by_pid(int fd, size_t key_size, const __u32 *pids, size_t n)
{
	unsigned char key[32], next[32];
	unsigned char *doomed = NULL;
	size_t ndoomed = 0, cap = 0;
	bool first = true;
	long ret = 0;

	if (key_size > sizeof(key))
		return -EINVAL;
	while (bpf_map_get_next_key(fd, first ? NULL : key, next) == 0) {
		__u32 pid;

		first = false;
		memcpy(key, next, key_size);
		memcpy(&pid, key, sizeof(pid));
		if (!among(pids, n, pid))
			continue;
		if (HT_GROW(doomed, cap, (ndoomed + 1) * key_size, 64 * key_size)) {
			ret = -ENOMEM;
			break;
		}
		memcpy(doomed + ndoomed * key_size, key, key_size);
		ndoomed++;
	}
	for (size_t i = 0; i < ndoomed; i++)
		if (bpf_map_delete_elem(fd, doomed + i * key_size) == 0 && ret >= 0)
			ret++;
	free(doomed);
	return ret;
}

/*
 * A VM's entries in the CPUs' own tables: emptied, then free. Only the
 * entry's CPU takes a free entry, and then writes its key, sets used and
 * counts into h, which it takes as zero: so h is zeroed before used is
 * cleared. No exit of an ended process comes any more; while used is still
 * set, its key is no exit's.
 */
static long free_cached(struct ht_tracer *t, const __u32 *pids, size_t n)
{
	long freed = 0;

	for (size_t i = 0; t->exit_cache && i < t->exit_cache_entries; i++) {
		struct exit_cache_entry *e = &t->exit_cache[i];

		if (!__atomic_load_n(&e->used, __ATOMIC_ACQUIRE) || !among(pids, n, e->key.pid))
			continue;
		memset(&e->h, 0, sizeof(e->h));
		__atomic_store_n(&e->used, 0, __ATOMIC_RELEASE);
		freed++;
	}
	return freed;
}

/* The hash maps of series and causes, each key beginning with its VM process. */
struct vm_map {
	int fd;
	size_t key_size;
};

#define VM_MAPS 3
static void vm_maps(const struct ht_tracer *t, struct vm_map out[VM_MAPS])
{
	out[0] = (struct vm_map){ bpf_map__fd(t->skel->maps.exit_hists), sizeof(struct ht_exit_key) };
	out[1] = (struct vm_map){ bpf_map__fd(t->skel->maps.exit_causes), sizeof(struct ht_exit_cause_key) };
	out[2] = (struct vm_map){ bpf_map__fd(t->skel->maps.exit_cause_names), sizeof(struct ht_exit_cause_key) };
}

long ht_tracer_free_vms(struct ht_tracer *t, __u32 *pids, size_t n)
{
	struct vm_map maps[VM_MAPS];
	int shares = bpf_map__fd(t->skel->maps.vm_shares);
	long freed;

	if (!n)
		return 0;
	vm_maps(t, maps);
	qsort(pids, n, sizeof(*pids), cmp_u32);
	freed = free_cached(t, pids, n);
	for (size_t m = 0; m < VM_MAPS; m++) {
		long r = delete_by_pid(maps[m].fd, maps[m].key_size, pids, n);

		if (r < 0)
			return r;
		freed += r;
	}
	/* Last: a share is the count of the entries just deleted. */
	for (size_t i = 0; i < n; i++)
		bpf_map_delete_elem(shares, &pids[i]);
	return freed;
}

long ht_tracer_vm_entries(const struct ht_tracer *t, __u32 pid)
{
	struct vm_map maps[VM_MAPS];
	unsigned char key[32], next[32];
	struct ht_vm_share share;
	long n = 0;

	vm_maps(t, maps);
	for (size_t i = 0; t->exit_cache && i < t->exit_cache_entries; i++)
		n += __atomic_load_n(&t->exit_cache[i].used, __ATOMIC_ACQUIRE) && t->exit_cache[i].key.pid == pid;
	for (size_t m = 0; m < VM_MAPS; m++) {
		bool first = true;

		while (bpf_map_get_next_key(maps[m].fd, first ? NULL : key, next) == 0) {
			__u32 p;

			first = false;
			memcpy(key, next, maps[m].key_size);
			memcpy(&p, key, sizeof(p));
			n += p == pid;
		}
	}
	return n + (bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.vm_shares), &pid, &share) == 0);
}

struct share_read {
	ht_vm_share_fn fn;
	void *ctx;
};

static int take_share(void *ctx, const void *key, const void *value, int ncpus)
{
	const struct share_read *r = ctx;
	struct ht_vm_share share;
	__u32 tgid;

	(void)ncpus;
	memcpy(&tgid, key, sizeof(tgid));
	memcpy(&share, value, sizeof(share));
	r->fn(r->ctx, tgid, &share);
	return 0;
}

/* Every VM's share, in batches: one system call an interval for most hosts, where a walk took two per VM. */
int ht_tracer_read_vm_shares(struct ht_tracer *t, ht_vm_share_fn fn, void *ctx)
{
	struct share_read r = { .fn = fn, .ctx = ctx };

	return ht_tracer_read_hash(t, bpf_map__fd(t->skel->maps.vm_shares), sizeof(__u32), sizeof(struct ht_vm_share),
				   false, take_share, &r);
}
