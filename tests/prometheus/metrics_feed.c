// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test driver for tests/prometheus: the recording pipeline of `record
 * --metrics` in one process, fed with synthetic hypercalls through the real
 * BPF handlers (the host cannot run a guest). File mode: ring buffer, drain,
 * trace file and the metrics observer; --no-file: the BPF aggregates. When
 * every record is drained and published it writes READY (what it fired, and
 * with --no-file the log2 bounds of p50/p99), then keeps serving /metrics
 * until STOP exists or 120 s pass.
 *
 * Usage: metrics_feed PORT COUNT READY STOP (--file FILE.htr | --no-file)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "hist/latency_hist.h"
#include "record/metrics_exporter.h"
#include "record/recording.h"
#include "synth.h"
#include "common/util.h"

#define SERVE_MAX_S 120

static struct ht_synth_layout layout;
static struct ht_tracer *tracer;

static void spin_ns(unsigned long long ns)
{
	unsigned long long end = ht_monotonic_ns() + ns;

	while (ht_monotonic_ns() < end)
		;
}

/*
 * Hypercall i on vCPU i % 3. A few are held between exit and hypercall, so
 * the latencies spread over several log2 buckets and p50 and p99 differ.
 */
static int hypercall(unsigned int i)
{
	__u32 vcpu = i % 3;

	if (ht_synth_exit(&layout, tracer, HT_ISA_SVM, HT_SVM_EXIT_CODE_VMMCALL, 0x1000, vcpu))
		return -1;
	if (i % 100 >= 98)
		spin_ns(40000);
	else if (i % 100 >= 90)
		spin_ns(5000);
	if (ht_synth_hypercall(&layout, tracer, 1000, i, 0, 0, 0))
		return -1;
	return ht_synth_entry(&layout, tracer, vcpu, 0x1003);
}

static void sum_total(void *ctx, __u64 key, const struct ht_agg_hist *h)
{
	uint64_t slots[HT_HIST_SLOTS];

	(void)key;
	for (int i = 0; i < HT_HIST_SLOTS; i++)
		slots[i] = h->slots[HT_AGG_TOTAL][i];
	ht_hist_add_slots(ctx, slots);
}

static int fail(const char *what, const char *why)
{
	fprintf(stderr, "metrics_feed: %s: %s\n", what, why);
	return 1;
}

int main(int argc, char **argv)
{
	struct ht_tracer_opts o = { .isa = HT_ISA_SVM, .synthetic = true, .ringbuf_bytes = 16 << 20,
				    .group_by = HT_AGG_BY_VCPU };
	struct ht_metrics_opts mo = { .version = "feed", .log = stderr };
	struct ht_recording rec = { 0 };
	struct ht_metrics *m = NULL;
	const char *file = NULL;
	char spec[32], err[512];
	unsigned int count;
	__u64 c[HT_CNT_MAX];
	FILE *ready;

	if (argc != 6 && argc != 7)
		return fail("usage", "metrics_feed PORT COUNT READY STOP (--file FILE.htr | --no-file)");
	count = (unsigned int)strtoul(argv[2], NULL, 10);
	if (!strcmp(argv[5], "--no-file"))
		o.aggregate_only = o.aggregate_by_nr = mo.aggregate = true;
	else if (!strcmp(argv[5], "--file") && argc == 7)
		file = argv[6];
	else
		return fail("usage", "metrics_feed PORT COUNT READY STOP (--file FILE.htr | --no-file)");
	snprintf(spec, sizeof(spec), "127.0.0.1:%s", argv[1]);
	if (!ht_listen_addr_parse(spec, &mo.addr))
		return fail(spec, "not a port");
	ht_filters_default(&o.filters);
	mo.filters = &o.filters;
	if (ht_synth_layout_load(&layout, err, sizeof(err)) ||
	    ht_tracer_load(&tracer, &o, err, sizeof(err)) ||
	    ht_metrics_start(&m, &mo, err, sizeof(err)))
		return fail("setup", err);
	if (file) {
		struct ht_writer *w;
		struct ht_file_header h;

		ht_header_init(&h);
		if (ht_writer_open(file, true, &h, &w, err, sizeof(err)))
			return fail(file, err);
		if (ht_recording_init(&rec, tracer, w))
			return fail("recording", strerror(errno));
		rec.observer = ht_metrics_observe;
		rec.observer_ctx = m;
	}

	/*
	 * The synthetic programs must not be preempted half-way (see
	 * ht_synth_hold_cpu); only this thread: the metrics server's, made
	 * above, keeps the normal policy.
	 */
	int held = ht_synth_hold_cpu();
	if (held)
		fprintf(stderr, "metrics_feed: note: cannot hold the CPU (%s): a real switch may cut a synthetic event\n",
			strerror(-held));
	for (unsigned int i = 0; i < count; i++) {
		if (hypercall(i))
			return fail("synthetic event", strerror(errno));
		/* As record's loop: drain a batch and publish when due, while events keep coming. */
		if (i % 500 == 499) {
			if (file && ht_recording_pump(&rec, 0) < 0)
				return fail("drain", "pump failed");
			ht_metrics_update(m, tracer, file ? &rec : NULL, ht_monotonic_ns(), false);
		}
	}
	if (file) {
		struct ht_trailer t;

		if (ht_recording_finish(&rec, &t))
			return fail(file, "cannot finish the trace file");
	}
	ht_metrics_update(m, tracer, file ? &rec : NULL, ht_monotonic_ns(), true);

	if (ht_tracer_counters(tracer, c))
		return fail("counters", "cannot read");
	ready = fopen(argv[3], "w");
	if (!ready)
		return fail(argv[3], strerror(errno));
	fprintf(ready, "fired %u\ndropped %llu\n", count,
		(unsigned long long)(c[HT_CNT_RINGBUF_DROPS] + c[HT_CNT_STATE_ALLOC_FAIL] + c[HT_CNT_SUPERSEDED] +
				     c[HT_CNT_AGG_GROUPS_FULL]));
	if (!file) {
		struct ht_hist h;

		ht_hist_reset(&h);
		ht_tracer_read_aggregates(tracer, sum_total, &h);
		fprintf(ready, "p50_high_ns %llu\np99_high_ns %llu\n",
			(unsigned long long)ht_hist_slot_high(ht_hist_slot(ht_hist_percentile(&h, 50).ns)),
			(unsigned long long)ht_hist_slot_high(ht_hist_slot(ht_hist_percentile(&h, 99).ns)));
	}
	fclose(ready);

	for (int i = 0; i < SERVE_MAX_S * 10 && access(argv[4], F_OK) != 0; i++)
		usleep(100000);
	ht_metrics_stop(m);
	ht_tracer_destroy(tracer);
	return 0;
}
