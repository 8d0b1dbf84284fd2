// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/lttng_export.h"
#include "export/lttng_private.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "common/errf.h"
#include "common/grow.h"
#include "common/util.h"
#include "export/guest_state.h"
#include "export/lttng_trace.h"
#include "export/id_pair_table.h"
#include "export/switch_chain.h"
#include "hypertrace/guest.h"
#include "hypertrace/limits.h"
#include "tracefile/output_file.h"
#include "tracefile/wallclock.h"

/* ---- payloads, little-endian as the trace ---- */


static void put(struct payload *p, const void *v, size_t n)
{
	if (p->len + n <= sizeof(p->buf))
		memcpy(p->buf + p->len, v, n);
	p->len += n;
}

void lt_put_u32(struct payload *p, uint32_t v)
{
	put(p, &v, 4);
}

void lt_put_u64(struct payload *p, uint64_t v)
{
	put(p, &v, 8);
}

/*
 * Text a guest or a VM owner chose goes into the data streams as sent, as
 * lttng-modules writes a task's comm and the CTF export a guest's string:
 * the bytes are the reader's to show (babeltrace2 prints control bytes
 * escaped, bt2 hands invalid UTF-8 back as surrogate escapes).
 */

/* A char[16] field: the text NUL-padded, as the kernel's comm. */
void lt_put_comm(struct payload *p, const char *s)
{
	char c[HT_GEV_COMM_LEN] = { 0 };

	memcpy(c, s, strnlen(s, sizeof(c)));
	put(p, c, sizeof(c));
}

/* A string field (a guest's text holds no NUL: ht_field_text stops there). */
void lt_put_string(struct payload *p, const char *s)
{
	put(p, s, strlen(s) + 1);
}

/* ---- the queue that puts events in time order ---- */

static bool before(const struct pending *a, const struct pending *b)
{
	return a->ts < b->ts || (a->ts == b->ts && a->seq < b->seq);
}

static void swap(struct pending *a, struct pending *b)
{
	struct pending t = *a;
	*a = *b;
	*b = t;
}

