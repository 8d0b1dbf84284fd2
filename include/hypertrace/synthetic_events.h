/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The contexts of the timed synthetic programs (src/bpf/hypertrace.bpf.c),
 * which run the real handlers at a time the caller gives, through
 * BPF_PROG_TEST_RUN: what the kernel tests, the benchmarks and the test
 * tools pass. One definition for the BPF programs and their callers; the
 * asserts pin the layout both sides read.
 */
#ifndef HYPERTRACE_SYNTHETIC_EVENTS_H
#define HYPERTRACE_SYNTHETIC_EVENTS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* A kvm_exit, kvm_entry or kvm_userspace_exit: the event laid out in the kernel's format. */
struct ht_synth_timed_event {
	__u64 now_ns;
	__u64 pad;
	__u8 event[256]; /* kvm_userspace_exit: its first four bytes are the KVM_EXIT_* reason */
};

/* A context switch of the vCPU threads' accounting, between any two thread ids, on this CPU. */
struct ht_synth_switch {
	__u32 prev_tid, prev_tgid, next_tid, next_tgid;
	__u32 prev_involuntary, pad;
	__u64 now_ns;
	__u64 prev_state;
	char prev_comm[16], next_comm[16];
};

struct ht_synth_wakeup {
	__u32 tid, pad;
	__u64 now_ns;
};

/* A vCPU thread as kvm_entry first registers one, for the tests' made-up threads. */
struct ht_synth_register {
	__u32 tid, tgid, vcpu, running; /* running: in guest from now_ns on; else blocked */
	__u64 now_ns;                    /* 0: the clock now */
};

/*
 * The end of a halt of thread tid in KVM (kvm_vcpu_wakeup: ns, waited),
 * after KVM changed the vCPU's halt_poll_ns from poll_old to poll_new
 * during it (kvm_halt_poll_ns) if poll_changed, at now_ns (0: the clock now).
 */
struct ht_synth_halt {
	__u32 tid, waited;
	__u64 ns;
	__u32 poll_changed, poll_new, poll_old, pad;
	__u64 now_ns;
};

/* KVM injects vector into the guest of thread tid (kvm_inj_virq). */
struct ht_synth_inj_virq {
	__u32 tid, vector;
};
/* A local APIC's acceptance of an interrupt (kvm_apic_accept_irq) for vCPU apicid of the sender's VM process. */
struct ht_synth_accept_irq {
	__u32 sender_tgid, sender_tid;
	__u32 apicid, dm, tm, vector;
	__u64 now_ns; /* 0: the clock now */
};
/* The local APIC timer's vector of the synthetic vCPUs, which have no KVM vCPU to read it from (Linux's). */
#define HT_SYNTH_TIMER_VECTOR 0xec

_Static_assert(sizeof(struct ht_synth_inj_virq) == 8, "synthetic injection layout changed");
_Static_assert(sizeof(struct ht_synth_accept_irq) == 32 && __builtin_offsetof(struct ht_synth_accept_irq, now_ns) == 24,
	       "synthetic acceptance layout changed");
_Static_assert(sizeof(struct ht_synth_halt) == 40 && __builtin_offsetof(struct ht_synth_halt, ns) == 8,
	       "synthetic halt layout changed");
_Static_assert(sizeof(struct ht_synth_timed_event) == 272 &&
		       __builtin_offsetof(struct ht_synth_timed_event, event) == 16,
	       "synthetic timed event layout changed");
_Static_assert(sizeof(struct ht_synth_switch) == 72 && __builtin_offsetof(struct ht_synth_switch, now_ns) == 24 &&
		       __builtin_offsetof(struct ht_synth_switch, prev_state) == 32 &&
		       __builtin_offsetof(struct ht_synth_switch, prev_comm) == 40,
	       "synthetic switch layout changed");
_Static_assert(sizeof(struct ht_synth_wakeup) == 16 && __builtin_offsetof(struct ht_synth_wakeup, now_ns) == 8,
	       "synthetic wakeup layout changed");
_Static_assert(sizeof(struct ht_synth_register) == 24 && __builtin_offsetof(struct ht_synth_register, now_ns) == 16,
	       "synthetic register layout changed");

#endif
