/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the handlers of --exits (exit_series.bpf.h up to exits.bpf.h) and
 * fuse.bpf.h share: counters, rings and their wake-ups, log2 slots, the
 * CPU's slot, the VM process filter, and the "create if absent, then look
 * up" of a hash map (as libbpf-tools' bits.bpf.h and maps.bpf.h are for its
 * tools). Above maps.bpf.h, below exit_series.bpf.h.
 */
#ifndef HYPERTRACE_HELPERS_BPF_H
#define HYPERTRACE_HELPERS_BPF_H

#include "maps.bpf.h"

/* This CPU's ring; NULL only if user space did not put one in. */
static __always_inline void *cpu_ring(__u32 cpu)
{
	__u32 i = cpu & ring_mask;

	return bpf_map_lookup_elem(&rings, &i);
}

static __always_inline void count(enum ht_counter which)
{
	__u32 key = which;
	__u64 *v = bpf_map_lookup_elem(&counters, &key);

	if (v)
		*v += 1;
}

/*
 * The value of key in map, created from init if absent; NULL if the map is
 * full (the caller counts what it loses). Two CPUs creating the same key at
 * once both find the one that was created first.
 */
static __always_inline void *lookup_or_try_init(void *map, const void *key, const void *init)
{
	bpf_map_update_elem(map, key, init, BPF_NOEXIST);
	return bpf_map_lookup_elem(map, key);
}

/*
 * Wake the consumer each time the records emitted into a ring cross a
 * multiple of 1 << wakeup_shift bytes (a shift, not a division: this runs for
 * every record). A wake-up (irq_work) costs far more than a record, so
 * neither "every record" (the kernel's default while the consumer keeps up)
 * nor "every record above a threshold" will do. A count of our own, not
 * bpf_ringbuf_query: no helper call (10 ns of a ~250 ns hypercall). CPUs
 * sharing a ring may race on its count; a lost increment only delays a
 * wake-up, and the consumer's poll timeout bounds that.
 */
