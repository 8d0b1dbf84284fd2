// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert --lttng, the VMs' boots and their guests' initcalls
 * (lttng_private.h): fed the boot exits (record --boot) and the records of
 * the guests' boot-time traces (guest/boottrace) of the selected VMs as they
 * come; at close, each VM's boot phases (boot/boot_timeline.h) and each
 * guest's initcall levels and initcalls on the host's clock
 * (export/initcall_spans.h, the slices Perfetto and Chrome draw) as begin
 * and end events in the host trace's boot stream, `boot_<cpu>`: a stream of
 * their own, since they are known only once every record has gone into the
 * CPUs' streams. A slice's begin carries its name and arguments; its end,
 * which track it ends. Trace Compass's data-driven analysis
 * (docs/tracecompass/hypertrace-boot.xml) makes each track an attribute of
 * its VM: `VMs/<pid>/boot phases`, `initcall levels`, `initcalls`,
 * `initcalls 2`, ...; so on each track a slice ends (its end event) before
 * the next one begins at the same time, and a slice of no length still
 * begins before it ends. An instant "boot ended" where the VM's threads
 * ended, and one per initcall that never returned, are events of their own.
 *
 * Text the guest or the VM's owner chose (initcall and level names, the VM's
 * name) is written escaped as report and the other exports show it
 * (HT_ESC_TEXT): valid UTF-8 without control or NUL bytes, the escaping
 * reversible, each string whole (the largest payload fits one packet).
 */
#include "export/lttng_private.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/errf.h"
#include "common/escape.h"
#include "common/vcpu_states.h"
#include "tracefile/trace_reader.h"

/* A VM's label: "VM NAME (pid N)" as Perfetto names its process track, or "VM process N". */
#define VM_LABEL_SIZE (HT_ESC_SIZE(64) + 32)
/* A span's name or its level's, escaped whole. */
#define LABEL_SIZE HT_ESC_SIZE(HT_INITCALL_LABEL_MAX)
/* The tracks of a VM's initcalls: "initcalls", "initcalls 2", ... */
#define TRACK_SIZE 32

_Static_assert(4 + VM_LABEL_SIZE + TRACK_SIZE + 2 * LABEL_SIZE + 4 + 4 <= HT_LTTNG_MAX_BOOT_PAYLOAD,
	       "an initcall's begin event must fit the boot stream's payload");

struct vm_label {
	char text[VM_LABEL_SIZE];
};

struct boot_payload {
	unsigned char buf[HT_LTTNG_MAX_BOOT_PAYLOAD];
	size_t len;
};

/* One event of the boot stream, before they are put in time order. */
struct boot_event {
	uint64_t ts, seq; /* seq: the order made, which keeps each track's begin before its end at one time */
	int id;
	uint32_t pid;
	const struct ht_boot_timeline *boot; /* a phase's, or the VM's end */
	int phase;
	const struct ht_initcall_span *span; /* a level's or an initcall's */
};

struct boot_events {
	struct boot_event *ev;
	size_t n, cap;
};

static void put(struct boot_payload *p, const void *v, size_t n)
{
	memcpy(p->buf + p->len, v, n);
	p->len += n;
}

static void put_u32(struct boot_payload *p, uint32_t v)
{
	put(p, &v, 4);
}

static void put_u64(struct boot_payload *p, uint64_t v)
{
	put(p, &v, 8);
}

/* Text already shown (escaped or the project's own), NUL-terminated. */
static void put_shown(struct boot_payload *p, const char *s)
{
	put(p, s, strlen(s) + 1);
}

/* The guest's bytes, escaped whole (the payload has room: the static assertion above). */
static void put_escaped(struct boot_payload *p, const char *raw, size_t n)
{
	p->len += ht_escape_mem((char *)p->buf + p->len, sizeof(p->buf) - p->len, raw, n, HT_ESC_TEXT) + 1;
}

