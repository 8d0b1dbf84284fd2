/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The fused hypercall record: ONE fixed-size record per traced hypercall,
 * built by the BPF programs from kvm_exit + kvm_hypercall + kvm_entry of one
 * vCPU thread. This header is the only definition of the layout; the BPF
 * programs, the daemon, the trace-file writer and reader all include it.
 * docs/trace-format.md describes it byte by byte.
 *
 * All fields are little-endian (x86-64 host). The layout has no implicit
 * padding; the static asserts below pin every offset so a change to it is a
 * deliberate trace-format version change.
 */
#ifndef HYPERTRACE_RECORD_H
#define HYPERTRACE_RECORD_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif
#include "hypercall_abi.h" /* HT_DEFAULT_HYPERCALL_NR */

/* kvm_exit.isa values (arch/x86/kvm/trace.h: KVM_ISA_VMX / KVM_ISA_SVM). */
#define HT_ISA_VMX 1
#define HT_ISA_SVM 2

/* Hypercall exit reasons. VMX keeps flags in bits 16..31 (since 5.16): compare the low 16. */
#define HT_VMX_EXIT_REASON_VMCALL 18
#define HT_VMX_EXIT_REASON_MASK 0xffffu
#define HT_SVM_EXIT_CODE_VMMCALL 0x81
/* SVM's exit code has no flag bits: the whole 32 bits are compared. */
#define HT_SVM_EXIT_CODE_MASK 0xffffffffu

/*
 * Most ring buffers one recording makes (one per CPU, rounded up to a power
 * of two; beyond this CPUs share rings). BPF masks its per-ring wake-up
 * counters with it, user space sizes the rings and the drain with it: one
 * value for both, or rings would silently share counters.
 */
#define HT_MAX_RINGS 64u
_Static_assert((HT_MAX_RINGS & (HT_MAX_RINGS - 1)) == 0, "BPF masks ring indexes with HT_MAX_RINGS - 1");

/* How many hypercall nr values one recording may select. */
#define HT_MAX_SELECTED_NR 8

/* ht_record.flags */
#define HT_REC_F_EXIT_TO_HCALL_SATURATED (1u << 0) /* true value > UINT32_MAX ns */
#define HT_REC_F_HCALL_TO_ENTRY_SATURATED (1u << 1)
#define HT_REC_F_NO_EXIT_VCPU_ID (1u << 2) /* kernel's kvm_exit has no vcpu_id: taken from kvm_entry */
/* Not a hypercall: a struct ht_vcpu_irq in a record's place (record --wakeups; trace format 14 on). */
#define HT_REC_F_VCPU_IRQ (1u << 4)
/* Not a hypercall: a struct ht_vcpu_wakeup in a record's place (record --wakeups). */
#define HT_REC_F_VCPU_WAKEUP (1u << 5)
/* Not a hypercall: a struct ht_boot_exit in a record's place (record --boot). */
#define HT_REC_F_BOOT_EXIT (1u << 6)
/* Not a hypercall: a struct ht_vcpu_switch in a record's place (record --vcpu-sched). */
#define HT_REC_F_VCPU_SWITCH (1u << 7)

struct ht_record {
	__u64 exit_ns;           /*  0 CLOCK_MONOTONIC ns at kvm_exit */
	__u64 guest_rip;         /*  8 guest RIP of the hypercall instruction */
	__u64 a0;                /* 16 hypercall arguments: RBX */
	__u64 a1;                /* 24 RCX */
	__u64 a2;                /* 32 RDX */
	__u64 a3;                /* 40 RSI */
	__u32 nr;                /* 48 hypercall nr (RAX); only nr < 2^32 can be selected */
	__u32 exit_reason;       /* 52 raw kvm_exit.exit_reason, VMX flag bits included */
	__u32 exit_to_hcall_ns;  /* 56 kvm_exit -> kvm_hypercall, saturates at UINT32_MAX */
	__u32 hcall_to_entry_ns; /* 60 kvm_hypercall -> kvm_entry, saturates at UINT32_MAX */
	__u32 host_pid;          /* 64 tgid of the VMM process (e.g. QEMU) */
	__u32 host_tid;          /* 68 tid of the vCPU thread */
	__u16 vcpu_id;           /* 72 KVM vcpu_id */
	__u16 exit_cpu;          /* 74 physical CPU at kvm_exit */
	__u16 entry_cpu;         /* 76 physical CPU at kvm_entry */
	__u8 isa;                /* 78 HT_ISA_VMX or HT_ISA_SVM */
	__u8 flags;              /* 79 HT_REC_F_* */
};

#define HT_RECORD_SIZE 80

_Static_assert(sizeof(struct ht_record) == HT_RECORD_SIZE, "ht_record layout changed");
_Static_assert(__builtin_offsetof(struct ht_record, nr) == 48, "ht_record layout changed");
_Static_assert(__builtin_offsetof(struct ht_record, host_pid) == 64, "ht_record layout changed");
_Static_assert(__builtin_offsetof(struct ht_record, vcpu_id) == 72, "ht_record layout changed");
_Static_assert(__builtin_offsetof(struct ht_record, flags) == 79, "ht_record layout changed");

/*
 * record --vcpu-sched: the host switching a vCPU thread out of its CPU or
 * back in, for the vCPU's "preempted on the host" time. It travels in the
 * ring buffers and the RECORDS blocks in a record's place, 80 bytes too,
 * marked by HT_REC_F_VCPU_SWITCH, with its time, thread, vCPU and CPU where a
 * hypercall record has them: the drain merges both kinds in one time order
 * (its time is at exit_ns's place and 0 is at both durations'), and time
 * and process selections read both alike. Readers that know only hypercalls
 * must not meet it: files holding it have format version 4.
 */
