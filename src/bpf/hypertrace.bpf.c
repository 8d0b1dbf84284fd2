// SPDX-License-Identifier: GPL-2.0
/*
 * The BPF object `hypertrace-bpf record` loads: its license, filters, maps and
 * globals, then the entry points into the fusion state machine (fuse.bpf.h).
 *
 * The tp/ programs are what `hypertrace-bpf record` attaches. The syscall
 * programs feed the very same handlers with synthetic tracepoint structs
 * through BPF_PROG_TEST_RUN; tests and benchmarks use them, and `record`
 * leaves them unloaded. The benchmarks' objects include this file whole, so
 * they measure exactly these maps and handlers.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "hypertrace/record.h"
#include "hypertrace/synthetic_fill.h"

char LICENSE[] SEC("license") = "GPL";

/*
 * Filters, fixed before load (rodata): the verifier sees constants and prunes
 * the code of every filter that is not in use, so an unused filter costs nothing.
 */
const volatile __u32 filter_nr[HT_MAX_SELECTED_NR] = { HT_DEFAULT_HYPERCALL_NR };
const volatile __u32 filter_nr_count = 1;
const volatile bool filter_exit_reason_on = false;
const volatile __u32 filter_exit_reason = 0; /* VMX: compared with the low 16 bits */
/*
 * The hot-path pre-filter: (exit_reason & mask) == value. A host runs one KVM
 * flavour, so the kvm_exit program is built three times from one handler:
 * for VMX (0xffff/18: basic reason, flag bits ignored) and SVM (~0/0x81) with
 * the pair as immediates, and a generic one reading it from here, loaded only
 * for an explicit --exit-reason. User space loads exactly one. One AND and one
 * compare reject almost every exit.
 */
const volatile __u32 prefilter_mask = HT_VMX_EXIT_REASON_MASK;
const volatile __u32 prefilter_value = HT_VMX_EXIT_REASON_VMCALL;
/* VM processes: every one, or (filter_tgid_on) those in traced_tgids below. */
const volatile bool filter_tgid_on = false;
const volatile bool filter_vcpu_on = false;
const volatile __u32 filter_vcpu = 0;
/* Aggregate-only mode: histograms in BPF instead of records (enum ht_agg_group_by). */
const volatile bool aggregate_only = false;
const volatile __u32 aggregate_group_by = HT_AGG_BY_NONE;
/* Aggregate-only, per vCPU: also key by the nr's index in filter_nr (record --metrics). */
const volatile bool aggregate_by_nr = false;
/* The consumer is woken each time the ring's fill level crosses a multiple of 1 << wakeup_shift; 0: kernel default. */
const volatile __u32 wakeup_shift = 0;
/*
 * record --exits: every exit's time in the host and the vCPU threads'
 * waiting (exits.bpf.h). Off, the verifier removes all of it: the hot path
 * is what it is without it.
 */
const volatile bool exits_on = false;
/*
 * record --vcpu-sched (needs exits_on: its vCPU thread table): each switch of
 * a vCPU thread out of its CPU and back in, as a struct ht_vcpu_switch in the
 * rings. Off, the verifier removes it.
 */
const volatile bool vcpu_sched_on = false;

/* A record as it sits in the ring buffer: 8-byte sample header + the record. */
#define HT_RINGBUF_SAMPLE_BYTES (8 + sizeof(struct ht_record))

/*
 * Records go to the ring of the CPU that emits them: a ring buffer's
 * reservation takes a spinlock, and producers on two CPUs sharing one ring
 * paid 6x per record (docs/performance.md). User space sizes the array to a
 * power of two, at most HT_MAX_RINGS, creates the rings and puts them in; CPU
 * c uses ring c & ring_mask, so beyond HT_MAX_RINGS CPUs share rings in pairs,
 * fours, ... The one consumer merges the rings in time order.
 */
struct ht_ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096); /* each ring's size, set by user space before load */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1); /* the number of rings, set by user space before load */
	__type(key, __u32);
	__array(values, struct ht_ring);
} rings SEC(".maps");

const volatile __u32 ring_mask = 0;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HT_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, HT_AGG_MAX_GROUPS);
	__type(key, __u64);
	__type(value, struct ht_agg_hist);
} latency_hists SEC(".maps");

/*
 * With filter_tgid_on: the VM processes traced (-p PID; the processes of
 * --vm NAME, which user space adds and removes while VMs come and go). Read
 * on a hypercall exit and, with exits_on, where an exit is counted; never
 * on the path of other exits otherwise.
 */
#define HT_MAX_TRACED_TGIDS 1024
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HT_MAX_TRACED_TGIDS);
	__type(key, __u32);
	__type(value, __u8);
} traced_tgids SEC(".maps");

