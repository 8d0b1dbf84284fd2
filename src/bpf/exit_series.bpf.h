/* SPDX-License-Identifier: GPL-2.0 */
/*
 * record --exits, the series: each exit counted, by (VM process, vCPU,
 * ISA, reason), into a log2 histogram of its time in the host, in its
 * CPU's own exit_cache or else in exit_hists, within its VM process's share
 * of the host's tables (vm_shares). The layers above: vcpu_account.bpf.h,
 * exit_causes.bpf.h, exits.bpf.h (its top comment: the design, and which
 * functions are global).
 */
#ifndef HYPERTRACE_EXIT_SERIES_BPF_H
#define HYPERTRACE_EXIT_SERIES_BPF_H

#include "helpers.bpf.h"

/* The synthetic-event programs pass their own clock; the tracepoint programs pass 0 and read the real one. */
static __always_inline __u64 clock_ns(__u64 synthetic_now)
{
	return synthetic_now ? synthetic_now : bpf_ktime_get_ns();
}

/* The slot of a time in the host: its last holds everything from 2^(HT_EXIT_SLOTS - 1) ns on. */
static __always_inline __u32 exit_slot(__u64 ns)
{
	return bounded_log2_slot(ns, HT_EXIT_SLOTS);
}

/* VM process tgid's share of the host-wide tables, made if new; NULL if vm_shares is full. */
static __always_inline struct ht_vm_share *vm_share(__u32 tgid)
{
	static const struct ht_vm_share none;

	return lookup_or_try_init(&vm_shares, &tgid, &none);
}

/*
 * One entry of a VM's share (*used of bound) taken: false if it is spent.
 * Read before the atomic add, so a spent share costs no atomic step; an
 * add that overshoots (another CPU took the last one first) is given back.
 * The caller gives the entry back if it makes none, so *used counts the
 * VM's entries exactly.
 */
static __always_inline bool share_take(__u32 *used, __u32 bound)
{
	if (*used >= bound)
		return false;
	if (__sync_fetch_and_add(used, 1) < bound)
		return true;
	__sync_fetch_and_add(used, -1);
	return false;
}

/*
 * A new entry of key in map, taken from a VM's share (*used of bound):
 * NULL if the share is spent (*refused set) or the map is full. The share
 * is given back if the entry was not made here (another CPU made it first
 * and took its own, or the map is full). *made (if not NULL) is set when
 * this call made the entry, for a caller that took more than the share
 * for it.
 */
static __always_inline void *share_new(void *map, const void *key, const void *init, __u32 *used, __u32 bound,
				       bool *refused, bool *made)
{
	if (!share_take(used, bound)) {
		*refused = true;
		return NULL;
	}
	if (bpf_map_update_elem(map, key, init, BPF_NOEXIST))
		__sync_fetch_and_add(used, -1);
	else if (made)
		*made = true;
	return bpf_map_lookup_elem(map, key);
}

static __noinline struct ht_exit_hist *new_exit_series(struct ht_exit_key *key)
{
	static const struct ht_exit_hist zero;
	struct ht_vm_share *share = vm_share(key->pid);
	struct ht_exit_hist *h = NULL;
	bool refused = false;

	if (share) {
		h = share_new(&exit_hists, key, &zero, &share->series, HT_EXIT_SERIES_PER_VM, &refused, NULL);
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

#endif /* HYPERTRACE_EXIT_SERIES_BPF_H */
