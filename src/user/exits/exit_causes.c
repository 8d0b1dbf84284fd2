// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "exits/exit_causes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <asm/kvm_para.h>
#include "common/grow.h"
#include "common/sorted_u32.h"
#include "common/nearest_rank.h"
#include "common/util.h"
#include "exits/exit_slots.h"

static size_t hash_key(long key, void *ctx)
{
	const struct ht_exit_cause_key *k = (const struct ht_exit_cause_key *)key;

	(void)ctx;
	/* Seeded (common/hashmap.h): keys come from files. pad is not part of the key. */
	return (size_t)ht_hash_mix(ht_hash_mix(ht_hash_u64((uint64_t)k->pid << 32 | k->reason), k->value),
				   (uint64_t)k->isa << 40 | (uint64_t)k->kind << 32 | k->detail);
}

static bool equal_key(long a, long b, void *ctx)
{
	(void)ctx;
	return !ht_exit_cause_key_cmp((const struct ht_exit_cause_key *)a, (const struct ht_exit_cause_key *)b);
}

void ht_exit_causes_init(struct ht_exit_cause_table *c)
{
	memset(c, 0, sizeof(*c));
	ht_hashmap_init(&c->index, hash_key, equal_key, NULL);
}

void ht_exit_causes_free(struct ht_exit_cause_table *c)
{
	free(c->rows);
	ht_hashmap_clear(&c->index);
	ht_exit_causes_init(c);
}

void ht_exit_causes_reset(struct ht_exit_cause_table *c)
{
	c->n = 0;
	c->lost = c->not_theirs = c->went_down = 0;
	ht_hashmap_clear(&c->index);
}

/* Indexes every row; a table zeroed rather than initialised gets its functions here. */
static int reindex(struct ht_exit_cause_table *c)
{
	ht_hashmap_clear(&c->index);
	if (!c->index.hash_fn)
		ht_hashmap_init(&c->index, hash_key, equal_key, NULL);
	for (size_t i = 0; i < c->n; i++)
		if (ht_hashmap_insert(&c->index, (long)&c->rows[i].key, (long)i, HT_HASHMAP_SET, NULL, NULL))
			return -ENOMEM;
	return 0;
}

int ht_exit_causes_copy(struct ht_exit_cause_table *dst, const struct ht_exit_cause_table *src)
{
	if (dst->cap < src->n) {
		struct ht_exit_cause_row *p = realloc(dst->rows, src->n * sizeof(*p));
		if (!p)
			return -ENOMEM;
		dst->rows = p;
		dst->cap = src->n;
	}
	if (src->n)
		memcpy(dst->rows, src->rows, src->n * sizeof(*src->rows));
	dst->n = src->n;
	dst->lost = src->lost;
	dst->not_theirs = src->not_theirs;
	dst->went_down = src->went_down;
	return reindex(dst);
}

struct ht_exit_cause_row *ht_exit_causes_row(struct ht_exit_cause_table *c, const struct ht_exit_cause_key *key,
					     bool create)
{
	long i;

	if (!c->index.hash_fn) {
		if (!create)
			return NULL; /* a zeroed table, maybe const: it has no rows */
		ht_hashmap_init(&c->index, hash_key, equal_key, NULL);
	}
	if (ht_hashmap_find(&c->index, (long)key, &i))
		return &c->rows[i];
	if (!create)
		return NULL;
	if (c->n == c->cap) {
		const struct ht_exit_cause_row *before = c->rows;

		if (HT_GROW(c->rows, c->cap, c->n + 1, 64) || (c->rows != before && reindex(c)))
			return NULL;
	}
	struct ht_exit_cause_row *r = &c->rows[c->n];
	memset(r, 0, sizeof(*r));
	r->key = *key;
	r->key.pad = 0;
	if (ht_hashmap_insert(&c->index, (long)&r->key, (long)c->n, HT_HASHMAP_ADD, NULL, NULL))
		return NULL;
	c->n++;
	return r;
}

