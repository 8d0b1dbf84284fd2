// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The summary keeps memory bounded whatever the file holds, and its
 * percentiles exact:
 *  - up to exact_limit records, every latency is kept and sorted;
 *  - beyond that, each series goes into a log-linear histogram (values below
 *    4096 ns exactly, above in 2048 buckets per power of two), and each
 *    percentile's bucket is narrowed by reading the file again: its values
 *    are collected when few enough, else counted into 65536 sub-buckets, until
 *    one value is left. Latencies fit in 33 bits: at most three passes.
 * Counts per vCPU and per nr keep at most HT_SUMMARY_MAX_KEYS keys each; the
 * rest are counted together and said so.
 */
#include "report/report_summary.h"
#include "hist/latency_hist.h"
#include "tracefile/wallclock.h"
#include "common/escape.h"
#include "common/hashmap.h"
#include "common/nearest_rank.h"
#include "common/util.h"
#include "common/grow.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_EXACT_LIMIT (1u << 18)   /* records whose latencies are all kept: 6 MiB */
#define DEFAULT_COLLECT_LIMIT (1u << 18) /* values of one bucket collected in a pass: 2 MiB */
#define SUB_BITS 12                      /* histogram: below 2^12 one bucket per value */
#define HIST_BUCKETS ((1u << SUB_BITS) + (64 - SUB_BITS) * (1u << (SUB_BITS - 1)))
#define REFINE_BUCKETS (1u << 16)

/*
 * Counters keyed by (pid, vcpu) or by nr: an array in order of first sight,
 * found through the project's seeded map (keys come from the guest and the file).
 */
struct key_count {
	__u64 key;
	__u64 count;
	__u32 tid; /* per vCPU: the thread of its last record, to name it */
};

struct key_counts {
	struct ht_hashmap index; /* key -> index into items */
	struct key_count *items;
	size_t len, cap;          /* len at most HT_SUMMARY_MAX_KEYS */
	__u64 other_keys_records; /* records of keys beyond HT_SUMMARY_MAX_KEYS */
};

struct series {
	struct ht_samples samples; /* while every value is kept */
	__u64 *buckets;            /* HIST_BUCKETS, once they are not */
	__u64 sum, min, max;
};

enum { LAT_EXIT_HCALL, LAT_HCALL_ENTRY, LAT_TOTAL, LAT_N };

struct ht_summary {
	struct key_counts per_vcpu, per_nr;
	struct series lat[LAT_N];
	__u64 records;
	__u64 first_ns, last_ns;
	__u8 isa_seen;
	size_t exact_limit, collect_limit;
	unsigned int passes; /* reads of the file, the first included */
	unsigned long long forged;
	bool (*match)(const void *ctx, const struct ht_record *r, void *reader); /* NULL: every record */
	const void *match_ctx;
};

struct ht_summary *ht_summary_new(void)
{
	struct ht_summary *s = calloc(1, sizeof(struct ht_summary));

	if (s) {
		s->exact_limit = DEFAULT_EXACT_LIMIT;
		s->collect_limit = DEFAULT_COLLECT_LIMIT;
		s->passes = 1;
		ht_hashmap_init(&s->per_vcpu.index, ht_hash_long, ht_equal_long, NULL);
		ht_hashmap_init(&s->per_nr.index, ht_hash_long, ht_equal_long, NULL);
	}
	return s;
}

void ht_summary_set_limits(struct ht_summary *s, size_t exact_records, size_t collect_values)
{
	s->exact_limit = exact_records;
	s->collect_limit = collect_values ? collect_values : 1;
}

unsigned int ht_summary_passes(const struct ht_summary *s)
{
	return s->passes;
}

void ht_summary_set_filter(struct ht_summary *s,
			   bool (*match)(const void *ctx, const struct ht_record *r, void *reader),
			   const void *ctx)
{
	s->match = match;
	s->match_ctx = ctx;
}

