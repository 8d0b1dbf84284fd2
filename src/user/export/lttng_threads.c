// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert --lttng, which thread the host trace says runs on each host CPU
 * (lttng_private.h): the host threads and their names, the inferred
 * sched_switch events that keep the trace telling it, and the restatements
 * Trace Compass's VM analysis needs.
 */
#include "export/lttng_private.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/errf.h"

/* The idle task, as the kernel names it: what a CPU runs as far as the records tell, before and between threads. */
void lt_idle_ctx(uint32_t cpu, struct ht_lttng_ctx *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->procname, sizeof(c->procname), "swapper/%u", cpu % 100000000u); /* host CPUs: < HT_MAX_CPUS */
}

/* A host thread's entry: NULL when out of memory. */
struct host_thread *lt_thread_entry(struct ht_lttng_export *x, uint32_t pid, uint32_t tid, const char *procname)
{
	struct host_thread *t = ht_id_pair_table_get(x->threads, pid, tid);

	if (t)
		return t;
	t = calloc(1, sizeof(*t));
	if (!t || ht_id_pair_table_put(x->threads, pid, tid, t)) {
		free(t);
		return NULL;
	}
	t->pid = pid;
	t->tid = tid;
	t->on_cpu = -1;
	snprintf(t->procname, sizeof(t->procname), "%s", procname);
	return t;
}

int lt_host_switch_class(struct ht_lttng_export *x)
{
	if (x->hcls.sched_switch < 0)
		x->hcls.sched_switch = ht_lttng_trace_add_class(x->host, "sched_switch", sched_switch_fields);
	return x->hcls.sched_switch;
}

/* An inferred sched_switch from prev to next on cpu at ts (prev_state 0: the records do not say how prev left). */
static int write_inferred_switch(struct ht_lttng_export *x, uint32_t cpu, uint64_t ts, const struct ht_lttng_ctx *prev,
				 const struct ht_lttng_ctx *next, char *err, size_t errlen)
{
	struct payload p = { .len = 0 };
	int ret;

	if (lt_host_switch_class(x) < 0)
		return ht_errf(err, errlen, "out of memory");
	lt_put_comm(&p, prev->procname);
	lt_put_u32(&p, (uint32_t)prev->tid);
	lt_put_u32(&p, (uint32_t)HOST_UNKNOWN_PRIO);
	lt_put_u64(&p, 0);
	lt_put_comm(&p, next->procname);
	lt_put_u32(&p, (uint32_t)next->tid);
	lt_put_u32(&p, (uint32_t)HOST_UNKNOWN_PRIO);
	x->inferred++;
	ret = ht_lttng_trace_event(x->host, cpu, ts, x->hcls.sched_switch, prev, p.buf, p.len, err, errlen);
	return ret < 0 ? ret : 0;
}

/*
 * Keeps the host trace telling which thread runs on each host CPU, as
 * Trace Compass reads it (from sched_switch only: its TID analysis, and the
 * kernel analysis the VM model asks): thread n runs on cpu from ts.
 * switched: a recorded sched_switch (record --vcpu-sched) says so, about to
 * be written; otherwise an event of n on cpu proves it, and when the trace
 * said another thread ran there, an inferred sched_switch to n is written
 * first, at the event's time. Either way, when the trace said n ran on
 * another CPU, an inferred sched_switch from n to the idle task is written
 * there: a thread runs on one CPU at a time.
 */
