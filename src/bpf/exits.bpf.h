/* SPDX-License-Identifier: GPL-2.0 */
/*
 * record --exits: every VM exit of the host, and how its vCPU threads wait
 * for a host CPU. Included by fuse.bpf.h, whose kvm_exit, kvm_entry,
 * sched_switch and thread-exit handlers call in here; the maps and the
 * exits_on switch are hypertrace.bpf.c's. With exits_on false (rodata) the
 * verifier removes every call of this file from the programs.
 *
 * Time in the host: kvm_exit notes the exit in its CPU's slot (cpu_states);
 * the next kvm_entry on that CPU is the same thread's unless the thread was
 * switched out in between, and then sched_switch has moved the open exit
 * into the thread's vcpu_threads entry, where kvm_entry finds it. So the
 * common pair costs two slot accesses, a clock read at each end, the
 * thread's ids at the entry and the update of the series' entry in its
 * CPU's own table (exit_cache: an array lookup, no helper call); nothing
 * goes through a ring buffer.
 *
 * Waiting: sched_switch and sched_wakeup test one bit per thread id
 * (vcpu_tid_bits) and touch vcpu_threads only for vCPU threads; for every
 * other thread a switch costs a few loads and one store into the CPU's own
 * slot (who runs there: kvm_entry compares it with its own thread, so an
 * open exit is never paired with another thread's entry).
 */
#ifndef HYPERTRACE_EXITS_BPF_H
#define HYPERTRACE_EXITS_BPF_H

/* The synthetic-event programs pass their own clock; the tracepoint programs pass 0 and read the real one. */
static __always_inline __u64 clock_ns(__u64 synthetic_now)
{
	return synthetic_now ? synthetic_now : bpf_ktime_get_ns();
}

static __always_inline bool tid_is_vcpu(__u32 tid)
{
	__u32 bit = tid & (HT_TID_BITS - 1);

	return (vcpu_tid_bits[bit >> 6] >> (bit & 63)) & 1;
}

static __always_inline void tid_mark_vcpu(__u32 tid, bool on)
{
	__u32 bit = tid & (HT_TID_BITS - 1);
	__u64 mask = 1ull << (bit & 63);

	if (on)
		__sync_fetch_and_or(&vcpu_tid_bits[bit >> 6], mask);
	else
		__sync_fetch_and_and(&vcpu_tid_bits[bit >> 6], ~mask);
}

/* The slot of a time in the host, bounded for the verifier (see agg_slot). */
static __always_inline __u32 exit_slot(__u64 ns)
{
	__u32 slot = log2_slot(ns);

	barrier_var(slot);
	return slot < HT_EXIT_SLOTS - 1 ? slot : HT_EXIT_SLOTS - 1;
}

static __noinline struct ht_exit_hist *new_exit_series(struct ht_exit_key *key)
{
	static const struct ht_exit_hist zero;

	bpf_map_update_elem(&exit_hists, key, &zero, BPF_NOEXIST);
	struct ht_exit_hist *h = bpf_map_lookup_elem(&exit_hists, key);
	if (!h)
		count(HT_CNT_EXIT_SERIES_FULL); /* lost, and counted */
	return h;
}

/* The series' entry in this CPU's exit_cache, taken if free; else its entry in exit_hists. NULL: lost (counted). */
static __always_inline struct ht_exit_hist *exit_hist_of(struct ht_exit_key *key, __u32 cpu)
{
	__u64 head = (__u64)key->pid | (__u64)key->vcpu << 32 | (__u64)key->isa << 48; /* the key's first 8 bytes */
	__u32 hash = key->reason * 0x9e3779b1u ^ (__u32)(head >> 16) * 0x85ebca77u ^ (__u32)head;
	__u32 base = cpu * HT_EXIT_CACHE_WAYS;

	hash ^= hash >> 15;
#pragma unroll
	for (__u32 i = 0; i < HT_EXIT_CACHE_PROBES; i++) {
		__u32 idx = base + ((hash + i) & (HT_EXIT_CACHE_WAYS - 1));
		struct exit_cache_entry *e = bpf_map_lookup_elem(&exit_cache, &idx);

		if (!e)
			break;
		if (e->used) {
			if (*(__u64 *)&e->key == head && e->key.reason == key->reason)
				return &e->h;
			continue;
		}
		e->key = *key;
		barrier(); /* the key before used: see exit_cache_entry */
		e->used = 1;
		return &e->h;
	}
	struct ht_exit_hist *h = bpf_map_lookup_elem(&exit_hists, key);
	return h ? h : new_exit_series(key);
}

