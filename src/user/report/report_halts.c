// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * report --halts: what an operator tunes kvm.halt_poll_ns from. Per vCPU
 * thread: its halts in KVM, how many KVM polled in and how many of those
 * the polling caught (the vCPU never slept) with their time, how many slept
 * with their time in KVM (the polling that failed, then the sleep) and the
 * CPU that failed polling burned, and the halt_poll_ns in force at the
 * window's end (struct ht_vcpu_halts).
 * Then the wake-ups of the halts that slept, what a latency-sensitive
 * tenant asks: from the wake-up to the guest running, how much of it
 * waiting for a host CPU, by the interrupt it was for (struct
 * ht_vcpu_wakeups). Then the timer wake-ups from when their timer was due
 * (struct ht_vcpu_timer_due): the guest timer interrupt's latency as far
 * as the host sees it, with the host's lateness in firing it.
 */
#include "report/report_halts.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include "common/escape.h"
#include "exits/exit_view.h"
#include "exits/vcpu_wakeups.h"
#include "report/thread_label.h"

/* A mean of ns over n, in the short form ("-" for none). */
static void fmt_mean(char *buf, size_t len, uint64_t ns, uint64_t n)
{
	if (!n)
		snprintf(buf, len, "-");
	else
		ht_exit_fmt_ns(buf, len, ns / n);
}

/* A share of total in %, "-" for no total. */
static void fmt_share(char *buf, size_t len, uint64_t part, uint64_t total)
{
	if (total)
		snprintf(buf, len, "%.1f%%", 100.0 * (double)part / (double)total);
	else
		snprintf(buf, len, "-");
}

/* A thread's halt_poll_ns: "?" not known yet; sum_row: a VM's sum, which has none ("-"). */
static void fmt_poll_ns(char *buf, size_t len, uint32_t poll_ns, bool sum_row)
{
	if (sum_row)
		snprintf(buf, len, "-");
	else if (poll_ns == HT_HALT_POLL_NS_UNKNOWN)
		snprintf(buf, len, "?");
	else
		snprintf(buf, len, "%u", poll_ns);
}

/* The halts of a thread, or a VM's sum of them; slept_poll_unknown: its file holds no slept_poll_ns (of some thread). */
struct halts_sum {
	struct ht_vcpu_halts h;
	bool slept_poll_unknown;
};

static void text_row(const char *label, int width, const struct ht_vcpu_halts *h, bool slept_poll_unknown, bool sum_row)
{
	char caught_mean[16], slept_mean[16], poll[16], share[16], poll_lost[16];

	fmt_mean(caught_mean, sizeof(caught_mean), h->caught_ns, h->caught);
	fmt_mean(slept_mean, sizeof(slept_mean), h->slept_ns, h->slept);
	if (slept_poll_unknown)
		snprintf(poll_lost, sizeof(poll_lost), "?");
	else if (!h->polled)
		snprintf(poll_lost, sizeof(poll_lost), "-");
	else
		ht_exit_fmt_ns(poll_lost, sizeof(poll_lost), h->slept_poll_ns);
	fmt_poll_ns(poll, sizeof(poll), h->poll_ns, sum_row);
	fmt_share(share, sizeof(share), h->caught, h->polled);
	printf("  %-*s %9llu %9llu %9llu %7s %9s %9llu %9s %9s %8u %12s\n", width, label, (unsigned long long)h->halts,
	       (unsigned long long)h->polled, (unsigned long long)h->caught, share, caught_mean,
	       (unsigned long long)h->slept, slept_mean, poll_lost, h->poll_unknown, poll);
}

static void add_halts(struct ht_vcpu_halts *sum, const struct ht_vcpu_halts *h)
{
	sum->halts += h->halts;
	sum->polled += h->polled;
	sum->caught += h->caught;
	sum->caught_ns += h->caught_ns;
	sum->slept += h->slept;
	sum->slept_ns += h->slept_ns;
	sum->slept_poll_ns += h->slept_poll_ns;
	sum->poll_unknown += h->poll_unknown;
	ht_wakeups_add(&sum->wake, &h->wake);
}

