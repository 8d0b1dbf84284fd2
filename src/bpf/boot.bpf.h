/* SPDX-License-Identifier: GPL-2.0 */
/*
 * record --boot: the exits of a booting VM, one record each (struct
 * ht_boot_exit), from its first instruction on. Under exits.bpf.h, whose
 * handlers leave every exit that ends (and a vCPU thread's first entry, and
 * its end) in their CPU's boot_pending; boot_flush then records it if its
 * thread is followed. With boot_on false (rodata) the verifier removes all
 * of it.
 *
 * Which VMs: a vCPU thread is decided once, at its first entry, and is
 * followed if its process started at or after boot_since_ns (the
 * recording's start): a VM that starts while record runs is seen from its
 * first KVM_RUN, a VM that ran before is not booting. Its VM gets an entry
 * in boot_vms there (its window starts), bounded per VM in time
 * (boot_window_ns) and in exits (boot_max_exits, the rest counted in its
 * over), and the table in VMs (HT_MAX_BOOT_VMS, a VM beyond them counted in
 * HT_CNT_BOOT_VMS_FULL).
 *
 * A boot exit goes into the rings when its exit ends, not when it begins:
 * its cause, its parts and its end are known then. A vCPU whose guest
 * crashes still ends its last exit: the VMM stops it (an entry never comes,
 * the thread ends: HT_BOOT_F_THREAD_END) or the guest goes on (a panic
 * loop's exits end as any).
 */
#ifndef HYPERTRACE_BOOT_BPF_H
#define HYPERTRACE_BOOT_BPF_H

#include "exit_causes.bpf.h"

/* This CPU's exit that just ended (see boot_exit_view). */
static __always_inline struct boot_exit_view *boot_view(__u32 cpu)
{
	return &boot_pending[cpu & (HT_MAX_CPUS - 1)];
}

/*
 * Whether the exits of the thread the slot names (running_thread: its
 * index + 1; 0: not known yet) may be recorded: not once it is decided
 * not followed. The one test an exit of a VM that is not booting pays.
 */
static __always_inline bool boot_wanted(__u32 running_thread)
{
	__u32 idx = running_thread - 1;
	struct boot_thread *bt = running_thread ? bpf_map_lookup_elem(&boot_threads, &idx) : NULL;

	return !bt || bt->state != BOOT_NOT_FOLLOWED;
}

/*
 * The cause noted for the exit that is about to end (counting it uses the
 * note up: see count_cause), for boot_note's exit; stamped with its exit's
 * time, so a copy meant for another exit is none.
 */
static __always_inline void boot_take_cause(__u32 cpu, const struct exit_cause_note *n)
{
	boot_view(cpu)->cause = *n;
}

/*
 * An exit that ended at entry_ns, of the thread at index thread - 1 of
 * vcpu_thread_table (exit_ns 0: no exit, the thread's entry alone), for
 * boot_flush; its cause is the one boot_take_cause took, if stamped with
 * exit_ns.
 */
static __always_inline void boot_note(__u32 cpu, __u32 thread, __u64 ids, __u64 exit_ns, __u64 entry_ns,
				      __u32 reason, __u32 isa, __u32 vcpu, __u64 rip, __u8 flags)
{
	struct boot_exit_view *v = boot_view(cpu);

	v->thread = thread;
	v->ids = ids;
	v->exit_ns = exit_ns;
	v->entry_ns = entry_ns;
	v->reason = reason;
	v->isa = isa;
	v->vcpu = vcpu;
	v->rip = rip;
	v->flags = flags;
}

/* The guest's mode as KVM keeps it (see struct kvm_vcpu_arch in vmlinux.h). */
static __always_inline __u8 vcpu_boot_mode(const struct kvm_vcpu *vcpu)
{
	unsigned long cr0 = vcpu->arch.cr0;
	__u64 efer = vcpu->arch.efer;

	return HT_BOOT_MODE_KNOWN | (cr0 & 1 ? HT_BOOT_MODE_PE : 0) | (cr0 & (1ul << 31) ? HT_BOOT_MODE_PG : 0) |
	       (efer & (1ull << 10) ? HT_BOOT_MODE_LMA : 0);
}

/*
 * The first entry of a thread not decided yet: followed if its process
 * started while record runs and its VM has (or gets) a boot_vms entry. Its
 * account so far is where its first record's parts start. Global (see the
 * top of exits.bpf.h).
 */
__noinline int boot_decide(struct boot_thread *bt, const struct vcpu_thread *t, __u32 tgid, __u64 process_start,
			   __u64 now)
{
	struct ht_boot_vm init = { .first_ns = now };

	if (!bt || !t)
		return 0;
	bt->state = BOOT_NOT_FOLLOWED;
	if (process_start < boot_since_ns)
		return 0;
	if (!lookup_or_try_init(&boot_vms, &tgid, &init)) {
		count(HT_CNT_BOOT_VMS_FULL);
		return 0;
	}
	for (__u32 s = 0; s < HT_VCPU_NSTATES; s++)
		bt->state_ns[s] = t->state_ns[s];
	bt->mode = 0;
	bt->state = BOOT_FOLLOWED;
	return 0;
}

