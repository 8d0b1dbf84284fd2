// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * report --irqs: the interrupts KVM delivered to each vCPU thread, from
 * their acceptance by the vCPU's local APIC to the guest running with them
 * (struct ht_vcpu_irqs), what a latency-sensitive tenant asks of a vCPU
 * that is not halted too: per class (the vCPU's timer, IPIs, devices) the
 * count, mean, p50, p99 and longest, and the mean's parts: waking the
 * halted thread, waiting for a host CPU, the rest (the exit that takes it
 * and KVM's entry); then the acceptances that were not timed, and why.
 */
#include "report/report_irqs.h"

#include <stdbool.h>
#include <stdio.h>
#include "common/wake_classes.h"
#include "exits/exit_view.h"
#include "exits/vcpu_wakeups.h"
#include "report/thread_label.h"

/* A thread's interrupts, or a VM's sum of them; unknown: its file holds none (of some thread). */
struct irqs_sum {
	struct ht_vcpu_irqs i;
	bool unknown;
};

/* ns / n in the short form, "-" for none. */
static void fmt_mean(char *buf, size_t len, uint64_t ns, uint64_t n)
{
	if (!n)
		snprintf(buf, len, "-");
	else
		ht_exit_fmt_ns(buf, len, ns / n);
}

/* A class's row: count, mean = waking + waiting + rest, p50, p99 and longest. */
static void class_row(const char *label, int width, const char *class, const struct ht_vcpu_wake_hist *k,
		      uint64_t woken_ns)
{
	uint64_t n = ht_wake_count(k);
	uint64_t rest = k->total_ns - k->wait_ns - woken_ns;
	char mean[16], woken[16], wait[16], rest_s[16], p50[16], p99[16], max[16];

	fmt_mean(mean, sizeof(mean), k->total_ns, n);
	fmt_mean(woken, sizeof(woken), woken_ns, n);
	fmt_mean(wait, sizeof(wait), k->wait_ns, n);
	fmt_mean(rest_s, sizeof(rest_s), rest, n);
	ht_exit_fmt_ns(p50, sizeof(p50), ht_wake_percentile(k, 50));
	ht_exit_fmt_ns(p99, sizeof(p99), ht_wake_percentile(k, 99));
	ht_exit_fmt_ns(max, sizeof(max), k->max_ns);
	printf("  %-*s %-6s %10llu %9s %9s %9s %9s %9s %9s %9s\n", width, label, class, (unsigned long long)n, mean,
	       woken, wait, rest_s, p50, p99, max);
}

/* The acceptances of a thread (or VM) that were not timed, one line; nothing if none. */
static void untimed_row(const char *label, int width, const struct ht_vcpu_irqs *i)
{
	if (!i->overlapped && !i->stale && !i->level)
		return;
	printf("  %-*s %-6s not timed: %llu while their vector was, %llu never seen injected, %llu level-triggered\n",
	       width, label, "", (unsigned long long)i->overlapped, (unsigned long long)i->stale, (unsigned long long)i->level);
}

static void irqs_rows(const char *label, int width, const struct ht_vcpu_irqs *i, bool unknown)
{
	int classes = 0;

	if (unknown) {
		printf("  %-*s ?      (the file holds no interrupts: recorded before they were counted)\n", width, label);
		return;
	}
	for (int c = 0; c < HT_IRQ_NCLASSES; c++) {
		if (!ht_wake_count(&i->c[c]))
			continue;
		class_row(label, width, ht_irq_class_names[c], &i->c[c], i->woken_ns[c]);
		classes++;
	}
	if (!classes && !i->accepted && !i->level)
		printf("  %-*s -      none\n", width, label);
	untimed_row(label, width, i);
}

static void irqs_columns(void *ctx, int width)
{
	struct irqs_sum *sum = ctx;

	*sum = (struct irqs_sum){ 0 };
	printf("  %-*s %-6s %10s %9s %9s %9s %9s %9s %9s %9s\n", width, "vCPU thread", "irq", "delivered", "mean",
	       "= waking", "+ waiting", "+ rest", "p50 <=", "p99 <=", "longest");
}

static void irqs_thread(void *ctx, const char *label, int width, const struct ht_vcpu_thread_row *r)
{
	struct irqs_sum *sum = ctx;

	irqs_rows(label, width, &r->irqs, r->no_irqs);
	ht_irqs_add(&sum->i, &r->irqs);
	sum->unknown |= r->no_irqs;
}

static void irqs_vm_end(void *ctx, int width, size_t nthreads)
{
	const struct irqs_sum *sum = ctx;

	if (nthreads > 1)
		irqs_rows("all its vCPU threads", width, &sum->i, sum->unknown);
}

static int write_text(const struct ht_exit_table *t, struct ht_reader *reader)
{
	static const struct ht_vcpu_view_ops ops = { irqs_columns, irqs_thread, irqs_vm_end };
	struct irqs_sum sum;
	int ret = ht_report_vcpu_view(t, reader, &ops, &sum);

	if (ret)
		return ret;
	puts("(irq: who sent it: timer the vCPU's own local APIC timer, ipi a vCPU of the VM, device another thread\n"
	     "of its VM process. waking: from the acceptance to the halted thread's wake-up; waiting: runnable\n"
	     "without a host CPU; rest: the exit that takes it, the injection and KVM's entry. The timer is\n"
	     "accepted by its own thread after its wake-up: report --halts times that wake-up.)");
	return 0;
}

static void write_rows(enum ht_report_mode mode, const struct ht_exit_table *t, struct ht_reader *reader)
{
	const bool json = mode == HT_REPORT_JSON;

	if (!json) {
		fputs(HT_REPORT_VCPU_ROW_CSV_HEAD ",irqs_accepted,irqs_overlapped,irqs_stale,irqs_level", stdout);
		for (int c = 0; c < HT_IRQ_NCLASSES; c++) {
			const char *n = ht_irq_class_names[c];

			printf(",%s,%s_ns,%s_woken_ns,%s_wait_ns,%s_max_ns,%s_p99_ns", n, n, n, n, n, n);
		}
		putchar('\n');
	}
	for (size_t r = 0; r < t->nthreads; r++) {
		const struct ht_vcpu_thread_row *row = &t->threads[r];
		const struct ht_vcpu_irqs *i = &row->irqs;

		ht_report_vcpu_row_start(stdout, json, row, reader);
		/* Unknown is empty in CSV and null in JSON: never a number that could be read as a value. */
		if (row->no_irqs) {
			if (json)
				puts(",\"irqs\":null}");
			for (int k = 0; !json && k < 4 + 6 * HT_IRQ_NCLASSES; k++)
				putchar(',');
			if (!json)
				putchar('\n');
			continue;
		}
		printf(json ? ",\"irqs\":{\"accepted\":%llu,\"overlapped\":%llu,\"stale\":%llu,\"level\":%llu"
			    : ",%llu,%llu,%llu,%llu",
		       (unsigned long long)i->accepted, (unsigned long long)i->overlapped, (unsigned long long)i->stale,
		       (unsigned long long)i->level);
		for (int c = 0; c < HT_IRQ_NCLASSES; c++) {
			const struct ht_vcpu_wake_hist *k = &i->c[c];
			unsigned long long n = ht_wake_count(k), p99 = ht_wake_percentile(k, 99);

			if (json)
				printf(",\"%s\":{\"count\":%llu,\"ns\":%llu,\"woken_ns\":%llu,\"wait_ns\":%llu,\"max_ns\":%llu,\"p99_ns\":%llu}",
				       ht_irq_class_names[c], n, (unsigned long long)k->total_ns,
				       (unsigned long long)i->woken_ns[c], (unsigned long long)k->wait_ns,
				       (unsigned long long)k->max_ns, p99);
			else
				printf(",%llu,%llu,%llu,%llu,%llu,%llu", n, (unsigned long long)k->total_ns,
				       (unsigned long long)i->woken_ns[c], (unsigned long long)k->wait_ns,
				       (unsigned long long)k->max_ns, p99);
		}
		puts(json ? "}}" : "");
	}
}

int ht_report_irqs(enum ht_report_mode mode, const struct ht_exit_table *window, struct ht_reader *reader)
{
	if (mode == HT_REPORT_CSV || mode == HT_REPORT_JSON) {
		write_rows(mode, window, reader);
		return 0;
	}
	return write_text(window, reader);
}
