// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Bounded counters and log2 histograms for `record --metrics`, and their exposition text. */
#include "metrics/metrics_registry.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "exits/exit_reasons.h"
#include "exits/vcpu_wakeups.h"
#include "common/escape.h"
#include "common/hashmap.h"
#include "common/util.h"

/* The index's keys: pointers to sets (in r->sets, or a probe), compared by their labels. */
static size_t set_key_hash(long key, void *ctx)
{
	const struct ht_metrics_set *s = (const struct ht_metrics_set *)key;

	(void)ctx;
	return (size_t)ht_hash_mix(ht_hash_mix(ht_hash_u64(s->vm_key), s->vcpu), s->nr);
}

static bool set_is(const struct ht_metrics_set *s, uint32_t vm_key, uint16_t vcpu, uint32_t nr)
{
	return s->vm_key == vm_key && s->vcpu == vcpu && s->nr == nr;
}

static bool set_key_equal(long a, long b, void *ctx)
{
	const struct ht_metrics_set *x = (const struct ht_metrics_set *)a, *y = (const struct ht_metrics_set *)b;

	(void)ctx;
	return set_is(x, y->vm_key, y->vcpu, y->nr);
}

int ht_metrics_registry_init(struct ht_metrics_registry *r, size_t max_sets)
{
	memset(r, 0, sizeof(*r));
	ht_hashmap_init(&r->index, set_key_hash, set_key_equal, NULL);
	r->max_sets = max_sets ? max_sets : HT_METRICS_DEFAULT_MAX_SETS;
	if (r->max_sets > UINT32_MAX / 4)
		return -EINVAL;
	r->sets = calloc(r->max_sets, sizeof(*r->sets));
	if (!r->sets)
		return -ENOMEM;
	r->version = "";
	r->mode = "";
	return 0;
}

void ht_metrics_registry_free(struct ht_metrics_registry *r)
{
	free(r->sets);
	ht_hashmap_clear(&r->index);
	free(r->exits.sets);
	free(r->exits.vcpus);
	ht_metrics_causes_free(&r->exits.causes);
	r->sets = NULL;
	memset(&r->exits, 0, sizeof(r->exits));
}

int ht_metrics_registry_enable_exits(struct ht_metrics_registry *r, bool per_vcpu)
{
	r->exits.sets = calloc(HT_METRICS_MAX_EXIT_SETS, sizeof(*r->exits.sets));
	r->exits.vcpus = calloc(HT_METRICS_MAX_VCPU_SETS, sizeof(*r->exits.vcpus));
	if (!r->exits.sets || !r->exits.vcpus || ht_metrics_causes_init(&r->exits.causes))
		return -ENOMEM;
	r->exits.on = true;
	r->exits.per_vcpu = per_vcpu;
	return 0;
}

/* What a vm_label callback returns for a VM whose numbers are left out: told apart by its address. */
const char ht_metrics_vm_skip[] = "";

/* The label value of process pid's VM into out; false: its numbers are left out. */
static bool vm_label_of(char *out, uint32_t pid, const char *(*vm_label)(void *, uint32_t), void *ctx)
{
	const char *name = vm_label ? vm_label(ctx, pid) : NULL;

	if (name == ht_metrics_vm_skip)
		return false;
	ht_metrics_vm_label(name, pid, out);
	return true;
}

/*
 * The label sets of one ht_metrics_set_exits, found through hash maps (keys
 * point to sets, or to a probe): a table of as many series as BPF holds
 * costs one lookup each, not a scan of up to 1024 sets.
 */
static size_t hash_exit_set(long key, void *ctx)
{
	const struct ht_metrics_exit_set *x = (const struct ht_metrics_exit_set *)key;

	(void)ctx;
	return (size_t)ht_hash_mix(ht_hash_mix(ht_hash_bytes(x->vm, strlen(x->vm)), ht_hash_bytes(x->reason, strlen(x->reason))),
				   (uint32_t)x->vcpu);
}

static bool equal_exit_set(long a, long b, void *ctx)
{
	const struct ht_metrics_exit_set *x = (const struct ht_metrics_exit_set *)a, *y = (const struct ht_metrics_exit_set *)b;

	(void)ctx;
	return x->vcpu == y->vcpu && !strcmp(x->reason, y->reason) && !strcmp(x->vm, y->vm);
}

static size_t hash_vcpu_set(long key, void *ctx)
{
	const struct ht_metrics_vcpu_set *v = (const struct ht_metrics_vcpu_set *)key;

	(void)ctx;
	return (size_t)ht_hash_mix(ht_hash_bytes(v->vm, strlen(v->vm)), v->vcpu);
}

static bool equal_vcpu_set(long a, long b, void *ctx)
{
	const struct ht_metrics_vcpu_set *x = (const struct ht_metrics_vcpu_set *)a, *y = (const struct ht_metrics_vcpu_set *)b;

	(void)ctx;
	return x->vcpu == y->vcpu && !strcmp(x->vm, y->vm);
}

/* A VM's exit label sets while they are made: how many, and its own "other" set. */
struct vm_exit_sets {
	char vm[HT_METRICS_VM_LABEL];
	size_t sets;
	struct ht_metrics_exit_set *other;
};

/* The VMs of one ht_metrics_set_exits, found by their label. */
struct vm_exit_shares {
	struct vm_exit_sets *v; /* HT_METRICS_MAX_EXIT_SETS: no more VMs can have a set */
	size_t n;
	struct ht_hashmap index; /* keys point to v[i].vm */
};

/* The VM labelled vm, made on first sight; NULL if out of room or memory (its series go to vm="other"). */
static struct vm_exit_sets *vm_exit_sets_of(struct vm_exit_shares *vs, const char *vm)
{
	long found;

	if (!vs->v)
		return NULL;
	if (ht_hashmap_find(&vs->index, (long)vm, &found))
		return &vs->v[found];
	if (vs->n == HT_METRICS_MAX_EXIT_SETS)
		return NULL;
	struct vm_exit_sets *v = &vs->v[vs->n];
	memset(v, 0, sizeof(*v));
	snprintf(v->vm, sizeof(v->vm), "%s", vm);
	if (ht_hashmap_insert(&vs->index, (long)v->vm, (long)vs->n, HT_HASHMAP_ADD, NULL, NULL))
		return NULL;
	vs->n++;
	return v;
}

