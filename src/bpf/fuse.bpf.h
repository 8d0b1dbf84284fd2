/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The fusion state machine: kvm_exit + kvm_hypercall + kvm_entry of one vCPU
 * thread become ONE struct ht_record in the ring buffer.
 *
 * Every handler takes the values its tracepoint carries (kvm_exit's: where
 * to read them, the classic event record or SVM's vCPU, see exit_source),
 * not a program's context, so the tracepoint programs and the
 * synthetic-event programs used by tests and benchmarks run exactly the
 * same code against the same maps. Handlers are static __always_inline,
 * except the few marked __noinline on purpose: paths off the hot one (a
 * hypercall exit, a cut window, a state moved on a switch) kept out of line so that the non-matching
 * path of kvm_exit stays a load, an AND and a compare.
 * The maps, globals and filters they use are maps.bpf.h's; the helpers
 * they share with exits.bpf.h are helpers.bpf.h's.
 *
 * State is per vCPU *thread*, not per CPU: vCPUs of one VM interleave on one
 * physical CPU, and a vCPU thread may be switched out between its exit and its
 * entry and go on on another CPU. It lives in the slot of the CPU the thread
 * runs on, and in moved_states while the thread is switched out (see
 * cpu_states in maps.bpf.h).
 *
 * Hot path: kvm_exit and kvm_entry fire on every VM exit of the host. Their
 * non-matching path reads the exit's reason and its CPU's slot, and writes
 * nothing: one load from the classic record (two reads through the vCPU and
 * its VMCB in SVM's raw program, see exit_reason_of), no other helper call.
 */
#ifndef HYPERTRACE_FUSE_BPF_H
#define HYPERTRACE_FUSE_BPF_H

#include "helpers.bpf.h"
#include "exits.bpf.h" /* record --exits: its handlers, called below */
#include "vcpu_irqs.bpf.h" /* record --exits: the halt polling and interrupt deliveries at kvm_entry */

static __always_inline __u32 ns_saturated(__u64 delta, __u8 *flags, __u8 flag)
{
	if (delta > 0xffffffffull) {
		*flags |= flag;
		return 0xffffffffu;
	}
	return (__u32)delta;
}

/* The slot of a latency in the aggregate histograms. */
static __always_inline __u32 agg_slot(__u64 v)
{
	return bounded_log2_slot(v, HT_AGG_SLOTS);
}

/* The position of nr in filter_nr, or HT_MAX_SELECTED_NR if it is not selected. */
_Static_assert((HT_MAX_SELECTED_NR & (HT_MAX_SELECTED_NR - 1)) == 0, "a position is masked with HT_MAX_SELECTED_NR - 1");
static __always_inline __u32 nr_position(unsigned long nr)
{
	if (nr > 0xffffffffull)
		return HT_MAX_SELECTED_NR;
#pragma unroll
	for (__u32 i = 0; i < HT_MAX_SELECTED_NR; i++) {
		if (i >= filter_nr_count)
			break;
		if (filter_nr[i] == nr)
			return i;
	}
	return HT_MAX_SELECTED_NR;
}

static __always_inline bool nr_selected(unsigned long nr)
{
	return nr_position(nr) < HT_MAX_SELECTED_NR;
}

/* Aggregate-only mode: count the three latencies of one hypercall in its group's histograms. */
static __always_inline void aggregate(const struct ht_record *r, __u64 hcall_to_entry)
{
	static const struct ht_agg_hist zero;
	__u64 key = 0;

	if (aggregate_group_by == HT_AGG_BY_VCPU)
		key = (__u64)r->host_pid << 32 | r->vcpu_id;
	else if (aggregate_group_by == HT_AGG_BY_VM)
		key = (__u64)r->host_pid << 32;
	if (aggregate_by_nr)
		key |= (__u64)(nr_position(r->nr) & (HT_MAX_SELECTED_NR - 1)) << HT_AGG_KEY_NR_SHIFT; /* selected: < 8 */
	struct ht_agg_hist *h = bpf_map_lookup_elem(&latency_hists, &key);
	if (!h) {
		h = lookup_or_try_init(&latency_hists, &key, &zero);
		if (!h) {
			count(HT_CNT_AGG_GROUPS_FULL); /* out of groups: counted as lost, never silent */
			return;
		}
	}
	h->slots[HT_AGG_TOTAL][agg_slot(r->exit_to_hcall_ns + hcall_to_entry)]++;
	h->slots[HT_AGG_EXIT_HCALL][agg_slot(r->exit_to_hcall_ns)]++;
	h->slots[HT_AGG_HCALL_ENTRY][agg_slot(hcall_to_entry)]++;
}

static __always_inline void disarm(struct vcpu_state *st)
{
	st->phase = PHASE_IDLE;
}

/* The hot path's test: exit_reason alone, without loading isa. */
static __always_inline bool may_be_hypercall_exit(__u32 reason, __u32 mask, __u32 value)
{
	return (reason & mask) == value;
}

static __always_inline bool is_hypercall_exit(__u32 isa, __u32 reason)
{
	if (filter_exit_reason_on)
		return (isa == HT_ISA_VMX ? (reason & HT_VMX_EXIT_REASON_MASK) : reason) ==
		       filter_exit_reason;
	if (isa == HT_ISA_VMX)
		return (reason & HT_VMX_EXIT_REASON_MASK) == HT_VMX_EXIT_REASON_VMCALL;
	return reason == HT_SVM_EXIT_CODE_VMMCALL;
}

/*
 * The armed state in the slot goes into moved_states under its thread's id,
 * and the slot is free: what a reported switch-out of that thread does.
 * armed_moved counts the entries that hold an armed state. There is at most
 * one entry per thread: an armed one already there is a window of that
 * thread that never came back to a CPU (see take_own_state), now overtaken
 * by this one; an idle one is what a failed delete left (unpark_state).
 */
static __noinline int park_state(__u32 tid, struct vcpu_state *slot)
{
	struct vcpu_state *stale = bpf_map_lookup_elem(&moved_states, &tid);

	if (stale) {
		if (stale->phase == PHASE_HCALL)
			count(HT_CNT_SUPERSEDED);
		if (stale->phase == PHASE_IDLE)
			__sync_fetch_and_add(&armed_moved, 1);
		__builtin_memcpy(stale, slot, sizeof(*stale));
	} else if (bpf_map_update_elem(&moved_states, &tid, slot, BPF_NOEXIST)) {
		count(HT_CNT_STATE_ALLOC_FAIL); /* the hypercall is lost, and counted */
	} else {
		__sync_fetch_and_add(&armed_moved, 1);
	}
	disarm(slot);
	return 0;
}

/*
 * A parked state comes back into the slot of the CPU its thread runs on
 * (the slot is free): 1 when it was armed. Only the fusion part: the slot's
 * --exits fields are the CPU's (the open exit of a thread went with it into
 * vcpu_thread_table when it was switched out), and a stale copy of them here
 * would hand that exit to the thread switched out next. The entry is
 * disarmed before its delete, so one the delete leaves is no window.
 */
static __always_inline int unpark_state(__u32 tid, struct vcpu_state *st, struct vcpu_state *slot)
{
	int armed = st->phase != PHASE_IDLE;

	if (armed) {
		slot->rec = st->rec;
		slot->hcall_ns = st->hcall_ns;
		slot->phase = st->phase;
		disarm(st);
		__sync_fetch_and_add(&armed_moved, -1);
	}
	bpf_map_delete_elem(&moved_states, &tid);
	return armed;
}

/*
 * For the calling thread's own events when its CPU's slot may not hold its
 * armed state: 1 when it does after this. The sched_switch program keeps
 * a running thread's state in its CPU's slot, but only for the switches the
 * kernel reports: a context switch that no sched_switch event shows (some
 * kernels do not report switching out of some tasks) leaves a thread's
 * state parked while the thread runs again, or in the slot of a CPU it
 * left. So the caller's own parked state comes back, and another thread's
 * state here is parked for it, each counted (HT_CNT_UNREPORTED_SWITCH).
 * Called where the thread id is at hand, or costs a helper call only off
 * the common path: while a state is parked (armed_moved), when a non-
 * hypercall exit or another vCPU's entry finds the slot armed. Another
 * thread's state found by this thread's kvm_hypercall, or by its kvm_entry
 * for the same vCPU number, while nothing is parked, is not told apart
 * (that would cost a helper call per hypercall).
 */
static __noinline int take_own_state(struct vcpu_state *slot, __u32 me)
{
	struct vcpu_state *st;

	if (slot->phase != PHASE_IDLE) {
		if (slot->rec.host_tid == me)
			return 1;
		count(HT_CNT_UNREPORTED_SWITCH);
		park_state(slot->rec.host_tid, slot);
	}
	if (!armed_moved)
		return 0;
	st = bpf_map_lookup_elem(&moved_states, &me);
	if (!st || !unpark_state(me, st, slot))
		return 0;
	count(HT_CNT_UNREPORTED_SWITCH);
	return 1;
}

/*
 * Ends the calling thread's open window, which the slot holds: any exit but
 * a hypercall's (never fuse across it), or a new hypercall exit (the newer
 * one wins).
 */
static __always_inline void end_own_window(struct vcpu_state *slot)
{
	if (slot->phase == PHASE_HCALL)
		count(HT_CNT_SUPERSEDED);
	disarm(slot);
}

/*
 * An exit that is no hypercall exit finds the slot armed or a state parked:
 * the calling thread's window ends, wherever it is; another thread's, left
 * here by a switch nobody reported, is kept for that thread (see
 * take_own_state).
 */
static __noinline int cut_armed_window(struct vcpu_state *slot)
{
	if (take_own_state(slot, (__u32)bpf_get_current_pid_tgid()))
		end_own_window(slot);
	return 0;
}

/*
 * The test of every exit that is no hypercall exit: the slot armed, or a
 * state parked. The calling thread's parked window must end here too: a
 * thread switched in unreported runs with its state still parked (on a
 * test host no sched_switch ever showed a switch out of one task, so a
 * thread migrated to its CPU ran unannounced), and its later kvm_entry
 * would fuse a hypercall across this exit. The same two loads as
 * kvm_entry's non-matching test; a helper call only while an armed thread
 * is off-CPU.
 */
static __always_inline int cut_window_of_other_exit(struct vcpu_state *slot)
{
	return (slot->phase | armed_moved) ? cut_armed_window(slot) : 0;
}

static __noinline int handle_hypercall_exit(__u32 reason, __u32 isa, __u32 vcpu, __u8 flags, __u64 guest_rip);

/*
 * The hot path is inline and small; the rest is in subprograms of its own.
 * So the program's entry saves no callee-saved registers (the x86 JIT saves
 * those a function uses), which on a CPU with expensive returns was most of
 * what a non-matching exit cost over an empty handler. src and from: where
 * the exit is read (enum exit_source); the hypercall exit's fields are read
 * only on its path.
 */
static __always_inline int handle_kvm_exit(const void *src, enum exit_source from, __u32 mask, __u32 value,
					   __u64 synthetic_now)
{
	__u32 reason = exit_reason_of(src, from);
	__u8 flags = 0;

	if (exits_on) {
		/* A path of its own: without --exits the code below is what the verifier keeps. */
		struct vcpu_state *slot = cpu_slot(bpf_get_smp_processor_id());
		__u32 isa = exit_isa_of(src, from), vcpu = exit_vcpu_of(src, from, &flags);

		exit_begin(slot, reason, isa, vcpu, synthetic_now);
		if (boot_on)
			slot->exit_rip = exit_guest_rip_of(src, from);
		if (!may_be_hypercall_exit(reason, mask, value))
			return cut_window_of_other_exit(slot);
		return handle_hypercall_exit(reason, isa, vcpu, flags, exit_guest_rip_of(src, from));
	}
	if (!may_be_hypercall_exit(reason, mask, value)) {
		struct vcpu_state *slot = cpu_slot(bpf_get_smp_processor_id());

		return cut_window_of_other_exit(slot);
	}
	__u32 vcpu = exit_vcpu_of(src, from, &flags);

	return handle_hypercall_exit(reason, exit_isa_of(src, from), vcpu, flags, exit_guest_rip_of(src, from));
}

/* flags: HT_REC_F_NO_EXIT_VCPU_ID if the exit had no vCPU id (then vcpu is 0). */
static __noinline int handle_hypercall_exit(__u32 reason, __u32 isa, __u32 vcpu, __u8 flags, __u64 guest_rip)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct vcpu_state *slot = cpu_slot(cpu);

	if (!is_hypercall_exit(isa, reason))
		return cut_window_of_other_exit(slot);

	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	if (filter_tgid_on && !tgid_traced(tgid))
		return 0;
	/* Without the exit's vCPU id, --vcpu is applied at kvm_entry instead. */
	if (filter_vcpu_on && !(flags & HT_REC_F_NO_EXIT_VCPU_ID) && vcpu != filter_vcpu)
		return 0;
	/*
	 * A stale armed state of this thread (exit, exit, ... on old kernels),
	 * here or parked, is dropped, never fused; another thread's is kept for it.
	 */
	if ((slot->phase != PHASE_IDLE || armed_moved) && take_own_state(slot, (__u32)pid_tgid))
		end_own_window(slot);
	slot->phase = PHASE_EXITED;
	slot->rec.exit_ns = bpf_ktime_get_ns();
	slot->rec.guest_rip = guest_rip;
	slot->rec.exit_reason = reason;
	slot->rec.isa = isa;
	slot->rec.flags = flags;
	slot->rec.vcpu_id = vcpu;
	slot->rec.exit_cpu = cpu;
	slot->rec.host_pid = tgid;
	slot->rec.host_tid = (__u32)pid_tgid;
	return 0;
}

/* kvm_hypercall: the guest's nr and its first four arguments (a0..a3). */
static __always_inline int handle_kvm_hypercall(unsigned long nr, unsigned long a0, unsigned long a1, unsigned long a2,
						unsigned long a3)
{
	struct vcpu_state *st = cpu_slot(bpf_get_smp_processor_id());

	if (exits_on)
		note_exit_cause(HT_CAUSE_HYPERCALL, nr, 0);
	/* A state parked: perhaps this thread's, back on a CPU by a switch nobody reported. */
	if (armed_moved)
		take_own_state(st, (__u32)bpf_get_current_pid_tgid());
	if (st->phase != PHASE_EXITED)
		return 0; /* no hypercall exit before it on this thread */

	if (!nr_selected(nr)) {
		count(HT_CNT_HCALL_UNSELECTED_NR);
		disarm(st);
		return 0;
	}
	/*
	 * The project's guest kernel events come from the guest kernel only: one
	 * from a user-space address is forged (the host would never decode it)
	 * and must not take a real event's place in the ring. Dropped, counted.
	 */
	if (nr >= HT_GUEST_NR_PROJECT_FIRST && nr <= HT_GUEST_NR_KERNEL_LAST &&
	    !(st->rec.guest_rip >> HT_GUEST_KERNEL_HALF_BIT)) {
		count(HT_CNT_FORGED_GUEST_EVENT);
		disarm(st);
		return 0;
	}
	__u64 now = bpf_ktime_get_ns();
	st->hcall_ns = now;
	st->rec.exit_to_hcall_ns =
		ns_saturated(now - st->rec.exit_ns, &st->rec.flags, HT_REC_F_EXIT_TO_HCALL_SATURATED);
	st->rec.nr = (__u32)nr;
	st->rec.a0 = a0;
	st->rec.a1 = a1;
	st->rec.a2 = a2;
	st->rec.a3 = a3;
	st->phase = PHASE_HCALL;
	return 0;
}

/* kvm_entry of an armed thread: the fused record, or the end of a window without a hypercall. */
static __always_inline int emit_fused(__u32 entry_vcpu, struct vcpu_state *st, __u32 cpu)
{
	if (st->phase != PHASE_HCALL) {
		disarm(st); /* hypercall exit without a kvm_hypercall event */
		return 0;
	}
	disarm(st);

	__u64 now = bpf_ktime_get_ns();
	__u8 flags = st->rec.flags;
	__u32 vcpu = st->rec.vcpu_id;
	if (flags & HT_REC_F_NO_EXIT_VCPU_ID) {
		vcpu = entry_vcpu;
		if (filter_vcpu_on && vcpu != filter_vcpu)
			return 0;
	} else if (entry_vcpu != vcpu) {
		/* Another vCPU's entry: a thread switch went unseen. Never fuse across vCPUs. */
		count(HT_CNT_SUPERSEDED);
		return 0;
	}

	if (aggregate_only) {
		st->rec.vcpu_id = vcpu;
		aggregate(&st->rec, now - st->hcall_ns);
		return 0;
	}
	void *ring = cpu_ring(cpu);
	struct ht_record *rec = ring ? bpf_ringbuf_reserve(ring, sizeof(*rec), 0) : NULL;
	if (!rec) {
		count(HT_CNT_RINGBUF_DROPS);
		return 0;
	}
	__builtin_memcpy(rec, &st->rec, sizeof(*rec));
	rec->hcall_to_entry_ns =
		ns_saturated(now - st->hcall_ns, &flags, HT_REC_F_HCALL_TO_ENTRY_SATURATED);
	rec->flags = flags;
	rec->vcpu_id = vcpu;
	rec->entry_cpu = cpu;

	bpf_ringbuf_submit(rec, wakeup_flags(cpu));
	return 0;
}

/*
 * kvm_entry of vCPU vcpu_id (KVM's vcpu->vcpu_id) on this CPU. vcpu: KVM's
 * vCPU (its mode, for --boot); NULL from the synthetic programs.
 */
static __always_inline int handle_kvm_entry(const struct kvm_vcpu *vcpu, __u32 vcpu_id, __u64 synthetic_now)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct vcpu_state *slot = cpu_slot(cpu);

	if (exits_on) {
		struct vcpu_thread *t = exit_end(vcpu_id, slot, synthetic_now, cpu);

		if (t)
			vcpu_entry_work(t, vcpu);
		if (boot_on)
			boot_flush(vcpu, cpu, true);
	}
	/*
	 * The non-matching path: two independent loads and one branch;
	 * armed_moved is 0 but while an armed thread is off-CPU.
	 */
	if (!(slot->phase | armed_moved))
		return 0;
	/*
	 * Whose the slot's state is, asked (a helper call) only when it may not
	 * be this thread's: a state is parked, or the slot's is another vCPU's.
	 */
	if ((armed_moved || (!(slot->rec.flags & HT_REC_F_NO_EXIT_VCPU_ID) && slot->rec.vcpu_id != vcpu_id)) &&
	    !take_own_state(slot, (__u32)bpf_get_current_pid_tgid()))
		return 0;
	return emit_fused(vcpu_id, slot, cpu);
}

