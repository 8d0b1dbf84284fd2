/* SPDX-License-Identifier: GPL-2.0 */
/*
 * record --exits: every VM exit of the host, and how its vCPU threads wait
 * for a host CPU. fuse.bpf.h's kvm_exit, kvm_entry, sched_switch and
 * thread-exit handlers call in here; the maps and the exits_on switch are
 * maps.bpf.h's. With exits_on false (rodata) the
 * verifier removes every call of this file from the programs.
 *
 * Time in the host: kvm_exit notes the exit in its CPU's slot (cpu_states);
 * the next kvm_entry on that CPU is the same thread's unless the thread was
 * switched out in between, and then sched_switch has moved the open exit
 * into the thread's vcpu_thread_table entry, where kvm_entry finds it. So the
 * common pair costs two slot accesses, a clock read at each end, the
 * thread's ids at the entry and the update of the series' entry in its
 * CPU's own table (exit_cache: an array lookup, no helper call); nothing
 * goes through a ring buffer.
 *
 * Waiting: sched_switch and sched_wakeup test one bit per thread id
 * (vcpu_tid_bits) and touch vcpu_thread_table only for vCPU threads; for every
 * other thread a switch costs a few loads and one store into the CPU's own
 * slot (who runs there: kvm_entry compares it with its own thread, so an
 * open exit is never paired with another thread's entry).
 *
 * Verification: the paths off the common one are global functions
 * (noinline, not static). The verifier checks a global function's body once
 * per program, with its arguments as their types say, where it walks a
 * static one again for each state its callers reach it in; a time's log2
 * slot alone is five compares, 32 paths. kvm_entry's and thread exit's
 * programs took 17468 and 15348 instructions to verify with these paths
 * static, most of record's start-up. A global function returns a scalar
 * and tests its pointers, which may be NULL to the verifier; where its
 * callers want a pointer, an inline wrapper looks it up. The common path
 * stays inline: a call costs the exit + entry pair a few ns.
 */
#ifndef HYPERTRACE_EXITS_BPF_H
#define HYPERTRACE_EXITS_BPF_H

#include "helpers.bpf.h"
#include "hypertrace/cause_rule.h"

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

/* VM process tgid's share of the host-wide tables, made if new; NULL if vm_shares is full. */
static __always_inline struct ht_vm_share *vm_share(__u32 tgid)
{
	static const struct ht_vm_share none;

	return lookup_or_try_init(&vm_shares, &tgid, &none);
}

/*
 * A new entry of key in map, taken from a VM's share (*used of bound):
 * NULL if the share is spent (*refused set) or the map is full. The share
 * is taken before the entry is made and given back if it was not made here
 * (another CPU made it first and took its own, or the map is full), so
 * *used is the VM's entries exactly.
 */
static __always_inline void *share_new(void *map, const void *key, const void *init, __u32 *used, __u32 bound,
				       bool *refused)
{
	if (*used >= bound)
		goto refused;
	if (__sync_fetch_and_add(used, 1) >= bound) {
		__sync_fetch_and_add(used, -1);
		goto refused;
	}
	if (bpf_map_update_elem(map, key, init, BPF_NOEXIST))
		__sync_fetch_and_add(used, -1);
	return bpf_map_lookup_elem(map, key);
refused:
	*refused = true;
	return NULL;
}

static __noinline struct ht_exit_hist *new_exit_series(struct ht_exit_key *key)
{
	static const struct ht_exit_hist zero;
	struct ht_vm_share *share = vm_share(key->pid);
	struct ht_exit_hist *h = NULL;
	bool refused = false;

	if (share) {
		h = share_new(&exit_hists, key, &zero, &share->series, HT_EXIT_SERIES_PER_VM, &refused);
		if (refused)
			__sync_fetch_and_add(&share->series_over, 1);
	}
	if (!h)
		count(HT_CNT_EXIT_SERIES_FULL); /* lost, and counted */
	return h;
}

/*
 * exit_cached_hist compares a key's first 8 bytes as one word, pid | vcpu << 32 |
 * isa << 48 (pad, 0, in the top byte): the layout it relies on.
 */
_Static_assert(__builtin_offsetof(struct ht_exit_key, pid) == 0, "exit_cached_hist: pid is bits 0..31 of the head");
_Static_assert(__builtin_offsetof(struct ht_exit_key, vcpu) == 4, "exit_cached_hist: vcpu is bits 32..47 of the head");
_Static_assert(__builtin_offsetof(struct ht_exit_key, isa) == 6, "exit_cached_hist: isa is bits 48..55 of the head");
_Static_assert(__builtin_offsetof(struct ht_exit_key, pad) == 7, "exit_cached_hist: pad (0) is bits 56..63 of the head");
_Static_assert(__builtin_offsetof(struct ht_exit_key, reason) == 8, "exit_cached_hist: reason is compared on its own");

