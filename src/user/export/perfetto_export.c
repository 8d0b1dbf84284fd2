// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert --perfetto (perfetto_private.h): the export itself, opened,
 * fed each record (the host's slices of its hypercall, after its guest
 * side), closed and abandoned; the names of the records' and the switches'
 * arguments.
 */
#include "export/perfetto_export.h"
#include "export/perfetto_private.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "boot/boot_timeline.h"
#include "common/errf.h"
#include "common/hashmap.h"
#include "common/util.h"
#include "export/guest_state.h"
#include "export/protobuf.h"
#include "export/id_pair_table.h"
#include "export/switch_chain.h"
#include "hypertrace/guest.h"
#include "tracefile/output_file.h"

static const char *const record_args[] = { "nr", "a0", "a1", "a2", "a3", "guest_rip", "exit_reason", "isa",
					   "vcpu_id", "exit_cpu", "entry_cpu", "flags", "fields" };
_Static_assert(ARRAY_SIZE(record_args) == ARG_COUNT, "record_args and its enum disagree");

const char *const pf_switch_args[] = { "cpu",      "prev_state", "next_tid", "next_pid", "next_comm",
					   "in_cpu",   "prev_tid",   "prev_pid", "prev_comm" };
_Static_assert(ARRAY_SIZE(pf_switch_args) == SW_COUNT, "switch_args and its enum disagree");

/* One of the record's arguments, by its interned name (record_args[which]). */
static void arg(struct ht_perfetto_export *x, int which, enum arg_kind kind, uint64_t v, const char *s)
{
	ht_pb_msg a = ht_pb_begin(&x->raw, TE_DEBUG);

	if (x->arg_iid[which])
		ht_pb_varint(&x->raw, DA_NAME_IID, x->arg_iid[which]);
	else
		ht_pb_string(&x->raw, DA_NAME, record_args[which]);
	if (kind == ARG_STRING)
		ht_pb_string(&x->raw, DA_STRING, s);
	else
		ht_pb_varint(&x->raw, kind == ARG_HEX ? DA_POINTER : kind == ARG_INT ? DA_INT : DA_UINT, v);
	ht_pb_end(&x->raw, a);
}

static struct track *vcpu_track(struct ht_perfetto_export *x, const struct ht_record *r, struct ht_reader *reader)
{
	return pf_vcpu_thread_track(x, r->host_pid, r->host_tid, r->vcpu_id, r->exit_ns, reader);
}

