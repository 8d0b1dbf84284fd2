/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A vCPU thread's fusion state, as the BPF programs keep it in its CPU's
 * slot (cpu_states) or, while it is switched out, in moved_states. Included by the BPF
 * object and by the tracer, which reads the slots to count armed threads.
 */
#ifndef HYPERTRACE_VCPU_STATE_H
#define HYPERTRACE_VCPU_STATE_H

#include "hypertrace/limits.h"
#include "hypertrace/record.h"

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
	__u64 exit_rip;  /* --boot: the guest's RIP at the open exit */
};

_Static_assert(sizeof(struct vcpu_state) == 128, "a CPU's slot must fill whole cache lines");

/*
 * --exits: the cause noted for an open exit (enum ht_cause_kind) and when it
 * went to user space. Stamped with the exit's time (exit_ns): a note whose
 * stamp is not the open exit's is an older exit's, and is none, so kvm_exit
 * need not clear it. Kept per CPU (cpu_exit_causes) while the exit is in
 * its CPU's slot, and in the thread's vcpu_thread entry while the exit is
 * (moved there with it when the thread is switched out).
 */
struct exit_cause_note {
	__u64 exit_ns;  /* the exit it belongs to */
	__u64 value;    /* ht_exit_cause_key.value */
	__u64 uexit_ns; /* kvm_userspace_exit of that exit; 0: none yet */
	__u32 detail;   /* ht_exit_cause_key.detail */
	__u8 kind;      /* enum ht_cause_kind; HT_CAUSE_NONE: none noted */
	__u8 pad[3];
};

/* A CPU's note, alone in its cache line (cpu_exit_causes). */
struct cpu_exit_cause {
	struct exit_cause_note note;
	__u8 pad[64 - sizeof(struct exit_cause_note)];
};

/*
 * --exits: a vCPU thread's entry in vcpu_thread_table (an mmapable array;
 * vcpu_thread_ids maps the thread id to its index): its waiting and
 * switching statistics, its account (where its time goes: enum
 * ht_vcpu_state), what its last switch-out was, and its open exit while it
 * is switched out (taken from its CPU's slot at the switch).
 *
 * The account: the thread is in one state since a time; state_ns holds
 * each state's time up to that time, so the states add up to it minus
 * start_ns exactly. A transition reads the clock once (account_to). The
 * thread's own CPU writes it (its exits, entries, switches) and so do
 * wake-ups from other CPUs, which the scheduler serializes with the
 * switches (a wake-up of a thread that is off its CPU comes after its
 * switch-out, under the run-queue lock). User space reads the entries
 * through a mapping while they change: a transition writes state_ns first
 * and then since_state, which holds the time, the state and the gone flag
 * in one word (one store), so a copy whose states do not add up to its
 * time minus start_ns was taken half-way, and the reader copies again
 * (tracer_read.c). No count to keep: the identity is the check.
 */
