/* SPDX-License-Identifier: GPL-2.0 */
/*
 * record --exits: the interrupts KVM delivers to each vCPU thread (struct
 * vcpu_irq_state in vcpu_irqs, at its vcpu_thread_table index), each from
 * its acceptance by the vCPU's local APIC to the guest running with it.
 *
 * kvm_apic_accept_irq fires on the sender's CPU (another vCPU's IPI, the
 * VMM's thread signalling an irqfd, the vCPU's own thread for its timer)
 * and names its target only by APIC id, which is the vCPU id KVM gives it:
 * the target is the vCPU of that id in the sender's own VM process
 * (vcpu_apic_ids), the only process that can send to it besides kernel
 * threads (counted in HT_CNT_IRQ_UNATTRIBUTED). The sender claims a free
 * slot of the thread's pending words with one compare-and-swap, so two
 * senders on two CPUs never mix their interrupts: a word holds the
 * acceptance's time (its low 54 bits: the entry takes the high ones from
 * its own time), who sent it and the vector. A vector already pending is
 * not claimed again: the APIC holds it once (its IRR bit), and KVM injects
 * it once. The thread's own events follow, serialized by its CPU: KVM
 * injects a vector (kvm_inj_virq, vcpu_vector_injected's program), and the
 * kvm_entry after it delivers that vector's interrupt, off the exit path
 * (entry_work). A slot is freed there, by the thread, or by a sender that
 * finds it stale.
 *
 * Everything here is per interrupt, not per exit: a hash lookup, a scan
 * of IRQ_TIMED_SLOTS words and one compare-and-swap on the sender's CPU,
 * a scan at the injection, and the entry's work.
 */
#ifndef HYPERTRACE_VCPU_IRQS_BPF_H
#define HYPERTRACE_VCPU_IRQS_BPF_H

#include "vcpu_halts.bpf.h"
#include "vcpu_timers.bpf.h"

/* The local APIC's delivery modes as kvm_apic_accept_irq's dm has them: only these inject a vector. */
#define APIC_DM_FIXED 0x000
#define APIC_DM_LOWEST 0x100

/* Who accepted an interrupt, as its pending word holds it (never 0: a claimed word is never 0). */
#define IRQ_FROM_SELF 1  /* the target vCPU's own thread: its timer, or a self-IPI */
#define IRQ_FROM_VCPU 2  /* another vCPU thread of the VM */
#define IRQ_FROM_OTHER 3 /* another thread of the VM process */

#define IRQ_VECTOR_BITS 8
#define IRQ_FROM_BITS 2
#define IRQ_TIME_SHIFT (IRQ_VECTOR_BITS + IRQ_FROM_BITS)
#define IRQ_TIME_MASK ((1ull << (64 - IRQ_TIME_SHIFT)) - 1) /* 2^54 ns: 208 days, far beyond any delivery */

/* A pending word as it is now: other CPUs' senders claim and free them. */
static __always_inline __u64 slot_word(const __u64 *p)
{
	return *(const volatile __u64 *)p;
}

static __always_inline struct vcpu_irq_state *irq_state_at(__u32 idx)
{
	return bpf_map_lookup_elem(&vcpu_irqs, &idx);
}

static __always_inline __u64 irq_word(__u64 now, __u32 from, __u32 vector)
{
	return (now & IRQ_TIME_MASK) << IRQ_TIME_SHIFT | (__u64)from << IRQ_VECTOR_BITS | (vector & APIC_VECTOR_MASK);
}

/* The acceptance time of word, no later than now: its low bits, placed in the 2^54 ns before now. */
static __always_inline __u64 irq_word_time(__u64 word, __u64 now)
{
	__u64 ago = ((now & IRQ_TIME_MASK) - (word >> IRQ_TIME_SHIFT)) & IRQ_TIME_MASK;

	/* A sender's CPU whose clock read a little ahead of this one's: no time before it. */
	return ago > IRQ_TIME_MASK / 2 ? now : now - ago;
}

/*
 * The account's wait of thread t up to now: its wait states' sum, and the
 * wait it is in now if it is waiting (the account holds a state's time
 * only from its end on).
 */
static __always_inline __u64 wait_until(const struct vcpu_thread *t, __u64 now)
{
	__u64 since = t->since_state, wait = t->state_ns[HT_VCPU_WAIT];

	if ((since & VCPU_STATE_MASK) == HT_VCPU_WAIT && now > vcpu_thread_time(since))
		wait += now - vcpu_thread_time(since);
	return wait;
}

#define IRQ_LEVEL_TRIGGERED (1u << IRQ_VECTOR_BITS) /* with the vector in vcpu_irq_accepted's argument */

/*
 * kvm_apic_accept_irq, of a fixed or lowest-priority interrupt: the local
 * APIC of vCPU apicid in the VM of sender (tgid << 32 | tid) accepted
 * vector_tm (its vector, | IRQ_LEVEL_TRIGGERED if level-triggered), at
 * synthetic_now (0: the clock now). A global function (exits.bpf.h's rule).
 */