/* The host's view: the hypercall and its two phases on the vCPU thread's track. */
static void host_slices(struct ht_perfetto_export *x, struct track *t, const struct ht_record *r,
			const struct ht_event_desc *ev, const char *name, uint64_t flow)
{
	uint64_t uuid = pf_track_uuid(TRACK_VCPU, r->host_pid, r->host_tid);
	uint64_t hcall = r->exit_ns + r->exit_to_hcall_ns, entry = hcall + r->hcall_to_entry_ns;
	uint64_t iid;
	ht_pb_msg pkt, e;

	/* "hypercall NR" names repeat: the last one's iid is kept. */
	if (!ev && x->last_nr_iid && x->last_nr == r->nr) {
		iid = x->last_nr_iid;
	} else {
		iid = pf_intern(x, true, name);
		if (!ev) {
			x->last_nr = r->nr;
			x->last_nr_iid = iid;
		}
	}
	pf_prepare_field_names(x, ev);
	e = pf_track_event_begin(x, t, uuid, r->exit_ns, SLICE_BEGIN, &pkt);
	if (iid)
		ht_pb_varint(&x->raw, TE_NAME_IID, iid);
	else
		ht_pb_string(&x->raw, TE_NAME, name);
	arg(x, ARG_NR, ARG_UINT, r->nr, NULL);
	arg(x, ARG_A0, ARG_HEX, r->a0, NULL);
	arg(x, ARG_A1, ARG_HEX, r->a1, NULL);
	arg(x, ARG_A2, ARG_HEX, r->a2, NULL);
	arg(x, ARG_A3, ARG_HEX, r->a3, NULL);
	arg(x, ARG_RIP, ARG_HEX, r->guest_rip, NULL);
	arg(x, ARG_REASON, ARG_HEX, r->exit_reason, NULL);
	arg(x, ARG_ISA, ARG_STRING, 0, r->isa == HT_ISA_VMX ? "VMX" : r->isa == HT_ISA_SVM ? "SVM" : "?");
	arg(x, ARG_VCPU, ARG_UINT, r->vcpu_id, NULL);
	arg(x, ARG_EXIT_CPU, ARG_UINT, r->exit_cpu, NULL);
	arg(x, ARG_ENTRY_CPU, ARG_UINT, r->entry_cpu, NULL);
	arg(x, ARG_FLAGS, ARG_UINT, r->flags, NULL);
	if (ev)
		pf_decoded_fields(x, ev, r);
	if (flow)
		ht_pb_fixed64(&x->raw, TE_TERM_FLOW, flow);
	pf_track_event_end(x, e, pkt);
	e = pf_track_event_begin(x, t, uuid, r->exit_ns, SLICE_BEGIN, &pkt);
	ht_pb_varint(&x->raw, TE_NAME_IID, x->phase_iid[0]);
	pf_track_event_end(x, e, pkt);
	pf_slice_end(x, t, uuid, hcall);
	e = pf_track_event_begin(x, t, uuid, hcall, SLICE_BEGIN, &pkt);
	ht_pb_varint(&x->raw, TE_NAME_IID, x->phase_iid[1]);
	pf_track_event_end(x, e, pkt);
	pf_slice_end(x, t, uuid, entry);
	pf_slice_end(x, t, uuid, entry);
}

/* ---- the export ---- */

int ht_perfetto_open(const char *path, bool force, mode_t mode, const struct ht_file_header *h,
		     const struct ht_decoder *dec, struct ht_perfetto_export **out, char *err, size_t errlen)
{
	const struct ht_output_spec spec = { .cmd = "convert", .opt = "--perfetto", .what = "a Perfetto trace",
					     .force = force };
	struct ht_perfetto_export *x = calloc(1, sizeof(*x));
	int ret;

	if (!x)
		return ht_errf(err, errlen, "out of memory");
	x->out.fd = x->out.dirfd = -1;
	ht_hashmap_init(&x->event_names, ht_hash_str, ht_equal_str, NULL);
	ht_hashmap_init(&x->arg_names, ht_hash_str, ht_equal_str, NULL);
	if (!(x->tracks = ht_id_pair_table_new()) || !(x->vms = ht_id_pair_table_new()) ||
	    !(x->gstate = ht_guest_state_new(dec)) || !(x->chain = ht_switch_chain_new())) {
		ht_perfetto_abandon(x);
		return ht_errf(err, errlen, "out of memory");
	}
	ret = ht_output_create(&x->out, path, &spec, err, errlen);
	if (!ret)
		ret = ht_output_set_access(&x->out, mode, (uid_t)-1, (gid_t)-1, err, errlen);
	if (ret) {
		ht_perfetto_abandon(x);
		return ret;
	}
	snprintf(x->path, sizeof(x->path), "%s", path);
	x->hdr = *h;
	x->dec = dec;
	pf_head_packets(x);
	/* The names every record uses, interned once (the tables are empty: they get iids). */
	for (size_t i = 0; i < ARRAY_SIZE(record_args); i++)
		x->arg_iid[i] = pf_intern(x, false, record_args[i]);
	x->phase_iid[0] = pf_intern(x, true, "exit->hypercall");
	x->phase_iid[1] = pf_intern(x, true, "hypercall->entry");
	*out = x;
	return 0;
}

