// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The tracer's readers of what its BPF programs counted: the counters, the
 * aggregates of --no-file, the exits' series and causes, the vCPU threads'
 * accounts and open exits (record/tracer.h).
 */
#include "record/tracer_private.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "common/grow.h"
#include "common/util.h"
#include "exits/exit_table.h"

/*
 * The counters, each summed over the CPUs: one batch lookup of the whole
 * per-CPU array (one system call a read, not one per counter; every kernel
 * the README claims has it for arrays). ENOENT with every entry read is the
 * array's end reached.
 */
int ht_tracer_counters(const struct ht_tracer *t, __u64 out[HT_CNT_MAX])
{
	int ncpus = libbpf_num_possible_cpus();
	int fd = bpf_map__fd(t->skel->maps.counters);
	__u32 keys[HT_CNT_MAX], count = HT_CNT_MAX, batch;
	__u64 *vals;
	int ret = 0;

	if (ncpus <= 0)
		return -EINVAL;
	vals = calloc((size_t)ncpus * HT_CNT_MAX, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	memset(out, 0, HT_CNT_MAX * sizeof(out[0]));
	if (bpf_map_lookup_batch(fd, NULL, &batch, keys, vals, &count, NULL) && errno != ENOENT)
		ret = -errno;
	else if (count != HT_CNT_MAX)
		ret = -EIO;
	for (__u32 i = 0; i < count && !ret; i++)
		for (int c = 0; c < ncpus && keys[i] < HT_CNT_MAX; c++)
			out[keys[i]] += vals[(size_t)i * ncpus + c];
	free(vals);
	return ret;
}

int ht_tracer_read_aggregates(const struct ht_tracer *t, ht_agg_fn fn, void *ctx)
{
	int ncpus = libbpf_num_possible_cpus();
	int fd = bpf_map__fd(t->skel->maps.latency_hists);
	struct ht_agg_hist *percpu, sum;
	__u64 key, next;
	int ret = 0;
	bool first = true;

	if (ncpus <= 0)
		return -EINVAL;
	percpu = calloc((size_t)ncpus, sizeof(*percpu));
	if (!percpu)
		return -ENOMEM;
	while (!ret) {
		if (bpf_map_get_next_key(fd, first ? NULL : &key, &next)) {
			ret = errno == ENOENT ? 0 : -errno; /* ENOENT: the last group was read */
			break;
		}
		first = false;
		key = next;
		if (bpf_map_lookup_elem(fd, &key, percpu)) {
			/* Groups are never deleted; a racing lookup miss is harmless. */
			ret = errno == ENOENT ? 0 : -errno;
			continue;
		}
		memset(&sum, 0, sizeof(sum));
		for (int c = 0; c < ncpus; c++)
			for (int s = 0; s < HT_AGG_NSERIES; s++)
				for (int i = 0; i < HT_AGG_SLOTS; i++)
					sum.slots[s][i] += percpu[c].slots[s][i];
		fn(ctx, key, &sum);
	}
	free(percpu);
	return ret;
}

/* Entries of a hash map read per system call (exit_hists, exit_causes, vm_shares). */
#define HASH_READ_BATCH 256

/* The parts of a read, one per (series, CPU), kept for the next read. */
struct exit_part {
	struct ht_exit_key key;
	struct ht_exit_hist h;
};

static int add_exit_part(struct exit_part **parts, size_t *n, size_t *cap, const struct ht_exit_key *key,
			 const struct ht_exit_hist *h)
{
	if (!h->count)
		return 0;
	if (HT_GROW(*parts, *cap, *n + 1, 256))
		return -ENOMEM;
	(*parts)[*n].key = *key;
	(*parts)[*n].h = *h;
	(*n)++;
	return 0;
}

static int cmp_parts(const void *a, const void *b)
{
	return ht_exit_key_cmp(&((const struct exit_part *)a)->key, &((const struct exit_part *)b)->key);
}

/*
 * Every entry of the hash map fd, HASH_READ_BATCH of them per system call:
 * fn with each. A per-CPU map's value comes once per possible CPU, the
 * kernel giving each value_size rounded up to 8 bytes; the callers' values
 * are whole multiples of 8 (record.h), so they index them as arrays. The
 * batches stay allocated in t from read to read: a few hundred KiB
 * allocated and freed every interval were new pages the kernel cleared
 * each time. 0, -errno, or fn's first error (which ends the read).
 */
int ht_tracer_read_hash(struct ht_tracer *t, int fd, size_t key_size, size_t value_size, bool per_cpu,
			ht_hash_entry_fn fn, void *ctx)
{
	int ncpus = per_cpu ? libbpf_num_possible_cpus() : 1;
	__u32 batch = 0, count;
	bool first = true, more = true;
	int ret = 0;

	if (ncpus <= 0)
		return -EINVAL;
	size_t values_bytes = (size_t)ncpus * HASH_READ_BATCH * value_size, keys_bytes = HASH_READ_BATCH * key_size;

	if (ht_grow(&t->batch_values, &t->batch_values_bytes, values_bytes, 1, values_bytes) ||
	    ht_grow(&t->batch_keys, &t->batch_keys_bytes, keys_bytes, 1, keys_bytes))
		return -ENOMEM;
	void *keys = t->batch_keys, *values = t->batch_values;

	while (more && !ret) {
		count = HASH_READ_BATCH;
		int err = bpf_map_lookup_batch(fd, first ? NULL : &batch, &batch, keys, values, &count, NULL);
		if (err && errno != ENOENT)
			return -errno;
		more = !err; /* ENOENT: this batch, if any, is the last */
		first = false;
		for (__u32 k = 0; k < count && !ret; k++)
			ret = fn(ctx, (const char *)keys + (size_t)k * key_size,
				 (const char *)values + (size_t)k * (size_t)ncpus * value_size, ncpus);
	}
	return ret;
}

/* ht_tracer_read_exits' parts, and their number so far. */
struct exit_read {
	struct ht_tracer *t;
	size_t n;
};

static int add_exit_parts(void *ctx, const void *key, const void *values, int ncpus)
{
	struct exit_read *r = ctx;
	const struct ht_exit_hist *h = values;
	int ret = 0;

	for (int c = 0; c < ncpus && !ret; c++)
		ret = add_exit_part(&r->t->exit_parts, &r->n, &r->t->exit_parts_cap, key, &h[c]);
	return ret;
}

int ht_tracer_read_exits(struct ht_tracer *t, ht_exit_fn fn, void *ctx)
{
	struct exit_read r = { .t = t };
	int ret = 0;

	/* Each CPU's table; an entry another CPU is taking right now is read once its key is whole. */
	for (size_t i = 0; t->exit_cache && i < t->exit_cache_entries && !ret; i++) {
		const struct exit_cache_entry *e = &t->exit_cache[i];

		if (!__atomic_load_n(&e->used, __ATOMIC_ACQUIRE))
			continue;
		struct ht_exit_key k = e->key;
		struct ht_exit_hist h = e->h;
		ret = add_exit_part(&t->exit_parts, &r.n, &t->exit_parts_cap, &k, &h);
	}
	/* The series that found no entry in their CPU's table. */
	if (!ret)
		ret = ht_tracer_read_hash(t, bpf_map__fd(t->skel->maps.exit_hists), sizeof(struct ht_exit_key),
					  sizeof(struct ht_exit_hist), true, add_exit_parts, &r);
	if (ret)
		return ret;
	/* Sorted by series, the parts of one series next to each other: summed in one pass. */
	size_t n = r.n;

	if (n)
		qsort(t->exit_parts, n, sizeof(*t->exit_parts), cmp_parts);
	for (size_t i = 0; i < n;) {
		struct ht_exit_series sum = { .key = t->exit_parts[i].key, .minmax_exact = true };

		for (; i < n && !cmp_parts(&t->exit_parts[i], &sum); i++) {
			struct ht_exit_series part = { .key = sum.key, .minmax_exact = true, .h = t->exit_parts[i].h };
			ht_exit_series_add(&sum, &part);
		}
		fn(ctx, &sum.key, &sum.h);
	}
	return 0;
}

/*
 * A whole copy of a vcpu_thread_table entry, read while BPF programs may
 * write it (see vcpu_thread in vcpu_state.h): its states add up to its time
 * minus its start in a copy taken between two writes, and not in one taken
 * half-way, which is copied again. false if the entry is no thread's. A
 * write lasts a few instructions, so a second copy finds it done; the bound
 * only keeps a broken writer from hanging the reader.
 */
static bool copy_vcpu_thread(const struct vcpu_thread *e, struct vcpu_thread *out)
{
	for (int tries = 0; tries < 1000000; tries++) {
		__u64 sum = 0;

		if (__atomic_load_n(&e->in_use, __ATOMIC_ACQUIRE) != VCPU_ENTRY_READY)
			return false;
		memcpy(out, e, sizeof(*out));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		for (int k = 0; k < HT_VCPU_NSTATES; k++)
			sum += out->state_ns[k];
		if (sum == vcpu_thread_time(out->since_state) - out->start_ns)
			return __atomic_load_n(&e->in_use, __ATOMIC_RELAXED) == VCPU_ENTRY_READY;
	}
	return false;
}

/* An exit open in a CPU's slot: the thread's guest state ended at exit_ns (see guest_until_exit). */
struct open_exit {
	__u32 tid;
	__u64 exit_ns;
};

static int cmp_open_exit(const void *a, const void *b)
{
	const struct open_exit *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->exit_ns > y->exit_ns) - (x->exit_ns < y->exit_ns);
}

