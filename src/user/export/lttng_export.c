// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/lttng_export.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "common/errf.h"
#include "common/grow.h"
#include "common/util.h"
#include "export/guest_event.h"
#include "export/lttng_trace.h"
#include "export/id_pair_table.h"
#include "export/switch_chain.h"
#include "hypertrace/guest.h"
#include "hypertrace/limits.h"
#include "tracefile/output_file.h"
#include "tracefile/wallclock.h"

/*
 * Records reach the file in kvm_entry order, and a record's events span its
 * exit to its entry: an event waits until the entries have moved this far
 * past it (no hypercall of a real trace is that long), or until this many
 * wait; one that comes later than its stream is raised and counted.
 */
#define ORDER_WINDOW_NS 2000000000ull
#define ORDER_MAX_PENDING 32768u

#define MAX_FUNCTIONS 1024u  /* event classes of guest functions per guest trace */

/* lttng-modules' prio is the task's prio - MAX_RT_PRIO; ftrace's, which the module sends, is prio itself. */
#define LTTNG_PRIO_OFFSET 100

struct pending {
	uint64_t ts, seq; /* time order; insertion order among equal times */
	struct ht_lttng_trace *trace;
	uint32_t cpu;
	int id;
	struct ht_lttng_ctx ctx;
	struct ht_lttng_ctx next; /* a host sched_switch's: the thread switched in */
	uint8_t mark;             /* enum mark */
	uint8_t len;
	unsigned char payload[HT_LTTNG_MAX_PAYLOAD];
};

/* What a queued host event also does when it is written. */
enum mark {
	MARK_NONE,
	MARK_FIRST_LINK, /* a VM's first vmsync_gh_host: its CPUs' threads are restated just after it */
	MARK_RESTATE,    /* not an event: restate the thread of host CPU cpu */
};

/* Event classes of the host trace. */
struct host_classes {
	int exit, hypercall, entry, gh_host, hg_host, sched_switch, statedump;
};

/* lttng-modules' sched_switch (events/sched.h, kernels 4.4 and newer), for the host and the guests alike. */
static const char sched_switch_fields[] =
	"\t\t" HT_TSDL_CHAR " _prev_comm[16];\n\t\t" HT_TSDL_S32 " _prev_tid;\n\t\t" HT_TSDL_S32
	" _prev_prio;\n\t\t" HT_TSDL_S64 " _prev_state;\n\t\t" HT_TSDL_CHAR " _next_comm[16];\n\t\t" HT_TSDL_S32
	" _next_tid;\n\t\t" HT_TSDL_S32 " _next_prio;\n";

/*
 * The trace file does not keep priorities: a host sched_switch says 20, the
 * value lttng-modules writes for a nice-0 task (prio 120 - MAX_RT_PRIO).
 */
#define HOST_UNKNOWN_PRIO 20
/* The kernel's TASK_REPORT_MAX: what lttng-modules' prev_state says of a preempted task. */
#define TASK_REPORT_MAX 0x100u

/* The last host sched_switch queued on a host CPU: a switch between two vCPU threads is two records. */
struct host_cpu {
	uint64_t ts;
	uint32_t prev_tid, next_tid;
};

/* What the host trace, as written so far, says runs on a host CPU. */
struct cpu_thread {
	uint32_t cpu;
	struct ht_lttng_ctx cur;
};

/* lttng-modules' lttng_statedump_process_state (events/lttng-statedump.h, 2.13). */
static const char statedump_fields[] =
	"\t\t" HT_TSDL_S32 " _tid;\n\t\t" HT_TSDL_S32 " _pid;\n\t\t" HT_TSDL_S32 " _ppid;\n\t\t" HT_TSDL_CHAR
	" _name[16];\n\t\t" HT_TSDL_S32 " _type;\n\t\t" HT_TSDL_S32 " _mode;\n\t\t" HT_TSDL_S32
	" _submode;\n\t\t" HT_TSDL_S32 " _status;\n\t\t" HT_TSDL_U32 " _cpu;\n\t\t" HT_TSDL_X64
	" _file_table_address;\n";
/* Its enum values (lttng-statedump-impl.c) that the export writes. */
#define LTTNG_USER_THREAD 0
#define LTTNG_MODE_UNKNOWN 5
#define LTTNG_NONE 0
#define LTTNG_UNNAMED 0 /* the status: the trace file does not say what the thread did at the start */