static int push_switch(struct ht_lttng_export *x, struct ht_lttng_trace *trace, uint32_t cpu, uint64_t ts, int id,
		       const struct ht_lttng_ctx *ctx, const struct ht_lttng_ctx *next, const struct payload *p)
{
	struct pending *e;
	size_t i;

	/* Every payload is built below its limit (the largest, sched_switch, takes 56 bytes). */
	assert(p->len <= HT_LTTNG_MAX_PAYLOAD);
	if (HT_GROW(x->heap, x->cap, x->npending + 1, 1024))
		return -ENOMEM;
	i = x->npending++;
	e = &x->heap[i];
	e->ts = ts;
	e->seq = x->seq++;
	e->trace = trace;
	e->cpu = cpu;
	e->id = id;
	e->ctx = *ctx;
	if (next)
		e->next = *next;
	e->mark = MARK_NONE;
	e->len = (uint8_t)p->len;
	memcpy(e->payload, p->buf, p->len);
	while (i && before(&x->heap[i], &x->heap[(i - 1) / 2])) {
		swap(&x->heap[i], &x->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	return 0;
}

int lt_push(struct ht_lttng_export *x, struct ht_lttng_trace *trace, uint32_t cpu, uint64_t ts, int id,
		const struct ht_lttng_ctx *ctx, const struct payload *p)
{
	return push_switch(x, trace, cpu, ts, id, ctx, NULL, p);
}

/* Marks the event pushed last (found by its seq: it sifted up from the end of the heap). */
static void mark_last_pushed(struct ht_lttng_export *x, enum mark mark)
{
	for (size_t j = x->npending; j-- > 0;)
		if (x->heap[j].seq == x->seq - 1) {
			x->heap[j].mark = (uint8_t)mark;
			return;
		}
}

/* ---- which thread the host trace says runs on each host CPU ---- */

/* The idle task, as the kernel names it: what a CPU runs as far as the records tell, before and between threads. */
static void idle_ctx(uint32_t cpu, struct ht_lttng_ctx *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->procname, sizeof(c->procname), "swapper/%u", cpu % 100000000u); /* host CPUs: < HT_MAX_CPUS */
}

/* A host thread's entry: NULL when out of memory. */
static struct host_thread *thread_entry(struct ht_lttng_export *x, uint32_t pid, uint32_t tid, const char *procname)
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

static int host_switch_class(struct ht_lttng_export *x)
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

	if (host_switch_class(x) < 0)
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
static int thread_runs(struct ht_lttng_export *x, uint32_t cpu, uint64_t ts, const struct ht_lttng_ctx *n,
		       bool switched, char *err, size_t errlen)
{
	struct cpu_thread *c = ht_id_pair_table_get(x->running, 0, cpu);
	struct host_thread *t = n->tid ? thread_entry(x, (uint32_t)n->pid, (uint32_t)n->tid, n->procname) : NULL;
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
		idle_ctx(cpu, &c->cur);
	}
	if (!switched && c->cur.tid == n->tid)
		return 0;
	if (t && t->on_cpu >= 0 && t->on_cpu != (int64_t)cpu) {
		struct cpu_thread *o = ht_id_pair_table_get(x->running, 0, (uint32_t)t->on_cpu);
		if (o && o->cur.tid == n->tid) {
			idle_ctx((uint32_t)t->on_cpu, &idle);
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
static int queue_restatements(struct ht_lttng_export *x, uint64_t ts)
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
		mark_last_pushed(x, MARK_RESTATE);
	}
	return 0;
}

static int write_restatement(struct ht_lttng_export *x, uint32_t cpu, uint64_t ts, char *err, size_t errlen)
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

/* Writes the earliest waiting event to its stream. */
static int pop(struct ht_lttng_export *x, char *err, size_t errlen)
{
	struct pending top = x->heap[0];
	size_t i = 0;
	int ret;

	x->heap[0] = x->heap[--x->npending];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < x->npending && before(&x->heap[l], &x->heap[m]))
			m = l;
		if (r < x->npending && before(&x->heap[r], &x->heap[m]))
			m = r;
		if (m == i)
			break;
		swap(&x->heap[i], &x->heap[m]);
		i = m;
	}
	if (top.mark == MARK_RESTATE)
		return write_restatement(x, top.cpu, top.ts, err, errlen);
	if (top.trace == x->host) {
		bool switched = top.id == x->hcls.sched_switch;
		if ((ret = thread_runs(x, top.cpu, top.ts, switched ? &top.next : &top.ctx, switched, err, errlen)))
			return ret;
	}
	ret = ht_lttng_trace_event(top.trace, top.cpu, top.ts, top.id, &top.ctx, top.payload, top.len, err, errlen);
	if (ret >= 0 && top.mark == MARK_FIRST_LINK && queue_restatements(x, top.ts))
		return ht_errf(err, errlen, "out of memory");
	return ret < 0 ? ret : 0;
}

/* Writes what no later record can precede (all of it with drain). */
static int release(struct ht_lttng_export *x, bool drain, char *err, size_t errlen)
{
	int ret = 0;

	while (!ret && x->npending &&
	       (drain || x->npending > ORDER_MAX_PENDING || x->heap[0].ts + ORDER_WINDOW_NS < x->last_entry_ns))
		ret = pop(x, err, errlen);
	return ret;
}

/* ---- the host trace ---- */

/*
 * Whether RELEASE ("6.1.0-...") is MAJOR.MINOR or later; an unreadable one
 * counts as current. lttng-modules picks kvm_x86_exit's fields by the
 * kernel's version (vcpu_id and two more since 5.10): so does the host trace.
 */
static bool kernel_at_least(const char *release, unsigned int major, unsigned int minor)
{
	unsigned int a = 0, b = 0;

	if (sscanf(release, "%u.%u", &a, &b) != 2)
		return true; /* unknown: the current layout */
	return a > major || (a == major && b >= minor);
}

