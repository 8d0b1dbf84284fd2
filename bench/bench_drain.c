// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Drain throughput (make bench, item 2), as ratios to references measured in
 * the same run. One producer thread on CPU 0 submits fused records into the
 * real ring buffer of its CPU (the synthetic_fill program) at a set rate; the
 * consumer runs on CPU 1 and writes them to a file on tmpfs. Three consumers, same
 * producer, ring size, wake-up policy and file system:
 *   (a) copy limit: moves the ring's bytes to the file in blocks of the
 *       writer's size with no per-record work (what a consumer cannot beat);
 *   (b) libbpf: ring_buffer__new + ring_buffer__poll, its callback handing
 *       each record to the same trace writer;
 *   (c) the project's drain as `record` runs it (ht_recording).
 * For each: the highest offered rate with 0 drops (a bisection, the three
 * consumers interleaved round by round so the machine's noise hits all of
 * them alike; a rate fails when two runs at it drop) and the consumer's CPU
 * time per record at one common rate.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "hypertrace/synthetic_fill.h"
#include "record/recording.h"
#include "record/tracer.h"
#include "common/util.h"
#include "bench_util.h"

#define RUN_SECONDS 1.0
#define BATCH 4096
#define SEARCH_ROUNDS 6
/* A ring sample: 8-byte header + the record. */
#define SAMPLE_BYTES (BPF_RINGBUF_HDR_SZ + sizeof(struct ht_record))

enum consumer { COPY, LIBBPF, DRAIN, NCONSUMERS };
static const char *const consumer_names[NCONSUMERS] = {
	"(a) copy limit: ring bytes to the file, no per-record work",
	"(b) libbpf ring_buffer__poll + the trace writer",
	"(c) hypertrace-bpf drain, as record runs it",
};

struct producer {
	const struct ht_tracer *tracer;
	double rate;          /* records/s; 0: as fast as possible */
	volatile int stop;
	unsigned long long produced;
	double elapsed, cpu_s;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_s(int who)
{
	struct rusage ru;

	getrusage(who, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void *produce(void *arg)
{
	struct producer *p = arg;
	int fd = ht_tracer_synthetic_fd(p->tracer, HT_SYNTH_FILL);
	double start, cpu0;

	pin(0);
	cpu0 = cpu_s(RUSAGE_THREAD);
	start = now_s();
	while (!p->stop) {
		struct ht_synthetic_fill_args a = { .seq = p->produced, .count = BATCH };
		LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &a, .ctx_size_in = sizeof(a));
		if (bpf_prog_test_run_opts(fd, &opts))
			break;
		p->produced += BATCH;
		/* Pace to the target rate: spin until this batch is due (sleeping is too coarse). */
		while (p->rate > 0 && !p->stop && now_s() - start < p->produced / p->rate)
			;
	}
	p->elapsed = now_s() - start;
	p->cpu_s = cpu_s(RUSAGE_THREAD) - cpu0;
	return NULL;
}

static int write_all(int fd, const void *data, size_t len)
{
	const unsigned char *p = data;

	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* (a): the rings mapped as drain.c maps them; bytes go out as they are, a writer block at a time. */
struct copy_ring {
	size_t mask, map_len;
	unsigned long *consumer_pos;
	void *producer_map;
	const unsigned long *producer_pos;
	const unsigned char *data;
};

struct copy_consumer {
	int fd, epfd;
	size_t page;
	unsigned int nrings;
	struct copy_ring rings[HT_MAX_RINGS];
	unsigned long long bytes;
};

static int copy_open(struct copy_consumer *c, const struct ht_tracer *t, const char *path)
{
	unsigned int n;
	const int *fds = ht_tracer_ring_fds(t, &n);

	memset(c, 0, sizeof(*c));
	c->page = (size_t)sysconf(_SC_PAGESIZE);
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (c->epfd < 0)
		return -errno;
	for (; c->nrings < n; c->nrings++) {
		struct copy_ring *r = &c->rings[c->nrings];
		struct bpf_map_info info;
		__u32 len = sizeof(info);
		struct epoll_event ev = { .events = EPOLLIN };

		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(fds[c->nrings], &info, &len))
			return -errno;
		r->mask = info.max_entries - 1;
		r->consumer_pos = mmap(NULL, c->page, PROT_READ | PROT_WRITE, MAP_SHARED, fds[c->nrings], 0);
		r->map_len = c->page + 2 * (size_t)info.max_entries;
		r->producer_map = mmap(NULL, r->map_len, PROT_READ, MAP_SHARED, fds[c->nrings], (off_t)c->page);
		if (r->consumer_pos == MAP_FAILED || r->producer_map == MAP_FAILED)
			return -errno;
		r->producer_pos = r->producer_map;
		r->data = (const unsigned char *)r->producer_map + c->page;
		if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, fds[c->nrings], &ev))
			return -errno;
	}
	c->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	return c->fd < 0 ? -errno : 0;
}