/* The series' entry in this CPU's exit_cache, taken if free; NULL if it has none there (see count_exit_uncached). */
static __always_inline struct ht_exit_hist *exit_cached_hist(struct ht_exit_key *key, __u32 cpu)
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
	return NULL;
}

/* One exit of ns into its series' histogram. */
static __always_inline void exit_hist_add(struct ht_exit_hist *h, __u64 ns)
{
	h->slots[exit_slot(ns)]++;
	if (!h->count || ns < h->min_ns)
		h->min_ns = ns;
	if (ns > h->max_ns)
		h->max_ns = ns;
	h->count++;
	h->total_ns += ns;
}

/*
 * count_exit for a series with no room in this CPU's exit_cache: into its
 * entry in exit_hists, made if new. Global (see the top of this file).
 * Returns the clock value the exit ended at, 0 if it was lost (counted).
 */
__noinline __u64 count_exit_uncached(const struct ht_exit_key *key, __u64 exit_ns, __u64 synthetic_now)
{
	if (!key)
		return 0;
	/* On the stack: 6.1's helpers take no map key from a global function's argument (PTR_TO_MEM). */
	struct ht_exit_key k = *key;
	struct ht_exit_hist *h = bpf_map_lookup_elem(&exit_hists, &k);
	if (!h)
		h = new_exit_series(&k);
	if (!h)
		return 0;
	__u64 now = clock_ns(synthetic_now);
	exit_hist_add(h, now - exit_ns);
	return now;
}

/*
 * One exit of (tgid, vcpu, isa, reason) that began at exit_ns, counted on
 * this CPU unless a filter leaves it out. The clock is read only once the
 * series' histogram is found: the entry's own work before it is not the
 * exit's time, as the exit's after its clock read is not (see exit_begin).
 * Returns the clock value the exit ended at, 0 if it was not counted.
 */
static __always_inline __u64 count_exit(__u32 tgid, __u32 vcpu, __u32 isa, __u32 reason, __u64 exit_ns,
					__u64 synthetic_now, __u32 cpu)
{
	if (filter_tgid_on && !tgid_traced(tgid))
		return 0;
	if (filter_vcpu_on && vcpu != filter_vcpu)
		return 0;
	struct ht_exit_key key = { .pid = tgid, .vcpu = vcpu, .isa = isa, .reason = reason };
	struct ht_exit_hist *h = exit_cached_hist(&key, cpu);
	if (!h)
		return count_exit_uncached(&key, exit_ns, synthetic_now);
	__u64 now = clock_ns(synthetic_now);
	exit_hist_add(h, now - exit_ns);
	return now;
}

/* This CPU's note of the cause of the exit open in its slot. */
static __always_inline struct exit_cause_note *cpu_cause_note(__u32 cpu)
{
	return &cpu_exit_causes[cpu & (HT_MAX_CPUS - 1)].note;
}

/*
 * A cause of a new series of causes: the (VM process, ISA, reason) names it
 * if it has named fewer than HT_EXIT_CAUSES_PER_REASON and the VM's share
 * has room, else it is counted under the reason's "other" cause (a share's
 * refusal also in the VM's excess). NULL: lost (counted).
 */
static __noinline struct ht_exit_cause_hist *new_cause_series(struct ht_exit_cause_key *key)
{
	static const struct ht_exit_cause_hist zero;
	static const __u32 none;
	struct ht_exit_cause_key reason = { .pid = key->pid, .reason = key->reason, .isa = key->isa };
	struct ht_exit_cause_hist *h = NULL;
	/* Every new entry, of either map, from the VM's share (see share_new). */
	struct ht_vm_share *share = vm_share(key->pid);
	__u32 *named = bpf_map_lookup_elem(&exit_cause_names, &reason);
	bool refused = false; /* the exit's, counted once in the VM's excess */

	if (!share) {
		count(HT_CNT_EXIT_CAUSE_LOST);
		return NULL;
	}
	if (!named)
		named = share_new(&exit_cause_names, &reason, &none, &share->causes, HT_EXIT_CAUSES_PER_VM,
				  &refused);
	/* The count is read before it is taken: once full it stops moving (and cannot wrap). */
	if (named && *named < HT_EXIT_CAUSES_PER_REASON &&
	    __sync_fetch_and_add(named, 1) < HT_EXIT_CAUSES_PER_REASON)
		h = share_new(&exit_causes, key, &zero, &share->causes, HT_EXIT_CAUSES_PER_VM, &refused);
	if (h)
		return h;
	key->kind = HT_CAUSE_OTHER;
	key->detail = 0;
	key->value = 0;
	h = bpf_map_lookup_elem(&exit_causes, key);
	if (!h)
		h = share_new(&exit_causes, key, &zero, &share->causes, HT_EXIT_CAUSES_PER_VM, &refused);
	if (refused)
		__sync_fetch_and_add(&share->causes_over, 1);
	if (!h)
		count(HT_CNT_EXIT_CAUSE_LOST);
	return h;
}