static int host_classes(struct ht_lttng_export *x)
{
	struct host_classes *c = &x->hcls;
	static const char sync_fields[] = "\t\t" HT_TSDL_U32 " _cnt;\n\t\t" HT_TSDL_U64 " _vm_uid;\n";
	const char *exit_fields =
		x->exit_has_vcpu ?
			"\t\t" HT_TSDL_U32 " _exit_reason;\n\t\t" HT_TSDL_U64 " _guest_rip;\n\t\t" HT_TSDL_U32 " _isa;\n"
			"\t\t" HT_TSDL_U64 " _info1;\n\t\t" HT_TSDL_U64 " _info2;\n\t\t" HT_TSDL_U32 " _intr_info;\n"
			"\t\t" HT_TSDL_U32 " _error_code;\n\t\t" HT_TSDL_U32 " _vcpu_id;\n" :
			"\t\t" HT_TSDL_U32 " _exit_reason;\n\t\t" HT_TSDL_U64 " _guest_rip;\n\t\t" HT_TSDL_U32 " _isa;\n"
			"\t\t" HT_TSDL_U64 " _info1;\n\t\t" HT_TSDL_U64 " _info2;\n";

	c->exit = ht_lttng_trace_add_class(x->host, "kvm_x86_exit", exit_fields);
	c->hypercall = ht_lttng_trace_add_class(x->host, "kvm_x86_hypercall",
						"\t\t" HT_TSDL_U64 " _nr;\n\t\t" HT_TSDL_U64 " _a0;\n\t\t" HT_TSDL_U64
						" _a1;\n\t\t" HT_TSDL_U64 " _a2;\n\t\t" HT_TSDL_U64 " _a3;\n");
	c->entry = ht_lttng_trace_add_class(x->host, "kvm_x86_entry", "\t\t" HT_TSDL_U32 " _vcpu_id;\n");
	c->gh_host = ht_lttng_trace_add_class(x->host, "vmsync_gh_host", sync_fields);
	c->hg_host = ht_lttng_trace_add_class(x->host, "vmsync_hg_host", sync_fields);
	c->sched_switch = -1; /* declared at the first switch */
	c->statedump = -1;
	return c->exit < 0 || c->hypercall < 0 || c->entry < 0 || c->gh_host < 0 || c->hg_host < 0 ? -ENOMEM : 0;
}

int lt_common_env(struct ht_lttng_trace *t, const char *hostname)
{
	int ret = ht_lttng_trace_env_str(t, "hostname", hostname);

	ret = ret ? ret : ht_lttng_trace_env_str(t, "domain", "kernel");
	ret = ret ? ret : ht_lttng_trace_env_str(t, "sysname", "Linux");
	ret = ret ? ret : ht_lttng_trace_env_str(t, "tracer_name", "lttng-modules");
	ret = ret ? ret : ht_lttng_trace_env_int(t, "tracer_major", 2);
	ret = ret ? ret : ht_lttng_trace_env_int(t, "tracer_minor", 13);
	ret = ret ? ret : ht_lttng_trace_env_int(t, "tracer_patchlevel", 0);
	ret = ret ? ret : ht_lttng_trace_env_str(t, "trace_buffering_scheme", "global");
	ret = ret ? ret : ht_lttng_trace_env_str(t, "trace_name", hostname);
	ret = ret ? ret : ht_lttng_trace_env_str(t, "hypertrace_tracer", "hypertrace-bpf " HT_VERSION);
	return ret;
}

int ht_lttng_open(const char *dir, mode_t mode, const struct ht_file_header *h, const struct ht_decoder *dec,
		  struct ht_lttng_export **out, char *err, size_t errlen)
{
	const struct ht_output_spec spec = { .cmd = "convert", .opt = "--lttng", .what = "an LTTng experiment" };
	struct ht_lttng_export *x = calloc(1, sizeof(*x));
	char path[4200];
	int ret;

