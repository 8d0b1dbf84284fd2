/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Synthetic kvm tracepoint events for the real BPF handlers.
 *
 * The handlers read their ctx through CO-RE relocations, i.e. at the running
 * kernel's offsets. So a synthetic event is laid out from the kernel's own BTF
 * (vmlinux, or the kvm module's) and passed as ctx to the SEC("syscall")
 * programs with BPF_PROG_TEST_RUN, in the calling thread's context: the test
 * thread plays the vCPU thread.
 */
#ifndef HT_SYNTH_H
#define HT_SYNTH_H

#include <stdbool.h>
#include <stddef.h>
#include "hypertrace/record.h"

#define HT_SYNTH_NO_FIELD (-1)

struct ht_synth_layout {
	size_t exit_size, hcall_size, entry_size;
	int exit_reason, exit_guest_rip, exit_isa, exit_vcpu_id; /* byte offsets */
	int hcall_nr, hcall_a[4];
	int entry_vcpu_id, entry_rip;
	/* The causes' tracepoints (size 0: the kernel has no such event). */
	size_t pio_size, mmio_size, msr_size, cpuid_size;
	int pio_rw, pio_port, pio_size_field, mmio_type, mmio_len, mmio_gpa, msr_write, msr_ecx, cpuid_function,
		cpuid_index;
};

/*
 * A synthetic event's program runs with preemption on (BPF_PROG_TEST_RUN
 * only disables migration), which no tracepoint program does: a real
 * sched_switch in its middle moves a half-written state (see cpu_states in
 * src/bpf/maps.bpf.h), and a record is lost that the product would never
 * lose. ht_synth_unpreempted gives the calling thread a real-time
 * priority, so ordinary threads do not preempt it (it still blocks and
 * migrates as it would); ht_synth_hold_cpu also keeps it on its CPU. 0, or
 * -errno (then the tests run as before, exposed to that).
 */
int ht_synth_unpreempted(void);
int ht_synth_hold_cpu(void);

/* 0, or -errno with a reason in err (no BTF, kvm types missing). */
int ht_synth_layout_load(struct ht_synth_layout *l, char *err, size_t errlen);

/* Lay out one event in the kernel's format into buf (HT_SYNTH_MAX_EVENT bytes, zeroed here). */
#define HT_SYNTH_MAX_EVENT 256
void ht_synth_build_exit(const struct ht_synth_layout *l, void *buf, __u32 isa, __u32 reason,
			 __u64 guest_rip, __u32 vcpu);
void ht_synth_build_hypercall(const struct ht_synth_layout *l, void *buf, __u64 nr, __u64 a0,
			      __u64 a1, __u64 a2, __u64 a3);
void ht_synth_build_entry(const struct ht_synth_layout *l, void *buf, __u32 vcpu, __u64 rip);

struct ht_tracer;

/* Each runs one synthetic event through the real handler; 0 or -errno. */
int ht_synth_exit(const struct ht_synth_layout *l, const struct ht_tracer *t, __u32 isa,
		  __u32 reason, __u64 guest_rip, __u32 vcpu);
int ht_synth_hypercall(const struct ht_synth_layout *l, const struct ht_tracer *t, __u64 nr,
		       __u64 a0, __u64 a1, __u64 a2, __u64 a3);
int ht_synth_entry(const struct ht_synth_layout *l, const struct ht_tracer *t, __u32 vcpu,
		   __u64 rip);

/*
 * --exits: the same handlers at a time the caller gives (now_ns), so a time
 * in the host is exact; and the vCPU threads' switch, wake-up and
 * registration between made-up thread ids. 0 or -errno.
 */
int ht_synth_exit_at(const struct ht_synth_layout *l, const struct ht_tracer *t, __u32 isa, __u32 reason,
		     __u32 vcpu, __u64 now_ns);
/* ht_synth_exit_at with the guest's RIP at the exit (record --boot). */
int ht_synth_exit_rip_at(const struct ht_synth_layout *l, const struct ht_tracer *t, __u32 isa, __u32 reason,
			 __u64 guest_rip, __u32 vcpu, __u64 now_ns);
int ht_synth_entry_at(const struct ht_synth_layout *l, const struct ht_tracer *t, __u32 vcpu, __u64 now_ns);
/* kvm_userspace_exit of the calling thread: its vCPU goes back to the VMM with reason (KVM_EXIT_*). */
int ht_synth_userspace_exit_at(const struct ht_tracer *t, __u32 reason, __u64 now_ns);
int ht_synth_switch(const struct ht_tracer *t, __u32 prev_tid, __u32 prev_tgid, __u32 next_tid,
		    __u32 next_tgid, bool prev_involuntary, __u64 now_ns);
int ht_synth_wakeup(const struct ht_tracer *t, __u32 tid, __u64 now_ns);
/* Thread tid's local APIC timer, due at due_ns, expires (KVM's hrtimer callback). */
int ht_synth_timer_expires(const struct ht_tracer *t, __u32 tid, __u64 due_ns);
/*
 * --exits: the tracepoints KVM fires while it handles an exit, for its cause:
 * kvm_pio (rw: 1 out), kvm_mmio (type: KVM_TRACE_MMIO_*), kvm_msr, kvm_cpuid.
 * 0, -ENOENT if the kernel has no such event, or -errno.
 */
int ht_synth_pio(const struct ht_synth_layout *l, const struct ht_tracer *t, __u32 rw, __u32 port, __u32 size);
int ht_synth_mmio(const struct ht_synth_layout *l, const struct ht_tracer *t, __u32 type, __u32 len, __u64 gpa);
int ht_synth_msr(const struct ht_synth_layout *l, const struct ht_tracer *t, __u32 write, __u32 ecx);
int ht_synth_cpuid(const struct ht_synth_layout *l, const struct ht_tracer *t, __u32 function, __u32 index);
/*
 * --exits: a halt of thread tid in KVM ends (kvm_vcpu_wakeup) after ns,
 * having slept if waited; if poll_changed, KVM changed its halt_poll_ns
 * from poll_old to poll_new during it (kvm_halt_poll_ns).
 */
int ht_synth_halt(const struct ht_tracer *t, __u32 tid, __u64 ns, bool waited, bool poll_changed, __u32 poll_new,
		  __u32 poll_old);
/* --exits: as ht_synth_halt with no change of halt_poll_ns, ending at now_ns. */
int ht_synth_halt_at(const struct ht_tracer *t, __u32 tid, __u64 ns, bool waited, __u64 now_ns);
/* --exits: KVM injects vector into the guest of thread tid (kvm_inj_virq). */
int ht_synth_inj_virq(const struct ht_tracer *t, __u32 tid, __u32 vector);
/*
 * --exits: the local APIC of vCPU apicid in sender_tgid's VM accepts vector
 * (kvm_apic_accept_irq), sent by thread sender_tid, in delivery mode dm
 * (its value in the event: 0 fixed, 0x100 lowest priority, 0x400 NMI),
 * level-triggered if tm, at now_ns (0: the clock now).
 */
int ht_synth_accept_irq(const struct ht_tracer *t, __u32 sender_tgid, __u32 sender_tid, __u32 apicid, __u32 dm,
			__u32 tm, __u32 vector, __u64 now_ns);
/* A vCPU thread first seen at now_ns (0: the clock now), in guest if running, else blocked. */
int ht_synth_register(const struct ht_tracer *t, __u32 tid, __u32 tgid, __u32 vcpu, bool running, __u64 now_ns);

#endif
