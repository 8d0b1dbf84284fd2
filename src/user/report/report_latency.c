// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `report --latency`: the wake-ups of halted vCPUs one by one (record
 * --wakeups), the question a latency-sensitive tenant asks: when an
 * interrupt was due for my vCPU, how long until its guest ran, and what
 * delayed it? Per VM, vCPU thread and interrupt class: the count, exact
 * p50/p99/max and the mean of each part (the wait for a host CPU; the rest,
 * the switch-in and KVM's way back into the guest) with a log2 histogram;
 * then the worst N wake-ups with their parts. Then the same for the
 * interrupts delivered to vCPUs (format 14 on): from each one's acceptance
 * by the vCPU's local APIC to the guest running with it, per class (timer,
 * ipi, device), its parts waking the halted thread, waiting for a host CPU
 * and the rest. --csv: one row per wake-up (kind "wakeup"), then one per
 * interrupt delivery (kind "irq": wake_ns is its acceptance, and woken_ns
 * its waking part); --json: the same rows as JSON lines.
 *
 * Every wake-up and interrupt delivery of the file is kept (56 bytes
 * each): memory and time are bounded by the file's size, each kind sorted
 * once by group and once by length. The recording's own count of each
 * kind (its EXITS blocks) is set beside the records' count, so ones the
 * file does not hold (lost to a full ring buffer) are shown, never silent.
 */
#include "report/report_latency.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "common/escape.h"
#include "common/latency_parts.h"
#include "common/wake_classes.h"
#include "common/nearest_rank.h"
#include "common/util.h"
#include "exits/exit_view.h"
#include "exits/vcpu_wakeups.h"
#include "hist/hist_view.h"
#include "hist/latency_hist.h"
#include "reading/read_outcome.h"
#include "report/thread_label.h"
#include "tracefile/trace_reader.h"
#include "tracefile/wallclock.h"

/*
 * One wake-up or interrupt delivery as this report keeps it: from start_ns
 * (the wake-up, the acceptance) to the guest running, total_ns, of which
 * woken_ns (an interrupt's, waking the halted thread) and wait_ns, each cut
 * to what the whole leaves (a file is input).
 */
struct lat_event {
	uint64_t start_ns, total_ns, woken_ns, wait_ns;
	uint64_t due_ns; /* a timer's wake-up or delivery: its local APIC timer was due at; 0: none, or not known */
	uint32_t pid, tid;
	uint32_t vector, timer_vector; /* HT_WAKE_VECTOR_NONE: not known */
	uint32_t cls; /* its kind's class, or a value no class has (a file is input): shown as its number */
	uint16_t vcpu, cpu;
};

/* The events of one kind, and what the recording counted of them. */
struct lat_events {
	struct lat_event *e;
	size_t n, cap;
	uint64_t counted; /* the last EXITS block's count, of the selected VMs and vCPUs */
	bool have_counts;
};

/* How a kind is told: its noun, its name in --csv's kind column, its classes' names, whether it has a waking part. */
struct lat_kind {
	const char *noun, *csv_name;
	const char *(*class_name)(uint32_t c, char *buf, size_t len);
	bool has_woken;
};

static const struct lat_kind wake_kind = { "wake-ups", "wakeup", ht_wake_class_name, false };
static const struct lat_kind irq_kind = { "interrupts", "irq", ht_irq_class_name, true };

struct latency_report {
	const struct ht_report_config *cfg;
	struct ht_reader *reader;
	const struct ht_file_header *h;
	struct lat_events wakes, irqs;
	struct ht_samples timer_late;     /* the timer wake-ups' times from due to wake-up */
	struct ht_samples irq_timer_late; /* the timer deliveries' times from due to acceptance */
	bool nomem;
};

static const char csv_header[] =
	"wake_ns,entry_ns,wallclock,host_pid,host_tid,vcpu_id,cpu,class,vector,timer_vector,total_ns,wait_ns,rest_ns,"
	"vm_name,process_name,thread_name,kind,woken_ns,due_ns\n";

/* Keeps ev in es; false (and r->nomem) if memory ran out. */
static bool keep(struct latency_report *r, struct lat_events *es, const struct lat_event *ev)
{
	if (es->n == es->cap) {
		size_t cap = es->cap ? 2 * es->cap : 1024;
		struct lat_event *e = realloc(es->e, cap * sizeof(*e));

		if (!e) {
			r->nomem = true;
			return false;
		}
		es->e = e;
		es->cap = cap;
	}
	es->e[es->n++] = *ev;
	return true;
}