enum ht_switch_kind {
	HT_SWITCH_OUT = 1, /* the vCPU thread leaves its CPU */
	HT_SWITCH_IN = 2,  /* the vCPU thread is back on a CPU */
};

struct ht_vcpu_switch {
	__u64 time_ns;          /*  0 CLOCK_MONOTONIC ns of the sched_switch (ht_record.exit_ns) */
	__u64 prev_state;       /*  8 out: the thread's task state, 0 = still runnable (preempted); in: 0 */
	__u32 other_tid;        /* 16 out: the thread that runs instead; in: the thread it replaces (0: idle) */
	__u32 other_pid;        /* 20 that thread's process (tgid) */
	char other_comm[16];    /* 24 that thread's name (the kernel's comm; NUL-padded, maybe 16 long) */
	__u32 kind;             /* 40 enum ht_switch_kind */
	__u32 involuntary;      /* 44 out: 1 if still runnable when switched out (preempted, or it yielded) */
	__u64 reserved[2];      /* 48 0 (56..63 are a record's durations: 0 keeps the drain's order) */
	__u32 host_pid;         /* 64 tgid of the VMM process (ht_record.host_pid) */
	__u32 host_tid;         /* 68 the vCPU thread */
	__u16 vcpu_id;          /* 72 KVM vcpu_id of the thread's latest exit */
	__u16 cpu;              /* 74 host CPU of the switch (ht_record.exit_cpu) */
	__u16 reserved2;        /* 76 0 */
	__u8 isa;               /* 78 0 */
	__u8 flags;             /* 79 HT_REC_F_VCPU_SWITCH */
};

_Static_assert(sizeof(struct ht_vcpu_switch) == HT_RECORD_SIZE, "a switch takes a record's place");
_Static_assert(__builtin_offsetof(struct ht_vcpu_switch, time_ns) == __builtin_offsetof(struct ht_record, exit_ns),
	       "a switch's time is where a record's is");
_Static_assert(__builtin_offsetof(struct ht_vcpu_switch, reserved[1]) ==
		       __builtin_offsetof(struct ht_record, exit_to_hcall_ns),
	       "a switch's durations are reserved, 0");
_Static_assert(__builtin_offsetof(struct ht_vcpu_switch, host_pid) == __builtin_offsetof(struct ht_record, host_pid),
	       "a switch's thread is where a record's is");
_Static_assert(__builtin_offsetof(struct ht_vcpu_switch, vcpu_id) == __builtin_offsetof(struct ht_record, vcpu_id),
	       "a switch's vCPU is where a record's is");
_Static_assert(__builtin_offsetof(struct ht_vcpu_switch, cpu) == __builtin_offsetof(struct ht_record, exit_cpu),
	       "a switch's CPU is where a record's exit CPU is");
_Static_assert(__builtin_offsetof(struct ht_vcpu_switch, flags) == __builtin_offsetof(struct ht_record, flags),
	       "a switch's flags are where a record's are");

/*
 * record --boot: one exit of a booting VM, from its first instruction on.
 * A VM process that starts while record runs is followed exit by exit for
 * its first seconds (the boot window, bounded in exits per VM too): each
 * exit goes into the rings when its kvm_entry comes (or its thread ends),
 * 80 bytes in a record's place, marked by HT_REC_F_BOOT_EXIT, with its time,
 * thread, vCPU and CPU where a hypercall record has them. It carries what
 * phases of a boot are told apart by (the guest's RIP at the exit and the
 * mode it ran in) and where the thread's time went from its previous exit's
 * entry to this exit's: the guest ran from that entry (the previous
 * record's entry_ns) to exit_ns, and the parts below add up to entry_ns -
 * exit_ns (each saturates at UINT32_MAX ns, then HT_BOOT_F_SATURATED says
 * so). The first record of a vCPU thread seen from its first kvm_entry is
 * an entry alone (HT_BOOT_F_FIRST_ENTRY: exit_ns = entry_ns, no exit).
 * Readers that know no boot records must not meet them: files holding them
 * have format version 8.
 */
#define HT_BOOT_F_FIRST_ENTRY (1u << 0) /* the thread's first kvm_entry: no exit, the vCPU starts here */
#define HT_BOOT_F_THREAD_END (1u << 1)  /* no entry came: the thread ended at entry_ns (the VM stopped, or crashed) */
#define HT_BOOT_F_SATURATED (1u << 2)   /* a part was longer than UINT32_MAX ns and holds UINT32_MAX */
#define HT_BOOT_F_CAUSE (1u << 3)       /* cause_kind/detail/value hold the exit's cause (enum ht_cause_kind) */
/* ht_boot_exit.mode: the guest's mode while it ran up to the exit (read at the entry before it). */
#define HT_BOOT_MODE_PE (1u << 0)   /* CR0.PE: protected mode */
#define HT_BOOT_MODE_PG (1u << 1)   /* CR0.PG: paging */
#define HT_BOOT_MODE_LMA (1u << 2)  /* EFER.LMA: long mode active */
#define HT_BOOT_MODE_KNOWN (1u << 7) /* the mode was read (0: the entry before the exit was not seen) */

