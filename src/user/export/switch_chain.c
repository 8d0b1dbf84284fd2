// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/switch_chain.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include "common/grow.h"
#include "export/id_pair_table.h"

/* A CPU's last switch-in. */
struct link {
	uint32_t tid;
	int32_t prio;
	uint64_t known_ns; /* the switch-in, or the module's unload after it */
	bool stopped;      /* the module unloaded since the switch-in */
	bool listed;       /* in its VM's list of links switched since the last unload */
};

/* A VM's links switched since its module's last unload: what an unload stops, without a walk of every CPU. */
struct vm_links {
	struct link **v;
	size_t n, cap;
	unsigned long long breaks;
};

struct ht_switch_chain {
	struct ht_id_pair_table *cpus; /* (VM pid, CPU) -> struct link */
	struct ht_id_pair_table *vms;  /* (VM pid, 0) -> struct vm_links */
	unsigned long long total;
};

void ht_switch_chain_free(struct ht_switch_chain *c)
{
	if (!c)
		return;
	for (size_t i = 0; c->cpus && i < ht_id_pair_table_len(c->cpus); i++)
		free(ht_id_pair_table_at(c->cpus, i));
	ht_id_pair_table_free(c->cpus);
	for (size_t i = 0; c->vms && i < ht_id_pair_table_len(c->vms); i++) {
		struct vm_links *l = ht_id_pair_table_at(c->vms, i);
		free(l->v);
		free(l);
	}
	ht_id_pair_table_free(c->vms);
	free(c);
}

struct ht_switch_chain *ht_switch_chain_new(void)
{
	struct ht_switch_chain *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->cpus = ht_id_pair_table_new();
	c->vms = ht_id_pair_table_new();
	if (!c->cpus || !c->vms) {
		ht_switch_chain_free(c);
		return NULL;
	}
	return c;
}

int ht_switch_chain_follow(struct ht_switch_chain *c, uint32_t pid, uint32_t cpu, uint32_t prev_tid,
			   uint32_t next_tid, int32_t next_prio, uint64_t ts, struct ht_chain_break *brk)
{
	bool first, is_new;
	struct link *l = ht_id_pair_table_get_or_add(c->cpus, pid, cpu, sizeof(*l), &first);
	struct vm_links *vm = ht_id_pair_table_get_or_add(c->vms, pid, 0, sizeof(*vm), &is_new);
	int broken = 0;

	if (!l || !vm)
		return -ENOMEM;
	/*
	 * A CPU's first switch starts its chain: what ran before it is not in
	 * the trace, and no viewer has a task there to leave running.
	 */
	if (!first && l->tid != prev_tid) {
		*brk = (struct ht_chain_break){ .last_tid = l->tid, .last_prio = l->prio, .known_ns = l->known_ns };
		vm->breaks++;
		c->total++;
		broken = 1;
	}
	if (!l->listed) {
		if (HT_GROW(vm->v, vm->cap, vm->n + 1, 8))
			return -ENOMEM;
		vm->v[vm->n++] = l;
		l->listed = true;
	}
	l->tid = next_tid;
	l->prio = next_prio;
	l->known_ns = ts;
	l->stopped = false;
	return broken;
}

void ht_switch_chain_stopped(struct ht_switch_chain *c, uint32_t pid, uint64_t ts)
{
	struct vm_links *vm = ht_id_pair_table_get(c->vms, pid, 0);

	if (!vm)
		return;
	/* Only the links switched since the last unload: a guest that unloads by the million costs one step each. */
	for (size_t i = 0; i < vm->n; i++) {
		if (!vm->v[i]->stopped && ts > vm->v[i]->known_ns)
			vm->v[i]->known_ns = ts;
		vm->v[i]->stopped = true;
		vm->v[i]->listed = false;
	}
	vm->n = 0;
}

unsigned long long ht_switch_chain_breaks(const struct ht_switch_chain *c, uint32_t pid)
{
	const struct vm_links *vm = ht_id_pair_table_get(c->vms, pid, 0);

	return vm ? vm->breaks : 0;
}

unsigned long long ht_switch_chain_total(const struct ht_switch_chain *c)
{
	return c->total;
}
