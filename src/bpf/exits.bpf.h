/* SPDX-License-Identifier: GPL-2.0 */
/*
 * record --exits: every VM exit of the host, and how its vCPU threads wait
 * for a host CPU. fuse.bpf.h's kvm_exit, kvm_entry, sched_switch and
 * thread-exit handlers call in here; the maps and the exits_on switch are
 * maps.bpf.h's. With exits_on false (rodata) the
 * verifier removes every call of this file from the programs.
 *
 * Time in the host: kvm_exit notes the exit in its CPU's slot (cpu_states);
 * the next kvm_entry on that CPU is the same thread's unless the thread was
 * switched out in between, and then sched_switch has moved the open exit
 * into the thread's vcpu_thread_table entry, where kvm_entry finds it. So the
 * common pair costs two slot accesses, a clock read and the thread's ids
 * at each end, and the update of the series' entry in its
 * CPU's own table (exit_cache: an array lookup, no helper call); nothing
 * goes through a ring buffer.
 *
 * Waiting: sched_switch and sched_wakeup test one bit per thread id
 * (vcpu_tid_bits) and touch vcpu_thread_table only for vCPU threads; for every
 * other thread a switch costs a few loads and one store into the CPU's own
 * slot (who runs there: kvm_entry compares it with its own thread, so an
 * open exit is never paired with another thread's entry).
 *
 * Verification: the paths off the common one are global functions
 * (noinline, not static). The verifier checks a global function's body once
 * per program, with its arguments as their types say, where it walks a
 * static one again for each state its callers reach it in; a time's log2
 * slot alone is five compares, 32 paths. kvm_entry's and thread exit's
 * programs took 17468 and 15348 instructions to verify with these paths
 * static, most of record's start-up. A global function returns a scalar
 * and tests its pointers, which may be NULL to the verifier; where its
 * callers want a pointer, an inline wrapper looks it up. The common path
 * stays inline: a call costs the exit + entry pair a few ns.
 *
 * The one rule for a function off the common path, in this file and the
 * four under it (exit_series.bpf.h, vcpu_account.bpf.h, exit_causes.bpf.h,
 * boot.bpf.h):
 * global, unless it must stay static __noinline because a global one could
 * not do its job: new_exit_series and new_cause_series hand their caller a
 * map value (a global function returns a scalar); emit_switch takes the
 * caller's thread entry and switch event, which it writes into a ring
 * record and which a global function would get as memory that may be
 * NULL, tested again on every switch; count_cause_not_its and vcpu_wakeup
 * are each reached from one place in their programs, where the verifier
 * walks a static function once anyway.
 */
#ifndef HYPERTRACE_EXITS_BPF_H
#define HYPERTRACE_EXITS_BPF_H

#include "boot.bpf.h"
#include "vcpu_wakeups.bpf.h"

/*
 * The slot's open exit goes into its thread's entry (made if it has none),
 * where that thread's kvm_entry finds it, on whatever CPU: the thread is
 * the slot's owner, which kvm_exit makes the exiting thread. Called when
 * the thread leaves the CPU with its exit open, and when another thread
 * finds it here (its switch went unseen).
 */
__noinline int park_open_exit(struct vcpu_state *slot, __u64 now)
{
	if (!slot || !slot->exit_open)
		return 0;
	__u64 ids = slot->owner;
	__u32 idx = 0;
	struct vcpu_thread *t = (__u32)ids ? thread_of((__u32)ids, &idx) : NULL;

	slot->exit_open = 0;
	if (!t && (__u32)ids)
		t = vcpu_thread_register(ids, VCPU_AND_STATE(slot->exit_vcpu, HT_VCPU_KVM), now, &idx);
	if (!t) {
		count(HT_CNT_EXIT_NO_THREAD);
		return 0;
	}
	guest_until_exit(t, slot->exit_ns);
	t->exit_ns = slot->exit_ns;
	t->exit_reason = slot->exit_reason;
	t->exit_isa = slot->exit_isa;
	t->stat.vcpu = slot->exit_vcpu;
	if (boot_on)
		t->exit_rip = slot->exit_rip;
	/* Its cause goes with it (valid if stamped with its time: see exit_cause_note). */
	t->cause = *cpu_cause_note(bpf_get_smp_processor_id());
	t->exit_open = 1;
	return 0;
}

