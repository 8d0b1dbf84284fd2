// SPDX-License-Identifier: GPL-2.0
/*
 * The BPF object `hypertrace-bpf record` loads: its license and its programs,
 * the entry points into the handlers. The layers below, each a header that
 * includes the one under it: maps.bpf.h (filters, maps, globals),
 * helpers.bpf.h (what every handler uses), exit_series.bpf.h,
 * vcpu_account.bpf.h, exit_causes.bpf.h, boot.bpf.h and exits.bpf.h
 * (record --exits: the series, the vCPU account, the causes, record
 * --boot's records, the handlers), vcpu_halts.bpf.h and vcpu_irqs.bpf.h
 * (the halts, the interrupts, the entry's work off the exit path),
 * fuse.bpf.h (the fusion state machine).
 *
 * The tp/ and tp_btf/ programs are what `hypertrace-bpf record` attaches.
 * The syscall programs feed the very same handlers with synthetic
 * tracepoint structs through BPF_PROG_TEST_RUN; tests and benchmarks use
 * them, and `record` leaves them unloaded. The benchmarks' objects include
 * this file whole, so they measure exactly these maps and handlers.
 */
#include "helpers.bpf.h"
#include "exits.bpf.h"
#include "fuse.bpf.h"
#include "hypertrace/synthetic_events.h"
#include "hypertrace/synthetic_fill.h"

char LICENSE[] SEC("license") = "GPL";


/*
 * What the classic tracepoint programs (tp/, kvm_exit's) return. The kernel
 * hands a tracepoint event to perf only if the attached BPF programs return
 * nonzero (perf_trace_run_bpf_submit): 0 would blind every `perf stat`/`perf
 * record` user of kvm:kvm_exit on the host while we run. ftrace is
 * unaffected either way, and so is perf by the tp_btf/ programs, which the
 * kernel calls apart from perf.
 */
#define TP_PASS_EVENT 1

/*
 * One of the four kvm_exit programs is loaded (see prefilter_mask, and
 * choose_exit_program in user space): the raw SVM one where the kvm_amd
 * module's BTF lets CO-RE find its structs, else a classic one.
 */
SEC("tp/kvm/kvm_exit")
int on_kvm_exit_vmx(struct trace_event_raw_kvm_exit *ctx)
{
	handle_kvm_exit(ctx, EXIT_FROM_RECORD, HT_VMX_EXIT_REASON_MASK, HT_VMX_EXIT_REASON_VMCALL, 0);
	return TP_PASS_EVENT;
}

SEC("tp/kvm/kvm_exit")
int on_kvm_exit_svm(struct trace_event_raw_kvm_exit *ctx)
{
	handle_kvm_exit(ctx, EXIT_FROM_RECORD, HT_SVM_EXIT_CODE_MASK, HT_SVM_EXIT_CODE_VMMCALL, 0);
	return TP_PASS_EVENT;
}

SEC("tp/kvm/kvm_exit")
int on_kvm_exit(struct trace_event_raw_kvm_exit *ctx)
{
	handle_kvm_exit(ctx, EXIT_FROM_RECORD, prefilter_mask, prefilter_value, 0);
	return TP_PASS_EVENT;
}

/*
 * Every other program is a BTF-enabled raw tracepoint: it gets the
 * tracepoint's own arguments (KVM's: TP_PROTO in arch/x86/kvm/trace.h, the
 * same in 6.1, 6.12 and 6.18) and the kernel neither formats an event
 * record for it nor hands one to perf, which a classic tracepoint program
 * costs on every event (perf_trace_kvm_entry: a buffer, the fields, the
 * guest's RIP; then perf_tp_event). Their struct kvm_vcpu is vmlinux.h's.
 * 6.12's verifier takes a raw tracepoint's pointer argument as possibly
 * NULL (6.1's and 6.18's do not); KVM never passes one.
 *
 * kvm_exit's reason is not among its arguments (vcpu, isa): the raw
 * program reads it where the record's TP_fast_assign does, which CO-RE can
 * reach on SVM only (see exit_reason_of).
 */
SEC("tp_btf/kvm_exit")
int on_kvm_exit_svm_raw(unsigned long long *ctx)
{
	const struct kvm_vcpu *vcpu = (const void *)ctx[0];

	return vcpu ? handle_kvm_exit(vcpu, EXIT_FROM_SVM_VCPU, HT_SVM_EXIT_CODE_MASK, HT_SVM_EXIT_CODE_VMMCALL, 0) :
		      0;
}

/* ctx: (nr, a0, a1, a2, a3). */
SEC("tp_btf/kvm_hypercall")
int on_kvm_hypercall(unsigned long long *ctx)
{
	return handle_kvm_hypercall(ctx[0], ctx[1], ctx[2], ctx[3], ctx[4]);
}

/* ctx: (vcpu, ...). With --boot the vCPU's mode is read too (boot.bpf.h). */
SEC("tp_btf/kvm_entry")
int on_kvm_entry(unsigned long long *ctx)
{
	const struct kvm_vcpu *vcpu = (const void *)ctx[0];

	return vcpu ? handle_kvm_entry(vcpu, vcpu->vcpu_id, 0) : 0;
}

