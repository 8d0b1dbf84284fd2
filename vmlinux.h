/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Curated CO-RE types for hypertrace-bpf's BPF programs.
 *
 * This is deliberately not a full `bpftool btf dump` of some kernel: it holds only
 * the types the programs touch, so the build needs no BTF on the build machine.
 * The tracepoint structs carry preserve_access_index, so every field access is
 * relocated at load time against the running kernel's BTF — vmlinux, or the kvm
 * module's BTF on kernels that build kvm as a module (Debian's do). Fields that
 * not every kernel has are reached through bpf_core_field_exists() first.
 */
#ifndef __VMLINUX_H__
#define __VMLINUX_H__

typedef signed char __s8;
typedef unsigned char __u8;
typedef short __s16;
typedef unsigned short __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef long long __s64;
typedef unsigned long long __u64;
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s64 s64;
typedef _Bool bool;
enum { false = 0, true = 1 };
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;

/* UAPI constants the programs use (values are ABI, identical on every kernel). */
enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_HASH = 5,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_LRU_HASH = 9,
	BPF_MAP_TYPE_ARRAY_OF_MAPS = 12,
	BPF_MAP_TYPE_RINGBUF = 27,
	BPF_MAP_TYPE_TASK_STORAGE = 29,
};
enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
	BPF_EXIST = 2,
};
enum {
	BPF_F_NO_PREALLOC = 1,
	BPF_F_MMAPABLE = 1024,
};
enum {
	BPF_RB_NO_WAKEUP = 1,
	BPF_RB_FORCE_WAKEUP = 2,
};
enum {
	BPF_LOCAL_STORAGE_GET_F_CREATE = 1,
};

/*
 * Passed to helpers; pid (the thread id) and tgid are read through CO-RE.
 * record --boot reads the process's start (its group leader's start_time,
 * CLOCK_MONOTONIC ns since 5.5) to tell a VM that starts while it records.
 */
struct task_struct {
	unsigned int __state; /* since 5.14 */
	int pid;
	int tgid;
	char comm[16]; /* TASK_COMM_LEN */
	struct task_struct *group_leader;
	u64 start_time;
} __attribute__((preserve_access_index));

#define TASK_RUNNING 0x00000000

struct trace_entry {
	unsigned short type;
	unsigned char flags;
	unsigned char preempt_count;
	int pid;
} __attribute__((preserve_access_index));

/*
 * kvm:kvm_exit. vcpu_id was added around 5.4 and moved when intr_info and
 * error_code were inserted (5.10); requests appeared in 6.14. CO-RE resolves the
 * offsets; optional fields are read only where bpf_core_field_exists() says so.
 */
struct trace_event_raw_kvm_exit {
	struct trace_entry ent;
	unsigned int exit_reason;
	unsigned long guest_rip;
	u32 isa;
	u64 info1;
	u64 info2;
	u32 intr_info;
	u32 error_code;
	unsigned int vcpu_id;
} __attribute__((preserve_access_index));

/*
 * KVM's own structs, for the raw (tp_btf) programs, which get the vCPU
 * itself: only the fields they read. CO-RE relocates them against the BTF
 * that has them: struct kvm_vcpu against the kernel's (6.1, 6.12, 6.18 have
 * it even with KVM a module), the SVM ones against the kvm_amd module's.
 * regs[] is indexed by enum kvm_reg: VCPU_REGS_RIP is 16 on x86-64, and
 * CO-RE checks the index against the kernel's array.
 */
/* An hrtimer: its expiry (CLOCK_MONOTONIC, ns) and its callback. */
struct timerqueue_node {
	s64 expires;
} __attribute__((preserve_access_index));

struct hrtimer {
	struct timerqueue_node node;
	void *function;
} __attribute__((preserve_access_index));

/* KVM's emulated local APIC timer: the hrtimer it arms for the guest's deadline. */
struct kvm_timer {
	struct hrtimer timer;
} __attribute__((preserve_access_index));

struct kvm_vcpu;

/*
 * The vCPU's local APIC: its registers' page, as the guest sees it
 * (APIC_LVTT at 0x320), its timer and its vCPU.
 */
struct kvm_lapic {
	void *regs;
	struct kvm_timer lapic_timer;
	struct kvm_vcpu *vcpu;
} __attribute__((preserve_access_index));

