// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert --lttng, the host's switches of vCPU threads (record --vcpu-sched;
 * lttng_private.h): each a sched_switch of the host trace, as lttng-modules
 * writes it.
 */
#include "export/lttng_private.h"

#include <stdlib.h>
#include <string.h>
#include "common/errf.h"

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
	const char *vcpu_name = lt_host_procname(x, sw->host_pid, sw->host_tid, reader);
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
	if (lt_host_switch_class(x) < 0)
		return ht_errf(err, errlen, "out of memory");
	other_comm(sw, comm);
	/* The other thread is one the analysis sees (the idle task aside): the statedump names its process. */
	if (sw->other_tid && !lt_thread_entry(x, sw->other_pid, sw->other_tid, comm))
		return ht_errf(err, errlen, "out of memory");
	memset(&ctx, 0, sizeof(ctx));
	if (out) {
		ctx = (struct ht_lttng_ctx){ .pid = (int32_t)sw->host_pid, .tid = (int32_t)sw->host_tid };
		snprintf(ctx.procname, sizeof(ctx.procname), "%s", vcpu_name);
		lt_put_comm(&p, vcpu_name);
		lt_put_u32(&p, sw->host_tid);
		lt_put_u32(&p, (uint32_t)HOST_UNKNOWN_PRIO);
		lt_put_u64(&p, lttng_prev_state(sw));
		lt_put_comm(&p, comm);
		lt_put_u32(&p, sw->other_tid);
		lt_put_u32(&p, (uint32_t)HOST_UNKNOWN_PRIO);
		next = (struct ht_lttng_ctx){ .pid = (int32_t)sw->other_pid, .tid = (int32_t)sw->other_tid };
		memcpy(next.procname, comm, sizeof(next.procname));
		if (!sw->other_tid)
			lt_idle_ctx(sw->cpu, &next);
	} else {
		ctx = (struct ht_lttng_ctx){ .pid = (int32_t)sw->other_pid, .tid = (int32_t)sw->other_tid };
		memcpy(ctx.procname, comm, sizeof(ctx.procname));
		lt_put_comm(&p, comm);
		lt_put_u32(&p, sw->other_tid);
		lt_put_u32(&p, (uint32_t)HOST_UNKNOWN_PRIO);
		lt_put_u64(&p, 0); /* the record does not say how the thread replaced left: as if preempted */
		lt_put_comm(&p, vcpu_name);
		lt_put_u32(&p, sw->host_tid);
		lt_put_u32(&p, (uint32_t)HOST_UNKNOWN_PRIO);
		next = (struct ht_lttng_ctx){ .pid = (int32_t)sw->host_pid, .tid = (int32_t)sw->host_tid };
		snprintf(next.procname, sizeof(next.procname), "%s", vcpu_name);
	}
	if ((ret = lt_push_switch(x, x->host, sw->cpu, sw->time_ns, x->hcls.sched_switch, &ctx, &next, &p)))
		return ht_errf(err, errlen, "out of memory");
	/* Switches come in their own time order among the records' entries. */
	return lt_release_after(x, sw->time_ns, err, errlen);
}