/* --exits: a vCPU thread goes back to the VMM (the vCPU account's vmm state). ctx: (reason, errno). Loaded only with --exits. */
SEC("tp_btf/kvm_userspace_exit")
int on_kvm_userspace_exit(unsigned long long *ctx)
{
	return handle_kvm_userspace_exit(ctx[0], 0);
}

/* --exits: the causes of exits (see note_exit_cause). Loaded only with --exits. ctx: (rw, port, size, count, data). */
SEC("tp_btf/kvm_pio")
int on_kvm_pio(unsigned long long *ctx)
{
	return handle_kvm_pio(ctx[0], ctx[1], ctx[2]);
}

/* ctx: (type, len, gpa, val). */
SEC("tp_btf/kvm_mmio")
int on_kvm_mmio(unsigned long long *ctx)
{
	return handle_kvm_mmio(ctx[0], ctx[1], ctx[2]);
}

/* ctx: (write, ecx, data, exception). */
SEC("tp_btf/kvm_msr")
int on_kvm_msr(unsigned long long *ctx)
{
	return handle_kvm_msr(ctx[0], ctx[1]);
}

/* ctx: (function, index, rax, rbx, rcx, rdx, found, used_max_basic). */
SEC("tp_btf/kvm_cpuid")
int on_kvm_cpuid(unsigned long long *ctx)
{
	return handle_kvm_cpuid(ctx[0], ctx[1]);
}

