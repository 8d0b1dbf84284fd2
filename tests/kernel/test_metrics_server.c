// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `record --metrics` fed by the real BPF handlers: synthetic hypercalls go
 * through the ring buffer, the drain and the recording's observer (file
 * mode), or into the BPF aggregates (--no-file), and a scrape of the HTTP
 * server must count exactly the hypercalls issued. Clients that connect and
 * never send, or send and never read, must not hold up the drain or other
 * scrapes, and are closed at their deadline. Loopback only. Needs root.
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
#include "record/metrics_exporter.h"
#include "record/recording.h"
#include "synth.h"
#include "test.h"

/* Every wait of this suite ends by this deadline. */
#define WAIT_MS 10000
#define CONN_TIMEOUT_MS 1000

static struct ht_synth_layout layout;
static char path[] = "/tmp/ht-metrics-XXXXXX";
static struct ht_tracer *tracer;
static struct ht_metrics *metrics;
static struct ht_recording rec;
static char *body;
static int idle_fd = -1, stalled_fd = -1;

static void cleanup(void)
{
	ht_recording_abandon(&rec);
	memset(&rec, 0, sizeof(rec));
	ht_metrics_stop(metrics);
	metrics = NULL;
	ht_tracer_destroy(tracer);
	tracer = NULL;
	free(body);
	body = NULL;
	if (idle_fd >= 0)
		close(idle_fd);
	if (stalled_fd >= 0)
		close(stalled_fd);
	idle_fd = stalled_fd = -1;
}

static unsigned long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000 + (unsigned long long)ts.tv_nsec / 1000000;
}

static int load(bool aggregate, const __u32 *nrs, unsigned int nnr)
{
	struct ht_tracer_opts o = { .isa = HT_ISA_SVM, .synthetic = true, .ringbuf_bytes = 4 << 20,
				    .aggregate_only = aggregate, .group_by = HT_AGG_BY_VCPU,
				    .aggregate_by_nr = aggregate };
	struct ht_metrics_opts mo = { .aggregate = aggregate, .version = "test",
				      .timeout_ms = CONN_TIMEOUT_MS, .log = stdout };
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
	if (ht_tracer_load(&tracer, &o, err, sizeof(err)) ||
	    ht_metrics_start(&metrics, &mo, err, sizeof(err))) {
		printf("    %s\n", err);
		return -1;
	}
	return 0;
}

/* The drain writes a record once every CPU's earlier records are surely in their rings. */
static void settle(void)
{
	usleep(HT_DRAIN_ORDER_SLACK_NS / 1000 + 1000);
}

