// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "record/vm_identity.h"
#include "common/small_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common/escape.h"
#include "common/parse_number.h"
#include "common/hashmap.h"

/*
 * Copies src into out, cut to fit: names in the file have fixed sizes. The
 * bytes stay as they are (they are escaped where shown); a cut falls between
 * two characters, so a long name in another script stays readable.
 */
static void copy_cut(char *out, size_t outlen, const char *src)
{
	size_t n = ht_utf8_prefix(src, outlen - 1);

	memcpy(out, src, n);
	out[n] = '\0';
}

/* /proc/PID/comm or /proc/PID/task/TID/comm without its newline. */
static void read_comm(const char *path, char *out, size_t outlen)
{
	char buf[64];

	out[0] = '\0';
	if (ht_read_small_file(path, buf, sizeof(buf)) <= 0)
		return;
	buf[strcspn(buf, "\n")] = '\0';
	copy_cut(out, outlen, buf);
}

/*
 * The guest name in one -name value: its first item without '=', or guest=.
 * Items are decoded whole (",," is a comma), however long: only out cuts.
 */
static bool guest_name_of_value(const char *v, char *out, size_t outlen)
{
	char *item = malloc(strlen(v) + 1);
	size_t n = 0;
	bool first = true, found = false;

	if (!item)
		return false;
	for (const char *p = v;; p++) {
		if (*p == ',' && p[1] == ',') { /* QEMU's escaped comma */
			item[n++] = ',';
			p++;
			continue;
		}
		if (*p == ',' || *p == '\0') {
			item[n] = '\0';
			const char *name = NULL;
			if (strncmp(item, "guest=", 6) == 0)
				name = item + 6;
			else if (first && !strchr(item, '='))
				name = item;
			if (name && name[0]) {
				copy_cut(out, outlen, name);
				found = true;
				break;
			}
			if (*p == '\0')
				break;
			first = false;
			n = 0;
			continue;
		}
		item[n++] = *p;
	}
	free(item);
	return found;
}

bool ht_qemu_guest_name(const char *cmdline, size_t len, char *out, size_t outlen)
{
	const char *end = cmdline + len, *arg = cmdline;

	while (arg < end) {
		size_t alen = strnlen(arg, (size_t)(end - arg));
		const char *next = arg + alen + 1;

		if ((strcmp(arg, "-name") == 0 || strcmp(arg, "--name") == 0) && next < end &&
		    strnlen(next, (size_t)(end - next)) < (size_t)(end - next))
			return guest_name_of_value(next, out, outlen);
		arg = next;
	}
	return false;
}

static void read_guest_name(const char *proc, __u32 pid, char *out, size_t outlen)
{
	char path[300], buf[HT_CMDLINE_READ];
	ssize_t n;

	out[0] = '\0';
	snprintf(path, sizeof(path), "%s/%u/cmdline", proc, pid);
	n = ht_read_small_file(path, buf, sizeof(buf));
	if (n > 0 && !ht_qemu_guest_name(buf, (size_t)n, out, outlen))
		out[0] = '\0';
}

void ht_identity_read(const char *proc, __u32 pid, __u32 tid, __u64 first_seen_ns,
		      struct ht_identity *id)
{
	char path[300];

	memset(id, 0, sizeof(*id));
	id->first_seen_ns = first_seen_ns;
	id->pid = pid;
	id->tid = tid;
	snprintf(path, sizeof(path), "%s/%u/comm", proc, pid);
	read_comm(path, id->process_name, sizeof(id->process_name));
	snprintf(path, sizeof(path), "%s/%u/task/%u/comm", proc, pid, tid);
	read_comm(path, id->thread_name, sizeof(id->thread_name));
	read_guest_name(proc, pid, id->vm_name, sizeof(id->vm_name));
}

int ht_holds_kvm_vm(const char *proc, __u32 pid)
{
	char path[300], link[64];
	struct dirent *e;
	int ret = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%u/fd", proc, pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while (!ret && (e = readdir(d))) {
		char fd_path[600];
		ssize_t n;

		if (e->d_name[0] == '.')
			continue;
		snprintf(fd_path, sizeof(fd_path), "%s/%s", path, e->d_name);
		n = readlink(fd_path, link, sizeof(link) - 1);
		if (n < 0) {
			if (errno == EACCES || errno == EPERM)
				ret = -errno; /* the fd table of another user's process */
			continue;
		}
		link[n] = '\0';
		if (!strcmp(link, "anon_inode:kvm-vm"))
			ret = 1;
	}
	closedir(d);
	return ret;
}

