/* SPDX-License-Identifier: GPL-2.0 */
/*
 * record --exits: the wake-ups of halted vCPU threads (struct
 * ht_vcpu_wakeups in their halts, vcpu_halts), from the
 * interrupt's side: how long from the sched_wakeup that ends a thread's
 * sleep in a halt to its guest running (its next kvm_entry), how much of
 * that it waited for a CPU, and which interrupt it was for.
 *
 * The wake-up begins at the sched_wakeup (exits.bpf.h's vcpu_wakeup, on the
 * waker's CPU: a timer's expiry, an IPI's sender, an irqfd) and notes the
 * account's wait so far; the thread's own events follow, serialized with it
 * by the scheduler: its switch-in, KVM's injection of the vector
 * (kvm_inj_virq, before the entry: the first one is the wake-up's), the
 * entry, which closes the wake-up (vcpu_halts.bpf.h, with the halt's other
 * part there). The wait is the account's, so preemptions between switch-in
 * and entry are in it too. A thread that blocks again first (KVM's check
 * found nothing to run) ends its wake-up as reblocked.
 *
 * The class needs the guest's timer vector: the entry reads it from the
 * vCPU's local APIC (LVTT), as the guest programmed it, so no guest's
 * choice of vectors is assumed. All of it is off the exit path: a wake-up
 * is one per halt, kvm_inj_virq one per injected interrupt (a bit test
 * for a thread that is no vCPU thread of the recording).
 */
#ifndef HYPERTRACE_VCPU_WAKEUPS_BPF_H
#define HYPERTRACE_VCPU_WAKEUPS_BPF_H

#include "vcpu_account.bpf.h"

/* The LVTT register's offset in the local APIC's page, and its vector bits. */
#define APIC_LVTT_OFFSET 0x320
#define APIC_VECTOR_MASK 0xffu

/* Thread t, off its CPU in a halt, is woken at now. */
static __always_inline void vcpu_wake_begins(struct vcpu_thread *t, __u64 now)
{
	t->wake_ns = now ? now : 1;
	/* Its timer's expiry, noted while it slept (vcpu_timers.bpf.h), is this wake-up's: never after it. */
	if (t->wake_due_ns > t->wake_ns)
		t->wake_due_ns = 0;
	/* The halt's polling (if it is one in KVM) ended at its first sleep. */
	if (!t->halt_sleep_ns)
		t->halt_sleep_ns = t->out_ns;
	t->wake_wait_base = t->state_ns[HT_VCPU_WAIT];
	t->wake_vector = HT_WAKE_VECTOR_NONE;
	/* Its next entry closes the wake-up (vcpu_halts.bpf.h). */
	t->entry_work = 1;
}

/* Thread t, woken from a halt, blocks again before its guest ran. */
static __always_inline void vcpu_wake_reblocked(struct vcpu_thread *t)
{
	struct ht_vcpu_halts *h = halts_at(t->index);

	if (h)
		h->wake.reblocked++;
	t->wake_ns = 0;
	t->wake_due_ns = 0;
}

/* kvm_inj_virq of thread t: the vector KVM injects at its next entry. The first one after a wake-up is the wake-up's. */
static __always_inline void vcpu_wake_vector(struct vcpu_thread *t, __u32 vector)
{
	if (t->wake_ns && t->wake_vector == HT_WAKE_VECTOR_NONE)
		t->wake_vector = vector & APIC_VECTOR_MASK;
}

/*
 * The vector of the vCPU's local APIC timer, as its guest programmed it in
 * the LVTT; HT_WAKE_VECTOR_NONE if KVM emulates no local APIC for it, or if
 * the kernel's BTF (or its kvm module's) has no struct kvm_lapic: then the
 * read is left out at load time, and no vector is the timer's.
 */
static __always_inline __u32 vcpu_timer_vector(const struct kvm_vcpu *vcpu)
{
	if (!bpf_core_type_exists(struct kvm_lapic))
		return HT_WAKE_VECTOR_NONE;
	struct kvm_lapic *apic = BPF_CORE_READ(vcpu, arch.apic);
	void *regs = apic ? BPF_CORE_READ(apic, regs) : NULL;
	__u32 lvtt;

	if (!regs || bpf_probe_read_kernel(&lvtt, sizeof(lvtt), regs + APIC_LVTT_OFFSET))
		return HT_WAKE_VECTOR_NONE;
	return lvtt & APIC_VECTOR_MASK;
}