static int bump(struct key_counts *kc, __u64 key, __u32 tid)
{
	long i;

	if (ht_hashmap_find(&kc->index, (long)key, &i)) {
		kc->items[i].count++;
		kc->items[i].tid = tid;
		return 0;
	}
	if (kc->len == HT_SUMMARY_MAX_KEYS) {
		kc->other_keys_records++;
		return 0;
	}
	if (HT_GROW(kc->items, kc->cap, kc->len + 1, 64))
		return -ENOMEM;
	if (ht_hashmap_insert(&kc->index, (long)key, (long)kc->len, HT_HASHMAP_ADD, NULL, NULL))
		return -ENOMEM;
	kc->items[kc->len++] = (struct key_count){ .key = key, .count = 1, .tid = tid };
	return 0;
}

static unsigned int bucket_of(__u64 v)
{
	if (v < (1u << SUB_BITS))
		return (unsigned int)v;
	unsigned int e = 63u - (unsigned int)__builtin_clzll(v); /* SUB_BITS..63 */
	unsigned int shift = e - (SUB_BITS - 1);

	return (1u << SUB_BITS) + (e - SUB_BITS) * (1u << (SUB_BITS - 1)) +
	       (unsigned int)((v >> shift) - (1u << (SUB_BITS - 1)));
}

/* The values [*lo, *lo + *width) of a bucket. */
static void bucket_range(unsigned int b, __u64 *lo, __u64 *width)
{
	if (b < (1u << SUB_BITS)) {
		*lo = b;
		*width = 1;
		return;
	}
	unsigned int k = b - (1u << SUB_BITS);
	unsigned int shift = k / (1u << (SUB_BITS - 1)) + 1;

	*lo = ((__u64)(1u << (SUB_BITS - 1)) + k % (1u << (SUB_BITS - 1))) << shift;
	*width = 1ull << shift;
}

static __u64 series_value(int i, const struct ht_record *r)
{
	return i == LAT_EXIT_HCALL ? r->exit_to_hcall_ns :
	       i == LAT_HCALL_ENTRY ? r->hcall_to_entry_ns :
				      (__u64)r->exit_to_hcall_ns + r->hcall_to_entry_ns;
}

/* From kept samples to a histogram: memory stays at HIST_BUCKETS counters per series. */
static int to_histograms(struct ht_summary *s)
{
	for (int i = 0; i < LAT_N; i++) {
		struct series *ls = &s->lat[i];

		ls->buckets = calloc(HIST_BUCKETS, sizeof(*ls->buckets));
		if (!ls->buckets)
			return -ENOMEM;
		for (size_t j = 0; j < ls->samples.len; j++)
			ls->buckets[bucket_of(ls->samples.v[j])]++;
		ht_samples_free(&ls->samples);
		memset(&ls->samples, 0, sizeof(ls->samples));
	}
	return 0;
}

int ht_summary_add(struct ht_summary *s, const struct ht_record *r)
{
	if (!s->records || r->exit_ns < s->first_ns)
		s->first_ns = r->exit_ns;
	if (r->exit_ns > s->last_ns)
		s->last_ns = r->exit_ns;
	if (s->records == s->exact_limit && to_histograms(s))
		return -ENOMEM;
	s->records++;
	s->isa_seen |= (__u8)(1u << (r->isa & 7));
	if (bump(&s->per_vcpu, ((__u64)r->host_pid << 32) | r->vcpu_id, r->host_tid) ||
	    bump(&s->per_nr, r->nr, 0))
		return -ENOMEM;
	for (int i = 0; i < LAT_N; i++) {
		struct series *ls = &s->lat[i];
		__u64 v = series_value(i, r);

		ls->sum += v;
		ls->min = s->records == 1 || v < ls->min ? v : ls->min;
		ls->max = v > ls->max ? v : ls->max;
		if (ls->buckets)
			ls->buckets[bucket_of(v)]++;
		else if (ht_samples_push(&ls->samples, v))
			return -ENOMEM;
	}
	return 0;
}