	if (!x)
		return ht_errf(err, errlen, "out of memory");
	/* ht_lttng_abandon frees what is made of x so far, and removes what was written. */
	x->out.fd = x->out.dirfd = -1;
	if (!(x->guests = ht_id_pair_table_new()) || !(x->threads = ht_id_pair_table_new()) ||
	    !(x->cpus = ht_id_pair_table_new()) || !(x->running = ht_id_pair_table_new()) ||
	    !(x->gstate = ht_guest_state_new(dec)) || !(x->chain = ht_switch_chain_new())) {
		ret = ht_errf(err, errlen, "out of memory");
		goto fail;
	}
	ret = ht_output_create_dir(&x->out, dir, &spec, err, errlen);
	if (!ret)
		ret = ht_output_set_access(&x->out, mode, (uid_t)-1, (gid_t)-1, err, errlen);
	if (ret)
		goto fail;
	snprintf(x->dir, sizeof(x->dir), "%s", dir);
	x->hdr = *h;
	x->dec = dec;
	x->first_ns = UINT64_MAX;
	x->exit_has_vcpu = kernel_at_least(h->kernel_release, 5, 10);
	snprintf(path, sizeof(path), "%s/host", dir);
	ret = ht_lttng_trace_open(x->out.fd, "host", path, true, HT_MAX_CPUS, h->start_realtime_ns, &x->host, err,
				  errlen);
	if (!ret && (host_classes(x) || lt_common_env(x->host, "host") ||
		     ht_lttng_trace_env_str(x->host, "kernel_release", h->kernel_release) ||
		     ht_lttng_trace_env_str(x->host, "cpu_vendor", h->cpu_vendor)))
		ret = ht_errf(err, errlen, "out of memory");
	if (ret)
		goto fail;
	*out = x;
	return 0;
fail:
	ht_lttng_abandon(x);
	return ret;
}

static const char *host_procname(struct ht_lttng_export *x, uint32_t pid, uint32_t tid, struct ht_reader *reader)
{
	struct host_thread *t = ht_id_pair_table_get(x->threads, pid, tid);
	const struct ht_identity *id;

	if (t)
		return t->procname;
	if (!(t = thread_entry(x, pid, tid, "")))
		return NULL;
	/* The thread's name (QEMU's "CPU 0/KVM"), else its process's: what procname would show. */
	id = reader ? ht_reader_identity(reader, pid, tid) : NULL;
	if (id)
		snprintf(t->procname, sizeof(t->procname), "%.16s", id->thread_name[0] ? id->thread_name : id->process_name);
	return t->procname;
}

/* ---- each record ---- */

int ht_lttng_add(struct ht_lttng_export *x, const struct ht_record *r, struct ht_reader *reader, char *err,
		 size_t errlen)
{
	uint64_t hcall_ns = r->exit_ns + r->exit_to_hcall_ns, entry_ns = hcall_ns + r->hcall_to_entry_ns;
	struct ht_lttng_ctx hctx = { .pid = (int32_t)r->host_pid, .tid = (int32_t)r->host_tid };
	struct guest *g = NULL;
	struct payload p = { .len = 0 };
	struct ht_gev ev;
	const char *procname = host_procname(x, r->host_pid, r->host_tid, reader);
	int ret = 0;

	if (!procname)
		return ht_errf(err, errlen, "out of memory");
	snprintf(hctx.procname, sizeof(hctx.procname), "%s", procname);
	/* A forged one decodes to nothing (ht_decoder_event): no guest trace, no vmsync, only the host's events. */
	x->forged += ht_decoder_forged(x->dec, r);
	/* The task on the event's guest CPU before it: a sched_switch changes it. */
	int64_t task_before = -1;
	if (ht_guest_state_feed(x->gstate, r, &ev))
		return ht_errf(err, errlen, "out of memory");
	if (ev.kind != HT_GEV_NONE) {
		task_before = ev.kind == HT_GEV_SCHED_SWITCH ? (int64_t)ev.u.sw.prev_tid :
							      ht_guest_cpu_task(x->gstate, r->host_pid, ev.cpu);
		g = lt_guest_of(x, r, reader, err, errlen, &ret);
		if (!g)
			return ret;
	}

	lt_put_u32(&p, r->exit_reason);
	lt_put_u64(&p, r->guest_rip);
	lt_put_u32(&p, r->isa);
	lt_put_u64(&p, 0); /* info1, info2: a hypercall exit has none (VMCALL and VMMCALL exits qualify nothing) */
	lt_put_u64(&p, 0);
	if (x->exit_has_vcpu) {
		lt_put_u32(&p, 0); /* intr_info, error_code: no event was being delivered */
		lt_put_u32(&p, 0);
		lt_put_u32(&p, r->vcpu_id);
	}
	ret = lt_push(x, x->host, r->exit_cpu, r->exit_ns, x->hcls.exit, &hctx, &p);
	p.len = 0;
	lt_put_u64(&p, r->nr);
	lt_put_u64(&p, r->a0);
	lt_put_u64(&p, r->a1);
	lt_put_u64(&p, r->a2);
	lt_put_u64(&p, r->a3);
	/* The record knows the CPUs at exit and entry; the hypercall event is put on the exit's. */
	ret = ret ? ret : lt_push(x, x->host, r->exit_cpu, hcall_ns, x->hcls.hypercall, &hctx, &p);
	if (!ret && g) {
		p.len = 0;
		lt_put_u32(&p, g->cnt);
		lt_put_u64(&p, g->pid);
		ret = lt_push(x, x->host, r->exit_cpu, hcall_ns, x->hcls.gh_host, &hctx, &p);
		if (!ret && g->cnt == 0)
			mark_last_pushed(x, MARK_FIRST_LINK);
		p.len = 0;
		lt_put_u32(&p, g->cnt + 1);
		lt_put_u64(&p, g->pid);
		ret = ret ? ret : lt_push(x, x->host, r->entry_cpu, entry_ns, x->hcls.hg_host, &hctx, &p);
		ret = ret ? ret : lt_guest_events(x, g, r, &ev, task_before, entry_ns);
		g->cnt += 2;
	}
	p.len = 0;
	lt_put_u32(&p, r->vcpu_id);
	ret = ret ? ret : lt_push(x, x->host, r->entry_cpu, entry_ns, x->hcls.entry, &hctx, &p);
	if (ret)
		return ht_errf(err, errlen, "out of memory");
	if (r->exit_ns < x->first_ns)
		x->first_ns = r->exit_ns;
	if (entry_ns > x->last_ns)
		x->last_ns = entry_ns;
	if (entry_ns > x->last_entry_ns)
		x->last_entry_ns = entry_ns;
	x->records++;
	return release(x, false, err, errlen);
}