static struct ht_metrics_exit_set *new_exit_set(struct ht_metrics_exits *e, struct ht_hashmap *index,
						const struct ht_metrics_exit_set *probe)
{
	int32_t vcpu = probe->vcpu;

	if (e->nsets == HT_METRICS_MAX_EXIT_SETS) {
		e->other_used = true;
		return NULL;
	}
	struct ht_metrics_exit_set *x = &e->sets[e->nsets];
	memset(x, 0, sizeof(*x));
	snprintf(x->vm, sizeof(x->vm), "%s", probe->vm);
	snprintf(x->reason, sizeof(x->reason), "%s", probe->reason);
	x->vcpu = vcpu;
	if (ht_hashmap_insert(index, (long)x, (long)x, HT_HASHMAP_ADD, NULL, NULL)) {
		e->other_used = true; /* out of memory: counted as other, as past the cap */
		return NULL;
	}
	e->nsets++;
	return x;
}

/*
 * The set of (vm, reason, vcpu): found, or made on first sight within the
 * VM's share, or past it the VM's own "other" set (*vm_other set); NULL
 * past the cap of all sets (the caller counts it under vm="other").
 */
static struct ht_metrics_exit_set *exit_set(struct ht_metrics_exits *e, struct ht_hashmap *index,
					    struct vm_exit_shares *vs, const char *vm, const char *reason, int32_t vcpu,
					    bool *vm_other)
{
	struct ht_metrics_exit_set probe;
	struct vm_exit_sets *v;
	struct ht_metrics_exit_set *x;
	long found;

	*vm_other = false;
	snprintf(probe.vm, sizeof(probe.vm), "%s", vm);
	snprintf(probe.reason, sizeof(probe.reason), "%s", reason);
	probe.vcpu = vcpu;
	if (ht_hashmap_find(index, (long)&probe, &found))
		return (struct ht_metrics_exit_set *)found;
	if (!(v = vm_exit_sets_of(vs, vm))) {
		e->other_used = true;
		return NULL;
	}
	/* The last set of the share is the VM's "other", made when the share is full. */
	if (v->sets < HT_METRICS_EXIT_SETS_PER_VM - 1) {
		if ((x = new_exit_set(e, index, &probe)))
			v->sets++;
		return x;
	}
	if (!v->other) {
		snprintf(probe.reason, sizeof(probe.reason), "other");
		probe.vcpu = e->per_vcpu ? HT_METRICS_VCPU_OTHER : -1;
		/* No exit reason is named "other": a set found so is the VM's own "other". */
		if (ht_hashmap_find(index, (long)&probe, &found))
			v->other = (struct ht_metrics_exit_set *)found;
		else if ((v->other = new_exit_set(e, index, &probe)))
			v->sets++;
	}
	*vm_other = v->other != NULL;
	return v->other;
}

static struct ht_metrics_vcpu_set *vcpu_set(struct ht_metrics_exits *e, struct ht_hashmap *index, const char *vm,
					    uint32_t vcpu)
{
	struct ht_metrics_vcpu_set probe;
	long found;

	snprintf(probe.vm, sizeof(probe.vm), "%s", vm);
	probe.vcpu = vcpu;
	if (ht_hashmap_find(index, (long)&probe, &found))
		return (struct ht_metrics_vcpu_set *)found;
	if (e->nvcpus == HT_METRICS_MAX_VCPU_SETS) {
		e->vcpu_other_used = true;
		return &e->vcpu_other;
	}
	struct ht_metrics_vcpu_set *v = &e->vcpus[e->nvcpus];
	memset(v, 0, sizeof(*v));
	snprintf(v->vm, sizeof(v->vm), "%s", probe.vm);
	v->vcpu = vcpu;
	if (ht_hashmap_insert(index, (long)v, (long)v, HT_HASHMAP_ADD, NULL, NULL)) {
		e->vcpu_other_used = true;
		return &e->vcpu_other;
	}
	e->nvcpus++;
	return v;
}

/* Sums stop at UINT64_MAX rather than wrap, as the exit table's (ht_sat_add). */
static void exit_set_add(struct ht_metrics_exit_set *x, const struct ht_exit_series *s)
{
	for (unsigned int k = 0; k < HT_EXIT_SLOTS; k++) {
		uint64_t *b = &x->buckets[k < HT_METRICS_EXIT_BUCKETS ? k : HT_METRICS_EXIT_BUCKETS];
		*b = ht_sat_add(*b, s->h.slots[k]);
	}
	x->count = ht_sat_add(x->count, s->h.count);
	x->sum_ns = ht_sat_add(x->sum_ns, s->h.total_ns);
}

/* vm_label_of for the causes (metrics_causes.c): the same label values as the series'. */
struct cause_labels {
	const char *(*vm_label)(void *ctx, uint32_t pid);
	void *ctx;
};

static bool cause_vm_label(char *out, uint32_t pid, void *ctx)
{
	const struct cause_labels *cl = ctx;

	return vm_label_of(out, pid, cl->vm_label, cl->ctx);
}