/*
 * An exit of (tgid, isa, reason) that ended at now, with its cause noted in
 * n: counted under its cause, with its time in KVM (to its return to user
 * space, or to now) and in the VMM (from that return to now). The note is
 * used up, so a later exit stamped alike (synthetic times) starts without it.
 */
__noinline int count_cause(__u32 tgid, __u32 isa, __u32 reason, struct exit_cause_note *n, __u64 now)
{
	if (!n)
		return 0;
	struct ht_exit_cause_key key = {
		.pid = tgid, .reason = reason, .isa = isa, .kind = n->kind, .detail = n->detail, .value = n->value,
	};
	__u64 exit_ns = n->exit_ns, uexit_ns = n->uexit_ns;

	n->kind = HT_CAUSE_NONE;
	struct ht_exit_cause_hist *h = bpf_map_lookup_elem(&exit_causes, &key);
	if (!h)
		h = new_cause_series(&key);
	if (!h)
		return 0;
	bool to_vmm = uexit_ns >= exit_ns && uexit_ns && uexit_ns <= now;
	__u64 kvm_ns = (to_vmm ? uexit_ns : now) - exit_ns;
	/*
	 * The bucket first, as a series counts an exit: a read between two of
	 * these writes then sees a time in KVM or the VMM no larger than its
	 * buckets allow, which the reader of a file checks.
	 */
	h->kvm_slots[exit_slot(kvm_ns)]++;
	h->count++;
	h->kvm_ns += kvm_ns;
	if (to_vmm) {
		h->vmm_slots[exit_slot(now - uexit_ns)]++;
		h->vmm_count++;
		h->vmm_ns += now - uexit_ns;
	}
	return 0;
}

/* An exit counted (now: where it ended; 0: not counted) whose open exit began at exit_ns: its cause, if noted. */
static __always_inline void exit_cause_done(__u32 tgid, __u32 isa, __u32 reason, struct exit_cause_note *n,
					    __u64 exit_ns, __u64 now)
{
	if (now && n->kind != HT_CAUSE_NONE && n->exit_ns == exit_ns)
		count_cause(tgid, isa, reason, n, now);
}

/*
 * An open exit of (key) that began at exit_ns, ended and counted off the
 * common path (a thread switched out since its exit, or one that exits),
 * with its cause noted in n. Global (see the top of this file). Returns
 * count_exit's clock value (0: not counted).
 */
__noinline __u64 close_exit(const struct ht_exit_key *key, struct exit_cause_note *n, __u64 exit_ns,
			    __u64 synthetic_now, __u32 cpu)
{
	if (!key || !n)
		return 0;
	__u64 now = count_exit(key->pid, key->vcpu, key->isa, key->reason, exit_ns, synthetic_now, cpu);

	exit_cause_done(key->pid, key->isa, key->reason, n, exit_ns, now);
	return now;
}

/* The entry at idx of vcpu_thread_table; NULL if out of range. */
static __always_inline struct vcpu_thread *thread_at(__u32 idx)
{
	return bpf_map_lookup_elem(&vcpu_thread_table, &idx);
}

/* The entry of vCPU thread tid and its index (*idx); NULL if tid has none. */
static __always_inline struct vcpu_thread *thread_of(__u32 tid, __u32 *idx)
{
	__u32 *i = tid_is_vcpu(tid) ? bpf_map_lookup_elem(&vcpu_thread_ids, &tid) : NULL;

	if (!i)
		return NULL;
	*idx = *i;
	return thread_at(*i);
}

/* The thread's current state. */
static __always_inline __u32 thread_state(const struct vcpu_thread *t)
{
	return t->since_state & VCPU_STATE_MASK;
}

/*
 * The account's one transition: the current state ends at now and state
 * begins (gone: the thread ended, and its account with it). The state's
 * time goes into state_ns before the new time goes into since_state, one
 * store: user space, which reads the entry while it changes, knows a copy
 * taken in between by its states not adding up (see vcpu_thread). A clock
 * value before the state's start (the clocks of two CPUs a few ns apart, a
 * wake-up read on one and a switch on another) moves nothing back: the
 * states still add up, and none goes below zero.
 */
static __always_inline void account_to(struct vcpu_thread *t, __u32 state, __u64 now, __u64 gone)
{
	__u64 w = t->since_state, since = vcpu_thread_time(w);
	__u32 from = w & VCPU_STATE_MASK;

	if (now > since) {
		if (from < HT_VCPU_NSTATES)
			t->state_ns[from] += now - since;
		since = now;
	}
	barrier();
	t->since_state = since << VCPU_TIME_SHIFT | (w & VCPU_GONE) | gone | state;
}

static __always_inline bool is_halt_exit(__u32 isa, __u32 reason)
{
	if (isa == HT_ISA_VMX)
		return reason == HT_VMX_EXIT_REASON_HLT;
	return reason == HT_SVM_EXIT_CODE_HLT || reason == HT_SVM_EXIT_CODE_IDLE_HLT;
}

/* Threads a probe for a free entry looks at: a host with far fewer vCPU threads than entries finds one at once. */
#define HT_VCPU_THREAD_PROBES 8

