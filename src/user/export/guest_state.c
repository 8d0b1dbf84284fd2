// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/guest_state.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export/id_pair_table.h"
#include "common/grow.h"

struct task {
	char comm[HT_GEV_COMM_LEN + 1];
	uint32_t depth;
	size_t cap;
	struct ht_gev_call *calls; /* open calls, innermost last */
};

struct cpu {
	int64_t task; /* -1: unknown */
	bool listed;  /* in its VM's list of CPUs with a known task */
};

/* A VM's CPUs whose task is known: what an unload forgets, without a walk of every CPU id. */
struct cpu_list {
	struct cpu **v;
	size_t n, cap;
};

struct vcpu {
	bool known;
	uint32_t cpu; /* the guest CPU its last event named */
};

struct ht_guest_state {
	const struct ht_decoder *dec;
	struct ht_gev_decoder gev;
	struct ht_id_pair_table *tasks; /* (host pid, guest tid) -> struct task */
	struct ht_id_pair_table *cpus;  /* (host pid, guest cpu) -> struct cpu */
	struct ht_id_pair_table *vcpus; /* (host pid, host tid) -> struct vcpu */
	struct ht_id_pair_table *vms;   /* (host pid, 0) -> struct cpu_list */
};

enum value_kind { VALUE_PLAIN, VALUE_TASK, VALUE_CPU_LIST };

static void free_values(struct ht_id_pair_table *t, enum value_kind kind)
{
	if (!t)
		return;
	for (size_t i = 0; i < ht_id_pair_table_len(t); i++) {
		if (kind == VALUE_TASK)
			free(((struct task *)ht_id_pair_table_at(t, i))->calls);
		else if (kind == VALUE_CPU_LIST)
			free(((struct cpu_list *)ht_id_pair_table_at(t, i))->v);
		free(ht_id_pair_table_at(t, i));
	}
	ht_id_pair_table_free(t);
}

void ht_guest_state_free(struct ht_guest_state *s)
{
	if (!s)
		return;
	free_values(s->tasks, VALUE_TASK);
	free_values(s->cpus, VALUE_PLAIN);
	free_values(s->vcpus, VALUE_PLAIN);
	free_values(s->vms, VALUE_CPU_LIST);
	free(s);
}

struct ht_guest_state *ht_guest_state_new(const struct ht_decoder *dec)
{
	struct ht_guest_state *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->dec = dec;
	if (ht_gev_decoder_init(&s->gev)) {
		free(s);
		return NULL;
	}
	s->tasks = ht_id_pair_table_new();
	s->cpus = ht_id_pair_table_new();
	s->vcpus = ht_id_pair_table_new();
	s->vms = ht_id_pair_table_new();
	if (!s->tasks || !s->cpus || !s->vcpus || !s->vms) {
		ht_guest_state_free(s);
		return NULL;
	}
	return s;
}

static int set_comm(struct ht_guest_state *s, uint32_t pid, uint32_t tid, const char *comm)
{
	struct task *t;

	if (!comm[0])
		return 0;
	t = ht_id_pair_table_get_or_add(s->tasks, pid, tid, sizeof(*t), NULL);
	if (!t)
		return -ENOMEM;
	snprintf(t->comm, sizeof(t->comm), "%s", comm);
	return 0;
}

static int set_cpu_task(struct ht_guest_state *s, uint32_t pid, uint32_t cpu, int64_t task)
{
	struct cpu *c = ht_id_pair_table_get_or_add(s->cpus, pid, cpu, sizeof(*c), NULL);
	struct cpu_list *l;

	if (!c)
		return -ENOMEM;
	c->task = task;
	if (c->listed)
		return 0;
	/* Listed once until the VM's next unload, which empties the list. */
	l = ht_id_pair_table_get_or_add(s->vms, pid, 0, sizeof(*l), NULL);
	if (!l)
		return -ENOMEM;
	if (HT_GROW(l->v, l->cap, l->n + 1, 8))
		return -ENOMEM;
	l->v[l->n++] = c;
	c->listed = true;
	return 0;
}