void ht_metrics_set_exits(struct ht_metrics_registry *r, const struct ht_exit_table *t,
			  const char *(*vm_label)(void *ctx, uint32_t pid), void *ctx)
{
	struct ht_metrics_exits *e = &r->exits;
	char vm[HT_METRICS_VM_LABEL], reason[48];
	uint32_t last_pid = 0;
	bool have_vm = false, shown = false;
	struct ht_hashmap sets = HT_HASHMAP_INIT(hash_exit_set, equal_exit_set, NULL);
	struct ht_hashmap vcpus = HT_HASHMAP_INIT(hash_vcpu_set, equal_vcpu_set, NULL);
	struct vm_exit_shares vs = { .index = HT_HASHMAP_INIT(ht_hash_str, ht_equal_str, NULL) };
	bool vm_other;

	if (!e->on)
		return;
	/* Out of memory: no VM has a set, every series is summed under vm="other". */
	vs.v = calloc(HT_METRICS_MAX_EXIT_SETS, sizeof(*vs.v));
	e->vm_overflow_exits = 0;
	e->nsets = e->nvcpus = 0;
	e->other_used = e->vcpu_other_used = false;
	memset(&e->other, 0, sizeof(e->other));
	memset(&e->vcpu_other, 0, sizeof(e->vcpu_other));
	e->overflow_exits = 0;
	e->lost = t->lost_series_full + t->lost_no_thread;
	e->share_series_over = t->share_series_over;
	e->share_causes_over = t->share_causes_over;
	e->share_threads_over = t->share_threads_over;
	for (size_t i = 0; i < t->nseries; i++) {
		const struct ht_exit_series *s = &t->series[i];

		if (!have_vm || s->key.pid != last_pid) {
			shown = vm_label_of(vm, s->key.pid, vm_label, ctx);
			last_pid = s->key.pid;
			have_vm = true;
		}
		if (!shown)
			continue;
		ht_exit_reason_format(reason, sizeof(reason), s->key.isa, s->key.reason);
		struct ht_metrics_exit_set *x = exit_set(e, &sets, &vs, vm, reason,
							 e->per_vcpu ? (int32_t)s->key.vcpu : -1, &vm_other);
		if (!x) {
			x = &e->other;
			e->overflow_exits += s->h.count;
		} else if (vm_other) {
			e->vm_overflow_exits += s->h.count;
		}
		exit_set_add(x, s);
	}
	have_vm = false;
	for (size_t i = 0; i < t->nthreads; i++) {
		const struct ht_vcpu_wait *w = &t->threads[i].w;

		if (!have_vm || w->pid != last_pid) {
			shown = vm_label_of(vm, w->pid, vm_label, ctx);
			last_pid = w->pid;
			have_vm = true;
		}
		if (!shown)
			continue;
		struct ht_metrics_vcpu_set *v = vcpu_set(e, &vcpus, vm, w->vcpu);
		v->wait_ns += w->wait_ns;
		v->preemptions += w->preempt_count;
		for (int k = 0; k < HT_VCPU_NSTATES; k++)
			v->state_ns[k] += t->threads[i].a.state_ns[k];
		const struct ht_vcpu_halts *h = &t->threads[i].h;

		v->halts.halts += h->halts;
		v->halts.polled += h->polled;
		v->halts.caught += h->caught;
		v->halts.caught_ns += h->caught_ns;
		v->halts.slept += h->slept;
		v->halts.slept_ns += h->slept_ns;
		v->halts.slept_poll_ns += h->slept_poll_ns;
		ht_wakeups_add(&v->halts.wake, &h->wake);
		ht_irqs_add(&v->irqs, &t->threads[i].irqs);
		ht_timer_due_add(&v->due, &t->threads[i].due);
	}
	ht_hashmap_clear(&sets);
	ht_hashmap_clear(&vcpus);
	ht_hashmap_clear(&vs.index);
	free(vs.v);
	struct cause_labels cl = { .vm_label = vm_label, .ctx = ctx };
	ht_metrics_causes_set(&e->causes, &t->causes, cause_vm_label, &cl);
	/* Stable output: sets sorted by their labels at render time (see ht_metrics_render). */
}

static void log_overflow(struct ht_metrics_registry *r)
{
	r->other_used = true;
	if (r->overflow_logged || !r->log)
		return;
	r->overflow_logged = true;
	fprintf(r->log, "hypertrace-bpf: metrics: more than %zu label sets (VM, vCPU, nr): the hypercalls of further ones are counted under vm=\"other\" (hypertrace_metrics_overflow_hypercalls_total)\n",
		r->max_sets);
}

/*
 * The label set's numbers, created on first sight; NULL for the "other" set:
 * once max_sets are in use, or if its index entry cannot be allocated.
 */
static struct ht_metrics_set *find_set(struct ht_metrics_registry *r, uint32_t vm_key, const char *vm,
				       uint16_t vcpu, uint32_t nr)
{
	struct ht_metrics_set probe, *s;
	long idx;

	if (r->nsets && set_is(&r->sets[r->last], vm_key, vcpu, nr))
		return &r->sets[r->last];
	/* Only the labels of a key are read (set_key_hash, set_key_equal). */
	probe.vm_key = vm_key;
	probe.vcpu = vcpu;
	probe.nr = nr;
	if (ht_hashmap_find(&r->index, (long)&probe, &idx)) {
		r->last = (size_t)idx;
		return &r->sets[idx];
	}
	if (r->nsets == r->max_sets) {
		log_overflow(r);
		return NULL;
	}
	s = &r->sets[r->nsets];
	memset(s, 0, sizeof(*s));
	s->vm_key = vm_key;
	snprintf(s->vm, sizeof(s->vm), "%s", vm);
	s->vcpu = vcpu;
	s->nr = nr;
	if (ht_hashmap_insert(&r->index, (long)s, (long)r->nsets, HT_HASHMAP_ADD, NULL, NULL)) {
		r->other_used = true; /* counted under "other" (and its overflow counter) as past the cap */
		return NULL;
	}
	r->last = r->nsets++;
	return s;
}

static unsigned int bucket_of(uint64_t ns)
{
	unsigned int slot = ht_hist_slot(ns);

	return slot < HT_METRICS_BUCKETS ? slot : HT_METRICS_BUCKETS;
}

static void set_add(struct ht_metrics_set *s, const uint64_t ns[HT_LAT_NSERIES])
{
	s->hypercalls++;
	for (int p = 0; p < HT_LAT_NSERIES; p++) {
		s->buckets[p][bucket_of(ns[p])]++;
		s->sum_ns[p] += ns[p];
	}
}

void ht_metrics_add_record(struct ht_metrics_registry *r, uint32_t vm_key, const char *vm,
			   const struct ht_record *rec)
{
	uint64_t ns[HT_LAT_NSERIES];
	struct ht_metrics_set *s = find_set(r, vm_key, vm, rec->vcpu_id, rec->nr);

	ns[HT_LAT_EXIT_HCALL] = rec->exit_to_hcall_ns;
	ns[HT_LAT_HCALL_ENTRY] = rec->hcall_to_entry_ns;
	ns[HT_LAT_TOTAL] = ns[HT_LAT_EXIT_HCALL] + ns[HT_LAT_HCALL_ENTRY];
	if (!s) {
		set_add(&r->other, ns);
		r->overflow_hypercalls++;
		return;
	}
	set_add(s, ns);
}

void ht_metrics_begin_aggregates(struct ht_metrics_registry *r)
{
	memset(&r->other, 0, sizeof(r->other));
	r->overflow_hypercalls = 0;
	for (size_t i = 0; i < r->nsets; i++) {
		r->sets[i].hypercalls = 0;
		memset(r->sets[i].buckets, 0, sizeof(r->sets[i].buckets));
	}
}