/* A subprogram takes at most five arguments: a vCPU id and a state travel as one. */
#define VCPU_AND_STATE(vcpu, state) ((__u32)(vcpu) | (__u32)(state) << 16)

/*
 * A new entry for vCPU thread ids (tgid << 32 | tid) of vcpu_and_state
 * (VCPU_AND_STATE), in that state from now on, marked in vcpu_tid_bits.
 * Returns its index + 1; 0 if none is free among the probed ones or
 * vcpu_thread_ids is full (the caller counts it). Global (see the top of
 * this file): vcpu_thread_register is its callers' form.
 */
__noinline __u32 vcpu_thread_add(__u64 ids, __u32 vcpu_and_state, __u64 now)
{
	__u32 tid = (__u32)ids, tgid = ids >> 32, vcpu = vcpu_and_state & 0xffff, state = vcpu_and_state >> 16;
	__u32 first = tid * 0x9e3779b1u;

	for (__u32 i = 0; i < HT_VCPU_THREAD_PROBES; i++) {
		__u32 at = (first + i) & (HT_MAX_VCPU_THREADS - 1);
		struct vcpu_thread *t = thread_at(at);

		if (!t)
			return 0;
		/* Taken with one atomic step: two CPUs may register two threads at once. */
		if (t->in_use != VCPU_ENTRY_FREE ||
		    __sync_val_compare_and_swap(&t->in_use, VCPU_ENTRY_FREE, VCPU_ENTRY_TAKEN) != VCPU_ENTRY_FREE)
			continue;
		/* Preallocated elements: safe under the runqueue lock (see moved_states). */
		if (bpf_map_update_elem(&vcpu_thread_ids, &tid, &at, BPF_NOEXIST)) {
			t->in_use = VCPU_ENTRY_FREE;
			return 0;
		}
		__builtin_memset(&t->stat, 0, sizeof(t->stat));
		t->stat.pid = tgid;
		t->stat.tid = tid;
		t->stat.vcpu = vcpu;
		__builtin_memset(t->state_ns, 0, sizeof(t->state_ns));
		t->start_ns = now;
		t->since_state = now << VCPU_TIME_SHIFT | state;
		t->resume_state = HT_VCPU_KVM;
		t->running = state <= HT_VCPU_VMM;
		t->out_ns = 0;
		t->exit_open = 0;
		t->out_involuntary = 0;
		t->uexit_hlt = 0;
		/* Whole before user space may read it. */
		barrier();
		t->in_use = VCPU_ENTRY_READY;
		tid_mark_vcpu(tid, true);
		return at + 1;
	}
	return 0;
}

/* vcpu_thread_add's entry, and its index in *idx; NULL if none was made. */
static __always_inline struct vcpu_thread *vcpu_thread_register(__u64 ids, __u32 vcpu_and_state, __u64 now,
								__u32 *idx)
{
	__u32 at = vcpu_thread_add(ids, vcpu_and_state, now);

	if (!at)
		return NULL;
	*idx = at - 1;
	return thread_at(at - 1);
}

/*
 * The calling thread's entry when its CPU's slot does not name it (a
 * thread not seen before, or a switch nobody reported): found by its id,
 * or made, in vcpu_and_state (VCPU_AND_STATE), if create (an exit or an
 * entry; not a return to user space, which has no vCPU id); the slot names
 * it from now on (slot->running_thread: its index + 1, 0 if it has none).
 * Global (see the top of this file): own_thread is its callers' form.
 */
__noinline int name_own_thread(struct vcpu_state *slot, __u64 me, __u32 vcpu_and_state, __u64 now, bool create)
{
	__u32 idx = 0, at = 0;

	if (!slot)
		return 0;
	if (thread_of((__u32)me, &idx))
		at = idx + 1;
	else if (create && !(at = vcpu_thread_add(me, vcpu_and_state, now)))
		count(HT_CNT_EXIT_NO_THREAD);
	slot->running_thread = at;
	return 0;
}

/* name_own_thread's entry; NULL if it has none. */
static __always_inline struct vcpu_thread *own_thread(struct vcpu_state *slot, __u64 me, __u32 vcpu_and_state,
						       __u64 now, bool create)
{
	name_own_thread(slot, me, vcpu_and_state, now, create);
	return slot->running_thread ? thread_at(slot->running_thread - 1) : NULL;
}

/* The running thread's entry, as the switches put it into the CPU's slot; else found (or made) by its id. */
static __always_inline struct vcpu_thread *running_thread(struct vcpu_state *slot, __u32 vcpu, __u32 state, __u64 now,
							  bool create)
{
	struct vcpu_thread *t = NULL;

	if (slot->running_thread)
		t = thread_at(slot->running_thread - 1);
	if (!t)
		t = own_thread(slot, bpf_get_current_pid_tgid(), VCPU_AND_STATE(vcpu, state), now, create);
	return t;
}

