/* SPDX-License-Identifier: GPL-2.0 */
/*
 * record --exits, the causes: the note of what the running thread's open
 * exit was for (kvm_pio, kvm_mmio, kvm_msr, kvm_cpuid, kvm_hypercall), kept
 * only where its kind can be that exit's cause (hypertrace/cause_rule.h),
 * and counted with the exit when it closes, into the VM's causes of its
 * reason (exit_causes, exit_cause_names). Under exits.bpf.h.
 */
#ifndef HYPERTRACE_EXIT_CAUSES_BPF_H
#define HYPERTRACE_EXIT_CAUSES_BPF_H

#include "vcpu_account.bpf.h"
#include "hypertrace/cause_rule.h"

/* This CPU's note of the cause of the exit open in its slot. */
static __always_inline struct exit_cause_note *cpu_cause_note(__u32 cpu)
{
	return &cpu_exit_causes[cpu & (HT_MAX_CPUS - 1)].note;
}

/*
 * A cause of a new series of causes: the (VM process, ISA, reason) names it
 * if it has named fewer than HT_EXIT_CAUSES_PER_REASON and the VM's share
 * has room, else it is counted under the reason's "other" cause (a share's
 * refusal also in the VM's excess). NULL: lost (counted).
 */
static __noinline struct ht_exit_cause_hist *new_cause_series(struct ht_exit_cause_key *key)
{
	static const struct ht_exit_cause_hist zero;
	static const __u32 none;
	struct ht_exit_cause_key reason = { .pid = key->pid, .reason = key->reason, .isa = key->isa };
	struct ht_exit_cause_hist *h = NULL;
	/* Every new entry, of either map, from the VM's share (see share_new). */
	struct ht_vm_share *share = vm_share(key->pid);
	__u32 *named = bpf_map_lookup_elem(&exit_cause_names, &reason);
	bool refused = false; /* the exit's, counted once in the VM's excess */

	if (!share) {
		count(HT_CNT_EXIT_CAUSE_LOST);
		return NULL;
	}
	if (!named)
		named = share_new(&exit_cause_names, &reason, &none, &share->causes, HT_EXIT_CAUSES_PER_VM,
				  &refused, NULL);
	/*
	 * The count is read before it is taken: once full it stops moving (and
	 * cannot wrap). A name taken for an entry not made here is given back:
	 * another CPU made the same cause first (and took a name for it), or
	 * the table had no room; kept, the reason would name one cause fewer
	 * for the VM's lifetime.
	 */
	if (named && *named < HT_EXIT_CAUSES_PER_REASON &&
	    __sync_fetch_and_add(named, 1) < HT_EXIT_CAUSES_PER_REASON) {
		bool made = false;

		h = share_new(&exit_causes, key, &zero, &share->causes, HT_EXIT_CAUSES_PER_VM, &refused, &made);
		if (!made)
			__sync_fetch_and_add(named, -1);
	}
	if (h)
		return h;
	key->kind = HT_CAUSE_OTHER;
	key->detail = 0;
	key->value = 0;
	h = bpf_map_lookup_elem(&exit_causes, key);
	if (!h)
		h = share_new(&exit_causes, key, &zero, &share->causes, HT_EXIT_CAUSES_PER_VM, &refused, NULL);
	if (refused)
		__sync_fetch_and_add(&share->causes_over, 1);
	if (!h)
		count(HT_CNT_EXIT_CAUSE_LOST);
	return h;
}

/*
 * An exit of (tgid, isa, reason) that ended at now, with its cause noted in
 * n: counted under its cause, with its time in KVM (to its return to user
 * space, or to now) and in the VMM (from that return to now). The note is
 * used up, so a later exit stamped alike (synthetic times) starts without it.
 */
