// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Drain throughput (make bench, item 2). A producer thread on CPU 0 submits
 * fused records into the real ring buffer (the synthetic_fill program) at a
 * set rate or as fast as it can; the real consumer (ht_recording: drain +
 * writer) runs on CPU 1 and writes a trace file on tmpfs or on disk. Reports
 * records/s written, drops, and the consumer's CPU time, with the production
 * ring buffer size and wake-up policy.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "record/recording.h"
#include "record/tracer.h"
#include "common/util.h"

#define RUN_SECONDS 1.5
#define BATCH 8192

struct fill_args {
	__u64 seq;
	__u32 count;
	__u32 pad;
};

struct producer {
	const struct ht_tracer *tracer;
	double rate;          /* records/s; 0: as fast as possible */
	volatile int stop;
	unsigned long long produced;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void *produce(void *arg)
{
	struct producer *p = arg;
	int fd = ht_tracer_synthetic_fd(p->tracer, HT_SYNTH_FILL);
	double start = now_s();

	pin(0);
	while (!p->stop) {
		struct fill_args a = { .seq = p->produced, .count = BATCH };
		LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &a, .ctx_size_in = sizeof(a));
		if (bpf_prog_test_run_opts(fd, &opts))
			break;
		p->produced += BATCH;
		/* Pace to the target rate: spin until this batch is due (sleeping is too coarse). */
		while (p->rate > 0 && !p->stop && now_s() - start < p->produced / p->rate)
			;
	}
	return NULL;
}

struct result {
	double written_per_s, consumer_cpu_s, elapsed;
	unsigned long long written, drops, produced;
};

static int run(const char *dir, double rate, unsigned int encoding, struct result *res)
{
	struct ht_tracer_opts o = { .synthetic = true, .ringbuf_bytes = HT_DEFAULT_RINGBUF_BYTES,
				    .wakeup_bytes = ht_wakeup_bytes_for(HT_DEFAULT_RINGBUF_BYTES) };
	struct ht_tracer *t;
	struct ht_writer *w;
	struct ht_recording rec;
	struct ht_file_header hdr;
	struct ht_trailer trailer;
	struct producer p = { .rate = rate };
	struct rusage ru0, ru1;
	char path[256], err[512];
	pthread_t th;

	ht_filters_default(&o.filters);
	if (ht_tracer_load(&t, &o, err, sizeof(err))) {
		fprintf(stderr, "bench_drain: %s\n", err);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/bench-drain.htr", dir);
	ht_header_init(&hdr);
	if (ht_writer_open(path, true, &hdr, &w, err, sizeof(err)) || ht_writer_set_encoding(w, encoding) ||
	    ht_recording_init(&rec, t, w)) {
		fprintf(stderr, "bench_drain: %s\n", err);
		return -1;
	}
	p.tracer = t;
	pin(1);
	getrusage(RUSAGE_THREAD, &ru0);
	double start = now_s();
	pthread_create(&th, NULL, produce, &p);
	/* The daemon's loop, as in record.c: 100 ms poll timeout, wake-ups on threshold crossings. */
	while (now_s() - start < RUN_SECONDS)
		if (ht_recording_pump(&rec, 100) < 0)
			break;
	p.stop = 1;
	pthread_join(th, NULL);
	/* The rate is over the producing period; shutdown (detach, final drain) is not load. */
	res->elapsed = now_s() - start;
	if (ht_recording_finish(&rec, &trailer)) {
		fprintf(stderr, "bench_drain: finishing the file failed\n");
		return -1;
	}
	getrusage(RUSAGE_THREAD, &ru1);
	res->consumer_cpu_s = (ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) + (ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
			      ((ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) + (ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec)) / 1e6;
	res->written = trailer.records;
	res->drops = trailer.ringbuf_drops;
	res->produced = p.produced;
	res->written_per_s = trailer.records / res->elapsed;
	ht_tracer_destroy(t);
	unlink(path);
	return 0;
}

int main(int argc, char **argv)
{
	const char *disk_dir = argc > 1 ? argv[1] : ".";
	static const double rates[] = { 5e6, 10e6, 15e6, 20e6, 0 };
	static const double compressed_rates[] = { 1e6, 2e6, 4e6, 0 };
	struct { const char *name, *dir; unsigned int encoding; const double *rates; size_t nrates; } places[] = {
		{ "tmpfs", "/dev/shm", HT_ENCODING_RAW, rates, 5 },
		{ "disk", disk_dir, HT_ENCODING_RAW, rates, 5 },
		{ "tmpfs -z", "/dev/shm", HT_ENCODING_DELTA_ZLIB, compressed_rates, 4 },
	};
	struct result r;
	int met = 0;

	printf("Drain throughput (defaults: ring buffer %u MiB, wake-up every %lu KiB of data; records of %zu B)\n",
	       HT_DEFAULT_RINGBUF_BYTES >> 20, ht_wakeup_bytes_for(HT_DEFAULT_RINGBUF_BYTES) >> 10,
	       sizeof(struct ht_record));
	printf("  %-8s %12s %14s %12s %10s %14s\n", "file", "offered/s", "written/s", "drops", "drop %", "consumer CPU");
	for (size_t pl = 0; pl < ARRAY_SIZE(places); pl++) {
		for (size_t i = 0; i < places[pl].nrates; i++) {
			double rate = places[pl].rates[i];
			if (run(places[pl].dir, rate, places[pl].encoding, &r))
				return 1;
			char offered[32];
			if (rate > 0)
				snprintf(offered, sizeof(offered), "%.0fM", rate / 1e6);
			else
				snprintf(offered, sizeof(offered), "max %.1fM", r.produced / r.elapsed / 1e6);
			printf("  %-8s %12s %13.2fM %12llu %9.3f%% %12.0f%%\n", places[pl].name, offered,
			       r.written_per_s / 1e6, r.drops, 100.0 * r.drops / (r.drops + r.written ? r.drops + r.written : 1),
			       100.0 * r.consumer_cpu_s / r.elapsed);
			if (pl == 0 && rate == 10e6 && r.drops == 0 && r.written_per_s >= 10e6 * 0.99)
				met = 1;
		}
	}
	printf("TARGET %-52s %s\n", ">= 10 M records/s with 0 drops (tmpfs, one consumer core)", met ? "met" : "NOT MET");
	return 0;
}