int ht_exit_causes_set(struct ht_exit_cause_table *c, const struct ht_exit_cause_key *key,
		       const struct ht_exit_cause_hist *h)
{
	struct ht_exit_cause_row *r = ht_exit_causes_row(c, key, true);

	if (!r)
		return -ENOMEM;
	if (r->h.count != h->count || r->h.kvm_ns != h->kvm_ns || r->h.vmm_ns != h->vmm_ns)
		r->changed = true;
	r->h = *h;
	return 0;
}

int ht_exit_causes_forget(struct ht_exit_cause_table *c, const uint32_t *pids, size_t n, uint64_t *rows)
{
	size_t kept = 0;

	for (size_t i = 0; i < c->n; i++) {
		if (ht_u32_listed(pids, n, c->rows[i].key.pid))
			continue;
		if (kept != i)
			c->rows[kept] = c->rows[i];
		kept++;
	}
	if (rows)
		*rows += c->n - kept;
	if (kept == c->n)
		return 0;
	c->n = kept;
	return reindex(c);
}

void ht_exit_causes_clear_changed(struct ht_exit_cause_table *c)
{
	for (size_t i = 0; i < c->n; i++)
		c->rows[i].changed = false;
}

int ht_exit_causes_delta(struct ht_exit_cause_table *out, const struct ht_exit_cause_table *now,
			 const struct ht_exit_cause_table *before)
{
	uint64_t *down = &out->went_down;

	ht_exit_causes_reset(out);
	out->lost = ht_sub_or_count(now->lost, before->lost, down);
	out->not_theirs = ht_sub_or_count(now->not_theirs, before->not_theirs, down);
	for (size_t i = 0; i < now->n; i++) {
		const struct ht_exit_cause_row *n = &now->rows[i];
		const struct ht_exit_cause_row *b = ht_exit_causes_row((struct ht_exit_cause_table *)before, &n->key, false);

		if (b && b->h.count == n->h.count)
			continue;
		struct ht_exit_cause_row *d = ht_exit_causes_row(out, &n->key, true);
		if (!d)
			return -ENOMEM;
		d->h = n->h;
		d->changed = true;
		if (!b)
			continue;
		d->h.count = ht_sub_or_count(n->h.count, b->h.count, down);
		d->h.kvm_ns = ht_sub_or_count(n->h.kvm_ns, b->h.kvm_ns, down);
		d->h.vmm_count = ht_sub_or_count(n->h.vmm_count, b->h.vmm_count, down);
		d->h.vmm_ns = ht_sub_or_count(n->h.vmm_ns, b->h.vmm_ns, down);
		for (int k = 0; k < HT_EXIT_SLOTS; k++) {
			d->h.kvm_slots[k] = ht_sub_or_count(n->h.kvm_slots[k], b->h.kvm_slots[k], down);
			d->h.vmm_slots[k] = ht_sub_or_count(n->h.vmm_slots[k], b->h.vmm_slots[k], down);
		}
	}
	return 0;
}

int ht_exit_cause_key_cmp(const struct ht_exit_cause_key *a, const struct ht_exit_cause_key *b)
{
#define CMP(f)                         \
	if (a->f != b->f)              \
		return a->f < b->f ? -1 : 1
	CMP(pid);
	CMP(isa);
	CMP(reason);
	CMP(kind);
	CMP(value);
	CMP(detail);
#undef CMP
	return 0;
}

/* Key order up to the reason, then the most exits first, then the cause. */
static int cmp_rows(const void *x, const void *y)
{
	const struct ht_exit_cause_row *a = *(const struct ht_exit_cause_row *const *)x;
	const struct ht_exit_cause_row *b = *(const struct ht_exit_cause_row *const *)y;

	if (a->key.pid != b->key.pid)
		return a->key.pid < b->key.pid ? -1 : 1;
	if (a->key.isa != b->key.isa)
		return a->key.isa < b->key.isa ? -1 : 1;
	if (a->key.reason != b->key.reason)
		return a->key.reason < b->key.reason ? -1 : 1;
	if (a->h.count != b->h.count)
		return a->h.count > b->h.count ? -1 : 1;
	return ht_exit_cause_key_cmp(&a->key, &b->key);
}