#define VCPU_STATE_MASK 7ull
#define VCPU_GONE (1ull << 3) /* the thread ended at the time: state_ns are its last numbers */
#define VCPU_TIME_SHIFT 4     /* the time is since_state >> 4: 2^60 ns, 36 years of uptime */
/* in_use: who owns an entry. */
#define VCPU_ENTRY_FREE 0     /* any registration may take it */
#define VCPU_ENTRY_READY 1    /* a thread's, whole: user space reads it (and frees it once gone and read) */
#define VCPU_ENTRY_TAKEN 2    /* a registration is filling it: not for user space yet */
struct vcpu_thread {
	/* The account, what every exit and entry writes: one cache line. */
	__u64 since_state;    /* time << VCPU_TIME_SHIFT | VCPU_GONE | enum ht_vcpu_state */
	__u64 state_ns[HT_VCPU_NSTATES]; /* by enum ht_vcpu_state, up to the time */
	__u8 resume_state;    /* off its CPU: the state it goes back to when switched in (kvm or vmm) */
	__u8 running;         /* on a CPU now */
	__u8 entry_work;      /* the next kvm_entry has work off the exit path: a halt ended or its sleep was woken
			       * (vcpu_halts.bpf.h), or an interrupt's vector was injected (vcpu_irqs.bpf.h) */
	__u8 in_share;        /* it holds one of its VM's threads (ht_vm_share), given back when it ends */
	__u32 in_use;         /* VCPU_ENTRY_* */
	/* The rest: switches, wake-ups, registration. */
	__u64 start_ns;       /* first seen */
	__u32 exit_reason;
	__u8 exit_isa;
	__u8 exit_open;
	__u8 out_involuntary;
	__u8 uexit_hlt;       /* its last return to the VMM was KVM_EXIT_HLT (the VMM halts it) */
	struct ht_vcpu_wait stat;
	__u64 out_ns;         /* switched out at; 0: running or never seen switched out */
	__u64 exit_ns;        /* the open exit, while exit_open */
	struct exit_cause_note cause; /* the open exit's cause, while exit_open (see exit_cause_note) */
	__u64 exit_rip;       /* --boot: the guest's RIP at the open exit, while exit_open */
	/*
	 * The halt going on and its wake-up, a line of their own: written once
	 * per halt. Its numbers are in vcpu_halts, at index (vcpu_halts.bpf.h,
	 * vcpu_wakeups.bpf.h).
	 */
	__u32 index;          /* its own index in vcpu_thread_table, and its halts' in vcpu_halts */
	__u32 halt_poll_old;  /* the halt_poll_ns in force for the halt going on, if halt_poll_changed */
	__u8 halt_poll_changed; /* KVM changed halt_poll_ns during the halt going on (kvm_halt_poll_ns) */
	__u8 irq_injected;    /* KVM injected the vector of a timed interrupt: its slot + 1, the next kvm_entry delivers it */
	__u8 pad1[2];
	__u32 wake_vector;    /* the first vector KVM injected since the wake-up (kvm_inj_virq); HT_WAKE_VECTOR_NONE: none yet */
	__u64 wake_ns;        /* the sched_wakeup that ended its sleep in a halt; 0: no wake-up going on */
	__u64 wake_wait_base; /* state_ns[HT_VCPU_WAIT] at it: the wait since is the wake-up's */
	__u64 kvm_vcpu;       /* its struct kvm_vcpu, from an entry (vcpu_halts.bpf.h reads its polling); 0: none seen */
	__u64 halt_sleep_ns;  /* the halt going on first switched out into its sleep at (its first wake-up notes it); 0: not yet */
	__u64 wake_due_ns;    /* its local APIC timer, expired while it slept in a halt, was due at (vcpu_timers.bpf.h); 0: none */
	__u32 apic_vcpu;      /* the vCPU id it holds in vcpu_apic_ids: its registration's, whatever id later exits name */
	__u8 pad2[4];
};

_Static_assert(__builtin_offsetof(struct vcpu_thread, start_ns) == 64, "the account fills the first cache line");
_Static_assert(__builtin_offsetof(struct vcpu_thread, index) == 192, "the halt's state fills the fourth cache line");
_Static_assert(sizeof(struct vcpu_thread) == 256, "entries in whole cache lines: an exit touches one line of its thread");

/*
 * --exits: a vCPU thread's interrupts (vcpu_irqs, at its vcpu_thread_table
 * index; vcpu_irqs.bpf.h): their numbers, as user space copies them out,
 * and the ones being timed, one per vector and at most IRQ_TIMED_SLOTS at
 * a time, each claimed by its sender in one word: the acceptance's time,
 * who sent it and the vector (0: a free slot).
 */
#define IRQ_TIMED_SLOTS 4
struct vcpu_irq_state {
	struct ht_vcpu_irqs counts;
	__u64 pending[IRQ_TIMED_SLOTS];
	__u64 wait_base[IRQ_TIMED_SLOTS]; /* the account's wait at each one's acceptance: the wait since is its */
	__u64 timer_due_ns; /* its local APIC timer last expired, due then (vcpu_timers.bpf.h); 0: taken by a delivery */
};