/* ---- the host's switches of vCPU threads (record --vcpu-sched) ---- */

/*
 * prev_state as lttng-modules writes it (__trace_sched_switch_state): a
 * preempted task TASK_REPORT_MAX, else the bit of its reported state
 * (TASK_REPORT: the low 7 bits; TASK_IDLE its own, 0x80).
 */
static uint64_t lttng_prev_state(const struct ht_vcpu_switch *sw)
{
	uint64_t state = sw->prev_state & 0x7f;
	unsigned int bit = 0;

	if (sw->involuntary)
		return TASK_REPORT_MAX;
	if (sw->prev_state == 0x402) /* TASK_IDLE: TASK_UNINTERRUPTIBLE | TASK_NOLOAD */
		return 0x80;
	while (state >> bit > 1)
		bit++;
	return state ? 1ull << bit : 0;
}

/* A switch's other thread's name: the kernel's comm, NUL-padded, 16 bytes without NUL when full. */
static void other_comm(const struct ht_vcpu_switch *sw, char out[HT_LTTNG_COMM_LEN + 1])
{
	memcpy(out, sw->other_comm, HT_LTTNG_COMM_LEN);
	out[HT_LTTNG_COMM_LEN] = '\0';
}

/*
 * The host's sched_switch of a switch record, on the switch's CPU at its
 * time: out, the vCPU thread is prev and the thread that runs instead next;
 * in, the thread it replaces is prev. The context is the running task's,
 * prev's, as lttng-modules' is. When a vCPU thread replaces another one,
 * both threads have a record of the one switch: it is written once.
 */
