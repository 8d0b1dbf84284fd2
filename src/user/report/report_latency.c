// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `report --latency`: the wake-ups of halted vCPUs one by one (record
 * --wakeups), the question a latency-sensitive tenant asks: when an
 * interrupt was due for my vCPU, how long until its guest ran, and what
 * delayed it? Per VM, vCPU thread and interrupt class: the count, exact
 * p50/p99/max and the mean of each part (the wait for a host CPU; the rest,
 * the switch-in and KVM's way back into the guest) with a log2 histogram;
 * then the worst N wake-ups with their parts. --csv: one row per wake-up.
 *
 * Every wake-up of the file is kept (40 bytes each): memory and time are
 * bounded by the file's size, sorted once by group and once by length.
 * The recording's own count of the wake-ups (its EXITS blocks) is set
 * beside the records' count, so wake-ups the file does not hold (lost
 * to a full ring buffer) are shown, never silent.
 */
#include "report/report_latency.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "common/escape.h"
#include "common/nearest_rank.h"
#include "exits/exit_view.h"
#include "exits/vcpu_wakeups.h"
#include "hist/hist_view.h"
#include "hist/latency_hist.h"
#include "reading/read_outcome.h"
#include "report/thread_label.h"
#include "tracefile/trace_reader.h"
#include "tracefile/wallclock.h"

/* One wake-up as this report keeps it. */
struct wake {
	uint64_t wake_ns, total_ns, wait_ns;
	uint32_t pid, tid;
	uint32_t vector, timer_vector;
	uint32_t wake_class; /* enum ht_wake_class, or a value no class has (a file is input): shown as its number */
	uint16_t vcpu, cpu;
};

struct latency_report {
	const struct ht_report_config *cfg;
	struct ht_reader *reader;
	const struct ht_file_header *h;
	struct wake *w;
	size_t n, cap;
	bool nomem;
	/* The last EXITS block's count of every wake-up of the selected VMs and vCPUs. */
	uint64_t counted;
	bool have_counts;
};

static const char csv_header[] =
	"wake_ns,entry_ns,wallclock,host_pid,host_tid,vcpu_id,cpu,class,vector,timer_vector,total_ns,wait_ns,rest_ns,"
	"vm_name,process_name,thread_name\n";


static void keep_wakeup(void *ctx, const struct ht_vcpu_wakeup *in)
{
	struct latency_report *r = ctx;
	struct ht_vcpu_wakeup where = *in;

	/* Selected by its end, the guest running: where a record's time is. */
	if (r->nomem || !ht_selection_match_wakeup(&r->cfg->selection, &where, r->reader))
		return;
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 1024;
		struct wake *w = realloc(r->w, cap * sizeof(*w));

		if (!w) {
			r->nomem = true;
			return;
		}
		r->w = w;
		r->cap = cap;
	}
	/* A file is input: an entry before its wake-up, or a wait longer than the whole, is kept as 0 and the whole. */
	uint64_t total = in->entry_ns > in->wake_ns ? in->entry_ns - in->wake_ns : 0;
	r->w[r->n++] = (struct wake){
		.wake_ns = in->wake_ns,
		.total_ns = total,
		.wait_ns = in->wait_ns < total ? in->wait_ns : total,
		.pid = in->host_pid,
		.tid = in->host_tid,
		.vector = in->vector,
		.timer_vector = in->timer_vector,
		.vcpu = in->vcpu_id,
		.cpu = in->cpu,
		.wake_class = in->wake_class,
	};
}

/* The recording's own count: the wake-ups of the selected threads in the latest EXITS block (cumulative). */
static void count_wakeups(void *ctx, const struct ht_exits_header *h, const struct ht_exit_series_rec *series,
			  const struct ht_vcpu_wait_rec *threads)
{
	struct latency_report *r = ctx;
	const struct ht_selection *s = &r->cfg->selection;

	(void)series;
	r->counted = 0;
	r->have_counts = true;
	for (__u32 i = 0; i < h->nthreads; i++) {
		const struct ht_vcpu_wait_rec *t = &threads[i];

		if (!ht_selection_match_vm(s, t->w.pid, r->reader) || (s->vcpu_on && t->w.vcpu != s->vcpu))
			continue;
		r->counted += ht_wakeups_count(&t->h.wake);
	}
}