/* Event classes of a guest trace. */
struct guest_classes {
	int sched_switch, sched_wakeup, irq_entry, irq_exit, module, gh_guest, hg_guest, func_other[2];
};

struct fn_class {
	int id[2]; /* entry, exit */
};

struct vcpu_of {
	uint32_t vcpu_id;
};

struct guest {
	uint32_t pid;
	uint32_t cnt; /* vmsync message counter: two per hypertraced hypercall */
	char dirname[96];
	struct ht_lttng_trace *trace;
	struct guest_classes cls;
	struct ht_id_pair_table *functions; /* (addr >> 32, addr) -> struct fn_class */
	struct ht_id_pair_table *vcpus;     /* (0, guest CPU) -> struct vcpu_of: KVM's vcpu_id of a guest CPU */
	unsigned int nfunctions;
	uint64_t first_ns, last_ns;
};

struct host_thread {
	char procname[HT_LTTNG_COMM_LEN + 1];
	uint32_t pid, tid;
	uint32_t first_cpu; /* where the host trace first shows it */
	int64_t on_cpu;     /* where the host trace says it runs, or -1 */
	bool written;       /* the host trace shows it */
};

struct ht_lttng_export {
	struct ht_output out;
	char dir[4096];
	struct ht_file_header hdr;
	const struct ht_decoder *dec;
	struct ht_guest_state *gstate;
	struct ht_lttng_trace *host;
	struct host_classes hcls;
	bool exit_has_vcpu; /* kvm_x86_exit's fields for the host's kernel (5.10 and newer: 8) */
	struct ht_id_pair_table *guests;  /* (host pid, 0) -> struct guest */
	struct ht_id_pair_table *threads; /* (host pid, host tid) -> struct host_thread */
	struct ht_id_pair_table *cpus;    /* (0, host CPU) -> struct host_cpu */
	struct ht_id_pair_table *running; /* (0, host CPU) -> struct cpu_thread */
	struct ht_switch_chain *chain;   /* each guest stream's sched_switch events as written */
	unsigned long long inferred;     /* sched_switch events the records prove, not recorded */
	unsigned long long restated;     /* sched_switch events from a CPU's thread to itself */
	struct pending *heap;
	size_t npending, cap;
	uint64_t seq, last_entry_ns, first_ns, last_ns;
	unsigned long long records;
	unsigned long long forged; /* records of the guest module's nr it did not send: host events only */
	struct ht_lttng_counts counts;
};

/* ---- payloads, little-endian as the trace ---- */

struct payload {
	unsigned char buf[HT_LTTNG_MAX_PAYLOAD];
	size_t len;
};

static void put(struct payload *p, const void *v, size_t n)
{
	if (p->len + n <= sizeof(p->buf))
		memcpy(p->buf + p->len, v, n);
	p->len += n;
}

static void put_u32(struct payload *p, uint32_t v)
{
	put(p, &v, 4);
}

static void put_u64(struct payload *p, uint64_t v)
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
static void put_comm(struct payload *p, const char *s)
{
	char c[HT_GEV_COMM_LEN] = { 0 };

	memcpy(c, s, strnlen(s, sizeof(c)));
	put(p, c, sizeof(c));
}

/* A string field (a guest's text holds no NUL: ht_field_text stops there). */
static void put_string(struct payload *p, const char *s)
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

