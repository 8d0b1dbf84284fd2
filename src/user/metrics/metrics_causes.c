// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "metrics/metrics_causes.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "common/hashmap.h"
#include "exits/exit_causes.h"
#include "exits/exit_reasons.h"
#include "metrics/metrics_exposition.h"


int ht_metrics_causes_init(struct ht_metrics_causes *c)
{
	memset(c, 0, sizeof(*c));
	c->sets = calloc(HT_METRICS_MAX_CAUSE_SETS, sizeof(*c->sets));
	c->vms = calloc(HT_METRICS_MAX_CAUSE_SETS, sizeof(*c->vms));
	if (c->sets && c->vms)
		return 0;
	ht_metrics_causes_free(c);
	return -ENOMEM;
}

void ht_metrics_causes_free(struct ht_metrics_causes *c)
{
	free(c->sets);
	free(c->vms);
	memset(c, 0, sizeof(*c));
}

void ht_metrics_causes_copy(struct ht_metrics_causes *dst, const struct ht_metrics_causes *src)
{
	struct ht_metrics_cause_set *sets = dst->sets;
	struct ht_metrics_cause_vm *vms = dst->vms;

	if (sets && src->sets)
		memcpy(sets, src->sets, src->n * sizeof(*sets));
	*dst = *src;
	dst->sets = sets;
	dst->vms = vms;
	if (!sets)
		dst->n = 0;
}

/* Label sets found through a hash map (keys point to sets, or to a probe): one lookup per cause. */
static size_t hash_set(long key, void *ctx)
{
	const struct ht_metrics_cause_set *x = (const struct ht_metrics_cause_set *)key;

	(void)ctx;
	return (size_t)ht_hash_mix(ht_hash_mix(ht_hash_bytes(x->vm, strlen(x->vm)), ht_hash_bytes(x->reason, strlen(x->reason))),
				   ht_hash_bytes(x->cause, strlen(x->cause)));
}

static bool equal_set(long a, long b, void *ctx)
{
	const struct ht_metrics_cause_set *x = (const struct ht_metrics_cause_set *)a, *y = (const struct ht_metrics_cause_set *)b;

	(void)ctx;
	return !strcmp(x->cause, y->cause) && !strcmp(x->reason, y->reason) && !strcmp(x->vm, y->vm);
}

/* VMs found by their label (keys point to a VM's label). */
/* The VM labelled vm, made on first sight; NULL if c->vms is full (as many VMs as sets) or out of memory. */
static struct ht_metrics_cause_vm *vm_of(struct ht_metrics_causes *c, struct ht_hashmap *vms, size_t *nvms,
					 const char *vm)
{
	long found;

	if (ht_hashmap_find(vms, (long)vm, &found))
		return &c->vms[found];
	if (*nvms == HT_METRICS_MAX_CAUSE_SETS)
		return NULL;
	struct ht_metrics_cause_vm *v = &c->vms[*nvms];
	memset(v, 0, sizeof(*v));
	memcpy(v->vm, vm, sizeof(v->vm));
	if (ht_hashmap_insert(vms, (long)v->vm, (long)*nvms, HT_HASHMAP_ADD, NULL, NULL))
		return NULL;
	(*nvms)++;
	return v;
}

/* A new set of (vm, reason, cause); NULL past the cap (the caller counts it as other). */
static struct ht_metrics_cause_set *new_set(struct ht_metrics_causes *c, struct ht_hashmap *index,
					    const struct ht_metrics_cause_set *probe)
{
	if (c->n == HT_METRICS_MAX_CAUSE_SETS)
		return NULL;
	struct ht_metrics_cause_set *x = &c->sets[c->n];
	memset(x, 0, sizeof(*x));
	memcpy(x->vm, probe->vm, sizeof(x->vm));
	memcpy(x->reason, probe->reason, sizeof(x->reason));
	memcpy(x->cause, probe->cause, sizeof(x->cause));
	if (ht_hashmap_insert(index, (long)x, (long)x, HT_HASHMAP_ADD, NULL, NULL))
		return NULL; /* out of memory: counted as other, as past the cap */
	c->n++;
	return x;
}

/*
 * The set of (vm, reason, cause): found, or made on first sight within
 * the VM's share, or past it the VM's own "other" set (*vm_other set);
 * NULL past the cap of all sets (the caller counts it as other).
 */