struct ht_boot_exit {
	__u64 exit_ns;       /*  0 CLOCK_MONOTONIC at kvm_exit (ht_record.exit_ns) */
	__u64 guest_rip;     /*  8 the guest's RIP at the exit (ht_record.guest_rip) */
	__u64 entry_ns;      /* 16 the kvm_entry that ended the exit (or the thread's end) */
	__u64 cause_value;   /* 24 with HT_BOOT_F_CAUSE: ht_exit_cause_key.value */
	__u32 kvm_ns;        /* 32 of entry_ns - exit_ns: in KVM, on a CPU */
	__u32 vmm_ns;        /* 36 in the VMM, on a CPU */
	__u32 wait_ns;       /* 40 runnable, waiting for a CPU */
	__u32 halted_ns;     /* 44 blocked in a halt */
	__u32 blocked_ns;    /* 48 blocked otherwise */
	__u32 reason;        /* 52 VMX: exit_reason & 0xffff; SVM: the exit code (where ht_record's is) */
	__u32 cause_detail;  /* 56 with HT_BOOT_F_CAUSE: ht_exit_cause_key.detail */
	__u8 cause_kind;     /* 60 with HT_BOOT_F_CAUSE: enum ht_cause_kind */
	__u8 mode;           /* 61 HT_BOOT_MODE_* */
	__u8 boot_flags;     /* 62 HT_BOOT_F_* */
	__u8 reserved;       /* 63 0 */
	__u32 host_pid;      /* 64 tgid of the VMM process (ht_record.host_pid) */
	__u32 host_tid;      /* 68 the vCPU thread */
	__u16 vcpu_id;       /* 72 KVM vcpu_id */
	__u16 cpu;           /* 74 host CPU of the entry (ht_record.exit_cpu) */
	__u16 reserved2;     /* 76 0 */
	__u8 isa;            /* 78 HT_ISA_VMX or HT_ISA_SVM */
	__u8 flags;          /* 79 HT_REC_F_BOOT_EXIT */
};

_Static_assert(sizeof(struct ht_boot_exit) == HT_RECORD_SIZE, "a boot exit takes a record's place");
_Static_assert(__builtin_offsetof(struct ht_boot_exit, guest_rip) == __builtin_offsetof(struct ht_record, guest_rip),
	       "a boot exit's RIP is where a record's is");
_Static_assert(__builtin_offsetof(struct ht_boot_exit, host_pid) == __builtin_offsetof(struct ht_record, host_pid),
	       "a boot exit's thread is where a record's is");
_Static_assert(__builtin_offsetof(struct ht_boot_exit, vcpu_id) == __builtin_offsetof(struct ht_record, vcpu_id),
	       "a boot exit's vCPU is where a record's is");
_Static_assert(__builtin_offsetof(struct ht_boot_exit, isa) == __builtin_offsetof(struct ht_record, isa),
	       "a boot exit's ISA is where a record's is");
_Static_assert(__builtin_offsetof(struct ht_boot_exit, flags) == __builtin_offsetof(struct ht_record, flags),
	       "a boot exit's flags are where a record's are");

/*
 * record --wakeups: one wake-up of a halted vCPU thread, from the
 * sched_wakeup that ended its sleep in the halt to the kvm_entry that ran
 * its guest again (the wake-ups of struct ht_vcpu_wakeups, one by one: the
 * worst ones, and each one's parts). 80 bytes in a record's place, marked
 * by HT_REC_F_VCPU_WAKEUP, with its end (the entry) where a record's time
 * is, so the drain orders it by its end as the rings hold it, and its
 * thread, vCPU and CPU where a hypercall record has them. wait_ns is the
 * thread's account's wait between the two (runnable, off a CPU); the rest,
 * entry_ns - wake_ns - wait_ns, is its switch-in and KVM's way back into
 * the guest, the interrupt's injection included. vector is the first one
 * KVM injected in between (HT_WAKE_VECTOR_NONE: none seen), timer_vector
 * the vCPU's local APIC timer's at the entry (HT_WAKE_VECTOR_NONE: not
 * known). Readers that know no wake-up records must not meet them: files
 * holding them have format version 11.
 */
#define HT_WAKE_VECTOR_NONE 0xffffffffu
struct ht_vcpu_wakeup {
	__u64 entry_ns;      /*  0 CLOCK_MONOTONIC at the kvm_entry that ended it (ht_record.exit_ns) */
	__u64 wake_ns;       /*  8 the sched_wakeup that ended the halt's sleep */
	__u64 wait_ns;       /* 16 of entry_ns - wake_ns: runnable, waiting for a host CPU */
	__u32 vector;        /* 24 the first vector injected after the wake-up; HT_WAKE_VECTOR_NONE: none */
	__u32 timer_vector;  /* 28 the local APIC timer's vector (LVTT); HT_WAKE_VECTOR_NONE: not known */
	__u32 wake_class;    /* 32 enum ht_wake_class */
	__u32 reserved0;     /* 36 0 */
	__u64 due_ns;        /* 40 its local APIC timer was due (KVM's hrtimer expiry) and woke it; 0: not a timer's, or not known */
	__u64 reserved[2];   /* 48 0 (56..63 are a record's durations: 0 keeps the drain's order) */
	__u32 host_pid;      /* 64 tgid of the VMM process (ht_record.host_pid) */
	__u32 host_tid;      /* 68 the vCPU thread */
	__u16 vcpu_id;       /* 72 KVM vcpu_id of the thread's latest exit */
	__u16 cpu;           /* 74 host CPU of the entry (ht_record.exit_cpu) */
	__u16 reserved2;     /* 76 0 */
	__u8 isa;            /* 78 0 */
	__u8 flags;          /* 79 HT_REC_F_VCPU_WAKEUP */
};

_Static_assert(sizeof(struct ht_vcpu_wakeup) == HT_RECORD_SIZE, "a wake-up takes a record's place");
_Static_assert(__builtin_offsetof(struct ht_vcpu_wakeup, entry_ns) == __builtin_offsetof(struct ht_record, exit_ns),
	       "a wake-up's end is where a record's time is");
_Static_assert(__builtin_offsetof(struct ht_vcpu_wakeup, reserved[1]) ==
		       __builtin_offsetof(struct ht_record, exit_to_hcall_ns),
	       "a wake-up's durations are reserved, 0");