__noinline int vcpu_irq_accepted(__u64 sender, __u32 apicid, __u32 vector_tm, __u64 synthetic_now)
{
	__u32 vector = vector_tm & APIC_VECTOR_MASK;
	__u64 key = vcpu_apic_key(sender, apicid);
	__u32 *at = bpf_map_lookup_elem(&vcpu_apic_ids, &key);

	if (!at) {
		count(HT_CNT_IRQ_UNATTRIBUTED);
		return 0;
	}
	__u32 idx = *at;
	struct vcpu_thread *t = thread_at(idx);
	struct vcpu_irq_state *s = irq_state_at(idx);

	if (!t || !s)
		return 0;
	if (vector_tm & IRQ_LEVEL_TRIGGERED) {
		__sync_fetch_and_add(&s->counts.level, 1);
		return 0;
	}
	__sync_fetch_and_add(&s->counts.accepted, 1);
	__u64 now = clock_ns(synthetic_now);
	__u32 tid = (__u32)sender;
	__u32 from = tid == t->stat.tid ? IRQ_FROM_SELF : tid_is_vcpu(tid) ? IRQ_FROM_VCPU : IRQ_FROM_OTHER;
	__u64 word = irq_word(now, from, vector);
	__u32 free = IRQ_TIMED_SLOTS;

	for (__u32 k = 0; k < IRQ_TIMED_SLOTS; k++) {
		__u64 old = slot_word(&s->pending[k]);

		if (!old) {
			if (free == IRQ_TIMED_SLOTS)
				free = k;
			continue;
		}
		bool stale = now - irq_word_time(old, now) >= HT_IRQ_STALE_NS;

		/* Its vector pending already: the APIC holds it once, and KVM injects it once. */
		if (!stale && (old & APIC_VECTOR_MASK) == vector) {
			__sync_fetch_and_add(&s->counts.overlapped, 1);
			return 0;
		}
		/* One KVM never injected (posted, or an APIC the guest disabled) gives way. */
		if (stale && __sync_val_compare_and_swap(&s->pending[k], old, 0) == old) {
			__sync_fetch_and_add(&s->counts.stale, 1);
			if (free == IRQ_TIMED_SLOTS)
				free = k;
		}
	}
	/* All slots taken, or another sender took the free one first. */
	if (free >= IRQ_TIMED_SLOTS || __sync_val_compare_and_swap(&s->pending[free], 0, word) != 0) {
		__sync_fetch_and_add(&s->counts.overlapped, 1);
		return 0;
	}
	/* Read by the entry that delivers it, after KVM injected the vector, which it does after this returns. */
	s->wait_base[free] = wait_until(t, now);
	return 0;
}

/* kvm_apic_accept_irq's arguments, as vcpu_irq_accepted's: NMI, SMI, INIT and SIPI inject no vector. */
static __always_inline int handle_apic_accept_irq(__u64 sender, __u32 apicid, __u32 dm, __u32 tm, __u32 vector,
						  __u64 synthetic_now)
{
	if (dm != APIC_DM_FIXED && dm != APIC_DM_LOWEST)
		return 0;
	return vcpu_irq_accepted(sender, apicid, (vector & APIC_VECTOR_MASK) | (tm ? IRQ_LEVEL_TRIGGERED : 0),
				 synthetic_now);
}

/* kvm_inj_virq of thread t: if vector is a timed interrupt's, its next entry delivers it. */
static __always_inline void vcpu_irq_injected(struct vcpu_thread *t, __u32 vector)
{
	struct vcpu_irq_state *s = irq_state_at(t->index);

	if (!s)
		return;
	for (__u32 k = 0; k < IRQ_TIMED_SLOTS; k++) {
		__u64 word = slot_word(&s->pending[k]);

		if (word && (word & APIC_VECTOR_MASK) == (vector & APIC_VECTOR_MASK)) {
			t->irq_injected = k + 1;
			t->entry_work = 1;
			return;
		}
	}
}

/*
 * kvm_inj_virq of thread tid: KVM injects vector at its next entry, which
 * may end a wake-up (vcpu_wakeups.bpf.h) and deliver an interrupt.
 */
__noinline int vcpu_vector_injected(__u32 tid, __u32 vector)
{
	__u32 idx;
	struct vcpu_thread *t = thread_of(tid, &idx);

	if (!t)
		return 0;
	vcpu_wake_vector(t, vector);
	vcpu_irq_injected(t, vector);
	return 0;
}

/*
 * --wakeups: the delivery, ended at entry_ns, into the ring of this CPU, if
 * -p/--vm and --vcpu select the thread's VM and vCPU (as a wake-up's). Lost
 * if the ring is full, and counted with the wake-ups' losses.
 */