static struct ht_metrics_cause_set *set_of(struct ht_metrics_causes *c, struct ht_hashmap *index,
					   struct ht_hashmap *vms, size_t *nvms,
					   const struct ht_metrics_cause_set *probe, bool *vm_other)
{
	struct ht_metrics_cause_vm *v;
	struct ht_metrics_cause_set *x;
	long found;

	*vm_other = false;
	if (ht_hashmap_find(index, (long)probe, &found))
		return (struct ht_metrics_cause_set *)found;
	if (!(v = vm_of(c, vms, nvms, probe->vm)))
		return NULL;
	/* The last set of the share is the VM's "other", made when the share is full. */
	if (v->sets < HT_METRICS_CAUSE_SETS_PER_VM - 1) {
		if ((x = new_set(c, index, probe)))
			v->sets++;
		return x;
	}
	if (!v->other) {
		struct ht_metrics_cause_set other;

		memcpy(other.vm, probe->vm, sizeof(other.vm));
		snprintf(other.reason, sizeof(other.reason), "other");
		snprintf(other.cause, sizeof(other.cause), "other");
		/* A cause already named "other" of a reason named "other" is none of the VM's: none is. */
		if (ht_hashmap_find(index, (long)&other, &found))
			v->other = (struct ht_metrics_cause_set *)found;
		else if ((v->other = new_set(c, index, &other)))
			v->sets++;
	}
	*vm_other = v->other != NULL;
	return v->other;
}

/* Sums stop at UINT64_MAX rather than wrap, as the exit table's. */
static void set_add(struct ht_metrics_cause_set *x, const struct ht_exit_cause_hist *h)
{
	for (unsigned int k = 0; k < HT_EXIT_SLOTS; k++) {
		x->kvm_buckets[k] = ht_sat_add(x->kvm_buckets[k], h->kvm_slots[k]);
		x->vmm_buckets[k] = ht_sat_add(x->vmm_buckets[k], h->vmm_slots[k]);
	}
	x->count = ht_sat_add(x->count, h->count);
	x->kvm_ns = ht_sat_add(x->kvm_ns, h->kvm_ns);
	x->vmm_count = ht_sat_add(x->vmm_count, h->vmm_count);
	x->vmm_ns = ht_sat_add(x->vmm_ns, h->vmm_ns);
}

void ht_metrics_causes_set(struct ht_metrics_causes *c, const struct ht_exit_cause_table *t,
			   bool (*vm_label_of)(char *out, uint32_t pid, void *ctx), void *ctx)
{
	struct ht_hashmap index = HT_HASHMAP_INIT(hash_set, equal_set, NULL);
	struct ht_hashmap vms = HT_HASHMAP_INIT(ht_hash_str, ht_equal_str, NULL);
	struct ht_metrics_cause_set probe;
	size_t nvms = 0;
	bool vm_other;

	if (!c->sets || !c->vms)
		return;
	c->n = 0;
	c->other_used = false;
	memset(&c->other, 0, sizeof(c->other));
	c->overflow_exits = 0;
	c->vm_overflow_exits = 0;
	c->lost = t->lost;
	c->not_theirs = t->not_theirs;
	for (size_t i = 0; i < t->n; i++) {
		const struct ht_exit_cause_row *r = &t->rows[i];

		if (!vm_label_of(probe.vm, r->key.pid, ctx))
			continue;
		ht_exit_reason_format(probe.reason, sizeof(probe.reason), r->key.isa, r->key.reason);
		ht_exit_cause_format(probe.cause, sizeof(probe.cause), &r->key);
		struct ht_metrics_cause_set *x = set_of(c, &index, &vms, &nvms, &probe, &vm_other);
		if (!x) {
			x = &c->other;
			c->other_used = true;
			c->overflow_exits = ht_sat_add(c->overflow_exits, r->h.count);
		} else if (vm_other) {
			c->vm_overflow_exits = ht_sat_add(c->vm_overflow_exits, r->h.count);
		}
		set_add(x, &r->h);
	}
	ht_hashmap_clear(&index);
	ht_hashmap_clear(&vms);
}

