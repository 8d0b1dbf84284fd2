/* SPDX-License-Identifier: GPL-2.0 */
/*
 * record --exits: each vCPU thread's halts in KVM and KVM's halt polling
 * (struct ht_vcpu_halts in vcpu_halts, at its vcpu_thread_table index),
 * what an operator tunes kvm.halt_poll_ns from.
 *
 * KVM's kvm_vcpu_halt first cuts the vCPU's halt_poll_ns to the VM's
 * maximum (kvm.halt_poll_ns, or the VM's own KVM_CAP_HALT_POLL), with no
 * event; it polls for a wake-up for up to that value unless the guest polls
 * itself (MSR_KVM_POLL_CONTROL bit 0 clear), then sleeps; at its end it
 * may grow or shrink halt_poll_ns (kvm_halt_poll_ns: old, new), or set it
 * to 0 with no event if the maximum is 0, and then fires kvm_vcpu_wakeup
 * (the halt's ns from start to wake-up, and whether it slept). Neither
 * event names the value the halt polled with unless it changed. So the
 * kvm_entry after a halt (and a thread's first) notes the thread's struct
 * kvm_vcpu, and kvm_vcpu_wakeup reads the value there: with no change
 * during the halt, it is the one the halt polled with, cut already. (The
 * one halt it is not: the maximum set to 0 from another value while that
 * halt went on, which KVM's own statistics count as polled.) A halt with
 * no entry of its thread before it has no vCPU to read: counted in
 * poll_unknown, never guessed. The polling of a halt that slept ends at
 * its first switch-out into the sleep, which the wake-up of that sleep
 * notes (vcpu_wake_begins): no event marks it.
 *
 * Halts are rare next to exits: both handlers are global functions off the
 * exit path (see exits.bpf.h's rule), and kvm_entry pays one load of a
 * byte on the thread's first line, which its account has just written
 * (exit_end hands the entry back when the byte, entry_work, is set).
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
 * The polling of thread t's halt that slept, ns long and ended at now: from
 * its start (now - ns; KVM's ns was read a few instructions before now) to
 * its first switch-out into the sleep. A halt with no such switch-out (the
 * wake-up came before schedule() switched, so it never left its CPU) burned
 * all of it.
 */
static __always_inline __u64 halt_polled_ns(const struct vcpu_thread *t, __u64 ns, __u64 now)
{
	__u64 start = now - ns;

	if (!t->halt_sleep_ns || t->halt_sleep_ns > now)
		return ns;
	return t->halt_sleep_ns > start ? t->halt_sleep_ns - start : 0;
}

/*
 * kvm_vcpu_wakeup of thread tid at synthetic_now (0: the clock now): its
 * halt took ns in KVM, and slept if waited. A thread not known yet halted
 * before it was first seen: that halt is not one of its own from the
 * recording's start, and is left out.
 */
__noinline int vcpu_halt_ended(__u32 tid, __u64 ns, __u32 waited, __u64 synthetic_now)
{
	__u32 idx;
	struct vcpu_thread *t = thread_of(tid, &idx);
	struct ht_vcpu_halts *h = t ? halts_at(idx) : NULL;

	if (!t || !h)
		return 0;
	__u32 in_force = h->poll_ns;

	if (t->kvm_vcpu) {
		const struct kvm_vcpu *vcpu = (const struct kvm_vcpu *)t->kvm_vcpu;

		h->poll_ns = BPF_CORE_READ(vcpu, halt_poll_ns);
		in_force = BPF_CORE_READ(vcpu, arch.msr_kvm_poll_control) & 1 ? h->poll_ns : 0;
	}
	if (t->halt_poll_changed)
		in_force = t->halt_poll_old;
	h->halts++;
	if (in_force == HT_HALT_POLL_NS_UNKNOWN) {
		h->poll_unknown++;
	} else if (in_force) {
		h->polled++;
		if (!waited) {
			h->caught++;
			h->caught_ns += ns;
		} else {
			h->slept_poll_ns += halt_polled_ns(t, ns, clock_ns(synthetic_now));
		}
	}
	if (waited) {
		h->slept++;
		h->slept_ns += ns;
	}
	t->halt_poll_changed = 0;
	t->halt_sleep_ns = 0;
	t->entry_work = 1;
	return 0;
}

/*
 * kvm_entry of thread t (exit_end's: a halt ended or its sleep was woken
 * since its last entry, or it was first seen), vCPU vcpu: the vCPU its
 * halts read, the value its next halt polls with as KVM holds it now, and
 * the end of its wake-up (vcpu_wakeups.bpf.h), whose class needs the
 * vCPU's timer_vector. vcpu NULL: the synthetic programs and the
 * benchmark, which have none (their halts take the value of their
 * kvm_halt_poll_ns events).
 */
static __always_inline void vcpu_halt_at_entry(struct vcpu_thread *t, const struct kvm_vcpu *vcpu, __u32 timer_vector)
{
	struct ht_vcpu_halts *h = halts_at(t->index);

	t->kvm_vcpu = (__u64)vcpu;
	/* A halt in the VMM (KVM_EXIT_HLT) slept too, with no kvm_vcpu_wakeup to end it. */
	t->halt_sleep_ns = 0;
	if (vcpu && h)
		h->poll_ns = vcpu->halt_poll_ns;
	if (t->wake_ns)
		vcpu_wake_ended(t, timer_vector);
}

#endif /* HYPERTRACE_VCPU_HALTS_BPF_H */