_Static_assert(__builtin_offsetof(struct ht_vcpu_wakeup, host_pid) == __builtin_offsetof(struct ht_record, host_pid),
	       "a wake-up's thread is where a record's is");
_Static_assert(__builtin_offsetof(struct ht_vcpu_wakeup, vcpu_id) == __builtin_offsetof(struct ht_record, vcpu_id),
	       "a wake-up's vCPU is where a record's is");
_Static_assert(__builtin_offsetof(struct ht_vcpu_wakeup, cpu) == __builtin_offsetof(struct ht_record, exit_cpu),
	       "a wake-up's CPU is where a record's exit CPU is");
_Static_assert(__builtin_offsetof(struct ht_vcpu_wakeup, flags) == __builtin_offsetof(struct ht_record, flags),
	       "a wake-up's flags are where a record's are");

/*
 * When a record was complete, which orders the rings' records: a hypercall's
 * kvm_entry, a switch's time, a boot exit's entry (or its thread's end).
 */
static inline __u64 ht_record_done_ns(const struct ht_record *r)
{
	if (r->flags & HT_REC_F_BOOT_EXIT)
		return ((const struct ht_boot_exit *)(const void *)r)->entry_ns;
	return r->exit_ns + r->exit_to_hcall_ns + r->hcall_to_entry_ns;
}

/*
 * record --boot: a booting VM process's numbers (map boot_vms, by tgid): its
 * first seen time (its boot window's start) and its boot exits, recorded or
 * not. Freed by user space when the VM ends.
 */
struct ht_boot_vm {
	__u64 first_ns;  /* its first vCPU thread's first kvm_entry (or exit) seen */
	__u64 recorded;  /* boot exits put into the rings */
	__u64 over;      /* exits in its window beyond the per-VM bound: not recorded, by design */
	__u64 lost;      /* boot exits lost: the ring buffer was full */
};
_Static_assert(sizeof(struct ht_boot_vm) == 32, "ht_boot_vm layout changed");

/*
 * Per-CPU event counters kept by the BPF programs (map `counters`), summed by
 * user space. Everything the kernel saw but could not record is counted here.
 */
enum ht_counter {
	HT_CNT_RINGBUF_DROPS = 0,   /* record complete but ring buffer full: lost */
	HT_CNT_STATE_ALLOC_FAIL,    /* per-thread state could not be created: hypercall lost */
	HT_CNT_SUPERSEDED,          /* hypercall seen, but another exit came before kvm_entry: lost */
	HT_CNT_HCALL_UNSELECTED_NR, /* hypercall exit matched, nr not selected: not recorded by design */
	HT_CNT_AGG_GROUPS_FULL,     /* --no-file: a new group found all HT_AGG_MAX_GROUPS taken: lost */
	HT_CNT_EXIT_SERIES_FULL,    /* --exits: an exit of a new series found all HT_EXIT_MAX_SERIES taken: lost */
	HT_CNT_EXIT_NO_THREAD,      /* --exits: an open exit lost: its thread found no vCPU thread slot */
	HT_CNT_SWITCH_DROPS,        /* --vcpu-sched: a vCPU thread's switch lost: the ring buffer was full */
	HT_CNT_UNREPORTED_SWITCH,   /* an armed thread's switch that no sched_switch reported, put right: not a loss */
	HT_CNT_FORGED_GUEST_EVENT,  /* one of the project's guest kernel events (1100..1149) from guest user space: dropped by design */
	HT_CNT_EXIT_CAUSE_LOST,     /* --exits: an exit's cause not counted: even its reason's "other" cause found the table full */
	HT_CNT_EXIT_CAUSE_NOT_ITS,  /* --exits: a cause tracepoint during an exit whose cause it cannot be (cause_rule.h): not a loss */
	HT_CNT_BOOT_DROPS,          /* --boot: a boot exit lost: the ring buffer was full (also in its VM's ht_boot_vm.lost) */
	HT_CNT_BOOT_VMS_FULL,       /* --boot: a VM that started found boot_vms full: its boot is not recorded */
	HT_CNT_WAKEUP_DROPS,        /* --wakeups: a wake-up's or an interrupt delivery's record lost: the ring buffer was full */
	HT_CNT_IRQ_UNATTRIBUTED,    /* --exits: an interrupt accepted for a vCPU not known from its sender (struct ht_vcpu_irqs): not timed */
	HT_CNT_MAX,
};

/*
 * Aggregate-only mode (record --no-file): instead of a record per hypercall,
 * the BPF programs count latencies in per-CPU log2 histograms, one per group,
 * read by user space every interval. Slot k holds values v with
 * floor(log2(v)) == k (slot 0 also holds 0), as libbpf-tools' log2l.
 */
#define HT_AGG_SLOTS 64
enum ht_agg_series {
	HT_AGG_TOTAL = 0,   /* kvm_exit -> kvm_entry */
	HT_AGG_EXIT_HCALL,  /* kvm_exit -> kvm_hypercall */
	HT_AGG_HCALL_ENTRY, /* kvm_hypercall -> kvm_entry */
	HT_AGG_NSERIES,
};
enum ht_agg_group_by {
	HT_AGG_BY_NONE = 0, /* key 0 */
	HT_AGG_BY_VCPU,     /* key host_pid << 32 | vcpu_id */
	HT_AGG_BY_VM,       /* key host_pid << 32 */
};
/*
 * With aggregate_by_nr (record --no-file --metrics), a per-vCPU key also holds
 * the index of the hypercall's nr among the selected ones in bits 16..23.
 */