/*
 * A vCPU thread that exits while armed (a VM killed mid-hypercall) would leave
 * its CPU's slot armed, and every exit there would cut a window that is not
 * its own. Thread exit is rare; while nothing is armed this is one load.
 */
static __always_inline int handle_thread_exit(void)
{
	struct vcpu_state *slot = cpu_slot(bpf_get_smp_processor_id());

	/* The exiting thread's window, here or parked, ends with it; another thread's is kept for it. */
	if ((slot->phase != PHASE_IDLE || armed_moved) && take_own_state(slot, (__u32)bpf_get_current_pid_tgid()))
		disarm(slot);
	if (exits_on)
		exits_thread_exit(slot);
	return 0;
}

/*
 * prev is switched out with the slot armed: the state goes into moved_states,
 * under the id of the thread that armed it (prev's, unless a switch went
 * unreported: see take_own_state).
 */
static __noinline int move_out(struct task_struct *prev, struct vcpu_state *slot)
{
	if (slot->rec.host_tid != (__u32)prev->pid) /* a BTF pointer: a direct load */
		count(HT_CNT_UNREPORTED_SWITCH);
	return park_state(slot->rec.host_tid, slot);
}

/* next, switched in, was switched out armed: its fusion state comes back into this CPU's slot. */
static __noinline int move_in(struct task_struct *next, struct vcpu_state *slot)
{
	__u32 tid = next->pid;
	struct vcpu_state *st = bpf_map_lookup_elem(&moved_states, &tid);

	if (st)
		unpark_state(tid, st, slot);
	return 0;
}