int ht_lttng_add_switch(struct ht_lttng_export *x, const struct ht_vcpu_switch *sw, struct ht_reader *reader,
			char *err, size_t errlen)
{
	bool out = sw->kind == HT_SWITCH_OUT;
	struct host_cpu *c = ht_id_pair_table_get(x->cpus, 0, sw->cpu);
	struct ht_lttng_ctx ctx, next;
	struct payload p = { .len = 0 };
	char comm[HT_LTTNG_COMM_LEN + 1];
	const char *vcpu_name = host_procname(x, sw->host_pid, sw->host_tid, reader);
	uint32_t prev_tid = out ? sw->host_tid : sw->other_tid, next_tid = out ? sw->other_tid : sw->host_tid;
	int ret;

	if (!vcpu_name)
		return ht_errf(err, errlen, "out of memory");
	if (sw->kind != HT_SWITCH_OUT && sw->kind != HT_SWITCH_IN)
		return 1; /* a kind this version does not know: nothing to show */
	if (c && c->ts == sw->time_ns && c->prev_tid == prev_tid && c->next_tid == next_tid)
		return 0;
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c || ht_id_pair_table_put(x->cpus, 0, sw->cpu, c)) {
			free(c);
			return ht_errf(err, errlen, "out of memory");
		}
	}
	*c = (struct host_cpu){ .ts = sw->time_ns, .prev_tid = prev_tid, .next_tid = next_tid };
	if (host_switch_class(x) < 0)
		return ht_errf(err, errlen, "out of memory");
	other_comm(sw, comm);
	/* The other thread is one the analysis sees (the idle task aside): the statedump names its process. */
	if (sw->other_tid && !thread_entry(x, sw->other_pid, sw->other_tid, comm))
		return ht_errf(err, errlen, "out of memory");
	memset(&ctx, 0, sizeof(ctx));
	if (out) {
		ctx = (struct ht_lttng_ctx){ .pid = (int32_t)sw->host_pid, .tid = (int32_t)sw->host_tid };
		snprintf(ctx.procname, sizeof(ctx.procname), "%s", vcpu_name);
		lt_put_comm(&p, vcpu_name);
		lt_put_u32(&p, sw->host_tid);
		lt_put_u32(&p, (uint32_t)HOST_UNKNOWN_PRIO);
		lt_put_u64(&p, lttng_prev_state(sw));
		lt_put_comm(&p, comm);
		lt_put_u32(&p, sw->other_tid);
		lt_put_u32(&p, (uint32_t)HOST_UNKNOWN_PRIO);
		next = (struct ht_lttng_ctx){ .pid = (int32_t)sw->other_pid, .tid = (int32_t)sw->other_tid };
		memcpy(next.procname, comm, sizeof(next.procname));
		if (!sw->other_tid)
			idle_ctx(sw->cpu, &next);
	} else {
		ctx = (struct ht_lttng_ctx){ .pid = (int32_t)sw->other_pid, .tid = (int32_t)sw->other_tid };
		memcpy(ctx.procname, comm, sizeof(ctx.procname));
		lt_put_comm(&p, comm);
		lt_put_u32(&p, sw->other_tid);
		lt_put_u32(&p, (uint32_t)HOST_UNKNOWN_PRIO);
		lt_put_u64(&p, 0); /* the record does not say how the thread replaced left: as if preempted */
		lt_put_comm(&p, vcpu_name);
		lt_put_u32(&p, sw->host_tid);
		lt_put_u32(&p, (uint32_t)HOST_UNKNOWN_PRIO);
		next = (struct ht_lttng_ctx){ .pid = (int32_t)sw->host_pid, .tid = (int32_t)sw->host_tid };
		snprintf(next.procname, sizeof(next.procname), "%s", vcpu_name);
	}
	if ((ret = push_switch(x, x->host, sw->cpu, sw->time_ns, x->hcls.sched_switch, &ctx, &next, &p)))
		return ht_errf(err, errlen, "out of memory");
	if (sw->time_ns < x->first_ns)
		x->first_ns = sw->time_ns;
	if (sw->time_ns > x->last_ns)
		x->last_ns = sw->time_ns;
	/* Switches come in their own time order among the records' entries: the queue may move on. */
	if (sw->time_ns > x->last_entry_ns)
		x->last_entry_ns = sw->time_ns;
	return release(x, false, err, errlen);
}

/* ---- the end ---- */