#define HT_AGG_KEY_NR_SHIFT 16
#define HT_AGG_MAX_GROUPS 1024
struct ht_agg_hist {
	__u64 slots[HT_AGG_NSERIES][HT_AGG_SLOTS];
};

/*
 * Exits (record --exits): every VM exit of the host, aggregated in BPF per
 * (VM process, vCPU id, ISA, exit reason) into a per-CPU histogram of the
 * time in the host (kvm_exit to the next kvm_entry of the same vCPU thread);
 * no record per exit. Slot k holds [2^k, 2^(k+1) - 1] ns (slot 0 also 0),
 * the last slot everything from 2^(HT_EXIT_SLOTS - 1) ns on (about 550 s).
 * The reason is VMX's basic exit reason (low 16 bits) or SVM's exit code.
 */
#define HT_EXIT_SLOTS 40
#define HT_EXIT_MAX_SERIES 16384
struct ht_exit_key {
	__u32 pid;    /* the VM process (tgid of the vCPU thread) */
	__u16 vcpu;   /* KVM vcpu_id */
	__u8 isa;     /* HT_ISA_VMX or HT_ISA_SVM */
	__u8 pad;     /* 0 */
	__u32 reason; /* VMX: exit_reason & 0xffff; SVM: the exit code */
};
struct ht_exit_hist {
	__u64 count;    /* exits whose entry came: the sum of slots */
	__u64 total_ns; /* their time in the host, summed */
	__u64 min_ns, max_ns;
	__u64 slots[HT_EXIT_SLOTS];
};
_Static_assert(sizeof(struct ht_exit_key) == 12, "ht_exit_key layout changed");
_Static_assert(sizeof(struct ht_exit_hist) == 32 + 8 * HT_EXIT_SLOTS, "ht_exit_hist layout changed");

/*
 * A vCPU thread's waiting and switching on the host (record --exits), kept
 * by the sched_switch and sched_wakeup programs, cumulative since load. A
 * vCPU thread is a thread seen entering a guest (kvm_entry) or switched out
 * between its kvm_exit and kvm_entry. Involuntary: switched out while still
 * runnable (preempted; a vCPU thread runs guest code with preemption off, so
 * this happens after a VM exit, in the host's part of the vCPU loop or in
 * the VMM); voluntary: switched out blocked (e.g. a halted vCPU).
 */
struct ht_vcpu_wait {
	__u32 pid;              /* the VM process */
	__u32 tid;              /* the vCPU thread */
	__u16 vcpu;             /* KVM vcpu_id (of its latest exit) */
	__u16 pad0;
	__u32 pad1;
	__u64 wait_ns;          /* runnable but not running: woken or preempted, until switched in */
	__u64 preempt_count;    /* involuntary switch-outs */
	__u64 preempt_ns;       /* their time off the CPU until switched in again */
	__u64 voluntary_count;  /* voluntary switch-outs (blocked) */
	__u64 voluntary_ns;     /* their time off the CPU until switched in again */
};
_Static_assert(sizeof(struct ht_vcpu_wait) == 56, "ht_vcpu_wait layout changed");
#define HT_MAX_VCPU_THREADS 8192

/*
 * A vCPU thread's halts in KVM (record --exits), cumulative since it was
 * first seen: one per kvm_vcpu_wakeup, the end of KVM's kvm_vcpu_halt (the
 * vCPU halted in the kernel until it had something to run). KVM polls for a
 * wake-up before it sleeps while the vCPU's halt_poll_ns is not 0
 * (kvm.halt_poll_ns bounds it; KVM grows and shrinks it per vCPU). The
 * counts are KVM's own per-vCPU statistics, from the host: polled is its
 * halt_attempted_poll, caught its halt_successful_poll, slept_ns its
 * halt_poll_fail_ns + halt_wait_ns (each halt's time in KVM is the
 * kvm_vcpu_wakeup's ns: from the halt's start to its wake-up). Of a slept
 * halt that polled, slept_poll_ns holds the polling that did not catch the
 * wake-up, the CPU it burned for nothing: from the halt's start to the
 * thread's switch-out into its sleep (KVM's halt_poll_fail_ns but for the
 * few instructions from the polling's end to that switch-out; wall time,
 * as KVM's: a preemption in between is in it).
 */
#define HT_HALT_POLL_NS_UNKNOWN 0xffffffffu

/*
 * The wake-ups of a halted vCPU thread (record --exits): from the
 * sched_wakeup that ends its sleep in a halt (in KVM, or in the VMM after
 * KVM_EXIT_HLT) to its next kvm_entry, the guest running again; wait_ns is
 * the part of it the thread was runnable but off a CPU (the account's wait
 * between the two), the rest is its switch-in and KVM's entry path (the
 * interrupt's injection included). A wake-up is classed by the vector KVM
 * injected first between the two (kvm_inj_virq): the vCPU's local APIC
 * timer (the vector in its LVTT when it entered), another vector (IPIs,
 * devices), or none (a posted interrupt, which KVM delivers with no
 * injection event, or a wake-up for something else: a signal, a request).
 * A wake-up after which the thread blocked again before entering the guest
 * (KVM found nothing to run, and halted again) is counted in reblocked and
 * in no class. Halts that polling caught never slept: they have no
 * wake-up here (ht_vcpu_halts.caught).
 */