/* The open exits of every CPU's slot now, sorted by thread; their number. */
static size_t snapshot_open_exits(const struct ht_tracer *t, struct open_exit *out)
{
	int ncpus = libbpf_num_possible_cpus();
	size_t n = 0;

	for (int cpu = 0; cpu < ncpus && cpu < HT_MAX_CPUS; cpu++) {
		const struct vcpu_state *slot = &t->skel->bss->cpu_states[cpu];

		/* BPF writes exit_ns before it sets exit_open (exit_begin). */
		if (!__atomic_load_n(&slot->exit_open, __ATOMIC_ACQUIRE))
			continue;
		out[n].exit_ns = __atomic_load_n(&slot->exit_ns, __ATOMIC_RELAXED);
		out[n].tid = (__u32)__atomic_load_n(&slot->owner, __ATOMIC_RELAXED);
		n++;
	}
	qsort(out, n, sizeof(*out), cmp_open_exit);
	return n;
}

/* The open exit of tid in a snapshot, or NULL. */
static const struct open_exit *open_exit_of(const struct open_exit *v, size_t n, __u32 tid)
{
	struct open_exit key = { .tid = tid };
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo].tid == key.tid ? &v[lo] : NULL;
}

/*
 * A thread's interrupts as copied while senders on other CPUs count them:
 * each acceptance is counted before it ends delivered, overlapped or
 * stale, but the copy may see an ending and miss its acceptance. The
 * acceptances are then at least their endings, as a file must have them.
 */