__noinline int count_cause(__u32 tgid, __u32 isa, __u32 reason, struct exit_cause_note *n, __u64 now)
{
	if (!n)
		return 0;
	struct ht_exit_cause_key key = {
		.pid = tgid, .reason = reason, .isa = isa, .kind = n->kind, .detail = n->detail, .value = n->value,
	};
	__u64 exit_ns = n->exit_ns, uexit_ns = n->uexit_ns;

	n->kind = HT_CAUSE_NONE;
	struct ht_exit_cause_hist *h = bpf_map_lookup_elem(&exit_causes, &key);
	if (!h)
		h = new_cause_series(&key);
	if (!h)
		return 0;
	bool to_vmm = uexit_ns >= exit_ns && uexit_ns && uexit_ns <= now;
	__u64 kvm_ns = (to_vmm ? uexit_ns : now) - exit_ns;
	/*
	 * The bucket first, as a series counts an exit: a read between two of
	 * these writes then sees a time in KVM or the VMM no larger than its
	 * buckets allow, which the reader of a file checks.
	 */
	h->kvm_slots[exit_slot(kvm_ns)]++;
	h->count++;
	h->kvm_ns += kvm_ns;
	if (to_vmm) {
		h->vmm_slots[exit_slot(now - uexit_ns)]++;
		h->vmm_count++;
		h->vmm_ns += now - uexit_ns;
	}
	return 0;
}

/* An exit counted (now: where it ended; 0: not counted) whose open exit began at exit_ns: its cause, if noted. */
static __always_inline void exit_cause_done(__u32 tgid, __u32 isa, __u32 reason, struct exit_cause_note *n,
					    __u64 exit_ns, __u64 now)
{
	if (now && n->kind != HT_CAUSE_NONE && n->exit_ns == exit_ns)
		count_cause(tgid, isa, reason, n, now);
}

/*
 * An open exit of (key) that began at exit_ns, ended and counted off the
 * common path (a thread switched out since its exit, or one that exits),
 * with its cause noted in n. Global (see the top of this file). Returns
 * count_exit's clock value (0: not counted).
 */
__noinline __u64 close_exit(const struct ht_exit_key *key, struct exit_cause_note *n, __u64 exit_ns,
			    __u64 synthetic_now, __u32 cpu)
{
	if (!key || !n)
		return 0;
	__u64 now = count_exit(key->pid, key->vcpu, key->isa, key->reason, exit_ns, synthetic_now, cpu);

	exit_cause_done(key->pid, key->isa, key->reason, n, exit_ns, now);
	return now;
}

/*
 * The note of the running thread's open exit (its CPU's, or its entry's if
 * it was switched out since the exit), stamped for that exit, and the
 * exit's reason, ISA and vCPU (*exit: OPEN_EXIT(reason, isa, vcpu)); NULL if
 * it has none open.
 */
#define OPEN_EXIT(reason, isa, vcpu) ((__u64)(reason) | (__u64)(isa) << 32 | (__u64)(vcpu) << 40)
static __always_inline struct exit_cause_note *open_exit_note(struct vcpu_state *slot, __u32 cpu, __u64 *exit)
{
	struct exit_cause_note *n;
	__u64 exit_ns;

	if (slot->exit_open) {
		n = cpu_cause_note(cpu);
		exit_ns = slot->exit_ns;
		*exit = OPEN_EXIT(slot->exit_reason, slot->exit_isa, slot->exit_vcpu);
	} else {
		struct vcpu_thread *t = slot->running_thread ? thread_at(slot->running_thread - 1) : NULL;

		if (!t || !t->exit_open)
			return NULL;
		n = &t->cause;
		exit_ns = t->exit_ns;
		*exit = OPEN_EXIT(t->exit_reason, t->exit_isa, t->stat.vcpu);
	}
	if (n->exit_ns != exit_ns) {
		n->kind = HT_CAUSE_NONE;
		n->uexit_ns = 0;
		n->exit_ns = exit_ns;
	}
	return n;
}