/*
 * One exit of (tgid, vcpu, isa, reason) that began at exit_ns, counted on
 * this CPU unless a filter leaves it out. The clock is read only once the
 * series' histogram is found: the entry's own work before it is not the
 * exit's time, as the exit's after its clock read is not (see exit_begin).
 */
static __always_inline void count_exit(__u32 tgid, __u32 vcpu, __u32 isa, __u32 reason, __u64 exit_ns,
				       __u64 synthetic_now, __u32 cpu)
{
	if (filter_tgid_on && !tgid_traced(tgid))
		return;
	if (filter_vcpu_on && vcpu != filter_vcpu)
		return;
	struct ht_exit_key key = { .pid = tgid, .vcpu = vcpu, .isa = isa, .reason = reason };
	struct ht_exit_hist *h = exit_hist_of(&key, cpu);
	if (!h)
		return;
	__u64 ns = clock_ns(synthetic_now) - exit_ns;
	h->slots[exit_slot(ns)]++;
	if (!h->count || ns < h->min_ns)
		h->min_ns = ns;
	if (ns > h->max_ns)
		h->max_ns = ns;
	h->count++;
	h->total_ns += ns;
}

/*
 * kvm_exit: the running thread's exit is open from now on. The clock is
 * read last, so the time in the host starts where the program hands the
 * event back (as kvm_entry's count_exit reads it only once its work is
 * done): the programs' own cost is in neither end.
 */
static __always_inline void exit_begin(struct trace_event_raw_kvm_exit *ctx, struct vcpu_state *slot,
				       __u32 reason, __u64 synthetic_now)
{
	__u32 isa = ctx->isa;

	slot->exit_reason = isa == HT_ISA_VMX ? reason & HT_VMX_EXIT_REASON_MASK : reason;
	slot->exit_isa = isa;
	slot->exit_vcpu = bpf_core_field_exists(ctx->vcpu_id) ? ctx->vcpu_id : 0;
	slot->exit_open = 1;
	/* Until a switch on this CPU names who runs here (just after attach): ask, once. */
	if (!slot->owner)
		slot->owner = bpf_get_current_pid_tgid();
	slot->exit_ns = clock_ns(synthetic_now);
}

/* A new vcpu_threads entry for tid, marked in vcpu_tid_bits; NULL if the table is full. */
static __noinline struct vcpu_thread *vcpu_thread_register(__u32 tid, __u32 tgid, __u32 vcpu, __u32 running)
{
	struct vcpu_thread init = {
		.stat = { .pid = tgid, .tid = tid, .vcpu = vcpu },
		.running = running,
	};

	/* Preallocated elements: safe under the runqueue lock (see moved_states). */
	if (bpf_map_update_elem(&vcpu_threads, &tid, &init, BPF_NOEXIST) && !bpf_map_lookup_elem(&vcpu_threads, &tid))
		return NULL;
	tid_mark_vcpu(tid, true);
	return bpf_map_lookup_elem(&vcpu_threads, &tid);
}

/*
 * kvm_entry whose CPU slot holds no open exit of the caller (me: its
 * tgid << 32 | tid): the thread was switched out since its exit (the exit
 * is in its vcpu_threads entry), or its exit came before the programs were
 * attached. Also where a vCPU thread that was not switched out yet gets its
 * vcpu_threads entry, and where a slot whose owner is wrong is put right.
 */
static __noinline int exit_end_moved(struct trace_event_raw_kvm_entry *ctx, struct vcpu_state *slot,
				     __u64 synthetic_now, __u64 me, __u32 cpu)
{
	__u32 tid = (__u32)me, tgid = me >> 32;

	if (slot->owner != me) {
		/*
		 * A switch went unseen (seen once in tests, while other tracers
		 * attached and detached sched_switch programs): an open exit here
		 * may be another thread's. Lost, counted, never paired.
		 */
		if (slot->exit_open) {
			slot->exit_open = 0;
			count(HT_CNT_EXIT_NO_THREAD);
		}
		slot->owner = me;
	}
	struct vcpu_thread *t = tid_is_vcpu(tid) ? bpf_map_lookup_elem(&vcpu_threads, &tid) : NULL;

	if (!t) {
		vcpu_thread_register(tid, tgid, ctx->vcpu_id, 1);
		return 0;
	}
	if (t->exit_open) {
		t->exit_open = 0;
		count_exit(tgid, t->stat.vcpu, t->exit_isa, t->exit_reason, t->exit_ns, synthetic_now, cpu);
	}
	return 0;
}

