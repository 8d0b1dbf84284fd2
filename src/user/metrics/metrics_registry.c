// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Bounded counters and log2 histograms for `record --metrics`, and their exposition text. */
#include "metrics/metrics_registry.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int ht_metrics_registry_init(struct ht_metrics_registry *r, size_t max_sets, bool with_index)
{
	size_t nslots = 16;

	memset(r, 0, sizeof(*r));
	r->max_sets = max_sets ? max_sets : HT_METRICS_DEFAULT_MAX_SETS;
	if (r->max_sets > UINT32_MAX / 4)
		return -EINVAL;
	r->sets = calloc(r->max_sets, sizeof(*r->sets));
	if (!r->sets)
		return -ENOMEM;
	if (with_index) {
		/* At most half full: probes stay short. */
		while (nslots < 2 * r->max_sets)
			nslots *= 2;
		r->slots = calloc(nslots, sizeof(*r->slots));
		if (!r->slots) {
			free(r->sets);
			r->sets = NULL;
			return -ENOMEM;
		}
		r->slot_mask = nslots - 1;
	}
	r->version = "";
	r->mode = "";
	return 0;
}

void ht_metrics_registry_free(struct ht_metrics_registry *r)
{
	free(r->sets);
	free(r->slots);
	r->sets = NULL;
	r->slots = NULL;
}

static uint64_t set_hash(uint32_t vm_pid, uint16_t vcpu, uint32_t nr)
{
	uint64_t h = ((uint64_t)vm_pid << 32 | (uint64_t)vcpu << 16) ^ ((uint64_t)nr * 0x9e3779b97f4a7c15ull);

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 32);
}

static bool set_is(const struct ht_metrics_set *s, uint32_t vm_pid, uint16_t vcpu, uint32_t nr)
{
	return s->vm_pid == vm_pid && s->vcpu == vcpu && s->nr == nr;
}

static void log_overflow(struct ht_metrics_registry *r)
{
	r->other_used = true;
	if (r->overflow_logged || !r->log)
		return;
	r->overflow_logged = true;
	fprintf(r->log, "hypertrace-bpf: metrics: more than %zu label sets (VM process, vCPU, nr): the hypercalls of further ones are counted under vm_pid=\"other\" (hypertrace_metrics_overflow_hypercalls_total)\n",
		r->max_sets);
}