/*
 * sched_switch from prev (the thread running until now) to next, on this
 * CPU: an armed prev's state leaves the slot with it, an armed next's comes
 * back. So a running thread's armed state is always in its CPU's slot (see
 * cpu_states). While nothing is armed: one load of the slot and one of
 * armed_moved.
 */
static __always_inline int handle_sched_switch(struct task_struct *prev, struct task_struct *next, bool preempt)
{
	struct vcpu_state *slot = cpu_slot(bpf_get_smp_processor_id());

	if (slot->phase != PHASE_IDLE)
		move_out(prev, slot);
	if (armed_moved)
		move_in(next, slot);
	if (exits_on) {
		__u32 prev_tid = prev->pid, next_tid = next->pid;

		/*
		 * As exits_sched_switch, with the event built only for a switch
		 * the vCPU threads' part looks at: a switch of other threads
		 * costs the same with --vcpu-sched as without it.
		 */
		if (switch_has_vcpu(slot, prev_tid, next_tid)) {
			unsigned int state = prev->__state;
			struct switch_event e = {
				.prev_ids = (__u64)prev->tgid << 32 | prev_tid,
				.next_ids = (__u64)next->tgid << 32 | next_tid,
				/* As the sched_switch event's prev_state: a preempted task is still running. */
				.prev_state = preempt ? TASK_RUNNING : state,
				/* Still runnable when switched out (preempted, or a yield): it waits for a CPU from now on. */
				.prev_involuntary = preempt || state == TASK_RUNNING,
			};
			/* The names only for a switch that is recorded: --vcpu-sched. */
			if (vcpu_sched_on) {
				bpf_probe_read_kernel(e.prev_comm, sizeof(e.prev_comm), prev->comm);
				bpf_probe_read_kernel(e.next_comm, sizeof(e.next_comm), next->comm);
			}
			vcpu_switch(slot, &e);
		} else {
			slot->running_thread = 0; /* no vCPU thread runs here now */
		}
		slot->owner = (__u64)next->tgid << 32 | next_tid;
	}
	return 0;
}

#endif /* HYPERTRACE_FUSE_BPF_H */