static void irqs_settled(struct ht_vcpu_irqs *i)
{
	__u64 ended = i->overlapped + i->stale;

	for (int c = 0; c < HT_IRQ_NCLASSES; c++)
		for (int k = 0; k < HT_WAKE_SLOTS; k++)
			ended += i->c[c].slots[k];
	if (i->accepted < ended)
		i->accepted = ended;
}

/* A thread as one read sees it, before it is handed on. */
struct thread_read {
	struct ht_vcpu_wait_rec rec;
	bool gone;
	size_t idx;
};

/*
 * One read of every thread's account up to now: the state current in a copy
 * runs up to now (or up to its start, if later); a running thread whose
 * guest state an open exit ended (the BPF side writes that at the exit's end:
 * guest_until_exit) is in guest until the exit and in kvm from there. Its
 * threads into out, at most cap (a thread registered since they were
 * counted waits for the next read); their number.
 */
static size_t read_accounts(const struct ht_tracer *t, __u64 now, const struct open_exit *open, size_t nopen,
			    struct thread_read *out, size_t cap)
{
	struct vcpu_thread v;
	struct vcpu_irq_state irqs;
	size_t n = 0;

	for (size_t i = 0; i < t->vcpu_threads && n < cap; i++) {
		if (!t->vcpu_thread_used->used[i] || !copy_vcpu_thread(&t->vcpu_thread_table[i], &v))
			continue;
		__u64 since = vcpu_thread_time(v.since_state);
		__u32 state = v.since_state & VCPU_STATE_MASK;
		struct thread_read *r = &out[n++];
		const struct open_exit *e;

		memset(r, 0, sizeof(*r));
		r->rec.w = v.stat;
		/* Its halts and interrupts are in maps of their own, copied here; none if that fails. */
		if (bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.vcpu_halts), &(__u32){ (__u32)i }, &r->rec.h))
			r->rec.h = (struct ht_vcpu_halts){ .poll_ns = HT_HALT_POLL_NS_UNKNOWN };
		if (bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.vcpu_irqs), &(__u32){ (__u32)i }, &irqs))
			memset(&irqs, 0, sizeof(irqs));
		r->rec.i = irqs.counts;
		irqs_settled(&r->rec.i);
		if (bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.vcpu_timer_dues), &(__u32){ (__u32)i }, &r->rec.due))
			memset(&r->rec.due, 0, sizeof(r->rec.due));
		r->idx = i;
		r->gone = v.since_state & VCPU_GONE;

		struct ht_vcpu_account *a = &r->rec.a;

		a->start_ns = v.start_ns;
		a->as_of_ns = since;
		for (int k = 0; k < HT_VCPU_NSTATES; k++)
			a->state_ns[k] = v.state_ns[k];
		if (r->gone || state >= HT_VCPU_NSTATES || now <= since)
			goto done;
		if (state == HT_VCPU_GUEST && (e = open_exit_of(open, nopen, v.stat.tid)) && e->exit_ns >= since &&
		    e->exit_ns < now) {
			a->state_ns[HT_VCPU_GUEST] += e->exit_ns - since;
			a->state_ns[HT_VCPU_KVM] += now - e->exit_ns;
		} else {
			a->state_ns[state] += now - since;
		}
		a->as_of_ns = now;
