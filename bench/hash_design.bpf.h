/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The reference designs hypertrace-bpf is measured against, used only by the
 * benchmarks. Both keep per-thread state in a BPF hash map keyed by thread id
 * and look it up on EVERY event (the original BCC script's approach, ported):
 *  - hash_*: emits the same fused record as hypertrace-bpf (isolates the
 *    state-map choice: hash vs task-local storage);
 *  - anchor_*: emits one record per matched event, three per hypercall, as the
 *    BCC script recorded each event it matched.
 */
#ifndef HYPERTRACE_BENCH_HASH_DESIGN_H
#define HYPERTRACE_BENCH_HASH_DESIGN_H

/* Included after hypertrace.bpf.c, whose types and handlers it compares against. */

/* Both designs emit into one ring shared by every CPU, as the BCC script did. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20); /* resized by user space before load */
} records SEC(".maps");

/* The same wake-up policy as record's, on the one ring. */
__u64 records_emitted;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct vcpu_state);
} hash_states SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u32);
} anchor_flags SEC(".maps");

static __always_inline int hash_kvm_exit(struct trace_event_raw_kvm_exit *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	struct vcpu_state *st = bpf_map_lookup_elem(&hash_states, &tid);
	__u32 reason = ctx->exit_reason, isa = ctx->isa;

	if (!is_hypercall_exit(isa, reason)) {
		if (st)
			st->phase = PHASE_IDLE;
		return 0;
	}
	if (!st) {
		struct vcpu_state zero = {};
		bpf_map_update_elem(&hash_states, &tid, &zero, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&hash_states, &tid);
		if (!st)
			return 0;
	}
	st->phase = PHASE_EXITED;
	st->rec.exit_ns = bpf_ktime_get_ns();
	st->rec.guest_rip = ctx->guest_rip;
	st->rec.exit_reason = reason;
	st->rec.isa = isa;
	st->rec.flags = 0;
	st->rec.vcpu_id = ctx->vcpu_id;
	st->rec.exit_cpu = bpf_get_smp_processor_id();
	st->rec.host_pid = pid_tgid >> 32;
	st->rec.host_tid = tid;
	return 0;
}

static __always_inline int hash_kvm_hypercall(struct trace_event_raw_kvm_hypercall *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct vcpu_state *st = bpf_map_lookup_elem(&hash_states, &tid);

	if (!st || st->phase != PHASE_EXITED)
		return 0;
	if (!nr_selected(ctx->nr)) {
		st->phase = PHASE_IDLE;
		return 0;
	}
	__u64 now = bpf_ktime_get_ns();
	st->hcall_ns = now;
	st->rec.exit_to_hcall_ns = (__u32)(now - st->rec.exit_ns);
	st->rec.nr = (__u32)ctx->nr;
	st->rec.a0 = ctx->a0;
	st->rec.a1 = ctx->a1;
	st->rec.a2 = ctx->a2;
	st->rec.a3 = ctx->a3;
	st->phase = PHASE_HCALL;
	return 0;
}

static __always_inline int hash_kvm_entry(struct trace_event_raw_kvm_entry *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct vcpu_state *st = bpf_map_lookup_elem(&hash_states, &tid);

	if (!st || st->phase != PHASE_HCALL) {
		if (st)
			st->phase = PHASE_IDLE;
		return 0;
	}
	st->phase = PHASE_IDLE;
	struct ht_record *rec = bpf_ringbuf_reserve(&records, sizeof(*rec), 0);
	if (!rec) {
		count(HT_CNT_RINGBUF_DROPS);
		return 0;
	}
	__builtin_memcpy(rec, &st->rec, sizeof(*rec));
	rec->hcall_to_entry_ns = (__u32)(bpf_ktime_get_ns() - st->hcall_ns);
	rec->vcpu_id = ctx->vcpu_id;
	rec->entry_cpu = bpf_get_smp_processor_id();
	bpf_ringbuf_submit(rec, wakeup_flags_of(&records_emitted));
	return 0;
}

/* One matched event as the BCC script recorded it. */
struct anchor_event {
	__u64 ts;
	__u32 tid;
	__u32 type; /* 0 exit, 1 hypercall, 2 entry */
	__u64 f[5];  /* exit: reason, rip, vcpu; hypercall: nr, a0..a3; entry: vcpu */
};

static __always_inline void anchor_emit(__u32 tid, __u32 type, __u64 f0, __u64 f1, __u64 f2,
					__u64 f3, __u64 f4)
{
	struct anchor_event *e = bpf_ringbuf_reserve(&records, sizeof(*e), 0);

	if (!e) {
		count(HT_CNT_RINGBUF_DROPS);
		return;
	}
	e->ts = bpf_ktime_get_ns();
	e->tid = tid;
	e->type = type;
	e->f[0] = f0;
	e->f[1] = f1;
	e->f[2] = f2;
	e->f[3] = f3;
	e->f[4] = f4;
	bpf_ringbuf_submit(e, wakeup_flags_of(&records_emitted));
}

static __always_inline int anchor_kvm_exit(struct trace_event_raw_kvm_exit *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u32 *flag = bpf_map_lookup_elem(&anchor_flags, &tid);
	__u32 reason = ctx->exit_reason, isa = ctx->isa;

	if (!is_hypercall_exit(isa, reason)) {
		if (flag)
			*flag = 0;
		return 0;
	}
	anchor_emit(tid, 0, reason, ctx->guest_rip, ctx->vcpu_id, 0, 0);
	__u32 one = 1;
	bpf_map_update_elem(&anchor_flags, &tid, &one, BPF_ANY);
	return 0;
}

static __always_inline int anchor_kvm_hypercall(struct trace_event_raw_kvm_hypercall *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u32 *flag = bpf_map_lookup_elem(&anchor_flags, &tid);

	if (!flag || !*flag || !nr_selected(ctx->nr))
		return 0;
	anchor_emit(tid, 1, ctx->nr, ctx->a0, ctx->a1, ctx->a2, ctx->a3);
	return 0;
}

static __always_inline int anchor_kvm_entry(struct trace_event_raw_kvm_entry *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u32 *flag = bpf_map_lookup_elem(&anchor_flags, &tid);

	if (!flag || !*flag)
		return 0;
	anchor_emit(tid, 2, ctx->vcpu_id, 0, 0, 0, 0);
	bpf_map_delete_elem(&anchor_flags, &tid);
	return 0;
}

#endif
