// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The ring buffer consumer under load: a producer thread keeps submitting
 * records (the synthetic_fill program: same ring, wake-up policy and drop
 * counter as kvm_entry) while the recording pumps, through a ring small enough
 * to wrap around many times. Every record produced is either in the file, in
 * order, or counted as dropped. Needs root.
 */
#include <errno.h>
#include <sched.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "hypertrace/synthetic_fill.h"
#include "record/recording.h"
#include "kernel_test.h"
#include "synth.h"
#include "test.h"
#include "tracefile/trace_reader.h"
#include "record/tracer.h"
#include "common/util.h"

static char path[] = "/tmp/ht-drain-XXXXXX";

static volatile int stop;
static unsigned long long produced;

/* Records go to the ring of the CPU that emits them; a thread kept on one CPU fills one ring. */
static void stay_on_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void *produce(void *tracer)
{
	int fd = ht_tracer_synthetic_fd(tracer, HT_SYNTH_FILL);

	stay_on_cpu(sched_getcpu());

	while (!stop) {
		struct ht_synthetic_fill_args a = { .seq = produced, .count = 2000 };
		LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &a, .ctx_size_in = sizeof(a));
		if (bpf_prog_test_run_opts(fd, &opts))
			break;
		produced += a.count;
	}
	return NULL;
}

/* The tracer of o, its filters the defaults: false after a failed assertion. */
static bool tracer_loaded(struct ht_tracer_opts *o, struct ht_tracer **tracer)
{
	char err[512];

	ht_filters_default(&o->filters);
	return ASSERT_MSG(ht_tracer_load(tracer, o, err, sizeof(err)) == 0, "%s", err);
}

/* A recording of tracer into path, as record starts one: false after a failed assertion. */
static bool recording_started(struct ht_tracer *tracer, struct ht_recording *rec)
{
	struct ht_file_header h;
	struct ht_writer *w = NULL;
	char err[512];

	ht_header_init(&h);
	if (!ASSERT_MSG(ht_writer_open(path, true, &h, &w, err, sizeof(err)) == 0, "%s", err))
		return false;
	/* The recording owns the writer from here, even if it fails. */
	return ASSERT_MSG(ht_recording_init(rec, tracer, w) == 0, "recording");
}