/* Moves up to one writer block of each ring's bytes to the file; 0 if the rings were empty. */
static long copy_step(struct copy_consumer *c)
{
	long moved = 0;

	for (unsigned int i = 0; i < c->nrings; i++) {
		struct copy_ring *r = &c->rings[i];
		unsigned long cons = *r->consumer_pos;
		unsigned long prod = __atomic_load_n(r->producer_pos, __ATOMIC_ACQUIRE);
		size_t n = prod - cons;

		if (!n)
			continue;
		if (n > HT_WRITER_BLOCK_RECORDS * SAMPLE_BYTES)
			n = HT_WRITER_BLOCK_RECORDS * SAMPLE_BYTES;
		/* The data area is mapped twice: a block that wraps around is still contiguous. */
		if (write_all(c->fd, r->data + (cons & r->mask), n))
			return -1;
		c->bytes += n;
		moved += (long)n;
		__atomic_store_n(r->consumer_pos, cons + n, __ATOMIC_RELEASE);
	}
	return moved;
}

static void copy_close(struct copy_consumer *c)
{
	close(c->fd);
	close(c->epfd);
	for (unsigned int i = 0; i < c->nrings; i++) {
		munmap(c->rings[i].producer_map, c->rings[i].map_len);
		munmap(c->rings[i].consumer_pos, c->page);
	}
}

/* (b): libbpf's consumer over every ring. */
static struct ring_buffer *libbpf_open(const struct ht_tracer *t, ring_buffer_sample_fn fn, void *ctx)
{
	unsigned int n;
	const int *fds = ht_tracer_ring_fds(t, &n);
	struct ring_buffer *rb = ring_buffer__new(fds[0], fn, ctx, NULL);

	for (unsigned int i = 1; rb && i < n; i++) {
		if (ring_buffer__add(rb, fds[i], fn, ctx)) {
			ring_buffer__free(rb);
			return NULL;
		}
	}
	return rb;
}

/*
 * (b): libbpf's callback hands every record to the writer (which counts what
 * the file system refuses). ring_buffer__poll returns only once the rings are
 * empty, which a consumer that keeps up with the producer never sees: every
 * 4096 records the callback checks the run's deadline and stops the poll
 * early with a negative value (libbpf 1.1 honours it, the record taken).
 */
struct libbpf_consumer {
	struct ht_writer *writer;
	double deadline; /* now_s() */
	unsigned int n;
	bool stopped;
};

static int libbpf_sample(void *ctx, void *data, size_t size)
{
	struct libbpf_consumer *c = ctx;

	if (size == sizeof(struct ht_record))
		ht_writer_add(c->writer, data);
	if (++c->n % 4096 == 0 && now_s() >= c->deadline) {
		c->stopped = true;
		return -1;
	}
	return 0;
}

struct result {
	double offered, written_per_s, cpu_ns_per_record;
	unsigned long long written, drops;
};

static int fail(const char *what)
{
	fprintf(stderr, "bench_drain: %s\n", what);
	return -1;
}