/*
 * The thread me (tgid << 32 | tid) runs here, and the slot names someone
 * else: no switch on this CPU named it yet (just after attach), or its
 * switch in went unseen. Some kernels do not report every switch: one
 * seen here never reports a switch from one CPU's idle task. An open exit
 * of the slot's owner is parked for it; me's entry, if it has one, is
 * running again from now (its time since it was switched out counts as
 * waiting, the nearest the programs can tell). Counted as a switch put
 * right, not a loss.
 */
__noinline int claim_slot(struct vcpu_state *slot, __u64 me, __u64 synthetic_now)
{
	if (!slot)
		return 0;
	__u64 now = clock_ns(synthetic_now);
	__u32 idx = 0;

	if (slot->owner)
		count(HT_CNT_UNREPORTED_SWITCH);
	park_open_exit(slot, now);
	slot->owner = me;
	struct vcpu_thread *t = thread_of((__u32)me, &idx);

	slot->running_thread = t ? idx + 1 : 0;
	if (t && !t->running)
		resume_thread(t, now);
	return 0;
}

/*
 * kvm_exit: the running thread's exit is open from now on (its account's
 * guest state ends there: guest_until_exit). The clock is read last, so the time in the host
 * starts where the program hands the event back (as kvm_entry's count_exit
 * reads it only once its work is done): the programs' own cost is in
 * neither end.
 */
static __always_inline void exit_begin(struct vcpu_state *slot, __u32 reason, __u32 isa, __u32 vcpu,
				       __u64 synthetic_now)
{
	__u64 me = bpf_get_current_pid_tgid();

	/* The exit is its owner's (see claim_slot): a switch that went unseen is put right here. */
	if (slot->owner != me)
		claim_slot(slot, me, synthetic_now);
	slot->exit_reason = isa == HT_ISA_VMX ? reason & HT_VMX_EXIT_REASON_MASK : reason;
	slot->exit_isa = isa;
	slot->exit_vcpu = vcpu;
	__u64 now = clock_ns(synthetic_now);
	slot->exit_ns = now;
	/* Its time before it is open: a reader that sees it open sees its time (see guest_until_exit). */
	barrier();
	slot->exit_open = 1;
	/* A thread the switches have not named here (first seen): its entry, in kvm from now, once. */
	if (!slot->running_thread)
		running_thread(slot, vcpu, HT_VCPU_KVM, now, true);
}

/* kvm_userspace_exit: the running vCPU thread returns to the VMM (reason: KVM_EXIT_*). */
static __always_inline int handle_kvm_userspace_exit(__u32 reason, __u64 synthetic_now)
{
	if (!exits_on)
		return 0;
	__u32 cpu = bpf_get_smp_processor_id();
	struct vcpu_state *slot = cpu_slot(cpu);
	__u64 now = clock_ns(synthetic_now);
	/* Where its exit's time in KVM ends and its time in the VMM begins. */
	__u64 exit;
	struct exit_cause_note *n = open_exit_note(slot, cpu, &exit);

	if (n && !n->uexit_ns)
		n->uexit_ns = now;
	struct vcpu_thread *t = running_thread(slot, 0, HT_VCPU_VMM, now, false);

	if (!t)
		return 0;
	if (slot->exit_open)
		guest_until_exit(t, slot->exit_ns);
	t->uexit_hlt = reason == HT_KVM_EXIT_HLT;
	if (thread_state(t) != HT_VCPU_VMM)
		account_to(t, HT_VCPU_VMM, now, 0);
	return 0;
}