/* The whole from start to end and its parts (common/latency_parts.h). */
static struct lat_event event_of(uint64_t start, uint64_t end, uint64_t woken, uint64_t wait)
{
	struct ht_latency_parts parts = ht_latency_parts(start, end, woken, wait);

	return (struct lat_event){
		.start_ns = start, .total_ns = parts.total_ns, .woken_ns = parts.woken_ns, .wait_ns = parts.wait_ns
	};
}

/*
 * A wake-up's time from its timer's due time to the wake-up, or a timer
 * delivery's to its acceptance (the host firing the timer) in *late: false
 * if it has no due time, or one after its start (a file is input: no
 * recording writes that).
 */
static bool timer_late(const struct lat_event *e, uint64_t *late)
{
	if (!e->due_ns || e->due_ns > e->start_ns)
		return false;
	*late = e->start_ns - e->due_ns;
	return true;
}

static void keep_wakeup(void *ctx, const struct ht_vcpu_wakeup *in)
{
	struct latency_report *r = ctx;

	/* Selected by its end, the guest running: where a record's time is. */
	if (r->nomem || !ht_selection_match_wakeup(&r->cfg->selection, in, r->reader))
		return;
	struct lat_event e = event_of(in->wake_ns, in->entry_ns, 0, in->wait_ns);

	e.pid = in->host_pid;
	e.tid = in->host_tid;
	e.vector = in->vector;
	e.timer_vector = in->timer_vector;
	e.due_ns = in->due_ns;
	e.cls = in->wake_class;
	e.vcpu = in->vcpu_id;
	e.cpu = in->cpu;
	if (!keep(r, &r->wakes, &e))
		return;
	uint64_t late;

	if (timer_late(&e, &late) && ht_samples_push(&r->timer_late, late))
		r->nomem = true;
}

static void keep_irq(void *ctx, const struct ht_vcpu_irq *in)
{
	struct latency_report *r = ctx;

	/* Selected by its end, the guest running, as a wake-up. */
	if (r->nomem || !ht_selection_match_irq(&r->cfg->selection, in, r->reader))
		return;
	struct lat_event e = event_of(in->accept_ns, in->entry_ns, in->woken_ns, in->wait_ns);

	e.pid = in->host_pid;
	e.tid = in->host_tid;
	e.vector = in->vector;
	e.timer_vector = HT_WAKE_VECTOR_NONE;
	e.due_ns = in->due_ns;
	e.cls = in->irq_class;
	e.vcpu = in->vcpu_id;
	e.cpu = in->cpu;
	if (!keep(r, &r->irqs, &e))
		return;
	uint64_t late;

	if (timer_late(&e, &late) && ht_samples_push(&r->irq_timer_late, late))
		r->nomem = true;
}

/* The recording's own counts: the wake-ups and interrupts of the selected threads in the latest EXITS block (cumulative). */
static void count_events(void *ctx, const struct ht_exits_header *h, const struct ht_exit_series_rec *series,
			 const struct ht_vcpu_wait_rec *threads)
{
	struct latency_report *r = ctx;
	const struct ht_selection *s = &r->cfg->selection;

	(void)series;
	r->wakes.counted = r->irqs.counted = 0;
	r->wakes.have_counts = r->irqs.have_counts = true;
	for (__u32 i = 0; i < h->nthreads; i++) {
		const struct ht_vcpu_wait_rec *t = &threads[i];

		if (!ht_selection_match_vm(s, t->w.pid, r->reader) || (s->vcpu_on && t->w.vcpu != s->vcpu))
			continue;
		r->wakes.counted += ht_wakeups_count(&t->h.wake);
		if (t->w.pad1 & HT_VCPU_WAIT_F_NO_IRQS)
			r->irqs.have_counts = false;
		else
			r->irqs.counted += ht_irqs_delivered(&t->i);
	}
}

static bool same_group(const struct lat_event *x, const struct lat_event *y)
{
	return x->pid == y->pid && x->tid == y->tid && x->vcpu == y->vcpu && x->cls == y->cls;
}

static int cmp_group(const void *a, const void *b)
{
	const struct lat_event *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->vcpu != y->vcpu)
		return x->vcpu < y->vcpu ? -1 : 1;
	if (x->cls != y->cls)
		return x->cls < y->cls ? -1 : 1;
	return x->total_ns < y->total_ns ? -1 : x->total_ns > y->total_ns;
}

