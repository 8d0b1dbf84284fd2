// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert --perfetto, the wake-ups of halted vCPU threads (record --wakeups;
 * perfetto_private.h): each one a slice from the sched_wakeup that ended
 * its sleep to the kvm_entry that ran its guest, on a track of the thread's
 * own under its VM, named by the class of its interrupt.
 */
#include "export/perfetto_private.h"

#include "common/errf.h"
#include "common/wake_classes.h"

/* The slice's arguments: the parts of its time and what woke it. */
enum { WAKE_WAIT, WAKE_REST, WAKE_VECTOR, WAKE_TIMER_VECTOR, WAKE_VCPU, WAKE_CPU, WAKE_ARGS };
static const char *const wake_args[] = { "wait_ns", "rest_ns", "vector", "timer_vector", "vcpu_id", "cpu" };
_Static_assert(ARRAY_SIZE(wake_args) == WAKE_ARGS, "wake_args and its enum disagree");

static void wake_arg(struct ht_perfetto_export *x, int which, uint64_t v)
{
	ht_pb_msg a = ht_pb_begin(&x->raw, TE_DEBUG);

	pf_arg_name(x, wake_args[which]);
	ht_pb_varint(&x->raw, DA_UINT, v);
	ht_pb_end(&x->raw, a);
}

int ht_perfetto_add_wakeup(struct ht_perfetto_export *x, const struct ht_vcpu_wakeup *w, struct ht_reader *reader,
			   char *err, size_t errlen)
{
	char cls_buf[24];
	const char *cls = ht_wake_class_name(w->wake_class, cls_buf, sizeof(cls_buf));
	uint64_t uuid, end = w->entry_ns;
	struct track *t;
	ht_pb_msg pkt, e;

	/*
	 * On a track of its own: a wake-up ends at the entry that the thread's
	 * hypercall slices may start right after, and it overlaps the thread's
	 * off-CPU slices (its wait).
	 */
	t = pf_vcpu_lane(x, TRACK_WAKEUPS, "wake-ups from halts", w->host_pid, w->host_tid, w->vcpu_id, w->wake_ns,
			 reader, &uuid);
	if (!t)
		return ht_errf(err, errlen, "out of memory");
	/* Interned before the packets that use them: inside one, a name would go whole. */
	pf_intern(x, true, cls);
	for (int i = 0; i < WAKE_ARGS; i++)
		pf_intern(x, false, wake_args[i]);
	/* A file's wake-up that ends before it starts (not a recording's) is shown as an instant's length. */
	if (end < w->wake_ns)
		end = w->wake_ns;
	e = pf_track_event_begin(x, t, uuid, w->wake_ns, SLICE_BEGIN, &pkt);
	pf_event_name(x, cls);
	wake_arg(x, WAKE_WAIT, w->wait_ns);
	wake_arg(x, WAKE_REST, end - w->wake_ns >= w->wait_ns ? end - w->wake_ns - w->wait_ns : 0);
	if (w->vector != HT_WAKE_VECTOR_NONE)
		wake_arg(x, WAKE_VECTOR, w->vector);
	if (w->timer_vector != HT_WAKE_VECTOR_NONE)
		wake_arg(x, WAKE_TIMER_VECTOR, w->timer_vector);
	wake_arg(x, WAKE_VCPU, w->vcpu_id);
	wake_arg(x, WAKE_CPU, w->cpu);
	pf_track_event_end(x, e, pkt);
	pf_slice_end(x, t, uuid, end);
	if (x->failed || x->raw.oom)
		return ht_errf(err, errlen, "out of memory");
	return x->raw.len >= BUNDLE_BYTES ? pf_flush_bundle(x, err, errlen) : 0;
}