/*
 * With filter_tgid_on: processes that exited for a hypercall (with exits_on:
 * that exited at all) but are not traced, so user space can tell whether a
 * new one is the VM it follows
 * (value 0: new; user space sets 1 once it has looked). A kvm_exit comes
 * only from a thread running a vCPU of a KVM VM: the kernel vouches that
 * each is a VM. LRU: a host with more untraced VMs forgets the oldest.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, HT_MAX_TRACED_TGIDS);
	__type(key, __u32);
	__type(value, __u8);
} vm_candidates SEC(".maps");

#include "vcpu_state.h"

/*
 * --exits: per-CPU histograms of the time in the host, per (VM process, vCPU,
 * ISA, exit reason), of the series that found no entry in their CPU's
 * exit_cache.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, HT_EXIT_MAX_SERIES);
	/* Memory only for the series that occur: a host may run few VMs on many CPUs. */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct ht_exit_key);
	__type(value, struct ht_exit_hist);
} exit_hists SEC(".maps");

/* --exits: each CPU's table of series (see exit_cache_entry); CPUs x HT_EXIT_CACHE_WAYS entries, set by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HT_EXIT_CACHE_WAYS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct exit_cache_entry);
} exit_cache SEC(".maps");

/*
 * --exits: the vCPU threads (struct vcpu_thread), one entry each, read by
 * user space through a mapping (no system call per thread, no copy); an
 * entry of a thread that ended stays until user space has read its last
 * numbers and frees it. vcpu_thread_ids finds a thread's entry by its id.
 * Preallocated: sched_switch creates entries with the runqueue lock held
 * (see moved_states).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HT_MAX_VCPU_THREADS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct vcpu_thread);
} vcpu_thread_table SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HT_MAX_VCPU_THREADS);
	__type(key, __u32);   /* the thread's id */
	__type(value, __u32); /* its index in vcpu_thread_table */
} vcpu_thread_ids SEC(".maps");

/* --exits: bit tid set while vcpu_thread_ids has an entry for tid (512 KiB: one bit per possible thread id). */
__u64 vcpu_tid_bits[HT_TID_BITS / 64] = {};

/*
 * Where an armed thread's state lives. A vCPU thread runs its kvm_exit,
 * kvm_hypercall and kvm_entry on one CPU unless it is switched out in
 * between, and a thread leaves its CPU only by being switched out. So a
 * running thread's armed state is kept in the slot of the CPU it runs on
 * (cpu_states: a global array, one load, no helper call), and the
 * sched_switch program moves it into moved_states when the thread is
 * switched out armed, and back into the slot of whatever CPU it is switched
 * in on. While a CPU's slot is armed, the thread running there is the one
 * that armed it, as far as the kernel reports switches (take_own_state in
 * fuse.bpf.h puts right a switch it did not report). armed_moved counts the
 * states in moved_states (armed threads off-CPU, rare: a hypercall's window
 * is microseconds): while it is 0, no handler looks into moved_states.
 *
 * This needs the sched_switch program attached before the kvm_exit program
 * (ht_tracer_attach does; a tracer loaded for synthetic events attaches it at
 * load), or a vCPU thread that never leaves its CPU (the hot-path benchmark).
 *
 * No line is written by more than one CPU per hypercall: the slots are per CPU
 * (128 bytes each), and armed_moved changes only when an armed thread is
 * switched out or in. At most HT_MAX_CPUS possible CPUs (user space checks).
 */
struct vcpu_state cpu_states[HT_MAX_CPUS] = {};

/*
 * The states of armed threads that are off-CPU, by thread id. A hash map
 * with preallocated elements, not task storage: sched_switch runs with the
 * runqueue lock held, where allocating memory (task storage's create, on 6.1
 * a GFP_ATOMIC kmalloc that may wake kswapd) can deadlock the scheduler; a
 * preallocated element comes off a free list. Full: the hypercall is lost
 * and counted (HT_CNT_STATE_ALLOC_FAIL). A thread is switched in again
 * before it can exit, which takes its entry out.
 */
#define HT_MAX_MOVED_STATES 4096
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HT_MAX_MOVED_STATES);
	__type(key, __u32); /* the thread's id (task->pid) */
	__type(value, struct vcpu_state);
} moved_states SEC(".maps");

__u64 armed_moved = 0;

/*
 * Bytes of records emitted into each ring ([ring][0]; 64 bytes a ring, so CPUs
 * do not write each other's line), for the wake-up test.
 */
__u64 ring_emitted[HT_MAX_RINGS][8] = {};

#include "fuse.bpf.h"