/* Thread t's open exit (taken out of it by the caller), of VM process tgid: close_exit. */
static __always_inline __u64 close_thread_exit(struct vcpu_thread *t, __u32 tgid, __u64 synthetic_now, __u32 cpu)
{
	struct ht_exit_key key = { .pid = tgid, .vcpu = t->stat.vcpu, .isa = t->exit_isa, .reason = t->exit_reason };

	return close_exit(&key, &t->cause, t->exit_ns, synthetic_now, cpu);
}

/*
 * kvm_entry whose CPU slot holds no open exit of the caller (me: its
 * tgid << 32 | tid): the thread was switched out since its exit (the exit
 * is in its vcpu_thread_table entry), or its exit came before the programs
 * were attached. Also where a vCPU thread that was not switched out yet
 * gets its entry, and where a slot whose owner is wrong is put right.
 * 1 if the thread's entry (the slot names it from now on) has a halt's
 * part or an interrupt's delivery to do at this entry (entry_work), else 0.
 */
__noinline int exit_end_moved(__u32 vcpu_id, struct vcpu_state *slot, __u64 synthetic_now, __u64 me, __u32 cpu)
{
	__u32 tgid = me >> 32;
	__u64 now = 0, closed = 0;

	if (!slot)
		return 0;

	/* A switch went unseen: an open exit here is the owner's, parked for it, never paired with me. */
	if (slot->owner != me)
		claim_slot(slot, me, synthetic_now);
	struct vcpu_thread *t = NULL;

	if (slot->running_thread)
		t = thread_at(slot->running_thread - 1);
	if (t && t->exit_open) {
		t->exit_open = 0;
		closed = t->exit_ns;
		if (boot_on)
			boot_take_cause(cpu, &t->cause);
		now = close_thread_exit(t, tgid, synthetic_now, cpu);
	}
	if (!now)
		now = clock_ns(synthetic_now);
	if (!t) {
		t = own_thread(slot, me, VCPU_AND_STATE(vcpu_id, HT_VCPU_GUEST), now, true);
		if (t && t->exit_open) {
			t->exit_open = 0;
			closed = t->exit_ns;
			if (boot_on)
				boot_take_cause(cpu, &t->cause);
			close_thread_exit(t, tgid, now, cpu);
		}
	}
	if (!t)
		return 0;
	if (thread_state(t) != HT_VCPU_GUEST)
		account_to(t, HT_VCPU_GUEST, now, 0);
	if (boot_on)
		boot_note(cpu, slot->running_thread, me, closed, now, t->exit_reason, t->exit_isa, closed ? t->stat.vcpu : vcpu_id,
			  t->exit_rip, 0);
	return t->entry_work;
}

/*
 * kvm_entry: the running thread's open exit ends here, and its account goes
 * into guest at the clock value the exit ended at. The thread's ids cost
 * one helper call; the switches keep the slot's owner, so an open exit of
 * the slot is this thread's when the two agree (or no switch on this CPU
 * named anyone since attach). The thread's entry if a halt ended since
 * its last entry (vcpu_halts.bpf.h reads its halt_poll_ns), else NULL.
 */