int ht_process_uid(const char *proc, __u32 pid, uid_t *uid)
{
	char path[300], buf[2048], digits[16];
	const char *line;
	uint64_t v;
	size_t n;

	snprintf(path, sizeof(path), "%s/%u/status", proc, pid);
	if (ht_read_small_file(path, buf, sizeof(buf)) <= 0)
		return -ENOENT;
	line = strstr(buf, "\nUid:\t");
	if (!line)
		return -EINVAL;
	/* Real, effective, saved, filesystem: the first is who runs it. */
	line += strlen("\nUid:\t");
	n = strspn(line, "0123456789");
	if (n == 0 || n >= sizeof(digits))
		return -EINVAL;
	memcpy(digits, line, n);
	digits[n] = '\0';
	if (!ht_parse_u64(digits, 0, UINT32_MAX - 1, &v))
		return -EINVAL;
	*uid = (uid_t)v;
	return 0;
}

int ht_find_vms(const char *proc, const char *name, __u32 *pids, size_t max, size_t *unverified)
{
	DIR *d = opendir(proc);
	struct dirent *e;
	size_t found = 0;
	char vm[HT_CMDLINE_READ];

	*unverified = 0;
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		char *endp;
		unsigned long p = strtoul(e->d_name, &endp, 10);

		if (*endp || !p || p > UINT32_MAX)
			continue;
		read_guest_name(proc, (__u32)p, vm, sizeof(vm));
		if (strcmp(vm, name))
			continue;
		int holds = ht_holds_kvm_vm(proc, (__u32)p);
		if (holds < 0)
			(*unverified)++;
		else if (holds && found < max)
			pids[found++] = (__u32)p;
	}
	closedir(d);
	return (int)found;
}

bool ht_is_vm_named(const char *proc, __u32 pid, const char *name)
{
	char vm[HT_CMDLINE_READ];

	read_guest_name(proc, pid, vm, sizeof(vm));
	return vm[0] && !strcmp(vm, name);
}

const char *ht_vm_names_lookup(void *ctx, __u32 pid)
{
	struct ht_vm_names *n = ctx;
	struct ht_identity id;
	unsigned int i;

	for (i = 0; i < n->count; i++)
		if (n->pid[i] == pid)
			return n->name[i];
	/* Full: the oldest entry goes (a VM restarts as a new pid). */
	i = n->count < HT_VM_NAMES_MAX ? n->count++ : n->next++ % HT_VM_NAMES_MAX;
	ht_identity_read(n->proc, pid, pid, 0, &id);
	n->pid[i] = pid;
	copy_cut(n->name[i], sizeof(n->name[i]), id.vm_name[0] ? id.vm_name : id.process_name);
	return n->name[i];
}

const char *ht_vm_names_thread(void *ctx, __u32 pid, __u32 tid)
{
	struct ht_vm_names *n = ctx;
	__u64 key = (__u64)pid << 32 | tid;
	struct ht_identity id;
	unsigned int i;

	for (i = 0; i < n->thread_count; i++)
		if (n->thread_key[i] == key)
			return n->thread[i];
	i = n->thread_count < HT_THREAD_NAMES_MAX ? n->thread_count++ : n->thread_next++ % HT_THREAD_NAMES_MAX;
	ht_identity_read(n->proc, pid, tid, 0, &id);
	n->thread_key[i] = key;
	copy_cut(n->thread[i], sizeof(n->thread[i]), id.thread_name);
	return n->thread[i];
}

/* The one hash map (seeded: a guest's tids cannot be chosen to collide), keyed by pid << 32 | tid. */
struct ht_thread_set {
	struct ht_hashmap keys;
};

struct ht_thread_set *ht_thread_set_new(void)
{
	struct ht_thread_set *s = calloc(1, sizeof(*s));

	if (s)
		ht_hashmap_init(&s->keys, ht_hash_long, ht_equal_long, NULL);
	return s;
}

static long thread_key(__u32 pid, __u32 tid)
{
	return (long)((__u64)pid << 32 | tid);
}

int ht_thread_set_add(struct ht_thread_set *s, __u32 pid, __u32 tid)
{
	int ret = ht_hashmap_insert(&s->keys, thread_key(pid, tid), 0, HT_HASHMAP_ADD, NULL, NULL);

	return ret == -EEXIST ? 0 : ret ? ret : 1;
}

void ht_thread_set_remove(struct ht_thread_set *s, __u32 pid, __u32 tid)
{
	ht_hashmap_delete(&s->keys, thread_key(pid, tid), NULL, NULL);
}

size_t ht_thread_set_prune(struct ht_thread_set *s, bool (*alive)(__u32 tid))
{
	struct ht_hashmap_entry *cur, *tmp;
	size_t bkt, gone = 0;

	/* An entry's value: 1 once a look found its thread gone. */
	ht_hashmap_for_each_safe(&s->keys, cur, tmp, bkt) {
		if (alive((__u32)cur->key))
			cur->value = 0;
		else if (!cur->value)
			cur->value = 1;
		else if (ht_hashmap_delete(&s->keys, cur->key, NULL, NULL))
			gone++;
	}
	return gone;
}

void ht_thread_set_free(struct ht_thread_set *s)
{
	if (!s)
		return;
	ht_hashmap_clear(&s->keys);
	free(s);
}
