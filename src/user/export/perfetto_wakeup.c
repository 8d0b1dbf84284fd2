// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert --perfetto, what delayed a vCPU's guest (record --wakeups;
 * perfetto_private.h): each wake-up of a halted vCPU thread a slice from
 * the sched_wakeup that ended its sleep to the kvm_entry that ran its
 * guest, on a track of the thread's own under its VM, named by the class
 * of its interrupt; each interrupt delivery a slice from its acceptance to
 * the kvm_entry that ran the guest with it, on the thread's interrupt
 * tracks, named by its class. The parts of each (waking, waiting, the
 * rest) are arguments: they add up to the slice, but only a halted
 * thread's come in that order (a running one's wait may fall anywhere).
 */
#include "export/perfetto_private.h"

#include "common/errf.h"
#include "common/latency_parts.h"
#include "common/wake_classes.h"

/* The slices' arguments: the parts of their time and what woke them. */
enum { LAT_WOKEN, LAT_WAIT, LAT_REST, LAT_VECTOR, LAT_TIMER_VECTOR, LAT_VCPU, LAT_CPU, LAT_DUE, LAT_ARGS };
static const char *const lat_args[] = { "woken_ns", "wait_ns", "rest_ns", "vector", "timer_vector", "vcpu_id", "cpu",
					"due_ns" };
_Static_assert(ARRAY_SIZE(lat_args) == LAT_ARGS, "lat_args and its enum disagree");

static void lat_arg(struct ht_perfetto_export *x, int which, uint64_t v)
{
	ht_pb_msg a = ht_pb_begin(&x->raw, TE_DEBUG);

	pf_arg_name(x, lat_args[which]);
	ht_pb_varint(&x->raw, DA_UINT, v);
	ht_pb_end(&x->raw, a);
}

/* The slice's name and arguments, interned before the packets that use them: inside one, a name would go whole. */
static void intern_latency_names(struct ht_perfetto_export *x, const char *name)
{
	pf_intern(x, true, name);
	for (int i = 0; i < LAT_ARGS; i++)
		pf_intern(x, false, lat_args[i]);
}

/* The slice's end: one that ends before it starts (a file's, not a recording's) is shown as an instant's length. */
static uint64_t slice_end(uint64_t start, uint64_t end)
{
	return end < start ? start : end;
}

static int bundle_done(struct ht_perfetto_export *x, char *err, size_t errlen)
{
	if (x->failed || x->raw.oom)
		return ht_errf(err, errlen, "out of memory");
	return x->raw.len >= BUNDLE_BYTES ? pf_flush_bundle(x, err, errlen) : 0;
}

int ht_perfetto_add_wakeup(struct ht_perfetto_export *x, const struct ht_vcpu_wakeup *w, struct ht_reader *reader,
			   char *err, size_t errlen)
{
	char cls_buf[24];
	const char *cls = ht_wake_class_name(w->wake_class, cls_buf, sizeof(cls_buf));
	uint64_t uuid, end = w->entry_ns;
	struct ht_latency_parts parts;
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
	intern_latency_names(x, cls);
	end = slice_end(w->wake_ns, end);
	e = pf_track_event_begin(x, t, uuid, w->wake_ns, SLICE_BEGIN, &pkt);
	pf_event_name(x, cls);
	parts = ht_latency_parts(w->wake_ns, end, 0, w->wait_ns);
	lat_arg(x, LAT_WAIT, parts.wait_ns);
	lat_arg(x, LAT_REST, parts.rest_ns);
	if (w->vector != HT_WAKE_VECTOR_NONE)
		lat_arg(x, LAT_VECTOR, w->vector);
	if (w->timer_vector != HT_WAKE_VECTOR_NONE)
		lat_arg(x, LAT_TIMER_VECTOR, w->timer_vector);
	lat_arg(x, LAT_VCPU, w->vcpu_id);
	lat_arg(x, LAT_CPU, w->cpu);
	/* Its timer's due time, as the file has it (report --latency's due_ns). */
	if (w->due_ns)
		lat_arg(x, LAT_DUE, w->due_ns);
	pf_track_event_end(x, e, pkt);
	pf_slice_end(x, t, uuid, end);
	return bundle_done(x, err, errlen);
}

/*
 * The first of the thread's interrupt lanes free at start: whose last event
 * is not after it (deliveries come in the order of their entries, and may
 * overlap: accepted while another waited). HT_PERFETTO_IRQ_LANES if none.
 */
static unsigned int free_irq_lane(struct ht_perfetto_export *x, uint32_t pid, uint32_t tid, uint64_t start)
{
	unsigned int k;

	for (k = 0; k < HT_PERFETTO_IRQ_LANES; k++) {
		uint64_t uuid = pf_track_uuid(TRACK_IRQS + k, pid, tid);
		const struct track *t = ht_id_pair_table_get(x->tracks, (uint32_t)(uuid >> 32), (uint32_t)uuid);

		if (!t || t->last_ts <= start)
			break;
	}
	return k;
}

int ht_perfetto_add_irq(struct ht_perfetto_export *x, const struct ht_vcpu_irq *d, struct ht_reader *reader,
			char *err, size_t errlen)
{
	char cls_buf[24], what[32];
	const char *cls = ht_irq_class_name(d->irq_class, cls_buf, sizeof(cls_buf));
	uint64_t uuid, end = slice_end(d->accept_ns, d->entry_ns);
	/* As report --latency has them: each part cut to what the whole leaves. */
	struct ht_latency_parts parts = ht_latency_parts(d->accept_ns, end, d->woken_ns, d->wait_ns);
	unsigned int lane = free_irq_lane(x, d->host_pid, d->host_tid, d->accept_ns);
	struct track *t;
	ht_pb_msg pkt, e;

	if (lane == HT_PERFETTO_IRQ_LANES) {
		x->counts.irqs_not_shown++;
		return 1;
	}
	if (lane)
		snprintf(what, sizeof(what), "interrupts %u", lane + 1);
	else
		snprintf(what, sizeof(what), "interrupts");
	t = pf_vcpu_lane(x, TRACK_IRQS + lane, what, d->host_pid, d->host_tid, d->vcpu_id, d->accept_ns, reader,
			 &uuid);
	if (!t)
		return ht_errf(err, errlen, "out of memory");
	intern_latency_names(x, cls);
	e = pf_track_event_begin(x, t, uuid, d->accept_ns, SLICE_BEGIN, &pkt);
	pf_event_name(x, cls);
	lat_arg(x, LAT_WOKEN, parts.woken_ns);
	lat_arg(x, LAT_WAIT, parts.wait_ns);
	lat_arg(x, LAT_REST, parts.rest_ns);
	lat_arg(x, LAT_VECTOR, d->vector);
	lat_arg(x, LAT_VCPU, d->vcpu_id);
	lat_arg(x, LAT_CPU, d->cpu);
	/* A timer's due time, as the file has it (report --latency's due_ns). */
	if (d->due_ns)
		lat_arg(x, LAT_DUE, d->due_ns);
	pf_track_event_end(x, e, pkt);
	pf_slice_end(x, t, uuid, end);
	return bundle_done(x, err, errlen);
}
