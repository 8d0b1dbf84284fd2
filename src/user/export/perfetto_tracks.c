// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert --perfetto, its tracks (perfetto_private.h): their uuids and
 * state, their descriptors (a process, a thread, a named track; a VM's
 * process and a vCPU thread, described at their first use), and the events
 * on a track, each at its time or, when the track has a later one, at that.
 */
#include "export/perfetto_private.h"

#include <stdio.h>
#include <stdlib.h>

/* ---- tracks ---- */

uint64_t pf_track_uuid(enum track_kind kind, uint32_t a, uint32_t b)
{
	return (uint64_t)kind << 56 | ((uint64_t)(a & 0xffffff) << 32) | b;
}

/* The track's state if described already, else NULL (then describe it). */
struct track *pf_track_of(struct ht_perfetto_export *x, uint64_t uuid, bool *new_track)
{
	struct track *t = ht_id_pair_table_get(x->tracks, (uint32_t)(uuid >> 32), (uint32_t)uuid);

	*new_track = false;
	if (t)
		return t;
	t = calloc(1, sizeof(*t));
	if (!t || ht_id_pair_table_put(x->tracks, (uint32_t)(uuid >> 32), (uint32_t)uuid, t)) {
		free(t);
		x->failed = true;
		return NULL;
	}
	*new_track = true;
	return t;
}

/*
 * A descriptor's packet: its time (before its first event, as Perfetto's
 * docs ask) on the sequence whose defaults say the clock (CLOCK_MONOTONIC).
 */
ht_pb_msg pf_descriptor_begin(struct ht_perfetto_export *x, uint64_t uuid, uint64_t ts, ht_pb_msg *pkt)
{
	*pkt = pf_packet_begin(x);
	ht_pb_varint(&x->raw, PKT_TIMESTAMP, ts);
	ht_pb_varint(&x->raw, PKT_SEQ_ID, SEQUENCE_ID);
	ht_pb_msg d = ht_pb_begin(&x->raw, PKT_TRACK_DESCRIPTOR);
	ht_pb_varint(&x->raw, TD_UUID, uuid);
	return d;
}

/*
 * A process track. Its named child tracks (off-CPU tracks, guest CPU event
 * tracks) are shown in the order of their sibling rank: the trace processor
 * keeps the rank but lets it order the children only when the parent asks
 * for explicit order (track_event_tokenizer.cc:146, child_ordering).
 */
void pf_describe_process(struct ht_perfetto_export *x, uint64_t uuid, int32_t pid, const char *name, uint64_t ts)
{
	ht_pb_msg p, d = pf_descriptor_begin(x, uuid, ts, &p);
	ht_pb_varint(&x->raw, TD_CHILD_ORDERING, CHILD_ORDERING_EXPLICIT);
	ht_pb_msg pd = ht_pb_begin(&x->raw, TD_PROCESS);
	ht_pb_int(&x->raw, PD_PID, pid);
	ht_pb_string(&x->raw, PD_NAME, name);
	ht_pb_end(&x->raw, pd);
	ht_pb_end(&x->raw, d);
	pf_packet_end(x, p);
}

/*
 * A thread track, ranked among its process's threads (the root track asks
 * for explicit thread order); with ranked_children, its child tracks (a vCPU
 * thread's account) show in the order of their rank too.
 */
void pf_describe_thread(struct ht_perfetto_export *x, uint64_t uuid, int32_t pid, int64_t tid, const char *name,
			int32_t rank, bool ranked_children, uint64_t ts)
{
	ht_pb_msg p, d = pf_descriptor_begin(x, uuid, ts, &p);
	if (ranked_children)
		ht_pb_varint(&x->raw, TD_CHILD_ORDERING, CHILD_ORDERING_EXPLICIT);
	ht_pb_int(&x->raw, TD_SIBLING_RANK, rank);
	ht_pb_msg td = ht_pb_begin(&x->raw, TD_THREAD);
	ht_pb_int(&x->raw, THD_PID, pid);
	ht_pb_int(&x->raw, THD_TID, tid);
	ht_pb_string(&x->raw, THD_NAME, name);
	ht_pb_end(&x->raw, td);
	ht_pb_end(&x->raw, d);
	pf_packet_end(x, p);
}

/* A named track under parent (0: a top-level track), ranked among its siblings. */
void pf_describe_named(struct ht_perfetto_export *x, uint64_t uuid, uint64_t parent, const char *name,
		       int32_t rank, uint64_t ts)
{
	ht_pb_msg p, d = pf_descriptor_begin(x, uuid, ts, &p);
	if (parent)
		ht_pb_varint(&x->raw, TD_PARENT, parent);
	else
		ht_pb_varint(&x->raw, TD_CHILD_ORDERING, CHILD_ORDERING_EXPLICIT);
	ht_pb_string(&x->raw, TD_NAME, name);
	ht_pb_int(&x->raw, TD_SIBLING_RANK, rank);
	ht_pb_end(&x->raw, d);
	pf_packet_end(x, p);
}


