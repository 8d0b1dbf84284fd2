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
#include "synth.h"
#include "test.h"
#include "tracefile/trace_reader.h"
#include "record/tracer.h"
#include "common/util.h"

static char path[] = "/tmp/ht-drain-XXXXXX";
static struct ht_tracer *tracer;

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

static void *produce(void *arg)
{
	(void)arg;
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

static void cleanup(void)
{
	ht_tracer_destroy(tracer);
	tracer = NULL;
	unlink(path);
}

static void every_record_produced_is_written_in_order_or_counted_as_dropped(void)
{
	/* 64 KiB: ~740 records, so the ring wraps around thousands of times. */
	struct ht_tracer_opts o = { .synthetic = true, .ringbuf_bytes = 64 << 10,
				    .wakeup_bytes = ht_wakeup_bytes_for(64 << 10) };
	struct ht_recording rec;
	struct ht_writer *w;
	struct ht_file_header h;
	struct ht_trailer t;
	struct ht_reader *r;
	struct ht_record x;
	char err[512];
	pthread_t th;

	ht_filters_default(&o.filters);
	CHECK(ht_tracer_load(&tracer, &o, err, sizeof(err)) == 0, "%s", err);
	ht_header_init(&h);
	CHECK(ht_writer_open(path, true, &h, &w, err, sizeof(err)) == 0, "%s", err);
	CHECK(ht_recording_init(&rec, tracer, w) == 0, "recording");
	stop = 0;
	produced = 0;
	pthread_create(&th, NULL, produce, NULL);
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		CHECK(ht_recording_pump(&rec, 10) >= 0, "pump failed");
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 < 150);
	stop = 1;
	pthread_join(th, NULL);
	CHECK(ht_recording_finish(&rec, &t) == 0, "finish");
	CHECK(rec.write_error == 0, "write error %d", rec.write_error);
	CHECK_EQ_U64(t.not_written, 0);

	CHECK(produced > 20 * 740, "only %llu records produced", produced);
	CHECK_EQ_U64(t.records + t.ringbuf_drops, produced);
	CHECK(t.records > 0, "nothing written");
	CHECK(ht_reader_open(path, &r, err, sizeof(err)) == 0, "%s", err);
	unsigned long long n = 0, last = 0;
	int in_order = 1;
	while (ht_reader_next(r, &x) == 1) {
		if (n && x.a1 <= last)
			in_order = 0;
		last = x.a1;
		n++;
	}
	ht_reader_close(r);
	CHECK_EQ_U64(n, t.records);
	CHECK(in_order, "records out of order or repeated");
	printf("    (%llu produced, %llu written, %llu dropped)\n", produced,
	       (unsigned long long)t.records, (unsigned long long)t.ringbuf_drops);
}

struct fill_on_cpu {
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
	f->ret = bpf_prog_test_run_opts(ht_tracer_synthetic_fd(tracer, HT_SYNTH_FILL), &opts);
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
	struct fill_on_cpu fills[2] = { { 0, 0, 3000, 0 }, { 1, 1500, 3000, 0 } };
	struct ht_recording rec;
	struct ht_writer *w;
	struct ht_file_header h;
	struct ht_trailer t;
	struct ht_reader *r;
	struct ht_record x;
	char err[512];

