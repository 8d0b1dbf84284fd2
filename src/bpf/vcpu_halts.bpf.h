/* SPDX-License-Identifier: GPL-2.0 */
/*
 * record --exits: each vCPU thread's halts in KVM and KVM's halt polling
 * (struct ht_vcpu_halts in vcpu_halts, at its vcpu_thread_table index),
 * what an operator tunes kvm.halt_poll_ns from.
 *
 * KVM's kvm_vcpu_halt polls for a wake-up for up to the vCPU's
 * halt_poll_ns, then sleeps; at its end it may grow or shrink halt_poll_ns
 * (kvm_halt_poll_ns: old, new) and then fires kvm_vcpu_wakeup (the halt's
 * ns from start to wake-up, and whether it slept). Neither event names the
 * value the halt polled with unless it changed: the thread's entry follows
 * it from change to change, and the kvm_entry after a halt reads the
 * vCPU's halt_poll_ns itself (it has the vCPU), which also covers a
 * thread's first halt once one entry came before it and a value that
 * kvm.halt_poll_ns cut without an event. A halt with no value known is
 * counted in poll_unknown, never guessed.
 *
 * Halts are rare next to exits: both handlers are global functions off the
 * exit path (see exits.bpf.h's rule), and kvm_entry pays one load of a
 * byte on the thread's first line, which its account has just written
 * (exit_end hands the entry back when the byte, after_halt, is set).
 */
#ifndef HYPERTRACE_VCPU_HALTS_BPF_H
#define HYPERTRACE_VCPU_HALTS_BPF_H

#include "exits.bpf.h"
#include "hypertrace/synthetic_events.h" /* HT_SYNTH_TIMER_VECTOR */

/* kvm_halt_poll_ns of thread tid, during its halt: old was in force for this halt, new is for the next. */
__noinline int vcpu_halt_poll_changed(__u32 tid, __u32 poll_new, __u32 poll_old)
{
	__u32 idx;
	struct vcpu_thread *t = thread_of(tid, &idx);
	struct ht_vcpu_halts *h = t ? halts_at(idx) : NULL;

	if (!t || !h)
		return 0;
	t->halt_poll_old = poll_old;
	t->halt_poll_changed = 1;
	h->poll_ns = poll_new;
	return 0;
}

/*
 * kvm_vcpu_wakeup of thread tid: its halt took ns in KVM, and slept if
 * waited. A thread not known yet halted before it was first seen: that halt
 * is not one of its own from the recording's start, and is left out.
 */
__noinline int vcpu_halt_ended(__u32 tid, __u64 ns, __u32 waited)
{
	__u32 idx;
	struct vcpu_thread *t = thread_of(tid, &idx);
	struct ht_vcpu_halts *h = t ? halts_at(idx) : NULL;

	if (!t || !h)
		return 0;
	__u32 in_force = t->halt_poll_changed ? t->halt_poll_old : h->poll_ns;

	h->halts++;
	if (in_force == HT_HALT_POLL_NS_UNKNOWN) {
		h->poll_unknown++;
	} else if (in_force) {
		h->polled++;
		if (!waited) {
			h->caught++;
			h->caught_ns += ns;
		}
	}
	if (waited) {
		h->slept++;
		h->slept_ns += ns;
	}
	t->halt_poll_changed = 0;
	t->after_halt = 1;
	return 0;
}

/*
 * kvm_entry of thread t (exit_end's: a halt ended or its sleep was woken
 * since its last entry, or it was first seen), vCPU vcpu: the value its
 * next halt polls with, as KVM holds it, and the end of its wake-up
 * (vcpu_wakeups.bpf.h). vcpu NULL: the synthetic programs and the
 * benchmark, which have none; their vCPUs' timer is HT_SYNTH_TIMER_VECTOR.
 */
static __always_inline void vcpu_halt_at_entry(struct vcpu_thread *t, const struct kvm_vcpu *vcpu)
{
	struct ht_vcpu_halts *h = halts_at(t->index);

	if (vcpu && h)
		h->poll_ns = vcpu->halt_poll_ns;
	if (t->wake_ns)
		vcpu_wake_ended(t, vcpu ? vcpu_timer_vector(vcpu) : HT_SYNTH_TIMER_VECTOR);
	t->after_halt = 0;
}

#endif /* HYPERTRACE_VCPU_HALTS_BPF_H */
