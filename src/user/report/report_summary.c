// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "report/report_summary.h"
#include "hist/latency_hist.h"
#include "tracefile/wallclock.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Counters keyed by (pid, vcpu) or by nr; a trace holds few distinct keys. */
struct key_count {
	__u64 key;
	__u64 count;
};

struct key_counts {
	struct key_count *items;
	size_t len, cap;
};

/* One latency series: every sample is kept, so percentiles are exact. */
struct series {
	struct ht_samples samples;
	__u64 sum;
};

enum { LAT_EXIT_HCALL, LAT_HCALL_ENTRY, LAT_TOTAL, LAT_N };

struct ht_summary {
	struct key_counts per_vcpu, per_nr;
	struct series lat[LAT_N];
	__u64 records;
	__u64 first_ns, last_ns;
	__u8 isa_seen;
};

struct ht_summary *ht_summary_new(void)
{
	return calloc(1, sizeof(struct ht_summary));
}

static int bump(struct key_counts *kc, __u64 key)
{
	for (size_t i = 0; i < kc->len; i++) {
		if (kc->items[i].key == key) {
			kc->items[i].count++;
			return 0;
		}
	}
	if (kc->len == kc->cap) {
		size_t cap = kc->cap ? kc->cap * 2 : 16;
		struct key_count *p = realloc(kc->items, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		kc->items = p;
		kc->cap = cap;
	}
	kc->items[kc->len++] = (struct key_count){ .key = key, .count = 1 };
	return 0;
}

static int push(struct series *s, __u64 v)
{
	s->sum += v;
	return ht_samples_push(&s->samples, v);
}

int ht_summary_add(struct ht_summary *s, const struct ht_record *r)
{
	if (!s->records || r->exit_ns < s->first_ns)
		s->first_ns = r->exit_ns;
	if (r->exit_ns > s->last_ns)
		s->last_ns = r->exit_ns;
	s->records++;
	s->isa_seen |= (__u8)(1u << (r->isa & 7));
	if (bump(&s->per_vcpu, ((__u64)r->host_pid << 32) | r->vcpu_id) || bump(&s->per_nr, r->nr) ||
	    push(&s->lat[LAT_EXIT_HCALL], r->exit_to_hcall_ns) ||
	    push(&s->lat[LAT_HCALL_ENTRY], r->hcall_to_entry_ns) ||
	    push(&s->lat[LAT_TOTAL], (__u64)r->exit_to_hcall_ns + r->hcall_to_entry_ns))
		return -ENOMEM;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

static int cmp_key(const void *a, const void *b)
{
	return cmp_u64(&((const struct key_count *)a)->key, &((const struct key_count *)b)->key);
}

/* Exact nearest-rank percentile (latency_hist.c: the same definition as the live view). */
static __u64 percentile(struct series *s, double p)
{
	uint64_t v = 0;

	ht_samples_percentile(&s->samples, p, &v);
	return v;
}

static void print_time(FILE *out, const char *label, const struct ht_file_header *h, __u64 mono)
{
	char when[64];

	ht_format_wallclock(when, sizeof(when), h, mono, HT_TIME_HUMAN);
	fprintf(out, "%s%s\n", label, when);
}

static void print_filters(FILE *out, const struct ht_file_header *h)
{
	fprintf(out, "filters: nr");
	for (__u32 i = 0; i < h->filter_nr_count && i < HT_MAX_SELECTED_NR; i++)
		fprintf(out, "%s%u", i ? "," : " ", h->filter_nr[i]);
	if (h->filter_flags & HT_FILTER_F_EXIT_REASON)
		fprintf(out, "; exit reason 0x%x", h->filter_exit_reason);
	else
		fprintf(out, "; exit reason VMCALL(18)/VMMCALL(0x81)");
	if (h->filter_flags & HT_FILTER_F_TGID)
		fprintf(out, "; pid %u", h->filter_tgid);
	if (h->filter_flags & HT_FILTER_F_VCPU)
		fprintf(out, "; vcpu %u", h->filter_vcpu);
	fputc('\n', out);
}

void ht_summary_print(struct ht_summary *s, FILE *out, const char *path,
		      const struct ht_file_header *h, const struct ht_read_status *st)
{
	static const char *const lat_names[LAT_N] = { "exit->hypercall", "hypercall->entry",
						      "total (exit->entry)" };

	fprintf(out, "file: %s (format %u), host kernel %s, CPU %s\n", path, h->version,
		h->kernel_release, h->cpu_vendor);
	print_time(out, "start: ", h, h->start_monotonic_ns);
	if (st->has_trailer) {
		print_time(out, "end:   ", h, st->trailer.end_monotonic_ns);
		double secs = ht_seconds_between(h->start_monotonic_ns, st->trailer.end_monotonic_ns);

		if (secs >= 0)
			fprintf(out, "duration: %.3f s\n", secs);
		else
			fprintf(out, "duration: unknown: the trailer's end is %.3f s before the start (a damaged or crafted file)\n",
				-secs);
	}
	print_filters(out, h);
	fprintf(out, "records: %llu\n", (unsigned long long)s->records);
	if (st->has_trailer) {
		const struct ht_trailer *t = &st->trailer;
		fprintf(out, "dropped: %llu (ring buffer full %llu, no per-thread state %llu, another exit before entry %llu)\n",
			(unsigned long long)ht_trailer_lost(t), (unsigned long long)t->ringbuf_drops,
			(unsigned long long)t->state_alloc_fail, (unsigned long long)t->superseded);
		fprintf(out, "hypercall exits with an unselected nr: %llu\n",
			(unsigned long long)t->unselected_nr);
	} else {
		fprintf(out, "dropped: unknown (no trailer: %s)\n", st->reason);
	}
	if (!s->records)
		return;

	qsort(s->per_vcpu.items, s->per_vcpu.len, sizeof(struct key_count), cmp_key);
	fprintf(out, "\nper vCPU:\n  %8s %6s %10s\n", "pid", "vcpu", "records");
	for (size_t i = 0; i < s->per_vcpu.len; i++)
		fprintf(out, "  %8llu %6llu %10llu\n", (unsigned long long)(s->per_vcpu.items[i].key >> 32),
			(unsigned long long)(s->per_vcpu.items[i].key & 0xffffffffu),
			(unsigned long long)s->per_vcpu.items[i].count);
	qsort(s->per_nr.items, s->per_nr.len, sizeof(struct key_count), cmp_key);
	fprintf(out, "\nper hypercall nr:\n  %10s %10s\n", "nr", "records");
	for (size_t i = 0; i < s->per_nr.len; i++)
		fprintf(out, "  %10llu %10llu\n", (unsigned long long)s->per_nr.items[i].key,
			(unsigned long long)s->per_nr.items[i].count);

	fprintf(out, "\nlatency (ns):\n  %-20s %10s %10s %10s %10s %10s\n", "", "min", "avg", "p50",
		"p99", "max");
	for (int i = 0; i < LAT_N; i++) {
		struct series *ls = &s->lat[i];
		fprintf(out, "  %-20s %10llu %10.0f %10llu %10llu %10llu\n", lat_names[i],
			(unsigned long long)percentile(ls, 0), (double)ls->sum / (double)ls->samples.len,
			(unsigned long long)percentile(ls, 50), (unsigned long long)percentile(ls, 99),
			(unsigned long long)percentile(ls, 100));
	}
}

void ht_summary_free(struct ht_summary *s)
{
	if (!s)
		return;
	free(s->per_vcpu.items);
	free(s->per_nr.items);
	for (int i = 0; i < LAT_N; i++)
		ht_samples_free(&s->lat[i].samples);
	free(s);
}
