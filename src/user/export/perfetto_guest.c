// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert --perfetto, the guests (perfetto_private.h): each VM with guest
 * events a block of guest CPUs and tids on the trace, its scheduling and
 * IRQs as ftrace events on its CPUs, its function calls as slices of its
 * tasks, its other events as instants, each with a flow to the hypercall
 * that carried it.
 */
#include "export/perfetto_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct vm *vm_of(struct ht_perfetto_export *x, uint32_t pid)
{
	struct vm *v = ht_id_pair_table_get(x->vms, pid, 0);

	if (v)
		return v;
	v = calloc(1, sizeof(*v));
	if (!v || ht_id_pair_table_put(x->vms, pid, 0, v)) {
		free(v);
		x->failed = true;
		return NULL;
	}
	if (x->nslots < MAX_TID_SLOTS) {
		v->slot = x->nslots++;
		v->has_slot = true;
	}
	return v;
}

/* A guest task's tid on the trace: its VM's block plus its own; 0 (idle) stays 0; -1 if it does not fit. */
static int64_t guest_tid(const struct vm *v, uint32_t tid)
{
	if (tid == 0)
		return 0;
	if (!v->has_slot || tid >= 1u << GUEST_TID_BITS)
		return -1;
	return (int64_t)(v->slot + 1) << GUEST_TID_BITS | tid;
}

/* The pid of a VM's guest kernel: its block of tids (it has a slot). */
static int32_t guest_pid(const struct vm *v)
{
	return (int32_t)((v->slot + 1) << GUEST_TID_BITS);
}

/* A guest CPU's ftrace CPU on the trace, or -1 if it does not fit. */
static int64_t guest_cpu(const struct vm *v, uint32_t cpu)
{
	if (!v->has_slot || v->slot >= MAX_CPU_SLOTS || cpu >= GUEST_CPUS)
		return -1;
	return (int64_t)v->slot * GUEST_CPUS + cpu;
}

static uint64_t guest_kernel_track(struct ht_perfetto_export *x, const struct vm *v, const struct ht_record *r,
				   struct ht_reader *reader)
{
	uint64_t uuid = pf_track_uuid(TRACK_GUEST_KERNEL, r->host_pid, 0);
	char label[VM_LABEL_SIZE], name[VM_LABEL_SIZE + 32];
	bool is_new;

	if (pf_track_of(x, uuid, &is_new) && is_new) {
		pf_vm_label(label, sizeof(label), reader, r->host_pid);
		snprintf(name, sizeof(name), "guest kernel of %s", label);
		/*
		 * A VM beyond the pid blocks (MAX_TID_SLOTS) gets no process: one
		 * with the pid of another VM's guest kernel would be read as that
		 * pid reused (track_event_tracker.cc:353). Its CPU event tracks stay
		 * under a named track; its tasks have none (counted).
		 */
		if (v->has_slot)
			pf_describe_process(x, uuid, guest_pid(v), name, r->exit_ns);
		else
			pf_describe_named(x, uuid, 0, name, 0, r->exit_ns);
	}
	return uuid;
}

/* A guest task's thread track (described the first time it is named), or NULL if it has none. */
static struct track *guest_task_track(struct ht_perfetto_export *x, const struct vm *v, const struct ht_record *r,
				      struct ht_reader *reader, uint32_t tid, uint32_t cpu, uint64_t *uuid)
{
	int64_t mapped = guest_tid(v, tid);
	char comm[HT_GEV_COMM_LEN + 1], esc[HT_ESC_SIZE(HT_GEV_COMM_LEN)], name[HT_ESC_SIZE(HT_GEV_COMM_LEN) + 32];
	struct track *t;
	bool is_new;

	if (mapped <= 0)
		return NULL;
	guest_kernel_track(x, v, r, reader);
	*uuid = pf_track_uuid(TRACK_GUEST_TASK, r->host_pid, tid);
	t = pf_track_of(x, *uuid, &is_new);
	if (t && is_new) {
		ht_guest_task_comm(x->gstate, r->host_pid, tid, cpu, comm);
		shown(esc, sizeof(esc), comm);
		snprintf(name, sizeof(name), "%s (guest tid %u)", esc[0] ? esc : "task", tid);
		pf_describe_thread(x, *uuid, guest_pid(v), mapped, name, (int32_t)tid, false, r->exit_ns);
	}
	return t;
}