/*
 * --wakeups: the wake-up, ended at entry_ns, into the ring of this CPU, if
 * -p/--vm and --vcpu select the thread's VM and vCPU. Lost if the ring is
 * full, and counted.
 */
static __always_inline void emit_wakeup(const struct vcpu_thread *t, __u64 entry_ns, __u64 wake_ns, __u64 due_ns,
					__u64 wait, __u32 vector, __u32 timer_vector, __u32 wake_class)
{
	__u32 cpu;
	struct ht_vcpu_wakeup *w = reserve_vcpu_record(t->stat.pid, t->stat.vcpu, HT_CNT_WAKEUP_DROPS, &cpu);

	if (!w)
		return;
	w->entry_ns = entry_ns;
	w->wake_ns = wake_ns;
	w->due_ns = due_ns;
	w->wait_ns = wait;
	w->vector = vector;
	w->timer_vector = timer_vector;
	w->wake_class = wake_class;
	w->host_pid = t->stat.pid;
	w->host_tid = t->stat.tid;
	w->vcpu_id = t->stat.vcpu;
	w->cpu = cpu;
	w->flags = HT_REC_F_VCPU_WAKEUP;
	bpf_ringbuf_submit(w, wakeup_flags(cpu));
}

/* One more of total ns, wait of it waiting for a CPU, into h (a wake-up's, a timer due's or an interrupt's). */
static __always_inline void wake_hist_add(struct ht_vcpu_wake_hist *h, __u64 total, __u64 wait)
{
	h->total_ns += total;
	h->wait_ns += wait;
	if (total > h->max_ns)
		h->max_ns = total;
	h->slots[bounded_log2_slot(total, HT_WAKE_SLOTS)]++;
}

/*
 * Thread t's timer wake-up of wake_ns to entry_ns (wait of it waiting for a
 * CPU), whose timer was due at due_ns (never after wake_ns: see
 * vcpu_wake_begins): from the due time to the guest running, into its
 * struct ht_vcpu_timer_due.
 */
static __always_inline void timer_due_ended(const struct vcpu_thread *t, __u64 due_ns, __u64 wake_ns, __u64 entry_ns,
					    __u64 wait)
{
	__u32 idx = t->index;
	struct ht_vcpu_timer_due *d = bpf_map_lookup_elem(&vcpu_timer_dues, &idx);
	__u64 total = entry_ns > due_ns ? entry_ns - due_ns : 0;

	if (!d)
		return;
	wake_hist_add(&d->h, total, wait);
	/* The two clocks of two CPUs: an entry a few ns before its wake-up leaves the whole to the firing. */
	d->fire_ns += wake_ns - due_ns < total ? wake_ns - due_ns : total;
}

/*
 * Thread t's entry after a wake-up from a halt: the guest runs since its
 * account's time (the entry's), and the wake-up goes into its class, whose
 * timer is timer_vector (and into the rings with --wakeups). A global function (exits.bpf.h's rule): t may be
 * NULL to the verifier.
 */
__noinline int vcpu_wake_ended(struct vcpu_thread *t, __u32 timer_vector)
{
	if (!t || !t->wake_ns)
		return 0;
	__u64 entry_ns = vcpu_thread_time(t->since_state), wake_ns = t->wake_ns, due_ns = t->wake_due_ns;
	__u64 total = entry_ns > wake_ns ? entry_ns - wake_ns : 0;
	__u64 wait = t->state_ns[HT_VCPU_WAIT] - t->wake_wait_base;
	__u32 vector = t->wake_vector;
	__u32 c = vector == HT_WAKE_VECTOR_NONE ? HT_WAKE_NONE : vector == timer_vector ? HT_WAKE_TIMER : HT_WAKE_VECTOR;
	struct ht_vcpu_halts *halts = halts_at(t->index);

	t->wake_ns = 0;
	t->wake_due_ns = 0;
	if (!halts || c >= HT_WAKE_NCLASSES)
		return 0;
	/* The two clocks of two CPUs: a wait a few ns beyond the whole is the whole. */
	if (wait > total)
		wait = total;
	wake_hist_add(&halts->wake.c[c], total, wait);
	if (c == HT_WAKE_TIMER && due_ns)
		timer_due_ended(t, due_ns, wake_ns, entry_ns, wait);
	if (wakeups_on)
		emit_wakeup(t, entry_ns, wake_ns, due_ns, wait, vector, timer_vector, c);
	return 0;
}

#endif /* HYPERTRACE_VCPU_WAKEUPS_BPF_H */
