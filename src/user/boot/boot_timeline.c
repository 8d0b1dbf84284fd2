// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "boot/boot_timeline.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "common/grow.h"

const char *const ht_boot_phase_names[HT_BOOT_NPHASES] = { "firmware", "decompressor", "kernel", "user space" };

/* x86-64's kernel half: every canonical address with bit 63 set (4- and 5-level paging alike). */
#define KERNEL_HALF (1ull << 63)

enum ht_boot_phase ht_boot_phase_of(uint64_t rip, uint8_t mode, bool ran_kernel)
{
	if (rip & KERNEL_HALF)
		return HT_BOOT_KERNEL;
	if ((mode & HT_BOOT_MODE_KNOWN) && (mode & HT_BOOT_MODE_LMA))
		return ran_kernel ? HT_BOOT_USER : HT_BOOT_DECOMPRESS;
	/* Real or protected mode, or a mode not read: the firmware's, or nothing new. */
	return HT_BOOT_FIRMWARE;
}

uint64_t ht_boot_phase_end(const struct ht_boot_timeline *t, enum ht_boot_phase p)
{
	for (int q = (int)p + 1; q < HT_BOOT_NPHASES; q++)
		if (t->phases[q].reached)
			return t->phases[q].start_ns;
	return t->last_ns;
}

uint64_t ht_boot_phase_uncertainty(const struct ht_boot_timeline *t, enum ht_boot_phase p)
{
	return p == HT_BOOT_FIRMWARE && t->start_exact ? 0 : t->phases[p].uncertainty_ns;
}

void ht_boot_timelines_init(struct ht_boot_timelines *b)
{
	b->earlier = NULL;
	b->nearlier = b->earlier_cap = 0;
	b->vms_other = 0;
	ht_hashmap_init(&b->by_pid, ht_hash_long, ht_equal_long, NULL);
}

static void timeline_free(struct ht_boot_timeline *t)
{
	free(t->vcpus);
	ht_hashmap_clear(&t->vcpu_index);
	free(t->vm_name);
	free(t);
}

/* A new timeline of pid, named vm_name, in place of the one it had (kept among the earlier): NULL if out of memory. */
static struct ht_boot_timeline *new_timeline(struct ht_boot_timelines *b, uint32_t pid, const char *vm_name,
					     struct ht_boot_timeline *replaced)
{
	struct ht_boot_timeline *t = calloc(1, sizeof(*t));

	if (!t || (vm_name && !(t->vm_name = strdup(vm_name))))
		goto fail;
	t->pid = pid;
	ht_hashmap_init(&t->vcpu_index, ht_hash_long, ht_equal_long, NULL);
	if (replaced) {
		if (HT_GROW(b->earlier, b->earlier_cap, b->nearlier + 1, 4))
			goto fail;
		if (ht_hashmap_insert(&b->by_pid, pid, (long)t, HT_HASHMAP_UPDATE, NULL, NULL))
			goto fail;
		b->earlier[b->nearlier++] = replaced;
		t->before = replaced;
	} else if (ht_hashmap_insert(&b->by_pid, pid, (long)t, HT_HASHMAP_ADD, NULL, NULL)) {
		goto fail;
	}
	return t;
fail:
	if (t)
		free(t->vm_name);
	free(t);
	return NULL;
}

/*
 * The timeline an exit of pid belongs to: its boot vCPU's first entry again
 * begins a new process's. NULL with *full set past HT_BOOT_MAX_VMS, NULL
 * alone if out of memory.
 */
static struct ht_boot_timeline *timeline_of(struct ht_boot_timelines *b, const struct ht_boot_exit *be,
					    const char *vm_name, bool *full)
{
	struct ht_boot_timeline *t = NULL;
	long v;

	if (ht_hashmap_find(&b->by_pid, be->host_pid, &v)) {
		t = (struct ht_boot_timeline *)v;
		if (!(be->boot_flags & HT_BOOT_F_FIRST_ENTRY) || !t->boot_vcpu_known || be->vcpu_id != t->boot_vcpu ||
		    !ht_hashmap_find(&t->vcpu_index, be->vcpu_id, NULL))
			return t;
	}
	if ((*full = ht_boot_timelines_count(b) >= HT_BOOT_MAX_VMS))
		return NULL;
	return new_timeline(b, be->host_pid, vm_name, t);
}

/* vCPU vcpu of t (its thread tid), made on first sight; NULL past HT_BOOT_MAX_VCPUS or out of memory. */
static struct ht_boot_vcpu *vcpu_of(struct ht_boot_timeline *t, uint16_t vcpu, uint32_t tid)
{
	long i;