int lt_thread_runs(struct ht_lttng_export *x, uint32_t cpu, uint64_t ts, const struct ht_lttng_ctx *n,
		   bool switched, char *err, size_t errlen)
{
	struct cpu_thread *c = ht_id_pair_table_get(x->running, 0, cpu);
	struct host_thread *t = n->tid ? lt_thread_entry(x, (uint32_t)n->pid, (uint32_t)n->tid, n->procname) : NULL;
	struct ht_lttng_ctx idle;
	int ret;

	if (n->tid && !t)
		return ht_errf(err, errlen, "out of memory");
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c || ht_id_pair_table_put(x->running, 0, cpu, c)) {
			free(c);
			return ht_errf(err, errlen, "out of memory");
		}
		c->cpu = cpu;
		lt_idle_ctx(cpu, &c->cur);
	}
	if (!switched && c->cur.tid == n->tid)
		return 0;
	if (t && t->on_cpu >= 0 && t->on_cpu != (int64_t)cpu) {
		struct cpu_thread *o = ht_id_pair_table_get(x->running, 0, (uint32_t)t->on_cpu);
		if (o && o->cur.tid == n->tid) {
			lt_idle_ctx((uint32_t)t->on_cpu, &idle);
			if ((ret = write_inferred_switch(x, (uint32_t)t->on_cpu, ts, &o->cur, &idle, err, errlen)))
				return ret;
			o->cur = idle;
		}
	}
	if (!switched && (ret = write_inferred_switch(x, cpu, ts, &c->cur, n, err, errlen)))
		return ret;
	if (c->cur.tid) {
		struct host_thread *prev = ht_id_pair_table_get(x->threads, (uint32_t)c->cur.pid, (uint32_t)c->cur.tid);
		if (prev && prev->on_cpu == (int64_t)cpu)
			prev->on_cpu = -1;
	}
	c->cur = *n;
	if (t) {
		if (!t->written)
			t->first_cpu = cpu;
		t->written = true;
		t->on_cpu = cpu;
	}
	return 0;
}

/*
 * Trace Compass's fused VM analysis drops every event, sched_switch
 * included, until each guest trace of the experiment is linked to its host
 * thread (its first vmsync_gh_host: the "roles"), and places a VM on a host
 * CPU only from the thread its own sched_switch handling last put there.
 * After each VM's first vmsync_gh_host, 1 ns later, each host CPU's thread
 * is restated: a sched_switch from it to itself, so that from whichever VM
 * is linked last on, the analysis knows every CPU's thread.
 */
int lt_queue_restatements(struct ht_lttng_export *x, uint64_t ts)
{
	static const struct payload none = { .len = 0 };
	struct ht_lttng_ctx ctx;

	memset(&ctx, 0, sizeof(ctx));
	for (size_t i = 0; i < ht_id_pair_table_len(x->running); i++) {
		const struct cpu_thread *c = ht_id_pair_table_at(x->running, i);
		if (c->cur.tid == 0)
			continue; /* the idle task: no VM to place */
		if (lt_push(x, x->host, c->cpu, ts + 1, 0, &ctx, &none))
			return -ENOMEM;
		lt_mark_last_pushed(x, MARK_RESTATE);
	}
	return 0;
}

int lt_write_restatement(struct ht_lttng_export *x, uint32_t cpu, uint64_t ts, char *err, size_t errlen)
{
	const struct cpu_thread *c = ht_id_pair_table_get(x->running, 0, cpu);
	int ret;

	if (!c || c->cur.tid == 0)
		return 0;
	if ((ret = write_inferred_switch(x, cpu, ts, &c->cur, &c->cur, err, errlen)))
		return ret;
	x->inferred--;
	x->restated++;
	return 0;
}

const char *lt_host_procname(struct ht_lttng_export *x, uint32_t pid, uint32_t tid, struct ht_reader *reader)
{
	struct host_thread *t = ht_id_pair_table_get(x->threads, pid, tid);
	const struct ht_identity *id;

	if (t)
		return t->procname;
	if (!(t = lt_thread_entry(x, pid, tid, "")))
		return NULL;
	/* The thread's name (QEMU's "CPU 0/KVM"), else its process's: what procname would show. */
	id = reader ? ht_reader_identity(reader, pid, tid) : NULL;
	if (id)
		snprintf(t->procname, sizeof(t->procname), "%.16s", id->thread_name[0] ? id->thread_name : id->process_name);
	return t->procname;
}