/* The VM's label while the reader names it: at close there is no reader. */
static int note_vm(struct ht_lttng_export *x, uint32_t pid, struct ht_reader *reader)
{
	const char *name;
	char esc[HT_ESC_SIZE(64)];
	struct vm_label *l;

	if (!x->vm_labels && !(x->vm_labels = ht_id_pair_table_new()))
		return -ENOMEM;
	if (ht_id_pair_table_get(x->vm_labels, pid, 0))
		return 0;
	if (!(l = calloc(1, sizeof(*l))))
		return -ENOMEM;
	name = reader ? ht_reader_vm_name(reader, pid) : NULL;
	ht_escape(esc, sizeof(esc), name ? name : "", HT_ESC_TEXT);
	if (esc[0])
		snprintf(l->text, sizeof(l->text), "VM %s (pid %u)", esc, pid);
	else
		snprintf(l->text, sizeof(l->text), "VM process %u", pid);
	if (ht_id_pair_table_put(x->vm_labels, pid, 0, l)) {
		free(l);
		return -ENOMEM;
	}
	return 0;
}

int ht_lttng_add_boot_exit(struct ht_lttng_export *x, const struct ht_boot_exit *be, struct ht_reader *reader,
			   char *err, size_t errlen)
{
	if (!x->boots) {
		if (!(x->boots = malloc(sizeof(*x->boots))))
			return ht_errf(err, errlen, "out of memory");
		ht_boot_timelines_init(x->boots);
	}
	if (ht_boot_timelines_add(x->boots, be, NULL) || note_vm(x, be->host_pid, reader))
		return ht_errf(err, errlen, "out of memory");
	return 0;
}

int ht_lttng_add_guest_trace(struct ht_lttng_export *x, const struct ht_record *r, struct ht_reader *reader,
			     char *err, size_t errlen)
{
	if (!x->traces) {
		if (!(x->traces = malloc(sizeof(*x->traces))))
			return ht_errf(err, errlen, "out of memory");
		ht_guest_traces_init(x->traces);
	}
	if (ht_guest_traces_add(x->traces, r) || note_vm(x, r->host_pid, reader))
		return ht_errf(err, errlen, "out of memory");
	return 0;
}

void lt_free_boots(struct ht_lttng_export *x)
{
	if (x->boots)
		ht_boot_timelines_free(x->boots);
	free(x->boots);
	x->boots = NULL;
	if (x->traces)
		ht_guest_traces_free(x->traces);
	free(x->traces);
	x->traces = NULL;
	for (size_t i = 0; x->vm_labels && i < ht_id_pair_table_len(x->vm_labels); i++)
		free(ht_id_pair_table_at(x->vm_labels, i));
	ht_id_pair_table_free(x->vm_labels);
	x->vm_labels = NULL;
}