void ht_metrics_drop_vm(struct ht_metrics_registry *r, uint32_t vm_key)
{
	size_t kept = 0;

	/* The dropped sets' entries first, while every key still points at its own set. */
	for (size_t i = 0; i < r->nsets; i++) {
		if (r->sets[i].vm_key == vm_key) {
			r->dropped_vm_hypercalls += r->sets[i].hypercalls;
			ht_hashmap_delete(&r->index, (long)&r->sets[i], NULL, NULL);
		}
	}
	/*
	 * Then the kept ones move down, each entry repointed as its set moves:
	 * no entry ever points at a slot that holds another set. Replacing an
	 * entry's key and value never allocates.
	 */
	for (size_t i = 0; i < r->nsets; i++) {
		if (r->sets[i].vm_key == vm_key)
			continue;
		if (kept != i) {
			r->sets[kept] = r->sets[i];
			ht_hashmap_insert(&r->index, (long)&r->sets[kept], (long)kept, HT_HASHMAP_UPDATE, NULL, NULL);
		}
		kept++;
	}
	if (kept == r->nsets)
		return;
	r->nsets = kept;
	r->last = 0;
}

void ht_metrics_vm_label(const char *guest_name, uint32_t pid, char *out)
{
	if (guest_name && guest_name[0])
		ht_escape(out, HT_METRICS_VM_LABEL, guest_name, HT_ESC_TEXT);
	else
		snprintf(out, HT_METRICS_VM_LABEL, "pid %" PRIu32, pid);
}

static void slots_to_buckets(const __u64 slots[HT_AGG_SLOTS], uint64_t buckets[HT_METRICS_BUCKETS + 1])
{
	memset(buckets, 0, (HT_METRICS_BUCKETS + 1) * sizeof(buckets[0]));
	for (unsigned int i = 0; i < HT_AGG_SLOTS; i++)
		buckets[i < HT_METRICS_BUCKETS ? i : HT_METRICS_BUCKETS] += slots[i];
}

void ht_metrics_set_aggregate(struct ht_metrics_registry *r, uint32_t vm_key, const char *vm, uint16_t vcpu,
			      uint32_t nr, const struct ht_agg_hist *cumulative)
{
	static const int phase_of[HT_AGG_NSERIES] = {
		[HT_AGG_TOTAL] = HT_LAT_TOTAL,
		[HT_AGG_EXIT_HCALL] = HT_LAT_EXIT_HCALL,
		[HT_AGG_HCALL_ENTRY] = HT_LAT_HCALL_ENTRY,
	};
	struct ht_metrics_set *s = find_set(r, vm_key, vm, vcpu, nr);
	uint64_t buckets[HT_METRICS_BUCKETS + 1];
	uint64_t n = 0;

	for (unsigned int i = 0; i < HT_AGG_SLOTS; i++)
		n += cumulative->slots[HT_AGG_TOTAL][i];
	for (int a = 0; a < HT_AGG_NSERIES; a++) {
		int p = phase_of[a];

		slots_to_buckets(cumulative->slots[a], buckets);
		for (unsigned int i = 0; i <= HT_METRICS_BUCKETS; i++)
			(s ? s : &r->other)->buckets[p][i] += buckets[i];
	}
	if (s) {
		s->hypercalls += n;
	} else {
		r->other.hypercalls += n;
		r->overflow_hypercalls += n;
	}
}

void ht_metrics_registry_copy(struct ht_metrics_registry *dst, const struct ht_metrics_registry *src)
{
	struct ht_metrics_set *sets = dst->sets;
	struct ht_hashmap index = dst->index;
	struct ht_metrics_exit_set *exit_sets = dst->exits.sets;
	struct ht_metrics_vcpu_set *vcpus = dst->exits.vcpus;
	struct ht_metrics_causes causes = dst->exits.causes;

	memcpy(sets, src->sets, src->nsets * sizeof(*sets));
	ht_metrics_causes_copy(&causes, &src->exits.causes);
	if (src->exits.on && exit_sets && vcpus) {
		memcpy(exit_sets, src->exits.sets, src->exits.nsets * sizeof(*exit_sets));
		memcpy(vcpus, src->exits.vcpus, src->exits.nvcpus * sizeof(*vcpus));
	}
	*dst = *src;
	dst->sets = sets;
	dst->index = index; /* its own, empty: a copy is rendered, never fed */
	dst->exits.sets = exit_sets;
	dst->exits.vcpus = vcpus;
	dst->exits.causes = causes;
	if (!exit_sets || !vcpus)
		dst->exits.on = false; /* a copy made without them renders none */
	dst->log = NULL;
}

static int cmp_sets(const void *a, const void *b)
{
	const struct ht_metrics_set *x = a, *y = b;
	int c = strcmp(x->vm, y->vm);

	if (c)
		return c;
	if (x->vcpu != y->vcpu)
		return x->vcpu < y->vcpu ? -1 : 1;
	return (x->nr > y->nr) - (x->nr < y->nr);
}

/* The labels of a set, without braces: vm="web1",vcpu="0",nr="1000". */
static void set_labels(const struct ht_metrics_set *s, bool other, char *out, size_t outlen)
{
	char vm[2 * HT_METRICS_VM_LABEL];

	if (other) {
		snprintf(out, outlen, "vm=\"other\",vcpu=\"other\",nr=\"other\"");
		return;
	}
	if (!ht_metrics_escape_label(s->vm, vm, sizeof(vm)))
		vm[0] = '\0';
	snprintf(out, outlen, "vm=\"%s\",vcpu=\"%u\",nr=\"%" PRIu32 "\"", vm, (unsigned int)s->vcpu, s->nr);
}

static const char *const phase_names[HT_LAT_NSERIES] = {
	[HT_LAT_TOTAL] = "exit_to_entry",
	[HT_LAT_EXIT_HCALL] = "exit_to_hypercall",
	[HT_LAT_HCALL_ENTRY] = "hypercall_to_entry",
};

static void write_hypercalls(FILE *out, const void *set, bool other, void *ctx)
{
	const struct ht_metrics_set *s = set;
	char labels[2 * HT_METRICS_VM_LABEL + 64];

	(void)ctx;
	set_labels(s, other, labels, sizeof(labels));
	fprintf(out, "hypertrace_hypercalls_total{%s} %" PRIu64 "\n", labels, s->hypercalls);
}

