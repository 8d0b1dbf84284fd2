/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The fusion state machine: kvm_exit + kvm_hypercall + kvm_entry of one vCPU
 * thread become ONE struct ht_record in the ring buffer.
 *
 * Every handler is static __always_inline and takes the tracepoint's raw
 * struct, so the tracepoint programs and the synthetic-event programs used by
 * tests and benchmarks run exactly the same code against the same maps.
 * The maps, globals and filters they use, and the license, are the BPF
 * object's own: hypertrace.bpf.c defines them and then includes this file.
 *
 * State lives in BPF task-local storage, i.e. per vCPU *thread*: vCPUs of one
 * VM interleave on one physical CPU, and a vCPU thread may migrate between its
 * exit and its entry, so per-CPU state would fuse the wrong events. Storage is
 * freed with the thread, so it stays bounded as threads come and go.
 *
 * Hot path: kvm_exit and kvm_entry fire on every VM exit of the host. Their
 * non-matching path reads the event's exit_reason (exit) and one global
 * counter of armed threads; while no thread is armed it touches no map, and
 * otherwise it looks up its thread's state only if a thread armed on its CPU
 * or moved (armed_on_cpu).
 */
#ifndef HYPERTRACE_FUSE_BPF_H
#define HYPERTRACE_FUSE_BPF_H

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