static __always_inline __u32 boot_part(__u64 ns, __u8 *flags)
{
	if (ns > 0xffffffffull) {
		*flags |= HT_BOOT_F_SATURATED;
		return 0xffffffffu;
	}
	return (__u32)ns;
}

/*
 * The exit of v into the rings, its parts the thread's account since its
 * last recorded entry (bt's, now moved on to t's); mode_now: the mode read
 * at this entry, the guest's until its next exit. Within its VM's window
 * and bound; lost if the ring is full (counted, in the VM's too). Global
 * (see the top of exits.bpf.h).
 */
__noinline int boot_record(const struct boot_exit_view *v, struct boot_thread *bt, const struct vcpu_thread *t,
			   __u32 mode_now, __u32 cpu)
{
	if (!v || !bt || !t)
		return 0;
	__u32 tgid = v->ids >> 32;
	struct ht_boot_vm *vm = bpf_map_lookup_elem(&boot_vms, &tgid);

	if (!vm || v->entry_ns > vm->first_ns + boot_window_ns) {
		/* Its window is over (or its VM's entry was freed): nothing more of this thread. */
		bt->state = BOOT_NOT_FOLLOWED;
		return 0;
	}
	__u64 part[HT_VCPU_NSTATES];

	for (__u32 s = 0; s < HT_VCPU_NSTATES; s++) {
		__u64 now_ns = t->state_ns[s];

		part[s] = now_ns - bt->state_ns[s];
		bt->state_ns[s] = now_ns;
	}
	__u8 mode = v->exit_ns ? bt->mode : (__u8)mode_now;

	bt->mode = mode_now;
	if (vm->recorded >= boot_max_exits) {
		__sync_fetch_and_add(&vm->over, 1);
		return 0;
	}
	struct ht_boot_exit *r = reserve_record(cpu, HT_CNT_BOOT_DROPS);

	if (!r) {
		__sync_fetch_and_add(&vm->lost, 1);
		return 0;
	}
	__u8 flags = v->flags;

	r->exit_ns = v->exit_ns ? v->exit_ns : v->entry_ns;
	r->guest_rip = v->exit_ns ? v->rip : 0;
	r->entry_ns = v->entry_ns;
	if (v->exit_ns && v->cause.exit_ns == v->exit_ns && v->cause.kind != HT_CAUSE_NONE) {
		flags |= HT_BOOT_F_CAUSE;
		r->cause_value = v->cause.value;
		r->cause_detail = v->cause.detail;
		r->cause_kind = v->cause.kind;
	}
	if (!v->exit_ns)
		flags |= HT_BOOT_F_FIRST_ENTRY;
	r->kvm_ns = boot_part(part[HT_VCPU_KVM], &flags);
	r->vmm_ns = boot_part(part[HT_VCPU_VMM], &flags);
	r->wait_ns = boot_part(part[HT_VCPU_WAIT], &flags);
	r->halted_ns = boot_part(part[HT_VCPU_HALTED], &flags);
	r->blocked_ns = boot_part(part[HT_VCPU_BLOCKED], &flags);
	r->reason = v->exit_ns ? v->reason : 0;
	r->mode = mode;
	r->boot_flags = flags;
	r->host_pid = tgid;
	r->host_tid = (__u32)v->ids;
	r->vcpu_id = v->vcpu;
	r->cpu = cpu;
	r->isa = v->isa;
	r->flags = HT_REC_F_BOOT_EXIT;
	bpf_ringbuf_submit(r, wakeup_flags(cpu));
	__sync_fetch_and_add(&vm->recorded, 1);
	return 0;
}

/*
 * After an exit handler noted what ended (boot_note): a thread not decided
 * yet is decided (vcpu: the entry's vCPU, whose mode and task are read;
 * NULL for the synthetic programs, which take both from globals, and at a
 * thread's end, where the mode stays), a followed one gets its record.
 */
static __always_inline void boot_flush(const struct kvm_vcpu *vcpu, __u32 cpu, bool at_entry)
{
	struct boot_exit_view *v = boot_view(cpu);
	__u32 idx = v->thread - 1;

	if (!v->thread)
		return;
	v->thread = 0;
	struct boot_thread *bt = bpf_map_lookup_elem(&boot_threads, &idx);
	struct vcpu_thread *t = thread_at(idx);

	if (!bt || !t)
		return;
	if (bt->state == BOOT_UNDECIDED) {
		if (!at_entry)
			return;
		__u64 start = synthetic_process_start_ns;

		if (vcpu) {
			struct task_struct *task = bpf_get_current_task_btf();

			start = task->group_leader->start_time;
		}
		boot_decide(bt, t, v->ids >> 32, start, v->entry_ns);
	}
	if (bt->state != BOOT_FOLLOWED)
		return;
	__u32 mode = bt->mode;

	if (at_entry)
		mode = vcpu ? vcpu_boot_mode(vcpu) : synthetic_boot_mode;
	boot_record(v, bt, t, mode, cpu);
}

#endif /* HYPERTRACE_BOOT_BPF_H */
