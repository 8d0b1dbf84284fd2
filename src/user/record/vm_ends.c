// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "record/vm_ends.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include "common/grow.h"
#include "common/sorted_u32.h"

void ht_vm_ends_init(struct ht_vm_ends *e)
{
	memset(e, 0, sizeof(*e));
	ht_exit_table_init(&e->bases);
}

void ht_vm_ends_free(struct ht_vm_ends *e)
{
	free(e->ending);
	free(e->freed);
	free(e->back);
	free(e->looked);
	ht_exit_table_free(&e->bases);
	memset(e, 0, sizeof(*e));
}

static bool process_ended(const struct ht_vm_ends *e, __u32 pid)
{
	if (e->ended)
		return e->ended(pid);
	/* EPERM: it exists, it is only another user's. */
	return kill((pid_t)pid, 0) && errno == ESRCH;
}

/* The index of pid in sorted v[n], or where it would go; *found whether it is there. */
static size_t find_pid(const __u32 *v, size_t n, __u32 pid, bool *found)
{
	size_t at = ht_u32_lower_bound(v, n, pid);

	*found = at < n && v[at] == pid;
	return at;
}

static int add_pid(__u32 **v, size_t *n, size_t *cap, __u32 pid)
{
	bool found;
	size_t at = find_pid(*v, *n, pid, &found);

	if (found)
		return 0;
	if (HT_GROW(*v, *cap, *n + 1, 64))
		return -ENOMEM;
	memmove(*v + at + 1, *v + at, (*n - at) * sizeof(**v));
	(*v)[at] = pid;
	(*n)++;
	return 0;
}

static void remove_pid(__u32 *v, size_t *n, __u32 pid)
{
	bool found;
	size_t at = find_pid(v, *n, pid, &found);

	if (!found)
		return;
	memmove(v + at, v + at + 1, (*n - at - 1) * sizeof(*v));
	(*n)--;
}

/* A pid of total not freed (or back since), not looked at in this find yet: ended? Then into ending. */
static int consider(struct ht_vm_ends *e, __u32 pid)
{
	size_t n = e->nlooked;
	bool found;

	if (!pid)
		return 0;
	find_pid(e->freed, e->nfreed, pid, &found);
	if (found)
		return 0;
	/* Causes come in the order they arrived, their pids interleaved: a pid is looked at once a find. */
	if (add_pid(&e->looked, &e->nlooked, &e->looked_cap, pid))
		return -ENOMEM;
	if (e->nlooked == n)
		return 0;
	if (!process_ended(e, pid))
		return 0;
	if (HT_GROW(e->ending, e->ending_cap, e->nending + 1, 16))
		return -ENOMEM;
	e->ending[e->nending++] = pid;
	return 0;
}

int ht_vm_ends_find(struct ht_vm_ends *e, const struct ht_exit_table *total)
{
	int ret = 0;

	e->nending = 0;
	e->nlooked = 0;
	/* Series are sorted by key, so by pid: one look per process. */
	for (size_t i = 0; i < total->nseries && !ret; i++)
		if (!i || total->series[i].key.pid != total->series[i - 1].key.pid)
			ret = consider(e, total->series[i].key.pid);
	/* Causes in the order they came: a pid already considered is skipped. */
	for (size_t i = 0; i < total->causes.n && !ret; i++)
		if (!i || total->causes.rows[i].key.pid != total->causes.rows[i - 1].key.pid)
			ret = consider(e, total->causes.rows[i].key.pid);
	return ret;
}

long ht_vm_ends_release(struct ht_vm_ends *e, struct ht_tracer *t)
{
	long freed;

	if (!e->nending)
		return 0;
	freed = ht_tracer_free_vms(t, e->ending, e->nending);
	if (freed < 0)
		return freed;
	for (size_t i = 0; i < e->nending; i++) {
		remove_pid(e->back, &e->nback, e->ending[i]);
		if (add_pid(&e->freed, &e->nfreed, &e->freed_cap, e->ending[i]))
			return -ENOMEM;
	}
	return freed;
}

/* pid came back: its rows in total, as they are now, become its bases. 0 or -ENOMEM. */
static int came_back(struct ht_vm_ends *e, const struct ht_exit_table *total, __u32 pid)
{
	for (size_t i = 0; i < total->nseries; i++) {
		const struct ht_exit_series *s = &total->series[i];
		struct ht_exit_series *b;

		if (s->key.pid != pid)
			continue;
		if (!(b = ht_exit_table_series(&e->bases, &s->key, true)))
			return -ENOMEM;
		*b = *s;
	}
	for (size_t i = 0; i < total->causes.n; i++) {
		const struct ht_exit_cause_row *c = &total->causes.rows[i];
		struct ht_exit_cause_row *b;

		if (c->key.pid != pid)
			continue;
		if (!(b = ht_exit_causes_row(&e->bases.causes, &c->key, true)))
			return -ENOMEM;
		b->h = c->h;
	}
	remove_pid(e->freed, &e->nfreed, pid);
	return add_pid(&e->back, &e->nback, &e->back_cap, pid);
}

int ht_vm_ends_base(struct ht_vm_ends *e, const struct ht_exit_table *total, __u32 pid,
		    struct ht_exit_table **base)
{
	bool found;

	*base = NULL;
	find_pid(e->back, e->nback, pid, &found);
	if (!found) {
		find_pid(e->freed, e->nfreed, pid, &found);
		if (!found)
			return 0;
		int ret = came_back(e, total, pid);
		if (ret)
			return ret;
	}
	*base = &e->bases;
	return 0;
}

bool ht_vm_ends_freed(const struct ht_vm_ends *e, __u32 pid)
{
	bool found;

	find_pid(e->freed, e->nfreed, pid, &found);
	return found;
}

int ht_vm_ends_forget(struct ht_vm_ends *e, const __u32 *pids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		remove_pid(e->freed, &e->nfreed, pids[i]);
	return ht_exit_table_forget(&e->bases, pids, n, NULL);
}
