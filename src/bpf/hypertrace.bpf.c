// SPDX-License-Identifier: GPL-2.0
/*
 * Entry points into the fusion state machine (fuse.bpf.h).
 *
 * The tp/ programs are what `hypertrace-bpf record` attaches. The syscall
 * programs feed the very same handlers with synthetic tracepoint structs
 * through BPF_PROG_TEST_RUN; tests and benchmarks use them, and `record`
 * leaves them unloaded.
 */
#include "fuse.bpf.h"

/*
 * What every tracepoint program returns. The kernel hands a tracepoint event
 * to perf only if the attached BPF programs return nonzero
 * (perf_trace_run_bpf_submit): 0 would blind every `perf stat`/`perf record`
 * user of kvm:kvm_exit, sched:sched_switch or sched:sched_process_exit on the
 * host while we run.
 * ftrace is unaffected either way.
 */
#define TP_PASS_EVENT 1

/* One of the three kvm_exit programs is loaded: see prefilter_mask in fuse.bpf.h. */
SEC("tp/kvm/kvm_exit")
int on_kvm_exit_vmx(struct trace_event_raw_kvm_exit *ctx)
{
	handle_kvm_exit(ctx, HT_VMX_EXIT_REASON_MASK, HT_VMX_EXIT_REASON_VMCALL);
	return TP_PASS_EVENT;
}

SEC("tp/kvm/kvm_exit")
int on_kvm_exit_svm(struct trace_event_raw_kvm_exit *ctx)
{
	handle_kvm_exit(ctx, HT_SVM_EXIT_CODE_MASK, HT_SVM_EXIT_CODE_VMMCALL);
	return TP_PASS_EVENT;
}

SEC("tp/kvm/kvm_exit")
int on_kvm_exit(struct trace_event_raw_kvm_exit *ctx)
{
	handle_kvm_exit(ctx, prefilter_mask, prefilter_value);
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
	handle_kvm_entry(ctx);
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

/* Armed threads leaving their CPU: see armed_on_cpu. */
SEC("tp/sched/sched_switch")
int on_switch_out(void *ctx)
{
	(void)ctx;
	handle_switch_out();
	return TP_PASS_EVENT;
}

SEC("syscall")
int synthetic_kvm_exit_vmx(struct trace_event_raw_kvm_exit *ctx)
{
	return handle_kvm_exit(ctx, HT_VMX_EXIT_REASON_MASK, HT_VMX_EXIT_REASON_VMCALL);
}

SEC("syscall")
int synthetic_kvm_exit_svm(struct trace_event_raw_kvm_exit *ctx)
{
	return handle_kvm_exit(ctx, HT_SVM_EXIT_CODE_MASK, HT_SVM_EXIT_CODE_VMMCALL);
}

SEC("syscall")
int synthetic_kvm_exit(struct trace_event_raw_kvm_exit *ctx)
{
	return handle_kvm_exit(ctx, prefilter_mask, prefilter_value);
}

SEC("syscall")
int synthetic_kvm_hypercall(struct trace_event_raw_kvm_hypercall *ctx)
{
	return handle_kvm_hypercall(ctx);
}

SEC("syscall")
int synthetic_kvm_entry(struct trace_event_raw_kvm_entry *ctx)
{
	return handle_kvm_entry(ctx);
}

/*
 * Synthetic producer for drain tests and benchmarks: submits `count` fused
 * records through the same (this CPU's) ring buffer, wake-up policy and drop counter as
 * handle_kvm_entry, with a1 = seq, seq + 1, ... so the consumer can check order
 * and loss.
 */
struct synthetic_fill_args {
	__u64 seq;
	__u32 count;
};

static long fill_one(__u32 i, struct synthetic_fill_args *args)
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
int synthetic_fill(struct synthetic_fill_args *args)
{
	struct synthetic_fill_args a = *args;

	bpf_loop(a.count, fill_one, &a, 0);
	return 0;
}
