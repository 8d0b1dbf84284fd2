// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert --perfetto, the vCPU account (record --exits; perfetto_private.h):
 * each vCPU thread's time per state as counter tracks under its thread.
 */
#include "export/perfetto_private.h"

#include <stdio.h>
#include <string.h>
#include "common/errf.h"

/*
 * A vCPU thread's account as six counter tracks, one per state ("vCPU
 * time: guest", ...): each state's seconds since the thread was first
 * seen, sampled at each EXITS block that holds the thread (the account's
 * as_of_ns), from 0 at the thread's start. Cumulative values sampled where
 * they were read draw every interval in its place: Perfetto's counter
 * track in its "rate" mode shows (next - this) / (next time - this time)
 * over [this, next), the state's share of exactly that interval, and in its
 * "value" mode the running total; a share written at the interval's end
 * would be drawn one interval late. Seconds, so that the rate reads as a
 * share (1 = all the time); the six share one y axis (y_axis_share_key).
 *
 * They are the children of a track "vCPU time" under the thread's track.
 * The trace processor resolves a track without a thread of its own under a
 * thread's track to that thread (track_event_tracker.cc:372-377) and makes
 * a counter track in that scope the thread's (thread_counter_track_event,
 * track_event_tracker.cc:484-500), a child in the track table when its
 * parent is not the thread's own track. Children are shown in the order
 * their parent asks for (viz/summary/track_event.sql: by rank when
 * explicit), the thread's own tracks by name: the group keeps the six in
 * the account's order, guest first, and folds them in the UI.
 */

static struct track *account_tracks(struct ht_perfetto_export *x, const struct ht_vcpu_wait_rec *row,
				    struct ht_reader *reader, struct track *tracks[HT_VCPU_NSTATES])
{
	uint64_t group = pf_track_uuid(TRACK_ACCOUNT_GROUP, row->w.pid, row->w.tid);
	char name[64];
	bool is_new;
	ht_pb_msg p, d, c;

	if (!pf_vcpu_thread_track(x, row->w.pid, row->w.tid, row->w.vcpu, row->a.start_ns, reader) ||
	    !pf_track_of(x, group, &is_new))
		return NULL;
	if (is_new) {
		d = pf_descriptor_begin(x, group, row->a.start_ns, &p);
		ht_pb_varint(&x->raw, TD_PARENT, pf_track_uuid(TRACK_VCPU, row->w.pid, row->w.tid));
		ht_pb_varint(&x->raw, TD_CHILD_ORDERING, CHILD_ORDERING_EXPLICIT);
		ht_pb_string(&x->raw, TD_NAME, "vCPU time");
		ht_pb_end(&x->raw, d);
		pf_packet_end(x, p);
	}
	for (int k = 0; k < HT_VCPU_NSTATES; k++) {
		uint64_t uuid = pf_track_uuid(TRACK_ACCOUNT + k, row->w.pid, row->w.tid);

		if (!(tracks[k] = pf_track_of(x, uuid, &is_new)))
			return NULL;
		if (!is_new)
			continue;
		snprintf(name, sizeof(name), "vCPU time: %s", ht_vcpu_state_names[k]);
		d = pf_descriptor_begin(x, uuid, row->a.start_ns, &p);
		ht_pb_varint(&x->raw, TD_PARENT, group);
		ht_pb_string(&x->raw, TD_NAME, name);
		ht_pb_int(&x->raw, TD_SIBLING_RANK, k);
		c = ht_pb_begin(&x->raw, TD_COUNTER);
		ht_pb_string(&x->raw, CD_UNIT_NAME, "s");
		ht_pb_string(&x->raw, CD_Y_AXIS_SHARE_KEY, "vcpu-time");
		ht_pb_end(&x->raw, c);
		ht_pb_end(&x->raw, d);
		pf_packet_end(x, p);
		/* A new track: its thread's start is not sampled yet. */
		tracks[k]->start_ns = UINT64_MAX;
	}
	return tracks[0];
}

/*
 * One sample: the state's seconds at ts, the nearest double to ns / 1e9:
 * the ns read back exactly while the doubles are closer than 1 ns (below
 * 2^22 s, 48 days of a thread).
 */
static void account_sample(struct ht_perfetto_export *x, struct track *t, uint64_t uuid, uint64_t ts, uint64_t ns)
{
	double seconds = (double)ns / 1e9;
	uint64_t bits;
	ht_pb_msg pkt, e = pf_track_event_begin(x, t, uuid, ts, COUNTER, &pkt);

	memcpy(&bits, &seconds, sizeof(bits));
	ht_pb_fixed64(&x->raw, TE_COUNTER_DOUBLE, bits);
	pf_track_event_end(x, e, pkt);
}

int ht_perfetto_add_account(struct ht_perfetto_export *x, const struct ht_vcpu_wait_rec *row,
			    struct ht_reader *reader, char *err, size_t errlen)
{
	struct track *tracks[HT_VCPU_NSTATES];
	struct track *first;

	/* A file before version 5 has no account (its rows are widened with zeros); a crafted one may not add up. */
	if (x->hdr.version < 5 || !row->a.start_ns || row->a.as_of_ns < row->a.start_ns)
		return 1;
	if (!(first = account_tracks(x, row, reader, tracks)))
		return ht_errf(err, errlen, "out of memory");
	/* The thread's start, where every state is 0: once per thread (a tid given again is a new start). */
	if (first->start_ns != row->a.start_ns) {
		for (int k = 0; k < HT_VCPU_NSTATES; k++)
			account_sample(x, tracks[k], pf_track_uuid(TRACK_ACCOUNT + k, row->w.pid, row->w.tid),
				       row->a.start_ns, 0);
		first->start_ns = row->a.start_ns;
	}
	if (row->a.as_of_ns > row->a.start_ns)
		for (int k = 0; k < HT_VCPU_NSTATES; k++)
			account_sample(x, tracks[k], pf_track_uuid(TRACK_ACCOUNT + k, row->w.pid, row->w.tid),
				       row->a.as_of_ns, row->a.state_ns[k]);
	if (x->failed || x->raw.oom)
		return ht_errf(err, errlen, "out of memory");
	return x->raw.len >= BUNDLE_BYTES ? pf_flush_bundle(x, err, errlen) : 0;
}