static __always_inline __u64 wakeup_flags_of(__u64 *emitted)
{
	if (!wakeup_shift)
		return 0; /* the kernel's adaptive policy (tests) */
	__u64 before = *emitted, after = before + HT_RINGBUF_SAMPLE_BYTES;
	*emitted = after;
	return after >> wakeup_shift != before >> wakeup_shift ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

static __always_inline __u64 wakeup_flags(__u32 cpu)
{
	return wakeup_flags_of(&ring_emitted[cpu & ring_mask & (HT_MAX_RINGS - 1)][0]);
}

/* floor(log2(v)), 0 for 0: the slot of a latency in struct ht_agg_hist. */
static __always_inline __u32 log2_slot(__u64 v)
{
	__u32 r = 0, shift;

	shift = (v > 0xffffffffull) << 5; v >>= shift; r |= shift;
	shift = (v > 0xffff) << 4; v >>= shift; r |= shift;
	shift = (v > 0xff) << 3; v >>= shift; r |= shift;
	shift = (v > 0xf) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r;
}

/*
 * log2_slot as an index the verifier can bound, into a histogram of nslots
 * slots (a constant: the test below folds away). A power of two is masked,
 * anything else clamped to its last slot. Without the barrier clang folds
 * the mask into the last OR of log2_slot (r | ((v >> 1) & 63)), and the 6.1
 * verifier, which loses the bounds of r through those ORs, then rejects the
 * array access ("math between map_value pointer and register with
 * unbounded min value"): the bound must come last.
 */
static __always_inline __u32 bounded_log2_slot(__u64 v, const __u32 nslots)
{
	__u32 slot = log2_slot(v);

	barrier_var(slot);
	if ((nslots & (nslots - 1)) == 0)
		return slot & (nslots - 1);
	return slot < nslots - 1 ? slot : nslots - 1;
}

/* The slot of the CPU the program runs on. */
static __always_inline struct vcpu_state *cpu_slot(__u32 cpu)
{
	return &cpu_states[cpu & (HT_MAX_CPUS - 1)];
}

/*
 * With a VM process filter: is tgid traced? If not, it is a candidate for
 * user space to look at. Added only if absent: an update of an LRU map
 * takes a free node first, which can evict another candidate even when the
 * key is there already.
 */
static __always_inline bool tgid_traced(__u32 tgid)
{
	__u8 fresh = 0;

	if (bpf_map_lookup_elem(&traced_tgids, &tgid))
		return true;
	if (!bpf_map_lookup_elem(&vm_candidates, &tgid))
		bpf_map_update_elem(&vm_candidates, &tgid, &fresh, BPF_NOEXIST);
	return false;
}

/*
 * A record's place in CPU cpu's ring (this CPU's), zeroed, for the caller
 * to fill and submit; NULL if the ring is full (then counted in lost).
 */
static __always_inline void *reserve_record(__u32 cpu, enum ht_counter lost)
{
	void *ring = cpu_ring(cpu);
	void *r = ring ? bpf_ringbuf_reserve(ring, HT_RECORD_SIZE, 0) : NULL;

	if (!r) {
		count(lost);
		return NULL;
	}
	__builtin_memset(r, 0, HT_RECORD_SIZE);
	return r;
}

/*
 * A record about a vCPU thread of VM process pid, vCPU vcpu, that is no
 * hypercall (--vcpu-sched's switches, --wakeups' wake-ups): reserved in this
 * CPU's ring (*cpu), zeroed, for the caller to fill and submit with
 * wakeup_flags(*cpu); NULL if -p/--vm or --vcpu leave it out, or if the
 * ring is full (then counted in lost).
 */
static __always_inline void *reserve_vcpu_record(__u32 pid, __u32 vcpu, enum ht_counter lost, __u32 *cpu)
{
	if (filter_tgid_on && !tgid_traced(pid))
		return NULL;
	if (filter_vcpu_on && vcpu != filter_vcpu)
		return NULL;
	*cpu = bpf_get_smp_processor_id();
	return reserve_record(*cpu, lost);
}

/*
 * Where kvm_exit's handlers read an exit: a constant of each program, so
 * each is built for one source.
 * - EXIT_FROM_RECORD: the classic tracepoint's record, which KVM fills from
 *   the vendor's exit info (and the synthetic events, laid out the same).
 * - EXIT_FROM_SVM_VCPU: KVM's struct kvm_vcpu itself, the raw (tp_btf)
 *   program's argument on SVM: the exit code is in the VMCB's control area
 *   (where svm_get_exit_info reads it for the record), the guest's RIP in
 *   vcpu->arch.regs (svm_vcpu_run copies it from the VMCB before
 *   trace_kvm_exit). VMX reads the exit's RIP from the VMCS only on demand
 *   (kvm_rip_read), which a BPF program cannot do: VMX stays classic.
 * The handlers read the reason first, the rest only where they use it.
 */
enum exit_source { EXIT_FROM_RECORD, EXIT_FROM_SVM_VCPU };

static __always_inline __u32 exit_reason_of(const void *src, enum exit_source from)
{
	if (from == EXIT_FROM_RECORD)
		return ((const struct trace_event_raw_kvm_exit *)src)->exit_reason;
	/* Beyond struct kvm_vcpu, where the verifier lets a program load directly: read. */
	return BPF_CORE_READ((const struct vcpu_svm *)src, vmcb, control.exit_code);
}

static __always_inline __u32 exit_isa_of(const void *src, enum exit_source from)
{
	return from == EXIT_FROM_RECORD ? ((const struct trace_event_raw_kvm_exit *)src)->isa : HT_ISA_SVM;
}

/* The exit's vCPU id; 0 with HT_REC_F_NO_EXIT_VCPU_ID in *flags where the record has none (before ~5.4). */
static __always_inline __u32 exit_vcpu_of(const void *src, enum exit_source from, __u8 *flags)
{
	const struct trace_event_raw_kvm_exit *rec = src;

	if (from == EXIT_FROM_SVM_VCPU)
		return ((const struct kvm_vcpu *)src)->vcpu_id;
	if (bpf_core_field_exists(rec->vcpu_id))
		return rec->vcpu_id;
	*flags |= HT_REC_F_NO_EXIT_VCPU_ID;
	return 0;
}

static __always_inline __u64 exit_guest_rip_of(const void *src, enum exit_source from)
{
	if (from == EXIT_FROM_RECORD)
		return ((const struct trace_event_raw_kvm_exit *)src)->guest_rip;
	return ((const struct kvm_vcpu *)src)->arch.regs[VCPU_REGS_RIP];
}

#endif /* HYPERTRACE_HELPERS_BPF_H */
