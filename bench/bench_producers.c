// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Many producers (make bench, item 2b): the ring buffer's cost per record
 * when producers on both CPUs submit at once, against one producer alone
 * (bench/producers.bpf.c). Rounds interleave every case; the verdict compares
 * the fastest rounds, as bench_hotpath does.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "hypertrace/record.h"
#include "producers.skel.h"
#include "record/tracer.h"

#define ROUNDS 21
#define PER_PRODUCER 200000 /* both producers' records fit in a 32 MiB shard */

enum { LOOP_ONLY, SHARED_RING, RING_PER_CPU, NCASES };
static const char *const names[NCASES] = {
	"loop alone (no ring)", "one ring shared by all CPUs", "a ring per CPU",
};

struct producer_args {
	__u32 which;
	__u32 iterations;
	__u32 slot;
};

struct producer {
	struct producers_bpf *skel;
	int which, cpu;
	pthread_barrier_t *start;
};

static int discard(void *ctx, void *data, size_t size)
{
	(void)ctx; (void)data; (void)size;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void *run_producer(void *arg)
{
	struct producer *p = arg;
	struct producer_args a = { .which = (__u32)p->which, .iterations = PER_PRODUCER, .slot = (__u32)p->cpu };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &a, .ctx_size_in = sizeof(a));

	pin(p->cpu);
	if (p->start)
		pthread_barrier_wait(p->start);
	if (bpf_prog_test_run_opts(bpf_program__fd(p->skel->progs.produce), &opts) || opts.retval) {
		fprintf(stderr, "bench_producers: run failed: %s\n", strerror(errno));
		exit(1);
	}
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ns per record of each producer (the slower one when two run), and records/s of all together. */
static void run_case(struct producers_bpf *skel, struct ring_buffer *rb, int which, int producers,
		     double *ns, double *rate)
{
	struct producer p[2] = { { skel, which, 0, NULL }, { skel, which, 1, NULL } };
	pthread_barrier_t start;
	pthread_t th[2];

	pthread_barrier_init(&start, NULL, (unsigned int)producers);
	for (int i = 0; i < producers; i++)
		p[i].start = &start;
	double t0 = now_s();
	for (int i = 0; i < producers; i++)
		pthread_create(&th[i], NULL, run_producer, &p[i]);
	for (int i = 0; i < producers; i++)
		pthread_join(th[i], NULL);
	double wall = now_s() - t0;
	pthread_barrier_destroy(&start);
	__u64 worst = skel->bss->producer_elapsed_ns[0];
	if (producers == 2 && skel->bss->producer_elapsed_ns[1] > worst)
		worst = skel->bss->producer_elapsed_ns[1];
	*ns = (double)worst / PER_PRODUCER;
	*rate = producers * PER_PRODUCER / (worst / 1e9);
	(void)wall;
	ring_buffer__consume(rb); /* empty rings for the next run: every reservation succeeds */
}

int main(void)
{
	struct producers_bpf *skel;
	struct ring_buffer *rb;
	double ns[NCASES][2][ROUNDS], rate[NCASES][2][ROUNDS];
	__u64 counters[HT_CNT_MAX] = { 0 };

	skel = producers_bpf__open();
	if (!skel)
		return 1;
	bpf_map__set_max_entries(skel->maps.records, HT_DEFAULT_RINGBUF_BYTES);
	skel->rodata->wakeup_shift = ht_wakeup_shift_for(ht_wakeup_bytes_for(HT_DEFAULT_RINGBUF_BYTES));
	if (producers_bpf__load(skel)) {
		fprintf(stderr, "bench_producers: cannot load the benchmark programs\n");
		return 1;
	}
	rb = ring_buffer__new(bpf_map__fd(skel->maps.records), discard, NULL, NULL);
	if (!rb || ring_buffer__add(rb, bpf_map__fd(skel->maps.ring_shard0), discard, NULL) ||
	    ring_buffer__add(rb, bpf_map__fd(skel->maps.ring_shard1), discard, NULL))
		return 1;
	for (int r = 0; r < ROUNDS; r++)
		for (int c = 0; c < NCASES; c++)
			for (int k = 0; k < 2; k++)
				run_case(skel, rb, c, k + 1, &ns[c][k][r], &rate[c][k][r]);
	/* Drops would make the timings meaningless: the rings are emptied after every run. */
	int fd = bpf_map__fd(skel->maps.counters);
	int ncpus = libbpf_num_possible_cpus();
	__u64 vals[ncpus > 0 ? ncpus : 1];
	__u32 key = HT_CNT_RINGBUF_DROPS;
	if (ncpus > 0 && !bpf_map_lookup_elem(fd, &key, vals))
		for (int i = 0; i < ncpus; i++)
			counters[HT_CNT_RINGBUF_DROPS] += vals[i];

	double best[NCASES][2], med[NCASES][2], best_rate[NCASES][2];
	for (int c = 0; c < NCASES; c++)
		for (int k = 0; k < 2; k++) {
			qsort(ns[c][k], ROUNDS, sizeof(double), cmp_double);
			qsort(rate[c][k], ROUNDS, sizeof(double), cmp_double);
			best[c][k] = ns[c][k][0];
			med[c][k] = ns[c][k][ROUNDS / 2];
			best_rate[c][k] = rate[c][k][ROUNDS - 1];
		}
	printf("Producers into the ring buffer (bpf_loop per CPU, %d records each, %d rounds; fastest round / median)\n",
	       PER_PRODUCER, ROUNDS);
	printf("  %-30s %22s %22s %14s %14s\n", "", "1 CPU ns/record", "2 CPUs ns/record", "1 CPU rec/s", "2 CPUs rec/s");
	for (int c = 0; c < NCASES; c++)
		printf("  %-30s %10.1f / %9.1f %10.1f / %9.1f %12.2fM %12.2fM\n", names[c], best[c][0], med[c][0],
		       best[c][1], med[c][1], best_rate[c][0] / 1e6, best_rate[c][1] / 1e6);
	double ring_alone = best[SHARED_RING][0] - best[LOOP_ONLY][0];
	double ring_both = best[SHARED_RING][1] - best[LOOP_ONLY][1];
	double shard_alone = best[RING_PER_CPU][0] - best[LOOP_ONLY][0];
	double shard_both = best[RING_PER_CPU][1] - best[LOOP_ONLY][1];
	printf("  the ring's own cost per record (minus the loop): shared %.1f ns alone, %.1f ns with 2 CPUs (%.2fx);"
	       " per CPU %.1f ns alone, %.1f ns with 2 CPUs (%.2fx)\n",
	       ring_alone, ring_both, ring_both / ring_alone, shard_alone, shard_both, shard_both / shard_alone);
	printf("  aggregate records/s, 2 CPUs vs 1: shared ring %.2fx, ring per CPU %.2fx\n",
	       best_rate[SHARED_RING][1] / best_rate[SHARED_RING][0], best_rate[RING_PER_CPU][1] / best_rate[RING_PER_CPU][0]);
	if (counters[HT_CNT_RINGBUF_DROPS])
		printf("  WARNING: %llu records dropped: the timings include failed reservations\n",
		       (unsigned long long)counters[HT_CNT_RINGBUF_DROPS]);
	ring_buffer__free(rb);
	producers_bpf__destroy(skel);
	return 0;
}