static int push(struct ht_lttng_export *x, struct ht_lttng_trace *trace, uint32_t cpu, uint64_t ts, int id,
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
	put_comm(&p, prev->procname);
	put_u32(&p, (uint32_t)prev->tid);
	put_u32(&p, (uint32_t)HOST_UNKNOWN_PRIO);
	put_u64(&p, 0);
	put_comm(&p, next->procname);
	put_u32(&p, (uint32_t)next->tid);
	put_u32(&p, (uint32_t)HOST_UNKNOWN_PRIO);
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
		if (push(x, x->host, c->cpu, ts + 1, 0, &ctx, &none))
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

static int common_env(struct ht_lttng_trace *t, const char *hostname)
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
	if (!ret && (host_classes(x) || common_env(x->host, "host") ||
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

/* ---- guest traces ---- */

static int guest_classes(struct guest *g)
{
	struct guest_classes *c = &g->cls;
	static const char sync_fields[] = "\t\t" HT_TSDL_U32 " _cnt;\n\t\t" HT_TSDL_U64 " _vm_uid;\n";
	static const char fn_fields[] = "\t\t" HT_TSDL_X64 " _ip;\n\t\t" HT_TSDL_X64 " _parent_ip;\n";

	c->sched_switch = ht_lttng_trace_add_class(g->trace, "sched_switch", sched_switch_fields);
	c->sched_wakeup = ht_lttng_trace_add_class(g->trace, "sched_wakeup",
						   "\t\t" HT_TSDL_CHAR " _comm[16];\n\t\t" HT_TSDL_S32 " _tid;\n\t\t" HT_TSDL_S32
						   " _prio;\n\t\t" HT_TSDL_S32 " _target_cpu;\n");
	c->irq_entry = ht_lttng_trace_add_class(g->trace, "irq_handler_entry",
						"\t\t" HT_TSDL_S32 " _irq;\n\t\t" HT_TSDL_STRING " _name;\n");
	c->irq_exit = ht_lttng_trace_add_class(g->trace, "irq_handler_exit",
					       "\t\t" HT_TSDL_S32 " _irq;\n\t\t" HT_TSDL_S32 " _ret;\n");
	/* The project's own: the module's load and unload, with the KASLR anchor. */
	c->module = ht_lttng_trace_add_class(g->trace, "hypertrace_module",
					     "\t\t" HT_TSDL_U64 " _state;\n\t\t" HT_TSDL_X64 " _events;\n\t\t" HT_TSDL_U64
					     " _functions;\n\t\t" HT_TSDL_U64 " _missed;\n\t\t" HT_TSDL_X64
					     " _anchor_addr;\n\t\t" HT_TSDL_STRING " _anchor_name;\n");
	c->gh_guest = ht_lttng_trace_add_class(g->trace, "vmsync_gh_guest", sync_fields);
	c->hg_guest = ht_lttng_trace_add_class(g->trace, "vmsync_hg_guest", sync_fields);
	c->func_other[0] = ht_lttng_trace_add_class(g->trace, "function_entry", fn_fields);
	c->func_other[1] = ht_lttng_trace_add_class(g->trace, "function_exit", fn_fields);
	return c->sched_switch < 0 || c->sched_wakeup < 0 || c->irq_entry < 0 || c->irq_exit < 0 || c->module < 0 ||
			       c->gh_guest < 0 || c->hg_guest < 0 || c->func_other[0] < 0 || c->func_other[1] < 0 ?
		       -ENOMEM :
		       0;
}

/* A directory name from a name the VM's owner chose: letters, digits, '.', '_' and '-' kept, at most 40. */
static void guest_dirname(char *out, size_t len, const char *vm_name, uint32_t pid)
{
	char clean[41];
	size_t n = 0;

	for (const char *s = vm_name ? vm_name : ""; *s && n < sizeof(clean) - 1; s++) {
		unsigned char c = (unsigned char)*s;
		bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
			    c == '-' || (c == '.' && n > 0);

		clean[n] = keep ? (char)c : '_';
		n++;
	}
	clean[n] = '\0';
	/* The pid keeps names unique: two VMs may carry one name. */
	if (n)
		snprintf(out, len, "guest-%s-%u", clean, pid);
	else
		snprintf(out, len, "guest-%u", pid);
}

static struct guest *guest_of(struct ht_lttng_export *x, const struct ht_record *r, struct ht_reader *reader,
			      char *err, size_t errlen, int *ret)
{
	struct guest *g = ht_id_pair_table_get(x->guests, r->host_pid, 0);
	const char *vm_name = reader ? ht_reader_vm_name(reader, r->host_pid) : NULL;
	char path[4300];

	*ret = 0;
	if (g)
		return g;
	g = calloc(1, sizeof(*g));
	if (!g || !(g->functions = ht_id_pair_table_new()) || !(g->vcpus = ht_id_pair_table_new()) ||
	    ht_id_pair_table_put(x->guests, r->host_pid, 0, g)) {
		if (g) {
			ht_id_pair_table_free(g->functions);
			ht_id_pair_table_free(g->vcpus);
		}
		free(g);
		*ret = ht_errf(err, errlen, "out of memory");
		return NULL;
	}
	g->pid = r->host_pid;
	g->first_ns = UINT64_MAX;
	guest_dirname(g->dirname, sizeof(g->dirname), vm_name, r->host_pid);
	snprintf(path, sizeof(path), "%s/%s", x->dir, g->dirname);
	*ret = ht_lttng_trace_open(x->out.fd, g->dirname, path, false, HT_LTTNG_MAX_GUEST_CPUS, r->exit_ns ^ r->host_pid,
				   &g->trace, err, errlen);
	if (!*ret && (guest_classes(g) || common_env(g->trace, g->dirname) ||
		      ht_lttng_trace_env_str(g->trace, "vm_name", vm_name ? vm_name : "") ||
		      ht_lttng_trace_env_int(g->trace, "vm_pid", r->host_pid) ||
		      ht_lttng_trace_env_int(g->trace, "vm_uid", r->host_pid)))
		*ret = ht_errf(err, errlen, "out of memory");
	return *ret ? NULL : g;
}

/* The event classes of a guest function: NAME_entry and NAME_exit, as LTTng names a kretprobe's. */
static int function_class(struct guest *g, const struct ht_decoder *dec, uint64_t addr, bool exit)
{
	struct fn_class *f = ht_id_pair_table_get(g->functions, (uint32_t)(addr >> 32), (uint32_t)addr);
	char name[300], ev[320];

	if (f)
		return f->id[exit];
	if (g->nfunctions >= MAX_FUNCTIONS)
		return g->cls.func_other[exit];
	if (!ht_decoder_function(dec, addr, name, sizeof(name)))
		snprintf(name, sizeof(name), "func_0x%llx", (unsigned long long)addr);
	f = calloc(1, sizeof(*f));
	if (!f || ht_id_pair_table_put(g->functions, (uint32_t)(addr >> 32), (uint32_t)addr, f)) {
		free(f);
		return -ENOMEM;
	}
	snprintf(ev, sizeof(ev), "%s_entry", name);
	f->id[0] = ht_lttng_trace_add_class(g->trace, ev, "\t\t" HT_TSDL_X64 " _ip;\n\t\t" HT_TSDL_X64 " _parent_ip;\n");
	snprintf(ev, sizeof(ev), "%s_exit", name);
	f->id[1] = ht_lttng_trace_add_class(g->trace, ev, "\t\t" HT_TSDL_X64 " _ip;\n\t\t" HT_TSDL_X64 " _parent_ip;\n");
	g->nfunctions++;
	if (f->id[0] < 0 || f->id[1] < 0)
		return f->id[0] < 0 ? f->id[0] : f->id[1];
	return f->id[exit];
}

static void guest_ctx(struct ht_lttng_export *x, const struct ht_record *r, int64_t tid, uint32_t cpu,
		      struct ht_lttng_ctx *ctx)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->pid = -1;
	ctx->tid = (int32_t)tid;
	if (tid >= 0)
		ht_guest_task_comm(x->gstate, r->host_pid, (uint32_t)tid, cpu, ctx->procname);
}

/*
 * A guest CPU's number in the guest trace: KVM's vcpu_id of the vCPU it is,
 * which Trace Compass's VM analyses key the vCPU by on the host's side
 * (kvm_x86_entry's vcpu_id) and on the guest's (the trace's CPU). The
 * guest's smp_processor_id() differs where QEMU's APIC IDs have gaps (e.g.
 * sockets of 3 cores: 0, 1, 2, 4). Each hypertraced hypercall carries both:
 * learn the pairs; a CPU not seen making one keeps its number.
 */
static int guest_vcpu_learn(struct guest *g, uint32_t cpu, uint32_t vcpu_id)
{
	struct vcpu_of *v = ht_id_pair_table_get(g->vcpus, 0, cpu);

	if (!v) {
		v = malloc(sizeof(*v));
		if (!v || ht_id_pair_table_put(g->vcpus, 0, cpu, v)) {
			free(v);
			return -ENOMEM;
		}
	}
	v->vcpu_id = vcpu_id;
	return 0;
}

static uint32_t guest_vcpu(struct guest *g, uint32_t cpu)
{
	const struct vcpu_of *v = ht_id_pair_table_get(g->vcpus, 0, cpu);

	return v ? v->vcpu_id : cpu;
}

/* A task as a guest sched_switch names it: its tid, its name and its ftrace prio. */
struct guest_task {
	uint32_t tid;
	const char *comm;
	int32_t prio;
};

/* A guest sched_switch's payload: from prev, left in prev_state, to next. */
static void put_guest_switch(struct payload *p, const struct guest_task *prev, uint64_t prev_state,
			     const struct guest_task *next)
{
	put_comm(p, prev->comm);
	put_u32(p, prev->tid);
	put_u32(p, (uint32_t)(prev->prio - LTTNG_PRIO_OFFSET));
	put_u64(p, prev_state);
	put_comm(p, next->comm);
	put_u32(p, next->tid);
	put_u32(p, (uint32_t)(next->prio - LTTNG_PRIO_OFFSET));
}

/*
 * The guest event's LTTng payload into p, its class into *id, and the
 * thread it names into *tid (if it names one): 0, 1 for an event LTTng has
 * no class for (nothing to write), or -errno.
 */
static int guest_event_payload(struct ht_lttng_export *x, struct guest *g, const struct ht_record *r,
			       const struct ht_gev *ev, struct payload *p, int *id, int64_t *tid)
{
	char comm[HT_GEV_COMM_LEN + 1];

	switch (ev->kind) {
	case HT_GEV_SCHED_SWITCH: {
		char next[HT_GEV_COMM_LEN + 1];

		*tid = ev->u.sw.prev_tid;
		*id = g->cls.sched_switch;
		ht_guest_task_comm(x->gstate, r->host_pid, ev->u.sw.prev_tid, ev->cpu, comm);
		ht_guest_task_comm(x->gstate, r->host_pid, ev->u.sw.next_tid, ev->cpu, next);
		put_guest_switch(p, &(struct guest_task){ ev->u.sw.prev_tid, comm, ev->u.sw.prev_prio }, ev->u.sw.prev_state,
				 &(struct guest_task){ ev->u.sw.next_tid, ev->u.sw.next_tid ? ev->u.sw.next_comm : next,
						       ev->u.sw.next_prio });
		break;
	}
	case HT_GEV_SCHED_WAKEUP:
		*id = g->cls.sched_wakeup;
		put_comm(p, ev->u.wake.comm);
		put_u32(p, ev->u.wake.tid);
		put_u32(p, (uint32_t)(ev->u.wake.prio - LTTNG_PRIO_OFFSET));
		put_u32(p, guest_vcpu(g, ev->u.wake.target_cpu));
		break;
	case HT_GEV_IRQ_ENTRY:
		*id = g->cls.irq_entry;
		put_u32(p, ev->u.irq.irq);
		put_string(p, ev->u.irq.name);
		break;
	case HT_GEV_IRQ_EXIT:
		*id = g->cls.irq_exit;
		put_u32(p, ev->u.irq.irq);
		put_u32(p, (uint32_t)(int32_t)ev->u.irq.ret); /* irqreturn_t: an int */
		break;
	case HT_GEV_FUNC_ENTRY:
	case HT_GEV_FUNC_EXIT:
		*tid = ev->u.func.tid;
		*id = function_class(g, x->dec, ev->u.func.addr, ev->kind == HT_GEV_FUNC_EXIT);
		if (*id < 0)
			return *id;
		put_u64(p, ev->u.func.addr);
		put_u64(p, ev->u.func.call_site);
		break;
	case HT_GEV_MODULE: {
		const struct ht_event_desc *d = ev->desc;
		const char *names[] = { "state", "events", "functions", "missed", "anchor_addr" };
		char anchor[33] = "";

		*id = g->cls.module;
		for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
			const struct ht_field *f = ht_event_field(d, names[i]);
			put_u64(p, f ? ht_field_bits(f, r) : 0);
		}
		if (ht_event_field(d, "anchor_name"))
			ht_field_text(ht_event_field(d, "anchor_name"), r, anchor);
		put_string(p, anchor);
		break;
	}
	default:
		return 1;
	}
	return 0;
}

/*
 * The stand-in for what ran on a guest CPU while its switches were lost
 * (export/switch_chain.h): tid PID_MAX_LIMIT (2^22 on x86-64), which no
 * Linux task has.
 */
#define STAND_IN_TID (1u << 22)

/*
 * A guest sched_switch that breaks its stream's chain (its prev_tid is not
 * the task the stream's last switch put there: switches were lost in
 * between) would leave that task running in Trace Compass: its
 * SchedSwitchHandler sets the states of prev_tid and next_tid and never
 * looks at the CPU's current thread. Before it, two switches close the
 * chain (docs/exports.md): the task last switched in leaves, in the state
 * Trace Compass reads as WAIT_UNKNOWN, when it was last known there: at
 * its switch-in, or at the guest module's unload after it (the events
 * wait in time order, and it is written after that event); the stand-in
 * holds the CPU until the breaking switch's time, then gives it to that
 * switch's prev_tid.
 */
static int follow_chain(struct ht_lttng_export *x, struct guest *g, const struct ht_record *r, const struct ht_gev *ev)
{
	char last_comm[HT_GEV_COMM_LEN + 1], prev_comm[HT_GEV_COMM_LEN + 1];
	struct ht_lttng_ctx ctx;
	struct ht_chain_break brk;
	struct payload p = { .len = 0 };
	uint64_t at;
	int ret;

	/* Keyed by the stream the switch is written to, the CPU Trace Compass reads it on. */
	ret = ht_switch_chain_follow(x->chain, r->host_pid, r->vcpu_id, ev->u.sw.prev_tid, ev->u.sw.next_tid,
				     ev->u.sw.next_prio, r->exit_ns, &brk);
	if (ret <= 0)
		return ret;
	at = brk.known_ns < r->exit_ns ? brk.known_ns : r->exit_ns;
	ht_guest_task_comm(x->gstate, r->host_pid, brk.last_tid, ev->cpu, last_comm);
	ht_guest_task_comm(x->gstate, r->host_pid, ev->u.sw.prev_tid, ev->cpu, prev_comm);
	const struct guest_task last = { brk.last_tid, last_comm, brk.last_prio };
	const struct guest_task gap = { STAND_IN_TID, HT_CHAIN_UNKNOWN_COMM, HT_CHAIN_UNKNOWN_PRIO };
	const struct guest_task into = { ev->u.sw.prev_tid, prev_comm, ev->u.sw.prev_prio };

	put_guest_switch(&p, &last, HT_CHAIN_UNKNOWN_STATE, &gap);
	guest_ctx(x, r, brk.last_tid, ev->cpu, &ctx);
	if ((ret = push(x, g->trace, r->vcpu_id, at, g->cls.sched_switch, &ctx, &p)))
		return ret;
	p.len = 0;
	put_guest_switch(&p, &gap, HT_CHAIN_UNKNOWN_STATE, &into);
	ctx.tid = (int32_t)STAND_IN_TID;
	snprintf(ctx.procname, sizeof(ctx.procname), "%s", HT_CHAIN_UNKNOWN_COMM);
	return push(x, g->trace, r->vcpu_id, r->exit_ns, g->cls.sched_switch, &ctx, &p);
}

/* The guest side of a hypertraced hypercall: the event, then the vmsync pair. */
static int guest_events(struct ht_lttng_export *x, struct guest *g, const struct ht_record *r,
			const struct ht_gev *ev, int64_t task_before, uint64_t entry_ns)
{
	struct payload p = { .len = 0 };
	struct ht_lttng_ctx ctx;
	int64_t tid = task_before;
	int id = 0, ret;
	/* The event's CPU made this hypercall: the record's vCPU is the one it runs on. */
	uint32_t vcpu = r->vcpu_id;

	if (guest_vcpu_learn(g, ev->cpu, r->vcpu_id))
		return -ENOMEM;
	if (ev->kind == HT_GEV_SCHED_SWITCH && (ret = follow_chain(x, g, r, ev)))
		return ret;
	if (ev->kind == HT_GEV_MODULE && ev->u.mod.state == 0)
		ht_switch_chain_stopped(x->chain, r->host_pid, r->exit_ns);
	if ((ret = guest_event_payload(x, g, r, ev, &p, &id, &tid)))
		return ret < 0 ? ret : 0;
	guest_ctx(x, r, tid, ev->cpu, &ctx);
	if ((ret = push(x, g->trace, vcpu, r->exit_ns, id, &ctx, &p)))
		return ret;
	/* What the guest's vmsync module traces around its hypercall: the message out, then the answer in. */
	p.len = 0;
	put_u32(&p, g->cnt);
	put_u64(&p, g->pid);
	if ((ret = push(x, g->trace, vcpu, r->exit_ns, g->cls.gh_guest, &ctx, &p)))
		return ret;
	p.len = 0;
	put_u32(&p, g->cnt + 1);
	put_u64(&p, g->pid);
	if (r->exit_ns < g->first_ns)
		g->first_ns = r->exit_ns;
	if (entry_ns > g->last_ns)
		g->last_ns = entry_ns;
	return push(x, g->trace, vcpu, entry_ns, g->cls.hg_guest, &ctx, &p);
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
		g = guest_of(x, r, reader, err, errlen, &ret);
		if (!g)
			return ret;
	}

	put_u32(&p, r->exit_reason);
	put_u64(&p, r->guest_rip);
	put_u32(&p, r->isa);
	put_u64(&p, 0); /* info1, info2: a hypercall exit has none (VMCALL and VMMCALL exits qualify nothing) */
	put_u64(&p, 0);
	if (x->exit_has_vcpu) {
		put_u32(&p, 0); /* intr_info, error_code: no event was being delivered */
		put_u32(&p, 0);
		put_u32(&p, r->vcpu_id);
	}
	ret = push(x, x->host, r->exit_cpu, r->exit_ns, x->hcls.exit, &hctx, &p);
	p.len = 0;
	put_u64(&p, r->nr);
	put_u64(&p, r->a0);
	put_u64(&p, r->a1);
	put_u64(&p, r->a2);
	put_u64(&p, r->a3);
	/* The record knows the CPUs at exit and entry; the hypercall event is put on the exit's. */
	ret = ret ? ret : push(x, x->host, r->exit_cpu, hcall_ns, x->hcls.hypercall, &hctx, &p);
	if (!ret && g) {
		p.len = 0;
		put_u32(&p, g->cnt);
		put_u64(&p, g->pid);
		ret = push(x, x->host, r->exit_cpu, hcall_ns, x->hcls.gh_host, &hctx, &p);
		if (!ret && g->cnt == 0)
			mark_last_pushed(x, MARK_FIRST_LINK);
		p.len = 0;
		put_u32(&p, g->cnt + 1);
		put_u64(&p, g->pid);
		ret = ret ? ret : push(x, x->host, r->entry_cpu, entry_ns, x->hcls.hg_host, &hctx, &p);
		ret = ret ? ret : guest_events(x, g, r, &ev, task_before, entry_ns);
		g->cnt += 2;
	}
	p.len = 0;
	put_u32(&p, r->vcpu_id);
	ret = ret ? ret : push(x, x->host, r->entry_cpu, entry_ns, x->hcls.entry, &hctx, &p);
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
		put_comm(&p, vcpu_name);
		put_u32(&p, sw->host_tid);
		put_u32(&p, (uint32_t)HOST_UNKNOWN_PRIO);
		put_u64(&p, lttng_prev_state(sw));
		put_comm(&p, comm);
		put_u32(&p, sw->other_tid);
		put_u32(&p, (uint32_t)HOST_UNKNOWN_PRIO);
		next = (struct ht_lttng_ctx){ .pid = (int32_t)sw->other_pid, .tid = (int32_t)sw->other_tid };
		memcpy(next.procname, comm, sizeof(next.procname));
		if (!sw->other_tid)
			idle_ctx(sw->cpu, &next);
	} else {
		ctx = (struct ht_lttng_ctx){ .pid = (int32_t)sw->other_pid, .tid = (int32_t)sw->other_tid };
		memcpy(ctx.procname, comm, sizeof(ctx.procname));
		put_comm(&p, comm);
		put_u32(&p, sw->other_tid);
		put_u32(&p, (uint32_t)HOST_UNKNOWN_PRIO);
		put_u64(&p, 0); /* the record does not say how the thread replaced left: as if preempted */
		put_comm(&p, vcpu_name);
		put_u32(&p, sw->host_tid);
		put_u32(&p, (uint32_t)HOST_UNKNOWN_PRIO);
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
		put_u32(&p, t->tid);
		put_u32(&p, t->pid);
		put_u32(&p, t->tid == t->pid ? 0 : t->pid);
		put_comm(&p, t->procname);
		put_u32(&p, LTTNG_USER_THREAD);
		put_u32(&p, LTTNG_MODE_UNKNOWN);
		put_u32(&p, LTTNG_NONE);
		put_u32(&p, LTTNG_UNNAMED);
		put_u32(&p, t->first_cpu);
		put_u64(&p, 0); /* file_table_address: not known */
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