static int identity_env(struct ht_lttng_export *x, struct ht_lttng_trace *t, const struct ht_read_status *st,
			const char *source, const char *selection)
{
	const struct ht_file_header *h = &x->hdr;
	char when[64];
	int ret = ht_lttng_trace_env_str(t, "trace_file", source);

	ret = ret ? ret : ht_lttng_trace_env_int(t, "trace_file_format", h->version);
	ht_format_wallclock(when, sizeof(when), h, h->start_monotonic_ns, HT_TIME_ISO);
	ret = ret ? ret : ht_lttng_trace_env_str(t, "recording_start", when);
	ret = ret ? ret : ht_lttng_trace_env_str(t, "trace_creation_datetime", when);
	if (st->has_trailer) {
		ht_format_wallclock(when, sizeof(when), h, st->trailer.end_monotonic_ns, HT_TIME_ISO);
		ret = ret ? ret : ht_lttng_trace_env_str(t, "recording_end", when);
		ret = ret ? ret : ht_lttng_trace_env_int(t, "recording_end_monotonic_ns",
							 (long long)st->trailer.end_monotonic_ns);
		ret = ret ? ret : ht_lttng_trace_env_int(t, "dropped", (long long)ht_trailer_lost(&st->trailer));
	} else {
		ret = ret ? ret : ht_lttng_trace_env_str(t, "recording_end", "unknown: the trace file has no trailer");
	}
	ret = ret ? ret : ht_lttng_trace_env_str(t, "selection", selection);
	ret = ret ? ret : ht_lttng_trace_env_str(t, "read_status",
						 st->damaged ? st->reason : st->has_trailer ? "complete" : st->reason);
	return ret;
}

/*
 * lttng-modules' statedump at the start of the host trace: a
 * lttng_statedump_process_state for each thread the host trace shows, so
 * that Trace Compass's kernel analysis knows each thread's process
 * (KernelPidAspect answers with it, before the pid context). The trace file
 * keeps neither a thread's parent nor its state at the start: a VM's
 * threads are written as children of its process (the VM model maps a
 * thread's ppid to its VM), a process as a child of 0, every status as
 * LTTNG_UNNAMED (unknown), the mode unknown. Written on the lowest CPU the
 * trace shows, at the recording's start.
 */