static int cmp_group(const void *a, const void *b)
{
	const struct wake *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->vcpu != y->vcpu)
		return x->vcpu < y->vcpu ? -1 : 1;
	if (x->wake_class != y->wake_class)
		return x->wake_class < y->wake_class ? -1 : 1;
	return x->total_ns < y->total_ns ? -1 : x->total_ns > y->total_ns;
}

/* Longest first; of equal ones, the earlier. */
static int cmp_worst(const void *a, const void *b)
{
	const struct wake *x = a, *y = b;

	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	return x->wake_ns < y->wake_ns ? -1 : x->wake_ns > y->wake_ns;
}

static void print_label(struct latency_report *r, uint32_t pid, uint32_t tid)
{
	static const struct ht_identity unknown;
	const struct ht_identity *id = ht_reader_identity(r->reader, pid, tid);

	ht_print_thread_label(stdout, pid, tid, id ? id : &unknown);
}

/* The nearest-rank percentile of a group's n wake-ups, sorted by length. */
static uint64_t percentile(const struct wake *g, size_t n, double p)
{
	return g[ht_nearest_rank(p, n) - 1].total_ns;
}

/* One group (a thread's vCPU and class), sorted by length: its line and its histogram. */
static void print_group(struct latency_report *r, const struct wake *g, size_t n)
{
	char p50[32], p99[32], max[32], mean[32], wait[32], rest[32], cls[32];
	/* Wide: a crafted file's times may each be near 2^64, and the means must not wrap. */
	unsigned __int128 sum = 0, wait_sum = 0;
	struct ht_hist hist;

	ht_hist_reset(&hist);
	for (size_t i = 0; i < n; i++) {
		sum += g[i].total_ns;
		wait_sum += g[i].wait_ns;
		ht_hist_add(&hist, g[i].total_ns);
	}
	ht_exit_fmt_ns(p50, sizeof(p50), percentile(g, n, 50));
	ht_exit_fmt_ns(p99, sizeof(p99), percentile(g, n, 99));
	ht_exit_fmt_ns(max, sizeof(max), g[n - 1].total_ns);
	ht_exit_fmt_ns(mean, sizeof(mean), (uint64_t)(sum / n));
	ht_exit_fmt_ns(wait, sizeof(wait), (uint64_t)(wait_sum / n));
	ht_exit_fmt_ns(rest, sizeof(rest), (uint64_t)((sum - wait_sum) / n));
	printf("  vcpu %u ", g->vcpu);
	print_label(r, g->pid, g->tid);
	printf(" %s: %zu wake-ups, p50 %s, p99 %s, max %s; mean %s = wait %s + rest %s\n",
	       ht_wake_class_name(g->wake_class, cls, sizeof(cls)), n,
	       p50, p99, max, mean, wait, rest);
	ht_hv_render_hist(stdout, &hist, 72);
}

static void print_worst(struct latency_report *r, size_t worst)
{
	char when[64], total[32], wait[32], rest[32], cls[32];

	if (worst > r->n)
		worst = r->n;
	qsort(r->w, r->n, sizeof(*r->w), cmp_worst);
	printf("\nThe %zu longest wake-ups (wake-up to guest running = wait for a host CPU + the rest):\n", worst);
	for (size_t i = 0; i < worst; i++) {
		const struct wake *w = &r->w[i];

		ht_format_wallclock(when, sizeof(when), r->h, w->wake_ns, HT_TIME_ISO);
		ht_exit_fmt_ns(total, sizeof(total), w->total_ns);
		ht_exit_fmt_ns(wait, sizeof(wait), w->wait_ns);
		ht_exit_fmt_ns(rest, sizeof(rest), w->total_ns - w->wait_ns);
		printf("  %s vcpu %u ", when, w->vcpu);
		print_label(r, w->pid, w->tid);
		printf(" %s", ht_wake_class_name(w->wake_class, cls, sizeof(cls)));
		if (w->vector != HT_WAKE_VECTOR_NONE)
			printf(" vector %u", w->vector);
		printf(": %s = wait %s + rest %s (cpu %u)\n", total, wait, rest, w->cpu);
	}
}