done:
		r->rec.w.wait_ns = a->state_ns[HT_VCPU_WAIT];
	}
	return n;
}

/* An exit opened before now that the first snapshot did not see open: the read may have missed a split. */
static bool missed_an_exit(const struct open_exit *before, size_t nbefore, const struct open_exit *after, size_t nafter,
			   __u64 now)
{
	for (size_t i = 0; i < nafter; i++) {
		const struct open_exit *b = open_exit_of(before, nbefore, after[i].tid);

		if (after[i].exit_ns < now && (!b || b->exit_ns != after[i].exit_ns))
			return true;
	}
	return false;
}

/* ht_tracer_read_exit_causes' caller. */
struct cause_read {
	ht_exit_cause_fn fn;
	void *ctx;
};

static int sum_exit_cause(void *ctx, const void *key, const void *values, int ncpus)
{
	const struct cause_read *r = ctx;
	const struct ht_exit_cause_hist *percpu = values;
	struct ht_exit_cause_hist sum = { 0 };

	for (int c = 0; c < ncpus; c++) {
		const struct ht_exit_cause_hist *h = &percpu[c];

		sum.count += h->count;
		sum.kvm_ns = ht_sat_add(sum.kvm_ns, h->kvm_ns);
		sum.vmm_count += h->vmm_count;
		sum.vmm_ns = ht_sat_add(sum.vmm_ns, h->vmm_ns);
		for (int s = 0; s < HT_EXIT_SLOTS; s++) {
			sum.kvm_slots[s] += h->kvm_slots[s];
			sum.vmm_slots[s] += h->vmm_slots[s];
		}
	}
	if (sum.count)
		r->fn(r->ctx, key, &sum);
	return 0;
}

int ht_tracer_read_exit_causes(struct ht_tracer *t, ht_exit_cause_fn fn, void *ctx)
{
	struct cause_read r = { .fn = fn, .ctx = ctx };

	/* Causes are deleted only between reads (ht_tracer_free_vms, this thread): a batch walk sees each once. */
	return ht_tracer_read_hash(t, bpf_map__fd(t->skel->maps.exit_causes), sizeof(struct ht_exit_cause_key),
				   sizeof(struct ht_exit_cause_hist), true, sum_exit_cause, &r);
}