/*
 * A cause tracepoint whose kind cannot be its open exit's cause (see
 * cause_rule.h): KVM's own lookup, or the memory of an emulated string I/O.
 * Counted apart, for a traced VM; the exit keeps the cause it has. Not
 * inline: the causes that fit, nearly all, do not carry its filter code.
 */
static __noinline int count_cause_not_its(__u32 vcpu)
{
	if (filter_tgid_on && !tgid_traced(bpf_get_current_pid_tgid() >> 32))
		return 0;
	if (filter_vcpu_on && vcpu != filter_vcpu)
		return 0;
	count(HT_CNT_EXIT_CAUSE_NOT_ITS);
	return 0;
}

/*
 * kvm_pio, kvm_mmio, kvm_msr, kvm_cpuid, kvm_hypercall: the cause of the
 * running thread's open exit if its kind can be the exit's cause (the last
 * such one KVM reports wins); else counted apart. A CPU with no open exit
 * (untraced, or not a vCPU thread's) costs a load and a branch. Whether the
 * VM is traced is asked when the exit is counted.
 */
static __always_inline int note_exit_cause(__u8 kind, __u64 value, __u32 detail)
{
	if (!exits_on)
		return 0;
	__u32 cpu = bpf_get_smp_processor_id();
	struct vcpu_state *slot = cpu_slot(cpu);
	__u64 exit = 0;

	if (!slot->exit_open && !slot->running_thread)
		return 0;
	struct exit_cause_note *n = open_exit_note(slot, cpu, &exit);
	if (!n)
		return 0;
	if (!ht_exit_cause_fits((__u8)(exit >> 32), (__u32)exit, kind))
		return count_cause_not_its((__u16)(exit >> 40));
	n->value = value;
	n->detail = detail;
	n->kind = kind;
	return 0;
}

/* The cause handlers take the tracepoints' own arguments (TP_PROTO in arch/x86/kvm/trace.h). */
static __always_inline int handle_kvm_pio(__u32 rw, __u32 port, __u32 size)
{
	return note_exit_cause(HT_CAUSE_PIO, port, (rw ? HT_CAUSE_DIR_OUT : HT_CAUSE_DIR_IN) | size << 8);
}

/* KVM_TRACE_MMIO_WRITE (2) is a write; READ_UNSATISFIED (0, sent to user space) and READ (1, its completion) reads. */
static __always_inline int handle_kvm_mmio(__u32 type, __u32 len, __u64 gpa)
{
	return note_exit_cause(HT_CAUSE_MMIO, gpa, (type == 2 ? HT_CAUSE_DIR_OUT : HT_CAUSE_DIR_IN) | len << 8);
}

static __always_inline int handle_kvm_msr(__u32 write, __u32 ecx)
{
	return note_exit_cause(HT_CAUSE_MSR, ecx, write ? HT_CAUSE_DIR_OUT : HT_CAUSE_DIR_IN);
}

/*
 * The leaves whose subleaf (ECX) selects what CPUID returns, as KVM's own
 * list of leaves with a significant index (arch/x86/kvm/cpuid.c). For any
 * other leaf ECX is whatever the guest left there (seen: bytes of a vendor
 * string), and a cause per value would spend a reason's named causes.
 */
static __always_inline bool cpuid_leaf_has_subleaves(__u32 leaf)
{
	switch (leaf) {
	case 0x4: case 0x7: case 0xb: case 0xd: case 0xf: case 0x10: case 0x12: case 0x14: case 0x17:
	case 0x18: case 0x1d: case 0x1e: case 0x1f: case 0x20: case 0x23: case 0x24:
	case 0x8000001d: case 0x80000020: case 0x80000026:
		return true;
	}
	return false;
}

/* leaf: EAX, index: ECX as the guest gave it. */
static __always_inline int handle_kvm_cpuid(__u32 leaf, __u32 index)
{
	return note_exit_cause(HT_CAUSE_CPUID, leaf, cpuid_leaf_has_subleaves(leaf) ? index : 0);
}

#endif /* HYPERTRACE_EXIT_CAUSES_BPF_H */
