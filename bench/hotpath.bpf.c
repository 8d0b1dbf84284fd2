// SPDX-License-Identifier: GPL-2.0
/*
 * Hot-path benchmark: the real handlers of fuse.bpf.h run over synthetic
 * events in a bpf_loop, timed with bpf_ktime_get_ns inside the program so no
 * syscall is counted. Side by side: an empty handler (the floor of invoking a
 * handler at all) and the hash-map reference design (hash_design.bpf.h).
 */
#include "hypertrace.bpf.c" /* the production object: maps, handlers, programs */
#include "hash_design.bpf.h"

/*
 * Events in the running kernel's layout, written by user space before a run.
 * A second instance of this object, loaded with exits_on, runs the --exits
 * cases: the first one's programs stay what record loads without --exits.
 */
unsigned char ev_exit_hypercall[256];
unsigned char ev_exit_other[256];
unsigned char ev_hypercall[256];
unsigned char ev_entry[256];
unsigned char ev_exit_hlt[256];

__u64 bench_elapsed_ns;

enum bench_case {
	BENCH_EMPTY = 0,
	BENCH_EXIT_NOMATCH,
	BENCH_ENTRY_NOMATCH,
	BENCH_FUSED,
	BENCH_HASH_EXIT_NOMATCH,
	BENCH_HASH_ENTRY_NOMATCH,
	BENCH_HASH_FUSED,
	BENCH_ANCHOR_EXIT_NOMATCH,
	BENCH_ANCHOR_ENTRY_NOMATCH,
	BENCH_ANCHOR_HYPERCALL,
	/* The fused hypercall's parts, one at a time. */
	BENCH_PART_CLOCK3,
	BENCH_PART_STORAGE3,
	BENCH_PART_RESERVE_SUBMIT,
	BENCH_PART_RESERVE_COPY_SUBMIT,
	BENCH_PART_WAKEUP_TEST,
	BENCH_PART_WAKEUP_QUERY,
	BENCH_SWITCH_OUT,
	/* --exits (in an instance loaded with exits_on). */
	BENCH_FLOOR_PAIR,        /* two empty handler dispatches and two clock reads */
	BENCH_EXITS_PAIR,        /* kvm_exit (not a hypercall) + kvm_entry with --exits */
	BENCH_SWITCH_VCPUS,      /* two switches between two vCPU threads (per switch: half) */
	BENCH_WAKEUP_PLAIN,      /* sched_wakeup of a thread that is no vCPU thread */
	/* --exits, and --vcpu-sched (in instances loaded with exits_on, one also with vcpu_sched_on). */
	BENCH_SWITCH_PAIR,       /* the real sched_switch handler, this thread to its parent and back (per switch: half) */
	BENCH_REGISTER_PAIR,     /* once: both threads of the pair into vcpu_thread_table (not a loop) */
	/* --exits, and --exits --wakeups: a halted vCPU's wake-up path (this thread as the vCPU thread). */
	BENCH_FLOOR_HALT,        /* six handler dispatches and five clock reads */
	BENCH_HALT_CYCLE,        /* its HLT exit, switch-out (halted), wake-up, switch-in, injection and entry */
	BENCH_HALT_IRQ_CYCLE,    /* the same, woken by an interrupt its process sent (record --exits times it) */
	BENCH_HALT_DUE_CYCLE,    /* BENCH_HALT_CYCLE with its timer's expiry noted while it sleeps (its due time) */
};

struct bench_args {
	__u32 which;
	__u32 iterations;
};

#define EXIT_HC ((struct trace_event_raw_kvm_exit *)ev_exit_hypercall)
#define EXIT_OTHER ((struct trace_event_raw_kvm_exit *)ev_exit_other)
#define HCALL ((struct trace_event_raw_kvm_hypercall *)ev_hypercall)
#define ENTRY ((struct trace_event_raw_kvm_entry *)ev_entry)
#define EXIT_HLT ((struct trace_event_raw_kvm_exit *)ev_exit_hlt)

/* bpf_loop callbacks ignore the index and context. */
#define LOOP_CALLBACK(name) static long name(__u32 i __attribute__((unused)), void *c __attribute__((unused)))

/*
 * Every handler is invoked as an out-of-line function, as the kernel invokes a
 * tracepoint program: the floor is the cost of calling a handler that does
 * nothing (the barrier keeps the compiler from deleting the call).
 */