int ht_tracer_read_vcpu_waits(const struct ht_tracer *t, ht_vcpu_wait_fn fn, void *ctx)
{
	struct open_exit before[HT_MAX_CPUS], after[HT_MAX_CPUS];
	struct thread_read *reads;
	size_t n = 0;

	if (!t->vcpu_thread_table)
		return 0;
	/* As many as the marked entries: a thread's read holds its halts' histograms, a kilobyte. */
	size_t cap = 0;

	for (size_t i = 0; i < t->vcpu_threads; i++)
		cap += __atomic_load_n(&t->vcpu_thread_used->used[i], __ATOMIC_ACQUIRE) != 0;
	if (!cap)
		return 0;
	reads = calloc(cap, sizeof(*reads));
	if (!reads)
		return -ENOMEM;
	/*
	 * The time of the read is taken before anything is copied: a state
	 * current in a copy began before the copy and lasted at least until
	 * it, so crediting it up to max(now, its start) never credits time a
	 * later read takes back (each state's time only grows). The open exits
	 * are read before the threads and again after: one that opened before
	 * now and was not seen the first time is read again (a few
	 * nanoseconds' window of a write not yet seen; tries are bounded).
	 */
	for (int tries = 0; tries < 100; tries++) {
		__u64 now = ht_monotonic_ns();
		size_t nbefore = snapshot_open_exits(t, before);

		n = read_accounts(t, now, before, nbefore, reads, cap);
		if (!missed_an_exit(before, nbefore, after, snapshot_open_exits(t, after), now))
			break;
	}
	for (size_t i = 0; i < n; i++) {
		fn(ctx, &reads[i].rec, reads[i].gone);
		/* Read once with its last numbers: its entry is free for another thread (unmarked first: BPF marks it when it takes it). */
		if (reads[i].gone) {
			__atomic_store_n(&t->vcpu_thread_used->used[reads[i].idx], 0, __ATOMIC_RELEASE);
			__atomic_store_n(&t->vcpu_thread_table[reads[i].idx].in_use, VCPU_ENTRY_FREE, __ATOMIC_RELEASE);
		}
	}
	free(reads);
	return 0;
}

int ht_tracer_read_open_exits(const struct ht_tracer *t, ht_open_exit_fn fn, void *ctx)
{
	struct vcpu_thread v;

	for (unsigned int cpu = 0; cpu < HT_MAX_CPUS; cpu++) {
		const struct vcpu_state *slot = &t->skel->bss->cpu_states[cpu];

		if (!slot->exit_open)
			continue;
		struct ht_exit_key k = { .pid = (__u32)(slot->owner >> 32), .vcpu = slot->exit_vcpu,
					 .isa = slot->exit_isa, .reason = slot->exit_reason };
		fn(ctx, &k);
	}
	for (size_t i = 0; t->vcpu_thread_table && i < t->vcpu_threads; i++) {
		if (!t->vcpu_thread_used->used[i] || !copy_vcpu_thread(&t->vcpu_thread_table[i], &v) || !v.exit_open ||
		    (v.since_state & VCPU_GONE))
			continue;
		struct ht_exit_key k = { .pid = v.stat.pid, .vcpu = v.stat.vcpu, .isa = v.exit_isa,
					 .reason = v.exit_reason };
		fn(ctx, &k);
	}
	return 0;
}


int ht_tracer_read_boot_vms(const struct ht_tracer *t, ht_boot_vm_fn fn, void *ctx)
{
	int fd = bpf_map__fd(t->skel->maps.boot_vms);
	__u32 key = 0, next;
	struct ht_boot_vm vm;
	bool first = true;

	while (bpf_map_get_next_key(fd, first ? NULL : &key, &next) == 0) {
		first = false;
		key = next;
		/* ENOENT: freed since the key was found; nothing to read. */
		if (bpf_map_lookup_elem(fd, &key, &vm))
			continue;
		fn(ctx, key, &vm);
	}
	return errno == ENOENT || first ? 0 : -errno;
}

int ht_tracer_free_boot_vm(const struct ht_tracer *t, __u32 pid)
{
	return bpf_map_delete_elem(bpf_map__fd(t->skel->maps.boot_vms), &pid) && errno != ENOENT ? -errno : 0;
}
