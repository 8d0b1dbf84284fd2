/* SPDX-License-Identifier: GPL-2.0 */
/*
 * record --exits, the vCPU account: each vCPU thread's entry in
 * vcpu_thread_table, its state (guest, kvm, vmm, wait, halted, blocked) and
 * the time in each, adding up to its time (see vcpu_state.h). Under
 * exit_causes.bpf.h and exits.bpf.h, which move threads between states.
 */
#ifndef HYPERTRACE_VCPU_ACCOUNT_BPF_H
#define HYPERTRACE_VCPU_ACCOUNT_BPF_H

#include "exit_series.bpf.h"

static __always_inline bool tid_is_vcpu(__u32 tid)
{
	__u32 bit = tid & (HT_TID_BITS - 1);

	return (vcpu_tid_bits[bit >> 6] >> (bit & 63)) & 1;
}

static __always_inline void tid_mark_vcpu(__u32 tid, bool on)
{
	__u32 bit = tid & (HT_TID_BITS - 1);
	__u64 mask = 1ull << (bit & 63);

	if (on)
		__sync_fetch_and_or(&vcpu_tid_bits[bit >> 6], mask);
	else
		__sync_fetch_and_and(&vcpu_tid_bits[bit >> 6], ~mask);
}

/* The entry at idx of vcpu_thread_table; NULL if out of range. */
static __always_inline struct vcpu_thread *thread_at(__u32 idx)
{
	return bpf_map_lookup_elem(&vcpu_thread_table, &idx);
}

/* The halts of the thread at idx of vcpu_thread_table (vcpu_halts); NULL if out of range. */
static __always_inline struct ht_vcpu_halts *halts_at(__u32 idx)
{
	return bpf_map_lookup_elem(&vcpu_halts, &idx);
}

/* The entry of vCPU thread tid and its index (*idx); NULL if tid has none. */
static __always_inline struct vcpu_thread *thread_of(__u32 tid, __u32 *idx)
{
	__u32 *i = tid_is_vcpu(tid) ? bpf_map_lookup_elem(&vcpu_thread_ids, &tid) : NULL;

	if (!i)
		return NULL;
	*idx = *i;
	return thread_at(*i);
}

/* The thread's current state. */
static __always_inline __u32 thread_state(const struct vcpu_thread *t)
{
	return t->since_state & VCPU_STATE_MASK;
}

/*
 * The account's one transition: the current state ends at now and state
 * begins (gone: the thread ended, and its account with it). The state's
 * time goes into state_ns before the new time goes into since_state, one
 * store: user space, which reads the entry while it changes, knows a copy
 * taken in between by its states not adding up (see vcpu_thread). A clock
 * value before the state's start (the clocks of two CPUs a few ns apart, a
 * wake-up read on one and a switch on another) moves nothing back: the
 * states still add up, and none goes below zero.
 */
static __always_inline void account_to(struct vcpu_thread *t, __u32 state, __u64 now, __u64 gone)
{
	__u64 w = t->since_state, since = vcpu_thread_time(w);
	__u32 from = w & VCPU_STATE_MASK;

	if (now > since) {
		if (from < HT_VCPU_NSTATES)
			t->state_ns[from] += now - since;
		since = now;
	}
	barrier();
	t->since_state = since << VCPU_TIME_SHIFT | (w & VCPU_GONE) | gone | state;
}

/* Thread t is switched in (or found running) at now: its time off the CPU ends, its account goes back to the state it left. */
static __always_inline void resume_thread(struct vcpu_thread *t, __u64 now)
{
	t->running = 1;
	if (t->out_ns) {
		if (t->out_involuntary)
			t->stat.preempt_ns += now - t->out_ns;
		else
			t->stat.voluntary_ns += now - t->out_ns;
		t->out_ns = 0;
	}
	if (thread_state(t) > HT_VCPU_VMM)
		account_to(t, t->resume_state, now, 0);
}

static __always_inline bool is_halt_exit(__u32 isa, __u32 reason)
{
	if (isa == HT_ISA_VMX)
		return reason == HT_VMX_EXIT_REASON_HLT;
	return reason == HT_SVM_EXIT_CODE_HLT || reason == HT_SVM_EXIT_CODE_IDLE_HLT;
}

/* Threads a probe for a free entry looks at: a host with far fewer vCPU threads than entries finds one at once. */
#define HT_VCPU_THREAD_PROBES 8

/* A subprogram takes at most five arguments: a vCPU id and a state travel as one. */
#define VCPU_AND_STATE(vcpu, state) ((__u32)(vcpu) | (__u32)(state) << 16)

/*
 * One of tgid's share of vcpu_thread_table's entries (limits.h), taken;
 * NULL if it is spent (its threads_over counts the exit) or vm_shares is
 * full. The caller gives it back if it makes no entry.
 */