static __noinline int empty_handler(void *ctx)
{
	asm volatile("" ::: "memory");
	return ctx == 0;
}

/* As on_kvm_exit_vmx: the synthetic events are VMX. */
static __noinline int call_exit(struct trace_event_raw_kvm_exit *ctx)
{
	return handle_kvm_exit(ctx, EXIT_FROM_RECORD, HT_VMX_EXIT_REASON_MASK, HT_VMX_EXIT_REASON_VMCALL, 0);
}
/* A context switch from this thread to itself: the checks of a switch, no real switch. */
static __noinline int call_sched_switch(void)
{
	struct task_struct *self = bpf_get_current_task_btf();

	return handle_sched_switch(self, self, false);
}
static __noinline int call_hypercall(struct trace_event_raw_kvm_hypercall *ctx)
{
	return handle_kvm_hypercall(ctx->nr, ctx->a0, ctx->a1, ctx->a2, ctx->a3);
}
static __noinline int call_entry(struct trace_event_raw_kvm_entry *ctx) { return handle_kvm_entry(NULL, ctx->vcpu_id, 0); }
static __noinline int call_hash_exit(struct trace_event_raw_kvm_exit *ctx) { return hash_kvm_exit(ctx); }
static __noinline int call_hash_hypercall(struct trace_event_raw_kvm_hypercall *ctx) { return hash_kvm_hypercall(ctx); }
static __noinline int call_hash_entry(struct trace_event_raw_kvm_entry *ctx) { return hash_kvm_entry(ctx); }
static __noinline int call_anchor_exit(struct trace_event_raw_kvm_exit *ctx) { return anchor_kvm_exit(ctx); }
static __noinline int call_anchor_hypercall(struct trace_event_raw_kvm_hypercall *ctx) { return anchor_kvm_hypercall(ctx); }
static __noinline int call_anchor_entry(struct trace_event_raw_kvm_entry *ctx) { return anchor_kvm_entry(ctx); }

LOOP_CALLBACK(cb_sched_switch) { call_sched_switch(); return 0; }

/*
 * The floor of an exit and its entry with --exits: the two handler
 * dispatches and the two clock reads any measurement of a time in the
 * host needs.
 */
static __noinline int clock_handler(void *ctx)
{
	asm volatile("" ::: "memory");
	return bpf_ktime_get_ns() == (__u64)(long)ctx;
}
LOOP_CALLBACK(cb_floor_pair) { clock_handler(EXIT_OTHER); clock_handler(ENTRY); return 0; }
LOOP_CALLBACK(cb_exits_pair) { call_exit(EXIT_OTHER); call_entry(ENTRY); return 0; }

/* Two vCPU threads (tids set by user space, registered as vCPU threads) switching back and forth. */
__u32 bench_vcpu_tid[2], bench_vcpu_tgid;
static __noinline int call_vcpu_switch(__u32 from, __u32 to)
{
	struct vcpu_state *slot = cpu_slot(bpf_get_smp_processor_id());

	struct switch_event e = {
		.prev_ids = (__u64)bench_vcpu_tgid << 32 | bench_vcpu_tid[from],
		.next_ids = (__u64)bench_vcpu_tgid << 32 | bench_vcpu_tid[to],
		.prev_involuntary = 1,
	};

	exits_sched_switch(slot, &e);
	return 0;
}
LOOP_CALLBACK(cb_switch_vcpus) { call_vcpu_switch(0, 1); call_vcpu_switch(1, 0); return 0; }

/*
 * Two real threads, this one and its parent, switching back and forth
 * through the whole sched_switch handler as the tracepoint program runs it
 * (the tasks' ids, state and, with --vcpu-sched, names read from the
 * task_structs): a preemption of this thread, then its parent switched
 * out as its state says (a shell waiting for the benchmark: blocked).
 * Whether they are vCPU threads is their bits in vcpu_tid_bits, which user
 * space sets or clears between cases (their vcpu_thread_table entries stay).
 */
__u32 bench_pair_tid[2];
/* The one field the benchmark needs that the programs do not (vmlinux.h holds theirs only). */
struct task_struct___bench {
	struct task_struct *real_parent;
} __attribute__((preserve_access_index));
#define PARENT_OF(task) (((struct task_struct___bench *)(task))->real_parent)

static __noinline int call_switch_pair(void)
{
	struct task_struct *self = bpf_get_current_task_btf();
	struct task_struct *parent = PARENT_OF(self);

	handle_sched_switch(self, parent, true);
	handle_sched_switch(parent, self, false);
	return 0;
}
LOOP_CALLBACK(cb_switch_pair) { call_switch_pair(); return 0; }