enum ht_wake_class {
	HT_WAKE_TIMER = 0, /* the vCPU's local APIC timer */
	HT_WAKE_VECTOR,    /* another vector: an IPI or a device's */
	HT_WAKE_NONE,      /* no injection seen: posted, or no interrupt */
	HT_WAKE_NCLASSES,
};
/* Slot k holds wake-ups of [2^k, 2^(k+1)) ns (slot 0 also 0), the last one everything from 2^35 ns (34 s) on. */
#define HT_WAKE_SLOTS 36
struct ht_vcpu_wake_hist {
	__u64 total_ns;             /*  0 wake-up to entry, summed */
	__u64 wait_ns;              /*  8 of it, off a CPU while runnable */
	__u64 max_ns;               /* 16 the longest wake-up to entry */
	__u64 slots[HT_WAKE_SLOTS]; /* 24 by wake-up to entry: their sum is the count */
};
struct ht_vcpu_wakeups {
	struct ht_vcpu_wake_hist c[HT_WAKE_NCLASSES]; /*   0 by enum ht_wake_class */
	__u64 reblocked;                              /* 936 wake-ups after which the thread blocked again before its guest ran */
};
_Static_assert(sizeof(struct ht_vcpu_wake_hist) == 24 + 8 * HT_WAKE_SLOTS, "ht_vcpu_wake_hist layout changed");
_Static_assert(sizeof(struct ht_vcpu_wakeups) == 944, "ht_vcpu_wakeups layout changed");

struct ht_vcpu_halts {
	__u64 halts;        /*  0 halts that ended */
	__u64 polled;       /*  8 of them, halts KVM polled in (halt_poll_ns in force not 0) */
	__u64 caught;       /* 16 polled halts that never slept: the polling caught the wake-up */
	__u64 caught_ns;    /* 24 their time in KVM, all of it polling */
	__u64 slept;        /* 32 halts that slept (polled or not) */
	__u64 slept_ns;     /* 40 their time in KVM: the polling that did not catch it, then the sleep */
	__u32 poll_ns;      /* 48 halt_poll_ns in force for the next halt; HT_HALT_POLL_NS_UNKNOWN: none seen yet */
	__u32 poll_unknown; /* 52 halts whose polling was not known: the thread's first, if no entry came before it */
	struct ht_vcpu_wakeups wake; /* 56 the halts' wake-ups, to the guest running (trace format version 10 on) */
	__u64 slept_poll_ns; /* 1000 of slept_ns, the polling before the sleep, in halts that polled (version 12 on) */
};
/* The halts without their wake-ups, as files of version 9 hold them. */
#define HT_VCPU_HALTS_V9_SIZE 56
/* The halts with their wake-ups, as files of versions 10 and 11 hold them. */
#define HT_VCPU_HALTS_V11_SIZE (HT_VCPU_HALTS_V9_SIZE + 944)
_Static_assert(sizeof(struct ht_vcpu_halts) == HT_VCPU_HALTS_V11_SIZE + 8, "ht_vcpu_halts layout changed");

/*
 * The interrupts KVM delivered to a vCPU thread (record --exits), each from
 * its acceptance by the vCPU's local APIC (kvm_apic_accept_irq, on the
 * sender's CPU) to the kvm_entry after KVM injected its vector
 * (kvm_inj_virq): the guest running with it. Its parts: woken_ns, from the
 * acceptance to the sched_wakeup of the halted thread (KVM's kick); wait_ns,
 * the thread's account's wait since the acceptance (runnable, off a CPU);
 * the rest is its way back into the guest (a running vCPU's exit to take
 * it, the injection, the entry). Classed by who accepted it: the vCPU's own
 * thread with its local APIC timer's vector (the timer: its acceptance
 * comes after its wake-up, which struct ht_vcpu_wakeups times), another
 * vCPU thread of the VM or the vCPU's own (IPIs), or another thread of the
 * VM process (a device: QEMU's, an irqfd's signaller). An interrupt whose
 * sender is outside the VM process (a vhost kernel thread on older
 * kernels, a kworker) cannot be told from another VM's with the same vCPU
 * id: counted in HT_CNT_IRQ_UNATTRIBUTED, not timed.
 *
 * Up to four per thread are timed at a time, one per vector: one accepted
 * while its vector is pending (the APIC holds a vector once, and KVM
 * injects it once), or while four others are, is counted in overlapped.
 * Level-triggered ones (an assert and a deassert both fire the event) are
 * counted in level. One whose vector KVM never injected within
 * HT_IRQ_STALE_NS (a posted interrupt, delivered with no injection event;
 * an APIC the guest disabled) is counted in stale when the next one
 * comes.
 */
enum ht_irq_class {
	HT_IRQ_TIMER = 0, /* the vCPU's local APIC timer */
	HT_IRQ_IPI,       /* from a vCPU thread of the VM: an inter-processor interrupt, or a self-IPI */
	HT_IRQ_DEVICE,    /* from another thread of the VM process */
	HT_IRQ_NCLASSES,
};
#define HT_IRQ_STALE_NS 1000000000ull

/*
 * record --wakeups: one interrupt delivery of struct ht_vcpu_irqs, from its
 * acceptance to the kvm_entry that ran the guest with it, with its parts
 * (the worst ones, and each one's parts). 80 bytes in a record's place,
 * marked by HT_REC_F_VCPU_IRQ, laid out as struct ht_vcpu_wakeup: its end
 * (the entry) where a record's time is, its thread, vCPU and CPU where a
 * hypercall record has them. woken_ns and wait_ns are parts of
 * entry_ns - accept_ns (waking the halted thread; waiting for a host CPU);
 * the rest is its way back into the guest. A timer's delivery may carry its
 * timer's due time (due_ns, before accept_ns: from there to the acceptance
 * is the host firing the timer), as a wake-up does; files written before
 * it have 0 there, not known. Files holding them have format version 14:
 * readers of older versions would take them for hypercalls.
 */
