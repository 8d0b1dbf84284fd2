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
	__u8 pad[36];
};

_Static_assert(sizeof(struct vcpu_state) == 128, "a CPU's slot must fill whole cache lines");

#endif /* HYPERTRACE_VCPU_STATE_H */