static __noinline int register_pair(void)
{
	struct task_struct *self = bpf_get_current_task_btf();
	struct task_struct *parent = PARENT_OF(self);
	__u32 tid = self->pid, ptid = parent->pid;

	__u64 now = bpf_ktime_get_ns();
	__u32 idx;

	if (!vcpu_thread_register((__u64)self->tgid << 32 | tid, VCPU_AND_STATE(0, HT_VCPU_GUEST), now, &idx) ||
	    !vcpu_thread_register((__u64)parent->tgid << 32 | ptid, VCPU_AND_STATE(1, HT_VCPU_BLOCKED), now, &idx))
		return 1;
	bench_pair_tid[0] = tid;
	bench_pair_tid[1] = ptid;
	return 0;
}

/* A wake-up of a thread that is no vCPU thread (the real program reads its tid from the woken task). */
__u32 bench_plain_tid = 1;
static __noinline int call_wakeup(__u32 tid) { return handle_sched_wakeup(tid, 0); }
LOOP_CALLBACK(cb_wakeup_plain) { call_wakeup(bench_plain_tid); return 0; }

/*
 * A halted vCPU's wake-up path, this thread as the vCPU thread: its HLT
 * exit, its switch-out blocked in the halt (to a thread that is no vCPU
 * thread), the sched_wakeup that ends its sleep, its switch-in, KVM's
 * injection of the timer's vector and the kvm_entry that closes the
 * wake-up. Its floor: the six dispatches, and a clock read for each but
 * the injection's, which reads none.
 */
static __noinline int call_inj_virq(__u32 vector)
{
	return vcpu_vector_injected((__u32)bpf_get_current_pid_tgid(), vector);
}
static __noinline int call_self_switch(bool out)
{
	struct vcpu_state *slot = cpu_slot(bpf_get_smp_processor_id());
	__u64 me = bpf_get_current_pid_tgid(), other = (__u64)bench_plain_tid << 32 | bench_plain_tid;
	struct switch_event e = {
		.prev_ids = out ? me : other,
		.next_ids = out ? other : me,
		.prev_state = out, /* TASK_INTERRUPTIBLE: blocked in the halt */
	};

	exits_sched_switch(slot, &e);
	return 0;
}
LOOP_CALLBACK(cb_floor_halt)
{
	clock_handler(EXIT_HLT);
	clock_handler(NULL);
	clock_handler(NULL);
	clock_handler(NULL);
	empty_handler(NULL);
	clock_handler(ENTRY);
	return 0;
}
/*
 * The expiry of this thread's local APIC timer while it sleeps in its halt,
 * due at its HLT exit: what the hrtimer program does once it has found the
 * vCPU's thread (the real one first reads the timer's APIC, vCPU and pid:
 * probe reads, not here). Its wake-up then ends into the thread's timer
 * wake-ups from their due time as well.
 */
static __noinline int call_timer_expires(void)
{
	__u32 idx;
	struct vcpu_thread *t = thread_of((__u32)bpf_get_current_pid_tgid(), &idx);

	if (t)
		vcpu_timer_expires(t, t->exit_ns);
	return 0;
}
LOOP_CALLBACK(cb_halt_due_cycle)
{
	call_exit(EXIT_HLT);
	call_self_switch(true);
	call_timer_expires();
	call_wakeup((__u32)bpf_get_current_pid_tgid());
	call_self_switch(false);
	call_inj_virq(HT_SYNTH_TIMER_VECTOR);
	call_entry(ENTRY);
	return 0;
}
LOOP_CALLBACK(cb_halt_cycle)
{
	call_exit(EXIT_HLT);
	call_self_switch(true);
	call_wakeup((__u32)bpf_get_current_pid_tgid());
	call_self_switch(false);
	call_inj_virq(HT_SYNTH_TIMER_VECTOR);
	call_entry(ENTRY);
	return 0;
}
/*
 * The same path woken by an interrupt that a thread of this process (no
 * vCPU thread) sends to vCPU 0, this thread: its acceptance before the
 * wake-up, and its vector's injection, which the entry delivers.
 */