static int func_call(struct ht_guest_state *s, const struct ht_record *r, struct ht_gev *ev)
{
	struct task *t = ht_id_pair_table_get_or_add(s->tasks, r->host_pid, ev->u.func.tid, sizeof(*t), NULL);

	if (!t)
		return -ENOMEM;
	ev->u.func.matched = false;
	ev->u.func.nlost = 0;
	ev->u.func.lost = NULL;
	if (ev->kind == HT_GEV_FUNC_ENTRY) {
		if (t->depth == HT_GEV_MAX_DEPTH)
			return 0;
		if (HT_GROW(t->calls, t->cap, (size_t)t->depth + 1, 8))
			return -ENOMEM;
		t->calls[t->depth++] = (struct ht_gev_call){ ev->u.func.addr, ev->u.func.call_site };
		ev->u.func.matched = true;
		return 0;
	}
	/* The innermost open call of that function; calls above it never returned here (lost exits). */
	for (uint32_t i = t->depth; i-- > 0;)
		if (t->calls[i].addr == ev->u.func.addr) {
			ev->u.func.call_site = t->calls[i].site;
			ev->u.func.matched = true;
			ev->u.func.nlost = t->depth - i - 1;
			ev->u.func.lost = t->calls + i + 1;
			t->depth = i;
			break;
		}
	return 0;
}

/*
 * The module went away: nothing is known of what runs on the VM's CPUs from
 * here on. Only the CPUs given a task since the last unload are walked: a
 * guest that sends unloads by the million costs one step each.
 */
static void forget_cpus(struct ht_guest_state *s, uint32_t pid)
{
	struct cpu_list *l = ht_id_pair_table_get(s->vms, pid, 0);

	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++) {
		l->v[i]->task = -1;
		l->v[i]->listed = false;
	}
	l->n = 0;
}

int ht_guest_state_feed(struct ht_guest_state *s, const struct ht_record *r, struct ht_gev *ev)
{
	const struct ht_event_desc *d = ht_decoder_event(s->dec, r);
	struct vcpu *v;

	memset(ev, 0, sizeof(*ev));
	/* Forged records, and the nr a user's catalog names, are none of the module's events. */
	if (!d || !d->builtin)
		return 0;
	ht_gev_decode(&s->gev, r, ev);
	if (ev->kind == HT_GEV_NONE)
		return 0;
	v = ht_id_pair_table_get_or_add(s->vcpus, r->host_pid, r->host_tid, sizeof(*v), NULL);
	if (!v)
		return -ENOMEM;
	if (ev->kind == HT_GEV_MODULE) {
		/* It names no CPU: the one this vCPU last sent from (its vCPU id before any). */
		ev->cpu = v->known ? v->cpu : r->vcpu_id;
		if (ev->u.mod.state == 0)
			forget_cpus(s, r->host_pid);
		return 0;
	}
	v->cpu = ev->cpu;
	v->known = true;
	switch (ev->kind) {
	case HT_GEV_SCHED_SWITCH:
		if (ev->u.sw.next_tid && set_comm(s, r->host_pid, ev->u.sw.next_tid, ev->u.sw.next_comm))
			return -ENOMEM;
		return set_cpu_task(s, r->host_pid, ev->cpu, ev->u.sw.next_tid);
	case HT_GEV_SCHED_WAKEUP:
		return ev->u.wake.tid ? set_comm(s, r->host_pid, ev->u.wake.tid, ev->u.wake.comm) : 0;
	case HT_GEV_FUNC_ENTRY:
	case HT_GEV_FUNC_EXIT:
		return func_call(s, r, ev);
	default:
		return 0;
	}
}

int64_t ht_guest_cpu_task(struct ht_guest_state *s, uint32_t pid, uint32_t cpu)
{
	struct cpu *c = ht_id_pair_table_get(s->cpus, pid, cpu);

	return c ? c->task : -1;
}

void ht_guest_task_comm(struct ht_guest_state *s, uint32_t pid, uint32_t tid, uint32_t cpu,
			char out[HT_GEV_COMM_LEN + 1])
{
	struct task *t;

	if (tid == 0) {
		/* The idle task of each CPU, as the kernel names it. */
		snprintf(out, HT_GEV_COMM_LEN + 1, "swapper/%u", cpu);
		return;
	}
	t = ht_id_pair_table_get(s->tasks, pid, tid);
	snprintf(out, HT_GEV_COMM_LEN + 1, "%s", t ? t->comm : "");
}