/* Longest first; of equal ones, the earlier. */
static int cmp_worst(const void *a, const void *b)
{
	const struct lat_event *x = a, *y = b;

	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

static void print_label(struct latency_report *r, uint32_t pid, uint32_t tid)
{
	static const struct ht_identity unknown;
	const struct ht_identity *id = ht_reader_identity(r->reader, pid, tid);

	ht_print_thread_label(stdout, pid, tid, id ? id : &unknown);
}

/* "[waking W + ]wait A + rest R": the parts of a whole. */
static void print_parts(const struct lat_kind *k, uint64_t woken, uint64_t wait, uint64_t rest_ns)
{
	char w[32], a[32], rest[32];

	ht_exit_fmt_ns(w, sizeof(w), woken);
	ht_exit_fmt_ns(a, sizeof(a), wait);
	ht_exit_fmt_ns(rest, sizeof(rest), rest_ns);
	if (k->has_woken)
		printf("waking %s + ", w);
	printf("wait %s + rest %s", a, rest);
}

/* One group (a thread's vCPU and class), sorted by length: its line and its histogram. */
static void print_group(struct latency_report *r, const struct lat_kind *k, const struct lat_event *g, size_t n)
{
	char p50[32], p99[32], max[32], mean[32], cls[32];
	/* Wide: a crafted file's times may each be near 2^64, and the means must not wrap. */
	unsigned __int128 sum = 0, woken_sum = 0, wait_sum = 0;
	struct ht_hist hist;

	ht_hist_reset(&hist);
	for (size_t i = 0; i < n; i++) {
		sum += g[i].total_ns;
		woken_sum += g[i].woken_ns;
		wait_sum += g[i].wait_ns;
		ht_hist_add(&hist, g[i].total_ns);
	}
	ht_exit_fmt_ns(p50, sizeof(p50), g[ht_nearest_rank(50, n) - 1].total_ns);
	ht_exit_fmt_ns(p99, sizeof(p99), g[ht_nearest_rank(99, n) - 1].total_ns);
	ht_exit_fmt_ns(max, sizeof(max), g[n - 1].total_ns);
	ht_exit_fmt_ns(mean, sizeof(mean), (uint64_t)(sum / n));
	printf("  vcpu %u ", g->vcpu);
	print_label(r, g->pid, g->tid);
	printf(" %s: %zu %s, p50 %s, p99 %s, max %s; mean %s = ", k->class_name(g->cls, cls, sizeof(cls)), n, k->noun,
	       p50, p99, max, mean);
	print_parts(k, (uint64_t)(woken_sum / n), (uint64_t)(wait_sum / n), (uint64_t)((sum - woken_sum - wait_sum) / n));
	putchar('\n');
	ht_hv_render_hist(stdout, &hist, 72);
}

/*
 * The wake-ups that their local APIC timer's expiry began, or the timer
 * interrupts delivered: from the due time to the wake-up or the
 * acceptance, over all of them (the host's lateness in firing guests'
 * timers: a CPU's deep idle state, interrupts held off, a busy thread).
 */
static void print_timer_lateness(struct ht_samples *late, const char *what, size_t of)
{
	uint64_t v50, v99, vmax;
	char p50[32], p99[32], max[32];

	if (!ht_samples_percentile(late, 50, &v50) || !ht_samples_percentile(late, 99, &v99) ||
	    !ht_samples_percentile(late, 100, &vmax))
		return;
	ht_exit_fmt_ns(p50, sizeof(p50), v50);
	ht_exit_fmt_ns(p99, sizeof(p99), v99);
	ht_exit_fmt_ns(max, sizeof(max), vmax);
	printf("\n%s: %zu of %zu, p50 %s, p99 %s, max %s\n", what, late->len, of, p50, p99, max);
}

/* es sorted by cmp; none is no array (qsort's pointer must not be NULL, even for 0 elements). */
static void sort_events(struct lat_events *es, int (*cmp)(const void *, const void *))
{
	if (es->n)
		qsort(es->e, es->n, sizeof(*es->e), cmp);
}

/* Per VM, thread, vCPU and class: each group (sorts es by group). */
static void print_groups(struct latency_report *r, const struct lat_kind *k, struct lat_events *es)
{
	sort_events(es, cmp_group);
	for (size_t i = 0; i < es->n;) {
		size_t j = i + 1;

		if (!i || es->e[i].pid != es->e[i - 1].pid)
			printf("VM process %u\n", es->e[i].pid);
		while (j < es->n && same_group(&es->e[j], &es->e[i]))
			j++;
		print_group(r, k, &es->e[i], j - i);
		i = j;
	}
}

/* The worst N, longest first, each with its parts (sorts es by length). */
static void print_worst(struct latency_report *r, const struct lat_kind *k, struct lat_events *es, const char *title)
{
	char when[64], total[32], cls[32];
	size_t worst = r->cfg->worst < es->n ? r->cfg->worst : es->n;
	uint64_t late;

	sort_events(es, cmp_worst);
	printf("\nThe %zu %s:\n", worst, title);
	for (size_t i = 0; i < worst; i++) {
		const struct lat_event *e = &es->e[i];

		ht_format_wallclock(when, sizeof(when), r->h, e->start_ns, HT_TIME_ISO);
		ht_exit_fmt_ns(total, sizeof(total), e->total_ns);
		printf("  %s vcpu %u ", when, e->vcpu);
		print_label(r, e->pid, e->tid);
		printf(" %s", k->class_name(e->cls, cls, sizeof(cls)));
		if (e->vector != HT_WAKE_VECTOR_NONE)
			printf(" vector %u", e->vector);
		printf(": %s = ", total);
		print_parts(k, e->woken_ns, e->wait_ns, e->total_ns - e->woken_ns - e->wait_ns);
		printf(" (cpu %u", e->cpu);
		if (timer_late(e, &late)) {
			ht_exit_fmt_ns(total, sizeof(total), late);
			printf("; its timer due %s before", total);
		}
		puts(")");
	}
}

/* The file's count beside the recording's; a time window cuts the records, not the cumulative counts: only without one. */
static void print_counted(struct latency_report *r, const struct lat_events *es, const char *what)
{
	if (es->have_counts && !r->cfg->selection.since.on && !r->cfg->selection.until.on)
		printf("\n%zu %s in the file, of %llu the recording counted (%llu not in the file: lost to a full ring buffer)\n",
		       es->n, what, (unsigned long long)es->counted,
		       (unsigned long long)(es->counted > es->n ? es->counted - es->n : 0));
}

static void print_text(struct latency_report *r)
{
	printf("Wake-ups of halted vCPUs: from the sched_wakeup that ended the halt's sleep to the guest running\n");
	print_groups(r, &wake_kind, &r->wakes);
	print_worst(r, &wake_kind, &r->wakes, "longest wake-ups (wake-up to guest running = wait for a host CPU + the rest)");
	print_timer_lateness(&r->timer_late,
			     "Timer wake-ups from their timer's due time (KVM's hrtimer expiry) to the wake-up", r->wakes.n);
	print_counted(r, &r->wakes, "wake-ups");
	printf("\nInterrupts delivered to vCPUs: from their acceptance by the vCPU's local APIC to the guest running with them\n");
	if (r->h->version < 14) {
		printf("  (none: the file's format, %u, is older than interrupt delivery records, 14)\n", r->h->version);
		return;
	}
	print_groups(r, &irq_kind, &r->irqs);
	print_worst(r, &irq_kind, &r->irqs,
		    "longest interrupt deliveries (acceptance to guest running = waking the halted thread + wait for a host CPU + the rest)");
	print_timer_lateness(&r->irq_timer_late,
			     "Timer interrupts from their timer's due time (KVM's hrtimer expiry) to their acceptance",
			     r->irqs.n);
	print_counted(r, &r->irqs, "interrupt deliveries");
}

/* A vector in a row: a number, or none (empty in CSV, null in JSON) where none is known. */
static void print_vector(uint32_t v, bool json)
{
	if (v != HT_WAKE_VECTOR_NONE)
		printf("%u", v);
	else if (json)
		fputs("null", stdout);
}

/*
 * The rows of one kind, in CSV or JSON lines (the same fields; in JSON the
 * two times as decimal strings, exact past 2^53 as report --json's
 * exit_ns, the names as JSON strings): rest_ns is what the whole leaves
 * after the waking (interrupts only: none for a wake-up) and the wait.
 */
static void print_rows(struct latency_report *r, const struct lat_kind *kind, const struct lat_events *es, bool json)
{
	static const struct ht_identity unknown;
	void (*text)(FILE *f, const char *s) = json ? ht_json_fputs : ht_csv_fputs;
	char when[64], cls[32];

	for (size_t i = 0; i < es->n; i++) {
		const struct lat_event *w = &es->e[i];
		const struct ht_identity *id = ht_reader_identity(r->reader, w->pid, w->tid);

		if (!id)
			id = &unknown;
		ht_format_wallclock(when, sizeof(when), r->h, w->start_ns, HT_TIME_ISO);
		const char *cname = kind->class_name(w->cls, cls, sizeof(cls));

		if (json)
			printf("{\"kind\":\"%s\",", kind->csv_name);
		printf(json ? "\"wake_ns\":\"%llu\",\"entry_ns\":\"%llu\",\"wallclock\":\"%s\",\"host_pid\":%u,"
			      "\"host_tid\":%u,\"vcpu_id\":%u,\"cpu\":%u,\"class\":\"%s\",\"vector\":"
			    : "%llu,%llu,%s,%u,%u,%u,%u,%s,",
		       (unsigned long long)w->start_ns, (unsigned long long)(w->start_ns + w->total_ns), when, w->pid,
		       w->tid, w->vcpu, w->cpu, cname);
		print_vector(w->vector, json);
		fputs(json ? ",\"timer_vector\":" : ",", stdout);
		print_vector(w->timer_vector, json);
		printf(json ? ",\"total_ns\":%llu,\"wait_ns\":%llu,\"rest_ns\":%llu,\"woken_ns\":" : ",%llu,%llu,%llu,",
		       (unsigned long long)w->total_ns, (unsigned long long)w->wait_ns,
		       (unsigned long long)(w->total_ns - w->woken_ns - w->wait_ns));
		if (json)
			printf(kind->has_woken ? "%llu" : "null", (unsigned long long)w->woken_ns);
		fputs(json ? ",\"vm_name\":" : "", stdout);
		text(stdout, id->vm_name);
		fputs(json ? ",\"process_name\":" : ",", stdout);
		text(stdout, id->process_name);
		fputs(json ? ",\"thread_name\":" : ",", stdout);
		text(stdout, id->thread_name);
		if (json) {
			/* As the other times: a decimal string, exact past 2^53. */
			printf(w->due_ns ? ",\"due_ns\":\"%llu\"}\n" : ",\"due_ns\":null}\n", (unsigned long long)w->due_ns);
			continue;
		}
		printf(",%s,", kind->csv_name);
		if (kind->has_woken)
			printf("%llu", (unsigned long long)w->woken_ns);
		putchar(',');
		if (w->due_ns)
			printf("%llu", (unsigned long long)w->due_ns);
		putchar('\n');
	}
}

/* The wake-ups, then the interrupt deliveries, each kind in the file's order: CSV with its header, or JSON lines. */
static void print_rows_of_both(struct latency_report *r, bool json)
{
	if (!json)
		fputs(csv_header, stdout);
	print_rows(r, &wake_kind, &r->wakes, json);
	print_rows(r, &irq_kind, &r->irqs, json);
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
	ht_reader_set_irq_visitor(r.reader, keep_irq, &r);
	ht_reader_set_exits_visitor(r.reader, count_events, &r);
	while (ht_reader_next(r.reader, &rec) == 1)
		; /* the hypercalls are not this report's; the visitors take the wake-ups and the counts */
	const struct ht_read_status *st = ht_reader_status(r.reader);

	if (r.nomem) {
		status = ht_runtime_error("out of memory keeping %zu wake-ups and %zu interrupt deliveries of %s", r.wakes.n,
					  r.irqs.n, cfg->path);
	} else if (!st->vcpu_wakeups && !st->damaged && !(r.h->filter_flags & HT_FILTER_F_WAKEUPS)) {
		status = ht_runtime_error("%s has no wake-ups of halted vCPUs: it was recorded without --wakeups (record --wakeups -o FILE)",
					  cfg->path);
	} else {
		if (cfg->mode == HT_REPORT_CSV || cfg->mode == HT_REPORT_JSON) {
			print_rows_of_both(&r, cfg->mode == HT_REPORT_JSON);
		} else {
			print_text(&r);
		}
		fflush(stdout);
		status = ht_report_read_outcome(cfg->path, st);
	}
	free(r.wakes.e);
	free(r.irqs.e);
	ht_samples_free(&r.timer_late);
	ht_samples_free(&r.irq_timer_late);
	ht_reader_close(r.reader);
	return status;
}