	if (libbpf_num_possible_cpus() < 2)
		SKIP("one CPU: one ring, nothing to merge");
	ht_filters_default(&o.filters);
	CHECK(ht_tracer_load(&tracer, &o, err, sizeof(err)) == 0, "%s", err);
	for (int i = 0; i < 2; i++) {
		pthread_t th;
		pthread_create(&th, NULL, fill_on_cpu, &fills[i]);
		pthread_join(th, NULL);
		CHECK(fills[i].ret == 0, "fill on CPU %d: %s", fills[i].cpu, strerror(errno));
	}
	ht_header_init(&h);
	CHECK(ht_writer_open(path, true, &h, &w, err, sizeof(err)) == 0, "%s", err);
	CHECK(ht_recording_init(&rec, tracer, w) == 0, "recording");
	CHECK(ht_recording_pump(&rec, 0) == 6000, "one pass takes both rings");
	CHECK(ht_recording_finish(&rec, &t) == 0, "finish");
	CHECK_EQ_U64(t.records, 6000);
	CHECK(ht_reader_open(path, &r, err, sizeof(err)) == 0, "%s", err);
	unsigned long long n = 0, last = 0, from_cpu1_early = 0;
	int in_order = 1;
	while (ht_reader_next(r, &x) == 1) {
		if (n && x.exit_ns < last)
			in_order = 0;
		if (x.entry_cpu == 1 && n < 3000)
			from_cpu1_early++;
		last = x.exit_ns;
		n++;
	}
	ht_reader_close(r);
	CHECK_EQ_U64(n, 6000);
	CHECK(in_order, "records not in time order");
	CHECK(from_cpu1_early == 750, "%llu of CPU 1's records among the first 3000, expected 750", from_cpu1_early);
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
	struct ht_recording rec;
	struct ht_writer *w;
	struct ht_file_header h;
	struct ht_trailer t;
	char err[512];

	if (ht_synth_layout_load(&l, err, sizeof(err)))
		SKIP("%s", err);
	ht_filters_default(&o.filters);
	CHECK(ht_tracer_load(&tracer, &o, err, sizeof(err)) == 0, "%s", err);
	ht_header_init(&h);
	CHECK(ht_writer_open(path, true, &h, &w, err, sizeof(err)) == 0, "%s", err);
	CHECK(ht_recording_init(&rec, tracer, w) == 0, "recording");
	/* One whole hypercall with real clock readings, then at once a pump: too recent. */
	__u64 before_entry = ht_monotonic_ns();
	CHECK(ht_synth_exit(&l, tracer, HT_ISA_SVM, HT_SVM_EXIT_CODE_VMMCALL, 0x1000, 0) == 0 &&
	      ht_synth_hypercall(&l, tracer, 1000, 1, 2, 3, 4) == 0 && ht_synth_entry(&l, tracer, 0, 0x1003) == 0,
	      "events");
	int n = ht_recording_pump(&rec, 0);
	/* Only if this thread was not held up longer than the slack meanwhile (a loaded machine). */
	if (ht_monotonic_ns() - before_entry < HT_DRAIN_ORDER_SLACK_NS)
		CHECK(n == 0, "a record younger than the slack was written");
	usleep(HT_DRAIN_ORDER_SLACK_NS / 1000 + 1000);
	CHECK(n + ht_recording_pump(&rec, 0) == 1, "the record was not written once older than the slack");
	/* A second one, taken by the final drain however recent. */
	CHECK(ht_synth_exit(&l, tracer, HT_ISA_SVM, HT_SVM_EXIT_CODE_VMMCALL, 0x1000, 0) == 0 &&
	      ht_synth_hypercall(&l, tracer, 1000, 1, 2, 3, 4) == 0 && ht_synth_entry(&l, tracer, 0, 0x1003) == 0,
	      "events");
	CHECK(ht_recording_finish(&rec, &t) == 0, "finish");
	CHECK_EQ_U64(t.records, 2);
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
	CHECK(ht_drain_new(&fd, 1, &sink, &d) == -EINVAL, "an array map was accepted");
	close(fd);
}

int main(void)
{
	if (geteuid() != 0) {
		printf("SKIP: drain: the in-kernel tests load BPF programs and need root\n");
		return 0;
	}
	int fd = mkstemp(path);
	if (fd < 0) {
		printf("FAIL: drain_setup: %s\n", strerror(errno));
		return 1;
	}
	close(fd);
	ht_test_cleanup = cleanup;
	RUN(every_record_produced_is_written_in_order_or_counted_as_dropped);
	RUN(records_of_every_cpu_are_merged_in_time_order);
	RUN(a_record_is_written_once_it_is_older_than_the_order_slack);
	RUN(a_map_that_is_not_a_ring_buffer_is_refused);
	return ht_test_exit_status();
}