/*
 * The account's guest state, chained to the exit that ended it: kvm_exit
 * does not touch the account (it leaves the exit's time in the CPU's slot),
 * so the thread's entry still says guest while KVM handles the exit. The
 * next event of the thread that changes its account ends the guest state
 * at the exit's time (exit_ns) and begins kvm there: one write of the
 * account per exit, at its end, with the clock reads the exit's timing
 * makes anyway. User space reads the open exits of the CPU slots to do the
 * same for a read in between (tracer_read.c).
 */
static __always_inline void guest_until_exit(struct vcpu_thread *t, __u64 exit_ns)
{
	if ((t->since_state & (VCPU_STATE_MASK | VCPU_GONE)) == HT_VCPU_GUEST &&
	    exit_ns >= vcpu_thread_time(t->since_state))
		account_to(t, HT_VCPU_KVM, exit_ns, 0);
}

/*
 * kvm_entry of the thread whose exit the slot holds: guest until the exit
 * (unless a return to user space or a switch ended it already), then kvm
 * or vmm until now, and guest from now on. The common case, guest to guest
 * across one exit, in one write of the entry.
 */
static __always_inline void account_entry(struct vcpu_state *slot, __u64 now)
{
	struct vcpu_thread *t = running_thread(slot, slot->exit_vcpu, HT_VCPU_GUEST, now, true);
	__u64 exit_ns = slot->exit_ns;

	if (!t)
		return;
	__u64 w = t->since_state, since = vcpu_thread_time(w);
	if ((w & (VCPU_STATE_MASK | VCPU_GONE)) == HT_VCPU_GUEST && exit_ns >= since && now >= exit_ns) {
		t->state_ns[HT_VCPU_GUEST] += exit_ns - since;
		t->state_ns[HT_VCPU_KVM] += now - exit_ns;
		barrier();
		t->since_state = now << VCPU_TIME_SHIFT | HT_VCPU_GUEST;
	} else if ((w & VCPU_STATE_MASK) != HT_VCPU_GUEST) {
		account_to(t, HT_VCPU_GUEST, now, 0);
	}
}

/*
 * kvm_exit: the running thread's exit is open from now on (its account's
 * guest state ends there: guest_until_exit). The clock is read last, so the time in the host
 * starts where the program hands the event back (as kvm_entry's count_exit
 * reads it only once its work is done): the programs' own cost is in
 * neither end.
 */
static __always_inline void exit_begin(struct vcpu_state *slot, __u32 reason, __u32 isa, __u32 vcpu,
				       __u64 synthetic_now)
{
	slot->exit_reason = isa == HT_ISA_VMX ? reason & HT_VMX_EXIT_REASON_MASK : reason;
	slot->exit_isa = isa;
	slot->exit_vcpu = vcpu;
	/* Until a switch on this CPU names who runs here (just after attach): ask, once. */
	if (!slot->owner)
		slot->owner = bpf_get_current_pid_tgid();
	__u64 now = clock_ns(synthetic_now);
	slot->exit_ns = now;
	/* Its time before it is open: a reader that sees it open sees its time (see guest_until_exit). */
	barrier();
	slot->exit_open = 1;
	/* A thread the switches have not named here (first seen): its entry, in kvm from now, once. */
	if (!slot->running_thread)
		running_thread(slot, vcpu, HT_VCPU_KVM, now, true);
}

/*
 * The note of the running thread's open exit (its CPU's, or its entry's if
 * it was switched out since the exit), stamped for that exit, and the
 * exit's reason, ISA and vCPU (*exit: OPEN_EXIT(reason, isa, vcpu)); NULL if
 * it has none open.
 */
#define OPEN_EXIT(reason, isa, vcpu) ((__u64)(reason) | (__u64)(isa) << 32 | (__u64)(vcpu) << 40)
static __always_inline struct exit_cause_note *open_exit_note(struct vcpu_state *slot, __u32 cpu, __u64 *exit)
{
	struct exit_cause_note *n;
	__u64 exit_ns;

	if (slot->exit_open) {
		n = cpu_cause_note(cpu);
		exit_ns = slot->exit_ns;
		*exit = OPEN_EXIT(slot->exit_reason, slot->exit_isa, slot->exit_vcpu);
	} else {
		struct vcpu_thread *t = slot->running_thread ? thread_at(slot->running_thread - 1) : NULL;

		if (!t || !t->exit_open)
			return NULL;
		n = &t->cause;
		exit_ns = t->exit_ns;
		*exit = OPEN_EXIT(t->exit_reason, t->exit_isa, t->stat.vcpu);
	}
	if (n->exit_ns != exit_ns) {
		n->kind = HT_CAUSE_NONE;
		n->uexit_ns = 0;
		n->exit_ns = exit_ns;
	}
	return n;
}

/*
 * A cause tracepoint whose kind cannot be its open exit's cause (see
 * cause_rule.h): KVM's own lookup, or the memory of an emulated string I/O.
 * Counted apart, for a traced VM; the exit keeps the cause it has. Not
 * inline: the causes that fit, nearly all, do not carry its filter code.
 */