static int write_statedump(struct ht_lttng_export *x, uint64_t ts, char *err, size_t errlen)
{
	uint32_t cpu = UINT32_MAX;
	struct ht_lttng_ctx ctx;

	for (size_t i = 0; i < ht_id_pair_table_len(x->running); i++) {
		const struct cpu_thread *c = ht_id_pair_table_at(x->running, i);
		if (c->cpu < cpu)
			cpu = c->cpu;
	}
	if (cpu == UINT32_MAX)
		return 0;
	if (x->hcls.statedump < 0 &&
	    (x->hcls.statedump = ht_lttng_trace_add_class(x->host, "lttng_statedump_process_state", statedump_fields)) < 0)
		return ht_errf(err, errlen, "out of memory");
	idle_ctx(cpu, &ctx);
	for (size_t i = 0; i < ht_id_pair_table_len(x->threads); i++) {
		const struct host_thread *t = ht_id_pair_table_at(x->threads, i);
		struct payload p = { .len = 0 };
		int ret;

		if (!t->written)
			continue;
		lt_put_u32(&p, t->tid);
		lt_put_u32(&p, t->pid);
		lt_put_u32(&p, t->tid == t->pid ? 0 : t->pid);
		lt_put_comm(&p, t->procname);
		lt_put_u32(&p, LTTNG_USER_THREAD);
		lt_put_u32(&p, LTTNG_MODE_UNKNOWN);
		lt_put_u32(&p, LTTNG_NONE);
		lt_put_u32(&p, LTTNG_UNNAMED);
		lt_put_u32(&p, t->first_cpu);
		lt_put_u64(&p, 0); /* file_table_address: not known */
		ret = ht_lttng_trace_statedump_event(x->host, cpu, ts, x->hcls.statedump, &ctx, p.buf, p.len, err, errlen);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* Realtime minus monotonic, modulo 2^64: a crafted header's anchors must not overflow it. */
static int64_t clock_offset(const struct ht_file_header *h)
{
	return (int64_t)(h->start_realtime_ns - h->start_monotonic_ns);
}

int ht_lttng_close(struct ht_lttng_export *x, const struct ht_read_status *st, const char *source,
		   const char *selection, struct ht_lttng_counts *counts, char *err, size_t errlen)
{
	uint64_t start = x->hdr.start_monotonic_ns;
	uint64_t end = st->has_trailer ? st->trailer.end_monotonic_ns : x->last_ns;
	uint64_t lost = st->has_trailer ? ht_trailer_lost(&st->trailer) : 0;
	int ret = release(x, true, err, errlen);

	if (end < start)
		end = start;
	for (size_t i = 0; !ret && i < ht_id_pair_table_len(x->guests); i++) {
		struct guest *g = ht_id_pair_table_at(x->guests, i);
		if (identity_env(x, g->trace, st, source, selection)) {
			ret = ht_errf(err, errlen, "out of memory");
			break;
		}
		x->counts.reordered += ht_lttng_trace_reordered(g->trace);
		x->counts.not_written += ht_lttng_trace_dropped(g->trace);
		/*
		 * The recording's drops are the host's to report. A guest trace's
		 * own are the sched_switch events its chains prove lost: its env
		 * says how many, and so does events_discarded, which babeltrace2
		 * warns of and Trace Compass shows as lost events.
		 */
		unsigned long long lost_switches = ht_switch_chain_breaks(x->chain, g->pid);
		if (lost_switches &&
		    ht_lttng_trace_env_int(g->trace, "lost_sched_switches", (long long)lost_switches)) {
			ret = ht_errf(err, errlen, "out of memory");
			break;
		}
		ret = ht_lttng_trace_close(g->trace, clock_offset(&x->hdr), start, end, lost_switches, err, errlen);
		g->trace = NULL;
	}
	if (!ret && (identity_env(x, x->host, st, source, selection) ||
		     ht_lttng_trace_env_int(x->host, "inferred_sched_switches", (long long)x->inferred) ||
		     ht_lttng_trace_env_int(x->host, "restated_sched_switches", (long long)x->restated) ||
		     (x->forged && ht_lttng_trace_env_int(x->host, "forged_guest_events", (long long)x->forged))))
		ret = ht_errf(err, errlen, "out of memory");
	if (!ret)
		ret = write_statedump(x, start, err, errlen);
	if (!ret) {
		x->counts.reordered += ht_lttng_trace_reordered(x->host);
		x->counts.not_written += ht_lttng_trace_dropped(x->host);
		ret = ht_lttng_trace_close(x->host, clock_offset(&x->hdr), start, end, lost, err, errlen);
		x->host = NULL;
	}
	if (!ret)
		ret = ht_output_publish(&x->out, err, errlen);
	x->counts.lost_switches = ht_switch_chain_total(x->chain);
	if (counts)
		*counts = x->counts;
	ht_lttng_abandon(x);
	return ret;
}

void ht_lttng_abandon(struct ht_lttng_export *x)
{
	if (!x)
		return;
	for (size_t i = 0; x->guests && i < ht_id_pair_table_len(x->guests); i++) {
		struct guest *g = ht_id_pair_table_at(x->guests, i);
		ht_lttng_trace_free(g->trace);
		for (size_t j = 0; j < ht_id_pair_table_len(g->functions); j++)
			free(ht_id_pair_table_at(g->functions, j));
		ht_id_pair_table_free(g->functions);
		for (size_t j = 0; g->vcpus && j < ht_id_pair_table_len(g->vcpus); j++)
			free(ht_id_pair_table_at(g->vcpus, j));
		ht_id_pair_table_free(g->vcpus);
		free(g);
	}
	ht_id_pair_table_free(x->guests);
	for (size_t i = 0; x->threads && i < ht_id_pair_table_len(x->threads); i++)
		free(ht_id_pair_table_at(x->threads, i));
	ht_id_pair_table_free(x->threads);
	for (size_t i = 0; x->cpus && i < ht_id_pair_table_len(x->cpus); i++)
		free(ht_id_pair_table_at(x->cpus, i));
	ht_id_pair_table_free(x->cpus);
	for (size_t i = 0; x->running && i < ht_id_pair_table_len(x->running); i++)
		free(ht_id_pair_table_at(x->running, i));
	ht_id_pair_table_free(x->running);
	ht_lttng_trace_free(x->host);
	ht_guest_state_free(x->gstate);
	ht_switch_chain_free(x->chain);
	free(x->heap);
	/* Unpublished: the temporary directory and everything in it go. */
	ht_output_release(&x->out);
	free(x);
}