/* A set's histogram of each phase; ctx is the registry (are its sums exact). */
static void write_hypercall_histograms(FILE *out, const void *set, bool other, void *ctx)
{
	const struct ht_metrics_registry *r = ctx;
	const struct ht_metrics_set *s = set;
	char labels[2 * HT_METRICS_VM_LABEL + 64], phase_labels[sizeof(labels) + 64];

	set_labels(s, other, labels, sizeof(labels));
	for (int p = 0; p < HT_LAT_NSERIES; p++) {
		uint64_t count = 0;

		for (unsigned int k = 0; k <= HT_METRICS_BUCKETS; k++)
			count += s->buckets[p][k];
		snprintf(phase_labels, sizeof(phase_labels), "phase=\"%s\",%s", phase_names[p], labels);
		ht_metrics_histogram(out, "hypertrace_hypercall_duration_seconds", phase_labels, s->buckets[p],
				     HT_METRICS_BUCKETS, ht_hist_slot_high, count, r->exact_sums ? &s->sum_ns[p] : NULL);
	}
}

static const char *const drop_reasons[HT_METRICS_NDROPS] = {
	[HT_METRICS_DROP_RINGBUF_FULL] = "ringbuf_full",
	[HT_METRICS_DROP_NO_THREAD_STATE] = "no_thread_state",
	[HT_METRICS_DROP_SUPERSEDED] = "superseded",
	[HT_METRICS_DROP_AGG_GROUPS_FULL] = "histogram_groups_full",
	[HT_METRICS_DROP_MALFORMED_SAMPLE] = "malformed_sample",
};

static int cmp_exit_sets(const void *a, const void *b)
{
	const struct ht_metrics_exit_set *x = a, *y = b;
	int c = strcmp(x->vm, y->vm);

	if (!c)
		c = (x->vcpu > y->vcpu) - (x->vcpu < y->vcpu);
	return c ? c : strcmp(x->reason, y->reason);
}

static int cmp_vcpu_sets(const void *a, const void *b)
{
	const struct ht_metrics_vcpu_set *x = a, *y = b;
	int c = strcmp(x->vm, y->vm);

	return c ? c : (x->vcpu > y->vcpu) - (x->vcpu < y->vcpu);
}

/* vm="...",reason="..."[,vcpu="..."], escaped for the text format. */
static void exit_labels(const struct ht_metrics_exit_set *x, bool other, bool per_vcpu, char *out, size_t len)
{
	char vm[2 * HT_METRICS_VM_LABEL], reason[2 * sizeof(x->reason)];

	if (other) {
		snprintf(out, len, "vm=\"other\",reason=\"other\"%s", per_vcpu ? ",vcpu=\"other\"" : "");
		return;
	}
	if (!ht_metrics_escape_label(x->vm, vm, sizeof(vm)))
		vm[0] = '\0';
	if (!ht_metrics_escape_label(x->reason, reason, sizeof(reason)))
		reason[0] = '\0';
	if (per_vcpu && x->vcpu == HT_METRICS_VCPU_OTHER)
		snprintf(out, len, "vm=\"%s\",reason=\"%s\",vcpu=\"other\"", vm, reason);
	else if (per_vcpu)
		snprintf(out, len, "vm=\"%s\",reason=\"%s\",vcpu=\"%" PRId32 "\"", vm, reason, x->vcpu);
	else
		snprintf(out, len, "vm=\"%s\",reason=\"%s\"", vm, reason);
}

/* ctx: are the labels per vCPU (a bool). */
static void write_exit_histogram(FILE *out, const void *set, bool other, void *ctx)
{
	const struct ht_metrics_exit_set *x = set;
	char labels[2 * HT_METRICS_VM_LABEL + 160];

	exit_labels(x, other, *(const bool *)ctx, labels, sizeof(labels));
	ht_metrics_histogram(out, "hypertrace_exit_duration_seconds", labels, x->buckets, HT_METRICS_EXIT_BUCKETS,
			     ht_exit_slot_high, x->count, &x->sum_ns);
}

static void vcpu_labels(const struct ht_metrics_vcpu_set *v, bool other, char *out, size_t len)
{
	char vm[2 * HT_METRICS_VM_LABEL];

	if (other) {
		snprintf(out, len, "vm=\"other\",vcpu=\"other\"");
		return;
	}
	if (!ht_metrics_escape_label(v->vm, vm, sizeof(vm)))
		vm[0] = '\0';
	snprintf(out, len, "vm=\"%s\",vcpu=\"%" PRIu32 "\"", vm, v->vcpu);
}

/*
 * A family over the vCPU label sets: its head, then each set's samples,
 * written by write after the set's labels (vm, vcpu). A set that has
 * nothing for the family yet (has false) writes none.
 */
struct vcpu_family {
	const char *name, *type, *help;
	void (*write)(FILE *out, const char *name, const char *labels, const struct ht_metrics_vcpu_set *v);
	bool (*has)(const struct ht_metrics_vcpu_set *v);
};

static void write_vcpu_family_set(FILE *out, const void *set, bool other, void *ctx)
{
	const struct vcpu_family *f = ctx;
	const struct ht_metrics_vcpu_set *v = set;
	char labels[2 * HT_METRICS_VM_LABEL + 64];

	if (f->has && !f->has(v))
		return;
	vcpu_labels(v, other, labels, sizeof(labels));
	f->write(out, f->name, labels, v);
}

static void render_vcpu_families(FILE *out, const struct ht_metrics_exits *e, const struct vcpu_family *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		ht_metrics_family(out, f[i].name, f[i].type, f[i].help);
		ht_metrics_each_set(out, e->vcpus, e->nvcpus, sizeof(*e->vcpus), &e->vcpu_other, e->vcpu_other_used,
				    write_vcpu_family_set, (void *)&f[i]);
	}
}

/* One sample: name{labels} or name{labels,extra}, and its value. */
static void write_count(FILE *out, const char *name, const char *labels, const char *extra, uint64_t n)
{
	fprintf(out, "%s{%s%s%s} %" PRIu64 "\n", name, labels, extra ? "," : "", extra ? extra : "", n);
}

static void write_seconds(FILE *out, const char *name, const char *labels, const char *extra, uint64_t ns)
{
	char secs[32];

	ht_metrics_format_seconds(ns, secs, sizeof(secs));
	fprintf(out, "%s{%s%s%s} %s\n", name, labels, extra ? "," : "", extra ? extra : "", secs);
}