static __always_inline struct vcpu_thread *exit_end(__u32 vcpu_id, struct vcpu_state *slot,
						    __u64 synthetic_now, __u32 cpu)
{
	__u64 me = bpf_get_current_pid_tgid();

	if (!slot->exit_open || (slot->owner != me && slot->owner)) {
		if (!exit_end_moved(vcpu_id, slot, synthetic_now, me, cpu) || !slot->running_thread)
			return NULL;
		return thread_at(slot->running_thread - 1);
	}
	slot->owner = me;
	bool booting = boot_on && boot_wanted(slot->running_thread);

	if (booting)
		boot_take_cause(cpu, cpu_cause_note(cpu));
	__u64 now = count_exit(me >> 32, slot->exit_vcpu, slot->exit_isa, slot->exit_reason, slot->exit_ns,
			       synthetic_now, cpu);
	exit_cause_done(me >> 32, slot->exit_isa, slot->exit_reason, cpu_cause_note(cpu), slot->exit_ns, now);
	if (!now)
		now = clock_ns(synthetic_now);
	struct vcpu_thread *t = account_entry(slot, now);

	if (booting)
		boot_note(cpu, slot->running_thread, me, slot->exit_ns, now, slot->exit_reason, slot->exit_isa,
			  slot->exit_vcpu, slot->exit_rip, 0);
	/* Closed after the account took it: a reader sees the exit open, or the account past it. */
	barrier();
	slot->exit_open = 0;
	return t && t->entry_work ? t : NULL;
}

/*
 * A sched_switch as the switch handlers take it, from the tracepoint or a
 * synthetic program. The names are filled only when the switch is recorded
 * (vcpu_sched_on and a vCPU thread on a side): reading them costs.
 */
struct switch_event {
	__u64 prev_ids, next_ids; /* tgid << 32 | tid */
	__u64 prev_state;         /* as the sched_switch event has it: 0 when preempted */
	__u64 now;                /* synthetic time; 0: read the clock */
	__u32 prev_involuntary;   /* prev is still runnable */
	__u32 pad;
	char prev_comm[16], next_comm[16];
};

/* A switch the vCPU threads' accounting looks at: an open exit leaves, or a vCPU thread is on a side. */
static __always_inline bool switch_has_vcpu(struct vcpu_state *slot, __u32 prev_tid, __u32 next_tid)
{
	return slot->exit_open || tid_is_vcpu(prev_tid) || tid_is_vcpu(next_tid);
}

/*
 * --vcpu-sched: thread t's switch (out: t is e's prev; in: t is e's next)
 * into the ring of this CPU, if -p/--vm and --vcpu select the thread's VM
 * and vCPU. Lost if the ring is full, and counted.
 */
static __noinline int emit_switch(struct vcpu_thread *t, __u32 kind, const struct switch_event *e, __u64 now)
{
	__u32 cpu;
	struct ht_vcpu_switch *sw = reserve_vcpu_record(t->stat.pid, t->stat.vcpu, HT_CNT_SWITCH_DROPS, &cpu);

	if (!sw)
		return 0;
	sw->time_ns = now;
	sw->kind = kind;
	if (kind == HT_SWITCH_OUT) {
		sw->prev_state = e->prev_state;
		sw->involuntary = e->prev_involuntary;
		sw->other_tid = (__u32)e->next_ids;
		sw->other_pid = e->next_ids >> 32;
		__builtin_memcpy(sw->other_comm, e->next_comm, sizeof(sw->other_comm));
	} else {
		sw->other_tid = (__u32)e->prev_ids;
		sw->other_pid = e->prev_ids >> 32;
		__builtin_memcpy(sw->other_comm, e->prev_comm, sizeof(sw->other_comm));
	}
	sw->host_pid = t->stat.pid;
	sw->host_tid = t->stat.tid;
	sw->vcpu_id = t->stat.vcpu;
	sw->cpu = cpu;
	sw->flags = HT_REC_F_VCPU_SWITCH;
	bpf_ringbuf_submit(sw, wakeup_flags(cpu));
	return 0;
}

/*
 * A thread that blocks is halted if its open exit is a halt and the halt is
 * what it waits in: in KVM (the in-kernel halt), or in the VMM after KVM
 * handed it the halt (KVM_EXIT_HLT). A thread back in the VMM for anything
 * else (a signal: a VM stopped, say) is blocked, whatever exit it left.
 */
static __always_inline bool halted(const struct vcpu_thread *t)
{
	__u32 state = thread_state(t);

	return t->exit_open && is_halt_exit(t->exit_isa, t->exit_reason) &&
	       (state == HT_VCPU_KVM || (state == HT_VCPU_VMM && t->uexit_hlt));
}