static void every_record_produced_is_written_in_order_or_counted_as_dropped(void)
{
	/* 64 KiB: ~740 records, so the ring wraps around thousands of times. */
	struct ht_tracer_opts o = { .synthetic = true, .ringbuf_bytes = 64 << 10,
				    .wakeup_bytes = ht_wakeup_bytes_for(64 << 10) };
	struct ht_tracer *tracer = NULL;
	struct ht_recording rec = { 0 };
	struct ht_trailer t;
	struct ht_reader *r;
	struct ht_record x;
	struct timespec t0, now;
	unsigned long long n = 0, last = 0;
	int in_order = 1, pumped;
	char err[512];
	pthread_t th;

	if (!tracer_loaded(&o, &tracer))
		goto cleanup;
	if (!recording_started(tracer, &rec))
		goto cleanup;
	stop = 0;
	produced = 0;
	pthread_create(&th, NULL, produce, tracer);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		pumped = ht_recording_pump(&rec, 10);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (pumped >= 0 && (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 < 150);
	/* The producer stops before anything it uses is freed. */
	stop = 1;
	pthread_join(th, NULL);
	if (!ASSERT_MSG(pumped >= 0, "pump failed"))
		goto cleanup;
	if (!ASSERT_MSG(ht_recording_finish(&rec, &t) == 0, "finish"))
		goto cleanup;
	if (!ASSERT_MSG(rec.write_error == 0, "write error %d", rec.write_error))
		goto cleanup;
	if (!ASSERT_EQ(t.not_written, 0, "value"))
		goto cleanup;

	if (!ASSERT_MSG(produced > 20 * 740, "only %llu records produced", produced))
		goto cleanup;
	if (!ASSERT_EQ(t.records + t.ringbuf_drops, produced, "value"))
		goto cleanup;
	if (!ASSERT_MSG(t.records > 0, "nothing written"))
		goto cleanup;
	if (!ASSERT_MSG(ht_reader_open(path, &r, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	while (ht_reader_next(r, &x) == 1) {
		if (n && x.a1 <= last)
			in_order = 0;
		last = x.a1;
		n++;
	}
	ht_reader_close(r);
	if (!ASSERT_EQ(n, t.records, "value"))
		goto cleanup;
	if (!ASSERT_MSG(in_order, "records out of order or repeated"))
		goto cleanup;
	printf("    (%llu produced, %llu written, %llu dropped)\n", produced,
	       (unsigned long long)t.records, (unsigned long long)t.ringbuf_drops);
cleanup:
	ht_recording_abandon(&rec); /* nothing left after a finish */
	ht_tracer_destroy(tracer);
	unlink(path);
}

struct fill_on_cpu {
	struct ht_tracer *tracer;
	int cpu;
	__u64 seq;
	__u32 count;
	int ret;
};

static void *fill_on_cpu(void *arg)
{
	struct fill_on_cpu *f = arg;
	struct ht_synthetic_fill_args a = { .seq = f->seq, .count = f->count };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &a, .ctx_size_in = sizeof(a));

	stay_on_cpu(f->cpu);
	f->ret = bpf_prog_test_run_opts(ht_tracer_synthetic_fd(f->tracer, HT_SYNTH_FILL), &opts);
	return NULL;
}

/*
 * Each CPU has its own ring; the drain merges them by time. Synthetic records
 * carry their sequence number as their time: CPU 0 emits 0..2999, CPU 1
 * 1500..4499, so the file must interleave both rings.
 */
static void records_of_every_cpu_are_merged_in_time_order(void)
{
	struct ht_tracer_opts o = { .synthetic = true, .ringbuf_bytes = 4 << 20,
				    .wakeup_bytes = ht_wakeup_bytes_for(4 << 20) };
	struct fill_on_cpu fills[2] = { { NULL, 0, 0, 3000, 0 }, { NULL, 1, 1500, 3000, 0 } };
	struct ht_tracer *tracer = NULL;
	struct ht_recording rec = { 0 };
	struct ht_trailer t;
	struct ht_reader *r;
	struct ht_record x;
	unsigned long long n = 0, last = 0, from_cpu1_early = 0;
	int in_order = 1;
	char err[512];

	if (libbpf_num_possible_cpus() < 2)
		SKIP("one CPU: one ring, nothing to merge");
	if (!tracer_loaded(&o, &tracer))
		goto cleanup;
	for (int i = 0; i < 2; i++) {
		pthread_t th;
		fills[i].tracer = tracer;
		pthread_create(&th, NULL, fill_on_cpu, &fills[i]);
		pthread_join(th, NULL);
		if (!ASSERT_MSG(fills[i].ret == 0, "fill on CPU %d: %s", fills[i].cpu, strerror(errno)))
			goto cleanup;
	}
	if (!recording_started(tracer, &rec))
		goto cleanup;
	if (!ASSERT_MSG(ht_recording_pump(&rec, 0) == 6000, "one pass takes both rings"))
		goto cleanup;
	if (!ASSERT_MSG(ht_recording_finish(&rec, &t) == 0, "finish"))
		goto cleanup;
	if (!ASSERT_EQ(t.records, 6000, "value"))
		goto cleanup;
	if (!ASSERT_MSG(ht_reader_open(path, &r, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	while (ht_reader_next(r, &x) == 1) {
		if (n && x.exit_ns < last)
			in_order = 0;
		if (x.entry_cpu == 1 && n < 3000)
			from_cpu1_early++;
		last = x.exit_ns;
		n++;
	}
	ht_reader_close(r);
	if (!ASSERT_EQ(n, 6000, "value"))
		goto cleanup;
	if (!ASSERT_MSG(in_order, "records not in time order"))
		goto cleanup;
	ASSERT_MSG(from_cpu1_early == 750, "%llu of CPU 1's records among the first 3000, expected 750", from_cpu1_early);
cleanup:
	ht_recording_abandon(&rec); /* nothing left after a finish */
	ht_tracer_destroy(tracer);
	unlink(path);
}

/*
 * A record is written once every CPU's earlier records are surely in their
 * rings: HT_DRAIN_ORDER_SLACK_NS after its kvm_entry. Before that the pump
 * leaves it in its ring; after detaching, the final drain takes it at once.
 */
static void a_record_is_written_once_it_is_older_than_the_order_slack(void)
{
	struct ht_tracer_opts o = { .isa = HT_ISA_SVM, .synthetic = true, .ringbuf_bytes = 1 << 20 };
	struct ht_synth_layout l;
	struct ht_tracer *tracer = NULL;
	struct ht_recording rec = { 0 };
	struct ht_trailer t;
	__u64 before_entry;
	char err[512];
	int n;

	if (ht_synth_layout_load(&l, err, sizeof(err)))
		SKIP("%s", err);
	if (!tracer_loaded(&o, &tracer))
		goto cleanup;
	if (!recording_started(tracer, &rec))
		goto cleanup;
	/* One whole hypercall with real clock readings, then at once a pump: too recent. */
	before_entry = ht_monotonic_ns();
	if (!ASSERT_MSG(ht_synth_exit(&l, tracer, HT_ISA_SVM, HT_SVM_EXIT_CODE_VMMCALL, 0x1000, 0) == 0 &&
			ht_synth_hypercall(&l, tracer, 1000, 1, 2, 3, 4) == 0 && ht_synth_entry(&l, tracer, 0, 0x1003) == 0,
			"events"))
		goto cleanup;
	n = ht_recording_pump(&rec, 0);
	/* Only if this thread was not held up longer than the slack meanwhile (a loaded machine). */
	if (ht_monotonic_ns() - before_entry < HT_DRAIN_ORDER_SLACK_NS)
		if (!ASSERT_MSG(n == 0, "a record younger than the slack was written"))
			goto cleanup;
	usleep(HT_DRAIN_ORDER_SLACK_NS / 1000 + 1000);
	if (!ASSERT_MSG(n + ht_recording_pump(&rec, 0) == 1, "the record was not written once older than the slack"))
		goto cleanup;
	/* A second one, taken by the final drain however recent. */
	if (!ASSERT_MSG(ht_synth_exit(&l, tracer, HT_ISA_SVM, HT_SVM_EXIT_CODE_VMMCALL, 0x1000, 0) == 0 &&
			ht_synth_hypercall(&l, tracer, 1000, 1, 2, 3, 4) == 0 && ht_synth_entry(&l, tracer, 0, 0x1003) == 0,
			"events"))
		goto cleanup;
	if (!ASSERT_MSG(ht_recording_finish(&rec, &t) == 0, "finish"))
		goto cleanup;
	ASSERT_EQ(t.records, 2, "value");
cleanup:
	ht_recording_abandon(&rec); /* nothing left after a finish */
	ht_tracer_destroy(tracer);
	unlink(path);
}

struct trickle {
	const struct ht_synth_layout *l;
	struct ht_tracer *tracer;
	unsigned int sent, failed;
};

/* A hypercall every 2 ms with real clock readings, as VMs that tick send them, until stop. */
static void *trickle(void *arg)
{
	struct trickle *tr = arg;

	stay_on_cpu(sched_getcpu()); /* exit, hypercall and entry of one CPU's slot */
	while (!stop) {
		if (ht_synth_exit(tr->l, tr->tracer, HT_ISA_SVM, HT_SVM_EXIT_CODE_VMMCALL, 0x1000, 0) ||
		    ht_synth_hypercall(tr->l, tr->tracer, 1000, tr->sent, 2, 3, 4) ||
		    ht_synth_entry(tr->l, tr->tracer, 0, 0x1003))
			tr->failed++;
		else
			tr->sent++;
		usleep(2000);
	}
	return NULL;
}

/*
 * Records that keep coming a few hundred a second, each too recent for the
 * pass that sees it first (HT_DRAIN_ORDER_SLACK_NS), are taken at the next
 * wake-up or timeout: the pump waits, it does not come back every
 * millisecond for them (a thousand passes a second on an idle host whose
 * VMs tick). In 300 ms of pumps with a 100 ms timeout and no wake-up (a few
 * records never reach the ring's wake-up bytes), a handful of passes;
 * every record written, in order.
 */
static void records_that_trickle_in_are_waited_for_not_polled(void)
{
	struct ht_tracer_opts o = { .isa = HT_ISA_SVM, .synthetic = true, .ringbuf_bytes = 1 << 20 };
	struct ht_synth_layout l;
	struct ht_tracer *tracer = NULL;
	struct ht_recording rec = { 0 };
	struct ht_trailer t;
	struct trickle tr = { 0 };
	struct ht_reader *r = NULL;
	struct ht_record x;
	unsigned long long start, passes = 0, n = 0, last = 0;
	bool in_order = true, started = false;
	char err[512];
	pthread_t th;

	if (ht_synth_layout_load(&l, err, sizeof(err)))
		SKIP("%s", err);
	o.wakeup_bytes = ht_wakeup_bytes_for(o.ringbuf_bytes);
	if (!tracer_loaded(&o, &tracer))
		goto cleanup;
	if (!recording_started(tracer, &rec))
		goto cleanup;
	tr = (struct trickle){ .l = &l, .tracer = tracer };
	stop = 0;
	if (!ASSERT_MSG(pthread_create(&th, NULL, trickle, &tr) == 0, "pthread_create"))
		goto cleanup;
	started = true;
	start = ht_monotonic_ns();
	while (ht_monotonic_ns() - start < 300000000ull) {
		if (!ASSERT_MSG(ht_recording_pump(&rec, 100) >= 0, "pump failed"))
			goto cleanup;
		passes++;
	}
	stop = 1;
	pthread_join(th, NULL);
	started = false;
	/* 300 ms at 100 ms a wait: 3 or 4 passes; 1 ms a pass would be about 300. */
	if (!ASSERT_MSG(tr.sent >= 20 && !tr.failed, "%u hypercalls sent, %u failed", tr.sent, tr.failed) ||
	    !ASSERT_MSG(passes <= 6, "%llu passes in 300 ms for %u records", passes, tr.sent))
		goto cleanup;
	if (!ASSERT_MSG(ht_recording_finish(&rec, &t) == 0, "finish") || !ASSERT_EQ(t.records, tr.sent, "value"))
		goto cleanup;
	if (!ASSERT_MSG(ht_reader_open(path, &r, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	while (ht_reader_next(r, &x) == 1) {
		if (x.a0 != n || (n && x.exit_ns < last))
			in_order = false;
		last = x.exit_ns;
		n++;
	}
	ASSERT_MSG(n == tr.sent && in_order, "%llu of %u records read back, %s", n, tr.sent,
		   in_order ? "in order" : "out of order");
cleanup:
	if (started) {
		stop = 1;
		pthread_join(th, NULL);
	}
	if (r)
		ht_reader_close(r);
	ht_recording_abandon(&rec); /* nothing left after a finish */
	ht_tracer_destroy(tracer);
	unlink(path);
}

static struct ht_record *slots_nowhere(void *ctx, unsigned int *room)
{
	static struct ht_record one;

	(void)ctx;
	*room = 1;
	return &one;
}

static int commit_nothing(void *ctx, unsigned int n)
{
	(void)ctx;
	(void)n;
	return 0;
}

/* The consumer maps the ring buffer's layout: any other map must be refused, not mapped. */
static void a_map_that_is_not_a_ring_buffer_is_refused(void)
{
	struct ht_record_sink sink = { .slots = slots_nowhere, .commit = commit_nothing };
	struct ht_drain *d = NULL;
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "not_a_ring", 4, 8, 1, NULL);

	CHECK(fd >= 0, "bpf_map_create: %s", strerror(errno));
	ASSERT_MSG(ht_drain_new(&fd, 1, &sink, &d) == -EINVAL, "an array map was accepted");
	ht_drain_free(d);
	close(fd);
}

int main(void)
{
	ht_kernel_test_begin("drain", NULL, path);
	RUN(every_record_produced_is_written_in_order_or_counted_as_dropped);
	RUN(records_of_every_cpu_are_merged_in_time_order);
	RUN(a_record_is_written_once_it_is_older_than_the_order_slack);
	RUN(records_that_trickle_in_are_waited_for_not_polled);
	RUN(a_map_that_is_not_a_ring_buffer_is_refused);
	unlink(path);
	return ht_test_exit_status();
}