const struct ht_exit_cause_row **ht_exit_causes_sorted(const struct ht_exit_cause_table *c, size_t *n)
{
	const struct ht_exit_cause_row **v;

	*n = 0;
	if (!c->n)
		return NULL;
	v = malloc(c->n * sizeof(*v));
	if (!v) {
		*n = SIZE_MAX;
		return NULL;
	}
	for (size_t i = 0; i < c->n; i++)
		v[i] = &c->rows[i];
	qsort(v, c->n, sizeof(*v), cmp_rows);
	*n = c->n;
	return v;
}

/* Where (pid, isa, reason) stands against a row: <0 before it, 0 its reason, >0 after. */
static int reason_vs(const struct ht_exit_cause_row *r, uint32_t pid, uint8_t isa, uint32_t reason)
{
	if (pid != r->key.pid)
		return pid < r->key.pid ? -1 : 1;
	if (isa != r->key.isa)
		return isa < r->key.isa ? -1 : 1;
	if (reason != r->key.reason)
		return reason < r->key.reason ? -1 : 1;
	return 0;
}

size_t ht_exit_causes_of_reason(const struct ht_exit_cause_row *const *sorted, size_t n, uint32_t pid, uint8_t isa,
				uint32_t reason, size_t *first)
{
	size_t a = 0, b = n, end;

	while (a < b) { /* the first row not before the reason */
		size_t mid = a + (b - a) / 2;

		if (reason_vs(sorted[mid], pid, isa, reason) > 0)
			a = mid + 1;
		else
			b = mid;
	}
	*first = a;
	for (end = a; end < n && !reason_vs(sorted[end], pid, isa, reason); end++)
		;
	return end - a;
}

uint64_t ht_exit_cause_percentile(const __u64 slots[HT_EXIT_SLOTS], uint64_t count, double p)
{
	uint64_t cum = 0, rank;

	if (!count)
		return 0;
	rank = ht_nearest_rank(p, count);
	for (unsigned int k = 0; k < HT_EXIT_SLOTS; k++) {
		cum = ht_sat_add(cum, slots[k]);
		if (cum >= rank)
			return ht_exit_slot_high(k);
	}
	return ht_exit_slot_high(HT_EXIT_SLOTS - 1);
}

const char *ht_exit_cause_kind_name(unsigned int kind)
{
	static const char *const names[HT_CAUSE_NKINDS] = {
		[HT_CAUSE_NONE] = "none", [HT_CAUSE_PIO] = "io",	       [HT_CAUSE_MMIO] = "mmio",
		[HT_CAUSE_MSR] = "msr",	  [HT_CAUSE_CPUID] = "cpuid", [HT_CAUSE_HYPERCALL] = "hypercall",
		[HT_CAUSE_OTHER] = "other",
	};

	return kind < HT_CAUSE_NKINDS ? names[kind] : "?";
}