	if (ht_hashmap_find(&t->vcpu_index, vcpu, &i))
		return &t->vcpus[i];
	if (t->nvcpus == HT_BOOT_MAX_VCPUS || HT_GROW(t->vcpus, t->vcpus_cap, t->nvcpus + 1, 4) ||
	    ht_hashmap_insert(&t->vcpu_index, vcpu, (long)t->nvcpus, HT_HASHMAP_ADD, NULL, NULL))
		return NULL;
	struct ht_boot_vcpu *v = &t->vcpus[t->nvcpus++];

	memset(v, 0, sizeof(*v));
	v->vcpu = vcpu;
	v->tid = tid;
	return v;
}

/* Phase p begins with an exit at at (rip, on vcpu), which the guest may have reached up to since earlier. */
static void begin_phase(struct ht_boot_timeline *t, enum ht_boot_phase p, uint64_t at, uint64_t since,
			const struct ht_boot_exit *be)
{
	struct ht_boot_phase_stats *s = &t->phases[p];

	s->reached = true;
	s->start_ns = at;
	s->uncertainty_ns = since && since <= at ? at - since : at - t->start_ns;
	s->first_rip = be->guest_rip;
	s->first_vcpu = be->vcpu_id;
	t->phase = p;
}

/* The guest's time from..to, split among the phases it falls in. */
static void add_guest(struct ht_boot_timeline *t, uint64_t from, uint64_t to)
{
	for (int p = 0; p < HT_BOOT_NPHASES && from < to; p++) {
		if (!t->phases[p].reached)
			continue;
		uint64_t start = p == HT_BOOT_FIRMWARE ? t->start_ns : t->phases[p].start_ns;
		uint64_t end = UINT64_MAX;

		for (int q = p + 1; q < HT_BOOT_NPHASES; q++)
			if (t->phases[q].reached) {
				end = t->phases[q].start_ns;
				break;
			}
		uint64_t a = from > start ? from : start, z = to < end ? to : end;

		if (a < z)
			t->phases[p].state_ns[HT_VCPU_GUEST] += z - a;
	}
}

static void count_reason(struct ht_boot_phase_stats *s, const struct ht_boot_exit *be)
{
	for (size_t i = 0; i < s->nreasons; i++)
		if (s->reasons[i].reason == be->reason && s->reasons[i].isa == be->isa) {
			s->reasons[i].count++;
			return;
		}
	if (s->nreasons == HT_BOOT_TOP_REASONS) {
		s->reasons_other++;
		return;
	}
	s->reasons[s->nreasons++] = (struct ht_boot_reason_count){ .reason = be->reason, .isa = be->isa, .count = 1 };
}

static void count_cause(struct ht_boot_phase_stats *s, const struct ht_boot_exit *be)
{
	if (!(be->boot_flags & HT_BOOT_F_CAUSE))
		return;
	for (size_t i = 0; i < s->ncauses; i++) {
		struct ht_boot_cause_count *c = &s->causes[i];

		if (c->reason == be->reason && c->isa == be->isa && c->kind == be->cause_kind &&
		    c->detail == be->cause_detail && c->value == be->cause_value) {
			c->count++;
			return;
		}
	}
	if (s->ncauses == HT_BOOT_TOP_CAUSES) {
		s->causes_other++;
		return;
	}
	s->causes[s->ncauses++] = (struct ht_boot_cause_count){
		.reason = be->reason, .isa = be->isa, .kind = be->cause_kind, .detail = be->cause_detail,
		.value = be->cause_value, .count = 1,
	};
}

static void keep_last(struct ht_boot_vcpu *v, const struct ht_boot_exit *be)
{
	struct ht_boot_last_exit *l = &v->last[v->nlast_total % HT_BOOT_LAST_EXITS];

	*l = (struct ht_boot_last_exit){ .exit_ns = be->exit_ns, .rip = be->guest_rip, .reason = be->reason,
					 .isa = be->isa, .mode = be->mode };
	v->nlast_total++;
	if (v->nlast < HT_BOOT_LAST_EXITS)
		v->nlast++;
}

/* An exit of vCPU v: the phase it shows, then its time and counts. */
static void add_exit(struct ht_boot_timeline *t, struct ht_boot_vcpu *v, const struct ht_boot_exit *be)
{
	enum ht_boot_phase p = ht_boot_phase_of(be->guest_rip, be->mode, v->ran_kernel);
	bool on_boot_vcpu = be->vcpu_id == t->boot_vcpu;

	if (!(be->mode & HT_BOOT_MODE_KNOWN))
		t->mode_unknown++;
	/* The boot vCPU marks every phase; user space is whichever vCPU that ran the kernel gets there first. */
	if (p > t->phase && (on_boot_vcpu || (p == HT_BOOT_USER && v->ran_kernel)))
		begin_phase(t, p, be->exit_ns, v->last_entry_ns, be);
	if (p == HT_BOOT_KERNEL)
		v->ran_kernel = true;
	if (v->last_entry_ns)
		add_guest(t, v->last_entry_ns, be->exit_ns);

	struct ht_boot_phase_stats *s = &t->phases[t->phase];

	s->exits++;
	s->state_ns[HT_VCPU_KVM] += be->kvm_ns;
	s->state_ns[HT_VCPU_VMM] += be->vmm_ns;
	s->state_ns[HT_VCPU_WAIT] += be->wait_ns;
	s->state_ns[HT_VCPU_HALTED] += be->halted_ns;
	s->state_ns[HT_VCPU_BLOCKED] += be->blocked_ns;
	count_reason(s, be);
	count_cause(s, be);
	keep_last(v, be);
	v->exits++;
}

