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
	/*
	 * --exits: the vcpu_thread_table index + 1 of the thread running here,
	 * as the switches say (0: not a vCPU thread, or not known yet); kvm_entry
	 * checks it against its own thread (owner) before it trusts it.
	 */
	__u32 running_thread;
	__u8 pad[8];
};

_Static_assert(sizeof(struct vcpu_state) == 128, "a CPU's slot must fill whole cache lines");

/*
 * --exits: a vCPU thread's entry in vcpu_thread_table (an mmapable array;
 * vcpu_thread_ids maps the thread id to its index): its waiting and
 * switching statistics, its account (where its time goes: enum
 * ht_vcpu_state), what its last switch-out was, and its open exit while it
 * is switched out (taken from its CPU's slot at the switch).
 *
 * The account: the thread is in one state since since_ns; state_ns holds
 * each state's time up to since_ns. A transition reads the clock once
 * (account_to), so the states add up to the time since start_ns exactly.
 * The thread's own CPU writes it (its exits, entries, switches) and so do
 * wake-ups from other CPUs, which the scheduler serializes with the
 * switches (a wake-up of a thread that is off its CPU comes after its
 * switch-out, under the run-queue lock). User space reads the entries
 * through a mapping while they change: seq is odd while a program writes
 * one, so a reader copies an entry whole or tries again.
 */
struct vcpu_thread {
	__u32 seq;            /* odd while being written (a seqlock's count) */
	__u32 in_use;         /* 1: a thread's (a program took it); 0: free (user space frees a gone one once read) */
	struct ht_vcpu_wait stat;
	__u64 start_ns;       /* first seen */
	__u64 since_ns;       /* the current state began */
	__u64 state_ns[8];    /* by enum ht_vcpu_state, up to since_ns (8: a masked index) */
	__u64 out_ns;         /* switched out at; 0: running or never seen switched out */
	__u64 exit_ns;        /* the open exit, while exit_open */
	__u32 exit_reason;
	__u8 exit_isa;
	__u8 exit_open;
	__u8 running;         /* on a CPU now */
	__u8 out_involuntary;
	__u8 state;           /* enum ht_vcpu_state */
	__u8 resume_state;    /* off its CPU: the state it goes back to when switched in (kvm or vmm) */
	__u8 gone;            /* the thread ended at since_ns: state_ns are its last numbers */
	__u8 pad[5];
};

_Static_assert(HT_VCPU_NSTATES <= 8, "state_ns is indexed with state & 7");

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