/* The common MSRs, as arch/x86/include/asm/msr-index.h names them (a kernel header user space does not get). */
static const struct {
	uint32_t index;
	const char *name;
} msr_names[] = {
	{ 0x10, "IA32_TSC" },
	{ MSR_KVM_WALL_CLOCK, "KVM_WALL_CLOCK" },
	{ MSR_KVM_SYSTEM_TIME, "KVM_SYSTEM_TIME" },
	{ 0x1b, "IA32_APICBASE" },
	{ 0x3a, "IA32_FEAT_CTL" },
	{ 0x48, "IA32_SPEC_CTRL" },
	{ 0x49, "IA32_PRED_CMD" },
	{ 0x8b, "IA32_UCODE_REV" },
	{ 0xe7, "IA32_MPERF" },
	{ 0xe8, "IA32_APERF" },
	{ 0xfe, "MTRRcap" },
	{ 0x10a, "IA32_ARCH_CAPABILITIES" },
	{ 0x174, "IA32_SYSENTER_CS" },
	{ 0x175, "IA32_SYSENTER_ESP" },
	{ 0x176, "IA32_SYSENTER_EIP" },
	{ 0x179, "IA32_MCG_CAP" },
	{ 0x17a, "IA32_MCG_STATUS" },
	{ 0x1a0, "IA32_MISC_ENABLE" },
	{ 0x1d9, "IA32_DEBUGCTLMSR" },
	{ 0x277, "IA32_CR_PAT" },
	{ 0x2ff, "MTRRdefType" },
	{ 0x38d, "CORE_PERF_FIXED_CTR_CTRL" },
	{ 0x38f, "CORE_PERF_GLOBAL_CTRL" },
	{ 0x390, "CORE_PERF_GLOBAL_OVF_CTRL" },
	{ 0x6e0, "IA32_TSC_DEADLINE" },
	{ 0xc0000080, "EFER" },
	{ 0xc0000081, "STAR" },
	{ 0xc0000082, "LSTAR" },
	{ 0xc0000083, "CSTAR" },
	{ 0xc0000084, "SYSCALL_MASK" },
	{ 0xc0000100, "FS_BASE" },
	{ 0xc0000101, "GS_BASE" },
	{ 0xc0000102, "KERNEL_GS_BASE" },
	{ 0xc0000103, "TSC_AUX" },
	{ 0xc0010015, "K7_HWCR" },
	{ 0xc0010117, "VM_HSAVE_PA" },
	{ MSR_KVM_WALL_CLOCK_NEW, "KVM_WALL_CLOCK_NEW" },
	{ MSR_KVM_SYSTEM_TIME_NEW, "KVM_SYSTEM_TIME_NEW" },
	{ MSR_KVM_ASYNC_PF_EN, "KVM_ASYNC_PF_EN" },
	{ MSR_KVM_STEAL_TIME, "KVM_STEAL_TIME" },
	{ MSR_KVM_PV_EOI_EN, "KVM_PV_EOI_EN" },
	{ MSR_KVM_POLL_CONTROL, "KVM_POLL_CONTROL" },
	{ MSR_KVM_ASYNC_PF_INT, "KVM_ASYNC_PF_INT" },
	{ MSR_KVM_ASYNC_PF_ACK, "KVM_ASYNC_PF_ACK" },
	{ MSR_KVM_MIGRATION_CONTROL, "KVM_MIGRATION_CONTROL" },
};

const char *ht_msr_name(uint32_t index)
{
	for (size_t i = 0; i < ARRAY_SIZE(msr_names); i++)
		if (msr_names[i].index == index)
			return msr_names[i].name;
	return NULL;
}

const char *ht_exit_cause_direction(const struct ht_exit_cause_key *k)
{
	bool out = (k->detail & 0xff) == HT_CAUSE_DIR_OUT;

	switch (k->kind) {
	case HT_CAUSE_PIO:
		return out ? "out" : "in";
	case HT_CAUSE_MMIO:
	case HT_CAUSE_MSR:
		return out ? "write" : "read";
	default:
		return "";
	}
}

void ht_exit_cause_format(char *buf, size_t len, const struct ht_exit_cause_key *k)
{
	const char *kind = ht_exit_cause_kind_name(k->kind), *name;

	switch (k->kind) {
	case HT_CAUSE_PIO:
	case HT_CAUSE_MMIO:
		snprintf(buf, len, "%s 0x%llx %s %u", kind, (unsigned long long)k->value, ht_exit_cause_direction(k),
			 k->detail >> 8);
		break;
	case HT_CAUSE_MSR:
		name = ht_msr_name((uint32_t)k->value);
		snprintf(buf, len, "msr 0x%llx%s%s %s", (unsigned long long)k->value, name ? " " : "", name ? name : "",
			 ht_exit_cause_direction(k));
		break;
	case HT_CAUSE_CPUID:
		snprintf(buf, len, "cpuid 0x%llx.%u", (unsigned long long)k->value, k->detail);
		break;
	case HT_CAUSE_HYPERCALL:
		snprintf(buf, len, "hypercall %llu", (unsigned long long)k->value);
		break;
	default:
		snprintf(buf, len, "%s", kind);
		break;
	}
}