static __noinline int count_cause_not_its(__u32 vcpu)
{
	if (filter_tgid_on && !tgid_traced(bpf_get_current_pid_tgid() >> 32))
		return 0;
	if (filter_vcpu_on && vcpu != filter_vcpu)
		return 0;
	count(HT_CNT_EXIT_CAUSE_NOT_ITS);
	return 0;
}

/*
 * kvm_pio, kvm_mmio, kvm_msr, kvm_cpuid, kvm_hypercall: the cause of the
 * running thread's open exit if its kind can be the exit's cause (the last
 * such one KVM reports wins); else counted apart. A CPU with no open exit
 * (untraced, or not a vCPU thread's) costs a load and a branch. Whether the
 * VM is traced is asked when the exit is counted.
 */
static __always_inline int note_exit_cause(__u8 kind, __u64 value, __u32 detail)
{
	if (!exits_on)
		return 0;
	__u32 cpu = bpf_get_smp_processor_id();
	struct vcpu_state *slot = cpu_slot(cpu);
	__u64 exit = 0;

	if (!slot->exit_open && !slot->running_thread)
		return 0;
	struct exit_cause_note *n = open_exit_note(slot, cpu, &exit);
	if (!n)
		return 0;
	if (!ht_exit_cause_fits((__u8)(exit >> 32), (__u32)exit, kind))
		return count_cause_not_its((__u16)(exit >> 40));
	n->value = value;
	n->detail = detail;
	n->kind = kind;
	return 0;
}

/* The cause handlers take the tracepoints' own arguments (TP_PROTO in arch/x86/kvm/trace.h). */
static __always_inline int handle_kvm_pio(__u32 rw, __u32 port, __u32 size)
{
	return note_exit_cause(HT_CAUSE_PIO, port, (rw ? HT_CAUSE_DIR_OUT : HT_CAUSE_DIR_IN) | size << 8);
}

/* KVM_TRACE_MMIO_WRITE (2) is a write; READ_UNSATISFIED (0, sent to user space) and READ (1, its completion) reads. */
static __always_inline int handle_kvm_mmio(__u32 type, __u32 len, __u64 gpa)
{
	return note_exit_cause(HT_CAUSE_MMIO, gpa, (type == 2 ? HT_CAUSE_DIR_OUT : HT_CAUSE_DIR_IN) | len << 8);
}

static __always_inline int handle_kvm_msr(__u32 write, __u32 ecx)
{
	return note_exit_cause(HT_CAUSE_MSR, ecx, write ? HT_CAUSE_DIR_OUT : HT_CAUSE_DIR_IN);
}

/*
 * The leaves whose subleaf (ECX) selects what CPUID returns, as KVM's own
 * list of leaves with a significant index (arch/x86/kvm/cpuid.c). For any
 * other leaf ECX is whatever the guest left there (seen: bytes of a vendor
 * string), and a cause per value would spend a reason's named causes.
 */
static __always_inline bool cpuid_leaf_has_subleaves(__u32 leaf)
{
	switch (leaf) {
	case 0x4: case 0x7: case 0xb: case 0xd: case 0xf: case 0x10: case 0x12: case 0x14: case 0x17:
	case 0x18: case 0x1d: case 0x1e: case 0x1f: case 0x20: case 0x23: case 0x24:
	case 0x8000001d: case 0x80000020: case 0x80000026:
		return true;
	}
	return false;
}

/* leaf: EAX, index: ECX as the guest gave it. */
static __always_inline int handle_kvm_cpuid(__u32 leaf, __u32 index)
{
	return note_exit_cause(HT_CAUSE_CPUID, leaf, cpuid_leaf_has_subleaves(leaf) ? index : 0);
}

/* kvm_userspace_exit: the running vCPU thread returns to the VMM (reason: KVM_EXIT_*). */
static __always_inline int handle_kvm_userspace_exit(__u32 reason, __u64 synthetic_now)
{
	if (!exits_on)
		return 0;
	__u32 cpu = bpf_get_smp_processor_id();
	struct vcpu_state *slot = cpu_slot(cpu);
	__u64 now = clock_ns(synthetic_now);
	/* Where its exit's time in KVM ends and its time in the VMM begins. */
	__u64 exit;
	struct exit_cause_note *n = open_exit_note(slot, cpu, &exit);

	if (n && !n->uexit_ns)
		n->uexit_ns = now;
	struct vcpu_thread *t = running_thread(slot, 0, HT_VCPU_VMM, now, false);

	if (!t)
		return 0;
	if (slot->exit_open)
		guest_until_exit(t, slot->exit_ns);
	t->uexit_hlt = reason == HT_KVM_EXIT_HLT;
	if (thread_state(t) != HT_VCPU_VMM)
		account_to(t, HT_VCPU_VMM, now, 0);
	return 0;
}

