/* SPDX-License-Identifier: GPL-2.0 */
/*
 * record --exits: when a halted vCPU's local APIC timer was due. A guest's
 * timer interrupt is due at its deadline, before anything the host does
 * for it: KVM emulates the timer with an hrtimer (apic_timer_fn, armed
 * lapic_timer_advance_ns early), whose callback marks the interrupt
 * pending and wakes the vCPU's thread from its halt. The wake-up
 * (vcpu_wakeups.bpf.h) starts at the sched_wakeup; from the due time to
 * there is the host's own lateness in firing the timer (an interrupt held
 * off, a CPU in a deep idle state), which nothing else shows.
 *
 * hrtimer_expire_entry fires for every hrtimer of the host: the program
 * compares the callback with KVM's and leaves the rest at that. KVM's
 * callback is learned from a vCPU's own timer at an entry with work off
 * the exit path (a vCPU thread's first, a halt's end), so nothing is looked
 * up in kallsyms and no symbol name is assumed; until then no timer is
 * KVM's. For KVM's, the vCPU's thread (the local APIC's vCPU's pid) gets
 * the expiry, if it sleeps in a halt now: its next wake-up is this
 * callback's. The sched_wakeup cannot take it from the CPU it runs on: a
 * wake-up of a thread whose CPU is idle is finished there, later. Halted
 * or not, the expiry is also noted for the delivery of the timer's
 * interrupt (vcpu_irqs.bpf.h): KVM accepts it later, in the vCPU's thread
 * (kvm_inject_pending_timer_irqs), and from the due time to there is the
 * host firing the timer and getting the thread to it.
 */
#ifndef HYPERTRACE_VCPU_TIMERS_BPF_H
#define HYPERTRACE_VCPU_TIMERS_BPF_H

#include "vcpu_account.bpf.h"

/* KVM's local APIC timer callback (apic_timer_fn), as a vCPU's timer names it; 0: none seen yet. */
__u64 apic_timer_fn_addr = 0;

/*
 * At an entry of vCPU vcpu with work off the exit path: KVM's timer
 * callback, until known. Left out at load time where no BTF has struct
 * kvm_lapic (as the timer's vector is).
 */
static __always_inline void vcpu_timer_learn(const struct kvm_vcpu *vcpu)
{
	if (apic_timer_fn_addr || !vcpu || !bpf_core_type_exists(struct kvm_lapic))
		return;
	struct kvm_lapic *apic = BPF_CORE_READ(vcpu, arch.apic);

	if (apic)
		apic_timer_fn_addr = (__u64)BPF_CORE_READ(apic, lapic_timer.timer.function);
}

/*
 * Thread t's local APIC timer, due at due_ns, expires: noted for the next
 * delivery of the timer's interrupt (the latest expiry: one whose own
 * delivery was not timed leaves its due to none but the next expiry's),
 * and for its wake-up if t sleeps in a halt now.
 */
static __always_inline void vcpu_timer_expires(struct vcpu_thread *t, __u64 due_ns)
{
	struct vcpu_irq_state *irqs = bpf_map_lookup_elem(&vcpu_irqs, &t->index);

	if (irqs)
		irqs->timer_due_ns = due_ns;
	if (!t->running && thread_state(t) == HT_VCPU_HALTED && !t->wake_ns)
		t->wake_due_ns = due_ns ? due_ns : 1;
}

/*
 * The vCPU thread of the local APIC whose timer this is: the hrtimer is its
 * kvm_lapic's lapic_timer.timer, and the APIC's vCPU has its thread's pid.
 * Out of line: the program's entry stays small for the host's other
 * timers. Static: the verifier checks it with its caller's argument, a
 * kernel pointer that a global function may not take as a number.
 */
static __noinline int vcpu_timer_fired(__u64 timer, __u64 due_ns)
{
	/* Where no BTF has struct kvm_lapic, no callback is learned: left out at load time, never rejected. */
	if (!bpf_core_type_exists(struct kvm_lapic))
		return 0;
	__u64 off = bpf_core_field_offset(struct kvm_lapic, lapic_timer) + bpf_core_field_offset(struct kvm_timer, timer);
	struct kvm_lapic *apic = (struct kvm_lapic *)(timer - off);
	struct kvm_vcpu *vcpu = BPF_CORE_READ(apic, vcpu);
	struct pid *pid = vcpu ? BPF_CORE_READ(vcpu, pid) : NULL;
	__u32 tid = pid ? BPF_CORE_READ(pid, numbers[0].nr) : 0, idx;
	struct vcpu_thread *t = tid ? thread_of(tid, &idx) : NULL;

	if (t)
		vcpu_timer_expires(t, due_ns);
	return 0;
}

/* hrtimer_expire_entry: two loads and a compare for a timer that is not KVM's. */
static __always_inline int handle_hrtimer_expire(struct hrtimer *timer)
{
	__u64 fn = apic_timer_fn_addr;

	if (!fn || (__u64)timer->function != fn)
		return 0;
	return vcpu_timer_fired((__u64)timer, (__u64)timer->node.expires);
}

#endif /* HYPERTRACE_VCPU_TIMERS_BPF_H */