/*
 * --exits: which entries of vcpu_thread_table a thread has (1 from its
 * registration on, 0 once user space freed it). User space reads only
 * those: reading every entry's in_use costs a cache miss for each of the
 * table's 8192 entries, on every read, on hosts with a few dozen threads.
 */
struct vcpu_thread_used {
	__u8 used[HT_MAX_VCPU_THREADS];
};

static inline __u64 vcpu_thread_time(__u64 since_state)
{
	return since_state >> VCPU_TIME_SHIFT;
}

/*
 * --exits: each CPU's own table of series (exit_cache, HT_EXIT_CACHE_WAYS
 * entries a CPU, open addressing), where an exit is counted with an array
 * lookup the verifier inlines instead of a hash map's helper call (about
 * 23 ns of ~120 here). An entry, once a series took it, stays that series'
 * (so a reader never sees counts move) until user space frees the entries
 * of a VM process that ended, after its last read (zeroed, then free: this
 * CPU takes a free entry's counts as zero); a series that finds no free entry
 * in HT_EXIT_CACHE_PROBES tries goes to exit_hists, the per-CPU hash map.
 * used is set after the key is written: a reader that sees it sees the key.
 */
#define HT_EXIT_CACHE_PROBES 4
struct exit_cache_entry {
	struct ht_exit_key key;
	__u32 used;
	struct ht_exit_hist h;
};

/*
 * --boot: a vCPU thread's boot state (boot_threads, at its index in
 * vcpu_thread_table; reset when the index is given to a thread). Decided at
 * the thread's first entry: followed if its process started while record
 * runs. The account as of its last recorded entry gives each boot exit its
 * parts (struct ht_boot_exit), and the mode read there is the one the
 * guest ran in up to the next exit.
 */
#define BOOT_UNDECIDED 0
#define BOOT_FOLLOWED 1
#define BOOT_NOT_FOLLOWED 2
struct boot_thread {
	__u64 state_ns[HT_VCPU_NSTATES]; /* the thread's account at its last recorded entry */
	__u8 state;                      /* BOOT_* */
	__u8 mode;                       /* HT_BOOT_MODE_* read at its last entry */
	__u8 pad[14];
};
_Static_assert(sizeof(struct boot_thread) == 64, "one cache line a thread");

/*
 * --boot: an exit that ended (or a thread's first entry, or its end), as
 * the exit handlers leave it in their CPU's boot_pending for the boot
 * handler (boot.bpf.h): what the exit was and who ran it.
 */
struct boot_exit_view {
	__u64 exit_ns;        /* 0: no exit, the thread's first entry */
	__u64 entry_ns;       /* the entry that ended it (or the thread's end) */
	__u64 rip;
	__u64 ids;            /* tgid << 32 | tid */
	struct exit_cause_note cause;
	__u32 reason;
	__u32 thread;         /* the thread's vcpu_thread_table index + 1; 0: none (nothing to record) */
	__u16 vcpu;
	__u8 isa;
	__u8 flags;           /* HT_BOOT_F_THREAD_END */
	__u8 pad[4];
};

/*
 * vcpu_apic_ids' key: a vCPU of a VM as an interrupt's acceptance names it
 * (the sender's tgid, the destination's APIC id = vcpu_id), from any
 * thread of that VM (ids: tgid << 32 | tid).
 */
static __always_inline __u64 vcpu_apic_key(__u64 ids, __u32 vcpu_id)
{
	return (ids & ~0xffffffffull) | vcpu_id;
}

/* Thread ids are below PID_MAX_LIMIT (2^22): one bit each says "a vCPU thread with a vcpu_thread_table entry". */
#define HT_TID_BITS (1u << 22)

#endif /* HYPERTRACE_VCPU_STATE_H */
