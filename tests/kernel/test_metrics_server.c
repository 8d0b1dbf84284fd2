// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `record --metrics` fed by the real BPF handlers: synthetic hypercalls go
 * through the ring buffer, the drain and the recording's observer (file
 * mode), or into the BPF aggregates (--no-file), and a scrape of the HTTP
 * server must count exactly the hypercalls issued. Clients that connect and
 * never send, or send and never read, must not hold up the drain or other
 * scrapes, and are closed at their deadline. A scrape is answered within a
 * second while 500 idle or trickling clients keep connecting, and clients
 * that send endless heads or never read cost bounded memory. Loopback only.
 * Needs root.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "common/grow.h"
#include "common/util.h"
#include "record/metrics_exporter.h"
#include "record/recording.h"
#include "slow_clients.h"
#include "kernel_test.h"
#include "synth.h"
#include "test.h"

/* Every wait of this suite ends by this deadline. */
#define WAIT_MS 10000
/* The server's CPU by which an endless request head must be cut (see hostile_clients_cost_bounded_memory). */
#define ENDLESS_CPU_MS 30000
#define CONN_TIMEOUT_MS 1000
/* Clients that connect and send nothing, or trickle a request head that never ends. */
#define SLOW_CLIENTS 500

static struct ht_synth_layout layout;
static char path[] = "/tmp/ht-metrics-XXXXXX";
/* What a test holds: made by FIXTURE_INIT, freed by fixture_free at its cleanup label. */
struct fixture {
	struct ht_tracer *tracer;
	struct ht_metrics *metrics;
	struct ht_recording rec; /* owns the trace writer once initialised */
	char *body;              /* the last scrape's */
	int idle_fd, stalled_fd;
	struct ht_slow_clients *slow;
	int hostile_fds[100];
	unsigned int nhostile;
};

#define FIXTURE_INIT { .idle_fd = -1, .stalled_fd = -1 }

static void fixture_free(struct fixture *f)
{
	ht_recording_abandon(&f->rec); /* nothing left after a finish */
	ht_metrics_stop(f->metrics);
	ht_tracer_destroy(f->tracer);
	free(f->body);
	if (f->idle_fd >= 0)
		close(f->idle_fd);
	if (f->stalled_fd >= 0)
		close(f->stalled_fd);
	ht_slow_clients_stop(f->slow);
	while (f->nhostile)
		close(f->hostile_fds[--f->nhostile]);
}

/* Clock id's time in ms. */
static unsigned long long clock_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (unsigned long long)ts.tv_sec * 1000 + (unsigned long long)ts.tv_nsec / 1000000;
}

static unsigned long long now_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

/* CPU time (ms) of this process's threads other than the calling one: the server's, here. */
static unsigned long long other_threads_cpu_ms(void)
{
	return clock_ms(CLOCK_PROCESS_CPUTIME_ID) - clock_ms(CLOCK_THREAD_CPUTIME_ID);
}

/* timeout_ms 0: the server's own deadlines, as record runs it. */
static int load_with(struct fixture *f, bool aggregate, const __u32 *nrs, unsigned int nnr, int timeout_ms)
{
	struct ht_tracer_opts o = { .isa = HT_ISA_SVM, .synthetic = true, .ringbuf_bytes = 4 << 20,
				    .aggregate_only = aggregate, .group_by = HT_AGG_BY_VCPU,
				    .aggregate_by_nr = aggregate };
	struct ht_metrics_opts mo = { .aggregate = aggregate, .version = "test",
				      .timeout_ms = timeout_ms, .log = stdout };
	struct sockaddr_in *sin = (struct sockaddr_in *)&mo.addr.sa;
	char err[512];

	ht_filters_default(&o.filters);
	for (unsigned int i = 0; i < nnr; i++)
		o.filters.nr[i] = nrs[i];
	o.filters.nr_count = nnr;
	mo.filters = &o.filters;
	/* Port 0: the kernel picks a free one, so parallel runs never collide. */
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	mo.addr.len = sizeof(*sin);
	snprintf(mo.addr.text, sizeof(mo.addr.text), "127.0.0.1:0");
	if (ht_tracer_load(&f->tracer, &o, err, sizeof(err)) ||
	    ht_metrics_start(&f->metrics, &mo, err, sizeof(err))) {
		printf("    %s\n", err);
		return -1;
	}
	return 0;
}