struct ht_vcpu_irq {
	__u64 entry_ns;      /*  0 CLOCK_MONOTONIC at the kvm_entry that ran the guest with it (ht_record.exit_ns) */
	__u64 accept_ns;     /*  8 kvm_apic_accept_irq */
	__u64 wait_ns;       /* 16 of entry_ns - accept_ns: runnable, waiting for a host CPU */
	__u64 woken_ns;      /* 24 of it, before the wait: the acceptance to the halted thread's wake-up; 0: not halted */
	__u32 vector;        /* 32 */
	__u32 irq_class;     /* 36 enum ht_irq_class */
	__u64 due_ns;        /* 40 HT_IRQ_TIMER: its local APIC timer was due (KVM's hrtimer expiry); 0: not known, or not a timer's */
	__u64 reserved[2];   /* 48 0 (56..63 are a record's durations: 0 keeps the drain's order) */
	__u32 host_pid;      /* 64 tgid of the VMM process (ht_record.host_pid) */
	__u32 host_tid;      /* 68 the vCPU thread */
	__u16 vcpu_id;       /* 72 KVM vcpu_id of the thread's latest exit */
	__u16 cpu;           /* 74 host CPU of the entry (ht_record.exit_cpu) */
	__u16 reserved2;     /* 76 0 */
	__u8 isa;            /* 78 0 */
	__u8 flags;          /* 79 HT_REC_F_VCPU_IRQ */
};
_Static_assert(sizeof(struct ht_vcpu_irq) == sizeof(struct ht_vcpu_wakeup), "an interrupt delivery takes a record's place");
_Static_assert(__builtin_offsetof(struct ht_vcpu_irq, entry_ns) == __builtin_offsetof(struct ht_vcpu_wakeup, entry_ns) &&
		       __builtin_offsetof(struct ht_vcpu_irq, due_ns) == __builtin_offsetof(struct ht_vcpu_wakeup, due_ns) &&
		       __builtin_offsetof(struct ht_vcpu_irq, host_pid) == __builtin_offsetof(struct ht_vcpu_wakeup, host_pid) &&
		       __builtin_offsetof(struct ht_vcpu_irq, vcpu_id) == __builtin_offsetof(struct ht_vcpu_wakeup, vcpu_id) &&
		       __builtin_offsetof(struct ht_vcpu_irq, cpu) == __builtin_offsetof(struct ht_vcpu_wakeup, cpu) &&
		       __builtin_offsetof(struct ht_vcpu_irq, flags) == __builtin_offsetof(struct ht_vcpu_wakeup, flags),
	       "an interrupt delivery is laid out as a wake-up");
struct ht_vcpu_irqs {
	struct ht_vcpu_wake_hist c[HT_IRQ_NCLASSES]; /*   0 acceptance to entry, by enum ht_irq_class */
	__u64 woken_ns[HT_IRQ_NCLASSES];             /* 936 of their total_ns, acceptance to the halted thread's wake-up */
	__u64 accepted;    /* 960 edge-triggered interrupts accepted for the thread's vCPU */
	__u64 overlapped;  /* 968 of them, accepted while their vector (or four others) was being timed: not timed */
	__u64 stale;       /* 976 of them, never seen injected (see above) */
	__u64 level;       /* 984 level-triggered acceptances: not timed */
};
_Static_assert(sizeof(struct ht_vcpu_irqs) == 992, "ht_vcpu_irqs layout changed");

/*
 * A vCPU thread's timer wake-ups that carry their timer's due time (record
 * --exits): those of class HT_WAKE_TIMER whose local APIC timer expired
 * while the thread slept in its halt, the expiry (KVM's hrtimer, at the
 * guest's deadline less KVM's timer advance) seen by the programs. Each
 * from the due time to the guest running (its kvm_entry): the latency of
 * the guest's timer interrupt as far as the host can see it. Parts: fire_ns,
 * from the due time to the sched_wakeup (the host firing the timer: its
 * CPU leaving an idle state, interrupts held off, the hrtimer's slack);
 * h.wait_ns, runnable off a CPU; the rest, the switch-in and KVM's entry
 * path. A subset of the halts' timer class (trace format version 15 on).
 */
struct ht_vcpu_timer_due {
	struct ht_vcpu_wake_hist h; /*   0 due to entry: total, wait, longest, slots */
	__u64 fire_ns;              /* 312 of h.total_ns, due to the wake-up */
};
_Static_assert(sizeof(struct ht_vcpu_timer_due) == 320, "ht_vcpu_timer_due layout changed");

/*
 * The cause of an exit (record --exits): what KVM reported while handling it,
 * from the tracepoint it fires then (the last one before the exit's entry, if
 * several) whose kind can be the exit's cause (cause_rule.h); the others,
 * KVM's own lookups, are counted apart in HT_CNT_EXIT_CAUSE_NOT_ITS. Counted per (VM process, ISA, exit reason, cause) with the
 * exit's time in KVM (from kvm_exit to the return to user space, or to the
 * entry) and, for an exit that went to user space, its time in the VMM (from
 * kvm_userspace_exit to the entry), each a log2 histogram as ht_exit_hist's.
 * Exits of whose handling KVM reports nothing (an external interrupt, say)
 * have no cause: they are in the series only.
 *
 * Bounded in BPF: a (VM process, ISA, reason) names at most
 * HT_EXIT_CAUSES_PER_REASON causes, the first ones seen; its later causes
 * are counted together under HT_CAUSE_OTHER (value and detail 0). An exit
 * whose cause finds even that entry impossible (HT_EXIT_MAX_CAUSES taken) is
 * counted in HT_CNT_EXIT_CAUSE_LOST. Nothing is dropped silently.
 */
