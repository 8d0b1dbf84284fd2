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

SEC("tp/kvm/kvm_exit")
int on_kvm_exit(struct trace_event_raw_kvm_exit *ctx)
{
	return handle_kvm_exit(ctx);
}

SEC("tp/kvm/kvm_hypercall")
int on_kvm_hypercall(struct trace_event_raw_kvm_hypercall *ctx)
{
	return handle_kvm_hypercall(ctx);
}

SEC("tp/kvm/kvm_entry")
int on_kvm_entry(struct trace_event_raw_kvm_entry *ctx)
{
	return handle_kvm_entry(ctx);
}

SEC("syscall")
int synthetic_kvm_exit(struct trace_event_raw_kvm_exit *ctx)
{
	return handle_kvm_exit(ctx);
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