static int load(struct fixture *f, bool aggregate, const __u32 *nrs, unsigned int nnr)
{
	return load_with(f, aggregate, nrs, nnr, CONN_TIMEOUT_MS);
}

/* The drain writes a record once every CPU's earlier records are surely in their rings. */
static void settle(void)
{
	usleep(HT_DRAIN_ORDER_SLACK_NS / 1000 + 1000);
}

static int hypercalls(struct ht_tracer *tracer, unsigned int n, __u32 vcpu, __u32 nr)
{
	for (unsigned int i = 0; i < n; i++) {
		if (ht_synth_exit(&layout, tracer, HT_ISA_SVM, HT_SVM_EXIT_CODE_VMMCALL, 0x1000, vcpu) ||
		    ht_synth_hypercall(&layout, tracer, nr, i, 0, 0, 0) ||
		    ht_synth_entry(&layout, tracer, vcpu, 0x1003))
			return -1;
	}
	return 0;
}

static int connect_loopback(uint16_t port, int rcvbuf)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (rcvbuf)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Reads until EOF (or error), at most WAIT_MS. Bytes read, -1 on timeout. */
static long read_to_eof(int fd, char **out)
{
	size_t len = 0, cap = 0;
	char *buf = NULL;
	unsigned long long end = now_ms() + WAIT_MS;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		unsigned long long now = now_ms();

		if (now >= end || poll(&p, 1, (int)(end - now)) <= 0) {
			free(buf);
			return -1;
		}
		if (HT_GROW(buf, cap, len + 2, 1 << 16)) { /* a byte to read, one for the '\0' */
			free(buf);
			return -1;
		}
		ssize_t n = recv(fd, buf + len, cap - len - 1, 0);
		if (n <= 0)
			break; /* EOF, or a reset by the server */
		len += (size_t)n;
	}
	buf[len] = '\0';
	if (out)
		*out = buf;
	else
		free(buf);
	return (long)len;
}

/* GET /metrics; the body in *out. HTTP status, or -1. */
static int scrape(uint16_t port, char **out)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/plain\r\n\r\n";
	int fd = connect_loopback(port, 0), status = -1;
	char *resp = NULL;

	if (fd < 0)
		return -1;
	if (send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) == (ssize_t)sizeof(req) - 1 &&
	    read_to_eof(fd, &resp) > 0 && sscanf(resp, "HTTP/1.1 %d", &status) == 1) {
		char *b = strstr(resp, "\r\n\r\n");
		*out = strdup(b ? b + 4 : "");
	}
	free(resp);
	close(fd);
	return status;
}

/* The value of one exact series line (name with labels), or -1. */
static long long value_of(const char *text, const char *series)
{
	size_t n = strlen(series);

	for (const char *p = text; (p = strstr(p, series)); p++)
		if ((p == text || p[-1] == '\n') && p[n] == ' ')
			return strtoll(p + n + 1, NULL, 10);
	return -1;
}