/* The wake-up slots are the first of the exit slots: the same edges, [2^k, 2^(k+1)) ns. */
_Static_assert(HT_WAKE_SLOTS <= HT_EXIT_SLOTS, "wake-up slots beyond the exit slots' bounds");

/* One wake-up histogram (a class's, or the timer wake-ups' from their due time); the last slot, open-ended, only in +Inf (as the exits'). */
static void write_wake_histogram(FILE *out, const char *name, const char *labels, const struct ht_vcpu_wake_hist *h)
{
	uint64_t buckets[HT_WAKE_SLOTS], sum_ns = h->total_ns;

	for (unsigned int s = 0; s < HT_WAKE_SLOTS; s++)
		buckets[s] = h->slots[s];
	ht_metrics_histogram(out, name, labels, buckets, HT_WAKE_SLOTS - 1, ht_exit_slot_high, ht_wake_count(h), &sum_ns);
}

/* A histogram per class (wake-ups', interrupts'), each with class="name". */
static void write_class_histograms(FILE *out, const char *name, const char *labels, const struct ht_vcpu_wake_hist *c,
				   int n, const char *const *class_names)
{
	char class_labels[2 * HT_METRICS_VM_LABEL + 96];

	for (int k = 0; k < n; k++) {
		snprintf(class_labels, sizeof(class_labels), "%s,class=\"%s\"", labels, class_names[k]);
		write_wake_histogram(out, name, class_labels, &c[k]);
	}
}

/* Of each class's time, the part its thread waited for a host CPU. */
static void write_class_waits(FILE *out, const char *name, const char *labels, const struct ht_vcpu_wake_hist *c,
			      int n, const char *const *class_names)
{
	char class_label[64];

	for (int k = 0; k < n; k++) {
		snprintf(class_label, sizeof(class_label), "class=\"%s\"", class_names[k]);
		write_seconds(out, name, labels, class_label, c[k].wait_ns);
	}
}

static void write_vcpu_wait(FILE *out, const char *name, const char *labels, const struct ht_metrics_vcpu_set *v)
{
	write_seconds(out, name, labels, NULL, v->wait_ns);
}

static void write_vcpu_preemptions(FILE *out, const char *name, const char *labels, const struct ht_metrics_vcpu_set *v)
{
	write_count(out, name, labels, NULL, v->preemptions);
}

/*
 * A vCPU's halts in KVM by how each ended: caught (polling caught the
 * wake-up), slept, or neither (KVM did not poll and the wake-up was
 * already there); the first two with their time. What an operator tunes
 * kvm.halt_poll_ns from, per the same bounded vm/vcpu label sets.
 */
static void write_vcpu_halts(FILE *out, const char *name, const char *labels, const struct ht_metrics_vcpu_set *v)
{
	const struct ht_vcpu_halts *h = &v->halts;
	uint64_t neither = h->halts >= h->caught + h->slept ? h->halts - h->caught - h->slept : 0;

	write_count(out, name, labels, "end=\"caught\"", h->caught);
	write_count(out, name, labels, "end=\"slept\"", h->slept);
	write_count(out, name, labels, "end=\"neither\"", neither);
}

static void write_vcpu_halt_seconds(FILE *out, const char *name, const char *labels,
				    const struct ht_metrics_vcpu_set *v)
{
	write_seconds(out, name, labels, "end=\"caught\"", v->halts.caught_ns);
	write_seconds(out, name, labels, "end=\"slept\"", v->halts.slept_ns);
}

static void write_vcpu_halts_polled(FILE *out, const char *name, const char *labels,
				    const struct ht_metrics_vcpu_set *v)
{
	write_count(out, name, labels, NULL, v->halts.polled);
}

static void write_vcpu_halt_poll_lost(FILE *out, const char *name, const char *labels,
				      const struct ht_metrics_vcpu_set *v)
{
	write_seconds(out, name, labels, NULL, v->halts.slept_poll_ns);
}

/*
 * A vCPU's wake-ups from its first one on (a class or reblocked): every
 * class then, empty ones too, so its series do not come and go with the
 * classes seen; a vCPU that never woke from a halt has none of them.
 */
static bool had_wakeups(const struct ht_metrics_vcpu_set *v)
{
	return v->halts.wake.reblocked || ht_wakeups_count(&v->halts.wake);
}

static void write_vcpu_wakeups(FILE *out, const char *name, const char *labels, const struct ht_metrics_vcpu_set *v)
{
	write_class_histograms(out, name, labels, v->halts.wake.c, HT_WAKE_NCLASSES, ht_wake_class_names);
}

static void write_vcpu_wakeup_wait(FILE *out, const char *name, const char *labels,
				   const struct ht_metrics_vcpu_set *v)
{
	write_class_waits(out, name, labels, v->halts.wake.c, HT_WAKE_NCLASSES, ht_wake_class_names);
}

static void write_vcpu_wakeups_reblocked(FILE *out, const char *name, const char *labels,
					 const struct ht_metrics_vcpu_set *v)
{
	write_count(out, name, labels, NULL, v->halts.wake.reblocked);
}

/* A vCPU's interrupts from its first acceptance on: every class then, empty ones too (as its wake-ups'). */
static bool had_irqs(const struct ht_metrics_vcpu_set *v)
{
	return v->irqs.accepted || v->irqs.level;
}

static void write_vcpu_irqs(FILE *out, const char *name, const char *labels, const struct ht_metrics_vcpu_set *v)
{
	write_class_histograms(out, name, labels, v->irqs.c, HT_IRQ_NCLASSES, ht_irq_class_names);
}

static void write_vcpu_irq_wait(FILE *out, const char *name, const char *labels, const struct ht_metrics_vcpu_set *v)
{
	write_class_waits(out, name, labels, v->irqs.c, HT_IRQ_NCLASSES, ht_irq_class_names);
}

static void write_vcpu_irqs_untimed(FILE *out, const char *name, const char *labels,
				    const struct ht_metrics_vcpu_set *v)
{
	write_count(out, name, labels, "reason=\"overlapped\"", v->irqs.overlapped);
	write_count(out, name, labels, "reason=\"stale\"", v->irqs.stale);
	write_count(out, name, labels, "reason=\"level\"", v->irqs.level);
}