/*
 * kvm_entry: the running thread's open exit ends here. The thread's ids
 * cost one helper call; the switches keep the slot's owner, so an open exit
 * of the slot is this thread's when the two agree (or no switch on this CPU
 * named anyone since attach).
 */
static __always_inline void exit_end(struct trace_event_raw_kvm_entry *ctx, struct vcpu_state *slot,
				     __u64 synthetic_now, __u32 cpu)
{
	__u64 me = bpf_get_current_pid_tgid();

	if (!slot->exit_open || (slot->owner != me && slot->owner)) {
		exit_end_moved(ctx, slot, synthetic_now, me, cpu);
		return;
	}
	slot->exit_open = 0;
	slot->owner = me;
	count_exit(me >> 32, slot->exit_vcpu, slot->exit_isa, slot->exit_reason, slot->exit_ns, synthetic_now, cpu);
}

/*
 * A sched_switch as the switch handlers take it, from the tracepoint or a
 * synthetic program. The names are filled only when the switch is recorded
 * (vcpu_sched_on and a vCPU thread on a side): reading them costs.
 */
struct switch_event {
	__u64 prev_ids, next_ids; /* tgid << 32 | tid */
	__u64 prev_state;         /* as the sched_switch event has it: 0 when preempted */
	__u64 now;                /* synthetic time; 0: read the clock */
	__u32 prev_involuntary;   /* prev is still runnable */
	__u32 pad;
	char prev_comm[16], next_comm[16];
};

/* A switch the vCPU threads' accounting looks at: an open exit leaves, or a vCPU thread is on a side. */
static __always_inline bool switch_has_vcpu(struct vcpu_state *slot, __u32 prev_tid, __u32 next_tid)
{
	return slot->exit_open || tid_is_vcpu(prev_tid) || tid_is_vcpu(next_tid);
}

/*
 * --vcpu-sched: thread t's switch (out: t is e's prev; in: t is e's next)
 * into the ring of this CPU, if -p/--vm and --vcpu select the thread's VM
 * and vCPU. Lost if the ring is full, and counted.
 */
static __noinline int emit_switch(struct vcpu_thread *t, __u32 kind, const struct switch_event *e, __u64 now)
{
	if (filter_tgid_on && !tgid_traced(t->stat.pid))
		return 0;
	if (filter_vcpu_on && t->stat.vcpu != filter_vcpu)
		return 0;
	__u32 cpu = bpf_get_smp_processor_id();
	void *ring = cpu_ring(cpu);
	struct ht_vcpu_switch *sw = ring ? bpf_ringbuf_reserve(ring, sizeof(*sw), 0) : NULL;

	if (!sw) {
		count(HT_CNT_SWITCH_DROPS);
		return 0;
	}
	__builtin_memset(sw, 0, sizeof(*sw));
	sw->time_ns = now;
	sw->kind = kind;
	if (kind == HT_SWITCH_OUT) {
		sw->prev_state = e->prev_state;
		sw->involuntary = e->prev_involuntary;
		sw->other_tid = (__u32)e->next_ids;
		sw->other_pid = e->next_ids >> 32;
		__builtin_memcpy(sw->other_comm, e->next_comm, sizeof(sw->other_comm));
	} else {
		sw->other_tid = (__u32)e->prev_ids;
		sw->other_pid = e->prev_ids >> 32;
		__builtin_memcpy(sw->other_comm, e->prev_comm, sizeof(sw->other_comm));
	}
	sw->host_pid = t->stat.pid;
	sw->host_tid = t->stat.tid;
	sw->vcpu_id = t->stat.vcpu;
	sw->cpu = cpu;
	sw->flags = HT_REC_F_VCPU_SWITCH;
	bpf_ringbuf_submit(sw, wakeup_flags(cpu));
	return 0;
}