static __always_inline __u32 ns_saturated(__u64 delta, __u8 *flags, __u8 flag)
{
	if (delta > 0xffffffffull) {
		*flags |= flag;
		return 0xffffffffu;
	}
	return (__u32)delta;
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
	return wakeup_flags_of(&ring_emitted[cpu & ring_mask & (HT_MAX_RINGS_BPF - 1)][0]);
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
 * log2_slot as an index the verifier can bound. Without the barrier clang
 * folds the mask into the last OR of log2_slot (r | ((v >> 1) & 63)), and the
 * 6.1 verifier, which loses the bounds of r through those ORs, then rejects
 * the array access ("math between map_value pointer and register with
 * unbounded min value"). The mask must come last.
 */
static __always_inline __u32 agg_slot(__u64 v)
{
	__u32 slot = log2_slot(v);

	barrier_var(slot);
	return slot & (HT_AGG_SLOTS - 1);
}

/* The position of a selected nr in filter_nr (0 if absent, which cannot happen once selected). */
static __always_inline __u32 nr_index(__u32 nr)
{
#pragma unroll
	for (__u32 i = 0; i < HT_MAX_SELECTED_NR; i++) {
		if (i >= filter_nr_count)
			break;
		if (filter_nr[i] == nr)
			return i;
	}
	return 0;
}

/* Aggregate-only mode: count the three latencies of one hypercall in its group's histograms. */
static __always_inline void aggregate(const struct ht_record *r, __u64 hcall_to_entry)
{
	static const struct ht_agg_hist zero;
	__u64 key = 0;

	if (aggregate_group_by == HT_AGG_BY_VCPU)
		key = (__u64)r->host_pid << 32 | r->vcpu_id;
	else if (aggregate_group_by == HT_AGG_BY_VM)
		key = (__u64)r->host_pid << 32;
	if (aggregate_by_nr)
		key |= (__u64)nr_index(r->nr) << HT_AGG_KEY_NR_SHIFT;
	struct ht_agg_hist *h = bpf_map_lookup_elem(&latency_hists, &key);
	if (!h) {
		bpf_map_update_elem(&latency_hists, &key, &zero, BPF_NOEXIST);
		h = bpf_map_lookup_elem(&latency_hists, &key);
		if (!h) {
			count(HT_CNT_AGG_GROUPS_FULL); /* out of groups: counted as lost, never silent */
			return;
		}
	}
	h->slots[HT_AGG_TOTAL][agg_slot(r->exit_to_hcall_ns + hcall_to_entry)]++;
	h->slots[HT_AGG_EXIT_HCALL][agg_slot(r->exit_to_hcall_ns)]++;
	h->slots[HT_AGG_HCALL_ENTRY][agg_slot(hcall_to_entry)]++;
}

static __always_inline struct vcpu_state *task_state(struct task_struct *task, __u64 create)
{
	return bpf_task_storage_get(&vcpu_states, task, 0, create);
}

static __always_inline struct vcpu_state *current_state(__u64 create)
{
	return task_state(bpf_get_current_task_btf(), create);
}

/*
 * The calling thread's state if it is armed, else NULL. While no thread at all
 * is armed this is one load of a global: the hot path touches no map.
 */
static __always_inline struct vcpu_state *armed_state(void)
{
	struct vcpu_state *st;

	if (!armed_threads)
		return NULL;
	st = current_state(0);
	return st && st->phase != PHASE_IDLE ? st : NULL;
}

static __always_inline void slot_add(__u32 slot, __s64 v)
{
	__sync_fetch_and_add(&armed_on_cpu[slot & (2 * HT_ARMED_SLOTS - 1)][0], v);
}

static __always_inline void disarm(struct vcpu_state *st)
{
	st->phase = PHASE_IDLE;
	__sync_fetch_and_add(&armed_threads, -1);
	slot_add(st->arm_slot, -1);
}

/* Whether a thread armed on this CPU, or one that moved, may be the calling thread. */
static __always_inline bool armed_here_or_moved(void)
{
	return armed_on_cpu[bpf_get_smp_processor_id() & (HT_ARMED_SLOTS - 1)][0] ||
	       armed_on_cpu[HT_ARMED_MOVED][0];
}

/*
 * The calling thread's state if it is armed, else NULL, for kvm_exit and
 * kvm_entry: the state is looked up only if the thread may be armed by
 * armed_on_cpu.
 */
static __always_inline struct vcpu_state *armed_state_at(bool entry)
{
	if (!armed_threads)
		return NULL;
	if ((!entry || switch_tracked) && !armed_here_or_moved())
		return NULL;
	struct vcpu_state *st = current_state(0);
	return st && st->phase != PHASE_IDLE ? st : NULL;
}

/* The hot path's test: exit_reason alone, without loading isa. */
static __always_inline bool may_be_hypercall_exit(__u32 reason, __u32 mask, __u32 value)
{
	return (reason & mask) == value;
}

static __always_inline bool is_hypercall_exit(__u32 isa, __u32 reason)
{
	if (filter_exit_reason_on)
		return (isa == HT_ISA_VMX ? (reason & HT_VMX_EXIT_REASON_MASK) : reason) ==
		       filter_exit_reason;
	if (isa == HT_ISA_VMX)
		return (reason & HT_VMX_EXIT_REASON_MASK) == HT_VMX_EXIT_REASON_VMCALL;
	return reason == HT_SVM_EXIT_CODE_VMMCALL;
}

static __always_inline bool nr_selected(unsigned long nr)
{
	if (nr > 0xffffffffull)
		return false;
#pragma unroll
	for (__u32 i = 0; i < HT_MAX_SELECTED_NR; i++) {
		if (i >= filter_nr_count)
			break;
		if (filter_nr[i] == nr)
			return true;
	}
	return false;
}

/* mask/value: the pre-filter, constants in the VMX and SVM programs (see prefilter_mask). */
/*
 * Any exit but a hypercall's ends an open window: never fuse across it. Called
 * only when armed_on_cpu says the thread may be armed (see maybe_armed_at_exit).
 */
static __noinline int cut_armed_window(void)
{
	struct vcpu_state *st = current_state(0);

	if (st && st->phase != PHASE_IDLE) {
		if (st->phase == PHASE_HCALL)
			count(HT_CNT_SUPERSEDED);
		disarm(st);
	}
	return 0;
}

static __noinline int handle_hypercall_exit(struct trace_event_raw_kvm_exit *ctx, __u32 reason);

/* Whether the calling thread may be armed, at a kvm_exit: a few loads, no lookup (see armed_on_cpu). */
static __always_inline bool maybe_armed_at_exit(void)
{
	return armed_threads && armed_here_or_moved();
}

/*
 * The hot path is inline and small; the rest is in subprograms of its own.
 * So the program's entry saves no callee-saved registers (the x86 JIT saves
 * those a function uses), which on a CPU with expensive returns was most of
 * what a non-matching exit cost over an empty handler.
 */
static __always_inline int handle_kvm_exit(struct trace_event_raw_kvm_exit *ctx, __u32 mask,
					   __u32 value)
{
	__u32 reason = ctx->exit_reason;

	if (!may_be_hypercall_exit(reason, mask, value))
		return maybe_armed_at_exit() ? cut_armed_window() : 0;
	return handle_hypercall_exit(ctx, reason);
}

static __noinline int handle_hypercall_exit(struct trace_event_raw_kvm_exit *ctx, __u32 reason)
{
	struct vcpu_state *st;
	__u32 isa = ctx->isa;

	if (!is_hypercall_exit(isa, reason))
		return maybe_armed_at_exit() ? cut_armed_window() : 0;

	/* The ids from the task, which the state lookup needs anyway: one helper call fewer. */
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = task->tgid;
	if (filter_tgid && tgid != filter_tgid)
		return 0;

	__u8 flags = 0;
	__u32 vcpu = 0;
	if (bpf_core_field_exists(ctx->vcpu_id)) {
		vcpu = ctx->vcpu_id;
		if (filter_vcpu_on && vcpu != filter_vcpu)
			return 0;
	} else {
		flags |= HT_REC_F_NO_EXIT_VCPU_ID; /* filtered at kvm_entry instead */
	}

	st = task_state(task, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!st) {
		count(HT_CNT_STATE_ALLOC_FAIL);
		return 0;
	}
	/* A stale armed state (exit, exit, ... on old kernels) is overwritten, never fused. */
	__u32 cpu = bpf_get_smp_processor_id();
	if (st->phase == PHASE_IDLE) {
		__sync_fetch_and_add(&armed_threads, 1);
	} else {
		if (st->phase == PHASE_HCALL)
			count(HT_CNT_SUPERSEDED);
		slot_add(st->arm_slot, -1);
	}
	st->arm_slot = cpu & (HT_ARMED_SLOTS - 1);
	slot_add(st->arm_slot, 1);
	st->phase = PHASE_EXITED;
	st->rec.exit_ns = bpf_ktime_get_ns();
	st->rec.guest_rip = ctx->guest_rip;
	st->rec.exit_reason = reason;
	st->rec.isa = isa;
	st->rec.flags = flags;
	st->rec.vcpu_id = vcpu;
	st->rec.exit_cpu = cpu;
	st->rec.host_pid = tgid;
	st->rec.host_tid = task->pid;
	return 0;
}

static __always_inline int handle_kvm_hypercall(struct trace_event_raw_kvm_hypercall *ctx)
{
	struct vcpu_state *st = armed_state();

	if (!st || st->phase != PHASE_EXITED)
		return 0; /* no hypercall exit before it on this thread */
	/* Switched out since its exit: count it on the CPU it runs on now, until its entry. */
	if (st->arm_slot == HT_ARMED_MOVED) {
		slot_add(HT_ARMED_MOVED, -1);
		st->arm_slot = bpf_get_smp_processor_id() & (HT_ARMED_SLOTS - 1);
		slot_add(st->arm_slot, 1);
	}

	unsigned long nr = ctx->nr;
	if (!nr_selected(nr)) {
		count(HT_CNT_HCALL_UNSELECTED_NR);
		disarm(st);
		return 0;
	}
	__u64 now = bpf_ktime_get_ns();
	st->hcall_ns = now;
	st->rec.exit_to_hcall_ns =
		ns_saturated(now - st->rec.exit_ns, &st->rec.flags, HT_REC_F_EXIT_TO_HCALL_SATURATED);
	st->rec.nr = (__u32)nr;
	st->rec.a0 = ctx->a0;
	st->rec.a1 = ctx->a1;
	st->rec.a2 = ctx->a2;
	st->rec.a3 = ctx->a3;
	st->phase = PHASE_HCALL;
	return 0;
}

static __always_inline int handle_kvm_entry(struct trace_event_raw_kvm_entry *ctx)
{
	struct vcpu_state *st = armed_state_at(true);

	if (!st)
		return 0;
	if (st->phase != PHASE_HCALL) {
		disarm(st); /* hypercall exit without a kvm_hypercall event */
		return 0;
	}
	disarm(st);

	__u64 now = bpf_ktime_get_ns();
	__u8 flags = st->rec.flags;
	__u32 vcpu = st->rec.vcpu_id;
	if (flags & HT_REC_F_NO_EXIT_VCPU_ID) {
		vcpu = ctx->vcpu_id;
		if (filter_vcpu_on && vcpu != filter_vcpu)
			return 0;
	}

	if (aggregate_only) {
		st->rec.vcpu_id = vcpu;
		aggregate(&st->rec, now - st->hcall_ns);
		return 0;
	}
	__u32 cpu = bpf_get_smp_processor_id();
	void *ring = cpu_ring(cpu);
	struct ht_record *rec = ring ? bpf_ringbuf_reserve(ring, sizeof(*rec), 0) : NULL;
	if (!rec) {
		count(HT_CNT_RINGBUF_DROPS);
		return 0;
	}
	__builtin_memcpy(rec, &st->rec, sizeof(*rec));
	rec->hcall_to_entry_ns =
		ns_saturated(now - st->hcall_ns, &flags, HT_REC_F_HCALL_TO_ENTRY_SATURATED);
	rec->flags = flags;
	rec->vcpu_id = vcpu;
	rec->entry_cpu = cpu;

	bpf_ringbuf_submit(rec, wakeup_flags(cpu));
	return 0;
}

/*
 * A vCPU thread that exits while armed (a VM killed mid-hypercall) would leave
 * armed_threads one too high for good, and every exit on the host would pay a
 * storage lookup. Thread exit is rare; while nothing is armed this is one load.
 */
static __always_inline int handle_thread_exit(void)
{
	struct vcpu_state *st = armed_state();

	if (st)
		disarm(st);
	return 0;
}

/*
 * sched_switch, in the context of the thread being switched out: an armed
 * thread may run on another CPU next, so its count moves to HT_ARMED_MOVED
 * (see armed_on_cpu). While nothing is armed this is one load.
 */
static __always_inline int handle_switch_out(void)
{
	struct vcpu_state *st = armed_state();

	if (st && st->arm_slot != HT_ARMED_MOVED) {
		slot_add(st->arm_slot, -1);
		st->arm_slot = HT_ARMED_MOVED;
		slot_add(HT_ARMED_MOVED, 1);
	}
	return 0;
}

#endif /* HYPERTRACE_FUSE_BPF_H */