static __always_inline struct ht_vm_share *take_thread_share(__u32 tgid)
{
	struct ht_vm_share *share = vm_share(tgid);
	__u32 bound = (vcpu_thread_mask + 1) >> HT_VCPU_THREADS_PER_VM_SHIFT;

	if (!share)
		return NULL;
	if (share_take(&share->threads, bound))
		return share;
	__sync_fetch_and_add(&share->threads_over, 1);
	return NULL;
}

/*
 * A new entry for vCPU thread ids (tgid << 32 | tid) of vcpu_and_state
 * (VCPU_AND_STATE), in that state from now on, marked in vcpu_tid_bits,
 * within its VM's share. Returns its index + 1; 0 if the share is spent,
 * none is free among the probed ones or vcpu_thread_ids is full (the
 * caller counts it). Global (see the top of this file):
 * vcpu_thread_register is its callers' form.
 */
__noinline __u32 vcpu_thread_add(__u64 ids, __u32 vcpu_and_state, __u64 now)
{
	__u32 tid = (__u32)ids, tgid = ids >> 32, vcpu = vcpu_and_state & 0xffff, state = vcpu_and_state >> 16;
	__u32 first = tid * 0x9e3779b1u;
	struct ht_vm_share *share = take_thread_share(tgid);

	if (!share)
		return 0;
	for (__u32 i = 0; i < HT_VCPU_THREAD_PROBES; i++) {
		__u32 at = (first + i) & vcpu_thread_mask;
		struct vcpu_thread *t = thread_at(at);

		if (!t)
			break;
		/* Taken with one atomic step: two CPUs may register two threads at once. */
		if (t->in_use != VCPU_ENTRY_FREE ||
		    __sync_val_compare_and_swap(&t->in_use, VCPU_ENTRY_FREE, VCPU_ENTRY_TAKEN) != VCPU_ENTRY_FREE)
			continue;
		/* Preallocated elements: safe under the runqueue lock (see moved_states). */
		if (bpf_map_update_elem(&vcpu_thread_ids, &tid, &at, BPF_NOEXIST)) {
			t->in_use = VCPU_ENTRY_FREE;
			break;
		}
		t->in_share = 1;
		__builtin_memset(&t->stat, 0, sizeof(t->stat));
		t->stat.pid = tgid;
		t->stat.tid = tid;
		t->stat.vcpu = vcpu;
		__builtin_memset(t->state_ns, 0, sizeof(t->state_ns));
		t->start_ns = now;
		t->since_state = now << VCPU_TIME_SHIFT | state;
		t->resume_state = HT_VCPU_KVM;
		t->running = state <= HT_VCPU_VMM;
		t->out_ns = 0;
		t->exit_open = 0;
		t->out_involuntary = 0;
		t->uexit_hlt = 0;
		/* No halt yet, its polling not known until its first entry reads it (vcpu_halts.bpf.h). */
		struct ht_vcpu_halts *h = halts_at(at);

		if (h) {
			__builtin_memset(h, 0, sizeof(*h));
			h->poll_ns = HT_HALT_POLL_NS_UNKNOWN;
		}
		struct ht_vcpu_timer_due *due = bpf_map_lookup_elem(&vcpu_timer_dues, &at);

		if (due)
			__builtin_memset(due, 0, sizeof(*due));
		/* Its interrupts: none yet, and found by its VM and vCPU id from now on (vcpu_irqs.bpf.h). */
		struct vcpu_irq_state *irqs = bpf_map_lookup_elem(&vcpu_irqs, &at);

		if (irqs) {
			/* In two parts: clang writes a memset inline only up to a kilobyte, and would join them. */
			__builtin_memset(&irqs->counts, 0, sizeof(irqs->counts));
			barrier();
			__builtin_memset(irqs->pending, 0,
					 sizeof(irqs->pending) + sizeof(irqs->wait_base) + sizeof(irqs->timer_due_ns));
		}
		t->irq_injected = 0;
		__u64 apic_key = vcpu_apic_key(ids, vcpu);

		bpf_map_update_elem(&vcpu_apic_ids, &apic_key, &at, BPF_ANY);
		t->apic_vcpu = vcpu;
		t->index = at;
		t->kvm_vcpu = 0;
		t->wake_ns = 0;
		t->wake_due_ns = 0;
		t->halt_sleep_ns = 0;
		t->halt_poll_changed = 0;
		t->entry_work = 1;
		if (boot_on) {
			/* --boot: a new thread at this index, not decided yet (boot.bpf.h). */
			struct boot_thread *bt = bpf_map_lookup_elem(&boot_threads, &at);

			if (bt)
				bt->state = BOOT_UNDECIDED;
		}
		/* Whole before user space may read it; then user space looks at it (vcpu_thread_used). */
		barrier();
		t->in_use = VCPU_ENTRY_READY;
		__u32 zero = 0;
		struct vcpu_thread_used *used = bpf_map_lookup_elem(&vcpu_thread_used, &zero);

		if (used)
			used->used[at & (HT_MAX_VCPU_THREADS - 1)] = 1;
		tid_mark_vcpu(tid, true);
		return at + 1;
	}
	__sync_fetch_and_add(&share->threads, -1);
	return 0;
}