static int hypercalls(unsigned int n, __u32 vcpu, __u32 nr)
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
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap + 1);
	unsigned long long end = now_ms() + WAIT_MS;

	if (!buf)
		return -1;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		unsigned long long now = now_ms();

		if (now >= end || poll(&p, 1, (int)(end - now)) <= 0) {
			free(buf);
			return -1;
		}
		if (len == cap) {
			char *b = realloc(buf, 2 * cap + 1);
			if (!b) {
				free(buf);
				return -1;
			}
			buf = b;
			cap *= 2;
		}
		ssize_t n = recv(fd, buf + len, cap - len, 0);
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
	struct ht_writer *w;
	struct ht_file_header h;
	struct ht_trailer t;
	char err[256], series[128];
	const __u32 nr = 1000;

	CHECK(load(false, &nr, 1) == 0, "setup");
	ht_header_init(&h);
	CHECK(ht_writer_open(path, true, &h, &w, err, sizeof(err)) == 0, "%s", err);
	CHECK(ht_recording_init(&rec, tracer, w) == 0, "recording");
	rec.observer = ht_metrics_observe;
	rec.observer_ctx = metrics;
	CHECK(hypercalls(30, 0, nr) == 0 && hypercalls(12, 1, nr) == 0, "events");
	settle();
	CHECK(ht_recording_pump(&rec, 0) == 42, "drained a different number of records");
	ht_metrics_update(metrics, tracer, &rec, 0, true);

	CHECK(scrape(ht_metrics_port(metrics), &body) == 200, "scrape failed");
	snprintf(series, sizeof(series), "hypertrace_hypercalls_total{vm_pid=\"%d\",vcpu=\"0\",nr=\"1000\"}", getpid());
	CHECK(value_of(body, series) == 30, "%s: %lld\n%s", series, value_of(body, series), body);
	snprintf(series, sizeof(series), "hypertrace_hypercall_duration_seconds_count{phase=\"exit_to_entry\",vm_pid=\"%d\",vcpu=\"1\",nr=\"1000\"}", getpid());
	CHECK(value_of(body, series) == 12, "%s: %lld", series, value_of(body, series));
	CHECK(value_of(body, "hypertrace_dropped_hypercalls_total{reason=\"ringbuf_full\"}") == 0, "drops");
	CHECK(value_of(body, "hypertrace_build_info{version=\"test\",mode=\"file\"}") == 1, "build info");

	/* The last records, drained at the end, are in the final snapshot. */
	CHECK(hypercalls(5, 1, nr) == 0, "events");
	CHECK(ht_recording_finish(&rec, &t) == 0, "finish");
	ht_metrics_update(metrics, tracer, &rec, 0, true);
	free(body);
	body = NULL;
	CHECK(scrape(ht_metrics_port(metrics), &body) == 200, "scrape failed");
	snprintf(series, sizeof(series), "hypertrace_hypercalls_total{vm_pid=\"%d\",vcpu=\"1\",nr=\"1000\"}", getpid());
	CHECK(value_of(body, series) == 17, "%s: %lld", series, value_of(body, series));
	CHECK_EQ_U64(t.records, 47);
	unlink(path);
}

