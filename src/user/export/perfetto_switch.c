// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert --perfetto, the host's switches of vCPU threads (record
 * --vcpu-sched; perfetto_private.h): each vCPU thread's time off its host
 * CPU as slices on a track of its own under its VM.
 */
#include "export/perfetto_private.h"

#include <string.h>
#include "common/errf.h"

static void intern_switch_names(struct ht_perfetto_export *x)
{
	if (x->switch_names)
		return;
	x->switch_names = true;
	x->off_iid[0] = pf_intern(x, true, "preempted");
	x->off_iid[1] = pf_intern(x, true, "blocked");
	for (size_t i = 0; i < SW_COUNT; i++)
		x->switch_arg_iid[i] = pf_intern(x, false, pf_switch_args[i]);
}

/* One of a switch's arguments, by its interned name (pf_switch_args[which]). */
static void switch_arg(struct ht_perfetto_export *x, int which, enum arg_kind kind, uint64_t v, const char *s)
{
	ht_pb_msg a = ht_pb_begin(&x->raw, TE_DEBUG);

	if (x->switch_arg_iid[which])
		ht_pb_varint(&x->raw, DA_NAME_IID, x->switch_arg_iid[which]);
	else
		ht_pb_string(&x->raw, DA_NAME, pf_switch_args[which]);
	if (kind == ARG_STRING)
		ht_pb_string(&x->raw, DA_STRING, s);
	else
		ht_pb_varint(&x->raw, kind == ARG_INT ? DA_INT : DA_UINT, v);
	ht_pb_end(&x->raw, a);
}

int ht_perfetto_add_switch(struct ht_perfetto_export *x, const struct ht_vcpu_switch *sw, struct ht_reader *reader,
			   char *err, size_t errlen)
{
	char comm[sizeof(sw->other_comm) + 1], esc[HT_ESC_SIZE(sizeof(sw->other_comm))];
	uint64_t uuid;
	struct track *t;
	ht_pb_msg pkt, e;

	if (sw->kind != HT_SWITCH_OUT && sw->kind != HT_SWITCH_IN)
		return 1; /* a kind this version does not know: nothing to show */
	intern_switch_names(x);
	/*
	 * On a track of its own: a switch can come in the middle of a hypercall
	 * (preempted between kvm_exit and kvm_entry), and the records come in
	 * kvm_entry order, after the switches inside them: on the thread's own
	 * track the slices would go back in time.
	 */
	t = pf_vcpu_lane(x, TRACK_OFF_CPU, "off its host CPU", sw->host_pid, sw->host_tid, sw->vcpu_id, sw->time_ns,
			 reader, &uuid);
	if (!t)
		return ht_errf(err, errlen, "out of memory");
	/* The kernel's comm: NUL-padded, not terminated when 16 long; a name another process chose. */
	memcpy(comm, sw->other_comm, sizeof(sw->other_comm));
	comm[sizeof(sw->other_comm)] = '\0';
	shown(esc, sizeof(esc), comm);
	if (sw->kind == HT_SWITCH_OUT) {
		/* Two switch-outs in a row: the switch-in between was lost (counted): the first ends here. */
		if (t->open)
			pf_slice_end(x, t, uuid, sw->time_ns);
		e = pf_track_event_begin(x, t, uuid, sw->time_ns, SLICE_BEGIN, &pkt);
		if (x->off_iid[!sw->involuntary])
			ht_pb_varint(&x->raw, TE_NAME_IID, x->off_iid[!sw->involuntary]);
		else
			ht_pb_string(&x->raw, TE_NAME, sw->involuntary ? "preempted" : "blocked");
		switch_arg(x, SW_CPU, ARG_UINT, sw->cpu, NULL);
		switch_arg(x, SW_PREV_STATE, ARG_UINT, sw->prev_state, NULL);
		switch_arg(x, SW_NEXT_TID, ARG_UINT, sw->other_tid, NULL);
		switch_arg(x, SW_NEXT_PID, ARG_UINT, sw->other_pid, NULL);
		switch_arg(x, SW_NEXT_COMM, ARG_STRING, 0, esc);
		pf_track_event_end(x, e, pkt);
		t->open = true;
	} else if (t->open) {
		/* The end's arguments join the slice's: the thread it replaced on its way back. */
		e = pf_track_event_begin(x, t, uuid, sw->time_ns, SLICE_END, &pkt);
		switch_arg(x, SW_IN_CPU, ARG_UINT, sw->cpu, NULL);
		switch_arg(x, SW_PREV_TID, ARG_UINT, sw->other_tid, NULL);
		switch_arg(x, SW_PREV_PID, ARG_UINT, sw->other_pid, NULL);
		switch_arg(x, SW_PREV_COMM, ARG_STRING, 0, esc);
		pf_track_event_end(x, e, pkt);
		t->open = false;
	}
	/* A switch-in without its switch-out (off its CPU when the recording started) makes no slice. */
	if (x->failed || x->raw.oom)
		return ht_errf(err, errlen, "out of memory");
	return x->raw.len >= BUNDLE_BYTES ? pf_flush_bundle(x, err, errlen) : 0;
}