/* vcpu_thread_add's entry, and its index in *idx; NULL if none was made. */
static __always_inline struct vcpu_thread *vcpu_thread_register(__u64 ids, __u32 vcpu_and_state, __u64 now,
								__u32 *idx)
{
	__u32 at = vcpu_thread_add(ids, vcpu_and_state, now);

	if (!at)
		return NULL;
	*idx = at - 1;
	return thread_at(at - 1);
}

/*
 * The calling thread's entry when its CPU's slot does not name it (a
 * thread not seen before, or a switch nobody reported): found by its id,
 * or made, in vcpu_and_state (VCPU_AND_STATE), if create (an exit or an
 * entry; not a return to user space, which has no vCPU id); the slot names
 * it from now on (slot->running_thread: its index + 1, 0 if it has none).
 * Global (see the top of this file): own_thread is its callers' form.
 */
__noinline int name_own_thread(struct vcpu_state *slot, __u64 me, __u32 vcpu_and_state, __u64 now, bool create)
{
	__u32 idx = 0, at = 0;

	if (!slot)
		return 0;
	if (thread_of((__u32)me, &idx))
		at = idx + 1;
	else if (create && !(at = vcpu_thread_add(me, vcpu_and_state, now)))
		count(HT_CNT_EXIT_NO_THREAD);
	slot->running_thread = at;
	return 0;
}

/* name_own_thread's entry; NULL if it has none. */
static __always_inline struct vcpu_thread *own_thread(struct vcpu_state *slot, __u64 me, __u32 vcpu_and_state,
						       __u64 now, bool create)
{
	name_own_thread(slot, me, vcpu_and_state, now, create);
	return slot->running_thread ? thread_at(slot->running_thread - 1) : NULL;
}

/* The running thread's entry, as the switches put it into the CPU's slot; else found (or made) by its id. */
static __always_inline struct vcpu_thread *running_thread(struct vcpu_state *slot, __u32 vcpu, __u32 state, __u64 now,
							  bool create)
{
	struct vcpu_thread *t = NULL;

	if (slot->running_thread)
		t = thread_at(slot->running_thread - 1);
	if (!t)
		t = own_thread(slot, bpf_get_current_pid_tgid(), VCPU_AND_STATE(vcpu, state), now, create);
	return t;
}

/*
 * The account's guest state, chained to the exit that ended it: kvm_exit
 * does not touch the account (it leaves the exit's time in the CPU's slot),
 * so the thread's entry still says guest while KVM handles the exit. The
 * next event of the thread that changes its account ends the guest state
 * at the exit's time (exit_ns) and begins kvm there: one write of the
 * account per exit, at its end, with the clock reads the exit's timing
 * makes anyway. User space reads the open exits of the CPU slots to do the
 * same for a read in between (tracer_read.c).
 */
static __always_inline void guest_until_exit(struct vcpu_thread *t, __u64 exit_ns)
{
	if ((t->since_state & (VCPU_STATE_MASK | VCPU_GONE)) == HT_VCPU_GUEST &&
	    exit_ns >= vcpu_thread_time(t->since_state))
		account_to(t, HT_VCPU_KVM, exit_ns, 0);
}

/*
 * kvm_entry of the thread whose exit the slot holds: guest until the exit
 * (unless a return to user space or a switch ended it already), then kvm
 * or vmm until now, and guest from now on. The common case, guest to guest
 * across one exit, in one write of the entry. The thread's entry, or NULL.
 */
static __always_inline struct vcpu_thread *account_entry(struct vcpu_state *slot, __u64 now)
{
	struct vcpu_thread *t = running_thread(slot, slot->exit_vcpu, HT_VCPU_GUEST, now, true);
	__u64 exit_ns = slot->exit_ns;

	if (!t)
		return NULL;
	__u64 w = t->since_state, since = vcpu_thread_time(w);
	if ((w & (VCPU_STATE_MASK | VCPU_GONE)) == HT_VCPU_GUEST && exit_ns >= since && now >= exit_ns) {
		t->state_ns[HT_VCPU_GUEST] += exit_ns - since;
		t->state_ns[HT_VCPU_KVM] += now - exit_ns;
		barrier();
		t->since_state = now << VCPU_TIME_SHIFT | HT_VCPU_GUEST;
	} else if ((w & VCPU_STATE_MASK) != HT_VCPU_GUEST) {
		account_to(t, HT_VCPU_GUEST, now, 0);
	}
	return t;
}

#endif /* HYPERTRACE_VCPU_ACCOUNT_BPF_H */
