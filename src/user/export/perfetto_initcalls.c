// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A guest kernel's initcalls in the Perfetto export (its own boot-time
 * trace, replayed by guest/boottrace: boot/initcalls.h): fed the records of
 * nr 1150..1152 of the selected VMs as they come, at close, per VM whose
 * trace has clock pairs, on the host's clock (export/initcall_spans.h): its
 * levels as slices on a track "initcall levels" under the VM's process track
 * and its initcalls that returned as slices on a track "initcalls" (then
 * "initcalls 2" and on where they overlap), named by the function (" [module]"
 * for a module's), with the level, ret, guest tid and CPU as arguments; an
 * initcall without its return an instant "NAME (no return)" at its start.
 * Ranked after the boot phases, before the off-CPU tracks. The names are the
 * guest's bytes, escaped as every foreign text (shown); written whole, not
 * interned, so a guest's names never fill the interning tables.
 */
#include "export/perfetto_export.h"
#include "export/perfetto_private.h"

#include <stdlib.h>
#include "common/errf.h"

/* The slices' arguments. */
enum { IC_LEVEL, IC_RET, IC_GUEST_TID, IC_CPU, IC_INITCALLS, IC_ARGS };
static const char *const initcall_args[] = { "level", "ret", "guest_tid", "cpu", "initcalls" };
_Static_assert(ARRAY_SIZE(initcall_args) == IC_ARGS, "initcall_args and its enum disagree");

/* A span's name or its level's, escaped whole. */
#define SHOWN_LABEL_SIZE HT_ESC_SIZE(HT_INITCALL_LABEL_MAX)

int ht_perfetto_add_guest_trace(struct ht_perfetto_export *x, const struct ht_record *r, struct ht_reader *reader,
				char *err, size_t errlen)
{
	if (!x->traces) {
		if (!(x->traces = malloc(sizeof(*x->traces))))
			return ht_errf(err, errlen, "out of memory");
		ht_guest_traces_init(x->traces);
	}
	/* The VM's track now, while the reader names it: its initcalls' tracks go under it at close. */
	if (ht_guest_traces_add(x->traces, r) || !pf_vm_track(x, r->host_pid, reader, r->exit_ns) || x->raw.oom)
		return ht_errf(err, errlen, "out of memory");
	return x->raw.len >= BUNDLE_BYTES ? pf_flush_bundle(x, err, errlen) : 0;
}

void pf_free_traces(struct ht_perfetto_export *x)
{
	if (x->traces)
		ht_guest_traces_free(x->traces);
	free(x->traces);
	x->traces = NULL;
}

static void shown_label(char *out, const struct ht_initcall_span *s, bool level_of)
{
	char raw[HT_INITCALL_LABEL_MAX];
	size_t n = level_of ? ht_initcall_level_label(raw, sizeof(raw), s) : ht_initcall_label(raw, sizeof(raw), s);

	ht_escape_mem(out, SHOWN_LABEL_SIZE, raw, n, HT_ESC_TEXT);
}

/* A debug annotation: a number (field DA_UINT or DA_INT) or, with s, a string. */
static void initcall_arg(struct ht_perfetto_export *x, const uint64_t *iid, int arg, int field, int64_t v,
			 const char *s)
{
	ht_pb_msg a = ht_pb_begin(&x->raw, TE_DEBUG);

	if (iid[arg])
		ht_pb_varint(&x->raw, DA_NAME_IID, iid[arg]);
	else
		ht_pb_string(&x->raw, DA_NAME, initcall_args[arg]);
	if (s)
		ht_pb_string(&x->raw, DA_STRING, s);
	else if (field == DA_INT)
		ht_pb_int(&x->raw, DA_INT, v);
	else
		ht_pb_varint(&x->raw, (uint32_t)field, (uint64_t)v);
	ht_pb_end(&x->raw, a);
}

/* A track of the VM's, described the first time; NULL when out of memory. */
static struct track *vm_track(struct ht_perfetto_export *x, uint64_t uuid, uint32_t pid, const char *name, int rank,
			      uint64_t ts)
{
	bool is_new;
	struct track *tr = pf_track_of(x, uuid, &is_new);

	if (tr && is_new)
		pf_describe_named(x, uuid, pf_track_uuid(TRACK_VM, pid, 0), name, rank, ts);
	return tr;
}

static void write_span(struct ht_perfetto_export *x, struct track *tr, uint64_t uuid, const struct ht_initcall_span *s,
		       const uint64_t *iid)
{
	const struct ht_initcall *c = s->call;
	char name[SHOWN_LABEL_SIZE], level[SHOWN_LABEL_SIZE];
	ht_pb_msg pkt, e;

	shown_label(name, s, false);
	e = pf_track_event_begin(x, tr, uuid, s->start_ns, c && !c->finished ? INSTANT : SLICE_BEGIN, &pkt);
	ht_pb_string(&x->raw, TE_NAME, name);
	if (c) {
		shown_label(level, s, true);
		initcall_arg(x, iid, IC_LEVEL, 0, 0, level);
		if (c->finished)
			initcall_arg(x, iid, IC_RET, DA_INT, c->ret, NULL);
		initcall_arg(x, iid, IC_GUEST_TID, DA_UINT, c->tid, NULL);
		initcall_arg(x, iid, IC_CPU, DA_UINT, c->cpu, NULL);
	} else {
		initcall_arg(x, iid, IC_INITCALLS, DA_UINT, (int64_t)s->level->initcalls, NULL);
		initcall_arg(x, iid, IC_GUEST_TID, DA_UINT, s->level->tid, NULL);
	}
	pf_track_event_end(x, e, pkt);
	if (!c || c->finished)
		pf_slice_end(x, tr, uuid, s->end_ns);
}

static void write_vm(struct ht_perfetto_export *x, const struct ht_initcall_view *v, const uint64_t *iid)
{
	struct track *lanes[HT_INITCALL_LANES], *levels = NULL;
	uint32_t pid = v->host_pid;

	/* Each track's descriptor at the first start of all: before its first event. */
	if (v->nlevels && !(levels = vm_track(x, pf_track_uuid(TRACK_INITCALL_LEVELS, pid, 0), pid, "initcall levels",
					      HT_INITCALL_RANK_LEVELS, v->levels[0].start_ns)))
		return;
	for (unsigned int l = 0; l < v->lanes; l++) {
		char name[32];

		if (l)
			snprintf(name, sizeof(name), "initcalls %u", l + 1);
		else
			snprintf(name, sizeof(name), "initcalls");
		if (!(lanes[l] = vm_track(x, pf_track_uuid(TRACK_INITCALLS, pid, l), pid, name, HT_INITCALL_RANK_LANE(l),
					  v->calls[0].start_ns)))
			return;
	}
	/* In start order: on its lane, each starts once the one before has ended. */
	for (size_t i = 0; i < v->nlevels; i++)
		write_span(x, levels, pf_track_uuid(TRACK_INITCALL_LEVELS, pid, 0), &v->levels[i], iid);
	for (size_t i = 0; i < v->ncalls; i++)
		write_span(x, lanes[v->calls[i].lane], pf_track_uuid(TRACK_INITCALLS, pid, v->calls[i].lane),
			   &v->calls[i], iid);
}

int pf_write_initcalls(struct ht_perfetto_export *x, char *err, size_t errlen)
{
	uint64_t iid[IC_ARGS];
	bool interned = false;
	int ret = 0;

	if (!x->traces)
		return 0;
	if (ht_guest_traces_finish(x->traces))
		return ht_errf(err, errlen, "out of memory");
	for (size_t i = 0; i < x->traces->n && !ret; i++) {
		struct ht_initcall_view v;
		int got = ht_initcall_view_build(ht_guest_traces_get(x->traces, i), &v, &x->counts.initcalls);

		if (got < 0)
			return ht_errf(err, errlen, "out of memory");
		if (!got)
			continue;
		/* Before any of the slices' packets opens (inside one they cannot be). */
		if (!interned) {
			for (int a = 0; a < IC_ARGS; a++)
				iid[a] = pf_intern(x, false, initcall_args[a]);
			interned = true;
		}
		write_vm(x, &v, iid);
		ht_initcall_view_free(&v);
		if (x->failed || x->raw.oom)
			ret = ht_errf(err, errlen, "out of memory");
		else if (x->raw.len >= BUNDLE_BYTES)
			ret = pf_flush_bundle(x, err, errlen);
	}
	return ret;
}