/* Thread t's open exit (taken out of it by the caller), of VM process tgid: close_exit. */
static __always_inline __u64 close_thread_exit(struct vcpu_thread *t, __u32 tgid, __u64 synthetic_now, __u32 cpu)
{
	struct ht_exit_key key = { .pid = tgid, .vcpu = t->stat.vcpu, .isa = t->exit_isa, .reason = t->exit_reason };

	return close_exit(&key, &t->cause, t->exit_ns, synthetic_now, cpu);
}

/*
 * kvm_entry whose CPU slot holds no open exit of the caller (me: its
 * tgid << 32 | tid): the thread was switched out since its exit (the exit
 * is in its vcpu_thread_table entry), or its exit came before the programs
 * were attached. Also where a vCPU thread that was not switched out yet
 * gets its entry, and where a slot whose owner is wrong is put right.
 */
__noinline int exit_end_moved(__u32 vcpu_id, struct vcpu_state *slot, __u64 synthetic_now, __u64 me, __u32 cpu)
{
	__u32 tgid = me >> 32;
	__u64 now = 0;

	if (!slot)
		return 0;

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
		slot->running_thread = 0;
	}
	struct vcpu_thread *t = NULL;

	if (slot->running_thread)
		t = thread_at(slot->running_thread - 1);
	if (t && t->exit_open) {
		t->exit_open = 0;
		now = close_thread_exit(t, tgid, synthetic_now, cpu);
	}
	if (!now)
		now = clock_ns(synthetic_now);
	if (!t) {
		t = own_thread(slot, me, VCPU_AND_STATE(vcpu_id, HT_VCPU_GUEST), now, true);
		if (t && t->exit_open) {
			t->exit_open = 0;
			close_thread_exit(t, tgid, now, cpu);
		}
	}
	if (t && thread_state(t) != HT_VCPU_GUEST)
		account_to(t, HT_VCPU_GUEST, now, 0);
	return 0;
}

/*
 * kvm_entry: the running thread's open exit ends here, and its account goes
 * into guest at the clock value the exit ended at. The thread's ids cost
 * one helper call; the switches keep the slot's owner, so an open exit of
 * the slot is this thread's when the two agree (or no switch on this CPU
 * named anyone since attach).
 */