/* A guest CPU's event track, under its guest kernel. */
static struct track *guest_cpu_track(struct ht_perfetto_export *x, const struct vm *v, const struct ht_record *r,
				     struct ht_reader *reader, uint32_t cpu, uint64_t *uuid)
{
	uint64_t parent = guest_kernel_track(x, v, r, reader);
	char name[64];
	struct track *t;
	bool is_new;

	*uuid = pf_track_uuid(TRACK_GUEST_CPU, r->host_pid, cpu);
	t = pf_track_of(x, *uuid, &is_new);
	if (t && is_new) {
		snprintf(name, sizeof(name), "guest CPU %u events", cpu);
		pf_describe_named(x, *uuid, parent, name, (int32_t)cpu, r->exit_ns);
	}
	return t;
}

/* A task as an ftrace sched_switch names it: its tid on the trace (0 if none), its name (shown) and prio. */
struct ftrace_task {
	int64_t tid;
	const char *comm;
	int32_t prio;
};

/* The packet of one ftrace event on ftrace CPU cpu at ts, of task pid: returns the event, open. */
static ht_pb_msg ftrace_begin(struct ht_perfetto_export *x, int64_t cpu, uint64_t ts, int64_t pid, ht_pb_msg *p,
			      ht_pb_msg *b)
{
	ht_pb_msg e;

	*p = pf_packet_begin(x);
	ht_pb_varint(&x->raw, PKT_SEQ_ID, SEQUENCE_ID);
	*b = ht_pb_begin(&x->raw, PKT_FTRACE_EVENTS);
	ht_pb_varint(&x->raw, FB_CPU, (uint64_t)cpu);
	/*
	 * ftrace's times are BOOTTIME unless the bundle names another clock
	 * (ftrace_tokenizer.cc:144-151), and no FtraceClock is CLOCK_MONOTONIC:
	 * "global" makes them the sequence's clock 64 (ftrace_tokenizer.cc:488,
	 * kSequenceScopedClockId), which the clock snapshot declares equal to
	 * CLOCK_MONOTONIC (pf_head_packets, perfetto_meta.c).
	 */
	ht_pb_varint(&x->raw, FB_FTRACE_CLOCK, FTRACE_CLOCK_GLOBAL);
	e = ht_pb_begin(&x->raw, FB_EVENT);
	ht_pb_varint(&x->raw, FE_TIMESTAMP, ts);
	ht_pb_varint(&x->raw, FE_PID, pid > 0 ? (uint64_t)pid : 0);
	return e;
}

static void ftrace_end(struct ht_perfetto_export *x, ht_pb_msg e, ht_pb_msg b, ht_pb_msg p)
{
	ht_pb_end(&x->raw, e);
	ht_pb_end(&x->raw, b);
	pf_packet_end(x, p);
}

/* A sched_switch from prev, left in prev_state, to next, on ftrace CPU cpu at ts. */
static void ftrace_switch(struct ht_perfetto_export *x, int64_t cpu, uint64_t ts, const struct ftrace_task *prev,
			  uint32_t prev_state, const struct ftrace_task *next)
{
	ht_pb_msg p, b, e = ftrace_begin(x, cpu, ts, prev->tid, &p, &b);
	ht_pb_msg s = ht_pb_begin(&x->raw, FE_SCHED_SWITCH);

	ht_pb_string(&x->raw, SS_PREV_COMM, prev->comm);
	ht_pb_int(&x->raw, SS_PREV_PID, prev->tid);
	ht_pb_int(&x->raw, SS_PREV_PRIO, prev->prio);
	ht_pb_int(&x->raw, SS_PREV_STATE, prev_state);
	ht_pb_string(&x->raw, SS_NEXT_COMM, next->comm);
	ht_pb_int(&x->raw, SS_NEXT_PID, next->tid);
	ht_pb_int(&x->raw, SS_NEXT_PRIO, next->prio);
	ht_pb_end(&x->raw, s);
	ftrace_end(x, e, b, p);
}

/* A guest task's tid as its sched_switch events show it: 0 (the idle task's) when it has none on the trace. */
static uint32_t shown_tid(const struct vm *v, uint32_t tid)
{
	return guest_tid(v, tid) > 0 ? tid : 0;
}