static void no_file_mode_labels_the_bpf_aggregates_by_vcpu_and_nr(void)
{
	const __u32 nrs[2] = { 1000, 0x7fff0001 };
	char series[160];

	CHECK(load(true, nrs, 2) == 0, "setup");
	CHECK(hypercalls(4, 0, nrs[0]) == 0 && hypercalls(6, 0, nrs[1]) == 0 &&
	      hypercalls(3, 2, nrs[1]) == 0, "events");
	ht_metrics_update(metrics, tracer, NULL, 0, true);
	CHECK(scrape(ht_metrics_port(metrics), &body) == 200, "scrape failed");
	snprintf(series, sizeof(series), "hypertrace_hypercalls_total{vm_pid=\"%d\",vcpu=\"0\",nr=\"1000\"}", getpid());
	CHECK(value_of(body, series) == 4, "%s: %lld\n%s", series, value_of(body, series), body);
	snprintf(series, sizeof(series), "hypertrace_hypercalls_total{vm_pid=\"%d\",vcpu=\"0\",nr=\"2147418113\"}", getpid());
	CHECK(value_of(body, series) == 6, "%s: %lld\n%s", series, value_of(body, series), body);
	snprintf(series, sizeof(series), "hypertrace_hypercall_duration_seconds_bucket{phase=\"hypercall_to_entry\",vm_pid=\"%d\",vcpu=\"2\",nr=\"2147418113\",le=\"+Inf\"}", getpid());
	CHECK(value_of(body, series) == 3, "%s: %lld\n%s", series, value_of(body, series), body);
	CHECK(strstr(body, "_sum{") == NULL, "aggregates have no exact sum");
	CHECK(value_of(body, "hypertrace_build_info{version=\"test\",mode=\"no_file\"}") == 1, "build info");
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

	CHECK(load(false, &nr, 1) == 0, "setup");
	ht_header_init(&h);
	CHECK(ht_writer_open(path, true, &h, &w, err, sizeof(err)) == 0, "%s", err);
	CHECK(ht_recording_init(&rec, tracer, w) == 0, "recording");
	rec.observer = ht_metrics_observe;
	rec.observer_ctx = metrics;
	for (unsigned int v = 0; v < nvcpus; v++)
		CHECK(hypercalls(1, v, nr) == 0, "events");
	settle();
	CHECK(ht_recording_pump(&rec, 0) == (int)nvcpus, "drained");
	ht_metrics_update(metrics, tracer, &rec, 0, true);

	uint16_t port = ht_metrics_port(metrics);
	idle_fd = connect_loopback(port, 0);                /* connects, never sends */
	stalled_fd = connect_loopback(port, 4096);          /* asks, never reads */
	CHECK(idle_fd >= 0 && stalled_fd >= 0, "connect: %s", strerror(errno));
	CHECK(send(stalled_fd, req, sizeof(req) - 1, MSG_NOSIGNAL) == (ssize_t)sizeof(req) - 1, "send");
	sc.port = port;
	CHECK(pthread_create(&thr, NULL, scrape_loop, &sc) == 0, "thread");

	/* The drain goes on, publishing as it goes, while those clients hang on. */
	unsigned long long drained = 0;
	for (int round = 0; round < 20; round++) {
		if (hypercalls(50, (__u32)round % 4, nr)) {
			sc.stop = 1;
			pthread_join(thr, NULL);
			CHECK(0, "events");
		}
		settle();
		int n = ht_recording_pump(&rec, 0);
		if (n > 0)
			drained += (unsigned long long)n;
		ht_metrics_update(metrics, tracer, &rec, 0, true);
	}
	/* At least one whole scrape ran next to the stalled clients (bounded wait). */
	for (unsigned long long end = now_ms() + WAIT_MS; !sc.ok && !sc.failed && now_ms() < end;)
		usleep(10000);
	sc.stop = 1;
	pthread_join(thr, NULL);
	CHECK_EQ_U64(drained, 1000);
	CHECK(sc.ok > 0 && sc.failed == 0, "concurrent scrapes: %u ok, %u failed", sc.ok, sc.failed);
	CHECK(ht_recording_finish(&rec, &t) == 0, "finish");
	CHECK_EQ_U64(t.records, nvcpus + 1000);
	CHECK_EQ_U64(t.ringbuf_drops, 0);

	/* A scrape now sees every record, the stalled ones notwithstanding. */
	ht_metrics_update(metrics, tracer, &rec, 0, true);
	CHECK(scrape(port, &body) == 200, "scrape failed");
	char series[128];
	snprintf(series, sizeof(series), "hypertrace_hypercalls_total{vm_pid=\"%d\",vcpu=\"3\",nr=\"1000\"}", getpid());
	CHECK(value_of(body, series) == 1 + 5 * 50, "%s: %lld", series, value_of(body, series));

	/* Both are closed at their deadline: EOF (or a reset) instead of a hang. */
	CHECK(read_to_eof(idle_fd, NULL) == 0, "the idle connection was not closed");
	got = read_to_eof(stalled_fd, NULL);
	CHECK(got >= 0, "the stalled connection was not closed");
	CHECK(got < (long)strlen(body), "the stalled client got the whole response (%ld bytes): nothing was stalled", got);
	unlink(path);
}

int main(void)
{
	char err[512];

	if (geteuid() != 0) {
		printf("SKIP: metrics_server: the in-kernel tests load BPF programs and need root\n");
		return 0;
	}
	if (ht_synth_layout_load(&layout, err, sizeof(err))) {
		printf("FAIL: metrics_server_setup: %s\n", err);
		return 1;
	}
	int fd = mkstemp(path);
	if (fd < 0) {
		printf("FAIL: metrics_server_setup: %s\n", strerror(errno));
		return 1;
	}
	close(fd);
	ht_test_cleanup = cleanup;
	RUN(scrape_counts_every_record_drained_by_vcpu);
	RUN(no_file_mode_labels_the_bpf_aggregates_by_vcpu_and_nr);
	RUN(stalled_clients_hold_up_neither_the_drain_nor_other_scrapes);
	unlink(path);
	return ht_test_exit_status();
}