static int run(enum consumer which, const char *dir, double rate, unsigned int encoding, struct result *res)
{
	struct ht_tracer_opts o = { .synthetic = true, .ringbuf_bytes = HT_DEFAULT_RINGBUF_BYTES,
				    .wakeup_bytes = ht_wakeup_bytes_for(HT_DEFAULT_RINGBUF_BYTES) };
	__u64 counters[HT_CNT_MAX];
	struct ht_tracer *t;
	struct ht_writer *w = NULL;
	struct ht_recording rec;
	struct ht_file_header hdr;
	struct ht_trailer trailer;
	struct copy_consumer cc;
	struct ring_buffer *rb = NULL;
	struct producer p = { .rate = rate };
	struct libbpf_consumer lc = { .deadline = HUGE_VAL };
	char path[256], err[512];
	pthread_t th;
	double start, cpu0;

	ht_filters_default(&o.filters);
	if (ht_tracer_load(&t, &o, err, sizeof(err)))
		return fail(err);
	snprintf(path, sizeof(path), "%s/bench-drain.htr", dir);
	ht_header_init(&hdr);
	memset(&trailer, 0, sizeof(trailer));
	pin(1);
	cpu0 = cpu_s(RUSAGE_SELF);
	if (which == COPY) {
		if (copy_open(&cc, t, path))
			return fail("cannot map the ring buffer or create the file");
	} else {
		if (ht_writer_open(path, true, &hdr, &w, err, sizeof(err)) || ht_writer_set_encoding(w, encoding))
			return fail(err);
		if (which == DRAIN && ht_recording_init(&rec, t, w))
			return fail("cannot start the drain");
		lc.writer = w;
		if (which == LIBBPF && !(rb = libbpf_open(t, libbpf_sample, &lc)))
			return fail("ring_buffer__new failed");
	}
	p.tracer = t;
	start = now_s();
	lc.deadline = start + RUN_SECONDS;
	pthread_create(&th, NULL, produce, &p);
	/* Each consumer's own loop, with record's 100 ms poll timeout. */
	while (now_s() - start < RUN_SECONDS) {
		int ret = 0;
		struct epoll_event ev;

		if (which == COPY) {
			long n = copy_step(&cc);
			if (n < 0)
				ret = -1;
			else if (n == 0 && epoll_wait(cc.epfd, &ev, 1, 100) < 0 && errno != EINTR)
				ret = -1;
		} else if (which == LIBBPF) {
			ret = ring_buffer__poll(rb, 100) < 0 && !lc.stopped && errno != EINTR ? -1 : 0;
			lc.stopped = false;
		} else {
			ret = ht_recording_pump(&rec, 100) < 0 ? -1 : 0;
		}
		if (ret)
			return fail("the consumer failed");
	}
	p.stop = 1;
	pthread_join(th, NULL);
	/* Then what the producer left in the ring, and closing the file: part of the consumer's work. */
	if (which == COPY) {
		while (copy_step(&cc) > 0)
			;
		res->written = cc.bytes / SAMPLE_BYTES;
		copy_close(&cc);
	} else if (which == LIBBPF) {
		lc.deadline = HUGE_VAL; /* the producer has stopped: take everything */
		if (ring_buffer__consume(rb) < 0)
			return fail("ring_buffer__consume failed");
		res->written = ht_writer_records(w);
		ring_buffer__free(rb);
		if (ht_writer_close(w, &trailer))
			return fail("closing the file failed");
	} else {
		if (ht_recording_finish(&rec, &trailer))
			return fail("finishing the file failed");
		res->written = trailer.records;
	}
	/* Every thread of the process but the producer: the consumer and any thread it uses. */
	double cpu = cpu_s(RUSAGE_SELF) - cpu0 - p.cpu_s;
	if (ht_tracer_counters(t, counters))
		return fail("cannot read the counters");
	res->drops = counters[HT_CNT_RINGBUF_DROPS];
	res->offered = p.produced / p.elapsed;
	res->written_per_s = res->written / p.elapsed;
	res->cpu_ns_per_record = res->written ? cpu * 1e9 / res->written : 0;
	if (res->written + res->drops != p.produced)
		return fail("records produced, written and dropped do not add up");
	ht_tracer_destroy(t);
	unlink(path);
	return 0;
}

static void verdict(const char *what, double ratio, double limit, const char *note)
{
	printf("TARGET %-52s %6.2fx  (limit >= %.2fx%s)  %s\n", what, ratio, limit, note,
	       ratio >= limit ? "met" : "NOT MET");
}

/*
 * Instruction counts for a profiler (valgrind --tool=callgrind): fills the
 * ring with n records while nothing consumes, then drains them once with one
 * consumer. The difference between two values of n divided by their
 * difference is the consumer's user-space instructions per record, the same
 * on any machine however busy.
 */