/* The VM's name as its owner chose it (escaped), else its pid. */
void pf_vm_label(char *out, size_t len, struct ht_reader *reader, uint32_t pid)
{
	const char *name = reader ? ht_reader_vm_name(reader, pid) : NULL;
	char esc[HT_ESC_SIZE(64)];

	shown(esc, sizeof(esc), name ? name : "");
	if (esc[0])
		snprintf(out, len, "VM %s (pid %u)", esc, pid);
	else
		snprintf(out, len, "VM process %u", pid);
}

/* A VM process's track, described the first time (at ts); its uuid, 0 when out of memory. */
uint64_t pf_vm_track(struct ht_perfetto_export *x, uint32_t pid, struct ht_reader *reader, uint64_t ts)
{
	uint64_t vm_uuid = pf_track_uuid(TRACK_VM, pid, 0);
	char name[VM_LABEL_SIZE];
	bool is_new;

	if (!pf_track_of(x, vm_uuid, &is_new))
		return 0;
	if (is_new) {
		pf_vm_label(name, sizeof(name), reader, pid);
		pf_describe_process(x, vm_uuid, (int32_t)pid, name, ts);
	}
	return vm_uuid;
}

/*
 * The vCPU thread's track (and its VM's), described at its first record or
 * its first account, whichever comes first; its child tracks (the
 * account's group) in the order of their rank.
 */
struct track *pf_vcpu_thread_track(struct ht_perfetto_export *x, uint32_t pid, uint32_t tid, uint16_t vcpu,
				   uint64_t ts, struct ht_reader *reader)
{
	uint64_t uuid = pf_track_uuid(TRACK_VCPU, pid, tid);
	const struct ht_identity *id = reader ? ht_reader_identity(reader, pid, tid) : NULL;
	char name[VM_LABEL_SIZE], thread[HT_ESC_SIZE(16)];
	bool is_new;
	struct track *t;

	if (!pf_vm_track(x, pid, reader, ts))
		return NULL;
	t = pf_track_of(x, uuid, &is_new);
	if (t && is_new) {
		shown(thread, sizeof(thread), id ? id->thread_name : "");
		if (thread[0])
			snprintf(name, sizeof(name), "vCPU %u: %s", vcpu, thread);
		else
			snprintf(name, sizeof(name), "vCPU %u (tid %u)", vcpu, tid);
		pf_describe_thread(x, uuid, (int32_t)pid, tid, name, vcpu, true, ts);
	}
	return t;
}

/* ---- events ---- */

/* An event's time on its track, raised (and counted) if the track has a later one. */
static uint64_t on_track(struct ht_perfetto_export *x, struct track *t, uint64_t ts)
{
	if (ts < t->last_ts) {
		ts = t->last_ts;
		x->counts.reordered++;
	}
	t->last_ts = ts;
	return ts;
}

ht_pb_msg pf_track_event_begin(struct ht_perfetto_export *x, struct track *t, uint64_t uuid, uint64_t ts, int type,
			       ht_pb_msg *pkt)
{
	*pkt = pf_packet_begin(x);
	ht_pb_varint(&x->raw, PKT_TIMESTAMP, on_track(x, t, ts));
	pf_sequence_fields(x);
	ht_pb_msg e = ht_pb_begin(&x->raw, PKT_TRACK_EVENT);
	ht_pb_varint(&x->raw, TE_TYPE, (uint64_t)type);
	ht_pb_varint(&x->raw, TE_TRACK, uuid);
	return e;
}

void pf_track_event_end(struct ht_perfetto_export *x, ht_pb_msg e, ht_pb_msg pkt)
{
	ht_pb_end(&x->raw, e);
	pf_packet_end(x, pkt);
}

void pf_slice_end(struct ht_perfetto_export *x, struct track *t, uint64_t uuid, uint64_t ts)
{
	ht_pb_msg pkt, e = pf_track_event_begin(x, t, uuid, ts, SLICE_END, &pkt);
	pf_track_event_end(x, e, pkt);
}

struct track *pf_vcpu_lane(struct ht_perfetto_export *x, enum track_kind kind, const char *what, uint32_t pid,
			   uint32_t tid, uint16_t vcpu, uint64_t ts, struct ht_reader *reader, uint64_t *uuid)
{
	const struct ht_identity *id = reader ? ht_reader_identity(reader, pid, tid) : NULL;
	char name[HT_ESC_SIZE(16) + 96], thread[HT_ESC_SIZE(16)];
	uint64_t parent = pf_vm_track(x, pid, reader, ts);
	struct track *t;
	bool is_new;

	if (!parent)
		return NULL;
	*uuid = pf_track_uuid(kind, pid, tid);
	t = pf_track_of(x, *uuid, &is_new);
	if (t && is_new) {
		shown(thread, sizeof(thread), id ? id->thread_name : "");
		snprintf(name, sizeof(name), "vCPU %u %s: %s%s(tid %u)", vcpu, what, thread, thread[0] ? " " : "", tid);
		pf_describe_named(x, *uuid, parent, name, vcpu, ts);
	}
	return t;
}