/* A pid's number in the initial namespace (numbers[0]): a thread's tid. */
struct upid {
	int nr;
} __attribute__((preserve_access_index));

struct pid {
	struct upid numbers[1];
} __attribute__((preserve_access_index));

struct kvm_vcpu_arch {
	unsigned long regs[17]; /* NR_VCPU_REGS */
	struct kvm_lapic *apic; /* record --exits: its LVTT names the timer's vector (a wake-up's class) */
	/*
	 * record --boot: the guest's mode. KVM intercepts every change of
	 * CR0.PE and CR0.PG and every write of EFER (LMA follows PG with
	 * LME), so these cached values are the guest's at an entry.
	 */
	unsigned long cr0;
	u64 efer;
	/*
	 * record --exits: bit 0 clear, the guest polls before it halts
	 * (MSR_KVM_POLL_CONTROL), and KVM does not (kvm_arch_no_poll).
	 */
	u64 msr_kvm_poll_control;
} __attribute__((preserve_access_index));

struct kvm_vcpu {
	int vcpu_id;
	struct pid *pid; /* the thread that runs it (KVM_RUN's caller) */
	unsigned int halt_poll_ns; /* the polling in force for the vCPU's next halt (record --exits) */
	struct kvm_vcpu_arch arch;
} __attribute__((preserve_access_index));

#define VCPU_REGS_RIP 16

/* The exit code is u32 up to 6.18 (a u64 in later kernels: its low half on x86, the same value). */
struct vmcb_control_area {
	u32 exit_code;
} __attribute__((preserve_access_index));

struct vmcb {
	struct vmcb_control_area control;
} __attribute__((preserve_access_index));

/* to_svm(): a struct vcpu_svm begins with its struct kvm_vcpu (svm.c checks that at build time). */
struct vcpu_svm {
	struct vmcb *vmcb;
} __attribute__((preserve_access_index));

/* kvm:kvm_entry. vcpu_id exists on every kernel; rip since about 5.10. */
struct trace_event_raw_kvm_entry {
	struct trace_entry ent;
	unsigned int vcpu_id;
	unsigned long rip;
} __attribute__((preserve_access_index));

/* kvm:kvm_hypercall. It has no vcpu field: the vCPU is the current thread. */
struct trace_event_raw_kvm_hypercall {
	struct trace_entry ent;
	unsigned long nr;
	unsigned long a0;
	unsigned long a1;
	unsigned long a2;
	unsigned long a3;
} __attribute__((preserve_access_index));

/* kvm:kvm_userspace_exit (virt/kvm: include/trace/events/kvm.h): KVM_RUN returns to the VMM. */
struct trace_event_raw_kvm_userspace_exit {
	struct trace_entry ent;
	__u32 reason; /* struct kvm_run's exit_reason: KVM_EXIT_* */
	int errno;
} __attribute__((preserve_access_index));

/*
 * The tracepoints KVM fires while handling an exit, for its cause (record
 * --exits): arch/x86/kvm/trace.h (kvm_pio, kvm_msr, kvm_cpuid) and
 * include/trace/events/kvm.h (kvm_mmio), the same fields on 6.1 and 6.18.
 * kvm_cpuid's index (the subleaf) is read where it exists.
 */
struct trace_event_raw_kvm_pio {
	struct trace_entry ent;
	unsigned int rw; /* KVM_PIO_IN 0, KVM_PIO_OUT 1 */
	unsigned int port;
	unsigned int size;
	unsigned int count;
	unsigned int val;
} __attribute__((preserve_access_index));

struct trace_event_raw_kvm_mmio {
	struct trace_entry ent;
	u32 type; /* KVM_TRACE_MMIO_READ_UNSATISFIED 0, _READ 1, _WRITE 2 */
	u32 len;
	u64 gpa;
	u64 val;
} __attribute__((preserve_access_index));

struct trace_event_raw_kvm_msr {
	struct trace_entry ent;
	unsigned int write;
	u32 ecx;
	u64 data;
	u8 exception;
} __attribute__((preserve_access_index));

struct trace_event_raw_kvm_cpuid {
	struct trace_entry ent;
	unsigned int function;
	unsigned int index;
} __attribute__((preserve_access_index));

#endif /* __VMLINUX_H__ */