static void print_text(struct latency_report *r)
{
	printf("Wake-ups of halted vCPUs: from the sched_wakeup that ended the halt's sleep to the guest running\n");
	qsort(r->w, r->n, sizeof(*r->w), cmp_group);
	for (size_t i = 0; i < r->n;) {
		size_t j = i + 1;

		if (!i || r->w[i].pid != r->w[i - 1].pid)
			printf("VM process %u\n", r->w[i].pid);
		while (j < r->n && r->w[j].pid == r->w[i].pid && r->w[j].tid == r->w[i].tid &&
		       r->w[j].vcpu == r->w[i].vcpu && r->w[j].wake_class == r->w[i].wake_class)
			j++;
		print_group(r, &r->w[i], j - i);
		i = j;
	}
	print_worst(r, r->cfg->worst);
}

static void csv_text(const char *s)
{
	ht_csv_fputs(stdout, s);
}

static void print_csv(struct latency_report *r)
{
	static const struct ht_identity unknown;
	char when[64], cls[32];

	fputs(csv_header, stdout);
	for (size_t i = 0; i < r->n; i++) {
		const struct wake *w = &r->w[i];
		const struct ht_identity *id = ht_reader_identity(r->reader, w->pid, w->tid);

		if (!id)
			id = &unknown;
		ht_format_wallclock(when, sizeof(when), r->h, w->wake_ns, HT_TIME_ISO);
		printf("%llu,%llu,%s,%u,%u,%u,%u,%s,", (unsigned long long)w->wake_ns,
		       (unsigned long long)(w->wake_ns + w->total_ns), when, w->pid, w->tid, w->vcpu, w->cpu,
		       ht_wake_class_name(w->wake_class, cls, sizeof(cls)));
		if (w->vector != HT_WAKE_VECTOR_NONE)
			printf("%u", w->vector);
		putchar(',');
		if (w->timer_vector != HT_WAKE_VECTOR_NONE)
			printf("%u", w->timer_vector);
		printf(",%llu,%llu,%llu,", (unsigned long long)w->total_ns, (unsigned long long)w->wait_ns,
		       (unsigned long long)(w->total_ns - w->wait_ns));
		csv_text(id->vm_name);
		putchar(',');
		csv_text(id->process_name);
		putchar(',');
		csv_text(id->thread_name);
		putchar('\n');
	}
}

int ht_report_latency(struct ht_report_config *cfg)
{
	struct latency_report r = { .cfg = cfg };
	struct ht_record rec;
	char err[512];
	int status;

	if (ht_reader_open(cfg->path, &r.reader, err, sizeof(err)))
		return ht_runtime_error("%s", err);
	r.h = ht_reader_header(r.reader);
	if (ht_selection_resolve(&cfg->selection, r.h, err, sizeof(err))) {
		ht_reader_close(r.reader);
		return ht_usage_error("report", "%s", err);
	}
	ht_reader_set_wakeup_visitor(r.reader, keep_wakeup, &r);
	ht_reader_set_exits_visitor(r.reader, count_wakeups, &r);
	while (ht_reader_next(r.reader, &rec) == 1)
		; /* the hypercalls are not this report's; the visitors take the wake-ups and the counts */
	const struct ht_read_status *st = ht_reader_status(r.reader);

	if (r.nomem) {
		status = ht_runtime_error("out of memory keeping %zu wake-ups of %s", r.n, cfg->path);
	} else if (!st->vcpu_wakeups && !st->damaged && !(r.h->filter_flags & HT_FILTER_F_WAKEUPS)) {
		status = ht_runtime_error("%s has no wake-ups of halted vCPUs: it was recorded without --wakeups (record --wakeups -o FILE)",
					  cfg->path);
	} else {
		if (cfg->mode == HT_REPORT_CSV) {
			print_csv(&r);
		} else {
			print_text(&r);
			/* A time window cuts the records, not the cumulative counts: compared only without one. */
			if (r.have_counts && !cfg->selection.since.on && !cfg->selection.until.on)
				printf("\n%zu wake-ups in the file, of %llu the recording counted (%llu not in the file: lost to a full ring buffer)\n",
				       r.n, (unsigned long long)r.counted,
				       (unsigned long long)(r.counted > r.n ? r.counted - r.n : 0));
		}
		fflush(stdout);
		status = ht_report_read_outcome(cfg->path, st);
	}
	free(r.w);
	ht_reader_close(r.reader);
	return status;
}