/* The per-thread state's end of life (the exiting thread is current): see handle_thread_exit. */
SEC("tp_btf/sched_process_exit")
int on_thread_exit(unsigned long long *ctx)
{
	(void)ctx;
	return handle_thread_exit();
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

/*
 * --exits: an hrtimer expires; KVM's local APIC timer notes when it was due
 * (vcpu_timers.bpf.h). ctx: (timer, now). Loaded only with --exits. KVM's
 * callback is learned at run time (never where no BTF has struct
 * kvm_lapic); until then every expiry is passed over.
 */
SEC("tp_btf/hrtimer_expire_entry")
int on_hrtimer_expire_entry(unsigned long long *ctx)
{
	return handle_hrtimer_expire((struct hrtimer *)ctx[0]);
}

/* --exits: a vCPU thread woken starts waiting for a CPU. ctx: (p). Loaded only with --exits. */
SEC("tp_btf/sched_wakeup")
int on_sched_wakeup(unsigned long long *ctx)
{
	return handle_sched_wakeup(((struct task_struct *)ctx[0])->pid, 0);
}

/*
 * --exits: a vCPU's halt in KVM ended (vcpu_halts.bpf.h). ctx: (ns, waited,
 * valid). Loaded only with --exits.
 */
SEC("tp_btf/kvm_vcpu_wakeup")
int on_kvm_vcpu_wakeup(unsigned long long *ctx)
{
	return vcpu_halt_ended((__u32)bpf_get_current_pid_tgid(), ctx[0], (__u8)ctx[1], 0);
}

/*
 * --exits: KVM injects an interrupt into the guest of the vCPU thread that
 * runs here, at its next entry. ctx: (vector, ...): 6.1 has the vector
 * alone, later kernels add soft and reinjected. Loaded only with --exits.
 */
SEC("tp_btf/kvm_inj_virq")
int on_kvm_inj_virq(unsigned long long *ctx)
{
	return vcpu_vector_injected((__u32)bpf_get_current_pid_tgid(), (__u32)ctx[0]);
}

/*
 * --exits: a vCPU's local APIC accepted an interrupt (vcpu_irqs.bpf.h), on
 * the sender's CPU. ctx: (apicid, dm, tm, vec). Loaded only with --exits.
 */
SEC("tp_btf/kvm_apic_accept_irq")
int on_kvm_apic_accept_irq(unsigned long long *ctx)
{
	return handle_apic_accept_irq(bpf_get_current_pid_tgid(), (__u32)ctx[0], (__u16)ctx[1], (__u16)ctx[2], (__u8)ctx[3], 0);
}

/* --exits: KVM grew or shrank a halting vCPU's halt_poll_ns. ctx: (grow, vcpu_id, new, old). Loaded only with --exits. */
SEC("tp_btf/kvm_halt_poll_ns")
int on_kvm_halt_poll_ns(unsigned long long *ctx)
{
	return vcpu_halt_poll_changed((__u32)bpf_get_current_pid_tgid(), ctx[2], ctx[3]);
}

SEC("syscall")
int synthetic_kvm_exit_vmx(struct trace_event_raw_kvm_exit *ctx)
{
	return handle_kvm_exit(ctx, EXIT_FROM_RECORD, HT_VMX_EXIT_REASON_MASK, HT_VMX_EXIT_REASON_VMCALL, 0);
}

SEC("syscall")
int synthetic_kvm_exit_svm(struct trace_event_raw_kvm_exit *ctx)
{
	return handle_kvm_exit(ctx, EXIT_FROM_RECORD, HT_SVM_EXIT_CODE_MASK, HT_SVM_EXIT_CODE_VMMCALL, 0);
}

SEC("syscall")
int synthetic_kvm_exit(struct trace_event_raw_kvm_exit *ctx)
{
	return handle_kvm_exit(ctx, EXIT_FROM_RECORD, prefilter_mask, prefilter_value, 0);
}

SEC("syscall")
int synthetic_kvm_hypercall(struct trace_event_raw_kvm_hypercall *ctx)
{
	return handle_kvm_hypercall(ctx->nr, ctx->a0, ctx->a1, ctx->a2, ctx->a3);
}

SEC("syscall")
int synthetic_kvm_entry(struct trace_event_raw_kvm_entry *ctx)
{
	return handle_kvm_entry(NULL, ctx->vcpu_id, 0);
}

/*
 * Synthetic events at a given time, for the exits' tests: the real handlers
 * with the caller's clock, so a time in the host is exactly what the test
 * says. The event is laid out in the kernel's format after the time.
 */
/* The event, copied out of the context: a program may not read through a pointer moved into its context. */
__u8 synthetic_event[256] = {};

SEC("syscall")
int synthetic_kvm_exit_at(struct ht_synth_timed_event *args)
{
	__builtin_memcpy(synthetic_event, args->event, sizeof(synthetic_event));
	return handle_kvm_exit(synthetic_event, EXIT_FROM_RECORD, prefilter_mask, prefilter_value, args->now_ns);
}

SEC("syscall")
int synthetic_kvm_entry_at(struct ht_synth_timed_event *args)
{
	__builtin_memcpy(synthetic_event, args->event, sizeof(synthetic_event));
	return handle_kvm_entry(NULL, ((struct trace_event_raw_kvm_entry *)synthetic_event)->vcpu_id, args->now_ns);
}

/* The event's first four bytes are the KVM_EXIT_* reason. */
SEC("syscall")
int synthetic_kvm_userspace_exit_at(struct ht_synth_timed_event *args)
{
	__u32 reason;

	__builtin_memcpy(&reason, args->event, sizeof(reason));
	return handle_kvm_userspace_exit(reason, args->now_ns);
}

/* The cause tracepoints with the event as ctx, laid out as the kernel's record of it. */
SEC("syscall")
int synthetic_kvm_pio(struct trace_event_raw_kvm_pio *ctx)
{
	return handle_kvm_pio(ctx->rw, ctx->port, ctx->size);
}

SEC("syscall")
int synthetic_kvm_mmio(struct trace_event_raw_kvm_mmio *ctx)
{
	return handle_kvm_mmio(ctx->type, ctx->len, ctx->gpa);
}

SEC("syscall")
int synthetic_kvm_msr(struct trace_event_raw_kvm_msr *ctx)
{
	return handle_kvm_msr(ctx->write, ctx->ecx);
}

SEC("syscall")
int synthetic_kvm_cpuid(struct trace_event_raw_kvm_cpuid *ctx)
{
	return handle_kvm_cpuid(ctx->function, ctx->index);
}

SEC("syscall")
int synthetic_sched_switch(struct ht_synth_switch *a)
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

SEC("syscall")
int synthetic_sched_wakeup(struct ht_synth_wakeup *a)
{
	return handle_sched_wakeup(a->tid, a->now_ns);
}

/* A made-up vCPU thread's local APIC timer, due at now_ns, expires (vcpu_timers.bpf.h). */
SEC("syscall")
int synthetic_timer_expires(struct ht_synth_wakeup *a)
{
	__u32 idx;
	struct vcpu_thread *t = thread_of(a->tid, &idx);

	if (t)
		vcpu_timer_expires(t, a->now_ns);
	return 0;
}

SEC("syscall")
int synthetic_kvm_inj_virq(struct ht_synth_inj_virq *a)
{
	return vcpu_vector_injected(a->tid, a->vector);
}

/* An interrupt accepted for a made-up vCPU, as sender (a thread of its VM process, or not) sends it. */
SEC("syscall")
int synthetic_kvm_apic_accept_irq(struct ht_synth_accept_irq *a)
{
	return handle_apic_accept_irq((__u64)a->sender_tgid << 32 | a->sender_tid, a->apicid, a->dm, a->tm, a->vector,
				 a->now_ns);
}

/* A halt of a made-up vCPU thread: its kvm_halt_poll_ns (if it changed), then its kvm_vcpu_wakeup. */
SEC("syscall")
int synthetic_kvm_halt(struct ht_synth_halt *a)
{
	if (a->poll_changed)
		vcpu_halt_poll_changed(a->tid, a->poll_new, a->poll_old);
	return vcpu_halt_ended(a->tid, a->ns, a->waited, a->now_ns);
}

/* A vCPU thread as kvm_entry first registers one, for the waiting tests' made-up threads. */
SEC("syscall")
int synthetic_vcpu_register(struct ht_synth_register *a)
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