int ht_perfetto_add(struct ht_perfetto_export *x, const struct ht_record *r, struct ht_reader *reader, char *err,
		    size_t errlen)
{
	const struct ht_event_desc *desc = ht_decoder_event(x->dec, r);
	struct ht_gev ev;
	struct track *t;
	uint64_t flow = 0;
	int64_t task_before;
	char name[SLICE_NAME_SIZE];

	/* A forged one decodes to nothing (ht_decoder_event): a "hypercall NR" slice, no guest side. */
	x->forged += ht_decoder_forged(x->dec, r);
	if (ht_guest_state_feed(x->gstate, r, &ev))
		return ht_errf(err, errlen, "out of memory");
	task_before = ev.kind == HT_GEV_SCHED_SWITCH ? (int64_t)ev.u.sw.prev_tid :
			ev.kind != HT_GEV_NONE ? ht_guest_cpu_task(x->gstate, r->host_pid, ev.cpu) : -1;
	t = vcpu_track(x, r, reader);
	if (!t)
		return ht_errf(err, errlen, "out of memory");
	/* The guest's event first: its flow goes from there to the host's slice. */
	if (ev.kind != HT_GEV_NONE)
		flow = pf_guest_side(x, r, reader, &ev, desc, task_before);
	if (ev.kind == HT_GEV_FUNC_ENTRY || ev.kind == HT_GEV_FUNC_EXIT) {
		char fn[FUNCTION_NAME_SIZE];

		pf_function_name(x, ev.u.func.addr, fn);
		snprintf(name, sizeof(name), "%s %s", desc->name, fn);
	} else if (desc) {
		snprintf(name, sizeof(name), "%s", desc->name);
	} else {
		snprintf(name, sizeof(name), "hypercall %u", r->nr);
	}
	host_slices(x, t, r, desc, name, flow);
	if (x->failed || x->raw.oom)
		return ht_errf(err, errlen, "out of memory");
	return x->raw.len >= BUNDLE_BYTES ? pf_flush_bundle(x, err, errlen) : 0;
}

int ht_perfetto_close(struct ht_perfetto_export *x, const struct ht_read_status *st, const char *source,
		      const char *selection, struct ht_perfetto_counts *counts, char *err, size_t errlen)
{
	int ret;

	ret = pf_write_boots(x, err, errlen);
	if (!ret)
		ret = pf_write_initcalls(x, err, errlen);
	if (!ret) {
		pf_identity(x, st, source, selection);
		ret = x->failed ? ht_errf(err, errlen, "out of memory") : pf_flush_bundle(x, err, errlen);
	}
	/* On disk before it has its name: a crash leaves the old file or the whole new one. */
	if (!ret && fsync(x->out.fd))
		ret = ht_errf(err, errlen, "cannot write %s: %s", x->path, strerror(errno));
	if (!ret)
		ret = ht_output_publish(&x->out, err, errlen);
	x->counts.lost_switches = ht_switch_chain_total(x->chain);
	if (counts)
		*counts = x->counts;
	ht_perfetto_abandon(x);
	return ret;
}

/* The interned names: the map owns its keys. */
static void free_interned(struct ht_hashmap *names)
{
	struct ht_hashmap_entry *cur;
	size_t bkt;

	ht_hashmap_for_each(names, cur, bkt)
		free((void *)cur->pkey);
	ht_hashmap_clear(names);
}

static void free_values(struct ht_id_pair_table *t)
{
	for (size_t i = 0; t && i < ht_id_pair_table_len(t); i++)
		free(ht_id_pair_table_at(t, i));
	ht_id_pair_table_free(t);
}

void ht_perfetto_abandon(struct ht_perfetto_export *x)
{
	if (!x)
		return;
	free_values(x->tracks);
	free_values(x->vms);
	free_interned(&x->event_names);
	free_interned(&x->arg_names);
	ht_guest_state_free(x->gstate);
	ht_switch_chain_free(x->chain);
	if (x->boots) {
		ht_boot_timelines_free(x->boots);
		free(x->boots);
	}
	pf_free_traces(x);
	ht_pb_free(&x->raw);
	free(x->zbuf);
	/* Unpublished: the unnamed file goes with its descriptor. */
	ht_output_release(&x->out);
	free(x);
}