static int cmp_key(const void *a, const void *b)
{
	return ht_cmp_u64(&((const struct key_count *)a)->key, &((const struct key_count *)b)->key);
}

/*
 * One percentile being found: its value is the rank-th smallest (1-based) of
 * the count values in [lo, lo + width).
 */
struct pct_target {
	int series;
	__u64 lo, width, rank, count;
	__u64 *collected;   /* this pass: the values in range, when count <= collect_limit */
	size_t ncollected;
	__u64 *sub;         /* this pass: counts per sub-bucket of width / nsub, otherwise */
	__u64 nsub;
	__u64 *result;
};

static bool target_done(const struct pct_target *t)
{
	return t->width == 1;
}

/* Narrows t to the sub-bucket (or collected value) holding its rank. */
static void target_narrow(struct pct_target *t)
{
	if (t->collected) {
		qsort(t->collected, t->ncollected, sizeof(*t->collected), ht_cmp_u64);
		t->lo = t->collected[t->rank - 1];
		t->width = 1;
	} else {
		__u64 subwidth = t->width / t->nsub, seen = 0, i = 0;

		while (seen + t->sub[i] < t->rank)
			seen += t->sub[i++];
		t->lo += i * subwidth;
		t->width = subwidth;
		t->rank -= seen;
		t->count = t->sub[i];
	}
	free(t->collected);
	free(t->sub);
	t->collected = t->sub = NULL;
	t->ncollected = 0;
}

/*
 * One more read of the file: each open target counts or collects the values
 * in its range. The first s->records records are the ones the summary saw.
 */
static int refine_pass(struct ht_summary *s, const char *path, struct pct_target *t, size_t n,
		       char *err, size_t errlen)
{
	struct ht_reader *reader;
	struct ht_record rec;
	__u64 seen = 0;
	int ret = 0;

	for (size_t i = 0; i < n; i++) {
		if (target_done(&t[i]))
			continue;
		if (t[i].count <= s->collect_limit) {
			t[i].collected = malloc(t[i].count * sizeof(*t[i].collected));
		} else {
			t[i].nsub = HT_MIN(t[i].width, (__u64)REFINE_BUCKETS);
			t[i].sub = calloc(t[i].nsub, sizeof(*t[i].sub));
		}
		if (!t[i].collected && !t[i].sub) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
	}
	ret = ht_reader_open(path, &reader, err, errlen);
	if (ret)
		return ret;
	s->passes++;
	while (seen < s->records && ht_reader_next(reader, &rec) == 1) {
		if (s->match && !s->match(s->match_ctx, &rec, reader))
			continue;
		seen++;
		for (size_t i = 0; i < n; i++) {
			__u64 v = series_value(t[i].series, &rec);

			if (target_done(&t[i]) || v < t[i].lo || v - t[i].lo >= t[i].width)
				continue;
			if (t[i].collected && t[i].ncollected < t[i].count)
				t[i].collected[t[i].ncollected++] = v;
			else if (t[i].sub)
				t[i].sub[(v - t[i].lo) / (t[i].width / t[i].nsub)]++;
		}
	}
	ht_reader_close(reader);
	for (size_t i = 0; i < n; i++) {
		__u64 in_range = 0;

		if (target_done(&t[i]))
			continue;
		if (t[i].collected)
			in_range = t[i].ncollected;
		else
			for (__u64 j = 0; j < t[i].nsub; j++)
				in_range += t[i].sub[j];
		if (seen < s->records || in_range != t[i].count) {
			snprintf(err, errlen, "the file changed while it was read again for percentiles");
			ret = -EAGAIN;
		}
	}
	if (ret)
		return ret;
	for (size_t i = 0; i < n; i++)
		if (!target_done(&t[i]))
			target_narrow(&t[i]);
	return 0;
}