static int cmp_sets(const void *a, const void *b)
{
	const struct ht_metrics_cause_set *x = a, *y = b;
	int d = strcmp(x->vm, y->vm);

	if (!d)
		d = strcmp(x->reason, y->reason);
	return d ? d : strcmp(x->cause, y->cause);
}

static void labels_of(const struct ht_metrics_cause_set *x, bool other, char *out, size_t len)
{
	char vm[2 * HT_METRICS_VM_LABEL], reason[2 * sizeof(x->reason)], cause[2 * sizeof(x->cause)];

	if (other) {
		snprintf(out, len, "vm=\"other\",reason=\"other\",cause=\"other\"");
		return;
	}
	if (!ht_metrics_escape_label(x->vm, vm, sizeof(vm)))
		vm[0] = '\0';
	if (!ht_metrics_escape_label(x->reason, reason, sizeof(reason)))
		reason[0] = '\0';
	if (!ht_metrics_escape_label(x->cause, cause, sizeof(cause)))
		cause[0] = '\0';
	snprintf(out, len, "vm=\"%s\",reason=\"%s\",cause=\"%s\"", vm, reason, cause);
}

/* Which of a set's two histograms a writer of cause sets writes. */
enum cause_histogram { CAUSE_KVM, CAUSE_VMM };

static void write_cause_set(FILE *out, const void *set, bool other, void *ctx)
{
	const struct ht_metrics_cause_set *x = set;
	char labels[2 * HT_METRICS_VM_LABEL + 2 * 48 + 2 * 96 + 64];

	labels_of(x, other, labels, sizeof(labels));
	if (*(const enum cause_histogram *)ctx == CAUSE_KVM)
		ht_metrics_histogram(out, "hypertrace_exit_cause_kvm_seconds", labels, x->kvm_buckets, HT_EXIT_SLOTS - 1,
				     ht_exit_slot_high, x->count, &x->kvm_ns);
	else
		ht_metrics_histogram(out, "hypertrace_exit_cause_vmm_seconds", labels, x->vmm_buckets, HT_EXIT_SLOTS - 1,
				     ht_exit_slot_high, x->vmm_count, &x->vmm_ns);
}

void ht_metrics_causes_render(struct ht_metrics_causes *c, FILE *out)
{
	enum cause_histogram kvm = CAUSE_KVM, vmm = CAUSE_VMM;

	if (!c->sets)
		return;
	qsort(c->sets, c->n, sizeof(*c->sets), cmp_sets);
	ht_metrics_family(out, "hypertrace_exit_cause_kvm_seconds", "histogram",
			  "Time in KVM per VM exit (kvm_exit to the return to user space, or to kvm_entry), by VM, exit reason and cause (I/O port, MMIO address, MSR, CPUID leaf, hypercall nr; at most 16 per VM and reason, the rest cause=\"other\"; at most 128 label sets per VM, the rest reason=\"other\",cause=\"other\").");
	ht_metrics_each_set(out, c->sets, c->n, sizeof(*c->sets), &c->other, c->other_used, write_cause_set, &kvm);
	ht_metrics_family(out, "hypertrace_exit_cause_vmm_seconds", "histogram",
			  "Time in the VMM per VM exit that went to user space (kvm_userspace_exit to kvm_entry), by VM, exit reason and cause.");
	ht_metrics_each_set(out, c->sets, c->n, sizeof(*c->sets), &c->other, c->other_used, write_cause_set, &vmm);
	ht_metrics_counter(out, "hypertrace_exit_causes_lost_total",
			   "VM exits whose cause the BPF side could not count (its cause table full).", c->lost);
	ht_metrics_counter(out, "hypertrace_exit_causes_not_theirs_total",
			   "Cause events KVM reported during VM exits whose cause they cannot be (its own lookups), counted apart.",
			   c->not_theirs);
	ht_metrics_counter(out, "hypertrace_exit_cause_metrics_overflow_exits_total",
			   "Exits counted under cause label set \"other\" because the label sets were at their cap.",
			   c->overflow_exits);
	ht_metrics_counter(out, "hypertrace_exit_cause_metrics_vm_overflow_exits_total",
			   "Exits counted under their VM's own label set reason=\"other\",cause=\"other\" because that VM's label sets were at its share.",
			   c->vm_overflow_exits);
}