/*
 * A switch with a vCPU thread on either side: prev's open exit goes into its
 * entry; prev's account goes to wait if it is still runnable, else to halted
 * (blocked in a halt exit) or blocked; next's account goes back to the state
 * it left (kvm or vmm), its time off the CPU ends, and the slot names it.
 * With --vcpu-sched each vCPU thread's side is recorded.
 */
__noinline int vcpu_switch(struct vcpu_state *slot, const struct switch_event *e)
{
	if (!slot || !e)
		return 0;
	__u64 now = clock_ns(e->now);
	__u32 prev_tid = (__u32)e->prev_ids, next_tid = (__u32)e->next_ids;
	__u32 idx = 0;

	/* The thread that exited (prev, unless a switch went unseen) takes its open exit with it. */
	if (slot->exit_open) {
		if ((__u32)slot->owner != prev_tid)
			count(HT_CNT_UNREPORTED_SWITCH);
		park_open_exit(slot, now);
	}
	struct vcpu_thread *t = thread_of(prev_tid, &idx);

	if (t && prev_tid != next_tid) {
		t->running = 0;
		t->out_ns = now;
		t->out_involuntary = e->prev_involuntary;
		if (e->prev_involuntary)
			t->stat.preempt_count++;
		else
			t->stat.voluntary_count++;
		if (thread_state(t) <= HT_VCPU_VMM)
			t->resume_state = thread_state(t);
		account_to(t, e->prev_involuntary ? HT_VCPU_WAIT : halted(t) ? HT_VCPU_HALTED : HT_VCPU_BLOCKED, now, 0);
		if (!e->prev_involuntary && t->wake_ns)
			vcpu_wake_reblocked(t);
		if (vcpu_sched_on)
			emit_switch(t, HT_SWITCH_OUT, e, now);
	}
	struct vcpu_thread *n = thread_of(next_tid, &idx);
	slot->running_thread = n ? idx + 1 : 0;
	if (!n || (t == n && prev_tid == next_tid))
		return 0;
	resume_thread(n, now);
	if (vcpu_sched_on)
		emit_switch(n, HT_SWITCH_IN, e, now);
	return 0;
}

/*
 * Every switch: who runs on this CPU from now on (the slot's owner, for the
 * VM process of its exits, and its vCPU thread entry), and the vCPU threads'
 * part if either side is one. For an event already built (the synthetic
 * switches); the tracepoint's handle_sched_switch does the same and builds
 * its event only for that part.
 */
static __always_inline void exits_sched_switch(struct vcpu_state *slot, const struct switch_event *e)
{
	if (switch_has_vcpu(slot, (__u32)e->prev_ids, (__u32)e->next_ids))
		vcpu_switch(slot, e);
	else
		slot->running_thread = 0;
	slot->owner = e->next_ids;
}

/*
 * A wake-up: a vCPU thread blocked off its CPU waits for one from now on;
 * one that slept in a halt begins a wake-up (vcpu_wakeups.bpf.h).
 */
static __noinline int vcpu_wakeup(__u32 tid, __u64 synthetic_now)
{
	__u32 idx;
	struct vcpu_thread *t = thread_of(tid, &idx);

	/* Woken while still on its CPU (before it switched out), or already runnable: nothing changes. */
	if (!t || t->running)
		return 0;
	__u32 state = thread_state(t);
	__u64 now;

	if (state != HT_VCPU_HALTED && state != HT_VCPU_BLOCKED)
		return 0;
	now = clock_ns(synthetic_now);
	if (state == HT_VCPU_HALTED)
		vcpu_wake_begins(t, now);
	account_to(t, HT_VCPU_WAIT, now, 0);
	return 0;
}