/* A wake-up class's row: count, mean, p50, p99 and longest, its share waiting for a CPU. */
static void wake_row(const char *label, int width, const char *class, const struct ht_vcpu_wake_hist *k,
		     uint64_t reblocked)
{
	uint64_t n = ht_wake_count(k);
	char mean[16], p50[16], p99[16], max[16], wait[16];

	fmt_mean(mean, sizeof(mean), k->total_ns, n);
	ht_exit_fmt_ns(p50, sizeof(p50), ht_wake_percentile(k, 50));
	ht_exit_fmt_ns(p99, sizeof(p99), ht_wake_percentile(k, 99));
	ht_exit_fmt_ns(max, sizeof(max), k->max_ns);
	fmt_share(wait, sizeof(wait), k->wait_ns, k->total_ns);
	printf("  %-*s %-6s %9llu %9s %9s %9s %9s %8s %9llu\n", width, label, class, (unsigned long long)n, mean, p50,
	       p99, max, wait, (unsigned long long)reblocked);
}

/* A thread's (or a VM's) wake-ups: a row per class that had one, then all of them if more than one did. */
static void wake_rows(const char *label, int width, const struct ht_vcpu_wakeups *w)
{
	struct ht_vcpu_wake_hist all;
	int classes = 0;

	for (int c = 0; c < HT_WAKE_NCLASSES; c++) {
		if (!ht_wake_count(&w->c[c]))
			continue;
		wake_row(label, width, ht_wake_class_names[c], &w->c[c], classes ? 0 : w->reblocked);
		classes++;
	}
	if (classes > 1) {
		ht_wakeups_all(&all, w);
		wake_row(label, width, "all", &all, w->reblocked);
	} else if (!classes && w->reblocked) {
		wake_row(label, width, "-", &w->c[HT_WAKE_NONE], w->reblocked);
	}
}

/* The text view: a VM's vCPU threads' halts summed for its last row. */
static void halts_columns(void *ctx, int width)
{
	struct halts_sum *sum = ctx;

	*sum = (struct halts_sum){ .h.poll_ns = HT_HALT_POLL_NS_UNKNOWN };
	printf("  %-*s %9s %9s %9s %7s %9s %9s %9s %9s %8s %12s\n", width, "vCPU thread", "halts", "polled", "caught",
	       "of poll", "its mean", "slept", "its mean", "poll lost", "unknown", "halt_poll_ns");
}

static void halts_thread(void *ctx, const char *label, int width, const struct ht_vcpu_thread_row *r)
{
	struct halts_sum *sum = ctx;

	text_row(label, width, &r->h, r->no_slept_poll, false);
	add_halts(&sum->h, &r->h);
	sum->slept_poll_unknown |= r->no_slept_poll;
}

static void halts_vm_end(void *ctx, int width, size_t nthreads)
{
	const struct halts_sum *sum = ctx;

	if (nthreads > 1)
		text_row("all its vCPU threads", width, &sum->h, sum->slept_poll_unknown, true);
}

/* The wake-ups' view: a VM's vCPU threads' wake-ups summed for its last rows. */
static void wakeups_columns(void *ctx, int width)
{
	struct ht_vcpu_wakeups *sum = ctx;

	*sum = (struct ht_vcpu_wakeups){ 0 };
	printf("  %-*s %-6s %9s %9s %9s %9s %9s %8s %9s\n", width, "vCPU thread", "irq", "wake-ups", "mean", "p50 <=",
	       "p99 <=", "longest", "waiting", "reblocked");
}

static void wakeups_thread(void *ctx, const char *label, int width, const struct ht_vcpu_thread_row *r)
{
	wake_rows(label, width, &r->h.wake);
	ht_wakeups_add(ctx, &r->h.wake);
}

static void wakeups_vm_end(void *ctx, int width, size_t nthreads)
{
	if (nthreads > 1)
		wake_rows("all its vCPU threads", width, ctx);
}

/* The timer wake-ups' view from their due time: count, mean, p50, p99, longest, firing and waiting shares. */
static void due_row(const char *label, int width, const struct ht_vcpu_timer_due *d, bool unknown)
{
	uint64_t n = ht_wake_count(&d->h);
	char mean[16], p50[16], p99[16], max[16], fire[16], wait[16];

	if (unknown || !n) {
		printf("  %-*s %9s %9s %9s %9s %9s %8s %8s\n", width, label, unknown ? "?" : "0", "-", "-", "-", "-", "-", "-");
		return;
	}
	fmt_mean(mean, sizeof(mean), d->h.total_ns, n);
	ht_exit_fmt_ns(p50, sizeof(p50), ht_wake_percentile(&d->h, 50));
	ht_exit_fmt_ns(p99, sizeof(p99), ht_wake_percentile(&d->h, 99));
	ht_exit_fmt_ns(max, sizeof(max), d->h.max_ns);
	fmt_share(fire, sizeof(fire), d->fire_ns, d->h.total_ns);
	fmt_share(wait, sizeof(wait), d->h.wait_ns, d->h.total_ns);
	printf("  %-*s %9llu %9s %9s %9s %9s %8s %8s\n", width, label, (unsigned long long)n, mean, p50, p99, max, fire,
	       wait);
}