static int declare_classes(struct ht_lttng_export *x)
{
	struct boot_classes *c = &x->bcls;
	char phase_fields[2048]; /* 14 fields of at most 100 bytes */
	size_t n;

	n = (size_t)snprintf(phase_fields, sizeof(phase_fields),
			     "\t\t" HT_TSDL_U32 " _vm_pid;\n\t\t" HT_TSDL_STRING " _vm;\n\t\t" HT_TSDL_STRING
			     " _phase;\n\t\t" HT_TSDL_U64 " _start_uncertainty_ns;\n\t\t" HT_TSDL_U32
			     " _start_exact;\n\t\t" HT_TSDL_U64 " _exits;\n");
	for (int s = 0; s < HT_VCPU_NSTATES; s++)
		n += (size_t)snprintf(phase_fields + n, sizeof(phase_fields) - n, "\t\t" HT_TSDL_U64 " _%s_ns;\n",
				      ht_vcpu_state_names[s]);
	n += (size_t)snprintf(phase_fields + n, sizeof(phase_fields) - n,
			      "\t\t" HT_TSDL_X64 " _first_rip;\n\t\t" HT_TSDL_U32 " _first_vcpu;\n");
	assert(n < sizeof(phase_fields));
	c->phase_begin = ht_lttng_trace_add_class(x->host, "hypertrace_boot_phase_begin", phase_fields);
	c->phase_end = ht_lttng_trace_add_class(x->host, "hypertrace_boot_phase_end",
						"\t\t" HT_TSDL_U32 " _vm_pid;\n\t\t" HT_TSDL_STRING " _phase;\n");
	c->ended = ht_lttng_trace_add_class(x->host, "hypertrace_boot_ended",
					    "\t\t" HT_TSDL_U32 " _vm_pid;\n\t\t" HT_TSDL_STRING " _vm;\n\t\t" HT_TSDL_STRING
					    " _phase;\n");
	c->level_begin = ht_lttng_trace_add_class(x->host, "hypertrace_initcall_level_begin",
						  "\t\t" HT_TSDL_U32 " _vm_pid;\n\t\t" HT_TSDL_STRING " _vm;\n\t\t" HT_TSDL_STRING
						  " _level;\n\t\t" HT_TSDL_U64 " _initcalls;\n\t\t" HT_TSDL_U32 " _guest_tid;\n");
	c->level_end = ht_lttng_trace_add_class(x->host, "hypertrace_initcall_level_end",
						"\t\t" HT_TSDL_U32 " _vm_pid;\n\t\t" HT_TSDL_STRING " _level;\n");
	c->call_begin = ht_lttng_trace_add_class(x->host, "hypertrace_initcall_begin",
						 "\t\t" HT_TSDL_U32 " _vm_pid;\n\t\t" HT_TSDL_STRING " _vm;\n\t\t" HT_TSDL_STRING
						 " _track;\n\t\t" HT_TSDL_STRING " _name;\n\t\t" HT_TSDL_STRING
						 " _level;\n\t\t" HT_TSDL_U32 " _guest_tid;\n\t\t" HT_TSDL_U32 " _cpu;\n");
	c->call_end = ht_lttng_trace_add_class(x->host, "hypertrace_initcall_end",
					       "\t\t" HT_TSDL_U32 " _vm_pid;\n\t\t" HT_TSDL_STRING " _track;\n\t\t" HT_TSDL_STRING
					       " _name;\n\t\t" HT_TSDL_S64 " _ret;\n");
	c->no_return = ht_lttng_trace_add_class(x->host, "hypertrace_initcall_no_return",
						"\t\t" HT_TSDL_U32 " _vm_pid;\n\t\t" HT_TSDL_STRING " _vm;\n\t\t" HT_TSDL_STRING
						" _name;\n\t\t" HT_TSDL_STRING " _level;\n\t\t" HT_TSDL_U32
						" _guest_tid;\n\t\t" HT_TSDL_U32 " _cpu;\n");
	return c->phase_begin < 0 || c->phase_end < 0 || c->ended < 0 || c->level_begin < 0 || c->level_end < 0 ||
			       c->call_begin < 0 || c->call_end < 0 || c->no_return < 0 ?
		       -ENOMEM :
		       0;
}