/*
 * The stand-in for what ran on a guest CPU while its switches were lost
 * (export/switch_chain.h): thread guest_pid(v), tid 0 of the VM's block,
 * which no guest task has (a guest's idle task is thread 0), in the guest
 * kernel's process, ranked before its tasks.
 */
static int64_t stand_in(struct ht_perfetto_export *x, const struct vm *v, const struct ht_record *r,
			struct ht_reader *reader)
{
	uint64_t uuid = pf_track_uuid(TRACK_GUEST_TASK, r->host_pid, 0);
	bool is_new;

	guest_kernel_track(x, v, r, reader);
	if (pf_track_of(x, uuid, &is_new) && is_new)
		pf_describe_thread(x, uuid, guest_pid(v), guest_pid(v), HT_CHAIN_UNKNOWN_COMM, -1, false, r->exit_ns);
	return guest_pid(v);
}

/*
 * A guest sched_switch that breaks its CPU's chain (its prev_tid is not the
 * task the CPU's last switch put there: switches were lost in between)
 * would leave that task's sched slice open to the end of the trace
 * (mismatched_sched_switch_tids, ftrace_sched_event_tracker.cc,
 * PushSchedSwitch). Before it, two switches close the chain
 * (docs/exports.md): the task last switched in leaves, in the state the
 * UI shows as Unknown, when it was last known there: at its switch-in,
 * or at the guest module's unload after it (report --sched ends its run
 * there, and counts none for either task of a gap); the stand-in holds
 * the CPU until the breaking switch's time, then gives it to that
 * switch's prev_tid. The first switch goes back in time on its CPU: the
 * trace processor sorts every event by time, and among equal times keeps
 * the order read (trace_sorter.h, TimestampedEvent), so it comes after
 * the switch-in it ends; it sorts them all at the end, having no flush of
 * the tracing service's to extract them earlier (proto_trace_reader.cc,
 * all_data_sources_flushed).
 */
static void follow_chain(struct ht_perfetto_export *x, const struct vm *v, const struct ht_record *r,
			 struct ht_reader *reader, const struct ht_gev *ev)
{
	char last_comm[HT_GEV_COMM_LEN + 1], prev_comm[HT_GEV_COMM_LEN + 1];
	char last_esc[HT_ESC_SIZE(HT_GEV_COMM_LEN)], prev_esc[HT_ESC_SIZE(HT_GEV_COMM_LEN)];
	int64_t cpu = guest_cpu(v, ev->cpu);
	uint32_t prev = shown_tid(v, ev->u.sw.prev_tid);
	struct ht_chain_break brk;
	uint64_t at;
	int ret;

	if (cpu < 0)
		return; /* not written: Perfetto has no chain there */
	ret = ht_switch_chain_follow(x->chain, r->host_pid, ev->cpu, prev, shown_tid(v, ev->u.sw.next_tid),
				     ev->u.sw.next_prio, r->exit_ns, &brk);
	if (ret <= 0) {
		x->failed |= ret < 0;
		return;
	}
	/* A guest's times need not grow: the stand-in never runs backwards. */
	at = brk.known_ns < r->exit_ns ? brk.known_ns : r->exit_ns;
	ht_guest_task_comm(x->gstate, r->host_pid, brk.last_tid, ev->cpu, last_comm);
	ht_guest_task_comm(x->gstate, r->host_pid, ev->u.sw.prev_tid, ev->cpu, prev_comm);
	const struct ftrace_task last = { guest_tid(v, brk.last_tid), shown(last_esc, sizeof(last_esc), last_comm),
					  brk.last_prio };
	const struct ftrace_task gap = { stand_in(x, v, r, reader), HT_CHAIN_UNKNOWN_COMM, HT_CHAIN_UNKNOWN_PRIO };
	const struct ftrace_task into = { guest_tid(v, prev), shown(prev_esc, sizeof(prev_esc), prev_comm),
					  ev->u.sw.prev_prio };

	ftrace_switch(x, cpu, at, &last, HT_CHAIN_UNKNOWN_STATE, &gap);
	ftrace_switch(x, cpu, r->exit_ns, &gap, HT_CHAIN_UNKNOWN_STATE, &into);
}

