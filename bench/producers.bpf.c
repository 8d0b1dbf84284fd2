// SPDX-License-Identifier: GPL-2.0
/*
 * Many producers into one ring buffer (make bench, item 2b). Each producer is
 * a bpf_loop that emits fused records as handle_kvm_entry does (reserve,
 * 80-byte copy out of a state, submit with the wake-up test), timed inside the
 * program. User space runs it on one CPU, then on both at once, against:
 *  - one ring every CPU shares (`shared_ring`);
 *  - a ring per CPU, as record loads them (`rings` of maps.bpf.h, cpu_ring() of helpers.bpf.h);
 *  - the loop alone (no ring), subtracted to get the ring's own cost;
 *  - the armed counts a hypercall updates, the other state every CPU shares.
 */
#include "hypertrace.bpf.c" /* the production object: maps, handlers, programs */

/* One ring shared by every CPU, as record loaded it before rings per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 << 20);
} shared_ring SEC(".maps");
__u64 shared_emitted;

enum producer_case { PRODUCE_LOOP_ONLY = 0, PRODUCE_SHARED_RING, PRODUCE_RING_PER_CPU, PRODUCE_ARM_SLOT };

struct producer_args {
	__u32 which;
	__u32 iterations;
	__u32 slot; /* which producer: where its time goes */
};

/* Each producer's start and end: user space keeps only runs where both overlapped. */
__u64 producer_start_ns[2], producer_end_ns[2];
/* A state to copy the record out of, as handle_kvm_entry copies from task storage. */
struct ht_record producer_state[2];

static __always_inline void emit(void *ring, __u64 *emitted, struct ht_record *st)
{
	struct ht_record *rec = bpf_ringbuf_reserve(ring, sizeof(*rec), 0);

	if (!rec) {
		count(HT_CNT_RINGBUF_DROPS);
		return;
	}
	__builtin_memcpy(rec, st, sizeof(*rec));
	rec->hcall_to_entry_ns = 1;
	rec->entry_cpu = bpf_get_smp_processor_id();
	bpf_ringbuf_submit(rec, wakeup_flags_of(emitted));
}

/* bpf_loop's context must be on the stack: it holds the producer's slot. */
static long produce_loop_only(__u32 i __attribute__((unused)), __u32 *slot)
{
	asm volatile("" ::: "memory");
	return slot == 0;
}

static long produce_shared(__u32 i __attribute__((unused)), __u32 *slot)
{
	emit(&shared_ring, &shared_emitted, &producer_state[*slot & 1]);
	return 0;
}

static long produce_per_cpu(__u32 i __attribute__((unused)), __u32 *slot)
{
	__u32 cpu = bpf_get_smp_processor_id();
	void *ring = cpu_ring(cpu);

	if (ring)
		emit(ring, &ring_emitted[cpu & ring_mask & (HT_MAX_RINGS - 1)][0], &producer_state[*slot & 1]);
	return 0;
}

/*
 * What a hypercall does to its CPU's state slot (arm, then disarm): plain
 * stores into a line only this CPU writes.
 */
static long produce_arm_slot(__u32 i __attribute__((unused)), __u32 *slot __attribute__((unused)))
{
	struct vcpu_state *st = cpu_slot(bpf_get_smp_processor_id());

	st->phase = PHASE_EXITED;
	barrier();
	disarm(st);
	return 0;
}

SEC("syscall")
int produce(struct producer_args *args)
{
	__u32 slot = args->slot & 1, n = args->iterations;
	__u64 t0 = bpf_ktime_get_ns();

	switch (args->which) {
	case PRODUCE_LOOP_ONLY: bpf_loop(n, produce_loop_only, &slot, 0); break;
	case PRODUCE_SHARED_RING: bpf_loop(n, produce_shared, &slot, 0); break;
	case PRODUCE_RING_PER_CPU: bpf_loop(n, produce_per_cpu, &slot, 0); break;
	case PRODUCE_ARM_SLOT: bpf_loop(n, produce_arm_slot, &slot, 0); break;
	default: return 1;
	}
	producer_start_ns[args->slot & 1] = t0;
	producer_end_ns[args->slot & 1] = bpf_ktime_get_ns();
	return 0;
}

/*
 * For the drain's merge cost (bench_producers --merge): fills ring `ring` with
 * `count` records whose times are first, first + stride, ... so that records
 * of several rings interleave in time.
 */
struct fill_ring_args {
	__u32 ring;
	__u32 count;
	__u64 first;
	__u64 stride;
};

static long fill_ring_one(__u32 i, struct fill_ring_args *a)
{
	__u32 idx = a->ring;
	void *ring = bpf_map_lookup_elem(&rings, &idx);
	struct ht_record *rec = ring ? bpf_ringbuf_reserve(ring, sizeof(*rec), 0) : NULL;

	if (!rec)
		return 1;
	__builtin_memset(rec, 0, sizeof(*rec));
	rec->exit_ns = a->first + i * a->stride;
	bpf_ringbuf_submit(rec, BPF_RB_NO_WAKEUP);
	return 0;
}

SEC("syscall")
int fill_ring(struct fill_ring_args *args)
{
	struct fill_ring_args a = *args;

	bpf_loop(a.count, fill_ring_one, &a, 0);
	return 0;
}
