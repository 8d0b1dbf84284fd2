/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A vCPU thread's fusion state, as the BPF programs keep it in its CPU's
 * slot (cpu_states) or, while it is switched out, in moved_states. Included by the BPF
 * object and by the tracer, which reads the slots to count armed threads.
 */
#ifndef HYPERTRACE_VCPU_STATE_H
#define HYPERTRACE_VCPU_STATE_H

#include "hypertrace/record.h"

/* CPUs a host may have for record to run (user space checks): one state slot each. */
#define HT_MAX_CPUS 1024

enum vcpu_phase {
	PHASE_IDLE = 0,
	PHASE_EXITED, /* hypercall exit seen, waiting for kvm_hypercall */
	PHASE_HCALL,  /* hypercall seen, waiting for kvm_entry */
};

/*
 * A vCPU thread's state between its hypercall exit and its entry. 128 bytes,
 * so that CPUs' slots in cpu_states never share a cache line.
 */
struct vcpu_state {
	struct ht_record rec; /* filled as events arrive, copied out at entry */
	__u64 hcall_ns;
	__u32 phase;
	/*
	 * --exits: the open exit of the thread running here (kvm_exit seen, its
	 * kvm_entry not yet), and who runs here (written at every switch).
	 */
	__u32 exit_reason;
	__u64 exit_ns;
	__u64 owner;     /* tgid << 32 | tid of the thread running on this CPU; 0: not known yet */
	__u16 exit_vcpu;
	__u8 exit_isa;
	__u8 exit_open;  /* 1: exit_* hold an exit whose entry has not come */
	__u8 pad[12];
};

_Static_assert(sizeof(struct vcpu_state) == 128, "a CPU's slot must fill whole cache lines");

/*
 * --exits: a vCPU thread's state, by thread id (vcpu_threads): its waiting
 * and switching statistics, what its last switch-out was, and its open exit
 * while it is switched out (taken from its CPU's slot at the switch).
 */
struct vcpu_thread {
	struct ht_vcpu_wait stat;
	__u64 wait_start_ns; /* runnable since (woken or preempted); 0: not waiting */
	__u64 out_ns;        /* switched out at; 0: running or never seen switched out */
	__u64 exit_ns;       /* the open exit, while exit_open */
	__u32 exit_reason;
	__u8 exit_isa;
	__u8 exit_open;
	__u8 running;        /* on a CPU now */
	__u8 out_involuntary;
};

/*
 * --exits: each CPU's own table of series (exit_cache, HT_EXIT_CACHE_WAYS
 * entries a CPU, open addressing), where an exit is counted with an array
 * lookup the verifier inlines instead of a hash map's helper call (about
 * 23 ns of ~120 here). An entry, once a series took it, stays that series'
 * (so a reader never sees counts move); a series that finds no free entry
 * in HT_EXIT_CACHE_PROBES tries goes to exit_hists, the per-CPU hash map.
 * used is set after the key is written: a reader that sees it sees the key.
 */
#define HT_EXIT_CACHE_WAYS 256
#define HT_EXIT_CACHE_PROBES 4
struct exit_cache_entry {
	struct ht_exit_key key;
	__u32 used;
	struct ht_exit_hist h;
};

/* Thread ids are below PID_MAX_LIMIT (2^22): one bit each says "a vCPU thread with a vcpu_threads entry". */
#define HT_TID_BITS (1u << 22)

#endif /* HYPERTRACE_VCPU_STATE_H */