/* The guest's scheduling and IRQs as ftrace events of its CPU, as Perfetto shows a kernel's. */
static void guest_ftrace(struct ht_perfetto_export *x, const struct vm *v, const struct ht_record *r,
			 const struct ht_gev *ev, int64_t task_before)
{
	int64_t cpu = guest_cpu(v, ev->cpu), cur = task_before >= 0 ? guest_tid(v, (uint32_t)task_before) : 0;
	char comm[HT_GEV_COMM_LEN + 1], esc[HT_ESC_SIZE(sizeof(ev->u.irq.name))];
	char next_esc[HT_ESC_SIZE(HT_GEV_COMM_LEN)];
	ht_pb_msg p, b, e, s;

	if (ev->kind != HT_GEV_SCHED_SWITCH && ev->kind != HT_GEV_SCHED_WAKEUP && ev->kind != HT_GEV_IRQ_ENTRY &&
	    ev->kind != HT_GEV_IRQ_EXIT)
		return;
	if (cpu < 0) {
		x->counts.not_scheduled++;
		return;
	}
	if (ev->kind == HT_GEV_SCHED_SWITCH) {
		int64_t prev = guest_tid(v, ev->u.sw.prev_tid), next = guest_tid(v, ev->u.sw.next_tid);

		ht_guest_task_comm(x->gstate, r->host_pid, ev->u.sw.prev_tid, ev->cpu, comm);
		const struct ftrace_task from = { prev > 0 ? prev : 0, shown(esc, sizeof(esc), comm), ev->u.sw.prev_prio };
		ht_guest_task_comm(x->gstate, r->host_pid, ev->u.sw.next_tid, ev->cpu, comm);
		const struct ftrace_task to = { next > 0 ? next : 0,
						shown(next_esc, sizeof(next_esc), ev->u.sw.next_tid ? ev->u.sw.next_comm : comm),
						ev->u.sw.next_prio };
		ftrace_switch(x, cpu, r->exit_ns, &from, ev->u.sw.prev_state, &to);
		return;
	}
	e = ftrace_begin(x, cpu, r->exit_ns, cur, &p, &b);
	switch (ev->kind) {
	case HT_GEV_SCHED_WAKEUP: {
		int64_t tid = guest_tid(v, ev->u.wake.tid), target = guest_cpu(v, ev->u.wake.target_cpu);

		s = ht_pb_begin(&x->raw, FE_SCHED_WAKEUP);
		ht_pb_string(&x->raw, WAKE_COMM, shown(esc, sizeof(esc), ev->u.wake.comm));
		ht_pb_int(&x->raw, WAKE_PID, tid > 0 ? tid : 0);
		ht_pb_int(&x->raw, WAKE_PRIO, ev->u.wake.prio);
		ht_pb_int(&x->raw, WAKE_SUCCESS, 1);
		ht_pb_int(&x->raw, WAKE_TARGET_CPU, target >= 0 ? target : cpu);
		break;
	}
	case HT_GEV_IRQ_ENTRY:
		s = ht_pb_begin(&x->raw, FE_IRQ_ENTRY);
		ht_pb_int(&x->raw, IRQ_ENTRY_IRQ, (int32_t)ev->u.irq.irq);
		ht_pb_string(&x->raw, IRQ_ENTRY_NAME, shown(esc, sizeof(esc), ev->u.irq.name));
		break;
	default:
		s = ht_pb_begin(&x->raw, FE_IRQ_EXIT);
		ht_pb_int(&x->raw, IRQ_EXIT_IRQ, (int32_t)ev->u.irq.irq);
		ht_pb_int(&x->raw, IRQ_EXIT_RET, (int32_t)ev->u.irq.ret);
		break;
	}
	ht_pb_end(&x->raw, s);
	ftrace_end(x, e, b, p);
}

/* A debug annotation with a string value, its name interned beforehand. */
static void note(struct ht_perfetto_export *x, const char *key, const char *value)
{
	ht_pb_msg a = ht_pb_begin(&x->raw, TE_DEBUG);

	pf_arg_name(x, key);
	ht_pb_string(&x->raw, DA_STRING, value);
	ht_pb_end(&x->raw, a);
}