static __always_inline void exit_end(__u32 vcpu_id, struct vcpu_state *slot,
				     __u64 synthetic_now, __u32 cpu)
{
	__u64 me = bpf_get_current_pid_tgid();

	if (!slot->exit_open || (slot->owner != me && slot->owner)) {
		exit_end_moved(vcpu_id, slot, synthetic_now, me, cpu);
		return;
	}
	slot->owner = me;
	__u64 now = count_exit(me >> 32, slot->exit_vcpu, slot->exit_isa, slot->exit_reason, slot->exit_ns,
			       synthetic_now, cpu);
	exit_cause_done(me >> 32, slot->exit_isa, slot->exit_reason, cpu_cause_note(cpu), slot->exit_ns, now);
	account_entry(slot, now ? now : clock_ns(synthetic_now));
	/* Closed after the account took it: a reader sees the exit open, or the account past it. */
	barrier();
	slot->exit_open = 0;
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
 * A thread that blocks is halted if its open exit is a halt and the halt is
 * what it waits in: in KVM (the in-kernel halt), or in the VMM after KVM
 * handed it the halt (KVM_EXIT_HLT). A thread back in the VMM for anything
 * else (a signal: a VM stopped, say) is blocked, whatever exit it left.
 */
static __always_inline bool halted(const struct vcpu_thread *t)
{
	__u32 state = thread_state(t);

	return t->exit_open && is_halt_exit(t->exit_isa, t->exit_reason) &&
	       (state == HT_VCPU_KVM || (state == HT_VCPU_VMM && t->uexit_hlt));
}

/*
 * A switch with a vCPU thread on either side: prev's open exit goes into its
 * entry; prev's account goes to wait if it is still runnable, else to halted
 * (blocked in a halt exit) or blocked; next's account goes back to the state
 * it left (kvm or vmm), its time off the CPU ends, and the slot names it.
 * With --vcpu-sched each vCPU thread's side is recorded.
 */
__noinline int vcpu_switch(struct vcpu_state *slot, const struct switch_event *e)
{
	if (!slot || !e)
		return 0;
	__u64 now = clock_ns(e->now);
	__u32 prev_tid = (__u32)e->prev_ids, next_tid = (__u32)e->next_ids;
	__u32 idx = 0;
	struct vcpu_thread *t = thread_of(prev_tid, &idx);

	if (slot->exit_open) {
		/* The running thread is the one that exited (see cpu_states): its exit goes with it. */
		slot->exit_open = 0;
		if (!t)
			t = vcpu_thread_register(e->prev_ids, VCPU_AND_STATE(slot->exit_vcpu, HT_VCPU_KVM), now, &idx);
		if (t) {
			guest_until_exit(t, slot->exit_ns);
			t->exit_ns = slot->exit_ns;
			t->exit_reason = slot->exit_reason;
			t->exit_isa = slot->exit_isa;
			t->stat.vcpu = slot->exit_vcpu;
			/* Its cause goes with it (valid if stamped with its time: see exit_cause_note). */
			t->cause = *cpu_cause_note(bpf_get_smp_processor_id());
			t->exit_open = 1;
		} else {
			count(HT_CNT_EXIT_NO_THREAD);
		}
	}
	if (t && prev_tid != next_tid) {
		t->running = 0;
		t->out_ns = now;
		t->out_involuntary = e->prev_involuntary;
		if (e->prev_involuntary)
			t->stat.preempt_count++;
		else
			t->stat.voluntary_count++;
		if (thread_state(t) <= HT_VCPU_VMM)
			t->resume_state = thread_state(t);
		account_to(t, e->prev_involuntary ? HT_VCPU_WAIT : halted(t) ? HT_VCPU_HALTED : HT_VCPU_BLOCKED, now, 0);
		if (vcpu_sched_on)
			emit_switch(t, HT_SWITCH_OUT, e, now);
	}
	struct vcpu_thread *n = thread_of(next_tid, &idx);
	slot->running_thread = n ? idx + 1 : 0;
	if (!n || (t == n && prev_tid == next_tid))
		return 0;
	n->running = 1;
	if (n->out_ns) {
		if (n->out_involuntary)
			n->stat.preempt_ns += now - n->out_ns;
		else
			n->stat.voluntary_ns += now - n->out_ns;
		n->out_ns = 0;
	}
	if (thread_state(n) > HT_VCPU_VMM)
		account_to(n, n->resume_state, now, 0);
	if (vcpu_sched_on)
		emit_switch(n, HT_SWITCH_IN, e, now);
	return 0;
}

/*
 * Every switch: who runs on this CPU from now on (the slot's owner, for the
 * VM process of its exits, and its vCPU thread entry), and the vCPU threads'
 * part if either side is one. For an event already built (the synthetic
 * switches); the tracepoint's handle_sched_switch does the same and builds
 * its event only for that part.
 */
static __always_inline void exits_sched_switch(struct vcpu_state *slot, const struct switch_event *e)
{
	if (switch_has_vcpu(slot, (__u32)e->prev_ids, (__u32)e->next_ids))
		vcpu_switch(slot, e);
	else
		slot->running_thread = 0;
	slot->owner = e->next_ids;
}

/* A wake-up: a vCPU thread blocked off its CPU waits for one from now on. */
static __noinline int vcpu_wakeup(__u32 tid, __u64 synthetic_now)
{
	__u32 idx;
	struct vcpu_thread *t = thread_of(tid, &idx);

	/* Woken while still on its CPU (before it switched out), or already runnable: nothing changes. */
	if (t && !t->running && (thread_state(t) == HT_VCPU_HALTED || thread_state(t) == HT_VCPU_BLOCKED))
		account_to(t, HT_VCPU_WAIT, clock_ns(synthetic_now), 0);
	return 0;
}

static __always_inline int handle_sched_wakeup(__u32 tid, __u64 synthetic_now)
{
	if (tid_is_vcpu(tid))
		vcpu_wakeup(tid, synthetic_now);
	return 0;
}

/*
 * A thread exits. Its open exit ends with it and is counted, with its time
 * in the host until now: a vCPU thread's last exits (a VM shutting down, a
 * VMM stopping a vCPU) never come back to kvm_entry, and every exit the
 * kernel reported must be in the numbers. Its account closes at now and its
 * entry stays, marked gone, until user space has read it; its id can be
 * some other thread's from now on.
 */
__noinline int exits_thread_exit(struct vcpu_state *slot)
{
	if (!slot)
		return 0;

	__u64 me = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)me, idx = 0, cpu = bpf_get_smp_processor_id();
	__u64 now = 0;
	struct vcpu_thread *t = thread_of(tid, &idx);

	__u64 exit_ns = slot->exit_open && slot->owner == me ? slot->exit_ns : 0;

	if (exit_ns) {
		struct ht_exit_key key = {
			.pid = me >> 32, .vcpu = slot->exit_vcpu, .isa = slot->exit_isa, .reason = slot->exit_reason,
		};

		now = close_exit(&key, cpu_cause_note(cpu), exit_ns, 0, cpu);
	}
	if (t && exit_ns)
		guest_until_exit(t, exit_ns);
	slot->exit_open = 0;
	slot->running_thread = 0;
	if (!t)
		return 0;
	if (!now)
		now = bpf_ktime_get_ns();
	if (t->exit_open) {
		t->exit_open = 0;
		close_thread_exit(t, me >> 32, now, cpu);
	}
	t->running = 0;
	/* Its last numbers and gone in one write: a reader sees both or neither. */
	account_to(t, thread_state(t), now, VCPU_GONE);
	bpf_map_delete_elem(&vcpu_thread_ids, &tid);
	tid_mark_vcpu(tid, false);
	return 0;
}

#endif /* HYPERTRACE_EXITS_BPF_H */