/*
 * What every tracepoint program returns. The kernel hands a tracepoint event
 * to perf only if the attached BPF programs return nonzero
 * (perf_trace_run_bpf_submit): 0 would blind every `perf stat`/`perf record`
 * user of kvm:kvm_exit, kvm:kvm_entry or sched:sched_process_exit on the
 * host while we run.
 * ftrace is unaffected either way.
 */
#define TP_PASS_EVENT 1

/* One of the three kvm_exit programs is loaded: see prefilter_mask above. */
SEC("tp/kvm/kvm_exit")
int on_kvm_exit_vmx(struct trace_event_raw_kvm_exit *ctx)
{
	handle_kvm_exit(ctx, HT_VMX_EXIT_REASON_MASK, HT_VMX_EXIT_REASON_VMCALL, 0);
	return TP_PASS_EVENT;
}

SEC("tp/kvm/kvm_exit")
int on_kvm_exit_svm(struct trace_event_raw_kvm_exit *ctx)
{
	handle_kvm_exit(ctx, HT_SVM_EXIT_CODE_MASK, HT_SVM_EXIT_CODE_VMMCALL, 0);
	return TP_PASS_EVENT;
}

SEC("tp/kvm/kvm_exit")
int on_kvm_exit(struct trace_event_raw_kvm_exit *ctx)
{
	handle_kvm_exit(ctx, prefilter_mask, prefilter_value, 0);
	return TP_PASS_EVENT;
}

SEC("tp/kvm/kvm_hypercall")
int on_kvm_hypercall(struct trace_event_raw_kvm_hypercall *ctx)
{
	handle_kvm_hypercall(ctx);
	return TP_PASS_EVENT;
}

SEC("tp/kvm/kvm_entry")
int on_kvm_entry(struct trace_event_raw_kvm_entry *ctx)
{
	handle_kvm_entry(ctx, 0);
	return TP_PASS_EVENT;
}

/* --exits: a vCPU thread goes back to the VMM (the vCPU account's vmm state). Loaded only with --exits. */
SEC("tp/kvm/kvm_userspace_exit")
int on_kvm_userspace_exit(struct trace_event_raw_kvm_userspace_exit *ctx)
{
	handle_kvm_userspace_exit(ctx->reason, 0);
	return TP_PASS_EVENT;
}

/* The per-thread state's end of life: see handle_thread_exit. */
SEC("tp/sched/sched_process_exit")
int on_thread_exit(void *ctx)
{
	(void)ctx;
	handle_thread_exit();
	return TP_PASS_EVENT;
}

/*
 * Armed threads leaving their CPU and coming back (see cpu_states). A
 * BTF-enabled raw tracepoint: it gets both tasks, is skipped only if this
 * program itself is already running on the CPU (a classic tracepoint program
 * is skipped whenever any other BPF tracing program runs there), and leaves
 * perf's view of the tracepoint alone. ctx: (preempt, prev, next, ...).
 */
SEC("tp_btf/sched_switch")
int on_sched_switch(unsigned long long *ctx)
{
	return handle_sched_switch((struct task_struct *)ctx[1], (struct task_struct *)ctx[2], (bool)ctx[0]);
}

/* --exits: a vCPU thread woken starts waiting for a CPU. ctx: (p). Loaded only with --exits. */
SEC("tp_btf/sched_wakeup")
int on_sched_wakeup(unsigned long long *ctx)
{
	return handle_sched_wakeup(((struct task_struct *)ctx[0])->pid, 0);
}

SEC("syscall")
int synthetic_kvm_exit_vmx(struct trace_event_raw_kvm_exit *ctx)
{
	return handle_kvm_exit(ctx, HT_VMX_EXIT_REASON_MASK, HT_VMX_EXIT_REASON_VMCALL, 0);
}

SEC("syscall")
int synthetic_kvm_exit_svm(struct trace_event_raw_kvm_exit *ctx)
{
	return handle_kvm_exit(ctx, HT_SVM_EXIT_CODE_MASK, HT_SVM_EXIT_CODE_VMMCALL, 0);
}

SEC("syscall")
int synthetic_kvm_exit(struct trace_event_raw_kvm_exit *ctx)
{
	return handle_kvm_exit(ctx, prefilter_mask, prefilter_value, 0);
}

SEC("syscall")
int synthetic_kvm_hypercall(struct trace_event_raw_kvm_hypercall *ctx)
{
	return handle_kvm_hypercall(ctx);
}

SEC("syscall")
int synthetic_kvm_entry(struct trace_event_raw_kvm_entry *ctx)
{
	return handle_kvm_entry(ctx, 0);
}

/*
 * Synthetic events at a given time, for the exits' tests: the real handlers
 * with the caller's clock, so a time in the host is exactly what the test
 * says. The event is laid out in the kernel's format after the time.
 */