static __always_inline void emit_irq(const struct vcpu_thread *t, __u64 entry_ns, __u64 accept_ns, __u64 wait,
				     __u64 woken, __u32 vector, __u32 irq_class, __u64 due_ns)
{
	__u32 cpu;
	struct ht_vcpu_irq *d = reserve_vcpu_record(t->stat.pid, t->stat.vcpu, HT_CNT_WAKEUP_DROPS, &cpu);

	if (!d)
		return;
	d->entry_ns = entry_ns;
	d->accept_ns = accept_ns;
	d->wait_ns = wait;
	d->woken_ns = woken;
	d->vector = vector;
	d->irq_class = irq_class;
	d->due_ns = due_ns;
	d->host_pid = t->stat.pid;
	d->host_tid = t->stat.tid;
	d->vcpu_id = t->stat.vcpu;
	d->cpu = cpu;
	d->flags = HT_REC_F_VCPU_IRQ;
	bpf_ringbuf_submit(d, wakeup_flags(cpu));
}

/*
 * Thread t's entry after the injection of a timed interrupt's vector: the
 * guest runs with it since the account's time (the entry's). timer_vector:
 * the vCPU's local APIC timer's. A global function (exits.bpf.h's rule).
 */
__noinline int vcpu_irq_delivered(struct vcpu_thread *t, __u32 timer_vector)
{
	if (!t || !t->irq_injected)
		return 0;
	__u32 k = t->irq_injected - 1;
	struct vcpu_irq_state *s = irq_state_at(t->index);

	t->irq_injected = 0;
	if (!s || k >= IRQ_TIMED_SLOTS)
		return 0;
	__u64 word = slot_word(&s->pending[k]), entry_ns = vcpu_thread_time(t->since_state);

	/* A sender found it stale since, and took the slot back. */
	if (!word)
		return 0;
	s->pending[k] = 0;
	__u64 accept_ns = irq_word_time(word, entry_ns), total = entry_ns - accept_ns;
	__u64 wait = t->state_ns[HT_VCPU_WAIT] - s->wait_base[k];
	/* A halted thread's wake-up between the two: the acceptance's kick woke it. */
	__u64 woken = t->wake_ns > accept_ns && t->wake_ns <= entry_ns ? t->wake_ns - accept_ns : 0;
	__u32 from = (word >> IRQ_VECTOR_BITS) & ((1u << IRQ_FROM_BITS) - 1);
	__u32 c = from == IRQ_FROM_OTHER				      ? HT_IRQ_DEVICE :
		  from == IRQ_FROM_SELF && (word & APIC_VECTOR_MASK) == timer_vector ? HT_IRQ_TIMER :
										      HT_IRQ_IPI;

	if (c >= HT_IRQ_NCLASSES)
		return 0;
	/*
	 * A timer's: its expiry's due time, taken once. One after the
	 * acceptance, or a second before it, is not this interrupt's (a timer
	 * KVM fired without its hrtimer: a deadline already past when the guest
	 * wrote it; not known then).
	 */
	__u64 due = 0;

	if (c == HT_IRQ_TIMER) {
		due = s->timer_due_ns;
		s->timer_due_ns = 0;
		if (due > accept_ns || accept_ns - due >= HT_IRQ_STALE_NS)
			due = 0;
	}
	/* The clocks of two CPUs, and a state read while it changed: no part beyond the whole. */
	if (wait > total)
		wait = total;
	if (woken > total - wait)
		woken = total - wait;
	struct ht_vcpu_wake_hist *h = &s->counts.c[c];

	wake_hist_add(h, total, wait);
	s->counts.woken_ns[c] += woken;
	if (wakeups_on)
		emit_irq(t, entry_ns, accept_ns, wait, woken, word & APIC_VECTOR_MASK, c, due);
	return 0;
}

/*
 * kvm_entry of thread t with work off the exit path (entry_work): the
 * delivery of its timed interrupt (before the halt's part ends its
 * wake-up, whose time the delivery reads), then the halt's part. vcpu:
 * KVM's vCPU; NULL from the synthetic programs, whose timer is
 * HT_SYNTH_TIMER_VECTOR.
 */
static __always_inline void vcpu_entry_work(struct vcpu_thread *t, const struct kvm_vcpu *vcpu)
{
	__u32 timer_vector = HT_SYNTH_TIMER_VECTOR;

	if (t->wake_ns || t->irq_injected)
		timer_vector = vcpu ? vcpu_timer_vector(vcpu) : HT_SYNTH_TIMER_VECTOR;
	vcpu_timer_learn(vcpu);
	if (t->irq_injected)
		vcpu_irq_delivered(t, timer_vector);
	vcpu_halt_at_entry(t, vcpu, timer_vector);
	t->entry_work = 0;
}

#endif /* HYPERTRACE_VCPU_IRQS_BPF_H */