/* A vCPU's timer wake-ups from their due time, from its first one on. */
static bool had_timer_due(const struct ht_metrics_vcpu_set *v)
{
	return ht_wake_count(&v->due.h) > 0;
}

static void write_vcpu_timer_due(FILE *out, const char *name, const char *labels, const struct ht_metrics_vcpu_set *v)
{
	write_wake_histogram(out, name, labels, &v->due.h);
}

static void write_vcpu_timer_due_parts(FILE *out, const char *name, const char *labels,
				       const struct ht_metrics_vcpu_set *v)
{
	write_seconds(out, name, labels, "part=\"fire\"", v->due.fire_ns);
	write_seconds(out, name, labels, "part=\"wait\"", v->due.h.wait_ns);
}

static const struct vcpu_family vcpu_wait_family[] = {
	{ "hypertrace_vcpu_wait_seconds_total", "counter",
	  "Time vCPU threads were runnable but not running (waiting for a host CPU: the guest's steal).", write_vcpu_wait, NULL },
};

/*
 * After the states: preemptions; halts and their polling; how long a
 * halted vCPU took from its wake-up to running guest code, by what woke
 * it (the latency a guest's timer or IPI sees on top of KVM's); from
 * an interrupt's acceptance to its guest running, by who sent it (a
 * halted, running or preempted vCPU alike); and from a halted vCPU's
 * timer's due time to its guest running.
 */
static const struct vcpu_family vcpu_families[] = {
	{ "hypertrace_vcpu_preemptions_total", "counter",
	  "Involuntary switch-outs of vCPU threads (preempted while runnable).", write_vcpu_preemptions, NULL },
	{ "hypertrace_vcpu_halts_total", "counter",
	  "Halts of vCPU threads in KVM by how they ended: caught (halt polling caught the wake-up), slept, neither (not polled, the wake-up already there).",
	  write_vcpu_halts, NULL },
	{ "hypertrace_vcpu_halts_polled_total", "counter",
	  "Halts of vCPU threads that KVM polled in (halt_poll_ns in force not 0): KVM's halt_attempted_poll.",
	  write_vcpu_halts_polled, NULL },
	{ "hypertrace_vcpu_halt_seconds_total", "counter",
	  "Time of vCPU threads' halts in KVM by how they ended: caught (all polling), slept (polling that failed, then the sleep).",
	  write_vcpu_halt_seconds, NULL },
	{ "hypertrace_vcpu_halt_poll_lost_seconds_total", "counter",
	  "CPU time halt polling burned in the halts of vCPU threads it did not catch, before they slept: KVM's halt_poll_fail_ns.",
	  write_vcpu_halt_poll_lost, NULL },
	{ "hypertrace_vcpu_wakeup_seconds", "histogram",
	  "Time from the wake-up of a halted vCPU thread to its guest running (sched_wakeup to the next kvm_entry), by the interrupt KVM injected first: class timer (the vCPU's local APIC timer), vector (another: an IPI, a device), none (no injection seen: a posted interrupt, or no interrupt).",
	  write_vcpu_wakeups, had_wakeups },
	{ "hypertrace_vcpu_wakeup_wait_seconds_total", "counter",
	  "Of the wake-ups of halted vCPU threads to their guest running, the time they were runnable but waiting for a host CPU, by class.",
	  write_vcpu_wakeup_wait, had_wakeups },
	{ "hypertrace_vcpu_wakeups_reblocked_total", "counter",
	  "Wake-ups of halted vCPU threads after which the thread blocked again before its guest ran (KVM found nothing to run).",
	  write_vcpu_wakeups_reblocked, NULL },
	{ "hypertrace_vcpu_irq_seconds", "histogram",
	  "Time from an interrupt's acceptance by a vCPU's local APIC (kvm_apic_accept_irq) to its guest running with it (the kvm_entry after its injection), by who sent it: class timer (the vCPU's own local APIC timer), ipi (a vCPU of the VM), device (another thread of the VM process).",
	  write_vcpu_irqs, had_irqs },
	{ "hypertrace_vcpu_irq_wait_seconds_total", "counter",
	  "Of the interrupts' time from acceptance to guest, the time their vCPU thread was runnable but waiting for a host CPU, by class.",
	  write_vcpu_irq_wait, had_irqs },
	{ "hypertrace_vcpu_irqs_untimed_total", "counter",
	  "Interrupts accepted for a vCPU but not timed: overlapped (their vector, or four others, pending already), stale (never seen injected: posted, or an APIC the guest disabled), level (level-triggered).",
	  write_vcpu_irqs_untimed, had_irqs },
	{ "hypertrace_vcpu_timer_due_seconds", "histogram",
	  "Time from when a halted vCPU's local APIC timer was due (KVM's expiry of the guest's deadline) to its guest running (the kvm_entry after the wake-up): the guest timer interrupt's latency as the host sees it, for the timer wake-ups whose expiry was seen.",
	  write_vcpu_timer_due, had_timer_due },
	{ "hypertrace_vcpu_timer_due_part_seconds_total", "counter",
	  "Of the timer wake-ups' time from their due time to guest: fire (from the due time to the wake-up: the host firing the timer) and wait (runnable, waiting for a host CPU).",
	  write_vcpu_timer_due_parts, had_timer_due },
};

/*
 * Where the vCPU threads' time went, as node_cpu_seconds_total{cpu,mode}
 * tells a host's: by VM and state, and by vCPU too with --metrics-per-vcpu.
 * The sets are sorted by (vm, vcpu): a VM's are next to each other.
 */