/* p50 and p99 of every series (min and max are kept exactly). 0, or -errno with err. */
static int percentiles(struct ht_summary *s, const char *path, __u64 p50[LAT_N], __u64 p99[LAT_N],
		       char *err, size_t errlen)
{
	struct pct_target t[2 * LAT_N];
	size_t n = 0;
	int ret = 0;

	for (int i = 0; i < LAT_N; i++) {
		struct series *ls = &s->lat[i];
		__u64 *out[2] = { &p50[i], &p99[i] };
		double pct[2] = { 50, 99 };

		for (int j = 0; j < 2; j++) {
			uint64_t v = 0;

			if (!ls->buckets) {
				ht_samples_percentile(&ls->samples, pct[j], &v);
				*out[j] = v;
				continue;
			}
			__u64 rank = ht_nearest_rank(pct[j], s->records), seen = 0;
			unsigned int b = 0;

			while (seen + ls->buckets[b] < rank)
				seen += ls->buckets[b++];
			t[n] = (struct pct_target){ .series = i, .rank = rank - seen,
						    .count = ls->buckets[b], .result = out[j] };
			bucket_range(b, &t[n].lo, &t[n].width);
			n++;
		}
	}
	for (;;) {
		bool open = false;

		for (size_t i = 0; i < n; i++)
			open |= !target_done(&t[i]);
		if (!open || (ret = refine_pass(s, path, t, n, err, errlen)))
			break;
	}
	for (size_t i = 0; i < n; i++) {
		*t[i].result = t[i].lo;
		free(t[i].collected);
		free(t[i].sub);
	}
	return ret;
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

/*
 * One line per key, in ascending order; per vCPU with the VM's and the
 * thread's names from names (if any). Sorting the items leaves the index
 * pointing at the wrong ones: report time only, no bump after.
 */
static void print_counts(FILE *out, struct key_counts *kc, bool per_vcpu, struct ht_reader *names,
			 const char *what)
{
	if (kc->len)
		qsort(kc->items, kc->len, sizeof(*kc->items), cmp_key);
	for (size_t i = 0; i < kc->len; i++) {
		const struct key_count *k = &kc->items[i];

		if (per_vcpu) {
			const struct ht_identity *id =
				names ? ht_reader_identity(names, (__u32)(k->key >> 32), k->tid) : NULL;
			const char *vm = id ? (id->vm_name[0] ? id->vm_name : id->process_name) : "";
			char vm_text[HT_ESC_SIZE(sizeof(id->vm_name))], thread[HT_ESC_SIZE(sizeof(id->thread_name))];

			/* Names a VM owner chose: escaped, never raw on the terminal. */
			fprintf(out, "  %8llu %6llu %10llu  %-16s %s\n", (unsigned long long)(k->key >> 32),
				(unsigned long long)(k->key & 0xffffffffu), (unsigned long long)k->count,
				vm[0] ? ht_escape(vm_text, sizeof(vm_text), vm, HT_ESC_TEXT) : "-",
				id && id->thread_name[0] ? ht_escape(thread, sizeof(thread), id->thread_name, HT_ESC_TEXT) : "-");
		} else
			fprintf(out, "  %10llu %10llu\n", (unsigned long long)k->key,
				(unsigned long long)k->count);
	}
	if (kc->other_keys_records)
		fprintf(out, "  (%llu records of further %s, not listed: at most %d are)\n",
			(unsigned long long)kc->other_keys_records, what, HT_SUMMARY_MAX_KEYS);
}

void ht_summary_print(struct ht_summary *s, FILE *out, const char *path,
		      const struct ht_file_header *h, const struct ht_read_status *st,
		      struct ht_reader *names)
{
	static const char *const lat_names[LAT_N] = { "exit->hypercall", "hypercall->entry",
						      "total (exit->entry)" };
	__u64 p50[LAT_N], p99[LAT_N];
	char err[256];

	/* The header's strings are the file's: a crafted file chooses them. */
	fputs("file: ", out);
	ht_escape_fputs(out, path, HT_ESC_TEXT);
	fprintf(out, " (format %u), host kernel ", h->version);
	ht_escape_fputs(out, h->kernel_release, HT_ESC_TEXT);
	fputs(", CPU ", out);
	ht_escape_fputs(out, h->cpu_vendor, HT_ESC_TEXT);
	fputc('\n', out);
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
	if (st->vcpu_switches || (h->filter_flags & HT_FILTER_F_VCPU_SCHED))
		fprintf(out, "switches of vCPU threads: %llu (the whole file's; report --vcpu-switches --dump lists them)\n",
			st->vcpu_switches);
	if (st->vcpu_wakeups || (h->filter_flags & HT_FILTER_F_WAKEUPS))
		fprintf(out, "wake-ups of halted vCPUs: %llu (the whole file's; report --latency shows them)\n",
			st->vcpu_wakeups);
	if (st->vcpu_irqs || (h->version >= 14 && (h->filter_flags & HT_FILTER_F_WAKEUPS)))
		fprintf(out, "interrupt deliveries: %llu (the whole file's; report --latency shows them)\n", st->vcpu_irqs);
	if (st->has_trailer) {
		const struct ht_trailer *t = &st->trailer;
		fprintf(out, "dropped: %llu (ring buffer full %llu, no per-thread state %llu, another exit before entry %llu, not written: disk full %llu)\n",
			(unsigned long long)ht_trailer_lost(t), (unsigned long long)t->ringbuf_drops,
			(unsigned long long)t->state_alloc_fail, (unsigned long long)t->superseded,
			(unsigned long long)t->not_written);
		fprintf(out, "hypercall exits with an unselected nr: %llu\n",
			(unsigned long long)t->unselected_nr);
	} else {
		fprintf(out, "dropped: unknown (no trailer: %s)\n", st->reason);
	}
	if (s->forged)
		fprintf(out, "guest module events not from the guest kernel's module (forged, not decoded): %llu\n",
			s->forged);
	if (!s->records)
		return;

	fprintf(out, "\nper vCPU:\n  %8s %6s %10s  %-16s %s\n", "pid", "vcpu", "records", "vm", "thread");
	print_counts(out, &s->per_vcpu, true, names, "vCPUs");
	fprintf(out, "\nper hypercall nr:\n  %10s %10s\n", "nr", "records");
	print_counts(out, &s->per_nr, false, NULL, "nrs");

	int ret = percentiles(s, path, p50, p99, err, sizeof(err));
	fprintf(out, "\nlatency (ns):\n  %-20s %10s %10s %10s %10s %10s\n", "", "min", "avg", "p50",
		"p99", "max");
	for (int i = 0; i < LAT_N; i++) {
		struct series *ls = &s->lat[i];

		fprintf(out, "  %-20s %10llu %10.0f ", lat_names[i], (unsigned long long)ls->min,
			(double)ls->sum / (double)s->records);
		if (ret)
			fprintf(out, "%10s %10s ", "?", "?");
		else
			fprintf(out, "%10llu %10llu ", (unsigned long long)p50[i], (unsigned long long)p99[i]);
		fprintf(out, "%10llu\n", (unsigned long long)ls->max);
	}
	if (ret)
		fprintf(out, "p50/p99 unknown: %s\n", err);
}

void ht_summary_set_forged(struct ht_summary *s, unsigned long long forged)
{
	s->forged = forged;
}

void ht_summary_free(struct ht_summary *s)
{
	if (!s)
		return;
	ht_hashmap_clear(&s->per_vcpu.index);
	free(s->per_vcpu.items);
	ht_hashmap_clear(&s->per_nr.index);
	free(s->per_nr.items);
	for (int i = 0; i < LAT_N; i++) {
		ht_samples_free(&s->lat[i].samples);
		free(s->lat[i].buckets);
	}
	free(s);
}