/* The label set's numbers, created on first sight; the "other" set once max_sets are in use. */
static struct ht_metrics_set *find_set(struct ht_metrics_registry *r, uint32_t vm_pid,
				       uint16_t vcpu, uint32_t nr)
{
	if (r->nsets && set_is(&r->sets[r->last], vm_pid, vcpu, nr))
		return &r->sets[r->last];
	for (size_t i = set_hash(vm_pid, vcpu, nr) & r->slot_mask;; i = (i + 1) & r->slot_mask) {
		uint32_t idx = r->slots[i];

		if (idx && set_is(&r->sets[idx - 1], vm_pid, vcpu, nr)) {
			r->last = idx - 1;
			return &r->sets[idx - 1];
		}
		if (!idx) {
			if (r->nsets == r->max_sets) {
				log_overflow(r);
				return NULL;
			}
			struct ht_metrics_set *s = &r->sets[r->nsets];

			memset(s, 0, sizeof(*s));
			s->vm_pid = vm_pid;
			s->vcpu = vcpu;
			s->nr = nr;
			r->slots[i] = (uint32_t)++r->nsets;
			r->last = r->nsets - 1;
			return s;
		}
	}
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

void ht_metrics_add_record(struct ht_metrics_registry *r, const struct ht_record *rec)
{
	uint64_t ns[HT_LAT_NSERIES];
	struct ht_metrics_set *s = find_set(r, rec->host_pid, rec->vcpu_id, rec->nr);

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
}

static void slots_to_buckets(const __u64 slots[HT_AGG_SLOTS], uint64_t buckets[HT_METRICS_BUCKETS + 1])
{
	memset(buckets, 0, (HT_METRICS_BUCKETS + 1) * sizeof(buckets[0]));
	for (unsigned int i = 0; i < HT_AGG_SLOTS; i++)
		buckets[i < HT_METRICS_BUCKETS ? i : HT_METRICS_BUCKETS] += slots[i];
}

void ht_metrics_set_aggregate(struct ht_metrics_registry *r, uint32_t vm_pid, uint16_t vcpu,
			      uint32_t nr, const struct ht_agg_hist *cumulative)
{
	static const int phase_of[HT_AGG_NSERIES] = {
		[HT_AGG_TOTAL] = HT_LAT_TOTAL,
		[HT_AGG_EXIT_HCALL] = HT_LAT_EXIT_HCALL,
		[HT_AGG_HCALL_ENTRY] = HT_LAT_HCALL_ENTRY,
	};
	struct ht_metrics_set *s = find_set(r, vm_pid, vcpu, nr);
	uint64_t buckets[HT_METRICS_BUCKETS + 1];
	uint64_t n = 0;

	for (unsigned int i = 0; i < HT_AGG_SLOTS; i++)
		n += cumulative->slots[HT_AGG_TOTAL][i];
	for (int a = 0; a < HT_AGG_NSERIES; a++) {
		int p = phase_of[a];

		slots_to_buckets(cumulative->slots[a], buckets);
		if (s) {
			memcpy(s->buckets[p], buckets, sizeof(buckets));
		} else {
			for (unsigned int i = 0; i <= HT_METRICS_BUCKETS; i++)
				r->other.buckets[p][i] += buckets[i];
		}
	}
	if (s) {
		s->hypercalls = n;
	} else {
		r->other.hypercalls += n;
		r->overflow_hypercalls += n;
	}
}

void ht_metrics_registry_copy(struct ht_metrics_registry *dst, const struct ht_metrics_registry *src)
{
	struct ht_metrics_set *sets = dst->sets;
	uint32_t *slots = dst->slots;
	size_t slot_mask = dst->slot_mask;

	memcpy(sets, src->sets, src->nsets * sizeof(*sets));
	*dst = *src;
	dst->sets = sets;
	dst->slots = slots;
	dst->slot_mask = slot_mask;
	dst->log = NULL;
}

bool ht_metrics_escape_label(const char *value, char *out, size_t outlen)
{
	size_t n = 0;

	for (const char *c = value; *c; c++) {
		const char *rep = *c == '\\' ? "\\\\" : *c == '"' ? "\\\"" : *c == '\n' ? "\\n" : NULL;
		size_t len = rep ? 2 : 1;

		if (n + len >= outlen)
			return false;
		if (rep)
			memcpy(out + n, rep, 2);
		else
			out[n] = *c;
		n += len;
	}
	if (n >= outlen)
		return false;
	out[n] = '\0';
	return true;
}

void ht_metrics_format_seconds(uint64_t ns, char *out, size_t outlen)
{
	uint64_t sec = ns / 1000000000u;
	unsigned int frac = (unsigned int)(ns % 1000000000u);
	int len;

	if (!frac) {
		snprintf(out, outlen, "%" PRIu64, sec);
		return;
	}
	len = snprintf(out, outlen, "%" PRIu64 ".%09u", sec, frac);
	/* Trailing zeros say nothing: "0.000001023", not "0.000001023000". */
	while (len > 0 && (size_t)len < outlen && out[len - 1] == '0')
		out[--len] = '\0';
}

static int cmp_sets(const void *a, const void *b)
{
	const struct ht_metrics_set *x = a, *y = b;

	if (x->vm_pid != y->vm_pid)
		return x->vm_pid < y->vm_pid ? -1 : 1;
	if (x->vcpu != y->vcpu)
		return x->vcpu < y->vcpu ? -1 : 1;
	return (x->nr > y->nr) - (x->nr < y->nr);
}

/* The labels of a set, without braces: vm_pid="1234",vcpu="0",nr="1000". */
static void set_labels(const struct ht_metrics_set *s, bool other, char *out, size_t outlen)
{
	if (other)
		snprintf(out, outlen, "vm_pid=\"other\",vcpu=\"other\",nr=\"other\"");
	else
		snprintf(out, outlen, "vm_pid=\"%" PRIu32 "\",vcpu=\"%u\",nr=\"%" PRIu32 "\"", s->vm_pid,
			 (unsigned int)s->vcpu, s->nr);
}

static const char *const phase_names[HT_LAT_NSERIES] = {
	[HT_LAT_TOTAL] = "exit_to_entry",
	[HT_LAT_EXIT_HCALL] = "exit_to_hypercall",
	[HT_LAT_HCALL_ENTRY] = "hypercall_to_entry",
};

static void render_histogram(FILE *out, const struct ht_metrics_registry *r,
			     const struct ht_metrics_set *s, bool other, int phase)
{
	char labels[128], le[32];
	uint64_t cum = 0;

	set_labels(s, other, labels, sizeof(labels));
	for (unsigned int k = 0; k < HT_METRICS_BUCKETS; k++) {
		cum += s->buckets[phase][k];
		ht_metrics_format_seconds(ht_hist_slot_high(k), le, sizeof(le));
		fprintf(out, "hypertrace_hypercall_duration_seconds_bucket{phase=\"%s\",%s,le=\"%s\"} %" PRIu64 "\n",
			phase_names[phase], labels, le, cum);
	}
	cum += s->buckets[phase][HT_METRICS_BUCKETS];
	fprintf(out, "hypertrace_hypercall_duration_seconds_bucket{phase=\"%s\",%s,le=\"+Inf\"} %" PRIu64 "\n",
		phase_names[phase], labels, cum);
	if (r->exact_sums) {
		char sum[32];

		ht_metrics_format_seconds(s->sum_ns[phase], sum, sizeof(sum));
		fprintf(out, "hypertrace_hypercall_duration_seconds_sum{phase=\"%s\",%s} %s\n",
			phase_names[phase], labels, sum);
	}
	fprintf(out, "hypertrace_hypercall_duration_seconds_count{phase=\"%s\",%s} %" PRIu64 "\n",
		phase_names[phase], labels, cum);
}

static const char *const drop_reasons[HT_METRICS_NDROPS] = {
	[HT_METRICS_DROP_RINGBUF_FULL] = "ringbuf_full",
	[HT_METRICS_DROP_NO_THREAD_STATE] = "no_thread_state",
	[HT_METRICS_DROP_SUPERSEDED] = "superseded",
	[HT_METRICS_DROP_AGG_GROUPS_FULL] = "histogram_groups_full",
	[HT_METRICS_DROP_MALFORMED_SAMPLE] = "malformed_sample",
};

int ht_metrics_render(struct ht_metrics_registry *r, FILE *out)
{
	char version[256], mode[64], labels[128];

	if (!ht_metrics_escape_label(r->version, version, sizeof(version)) ||
	    !ht_metrics_escape_label(r->mode, mode, sizeof(mode)))
		return -EINVAL;
	qsort(r->sets, r->nsets, sizeof(*r->sets), cmp_sets);

	fputs("# HELP hypertrace_build_info The hypertrace-bpf serving these metrics; always 1.\n"
	      "# TYPE hypertrace_build_info gauge\n", out);
	fprintf(out, "hypertrace_build_info{version=\"%s\",mode=\"%s\"} 1\n", version, mode);

	fputs("# HELP hypertrace_hypercalls_total Hypercalls traced, by VM process (host pid), vCPU and hypercall nr.\n"
	      "# TYPE hypertrace_hypercalls_total counter\n", out);
	for (size_t i = 0; i < r->nsets; i++) {
		set_labels(&r->sets[i], false, labels, sizeof(labels));
		fprintf(out, "hypertrace_hypercalls_total{%s} %" PRIu64 "\n", labels, r->sets[i].hypercalls);
	}
	if (r->other_used) {
		set_labels(&r->other, true, labels, sizeof(labels));
		fprintf(out, "hypertrace_hypercalls_total{%s} %" PRIu64 "\n", labels, r->other.hypercalls);
	}

	fputs("# HELP hypertrace_dropped_hypercalls_total Hypercalls seen but not recorded, by reason.\n"
	      "# TYPE hypertrace_dropped_hypercalls_total counter\n", out);
	for (int d = 0; d < HT_METRICS_NDROPS; d++)
		fprintf(out, "hypertrace_dropped_hypercalls_total{reason=\"%s\"} %" PRIu64 "\n",
			drop_reasons[d], r->drops[d]);

	fputs("# HELP hypertrace_unselected_hypercalls_total Hypercall exits whose nr was not selected (not recorded, by design).\n"
	      "# TYPE hypertrace_unselected_hypercalls_total counter\n", out);
	fprintf(out, "hypertrace_unselected_hypercalls_total %" PRIu64 "\n", r->unselected_nr);

	fputs("# HELP hypertrace_metrics_overflow_hypercalls_total Hypercalls counted under vm_pid=\"other\" because the label sets were at their cap.\n"
	      "# TYPE hypertrace_metrics_overflow_hypercalls_total counter\n", out);
	fprintf(out, "hypertrace_metrics_overflow_hypercalls_total %" PRIu64 "\n", r->overflow_hypercalls);
	fputs("# HELP hypertrace_metrics_label_sets_max Label sets (VM process, vCPU, nr) kept before \"other\" takes the rest.\n"
	      "# TYPE hypertrace_metrics_label_sets_max gauge\n", out);
	fprintf(out, "hypertrace_metrics_label_sets_max %zu\n", r->max_sets);

	fputs("# HELP hypertrace_hypercall_duration_seconds Hypercall latency by phase: exit_to_entry (kvm_exit to kvm_entry), exit_to_hypercall, hypercall_to_entry.\n"
	      "# TYPE hypertrace_hypercall_duration_seconds histogram\n", out);
	for (size_t i = 0; i < r->nsets; i++)
		for (int p = 0; p < HT_LAT_NSERIES; p++)
			render_histogram(out, r, &r->sets[i], false, p);
	if (r->other_used)
		for (int p = 0; p < HT_LAT_NSERIES; p++)
			render_histogram(out, r, &r->other, true, p);
	return ferror(out) ? -EIO : 0;
}