static void render_vcpu_seconds(FILE *out, const struct ht_metrics_exits *e)
{
	char vm[2 * HT_METRICS_VM_LABEL], secs[32];

	ht_metrics_family(out, "hypertrace_vcpu_seconds_total", "counter",
			  "Time of vCPU threads in each state: guest, kvm (KVM handling an exit), vmm (the VMM in user space), wait (runnable, no host CPU), halted, blocked; the states add up to the threads' time.");
	for (size_t i = 0; i <= e->nvcpus; i++) {
		const struct ht_metrics_vcpu_set *v = i < e->nvcpus ? &e->vcpus[i] : &e->vcpu_other;
		uint64_t sum[HT_VCPU_NSTATES] = { 0 };
		char labels[sizeof(vm) + 64];
		size_t j = i;

		if (i == e->nvcpus && !e->vcpu_other_used)
			break;
		/* Per VM: this set and the next ones of the same VM, summed. */
		for (; j <= e->nvcpus; j++) {
			const struct ht_metrics_vcpu_set *u = j < e->nvcpus ? &e->vcpus[j] : &e->vcpu_other;

			if (j > i && (e->per_vcpu || j == e->nvcpus || i == e->nvcpus || strcmp(u->vm, v->vm)))
				break;
			for (int k = 0; k < HT_VCPU_NSTATES; k++)
				sum[k] += u->state_ns[k];
		}
		if (i == e->nvcpus)
			snprintf(labels, sizeof(labels), e->per_vcpu ? "vm=\"other\",vcpu=\"other\"" : "vm=\"other\"");
		else if (e->per_vcpu)
			vcpu_labels(v, false, labels, sizeof(labels));
		else
			snprintf(labels, sizeof(labels), "vm=\"%s\"", ht_metrics_escape_label(v->vm, vm, sizeof(vm)) ? vm : "");
		for (int k = 0; k < HT_VCPU_NSTATES; k++) {
			ht_metrics_format_seconds(sum[k], secs, sizeof(secs));
			fprintf(out, "hypertrace_vcpu_seconds_total{%s,state=\"%s\"} %s\n", labels, ht_vcpu_state_names[k],
				secs);
		}
		i = j - 1;
	}
}

static void render_exits(FILE *out, struct ht_metrics_exits *e)
{
	qsort(e->sets, e->nsets, sizeof(*e->sets), cmp_exit_sets);
	qsort(e->vcpus, e->nvcpus, sizeof(*e->vcpus), cmp_vcpu_sets);
	ht_metrics_family(out, "hypertrace_exit_duration_seconds", "histogram",
			  "Time in the host per VM exit (kvm_exit to the next kvm_entry of the vCPU thread), by VM and exit reason.");
	ht_metrics_each_set(out, e->sets, e->nsets, sizeof(*e->sets), &e->other, e->other_used, write_exit_histogram,
			    &e->per_vcpu);
	render_vcpu_families(out, e, vcpu_wait_family, ARRAY_SIZE(vcpu_wait_family));
	render_vcpu_seconds(out, e);
	render_vcpu_families(out, e, vcpu_families, ARRAY_SIZE(vcpu_families));
	ht_metrics_counter(out, "hypertrace_exits_lost_total",
			   "VM exits the BPF side could not count (series or vCPU thread tables full).", e->lost);
	ht_metrics_counter(out, "hypertrace_exit_metrics_overflow_exits_total",
			   "Exits counted under vm=\"other\" because the label sets were at their cap.", e->overflow_exits);
	ht_metrics_counter(out, "hypertrace_exit_metrics_vm_overflow_exits_total",
			   "Exits counted under their VM's own label set reason=\"other\" because that VM's label sets were at its share.",
			   e->vm_overflow_exits);
	ht_metrics_family(out, "hypertrace_exit_share_refused_exits_total", "counter",
			  "VM exits whose new series, cause or vCPU thread entry a VM process's share of the BPF tables refused (series, threads: the exit lost; cause: counted under its reason's other cause, or lost).");
	fprintf(out, "hypertrace_exit_share_refused_exits_total{table=\"series\"} %" PRIu64 "\n", e->share_series_over);
	fprintf(out, "hypertrace_exit_share_refused_exits_total{table=\"causes\"} %" PRIu64 "\n", e->share_causes_over);
	fprintf(out, "hypertrace_exit_share_refused_exits_total{table=\"threads\"} %" PRIu64 "\n", e->share_threads_over);
	ht_metrics_causes_render(&e->causes, out);
}

int ht_metrics_render(struct ht_metrics_registry *r, FILE *out)
{
	char version[256], mode[64];

	if (!ht_metrics_escape_label(r->version, version, sizeof(version)) ||
	    !ht_metrics_escape_label(r->mode, mode, sizeof(mode)))
		return -EINVAL;
	qsort(r->sets, r->nsets, sizeof(*r->sets), cmp_sets);

	/* Build info carries what the binary is; how it runs is another info metric. */
	ht_metrics_family(out, "hypertrace_build_info", "gauge",
			  "The hypertrace-bpf version serving these metrics; always 1.");
	fprintf(out, "hypertrace_build_info{version=\"%s\"} 1\n", version);
	ht_metrics_family(out, "hypertrace_recording_info", "gauge",
			  "How this recording runs: mode file (a trace file) or no_file (aggregates only); always 1.");
	fprintf(out, "hypertrace_recording_info{mode=\"%s\"} 1\n", mode);

	ht_metrics_family(out, "hypertrace_hypercalls_total", "counter",
			  "Hypercalls traced, by VM (QEMU guest name, or pid N), vCPU and hypercall nr.");
	ht_metrics_each_set(out, r->sets, r->nsets, sizeof(*r->sets), &r->other, r->other_used, write_hypercalls, NULL);

	ht_metrics_family(out, "hypertrace_dropped_hypercalls_total", "counter",
			  "Hypercalls seen but not recorded, by reason.");
	for (int d = 0; d < HT_METRICS_NDROPS; d++)
		fprintf(out, "hypertrace_dropped_hypercalls_total{reason=\"%s\"} %" PRIu64 "\n",
			drop_reasons[d], r->drops[d]);

	ht_metrics_counter(out, "hypertrace_unselected_hypercalls_total",
			   "Hypercall exits whose nr was not selected (not recorded, by design).", r->unselected_nr);

	ht_metrics_counter(out, "hypertrace_metrics_overflow_hypercalls_total",
			   "Hypercalls counted under vm=\"other\" because the label sets were at their cap.",
			   r->overflow_hypercalls);
	ht_metrics_family(out, "hypertrace_metrics_label_sets_max", "gauge",
			  "Label sets (VM, vCPU, nr) kept before \"other\" takes the rest.");
	fprintf(out, "hypertrace_metrics_label_sets_max %zu\n", r->max_sets);

	ht_metrics_family(out, "hypertrace_hypercall_duration_seconds", "histogram",
			  "Hypercall latency by phase: exit_to_entry (kvm_exit to kvm_entry), exit_to_hypercall, hypercall_to_entry.");
	ht_metrics_each_set(out, r->sets, r->nsets, sizeof(*r->sets), &r->other, r->other_used,
			    write_hypercall_histograms, r);
	if (r->exits.on)
		render_exits(out, &r->exits);
	return ferror(out) ? -EIO : 0;
}