/* A VM's vCPU threads' timer wake-ups from their due time, summed; unknown: some thread's file holds none. */
struct due_sum {
	struct ht_vcpu_timer_due d;
	bool unknown;
};

static void due_columns(void *ctx, int width)
{
	struct due_sum *sum = ctx;

	*sum = (struct due_sum){ 0 };
	printf("  %-*s %9s %9s %9s %9s %9s %8s %8s\n", width, "vCPU thread", "wake-ups", "mean", "p50 <=", "p99 <=",
	       "longest", "firing", "waiting");
}

static void due_thread(void *ctx, const char *label, int width, const struct ht_vcpu_thread_row *r)
{
	struct due_sum *sum = ctx;

	due_row(label, width, &r->due, r->no_due);
	ht_timer_due_add(&sum->d, &r->due);
	sum->unknown |= r->no_due;
}

static void due_vm_end(void *ctx, int width, size_t nthreads)
{
	const struct due_sum *sum = ctx;

	if (nthreads > 1)
		due_row("all its vCPU threads", width, &sum->d, sum->unknown);
}

/*
 * Whether any thread of t had a timer wake-up with its due time, or its
 * file cannot say (else the view is left out: none was seen).
 */
static bool any_timer_due(const struct ht_exit_table *t)
{
	for (size_t i = 0; i < t->nthreads; i++)
		if (t->threads[i].no_due || ht_wake_count(&t->threads[i].due.h))
			return true;
	return false;
}

static int write_text(const struct ht_exit_table *t, struct ht_reader *reader)
{
	static const struct ht_vcpu_view_ops ops = { halts_columns, halts_thread, halts_vm_end };
	static const struct ht_vcpu_view_ops wake_ops = { wakeups_columns, wakeups_thread, wakeups_vm_end };
	static const struct ht_vcpu_view_ops due_ops = { due_columns, due_thread, due_vm_end };
	struct halts_sum sum;
	struct ht_vcpu_wakeups wake_sum;
	struct due_sum due_sum;
	int ret = ht_report_vcpu_view(t, reader, &ops, &sum);

	if (ret)
		return ret;
	puts("(poll lost: the CPU that polling burned in the halts that slept, from the halt's start to the sleep)");
	puts("\nWake-ups of the halts that slept, to the guest running (irq: the vector KVM injected first, timer\n"
	     "the vCPU's local APIC timer, vector another (IPI, device), none a posted interrupt or no interrupt;\n"
	     "waiting: its share runnable without a host CPU; reblocked: woken, then halted again before running):");
	ret = ht_report_vcpu_view(t, reader, &wake_ops, &wake_sum);
	if (ret || !any_timer_due(t))
		return ret;
	puts("\nTimer wake-ups from their timer's due time (KVM's hrtimer expiry for the guest's deadline) to the guest\n"
	     "running (firing: its share from the due time to the wake-up, the host firing the timer; waiting: its\n"
	     "share runnable without a host CPU; ?: the file holds none):");
	return ht_report_vcpu_view(t, reader, &due_ops, &due_sum);
}

/* A row's wake-ups, each class's count, time, wait, longest and p99 (a slot's upper bound), then the reblocked. */
static void write_wake_columns(bool json, const struct ht_vcpu_wakeups *w)
{
	if (json)
		fputs(",\"wakeups\":{", stdout);
	for (int c = 0; c < HT_WAKE_NCLASSES; c++) {
		const struct ht_vcpu_wake_hist *k = &w->c[c];
		unsigned long long n = ht_wake_count(k), p99 = ht_wake_percentile(k, 99);

		if (json)
			printf("\"%s\":{\"count\":%llu,\"ns\":%llu,\"wait_ns\":%llu,\"max_ns\":%llu,\"p99_ns\":%llu},",
			       ht_wake_class_names[c], n, (unsigned long long)k->total_ns, (unsigned long long)k->wait_ns,
			       (unsigned long long)k->max_ns, p99);
		else
			printf(",%llu,%llu,%llu,%llu,%llu", n, (unsigned long long)k->total_ns, (unsigned long long)k->wait_ns,
			       (unsigned long long)k->max_ns, p99);
	}
	printf(json ? "\"reblocked\":%llu}" : ",%llu", (unsigned long long)w->reblocked);
}