#define BENCH_IRQ_VECTOR 0x41
static __noinline int call_accept_irq(void)
{
	__u64 sender = (bpf_get_current_pid_tgid() & ~0xffffffffull) | bench_plain_tid;

	return handle_apic_accept_irq(sender, 0, APIC_DM_FIXED, 0, BENCH_IRQ_VECTOR, 0);
}
LOOP_CALLBACK(cb_halt_irq_cycle)
{
	call_exit(EXIT_HLT);
	call_self_switch(true);
	call_accept_irq();
	call_wakeup((__u32)bpf_get_current_pid_tgid());
	call_self_switch(false);
	call_inj_virq(BENCH_IRQ_VECTOR);
	call_entry(ENTRY);
	return 0;
}
LOOP_CALLBACK(cb_empty) { empty_handler(EXIT_OTHER); return 0; }
LOOP_CALLBACK(cb_exit_nomatch) { call_exit(EXIT_OTHER); return 0; }
LOOP_CALLBACK(cb_entry_nomatch) { call_entry(ENTRY); return 0; }
LOOP_CALLBACK(cb_fused)
{
	call_exit(EXIT_HC);
	call_hypercall(HCALL);
	call_entry(ENTRY);
	return 0;
}
LOOP_CALLBACK(cb_hash_exit_nomatch) { call_hash_exit(EXIT_OTHER); return 0; }
LOOP_CALLBACK(cb_hash_entry_nomatch) { call_hash_entry(ENTRY); return 0; }
LOOP_CALLBACK(cb_hash_fused)
{
	call_hash_exit(EXIT_HC);
	call_hash_hypercall(HCALL);
	call_hash_entry(ENTRY);
	return 0;
}

LOOP_CALLBACK(cb_anchor_exit_nomatch) { call_anchor_exit(EXIT_OTHER); return 0; }
LOOP_CALLBACK(cb_anchor_entry_nomatch) { call_anchor_entry(ENTRY); return 0; }
LOOP_CALLBACK(cb_anchor_hypercall)
{
	call_anchor_exit(EXIT_HC);
	call_anchor_hypercall(HCALL);
	call_anchor_entry(ENTRY);
	return 0;
}

/* Task-local storage, where every state lived before the CPU slots: for the part below. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct vcpu_state);
} bench_task_states SEC(".maps");

static __always_inline void *task_state(struct task_struct *task, __u64 create)
{
	return bpf_task_storage_get(&bench_task_states, task, 0, create);
}

/* The record a fused hypercall copies out of its thread's state. */
struct ht_record part_record;

LOOP_CALLBACK(cb_part_clock3)
{
	bpf_ktime_get_ns();
	bpf_ktime_get_ns();
	bpf_ktime_get_ns();
	return 0;
}

/* The three state lookups a hypercall made before its state moved into the CPU slots (exit, hypercall, entry). */
LOOP_CALLBACK(cb_part_storage3)
{
	task_state(bpf_get_current_task_btf(), BPF_LOCAL_STORAGE_GET_F_CREATE);
	task_state(bpf_get_current_task_btf(), 0);
	task_state(bpf_get_current_task_btf(), 0);
	return 0;
}

LOOP_CALLBACK(cb_part_reserve_submit)
{
	void *ring = cpu_ring(bpf_get_smp_processor_id());
	struct ht_record *rec = ring ? bpf_ringbuf_reserve(ring, sizeof(*rec), 0) : NULL;

	if (rec)
		bpf_ringbuf_submit(rec, BPF_RB_NO_WAKEUP);
	return 0;
}

LOOP_CALLBACK(cb_part_reserve_copy_submit)
{
	void *ring = cpu_ring(bpf_get_smp_processor_id());
	struct ht_record *rec = ring ? bpf_ringbuf_reserve(ring, sizeof(*rec), 0) : NULL;

	if (rec) {
		__builtin_memcpy(rec, &part_record, sizeof(*rec));
		bpf_ringbuf_submit(rec, BPF_RB_NO_WAKEUP);
	}
	return 0;
}

LOOP_CALLBACK(cb_part_wakeup_test)
{
	part_record.flags = (__u8)wakeup_flags(bpf_get_smp_processor_id());
	return 0;
}

/* The wake-up test it replaced: the ring's fill level from bpf_ringbuf_query. */
LOOP_CALLBACK(cb_part_wakeup_query)
{
	void *ring = cpu_ring(bpf_get_smp_processor_id());

	if (ring) {
		__u64 avail = bpf_ringbuf_query(ring, 0 /* BPF_RB_AVAIL_DATA */);
		__u64 before = avail > HT_RINGBUF_SAMPLE_BYTES ? avail - HT_RINGBUF_SAMPLE_BYTES : 0;
		part_record.flags = avail >> wakeup_shift != before >> wakeup_shift;
	}
	return 0;
}