enum ht_cause_kind {
	HT_CAUSE_NONE = 0,  /* (BPF only: no cause noted for the exit) */
	HT_CAUSE_PIO,       /* kvm_pio: value the port; detail HT_CAUSE_DIR_* | size in bytes << 8 */
	HT_CAUSE_MMIO,      /* kvm_mmio: value the guest-physical address; detail HT_CAUSE_DIR_* | length << 8 */
	HT_CAUSE_MSR,       /* kvm_msr: value the MSR index (ECX); detail HT_CAUSE_DIR_* */
	HT_CAUSE_CPUID,     /* kvm_cpuid: value the leaf (EAX); detail the subleaf (ECX) of a leaf that has subleaves, else 0 */
	HT_CAUSE_HYPERCALL, /* kvm_hypercall: value the hypercall nr (RAX) */
	HT_CAUSE_OTHER,     /* the reason's causes beyond HT_EXIT_CAUSES_PER_REASON, together */
	HT_CAUSE_NKINDS,
};
/* The direction in a cause's detail (low byte): in/read or out/write. */
#define HT_CAUSE_DIR_IN 0
#define HT_CAUSE_DIR_OUT 1
#define HT_EXIT_CAUSES_PER_REASON 16
#define HT_EXIT_MAX_CAUSES 4096
struct ht_exit_cause_key {
	__u32 pid;    /*  0 the VM process */
	__u32 reason; /*  4 as ht_exit_key's */
	__u8 isa;     /*  8 HT_ISA_VMX or HT_ISA_SVM */
	__u8 kind;    /*  9 enum ht_cause_kind */
	__u16 pad;    /* 10 0 */
	__u32 detail; /* 12 by kind (see enum ht_cause_kind) */
	__u64 value;  /* 16 by kind */
};
struct ht_exit_cause_hist {
	__u64 count;        /* exits of this cause */
	__u64 kvm_ns;       /* their time in KVM, summed */
	__u64 vmm_count;    /* of them, those that went to user space */
	__u64 vmm_ns;       /* their time in the VMM, summed */
	__u64 kvm_slots[HT_EXIT_SLOTS];
	__u64 vmm_slots[HT_EXIT_SLOTS];
};
_Static_assert(sizeof(struct ht_exit_cause_key) == 24, "ht_exit_cause_key layout changed");
_Static_assert(__builtin_offsetof(struct ht_exit_cause_key, value) == 16, "ht_exit_cause_key layout changed");
_Static_assert(sizeof(struct ht_exit_cause_hist) == 32 + 16 * HT_EXIT_SLOTS, "ht_exit_cause_hist layout changed");

/*
 * A VM process's share of the host-wide tables of --exits (map vm_shares,
 * keyed by its tgid; bounds in limits.h): the entries it holds, and the
 * exits whose new entry its share refused (series: the exit is lost;
 * cause: counted under its reason's "other" cause if that entry exists,
 * else lost).
 */
struct ht_vm_share {
	__u32 series;      /* its entries in exit_hists */
	__u32 causes;      /* its entries in exit_causes and exit_cause_names */
	__u64 series_over; /* exits whose new series was beyond its share */
	__u64 causes_over; /* exits whose new cause (or name) was beyond its share */
	__u32 threads;     /* its vCPU threads with an entry in vcpu_thread_table */
	__u32 pad;
	__u64 threads_over; /* exits of its threads that found its share of vcpu_thread_table spent: lost */
};
_Static_assert(sizeof(struct ht_vm_share) == 40, "ht_vm_share layout changed");

/*
 * Where a vCPU thread's time goes (record --exits): it is in exactly one of
 * these states from when the BPF programs first see it until it ends, and
 * each transition reads the clock once, ending one state and starting the
 * next, so the states add up to the thread's wall-clock time
 * (docs/design.md, "The vCPU account").
 */
enum ht_vcpu_state {
	HT_VCPU_GUEST = 0, /* kvm_entry .. kvm_exit: running guest code */
	HT_VCPU_KVM,       /* kvm_exit .. kvm_entry or kvm_userspace_exit, on a CPU: KVM handling the exit */
	HT_VCPU_VMM,       /* kvm_userspace_exit .. kvm_entry, on a CPU: the VMM (e.g. QEMU) in user space */
	HT_VCPU_WAIT,      /* runnable but not on a CPU (preempted, or woken): the guest's steal time */
	HT_VCPU_HALTED,    /* off the CPU, blocked while its open exit is a halt (the guest is idle) */
	HT_VCPU_BLOCKED,   /* off the CPU, blocked otherwise (e.g. the VMM waiting on a lock or I/O) */
	HT_VCPU_NSTATES,
};

/* The exits that halt a vCPU: an off-CPU thread blocked in one of them is halted, not blocked. */
#define HT_VMX_EXIT_REASON_HLT 12
#define HT_SVM_EXIT_CODE_HLT 0x78
#define HT_SVM_EXIT_CODE_IDLE_HLT 0xa6 /* AMD's idle-HLT intercept (kernels since 6.14) */
/* KVM_EXIT_HLT (linux/kvm.h): the VMM handles the halt (no in-kernel irqchip); blocked then, it is halted. */
#define HT_KVM_EXIT_HLT 5

/*
 * A vCPU thread's account as user space reads it: the time in each state
 * from start_ns up to as_of_ns, so the states sum to as_of_ns - start_ns
 * exactly. (tid, start_ns) names a thread: a thread id the kernel gives
 * again later is another thread.
 */
struct ht_vcpu_account {
	__u64 start_ns;                     /*  0 CLOCK_MONOTONIC when first seen */
	__u64 as_of_ns;                     /*  8 the states below are up to here */
	__u64 state_ns[HT_VCPU_NSTATES];    /* 16 by enum ht_vcpu_state */
};
_Static_assert(sizeof(struct ht_vcpu_account) == 16 + 8 * HT_VCPU_NSTATES, "ht_vcpu_account layout changed");

#endif /* HYPERTRACE_RECORD_H */
