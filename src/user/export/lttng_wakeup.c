// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert --lttng, the wake-ups of halted vCPU threads and the interrupts
 * delivered to vCPU threads (record --wakeups; lttng_private.h): each one
 * an event of the host trace at the kvm_entry that ended it, on that
 * entry's CPU, in the vCPU thread's context (it runs there then: the CPU's
 * thread as the trace tells it stays right), with its start, length and
 * parts as fields, as lttng-modules' sched_stat_* events carry a delay. At
 * the sched_wakeup itself the thread was asleep and the waker is not
 * recorded (nor is an interrupt's sender): an event there would name the
 * wrong thread as running on that CPU.
 */
#include "export/lttng_private.h"

#include <stdio.h>
#include "common/errf.h"
#include "common/latency_parts.h"
#include "common/wake_classes.h"

/*
 * The wake-up's fields: its start on the trace's clock, its length, its wait for a CPU and the rest, what woke it,
 * and its timer's due time on the trace's clock (0: none).
 */
static const char wakeup_fields[] = "\t\t" HT_TSDL_U32 " _vcpu_id;\n\t\t" HT_TSDL_U64 " _wake_ts;\n\t\t" HT_TSDL_U64
				    " _latency;\n\t\t" HT_TSDL_U64 " _wait;\n\t\t" HT_TSDL_U64 " _rest;\n\t\t" HT_TSDL_S32
				    " _vector;\n\t\t" HT_TSDL_S32 " _timer_vector;\n\t\t" HT_TSDL_U64 " _due_ts;\n\t\t"
				    HT_TSDL_STRING " _class;\n";

/*
 * The delivery's fields: its acceptance on the trace's clock, its length, its parts, its vector, a timer's due time
 * on the trace's clock (0: none, or not known) and its class.
 */
static const char irq_fields[] = "\t\t" HT_TSDL_U32 " _vcpu_id;\n\t\t" HT_TSDL_U64 " _accept_ts;\n\t\t" HT_TSDL_U64
				 " _latency;\n\t\t" HT_TSDL_U64 " _woken;\n\t\t" HT_TSDL_U64 " _wait;\n\t\t" HT_TSDL_U64
				 " _rest;\n\t\t" HT_TSDL_U32 " _vector;\n\t\t" HT_TSDL_U64 " _due_ts;\n\t\t" HT_TSDL_STRING
				 " _class;\n";

/* A vector as a field: -1 for none (HT_WAKE_VECTOR_NONE), never a number that could be read as one. */
static uint32_t vector_field(uint32_t v)
{
	return v == HT_WAKE_VECTOR_NONE ? (uint32_t)-1 : v;
}

int ht_lttng_add_wakeup(struct ht_lttng_export *x, const struct ht_vcpu_wakeup *w, struct ht_reader *reader,
			char *err, size_t errlen)
{
	struct ht_lttng_ctx ctx = { .pid = (int32_t)w->host_pid, .tid = (int32_t)w->host_tid };
	const char *procname = lt_host_procname(x, w->host_pid, w->host_tid, reader);
	/* As report --latency has them; a file's wake-up that ends before it starts is an instant's length. */
	struct ht_latency_parts parts = ht_latency_parts(w->wake_ns, w->entry_ns, 0, w->wait_ns);
	struct payload p = { .len = 0 };
	char cls[24];

	if (!procname)
		return ht_errf(err, errlen, "out of memory");
	snprintf(ctx.procname, sizeof(ctx.procname), "%s", procname);
	if (x->hcls.wakeup < 0 && (x->hcls.wakeup = ht_lttng_trace_add_class(x->host, "hypertrace_vcpu_wakeup",
									     wakeup_fields)) < 0)
		return ht_errf(err, errlen, "out of memory");
	lt_put_u32(&p, w->vcpu_id);
	lt_put_u64(&p, w->wake_ns);
	lt_put_u64(&p, parts.total_ns);
	lt_put_u64(&p, parts.wait_ns);
	lt_put_u64(&p, parts.rest_ns);
	lt_put_u32(&p, vector_field(w->vector));
	lt_put_u32(&p, vector_field(w->timer_vector));
	lt_put_u64(&p, w->due_ns);
	lt_put_string(&p, ht_wake_class_name(w->wake_class, cls, sizeof(cls)));
	if (lt_push(x, x->host, w->cpu, w->entry_ns, x->hcls.wakeup, &ctx, &p))
		return ht_errf(err, errlen, "out of memory");
	/* Wake-ups come in their entries' time order among the records' entries. */
	return lt_release_after(x, w->entry_ns, err, errlen);
}

int ht_lttng_add_irq(struct ht_lttng_export *x, const struct ht_vcpu_irq *d, struct ht_reader *reader, char *err,
		     size_t errlen)
{
	struct ht_lttng_ctx ctx = { .pid = (int32_t)d->host_pid, .tid = (int32_t)d->host_tid };
	const char *procname = lt_host_procname(x, d->host_pid, d->host_tid, reader);
	/* As report --latency has them: each part cut to what the whole leaves. */
	struct ht_latency_parts parts = ht_latency_parts(d->accept_ns, d->entry_ns, d->woken_ns, d->wait_ns);
	struct payload p = { .len = 0 };
	char cls[24];

	if (!procname)
		return ht_errf(err, errlen, "out of memory");
	snprintf(ctx.procname, sizeof(ctx.procname), "%s", procname);
	if (x->hcls.irq < 0 && (x->hcls.irq = ht_lttng_trace_add_class(x->host, "hypertrace_vcpu_irq", irq_fields)) < 0)
		return ht_errf(err, errlen, "out of memory");
	lt_put_u32(&p, d->vcpu_id);
	lt_put_u64(&p, d->accept_ns);
	lt_put_u64(&p, parts.total_ns);
	lt_put_u64(&p, parts.woken_ns);
	lt_put_u64(&p, parts.wait_ns);
	lt_put_u64(&p, parts.rest_ns);
	lt_put_u32(&p, d->vector);
	lt_put_u64(&p, d->due_ns);
	lt_put_string(&p, ht_irq_class_name(d->irq_class, cls, sizeof(cls)));
	if (lt_push(x, x->host, d->cpu, d->entry_ns, x->hcls.irq, &ctx, &p))
		return ht_errf(err, errlen, "out of memory");
	/* Deliveries come in their entries' time order among the records' entries. */
	return lt_release_after(x, d->entry_ns, err, errlen);
}