static int profile(enum consumer which, const char *dir, unsigned int n)
{
	struct ht_tracer_opts o = { .synthetic = true, .ringbuf_bytes = HT_DEFAULT_RINGBUF_BYTES,
				    .wakeup_bytes = ht_wakeup_bytes_for(HT_DEFAULT_RINGBUF_BYTES) };
	struct ht_synthetic_fill_args a = { .seq = 0, .count = n };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &a, .ctx_size_in = sizeof(a));
	struct ht_tracer *t;
	struct ht_writer *w;
	struct ht_recording rec;
	struct ht_file_header hdr;
	struct ht_trailer trailer;
	struct copy_consumer cc;
	struct ring_buffer *rb;
	char path[256], err[512];

	ht_filters_default(&o.filters);
	if (ht_tracer_load(&t, &o, err, sizeof(err)))
		return fail(err);
	if (bpf_prog_test_run_opts(ht_tracer_synthetic_fd(t, HT_SYNTH_FILL), &opts))
		return fail("cannot fill the ring");
	snprintf(path, sizeof(path), "%s/bench-drain.htr", dir);
	ht_header_init(&hdr);
	memset(&trailer, 0, sizeof(trailer));
	if (which == COPY) {
		if (copy_open(&cc, t, path))
			return fail("cannot map the ring buffer or create the file");
		while (copy_step(&cc) > 0)
			;
		copy_close(&cc);
	} else if (ht_writer_open(path, true, &hdr, &w, err, sizeof(err))) {
		return fail(err);
	} else if (which == LIBBPF) {
		struct libbpf_consumer lc = { .writer = w, .deadline = HUGE_VAL };

		if (!(rb = libbpf_open(t, libbpf_sample, &lc)) || ring_buffer__poll(rb, 0) < 0)
			return fail("libbpf consumer failed");
		ring_buffer__free(rb);
		if (ht_writer_close(w, &trailer))
			return fail("closing the file failed");
	} else {
		if (ht_recording_init(&rec, t, w))
			return fail("cannot start the drain");
		while (ht_recording_pump(&rec, 0) > 0)
			;
		if (ht_recording_finish(&rec, &trailer))
			return fail("finishing the file failed");
	}
	ht_tracer_destroy(t);
	unlink(path);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "--profile"))
		return profile(argv[2][0] - 'a', argv[3], (unsigned int)atoi(argv[4])) ? 1 : 0;
	const char *dir = argc > 1 ? argv[1] : "/dev/shm";
	double lo[NCONSUMERS], hi[NCONSUMERS], best[NCONSUMERS], best_cpu[NCONSUMERS];
	struct result r;

	if (bench_mount_tracefs("bench_drain"))
		return 1;
	printf("Drain throughput (ring buffer %u MiB, wake-up every %lu KiB of data; records of %zu B; file on %s)\n",
	       HT_DEFAULT_RINGBUF_BYTES >> 20, ht_wakeup_bytes_for(HT_DEFAULT_RINGBUF_BYTES) >> 10,
	       sizeof(struct ht_record), dir);
	/* The producer's own limit bounds every search. */
	if (run(COPY, dir, 0, HT_ENCODING_RAW, &r))
		return 1;
	double producer_max = r.offered;
	printf("  producer alone, as fast as it can: %.2f M records/s offered\n", producer_max / 1e6);

	/*
	 * Bisection on the offered rate, geometric: a round tests every consumer
	 * once. A rate passes if nothing was dropped; the rate kept is the one the
	 * producer actually offered in that run.
	 */
	for (int c = 0; c < NCONSUMERS; c++) {
		lo[c] = producer_max / 16;
		hi[c] = producer_max;
		best[c] = 0;
		best_cpu[c] = 0;
	}
	for (int round = 0; round <= SEARCH_ROUNDS; round++) {
		for (int c = 0; c < NCONSUMERS; c++) {
			/* Round 0 tries the producer's full rate: a consumer that keeps up is done. */
			double rate = round == 0 ? 0 : sqrt(lo[c] * hi[c]);
			if (round > 0 && best[c] >= producer_max * 0.97)
				continue;
			if (run(c, dir, rate, HT_ENCODING_RAW, &r))
				return 1;
			/*
			 * A rate fails only if a second run at it drops too: one stall
			 * of the machine (another process, the hypervisor) longer than
			 * the ring holds is not the consumer's doing.
			 */
			if (r.drops && round > 0 && run(c, dir, rate, HT_ENCODING_RAW, &r))
				return 1;
			bool pass = r.drops == 0;
			if (pass && r.offered > best[c]) {
				best[c] = r.offered;
				best_cpu[c] = r.cpu_ns_per_record;
			}
			if (round > 0) {
				if (pass)
					lo[c] = rate;
				else
					hi[c] = rate;
			}
		}
	}
	/* CPU per record at one rate all three sustain: the work per record, batching alike. */
	double common = best[COPY];
	for (int c = 0; c < NCONSUMERS; c++)
		if (best[c] < common)
			common = best[c];
	common *= 0.9;
	double cpu_common[NCONSUMERS];
	unsigned long long drops_common[NCONSUMERS];
	for (int c = 0; c < NCONSUMERS; c++) {
		if (run(c, dir, common, HT_ENCODING_RAW, &r) || (r.drops && run(c, dir, common, HT_ENCODING_RAW, &r)))
			return 1;
		cpu_common[c] = r.cpu_ns_per_record;
		drops_common[c] = r.drops;
	}
	printf("  %-58s %16s %14s %16s\n", "consumer", "max 0-drop rate", "CPU/record", "CPU/rec @common");
	for (int c = 0; c < NCONSUMERS; c++)
		printf("  %-58s %13.2f M/s %11.1f ns %13.1f ns%s\n", consumer_names[c], best[c] / 1e6, best_cpu[c],
		       cpu_common[c], drops_common[c] ? " (drops)" : "");
	printf("  (common rate %.2f M/s; a rate within 3%% of the producer's limit means the consumer kept up with it)\n",
	       common / 1e6);
	/* Compression: information only, its cost is zlib's. */
	if (run(DRAIN, dir, 0, HT_ENCODING_DELTA_ZLIB, &r))
		return 1;
	printf("  (c) with --compress, producer unpaced: %.2f M/s offered, %.2f M/s written, %.1f%% dropped, %.1f ns CPU/record\n",
	       r.offered / 1e6, r.written_per_s / 1e6, 100.0 * r.drops / (r.written + r.drops ? r.written + r.drops : 1),
	       r.cpu_ns_per_record);
	/*
	 * No consumer beats the copy limit, so (c)/(b) can be at most (a)/(b):
	 * when that bound is below the target, the target is out of reach by
	 * the writer's own cost, whatever the drain does.
	 */
	printf("  bound on (c)/(b) from the copy limit: max rate (a)/(b) %.2fx; CPU per record (b)/(a) at the common rate %.2fx\n",
	       best[COPY] / best[LIBBPF], cpu_common[LIBBPF] / cpu_common[COPY]);
	printf("  CPU per record at the common rate, (c) vs (b): %.2fx\n", cpu_common[DRAIN] / cpu_common[LIBBPF]);
	if (best[LIBBPF] >= producer_max * 0.97 && best[DRAIN] >= producer_max * 0.97)
		printf("  (b) and (c) both kept up with the producer: this run cannot tell their rates apart\n");
	/*
	 * No target against libbpf's consumer: both hand records to the same
	 * writer, whose cost bounds them alike (the bound above), so a ratio
	 * of 1.5x was out of reach whatever the drain does. The copy limit
	 * guards against regressions; the producer's limit says how much of
	 * what BPF can produce the drain keeps.
	 */
	printf("  (c) vs (b), max 0-drop rate: %.2fx (information: both share the writer)\n",
	       best[DRAIN] / best[LIBBPF]);
	printf("  (c) vs the producer's limit: %.2fx (%.2f of %.2f M records/s)\n", best[DRAIN] / producer_max,
	       best[DRAIN] / 1e6, producer_max / 1e6);
	const char *limited = best[COPY] >= producer_max * 0.97 ? "; (a) kept up with the producer" : "";
	verdict("drain (c) vs copy limit (a), max 0-drop rate", best[DRAIN] / best[COPY], 0.8, limited);
	return 0;
}