/*
 * A guest function's entry or exit on its task's track; returns its flow.
 * The trace processor ends, on an end event with a name, the innermost open
 * slice of that name on the track, and drops an end that matches none, with
 * its flow (track_event_event_importer.h:847, slice_tracker.cc:185 and
 * 271-288); an end without a name ends whatever slice is innermost. So:
 * - every end carries its function's name;
 * - an exit whose entry is in the trace ends that call, after ending, each
 *   with its own name and "exit": "lost", the calls entered after it whose
 *   exits were lost (the guest state's open calls say which): no exit ever
 *   closes another function's slice;
 * - an exit whose entry is not (entered before the recording started), and
 *   an entry deeper than the calls followed per task, are instants with the
 *   function's name and "unpaired" saying why: nothing the importer drops.
 */
static uint64_t function_event(struct ht_perfetto_export *x, struct track *t, uint64_t uuid, const struct ht_record *r,
			       const struct ht_gev *ev)
{
	bool entry = ev->kind == HT_GEV_FUNC_ENTRY, paired = ev->u.func.matched;
	char name[FUNCTION_NAME_SIZE], lost[FUNCTION_NAME_SIZE];
	uint64_t flow = ++x->flows;
	ht_pb_msg pkt, e;

	/* Names interned before the packets that use them (none may be defined inside one). */
	pf_function_name(x, ev->u.func.addr, name);
	pf_intern(x, true, name);
	pf_intern(x, false, paired ? "exit" : "unpaired");
	for (uint32_t i = ev->u.func.nlost; i-- > 0;) {
		pf_function_name(x, ev->u.func.lost[i].addr, lost);
		e = pf_track_event_begin(x, t, uuid, r->exit_ns, SLICE_END, &pkt);
		pf_event_name(x, lost);
		note(x, "exit", "lost");
		pf_track_event_end(x, e, pkt);
	}
	e = pf_track_event_begin(x, t, uuid, r->exit_ns, !paired ? INSTANT : entry ? SLICE_BEGIN : SLICE_END, &pkt);
	pf_event_name(x, name);
	if (!paired)
		note(x, "unpaired",
		     entry ? "entry deeper than the calls followed per task" :
			     "exit of a call entered before the recording (or deeper than the calls followed)");
	ht_pb_fixed64(&x->raw, TE_FLOW, flow);
	pf_track_event_end(x, e, pkt);
	return flow;
}

/*
 * The guest's side of a project event: a function call as a slice on its
 * task's track, any other event as an instant on its CPU's event track, with
 * a flow to the host's slice. Returns the flow id, 0 when it has no guest
 * track.
 */
uint64_t pf_guest_side(struct ht_perfetto_export *x, const struct ht_record *r, struct ht_reader *reader,
			   const struct ht_gev *ev, const struct ht_event_desc *desc, int64_t task_before)
{
	struct vm *v = vm_of(x, r->host_pid);
	uint64_t uuid, flow;
	struct track *t;
	ht_pb_msg pkt, e;

	if (!v)
		return 0;
	if (ev->kind == HT_GEV_SCHED_SWITCH)
		follow_chain(x, v, r, reader, ev);
	else if (ev->kind == HT_GEV_MODULE && ev->u.mod.state == 0)
		ht_switch_chain_stopped(x->chain, r->host_pid, r->exit_ns);
	guest_ftrace(x, v, r, ev, task_before);
	if (ev->kind == HT_GEV_FUNC_ENTRY || ev->kind == HT_GEV_FUNC_EXIT) {
		t = guest_task_track(x, v, r, reader, ev->u.func.tid, ev->cpu, &uuid);
		if (!t) {
			x->counts.not_scheduled++;
			return 0;
		}
		return function_event(x, t, uuid, r, ev);
	}
	if (ev->kind == HT_GEV_SCHED_SWITCH) {
		/* Name the tasks' threads before the ftrace events that show them run. */
		guest_task_track(x, v, r, reader, ev->u.sw.prev_tid, ev->cpu, &uuid);
		guest_task_track(x, v, r, reader, ev->u.sw.next_tid, ev->cpu, &uuid);
	}
	t = guest_cpu_track(x, v, r, reader, ev->cpu, &uuid);
	if (!t)
		return 0;
	pf_intern(x, true, desc->name);
	pf_prepare_field_names(x, desc);
	flow = ++x->flows;
	e = pf_track_event_begin(x, t, uuid, r->exit_ns, INSTANT, &pkt);
	pf_event_name(x, desc->name);
	pf_decoded_fields(x, desc, r);
	ht_pb_fixed64(&x->raw, TE_FLOW, flow);
	pf_track_event_end(x, e, pkt);
	return flow;
}