static int add_event(struct boot_events *e, struct boot_event ev)
{
	if (e->n == e->cap) {
		size_t cap = e->cap ? 2 * e->cap : 256;
		struct boot_event *n = realloc(e->ev, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		e->ev = n;
		e->cap = cap;
	}
	ev.seq = e->n;
	e->ev[e->n++] = ev;
	return 0;
}

static int by_time(const void *a, const void *b)
{
	const struct boot_event *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* A VM's reached phases, each a begin and an end, and where its threads ended, an instant. */
static int boot_events(struct boot_events *e, const struct boot_classes *c, const struct ht_boot_timeline *t)
{
	int ret = 0;

	for (int p = 0; p < HT_BOOT_NPHASES && !ret; p++) {
		struct boot_event ev = { .pid = t->pid, .boot = t, .phase = p };

		if (!t->phases[p].reached)
			continue;
		ev.ts = t->phases[p].start_ns;
		ev.id = c->phase_begin;
		ret = add_event(e, ev);
		ev.ts = ht_boot_phase_end(t, (enum ht_boot_phase)p);
		ev.id = c->phase_end;
		ret = ret ? ret : add_event(e, ev);
	}
	if (!ret && t->ended)
		ret = add_event(e, (struct boot_event){ .ts = t->end_ns, .id = c->ended, .pid = t->pid, .boot = t,
							 .phase = (int)t->phase });
	return ret;
}

/* A guest's levels and initcalls as drawn (in start order on each track): each a begin and an end, or an instant. */
static int initcall_events(struct boot_events *e, const struct boot_classes *c, const struct ht_initcall_view *v)
{
	int ret = 0;

	for (size_t i = 0; i < v->nlevels && !ret; i++) {
		const struct ht_initcall_span *s = &v->levels[i];

		ret = add_event(e, (struct boot_event){ .ts = s->start_ns, .id = c->level_begin, .pid = v->host_pid,
							 .span = s });
		ret = ret ? ret :
			    add_event(e, (struct boot_event){ .ts = s->end_ns, .id = c->level_end, .pid = v->host_pid,
							      .span = s });
	}
	for (size_t i = 0; i < v->ncalls && !ret; i++) {
		const struct ht_initcall_span *s = &v->calls[i];

		if (!s->call->finished) {
			ret = add_event(e, (struct boot_event){ .ts = s->start_ns, .id = c->no_return,
								 .pid = v->host_pid, .span = s });
			continue;
		}
		ret = add_event(e, (struct boot_event){ .ts = s->start_ns, .id = c->call_begin, .pid = v->host_pid,
							 .span = s });
		ret = ret ? ret :
			    add_event(e, (struct boot_event){ .ts = s->end_ns, .id = c->call_end, .pid = v->host_pid,
							      .span = s });
	}
	return ret;
}

static void span_label(struct boot_payload *p, const struct ht_initcall_span *s, bool level_of)
{
	char raw[HT_INITCALL_LABEL_MAX];
	size_t n = level_of ? ht_initcall_level_label(raw, sizeof(raw), s) : ht_initcall_label(raw, sizeof(raw), s);

	put_escaped(p, raw, n);
}

static void track_name(struct boot_payload *p, unsigned int lane)
{
	char name[TRACK_SIZE];

	if (lane)
		snprintf(name, sizeof(name), "initcalls %u", lane + 1);
	else
		snprintf(name, sizeof(name), "initcalls");
	put_shown(p, name);
}

/* The event's payload, in the order of its class's fields. */
static void payload_of(const struct ht_lttng_export *x, const struct boot_event *ev, const char *vm,
		       struct boot_payload *p)
{
	const struct boot_classes *c = &x->bcls;
	const struct ht_initcall_span *s = ev->span;

	put_u32(p, ev->pid);
	if (ev->id == c->phase_begin) {
		const struct ht_boot_phase_stats *st = &ev->boot->phases[ev->phase];

		put_shown(p, vm);
		put_shown(p, ht_boot_phase_names[ev->phase]);
		put_u64(p, ht_boot_phase_uncertainty(ev->boot, (enum ht_boot_phase)ev->phase));
		put_u32(p, ev->phase == HT_BOOT_FIRMWARE && ev->boot->start_exact);
		put_u64(p, st->exits);
		for (int k = 0; k < HT_VCPU_NSTATES; k++)
			put_u64(p, st->state_ns[k]);
		put_u64(p, st->first_rip);
		put_u32(p, st->first_vcpu);
	} else if (ev->id == c->phase_end) {
		put_shown(p, ht_boot_phase_names[ev->phase]);
	} else if (ev->id == c->ended) {
		put_shown(p, vm);
		put_shown(p, ht_boot_phase_names[ev->phase]);
	} else if (ev->id == c->level_begin) {
		put_shown(p, vm);
		span_label(p, s, false);
		put_u64(p, s->level->initcalls);
		put_u32(p, s->level->tid);
	} else if (ev->id == c->level_end) {
		span_label(p, s, false);
	} else if (ev->id == c->call_begin) {
		put_shown(p, vm);
		track_name(p, s->lane);
		span_label(p, s, false);
		span_label(p, s, true);
		put_u32(p, s->call->tid);
		put_u32(p, s->call->cpu);
	} else if (ev->id == c->call_end) {
		track_name(p, s->lane);
		span_label(p, s, false);
		put_u64(p, (uint64_t)s->call->ret);
	} else { /* no_return */
		put_shown(p, vm);
		span_label(p, s, false);
		span_label(p, s, true);
		put_u32(p, s->call->tid);
		put_u32(p, s->call->cpu);
	}
}

/* The boot stream's CPU: the lowest the host trace shows (as its statedump's), else 0. */
static uint32_t boot_cpu(const struct ht_lttng_export *x)
{
	uint32_t cpu = UINT32_MAX;

	for (size_t i = 0; i < ht_id_pair_table_len(x->running); i++) {
		const struct cpu_thread *t = ht_id_pair_table_at(x->running, i);

		if (t->cpu < cpu)
			cpu = t->cpu;
	}
	return cpu == UINT32_MAX ? 0 : cpu;
}

static int write_events(struct ht_lttng_export *x, struct boot_events *e, char *err, size_t errlen)
{
	struct boot_payload *p = malloc(sizeof(*p));
	uint32_t cpu = boot_cpu(x);
	int ret = 0;

	if (!p)
		return ht_errf(err, errlen, "out of memory");
	qsort(e->ev, e->n, sizeof(*e->ev), by_time);
	for (size_t i = 0; i < e->n && !ret; i++) {
		const struct boot_event *ev = &e->ev[i];
		const struct vm_label *l = ht_id_pair_table_get(x->vm_labels, ev->pid, 0);
		/* The VM's process: its first thread, named by its label (cut at a character's end). */
		struct ht_lttng_ctx ctx = { .pid = (int32_t)ev->pid, .tid = (int32_t)ev->pid };

		if (l)
			memcpy(ctx.procname, l->text, ht_utf8_prefix(l->text, HT_LTTNG_COMM_LEN - 1)); /* the kernel's comm: 15 and a NUL */
		p->len = 0;
		payload_of(x, ev, l ? l->text : "", p);
		ret = ht_lttng_trace_boot_event(x->host, cpu, ev->ts, ev->id, &ctx, p->buf, p->len, err, errlen);
	}
	free(p);
	return ret < 0 ? ret : 0;
}

int lt_write_boots(struct ht_lttng_export *x, char *err, size_t errlen)
{
	struct boot_events e = { 0 };
	const struct ht_boot_timeline **vms = NULL;
	struct ht_initcall_view *views = NULL;
	size_t nvms = 0, nviews = 0;
	int ret = 0;

	if (x->boots && ht_boot_timelines_count(x->boots) && !(vms = ht_boot_timelines_sorted(x->boots, &nvms)))
		return ht_errf(err, errlen, "out of memory");
	if (x->traces) {
		if (ht_guest_traces_finish(x->traces) || !(views = calloc(x->traces->n + 1, sizeof(*views)))) {
			free(vms);
			return ht_errf(err, errlen, "out of memory");
		}
		for (size_t i = 0; i < x->traces->n && !ret; i++) {
			int got = ht_initcall_view_build(ht_guest_traces_get(x->traces, i), &views[nviews],
							 &x->counts.initcalls);

			if (got < 0)
				ret = -ENOMEM;
			nviews += got > 0;
		}
	}
	/* Nothing to show: the host trace is as it would be without boots. */
	if (!ret && (nvms || nviews))
		ret = declare_classes(x);
	for (size_t i = 0; i < nvms && !ret; i++)
		ret = boot_events(&e, &x->bcls, vms[i]);
	for (size_t i = 0; i < nviews && !ret; i++)
		ret = initcall_events(&e, &x->bcls, &views[i]);
	if (ret)
		ret = ht_errf(err, errlen, "out of memory");
	else if (e.n)
		ret = write_events(x, &e, err, errlen);
	for (size_t i = 0; i < nviews; i++)
		ht_initcall_view_free(&views[i]);
	free(views);
	free(vms);
	free(e.ev);
	return ret;
}