static __always_inline int handle_sched_wakeup(__u32 tid, __u64 synthetic_now)
{
	if (tid_is_vcpu(tid))
		vcpu_wakeup(tid, synthetic_now);
	return 0;
}

/*
 * A thread exits. Its open exit ends with it and is counted, with its time
 * in the host until now: a vCPU thread's last exits (a VM shutting down, a
 * VMM stopping a vCPU) never come back to kvm_entry, and every exit the
 * kernel reported must be in the numbers. Its account closes at now and its
 * entry stays, marked gone, until user space has read it; its id can be
 * some other thread's from now on.
 */
__noinline int exits_thread_exit(struct vcpu_state *slot)
{
	if (!slot)
		return 0;

	__u64 me = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)me, idx = 0, cpu = bpf_get_smp_processor_id();
	__u64 now = 0;
	struct vcpu_thread *t = thread_of(tid, &idx);

	__u64 exit_ns = slot->exit_open && slot->owner == me ? slot->exit_ns : 0;

	if (exit_ns) {
		struct ht_exit_key key = {
			.pid = me >> 32, .vcpu = slot->exit_vcpu, .isa = slot->exit_isa, .reason = slot->exit_reason,
		};

		if (boot_on)
			boot_take_cause(cpu, cpu_cause_note(cpu));
		now = close_exit(&key, cpu_cause_note(cpu), exit_ns, 0, cpu);
		if (boot_on && t)
			boot_note(cpu, idx + 1, me, exit_ns, now ? now : bpf_ktime_get_ns(), slot->exit_reason,
				  slot->exit_isa, slot->exit_vcpu, slot->exit_rip, HT_BOOT_F_THREAD_END);
	}
	if (t && exit_ns)
		guest_until_exit(t, exit_ns);
	if (exit_ns)
		slot->exit_open = 0;
	else
		park_open_exit(slot, bpf_ktime_get_ns()); /* another thread's, if any: its switch went unseen */
	slot->running_thread = 0;
	if (!t)
		return 0;
	if (!now)
		now = bpf_ktime_get_ns();
	if (t->exit_open) {
		t->exit_open = 0;
		if (boot_on)
			boot_take_cause(cpu, &t->cause);
		close_thread_exit(t, me >> 32, now, cpu);
		if (boot_on)
			boot_note(cpu, idx + 1, me, t->exit_ns, now, t->exit_reason, t->exit_isa, t->stat.vcpu, t->exit_rip,
				  HT_BOOT_F_THREAD_END);
	}
	t->running = 0;
	/* Its last numbers and gone in one write: a reader sees both or neither. */
	account_to(t, thread_state(t), now, VCPU_GONE);
	/* --boot: its last exit, which no entry ended (a VM stopped, or its guest crashed). */
	if (boot_on) {
		struct boot_exit_view *v = boot_view(cpu);

		if (v->thread && v->entry_ns > now)
			v->entry_ns = now;
		boot_flush(NULL, cpu, false);
	}
	bpf_map_delete_elem(&vcpu_thread_ids, &tid);
	/* Its VM's share of the table back (gone if user space freed the VM's share already: nothing to give). */
	if (t->in_share) {
		__u32 tgid = me >> 32;
		struct ht_vm_share *share = bpf_map_lookup_elem(&vm_shares, &tgid);

		t->in_share = 0;
		if (share)
			__sync_fetch_and_add(&share->threads, -1);
	}
	/* Its VM and vCPU id name it no more, unless a newer thread of that vCPU took them already. */
	__u64 apic_key = vcpu_apic_key(me, t->apic_vcpu);
	__u32 *apic_at = bpf_map_lookup_elem(&vcpu_apic_ids, &apic_key);

	if (apic_at && *apic_at == idx)
		bpf_map_delete_elem(&vcpu_apic_ids, &apic_key);
	tid_mark_vcpu(tid, false);
	return 0;
}

#endif /* HYPERTRACE_EXITS_BPF_H */