/*
 * A switch with a vCPU thread on either side: prev's open exit goes into its
 * entry; prev's waiting starts if it is still runnable; next's waiting and
 * time off the CPU end. With --vcpu-sched each vCPU thread's side is recorded.
 */
static __noinline int vcpu_switch(struct vcpu_state *slot, const struct switch_event *e)
{
	__u64 now = clock_ns(e->now);
	__u32 prev_tid = (__u32)e->prev_ids, prev_tgid = e->prev_ids >> 32, next_tid = (__u32)e->next_ids;
	struct vcpu_thread *t = tid_is_vcpu(prev_tid) ? bpf_map_lookup_elem(&vcpu_threads, &prev_tid) : NULL;

	if (slot->exit_open) {
		/* The running thread is the one that exited (see cpu_states): its exit goes with it. */
		slot->exit_open = 0;
		if (!t)
			t = vcpu_thread_register(prev_tid, prev_tgid, slot->exit_vcpu, 1);
		if (t) {
			t->exit_ns = slot->exit_ns;
			t->exit_reason = slot->exit_reason;
			t->exit_isa = slot->exit_isa;
			t->stat.vcpu = slot->exit_vcpu;
			t->exit_open = 1;
		} else {
			count(HT_CNT_EXIT_NO_THREAD);
		}
	}
	if (t && prev_tid != next_tid) {
		t->running = 0;
		t->out_ns = now;
		t->out_involuntary = e->prev_involuntary;
		if (e->prev_involuntary) {
			t->stat.preempt_count++;
			t->wait_start_ns = now;
		} else {
			t->stat.voluntary_count++;
			t->wait_start_ns = 0;
		}
		if (vcpu_sched_on)
			emit_switch(t, HT_SWITCH_OUT, e, now);
	}
	struct vcpu_thread *n = tid_is_vcpu(next_tid) ? bpf_map_lookup_elem(&vcpu_threads, &next_tid) : NULL;
	if (!n || (t == n && prev_tid == next_tid))
		return 0;
	n->running = 1;
	if (n->wait_start_ns) {
		n->stat.wait_ns += now - n->wait_start_ns;
		n->wait_start_ns = 0;
	}
	if (n->out_ns) {
		if (n->out_involuntary)
			n->stat.preempt_ns += now - n->out_ns;
		else
			n->stat.voluntary_ns += now - n->out_ns;
		n->out_ns = 0;
	}
	if (vcpu_sched_on)
		emit_switch(n, HT_SWITCH_IN, e, now);
	return 0;
}

/*
 * Every switch: who runs on this CPU from now on (the slot's owner, for the
 * VM process of its exits), and the vCPU threads' part if either side is one.
 * For an event already built (the synthetic switches); the tracepoint's
 * handle_sched_switch does the same and builds its event only for that part.
 */
static __always_inline void exits_sched_switch(struct vcpu_state *slot, const struct switch_event *e)
{
	if (switch_has_vcpu(slot, (__u32)e->prev_ids, (__u32)e->next_ids))
		vcpu_switch(slot, e);
	slot->owner = e->next_ids;
}

/* A wake-up: a vCPU thread that is not on a CPU waits for one from now on. */
static __noinline int vcpu_wakeup(__u32 tid, __u64 synthetic_now)
{
	struct vcpu_thread *t = bpf_map_lookup_elem(&vcpu_threads, &tid);

	/* Woken while still on its CPU (before it switched out): it never waits. */
	if (t && !t->running && !t->wait_start_ns)
		t->wait_start_ns = clock_ns(synthetic_now);
	return 0;
}

static __always_inline int handle_sched_wakeup(__u32 tid, __u64 synthetic_now)
{
	if (tid_is_vcpu(tid))
		vcpu_wakeup(tid, synthetic_now);
	return 0;
}

/* A thread exits: its open exit and its vcpu_threads entry go with it. */
static __noinline int exits_thread_exit(struct vcpu_state *slot)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	slot->exit_open = 0;
	if (tid_is_vcpu(tid)) {
		bpf_map_delete_elem(&vcpu_threads, &tid);
		tid_mark_vcpu(tid, false);
	}
	return 0;
}

#endif /* HYPERTRACE_EXITS_BPF_H */