static void scrape_counts_every_record_drained_by_vcpu(void)
{
	struct fixture fx = FIXTURE_INIT;
	struct ht_writer *w;
	struct ht_file_header h;
	struct ht_trailer t;
	char err[256], series[128];
	const __u32 nr = 1000;

	if (!ASSERT_MSG(load(&fx, false, &nr, 1) == 0, "setup"))
		goto cleanup;
	ht_header_init(&h);
	if (!ASSERT_MSG(ht_writer_open(path, true, &h, &w, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	if (!ASSERT_MSG(ht_recording_init(&fx.rec, fx.tracer, w) == 0, "recording"))
		goto cleanup;
	fx.rec.observer = ht_metrics_observe;
	fx.rec.observer_ctx = fx.metrics;
	if (!ASSERT_MSG(hypercalls(fx.tracer, 30, 0, nr) == 0 && hypercalls(fx.tracer, 12, 1, nr) == 0, "events"))
		goto cleanup;
	settle();
	if (!ASSERT_MSG(ht_recording_pump(&fx.rec, 0) == 42, "drained a different number of records"))
		goto cleanup;
	ht_metrics_update(fx.metrics, fx.tracer, &fx.rec, 0, true);

	if (!ASSERT_MSG(scrape(ht_metrics_port(fx.metrics), &fx.body) == 200, "scrape failed"))
		goto cleanup;
	snprintf(series, sizeof(series), "hypertrace_hypercalls_total{vm=\"pid %d\",vcpu=\"0\",nr=\"1000\"}", getpid());
	if (!ASSERT_MSG(value_of(fx.body, series) == 30, "%s: %lld\n%s", series, value_of(fx.body, series), fx.body))
		goto cleanup;
	snprintf(series, sizeof(series), "hypertrace_hypercall_duration_seconds_count{phase=\"exit_to_entry\",vm=\"pid %d\",vcpu=\"1\",nr=\"1000\"}", getpid());
	if (!ASSERT_MSG(value_of(fx.body, series) == 12, "%s: %lld", series, value_of(fx.body, series)))
		goto cleanup;
	if (!ASSERT_MSG(value_of(fx.body, "hypertrace_dropped_hypercalls_total{reason=\"ringbuf_full\"}") == 0, "drops"))
		goto cleanup;
	if (!ASSERT_MSG(value_of(fx.body, "hypertrace_build_info{version=\"test\"}") == 1, "build info"))
		goto cleanup;
	if (!ASSERT_MSG(value_of(fx.body, "hypertrace_recording_info{mode=\"file\"}") == 1, "recording info"))
		goto cleanup;

	/* The last records, drained at the end, are in the final snapshot. */
	if (!ASSERT_MSG(hypercalls(fx.tracer, 5, 1, nr) == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(ht_recording_finish(&fx.rec, &t) == 0, "finish"))
		goto cleanup;
	ht_metrics_update(fx.metrics, fx.tracer, &fx.rec, 0, true);
	free(fx.body);
	fx.body = NULL;
	if (!ASSERT_MSG(scrape(ht_metrics_port(fx.metrics), &fx.body) == 200, "scrape failed"))
		goto cleanup;
	snprintf(series, sizeof(series), "hypertrace_hypercalls_total{vm=\"pid %d\",vcpu=\"1\",nr=\"1000\"}", getpid());
	if (!ASSERT_MSG(value_of(fx.body, series) == 17, "%s: %lld", series, value_of(fx.body, series)))
		goto cleanup;
	ASSERT_EQ(t.records, 47, "value");
cleanup:
	fixture_free(&fx);
	unlink(path);
}

static void no_file_mode_labels_the_bpf_aggregates_by_vcpu_and_nr(void)
{
	struct fixture fx = FIXTURE_INIT;
	const __u32 nrs[2] = { 1000, 0x7fff0001 };
	char series[160];

	if (!ASSERT_MSG(load(&fx, true, nrs, 2) == 0, "setup"))
		goto cleanup;
	if (!ASSERT_MSG(hypercalls(fx.tracer, 4, 0, nrs[0]) == 0 && hypercalls(fx.tracer, 6, 0, nrs[1]) == 0 &&
			hypercalls(fx.tracer, 3, 2, nrs[1]) == 0, "events"))
		goto cleanup;
	ht_metrics_update(fx.metrics, fx.tracer, NULL, 0, true);
	if (!ASSERT_MSG(scrape(ht_metrics_port(fx.metrics), &fx.body) == 200, "scrape failed"))
		goto cleanup;
	snprintf(series, sizeof(series), "hypertrace_hypercalls_total{vm=\"pid %d\",vcpu=\"0\",nr=\"1000\"}", getpid());
	if (!ASSERT_MSG(value_of(fx.body, series) == 4, "%s: %lld\n%s", series, value_of(fx.body, series), fx.body))
		goto cleanup;
	snprintf(series, sizeof(series), "hypertrace_hypercalls_total{vm=\"pid %d\",vcpu=\"0\",nr=\"2147418113\"}", getpid());
	if (!ASSERT_MSG(value_of(fx.body, series) == 6, "%s: %lld\n%s", series, value_of(fx.body, series), fx.body))
		goto cleanup;
	snprintf(series, sizeof(series), "hypertrace_hypercall_duration_seconds_bucket{phase=\"hypercall_to_entry\",vm=\"pid %d\",vcpu=\"2\",nr=\"2147418113\",le=\"+Inf\"}", getpid());
	if (!ASSERT_MSG(value_of(fx.body, series) == 3, "%s: %lld\n%s", series, value_of(fx.body, series), fx.body))
		goto cleanup;
	if (!ASSERT_MSG(strstr(fx.body, "_sum{") == NULL, "aggregates have no exact sum"))
		goto cleanup;
	if (!ASSERT_MSG(value_of(fx.body, "hypertrace_build_info{version=\"test\"}") == 1, "build info"))
		goto cleanup;
	ASSERT_MSG(value_of(fx.body, "hypertrace_recording_info{mode=\"no_file\"}") == 1, "recording info");
cleanup:
	fixture_free(&fx);
}

struct scraper {
	uint16_t port;
	volatile int stop;
	volatile unsigned int ok, failed;
};

static void *scrape_loop(void *arg)
{
	struct scraper *s = arg;

	/* Bounded: at most 200 scrapes, stopped earlier by the test. */
	for (int i = 0; i < 200 && !s->stop; i++) {
		char *b = NULL;

		if (scrape(s->port, &b) == 200)
			s->ok++;
		else
			s->failed++;
		free(b);
	}
	return NULL;
}

static void stalled_clients_hold_up_neither_the_drain_nor_other_scrapes(void)
{
	struct fixture fx = FIXTURE_INIT;
	uint16_t port;
	unsigned long long drained = 0;
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
	const unsigned int nvcpus = 150; /* a response of about 2 MB: more than the socket buffers hold */
	struct ht_writer *w;
	struct ht_file_header h;
	struct ht_trailer t;
	struct scraper sc = { 0 };
	pthread_t thr;
	char err[256];
	const __u32 nr = 1000;
	long got;

	if (!ASSERT_MSG(load(&fx, false, &nr, 1) == 0, "setup"))
		goto cleanup;
	ht_header_init(&h);
	if (!ASSERT_MSG(ht_writer_open(path, true, &h, &w, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	if (!ASSERT_MSG(ht_recording_init(&fx.rec, fx.tracer, w) == 0, "recording"))
		goto cleanup;
	fx.rec.observer = ht_metrics_observe;
	fx.rec.observer_ctx = fx.metrics;
	for (unsigned int v = 0; v < nvcpus; v++)
		if (!ASSERT_MSG(hypercalls(fx.tracer, 1, v, nr) == 0, "events"))
			goto cleanup;
	settle();
	if (!ASSERT_MSG(ht_recording_pump(&fx.rec, 0) == (int)nvcpus, "drained"))
		goto cleanup;
	ht_metrics_update(fx.metrics, fx.tracer, &fx.rec, 0, true);

	port = ht_metrics_port(fx.metrics);
	fx.idle_fd = connect_loopback(port, 0);                /* connects, never sends */
	fx.stalled_fd = connect_loopback(port, 4096);          /* asks, never reads */
	if (!ASSERT_MSG(fx.idle_fd >= 0 && fx.stalled_fd >= 0, "connect: %s", strerror(errno)))
		goto cleanup;
	if (!ASSERT_MSG(send(fx.stalled_fd, req, sizeof(req) - 1, MSG_NOSIGNAL) == (ssize_t)sizeof(req) - 1, "send"))
		goto cleanup;
	sc.port = port;
	if (!ASSERT_MSG(pthread_create(&thr, NULL, scrape_loop, &sc) == 0, "thread"))
		goto cleanup;

	/* The drain goes on, publishing as it goes, while those clients hang on. */
	for (int round = 0; round < 20; round++) {
		if (hypercalls(fx.tracer, 50, (__u32)round % 4, nr)) {
			sc.stop = 1;
			pthread_join(thr, NULL);
			ASSERT_MSG(0, "events");
			goto cleanup;
		}
		settle();
		int n = ht_recording_pump(&fx.rec, 0);
		if (n > 0)
			drained += (unsigned long long)n;
		ht_metrics_update(fx.metrics, fx.tracer, &fx.rec, 0, true);
	}
	/* At least one whole scrape ran next to the stalled clients (bounded wait). */
	for (unsigned long long end = now_ms() + WAIT_MS; !sc.ok && !sc.failed && now_ms() < end;)
		usleep(10000);
	sc.stop = 1;
	pthread_join(thr, NULL);
	if (!ASSERT_EQ(drained, 1000, "value"))
		goto cleanup;
	if (!ASSERT_MSG(sc.ok > 0 && sc.failed == 0, "concurrent scrapes: %u ok, %u failed", sc.ok, sc.failed))
		goto cleanup;
	if (!ASSERT_MSG(ht_recording_finish(&fx.rec, &t) == 0, "finish"))
		goto cleanup;
	if (!ASSERT_EQ(t.records, nvcpus + 1000, "value"))
		goto cleanup;
	if (!ASSERT_EQ(t.ringbuf_drops, 0, "value"))
		goto cleanup;

	/* A scrape now sees every record, the stalled ones notwithstanding. */
	ht_metrics_update(fx.metrics, fx.tracer, &fx.rec, 0, true);
	if (!ASSERT_MSG(scrape(port, &fx.body) == 200, "scrape failed"))
		goto cleanup;
	char series[128];
	snprintf(series, sizeof(series), "hypertrace_hypercalls_total{vm=\"pid %d\",vcpu=\"3\",nr=\"1000\"}", getpid());
	if (!ASSERT_MSG(value_of(fx.body, series) == 1 + 5 * 50, "%s: %lld", series, value_of(fx.body, series)))
		goto cleanup;

	/* Both are closed at their deadline: EOF (or a reset) instead of a hang. */
	if (!ASSERT_MSG(read_to_eof(fx.idle_fd, NULL) == 0, "the idle connection was not closed"))
		goto cleanup;
	got = read_to_eof(fx.stalled_fd, NULL);
	if (!ASSERT_MSG(got >= 0, "the stalled connection was not closed"))
		goto cleanup;
	ASSERT_MSG(got < (long)strlen(fx.body), "the stalled client got the whole response (%ld bytes): nothing was stalled", got);
cleanup:
	fixture_free(&fx);
	unlink(path);
}

/* A connection to 127.0.0.1:port within wait_ms (a full listen backlog would block connect() for seconds). */
static int connect_bounded(uint16_t port, int wait_ms)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), err = 0;
	socklen_t len = sizeof(err);
	struct pollfd p = { .fd = fd, .events = POLLOUT };

	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	if (poll(&p, 1, wait_ms) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) || err) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * GET /metrics from connect to the last byte, at most WAIT_MS; its duration
 * in ms in *ms, the body in *out. HTTP status, or -1.
 */
static int scrape_timed(uint16_t port, double *ms, char **out)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
	unsigned long long start = ht_monotonic_ns();
	int fd = connect_bounded(port, WAIT_MS), status = -1;
	char *resp = NULL;

	*out = NULL;
	if (fd < 0)
		return -1;
	if (send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) == (ssize_t)sizeof(req) - 1 &&
	    read_to_eof(fd, &resp) > 0 && sscanf(resp, "HTTP/1.1 %d", &status) == 1) {
		char *b = strstr(resp, "\r\n\r\n");
		*out = strdup(b ? b + 4 : "");
	}
	*ms = (double)(ht_monotonic_ns() - start) / 1e6;
	free(resp);
	close(fd);
	return status;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

#define SCRAPES 5

/* Feeds, drains and publishes one round of hypercalls; the records drained, or -1. */
static int record_round(struct fixture *f, unsigned int n, __u32 vcpu)
{
	if (hypercalls(f->tracer, n, vcpu, 1000))
		return -1;
	settle();
	int got = ht_recording_pump(&f->rec, 0);
	ht_metrics_update(f->metrics, f->tracer, &f->rec, 0, true);
	return got;
}

static void a_scrape_is_answered_within_a_second_next_to_500_slow_clients(void)
{
	struct fixture fx = FIXTURE_INIT;
	uint16_t port;
	const unsigned int nvcpus = 20;
	struct ht_writer *w;
	struct ht_file_header h;
	struct ht_trailer t;
	struct ht_slow_clients_stats st;
	double idle_ms[SCRAPES], loaded_ms[SCRAPES];
	unsigned long long fired = 0;
	char err[256], series[128];
	const __u32 nr = 1000;
	int n;

	/* The server's own deadlines and slots, as record runs it. */
	if (!ASSERT_MSG(load_with(&fx, false, &nr, 1, 0) == 0, "setup"))
		goto cleanup;
	ht_header_init(&h);
	if (!ASSERT_MSG(ht_writer_open(path, true, &h, &w, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	if (!ASSERT_MSG(ht_recording_init(&fx.rec, fx.tracer, w) == 0, "recording"))
		goto cleanup;
	fx.rec.observer = ht_metrics_observe;
	fx.rec.observer_ctx = fx.metrics;
	for (unsigned int v = 0; v < nvcpus; v++)
		if (!ASSERT_MSG(hypercalls(fx.tracer, 1, v, nr) == 0, "events"))
			goto cleanup;
	fired = nvcpus;
	settle();
	if (!ASSERT_MSG((n = ht_recording_pump(&fx.rec, 0)) == (int)nvcpus, "drained %d", n))
		goto cleanup;
	ht_metrics_update(fx.metrics, fx.tracer, &fx.rec, 0, true);
	port = ht_metrics_port(fx.metrics);

	/* The reference: the same scrape with no other client, in this run, on this machine (after a warm-up). */
	if (!ASSERT_MSG(scrape_timed(port, &idle_ms[0], &fx.body) == 200, "scrape with no other client failed"))
		goto cleanup;
	free(fx.body);
	fx.body = NULL;
	for (int i = 0; i < SCRAPES; i++) {
		if (!ASSERT_MSG(scrape_timed(port, &idle_ms[i], &fx.body) == 200, "scrape with no other client failed"))
			goto cleanup;
		free(fx.body);
		fx.body = NULL;
	}

	if (!ASSERT_MSG(ht_slow_clients_start(&fx.slow, port, SLOW_CLIENTS) == 0, "cannot start the slow clients"))
		goto cleanup;
	/* Every client connects (bounded wait), while the recording goes on. */
	for (unsigned long long end = now_ms() + WAIT_MS; now_ms() < end;) {
		if (!ASSERT_MSG(record_round(&fx, 10, 0) >= 0, "events"))
			goto cleanup;
		fired += 10;
		ht_slow_clients_stats(fx.slow, &st);
		if (st.ever_connected == SLOW_CLIENTS)
			break;
	}
	/*
	 * Scrapes spread over 2.5 s: the server has closed most clients by now,
	 * and they keep coming back (a second later), trickling as they go.
	 */
	for (int i = 0; i < SCRAPES; i++) {
		usleep(500000);
		if (!ASSERT_MSG(record_round(&fx, 50, (__u32)i) >= 0, "events"))
			goto cleanup;
		fired += 50;
		int status = scrape_timed(port, &loaded_ms[i], &fx.body);
		ht_slow_clients_stats(fx.slow, &st);
		if (!ASSERT_MSG(status == 200, "scrape %d next to %u slow clients: status %d after %.0f ms (%u connected now, %u of them ever)",
				i, SLOW_CLIENTS, status, loaded_ms[i], st.connected, st.ever_connected))
			goto cleanup;
		snprintf(series, sizeof(series), "hypertrace_hypercalls_total{vm=\"pid %d\",vcpu=\"%d\",nr=\"1000\"}", getpid(), i);
		if (!ASSERT_MSG(value_of(fx.body, series) > 0, "%s missing", series))
			goto cleanup;
		free(fx.body);
		fx.body = NULL;
	}
	ht_slow_clients_stats(fx.slow, &st);
	ht_slow_clients_stop(fx.slow);
	fx.slow = NULL;

	/* The recording did not notice: every record drained, none dropped. */
	if (!ASSERT_MSG(ht_recording_finish(&fx.rec, &t) == 0, "finish"))
		goto cleanup;
	if (!ASSERT_EQ(t.records, fired, "value"))
		goto cleanup;
	if (!ASSERT_EQ(t.ringbuf_drops, 0, "value"))
		goto cleanup;

	qsort(idle_ms, SCRAPES, sizeof(double), cmp_double);
	qsort(loaded_ms, SCRAPES, sizeof(double), cmp_double);
	printf("    scrape: %.1f ms median alone, %.1f ms median and %.1f ms max next to %u slow clients (%llu connections opened, %llu closed by the server)\n",
	       idle_ms[SCRAPES / 2], loaded_ms[SCRAPES / 2], loaded_ms[SCRAPES - 1], SLOW_CLIENTS,
	       st.opened, st.closed_by_server);
	if (!ASSERT_MSG(st.ever_connected == SLOW_CLIENTS, "only %u of %u clients could connect: the others waited in the listen backlog",
			st.ever_connected, SLOW_CLIENTS))
		goto cleanup;
	/*
	 * Two bounds, both needed. Every scrape under 1 s is the target itself
	 * (Prometheus' default timeout is 10 s; a slot held for its 10 s
	 * deadline by each slow client made scrapes take seconds). But this
	 * machine may be loaded or slow (2 shared cores, ASan), so the median
	 * must also stay near the median of the same scrape without any other
	 * client, measured just before in this run: 5x plus 100 ms leaves room for
	 * the accepts and evictions the slow clients cause, and none for a
	 * scrape that waits on them. A slow machine raises both medians alike.
	 */
	if (!ASSERT_MSG(loaded_ms[SCRAPES - 1] < 1000.0, "a scrape took %.0f ms next to %u slow clients", loaded_ms[SCRAPES - 1],
			SLOW_CLIENTS))
		goto cleanup;
	ASSERT_MSG(loaded_ms[SCRAPES / 2] <= 5 * idle_ms[SCRAPES / 2] + 100.0,
		   "scrapes took %.1f ms (median) next to slow clients, %.1f ms alone", loaded_ms[SCRAPES / 2],
		   idle_ms[SCRAPES / 2]);
cleanup:
	fixture_free(&fx);
	unlink(path);
}

/*
 * Clients that ask and never read, and one that sends a request head without
 * end: the server holds at most 8 rendered responses and 64 connections, cuts
 * the endless head at 8 KiB, and a scrape still gets through at once.
 */
static void hostile_clients_cost_bounded_memory(void)
{
	struct fixture fx = FIXTURE_INIT;
	uint16_t port;
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
	const unsigned int nvcpus = 150; /* a response of about 2 MB: more than the socket buffers hold */
	struct ht_metrics_http_stats st;
	static char junk[65536];
	unsigned long long pushed = 0, cpu0, cpu_seen, idle_end;
	double ms;
	int endless, rcvbuf = 4096;
	const __u32 nr = 1000;
	bool cut = false;

	if (!ASSERT_MSG(load_with(&fx, true, &nr, 1, 0) == 0, "setup"))
		goto cleanup;
	for (unsigned int v = 0; v < nvcpus; v++)
		if (!ASSERT_MSG(hypercalls(fx.tracer, 1, v, nr) == 0, "events"))
			goto cleanup;
	ht_metrics_update(fx.metrics, fx.tracer, NULL, 0, true);
	port = ht_metrics_port(fx.metrics);

	/* Ask, never read: each would pin a whole rendered response. */
	for (fx.nhostile = 0; fx.nhostile < ARRAY_SIZE(fx.hostile_fds);) {
		int fd = connect_bounded(port, WAIT_MS);

		if (!ASSERT_MSG(fd >= 0, "connect %u: %s", fx.nhostile, strerror(errno)))
			goto cleanup;
		fx.hostile_fds[fx.nhostile++] = fd;
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
		if (!ASSERT_MSG(send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) == (ssize_t)sizeof(req) - 1, "send"))
			goto cleanup;
	}
	/* A head without end, as fast as the server takes it: it must be cut off, not buffered. */
	endless = connect_bounded(port, WAIT_MS);
	if (!ASSERT_MSG(endless >= 0, "connect: %s", strerror(errno)))
		goto cleanup;
	memset(junk, 'a', sizeof(junk));
	memcpy(junk, "GET /metrics HTTP/1.1\r\nX-Endless: ", 34);
	/*
	 * The server renders each hostile client's request (100 of about 2 MB)
	 * before it reads this head: 5.9 s (3 s of its CPU) under ASan on a
	 * quiet machine, over 10 s beside the nested machine, minutes at a
	 * twentieth of a CPU. So the limits count the server's work: the head
	 * must be cut before the server has spent ENDLESS_CPU_MS of CPU since
	 * it was sent, and within WAIT_MS of the server's last work (one that
	 * does nothing more and has not cut it never will).
	 */
	cpu0 = other_threads_cpu_ms();
	cpu_seen = cpu0;
	idle_end = now_ms() + WAIT_MS;
	while (now_ms() < idle_end && cpu_seen - cpu0 < ENDLESS_CPU_MS && pushed < (64ull << 20)) {
		struct pollfd p = { .fd = endless, .events = POLLOUT };
		unsigned long long cpu = other_threads_cpu_ms();
		ssize_t n;

		if (cpu >= cpu_seen + 20) { /* a render's worth: not the odd wake-up of an idle thread */
			cpu_seen = cpu;
			idle_end = now_ms() + WAIT_MS;
		}
		if (poll(&p, 1, 100) < 0)
			break;
		n = send(endless, junk + (pushed ? 34 : 0), sizeof(junk) - (pushed ? 34 : 0), MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			cut = true; /* reset by the server */
			break;
		}
		if (n > 0)
			pushed += (unsigned long long)n;
	}
	close(endless);
	if (!ASSERT_MSG(cut, "an endless request head was not cut off: %llu bytes taken", pushed))
		goto cleanup;

	if (!ASSERT_MSG(scrape_timed(port, &ms, &fx.body) == 200, "scrape next to clients that never read failed"))
		goto cleanup;
	if (!ASSERT_MSG(ms < 1000.0, "the scrape took %.0f ms next to clients that never read", ms))
		goto cleanup;
	ht_metrics_server_stats(fx.metrics, &st);
	printf("    %llu bytes of endless head taken; at most %u connections, %u responses, %llu response bytes held (a response is %zu bytes)\n",
	       pushed, st.peak_connections, st.peak_responses, st.peak_response_bytes, strlen(fx.body));
	if (!ASSERT_MSG(st.peak_connections <= 64, "%u connections held", st.peak_connections))
		goto cleanup;
	if (!ASSERT_MSG(st.peak_responses <= 8, "%u responses held", st.peak_responses))
		goto cleanup;
	if (!ASSERT_MSG(st.peak_response_bytes <= 8 * (strlen(fx.body) + 512), "%llu response bytes held", st.peak_response_bytes))
		goto cleanup;
	ASSERT_MSG(st.evicted > 0, "no response gave way, yet %u clients never read", fx.nhostile);
cleanup:
	fixture_free(&fx);
}

int main(void)
{
	ht_kernel_test_begin("metrics_server", &layout, path);
	RUN(scrape_counts_every_record_drained_by_vcpu);
	RUN(no_file_mode_labels_the_bpf_aggregates_by_vcpu_and_nr);
	RUN(stalled_clients_hold_up_neither_the_drain_nor_other_scrapes);
	RUN(a_scrape_is_answered_within_a_second_next_to_500_slow_clients);
	RUN(hostile_clients_cost_bounded_memory);
	unlink(path);
	return ht_test_exit_status();
}