int ht_boot_timelines_add(struct ht_boot_timelines *b, const struct ht_boot_exit *be, const char *vm_name)
{
	bool full = false, first_entry = be->boot_flags & HT_BOOT_F_FIRST_ENTRY;
	struct ht_boot_timeline *t = timeline_of(b, be, vm_name, &full);

	if (!t) {
		b->vms_other += full;
		return full ? 0 : -ENOMEM;
	}
	t->records++;
	if (be->boot_flags & HT_BOOT_F_SATURATED)
		t->saturated++;
	if (!t->start_ns) {
		/* Its first record: a first entry gives the VM's start exactly; an exit only bounds it. */
		t->start_ns = first_entry ? be->entry_ns : be->exit_ns;
		t->start_exact = first_entry;
		t->boot_vcpu = be->vcpu_id;
		t->boot_vcpu_known = true;
		t->phases[HT_BOOT_FIRMWARE].reached = true;
		t->phases[HT_BOOT_FIRMWARE].start_ns = t->start_ns;
		t->phases[HT_BOOT_FIRMWARE].first_vcpu = be->vcpu_id;
	}
	if (be->entry_ns > t->last_ns)
		t->last_ns = be->entry_ns;

	struct ht_boot_vcpu *v = vcpu_of(t, be->vcpu_id, be->host_tid);

	if (!v) {
		t->vcpus_other++;
		return 0;
	}
	if (!first_entry)
		add_exit(t, v, be);
	v->last_entry_ns = be->entry_ns;
	if (be->boot_flags & HT_BOOT_F_THREAD_END) {
		v->ended = true;
		t->ended = true;
		if (be->entry_ns > t->end_ns)
			t->end_ns = be->entry_ns;
		v->last_entry_ns = 0; /* no guest time after its end */
	}
	return 0;
}

const struct ht_boot_timeline *ht_boot_timelines_at(const struct ht_boot_timelines *b, uint32_t pid, uint64_t ns)
{
	long v;

	if (!ht_hashmap_find(&b->by_pid, pid, &v))
		return NULL;
	const struct ht_boot_timeline *t = (const struct ht_boot_timeline *)v;
	/* A timeline with no record yet (start_ns 0) has not begun. */
	for (int step = 0; t && step < HT_BOOT_AT_STEPS; step++, t = t->before)
		if (t->start_ns && t->start_ns <= ns)
			return t;
	return NULL;
}

static int by_start(const void *a, const void *b)
{
	const struct ht_boot_timeline *x = *(const struct ht_boot_timeline *const *)a;
	const struct ht_boot_timeline *y = *(const struct ht_boot_timeline *const *)b;

	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

size_t ht_boot_timelines_count(const struct ht_boot_timelines *b)
{
	return ht_hashmap_size(&b->by_pid) + b->nearlier;
}

const struct ht_boot_timeline **ht_boot_timelines_sorted(const struct ht_boot_timelines *b, size_t *n)
{
	const struct ht_boot_timeline **out;
	size_t i = 0, bkt;
	struct ht_hashmap_entry *e;

	*n = 0;
	if (!ht_boot_timelines_count(b) || !(out = calloc(ht_boot_timelines_count(b), sizeof(*out))))
		return NULL;
	ht_hashmap_for_each(&b->by_pid, e, bkt)
		out[i++] = e->pvalue;
	for (size_t k = 0; k < b->nearlier; k++)
		out[i++] = b->earlier[k];
	qsort(out, i, sizeof(*out), by_start);
	*n = i;
	return out;
}

void ht_boot_timelines_free(struct ht_boot_timelines *b)
{
	size_t bkt;
	struct ht_hashmap_entry *e;

	ht_hashmap_for_each(&b->by_pid, e, bkt)
		timeline_free(e->pvalue);
	ht_hashmap_clear(&b->by_pid);
	for (size_t k = 0; k < b->nearlier; k++)
		timeline_free(b->earlier[k]);
	free(b->earlier);
	b->earlier = NULL;
	b->nearlier = b->earlier_cap = 0;
}