SEC("syscall")
int bench_run(struct bench_args *args)
{
	__u32 n = args->iterations;
	__u64 t0 = bpf_ktime_get_ns();

	switch (args->which) {
	case BENCH_EMPTY: bpf_loop(n, cb_empty, NULL, 0); break;
	case BENCH_EXIT_NOMATCH: bpf_loop(n, cb_exit_nomatch, NULL, 0); break;
	case BENCH_ENTRY_NOMATCH: bpf_loop(n, cb_entry_nomatch, NULL, 0); break;
	case BENCH_FUSED: bpf_loop(n, cb_fused, NULL, 0); break;
	case BENCH_HASH_EXIT_NOMATCH: bpf_loop(n, cb_hash_exit_nomatch, NULL, 0); break;
	case BENCH_HASH_ENTRY_NOMATCH: bpf_loop(n, cb_hash_entry_nomatch, NULL, 0); break;
	case BENCH_HASH_FUSED: bpf_loop(n, cb_hash_fused, NULL, 0); break;
	case BENCH_ANCHOR_EXIT_NOMATCH: bpf_loop(n, cb_anchor_exit_nomatch, NULL, 0); break;
	case BENCH_ANCHOR_ENTRY_NOMATCH: bpf_loop(n, cb_anchor_entry_nomatch, NULL, 0); break;
	case BENCH_ANCHOR_HYPERCALL: bpf_loop(n, cb_anchor_hypercall, NULL, 0); break;
	case BENCH_PART_CLOCK3: bpf_loop(n, cb_part_clock3, NULL, 0); break;
	case BENCH_PART_STORAGE3: bpf_loop(n, cb_part_storage3, NULL, 0); break;
	case BENCH_PART_RESERVE_SUBMIT: bpf_loop(n, cb_part_reserve_submit, NULL, 0); break;
	case BENCH_PART_RESERVE_COPY_SUBMIT: bpf_loop(n, cb_part_reserve_copy_submit, NULL, 0); break;
	case BENCH_PART_WAKEUP_TEST: bpf_loop(n, cb_part_wakeup_test, NULL, 0); break;
	case BENCH_PART_WAKEUP_QUERY: bpf_loop(n, cb_part_wakeup_query, NULL, 0); break;
	case BENCH_SWITCH_OUT: bpf_loop(n, cb_sched_switch, NULL, 0); break;
	case BENCH_FLOOR_PAIR: bpf_loop(n, cb_floor_pair, NULL, 0); break;
	case BENCH_EXITS_PAIR: bpf_loop(n, cb_exits_pair, NULL, 0); break;
	case BENCH_SWITCH_VCPUS: bpf_loop(n, cb_switch_vcpus, NULL, 0); break;
	case BENCH_WAKEUP_PLAIN: bpf_loop(n, cb_wakeup_plain, NULL, 0); break;
	case BENCH_SWITCH_PAIR: bpf_loop(n, cb_switch_pair, NULL, 0); break;
	case BENCH_REGISTER_PAIR: return register_pair();
	case BENCH_FLOOR_HALT: bpf_loop(n, cb_floor_halt, NULL, 0); break;
	case BENCH_HALT_CYCLE: bpf_loop(n, cb_halt_cycle, NULL, 0); break;
	case BENCH_HALT_IRQ_CYCLE: bpf_loop(n, cb_halt_irq_cycle, NULL, 0); break;
	case BENCH_HALT_DUE_CYCLE: bpf_loop(n, cb_halt_due_cycle, NULL, 0); break;
	default: return 1;
	}
	bench_elapsed_ns = bpf_ktime_get_ns() - t0;
	return 0;
}

/*
 * What a tracepoint program's return value costs the kernel: 0 drops the
 * event for perf, 1 passes it on (every program of hypertrace.bpf.c returns
 * 1). Attached in turn to a tracepoint user space fires at will, getppid's
 * syscall entry; the difference is all in the kernel, after the program.
 */
SEC("tp/syscalls/sys_enter_getppid")
int tp_returns_0(void *ctx)
{
	(void)ctx;
	return 0;
}

SEC("tp/syscalls/sys_enter_getppid")
int tp_returns_1(void *ctx)
{
	(void)ctx;
	return 1;
}
