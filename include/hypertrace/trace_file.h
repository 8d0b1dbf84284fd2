/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The hypertrace-bpf trace file (.htr), format version 12. Shared by the writer
 * and the reader; docs/trace-format.md describes it byte by byte.
 *
 *   file   := header block*
 *   block  := block_header payload
 *   payload:= record* (type RECORDS) | trailer (type TRAILER)
 *            | identity* (type IDENTITY)
 *            | exits_header exit_series* vcpu_wait* exit_cause* (type EXITS)
 *            | boot_vm* (type BOOT)
 *
 * Every block carries its length and a CRC32 (zlib's crc32) of its payload, so
 * a reader can stop at the first damaged or truncated block and still use all
 * blocks before it: a file cut short by a crash is readable up to its last
 * whole block. All integers are little-endian.
 */
#ifndef HYPERTRACE_TRACE_FILE_H
#define HYPERTRACE_TRACE_FILE_H

#include "hypertrace/record.h"

#define HT_FILE_MAGIC "HYPTRACE" /* 8 bytes, no terminating NUL in the file */
/*
 * 2: IDENTITY blocks may appear; a version-1 file is read the same, without names.
 * 3: EXITS blocks may appear (record --exits); earlier files are read the same, without them.
 * 4: RECORDS blocks may hold switches of vCPU threads (struct ht_vcpu_switch,
 *    record --vcpu-sched) between the hypercall records; earlier files have none.
 * 5: an EXITS block's thread records carry the thread's start and its
 *    account (struct ht_vcpu_account: where its time went); earlier files'
 *    thread records are 56 bytes, without it.
 * 6: an EXITS block's header is 56 bytes (lost_causes) and the block ends
 *    with its causes of exits (struct ht_exit_cause_rec, ncauses of them);
 *    earlier files' headers are 48 bytes, their ncauses (reserved0) 0.
 * 7: an EXITS block's header is 64 bytes (causes_not_theirs); earlier
 *    files' headers are 56 bytes, and every cause KVM reported was taken
 *    for its exit's, whatever its kind.
 * 8: RECORDS blocks may hold the exits of booting VMs (struct ht_boot_exit,
 *    record --boot) and BOOT blocks their VMs' numbers; earlier files have
 *    neither.
 * 9: an EXITS block's thread records carry the thread's halts in KVM
 *    (struct ht_vcpu_halts); earlier files' thread records end before them
 *    (HT_VCPU_WAIT_REC_V8_SIZE), read as no halts and polling unknown.
 * 10: the halts in an EXITS block's thread records carry their wake-ups
 *    (struct ht_vcpu_wakeups); earlier files' thread records end before
 *    them (HT_VCPU_WAIT_REC_V9_SIZE), read as none.
 * 11: RECORDS blocks may hold the wake-ups of halted vCPU threads (struct
 *    ht_vcpu_wakeup, record --wakeups); earlier files have none.
 * 12: the halts in an EXITS block's thread records carry the polling of
 *    the slept ones (slept_poll_ns); earlier files' thread records end
 *    before it (HT_VCPU_WAIT_REC_V11_SIZE), read as unknown
 *    (HT_VCPU_WAIT_F_NO_SLEPT_POLL).
 * 13: an EXITS block's thread records end with the thread's interrupts
 *    (struct ht_vcpu_irqs: acceptance to delivery); earlier files' thread
 *    records end before them (HT_VCPU_WAIT_REC_V12_SIZE), read as unknown
 *    (HT_VCPU_WAIT_F_NO_IRQS).
 * 14: RECORDS blocks may hold interrupt deliveries (struct ht_vcpu_irq,
 *    HT_REC_F_VCPU_IRQ; record --wakeups), which a reader of 13 would take
 *    for hypercalls.
 * 15: an EXITS block's thread records end with the thread's timer
 *    wake-ups from their due time (struct ht_vcpu_timer_due); earlier
 *    files' thread records end before it (HT_VCPU_WAIT_REC_V14_SIZE), read
 *    as unknown (HT_VCPU_WAIT_F_NO_TIMER_DUE).
 * 16: an EXITS block's series and causes may start again from zero
 *    (HT_EXIT_ROW_F_FROM_ZERO): the recorder forgot an ended VM process's
 *    rows, and its pid came back as a new process. A reader of 15 would
 *    take the new process's numbers for the old one's going down.
 */
#define HT_FILE_VERSION 16
#define HT_FILE_HEADER_SIZE 256

/* ht_file_header.filter_flags */
#define HT_FILTER_F_EXIT_REASON (1u << 0) /* filter_exit_reason is in force */
#define HT_FILTER_F_VCPU (1u << 1)        /* filter_vcpu is in force */
#define HT_FILTER_F_TGID (1u << 2)        /* filter_tgid is in force */
#define HT_FILTER_F_VCPU_SCHED (1u << 3)  /* record --vcpu-sched: the RECORDS blocks hold the vCPU threads' switches */
#define HT_FILTER_F_BOOT (1u << 4)        /* record --boot: the RECORDS blocks hold the exits of VMs that started */
#define HT_FILTER_F_WAKEUPS (1u << 5)     /* record --wakeups: the RECORDS blocks hold the wake-ups of halted vCPUs */

struct ht_file_header {
	char magic[8];               /*   0 "HYPTRACE" */
	__u32 version;               /*   8 HT_FILE_VERSION */
	__u32 header_size;           /*  12 HT_FILE_HEADER_SIZE: blocks start here */
	__u32 record_size;           /*  16 sizeof(struct ht_record) */
	__u32 flags;                 /*  20 reserved, 0 */
	__u64 start_monotonic_ns;    /*  24 CLOCK_MONOTONIC at start (the records' clock) */
	__u64 start_realtime_ns;     /*  32 CLOCK_REALTIME at the same instant */
	char kernel_release[65];     /*  40 uname -r of the traced host, NUL-terminated */
	char cpu_vendor[13];         /* 105 CPUID vendor, e.g. "GenuineIntel", NUL-terminated */
	__u8 pad0[2];                /* 118 0 */
	__u32 filter_nr_count;       /* 120 how many entries of filter_nr are used (1..8) */
	__u32 filter_nr[HT_MAX_SELECTED_NR]; /* 124 selected hypercall nr values */
	__u32 filter_flags;          /* 156 HT_FILTER_F_* */
	__u32 filter_exit_reason;    /* 160 explicit exit reason, if HT_FILTER_F_EXIT_REASON */
	__u32 filter_tgid;           /* 164 VM process, if HT_FILTER_F_TGID */
	__u32 filter_vcpu;           /* 168 vcpu id, if HT_FILTER_F_VCPU */
	__u32 ringbuf_bytes;         /* 172 BPF ring buffer size used */
	__u8 reserved[76];           /* 176 0 */
	__u32 header_crc32;          /* 252 crc32 of bytes 0..251 */
};

#define HT_BLOCK_MAGIC 0x4b425448u /* "HTBK" in the file */
#define HT_BLOCK_RECORDS 1
#define HT_BLOCK_TRAILER 2
/* Who a VM process or vCPU thread is: written when record first sees it. */
#define HT_BLOCK_IDENTITY 3
/* record --exits: the exit statistics that changed since the last such block (cumulative numbers). */
#define HT_BLOCK_EXITS 4
/* record --boot: the booting VMs' numbers that changed since the last such block (cumulative). */
#define HT_BLOCK_BOOT 5
#define HT_ENCODING_RAW 0
/* Records as ten u64 columns, each delta-coded, then deflated (src/user/tracefile/block_codec.c). */
#define HT_ENCODING_DELTA_ZLIB 1
/* A reader refuses blocks larger than this: protects it from a corrupt length. */
#define HT_BLOCK_MAX_PAYLOAD (64u << 20)

struct ht_block_header {
	__u32 magic;       /*  0 HT_BLOCK_MAGIC */
	__u16 type;        /*  4 HT_BLOCK_RECORDS or HT_BLOCK_TRAILER */
	__u16 encoding;    /*  6 HT_ENCODING_RAW or HT_ENCODING_DELTA_ZLIB (records only) */
	__u32 payload_len; /*  8 bytes of payload that follow this header */
	__u32 item_count;  /* 12 records in the block (1 for the trailer) */
	__u32 raw_len;     /* 16 payload size once decoded (= payload_len for RAW) */
	__u32 crc32;       /* 20 crc32 of the payload as stored */
};

/*
 * Payload of the TRAILER block, written once when a recording ends (cleanly,
 * or with blocks the file system refused: not_written says how many records).
 * not_written was "reserved, 0" before it was used, so older files read as 0.
 */
struct ht_trailer {
	__u64 records;             /*  0 records written to the file */
	__u64 ringbuf_drops;       /*  8 hypercalls lost: ring buffer full */
	__u64 state_alloc_fail;    /* 16 hypercalls lost: no per-thread state */
	__u64 superseded;          /* 24 hypercalls lost: another exit before kvm_entry */
	__u64 unselected_nr;       /* 32 hypercall exits whose nr was not selected (not losses) */
	__u64 end_monotonic_ns;    /* 40 CLOCK_MONOTONIC at the end */
	__u64 end_realtime_ns;     /* 48 CLOCK_REALTIME at the end */
	__u64 not_written;         /* 56 records lost: drained, but the file system refused their block (disk full) */
};

/*
 * Payload of an IDENTITY block (an array of them): the names of one vCPU
 * thread and of its process, read from /proc when record first drained a
 * record of that thread, and written before the block holding that record.
 * Strings are NUL-terminated and NUL-padded; "" when unknown.
 */
struct ht_identity {
	__u64 first_seen_ns;       /*  0 CLOCK_MONOTONIC (the records' clock) when first seen */
	__u32 pid;                 /*  8 the VM process (host_pid of its records) */
	__u32 tid;                 /* 12 the thread (host_tid of its records) */
	char process_name[16];     /* 16 the process's name (/proc/PID/comm) */
	char thread_name[16];      /* 32 the thread's name, e.g. "CPU 1/KVM" */
	char vm_name[64];          /* 48 QEMU's -name guest name from the command line */
};

/*
 * Payload of an EXITS block: this header, then nseries struct
 * ht_exit_series_rec, then nthreads struct ht_vcpu_wait_rec, then ncauses
 * struct ht_exit_cause_rec (version 6 on). Every number
 * is cumulative since the recording started; a block holds the series and
 * threads whose numbers changed since the block before, so the state at a
 * block is every block up to it applied in order. One block per interval;
 * the last one (flag final) also counts the exits still in the host at the end.
 */
#define HT_EXITS_F_FINAL (1u << 0)
struct ht_exits_header {
	__u64 time_ns;           /*  0 CLOCK_MONOTONIC when the numbers were read */
	__u32 nseries;           /*  8 */
	__u32 nthreads;          /* 12 */
	__u32 flags;             /* 16 HT_EXITS_F_* */
	__u32 ncauses;           /* 20 version 6 on; 0 before (reserved) */
	__u64 lost_series_full;  /* 24 exits lost so far: all HT_EXIT_MAX_SERIES series taken */
	__u64 lost_no_thread;    /* 32 exits lost so far: their thread found no vCPU thread slot */
	__u64 lost_vcpu_switches; /* 40 record --vcpu-sched: switches of vCPU threads lost so far (ring buffer full) */
	__u64 lost_causes;       /* 48 version 6 on: exits whose cause could not be counted so far (HT_CNT_EXIT_CAUSE_LOST) */
	__u64 causes_not_theirs; /* 56 version 7 on: cause events seen during exits whose cause they cannot be, so far (HT_CNT_EXIT_CAUSE_NOT_ITS) */
};
/* The header of EXITS blocks in files of versions 3 to 5: without lost_causes. */
#define HT_EXITS_HEADER_V5_SIZE 48
/* The header of EXITS blocks in files of version 6: without causes_not_theirs. */
#define HT_EXITS_HEADER_V6_SIZE 56

/*
 * A series' flags, a cause's key.pad in the file (version 16 on): the row
 * was new to the recorder when written, its numbers counted from zero. A
 * key the file had before is a new process of the same pid (the recorder
 * forgot the ended one's rows): its numbers go on top of the key's
 * (ht_exits_restarts). Set on every key's first row; a reader of a key it
 * has not seen has nothing to add.
 */
#define HT_EXIT_ROW_F_FROM_ZERO (1u << 0)

/* A cause of exits (version 6 on): cumulative, as the series. */
struct ht_exit_cause_rec {
	struct ht_exit_cause_key key;  /*  0 pid, reason, isa, kind, pad (HT_EXIT_ROW_F_FROM_ZERO), detail, value */
	struct ht_exit_cause_hist h;   /* 24 count, kvm_ns, vmm_count, vmm_ns, kvm_slots, vmm_slots */
};

struct ht_exit_series_rec {
	struct ht_exit_key key;  /*   0 pid, vcpu, isa, pad, reason */
	__u32 flags;             /*  12 HT_EXIT_ROW_F_FROM_ZERO (version 16 on), else 0 */
	__u64 in_host_at_end;    /*  16 final block: exits seen whose kvm_entry had not come */
	struct ht_exit_hist h;   /*  24 count, total_ns, min_ns, max_ns, slots[HT_EXIT_SLOTS] */
};

/*
 * Payload of a BOOT block (version 8 on): the booting VMs whose numbers
 * changed since the block before, each cumulative since its boot began; the
 * state at a block is every block up to it applied in order. pid 0 (flag
 * HT_BOOT_VM_F_REFUSED) counts in its over the VMs whose boots were not
 * recorded because HT_MAX_BOOT_VMS boots were followed already.
 */
#define HT_BOOT_VM_F_ENDED (1u << 0)   /* the VM process ended: these are its last numbers */
#define HT_BOOT_VM_F_REFUSED (1u << 1) /* pid 0: over counts the VMs refused */
struct ht_boot_vm_rec {
	__u32 pid;             /*  0 the VM process (0: see HT_BOOT_VM_F_REFUSED) */
	__u32 flags;           /*  4 HT_BOOT_VM_F_* */
	struct ht_boot_vm vm;  /*  8 first_ns, recorded, over, lost */
};

#define HT_VCPU_WAIT_F_GONE (1u << 0) /* the thread ended: these are its last numbers */
/* Set by the reader alone: the file (version 11 or older) holds no h.slept_poll_ns. */
#define HT_VCPU_WAIT_F_NO_SLEPT_POLL (1u << 1)
/* Set by the reader alone: the file (version 12 or older) holds no i. */
#define HT_VCPU_WAIT_F_NO_IRQS (1u << 2)
/* Set by the reader alone: the file (version 14 or older) holds no due. */
#define HT_VCPU_WAIT_F_NO_TIMER_DUE (1u << 3)
/*
 * A vCPU thread, named by (w.tid, a.start_ns): the states of a add up to
 * a.as_of_ns - a.start_ns exactly; w.wait_ns equals a's wait.
 */
struct ht_vcpu_wait_rec {
	struct ht_vcpu_wait w;        /*    0; w.pad1 holds HT_VCPU_WAIT_F_* */
	struct ht_vcpu_account a;     /*   56 version 5 on */
	struct ht_vcpu_halts h;       /*  120 version 9 on; h.wake version 10 on; h.slept_poll_ns version 12 on */
	struct ht_vcpu_irqs i;        /* 1128 version 13 on */
	struct ht_vcpu_timer_due due; /* 2120 version 15 on */
};
/* A thread record in files of versions 3 and 4: w alone. */
#define HT_VCPU_WAIT_REC_V4_SIZE 56
/* A thread record in files of versions 5 to 8: w and a. */
#define HT_VCPU_WAIT_REC_V8_SIZE (56 + 16 + 8 * HT_VCPU_NSTATES)
/* A thread record in files of version 9: w, a and the halts without their wake-ups. */
#define HT_VCPU_WAIT_REC_V9_SIZE (HT_VCPU_WAIT_REC_V8_SIZE + HT_VCPU_HALTS_V9_SIZE)
/* A thread record in files of versions 10 and 11: the halts without slept_poll_ns. */
#define HT_VCPU_WAIT_REC_V11_SIZE (HT_VCPU_WAIT_REC_V8_SIZE + HT_VCPU_HALTS_V11_SIZE)
/* A thread record in files of version 12: no interrupts. */
#define HT_VCPU_WAIT_REC_V12_SIZE (HT_VCPU_WAIT_REC_V11_SIZE + 8)
/* A thread record in files of versions 13 and 14: no timer wake-ups from their due time. */
#define HT_VCPU_WAIT_REC_V14_SIZE (HT_VCPU_WAIT_REC_V12_SIZE + sizeof(struct ht_vcpu_irqs))

_Static_assert(sizeof(struct ht_file_header) == HT_FILE_HEADER_SIZE, "header layout changed");
_Static_assert(sizeof(struct ht_exits_header) == 64, "exits header layout changed");
_Static_assert(__builtin_offsetof(struct ht_exits_header, lost_causes) == HT_EXITS_HEADER_V5_SIZE, "exits header layout");
_Static_assert(__builtin_offsetof(struct ht_exits_header, causes_not_theirs) == HT_EXITS_HEADER_V6_SIZE,
	       "exits header layout");
_Static_assert(sizeof(struct ht_exit_cause_rec) == 24 + 32 + 16 * HT_EXIT_SLOTS, "exit cause layout changed");
_Static_assert(sizeof(struct ht_exit_series_rec) == 24 + 32 + 8 * HT_EXIT_SLOTS, "exit series layout changed");
_Static_assert(sizeof(struct ht_vcpu_wait_rec) == HT_VCPU_WAIT_REC_V14_SIZE + sizeof(struct ht_vcpu_timer_due),
	       "vcpu wait layout changed");
_Static_assert(__builtin_offsetof(struct ht_vcpu_wait_rec, due) == 2120, "vcpu wait layout changed");
_Static_assert(sizeof(struct ht_identity) == 112, "identity layout changed");
_Static_assert(sizeof(struct ht_boot_vm_rec) == 40, "boot VM layout changed");
_Static_assert(__builtin_offsetof(struct ht_file_header, filter_nr_count) == 120, "header layout");
_Static_assert(__builtin_offsetof(struct ht_file_header, header_crc32) == 252, "header layout");
_Static_assert(sizeof(struct ht_block_header) == 24, "block header layout changed");
_Static_assert(sizeof(struct ht_trailer) == 64, "trailer layout changed");

/* Hypercalls the kernel saw but the file does not hold. */
static inline __u64 ht_trailer_lost(const struct ht_trailer *t)
{
	return t->ringbuf_drops + t->state_alloc_fail + t->superseded + t->not_written;
}

#endif /* HYPERTRACE_TRACE_FILE_H */