/*
 * A row's timer wake-ups from their due time: count, time, firing, wait,
 * longest and p99; empty (CSV) or null (JSON) where the file holds none.
 * Ends the row.
 */
static void write_due_columns(bool json, const struct ht_vcpu_timer_due *d, bool unknown)
{
	const struct ht_vcpu_wake_hist *k = &d->h;

	if (unknown)
		fputs(json ? ",\"timer_due\":null}\n" : ",,,,,,\n", stdout);
	else
		printf(json ? ",\"timer_due\":{\"count\":%llu,\"ns\":%llu,\"fire_ns\":%llu,\"wait_ns\":%llu,\"max_ns\":%llu,\"p99_ns\":%llu}}\n"
			    : ",%llu,%llu,%llu,%llu,%llu,%llu\n",
		       (unsigned long long)ht_wake_count(k), (unsigned long long)k->total_ns, (unsigned long long)d->fire_ns,
		       (unsigned long long)k->wait_ns, (unsigned long long)k->max_ns,
		       (unsigned long long)ht_wake_percentile(k, 99));
}

static void write_rows(enum ht_report_mode mode, const struct ht_exit_table *t, struct ht_reader *reader)
{
	const bool json = mode == HT_REPORT_JSON;

	if (!json) {
		fputs(HT_REPORT_VCPU_ROW_CSV_HEAD ",halts,polled,caught,caught_ns,slept,slept_ns,slept_poll_ns,poll_unknown,halt_poll_ns", stdout);
		for (int c = 0; c < HT_WAKE_NCLASSES; c++)
			printf(",wake_%s,wake_%s_ns,wake_%s_wait_ns,wake_%s_max_ns,wake_%s_p99_ns", ht_wake_class_names[c],
			       ht_wake_class_names[c], ht_wake_class_names[c], ht_wake_class_names[c], ht_wake_class_names[c]);
		puts(",wake_reblocked,timer_due,timer_due_ns,timer_due_fire_ns,timer_due_wait_ns,timer_due_max_ns,timer_due_p99_ns");
	}
	for (size_t i = 0; i < t->nthreads; i++) {
		const struct ht_vcpu_thread_row *r = &t->threads[i];
		const struct ht_vcpu_halts *h = &r->h;
		char poll[16], slept_poll[24];

		/* Unknown is empty in CSV and null in JSON: never a number that could be read as a value. */
		if (h->poll_ns == HT_HALT_POLL_NS_UNKNOWN)
			snprintf(poll, sizeof(poll), "%s", json ? "null" : "");
		else
			snprintf(poll, sizeof(poll), "%u", h->poll_ns);
		if (r->no_slept_poll)
			snprintf(slept_poll, sizeof(slept_poll), "%s", json ? "null" : "");
		else
			snprintf(slept_poll, sizeof(slept_poll), "%llu", (unsigned long long)h->slept_poll_ns);
		ht_report_vcpu_row_start(stdout, json, r, reader);
		printf(json ? ",\"halts\":%llu,\"polled\":%llu,\"caught\":%llu,\"caught_ns\":%llu,\"slept\":%llu,\"slept_ns\":%llu,\"slept_poll_ns\":%s,\"poll_unknown\":%u,\"halt_poll_ns\":%s"
			    : ",%llu,%llu,%llu,%llu,%llu,%llu,%s,%u,%s",
		       (unsigned long long)h->halts, (unsigned long long)h->polled, (unsigned long long)h->caught,
		       (unsigned long long)h->caught_ns, (unsigned long long)h->slept, (unsigned long long)h->slept_ns,
		       slept_poll, h->poll_unknown, poll);
		write_wake_columns(json, &h->wake);
		write_due_columns(json, &r->due, r->no_due);
	}
}

int ht_report_halts(enum ht_report_mode mode, const struct ht_exit_table *window, struct ht_reader *reader)
{
	if (mode == HT_REPORT_CSV || mode == HT_REPORT_JSON) {
		write_rows(mode, window, reader);
		return 0;
	}
	return write_text(window, reader);
}