struct synthetic_timed_event {
	__u64 now_ns;
	__u64 pad;
	__u8 event[256];
};

/* The event, copied out of the context: a program may not read through a pointer moved into its context. */
__u8 synthetic_event[256] = {};

SEC("syscall")
int synthetic_kvm_exit_at(struct synthetic_timed_event *args)
{
	__builtin_memcpy(synthetic_event, args->event, sizeof(synthetic_event));
	return handle_kvm_exit((struct trace_event_raw_kvm_exit *)synthetic_event, prefilter_mask, prefilter_value,
			       args->now_ns);
}

SEC("syscall")
int synthetic_kvm_entry_at(struct synthetic_timed_event *args)
{
	__builtin_memcpy(synthetic_event, args->event, sizeof(synthetic_event));
	return handle_kvm_entry((struct trace_event_raw_kvm_entry *)synthetic_event, args->now_ns);
}

/* The event's first four bytes are the KVM_EXIT_* reason. */
SEC("syscall")
int synthetic_kvm_userspace_exit_at(struct synthetic_timed_event *args)
{
	__u32 reason;

	__builtin_memcpy(&reason, args->event, sizeof(reason));
	return handle_kvm_userspace_exit(reason, args->now_ns);
}

/* A context switch of the vCPU threads' accounting, between any two thread ids, on this CPU. */
struct synthetic_switch_args {
	__u32 prev_tid, prev_tgid, next_tid, next_tgid;
	__u32 prev_involuntary, pad;
	__u64 now_ns;
	__u64 prev_state;
	char prev_comm[16], next_comm[16];
};

SEC("syscall")
int synthetic_sched_switch(struct synthetic_switch_args *a)
{
	struct vcpu_state *slot = cpu_slot(bpf_get_smp_processor_id());
	struct switch_event e = {
		.prev_ids = (__u64)a->prev_tgid << 32 | a->prev_tid,
		.next_ids = (__u64)a->next_tgid << 32 | a->next_tid,
		.prev_state = a->prev_state,
		.now = a->now_ns,
		.prev_involuntary = a->prev_involuntary,
	};

	__builtin_memcpy(e.prev_comm, a->prev_comm, sizeof(e.prev_comm));
	__builtin_memcpy(e.next_comm, a->next_comm, sizeof(e.next_comm));
	exits_sched_switch(slot, &e);
	return 0;
}

struct synthetic_wakeup_args {
	__u32 tid, pad;
	__u64 now_ns;
};

SEC("syscall")
int synthetic_sched_wakeup(struct synthetic_wakeup_args *a)
{
	return handle_sched_wakeup(a->tid, a->now_ns);
}

/* A vCPU thread as kvm_entry first registers one, for the waiting tests' made-up threads. */
struct synthetic_register_args {
	__u32 tid, tgid, vcpu, running;
	__u64 now_ns;
};

SEC("syscall")
int synthetic_vcpu_register(struct synthetic_register_args *a)
{
	__u32 idx;

	return vcpu_thread_register((__u64)a->tgid << 32 | a->tid,
				    VCPU_AND_STATE(a->vcpu, a->running ? HT_VCPU_GUEST : HT_VCPU_BLOCKED),
				    a->now_ns ? a->now_ns : bpf_ktime_get_ns(), &idx) ? 0 : 1;
}

/*
 * Synthetic producer for drain tests and benchmarks: submits `count` fused
 * records through the same (this CPU's) ring buffer, wake-up policy and drop counter as
 * handle_kvm_entry, with a1 = seq, seq + 1, ... so the consumer can check order
 * and loss.
 */
static long fill_one(__u32 i, struct ht_synthetic_fill_args *args)
{
	__u32 cpu = bpf_get_smp_processor_id();
	void *ring = cpu_ring(cpu);
	struct ht_record *rec = ring ? bpf_ringbuf_reserve(ring, sizeof(*rec), 0) : NULL;

	if (!rec) {
		count(HT_CNT_RINGBUF_DROPS);
		return 0;
	}
	__builtin_memset(rec, 0, sizeof(*rec));
	rec->exit_ns = args->seq + i; /* no clock read: the producer only generates load */
	rec->a1 = args->seq + i;
	rec->nr = HT_DEFAULT_HYPERCALL_NR;
	rec->isa = HT_ISA_VMX;
	rec->exit_reason = HT_VMX_EXIT_REASON_VMCALL;
	rec->entry_cpu = cpu;
	bpf_ringbuf_submit(rec, wakeup_flags(cpu));
	return 0;
}

SEC("syscall")
int synthetic_fill(struct ht_synthetic_fill_args *args)
{
	struct ht_synthetic_fill_args a = *args;

	bpf_loop(a.count, fill_one, &a, 0);
	return 0;
}
