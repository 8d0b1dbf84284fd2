// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * boottrace: sends the guest's own trace (tracefs's `trace`: the events its
 * kernel recorded since boot, e.g. with trace_event=initcall:* on its
 * command line) to the host through hypercalls, one line after the other,
 * with clock pairs that put the trace's clock on the host's.
 *
 * A clock pair: the program writes "hypertrace-sync RUN SEQ" to
 * trace_marker (the kernel stamps that line with the trace's own clock,
 * whichever it is) and issues trace_replay sync SEQ right after; the host
 * stamps that hypercall's exit. The line's time and the exit's are the pair
 * (`report --initcalls` fits them). So it needs no kernel module and works
 * with any trace clock. The syncs come first, so the trace read after them
 * holds their lines.
 *
 * Exit status: 0 done, 1 not a KVM guest or no trace to read, 2 usage error.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/option_error.h"
#include "common/parse_number.h"
#include "trace_replay.h"

static const char usage[] =
	"Usage: boottrace [--tracing DIR] [--match TEXT] [--syncs N] [--sync-ms MS] [--follow]\n"
	"Sends this KVM guest's own trace (DIR/trace: the events its kernel recorded\n"
	"since boot, e.g. with trace_event=initcall:* on its command line) to the host,\n"
	"where 'hypertrace-bpf record --nr 1150-1152' keeps it and\n"
	"'hypertrace-bpf report --initcalls' places it on the host's clock.\n"
	"\n"
	"      --tracing DIR  tracefs (default /sys/kernel/tracing; mount it with\n"
	"                     'mount -t tracefs nodev /sys/kernel/tracing')\n"
	"      --match TEXT   send only the lines that hold TEXT (e.g. initcall_), and\n"
	"                     the clock pairs' own lines\n"
	"      --syncs N      clock pairs to send first (default 20, 2 to 10000)\n"
	"      --sync-ms MS   between two of them (default 50, at most 10000)\n"
	"      --follow       read DIR/trace_pipe instead (it takes the events out of\n"
	"                     the buffer), and go on sending each new event as the\n"
	"                     kernel records it, with a clock pair every second,\n"
	"                     until SIGINT or SIGTERM: a guest that panics then\n"
	"                     loses only the events not yet read (milliseconds)\n"
	"  -h, --help         show this help\n"
	"\n"
	"Each pair is a line written to DIR/trace_marker and a hypercall right after.\n"
	"Output: boottrace: N lines in H hypercalls, S clock pairs, U lines not parsed,\n"
	"C cut, L events the trace lost, M lines left out by --match. Exit status: 0 done, 1 not a KVM guest or no\n"
	"trace, 2 usage error.\n";

enum { OPT_TRACING = 256, OPT_SYNCS, OPT_SYNC_MS, OPT_MATCH, OPT_FOLLOW };

static const struct option long_options[] = {
	{ "tracing", required_argument, NULL, OPT_TRACING },
	{ "syncs", required_argument, NULL, OPT_SYNCS },
	{ "sync-ms", required_argument, NULL, OPT_SYNC_MS },
	{ "match", required_argument, NULL, OPT_MATCH },
	{ "follow", no_argument, NULL, OPT_FOLLOW },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct options {
	const char *tracing, *match;
	uint32_t syncs, sync_ms;
	bool help, follow;
};

static bool parse_one(int opt, const char *arg, void *ctx, char *err, size_t err_size)
{
	struct options *o = ctx;

	switch (opt) {
	case OPT_TRACING:
		o->tracing = arg;
		return true;
	case OPT_MATCH:
		o->match = arg;
		return true;
	case OPT_FOLLOW:
		o->follow = true;
		return true;
	case OPT_SYNCS:
		return ht_parse_u32_option("--syncs", arg, 2, 10000, &o->syncs, err, err_size);
	case OPT_SYNC_MS:
		return ht_parse_u32_option("--sync-ms", arg, 0, 10000, &o->sync_ms, err, err_size);
	case 'h':
		o->help = true;
		return true;
	}
	return true;
}

static void hypercall(void *ctx, uint32_t nr, struct ht_guest_args a)
{
	ht_guest_emit(*(enum ht_guest_insn *)ctx, nr, a);
}

static void sleep_ms(uint32_t ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static bool sync_once(struct ht_trace_replay *r, int marker, uint32_t seq);

/* The clock pairs: each marker line, then its hypercall at once. */
static uint32_t send_syncs(struct ht_trace_replay *r, int marker, const struct options *o)
{
	uint32_t sent = 0;

	for (uint32_t i = 0; i < o->syncs; i++) {
		if (i)
			sleep_ms(o->sync_ms);
		sent += sync_once(r, marker, i);
	}
	return sent;
}

/* --follow: a clock pair this often, so that the fit spans the whole stream. */
#define FOLLOW_SYNC_MS 1000
/* Bytes of trace_pipe held for a line not yet whole; a longer line is sent cut there. */
#define FOLLOW_LINE_MAX 65536

static volatile sig_atomic_t stopping;

static void on_stop(int sig)
{
	(void)sig;
	stopping = 1;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* One clock pair: the marker line, then its hypercall at once. False if the line could not be written. */
static bool sync_once(struct ht_trace_replay *r, int marker, uint32_t seq)
{
	char line[64];
	int n = snprintf(line, sizeof(line), HT_GUEST_SYNC_MARKER " %u %u", r->run, seq);

	if (write(marker, line, (size_t)n) != n)
		return false;
	ht_trace_replay_sync(r, seq);
	return true;
}

/* What trace_pipe has now: each whole line sent, the rest kept in buf (*have bytes). False at its end or an error. */
static bool drain(struct ht_trace_replay *r, int fd, char *buf, size_t *have)
{
	for (;;) {
		ssize_t n = read(fd, buf + *have, FOLLOW_LINE_MAX - *have);

		if (n < 0)
			return errno == EAGAIN || errno == EINTR;
		if (n == 0)
			return false;
		*have += (size_t)n;
		size_t from = 0;
		for (char *nl; (nl = memchr(buf + from, '\n', *have - from)); from = (size_t)(nl - buf) + 1)
			ht_trace_replay_line(r, buf + from, (size_t)(nl - buf) + 1 - from);
		if (from == 0 && *have == FOLLOW_LINE_MAX) {
			ht_trace_replay_line(r, buf, *have); /* no line is this long: send it cut */
			from = *have;
		}
		memmove(buf, buf + from, *have - from);
		*have -= from;
	}
}

/*
 * --follow: trace_pipe from its start (the events so far, then each new one
 * as the kernel records it), a clock pair every FOLLOW_SYNC_MS, until
 * SIGINT or SIGTERM; then what is left in it. The clock pairs sent; 0 if
 * trace_pipe cannot be opened (said).
 */
static uint32_t follow(struct ht_trace_replay *r, const struct options *o, int marker, uint32_t seq)
{
	struct sigaction sa = { .sa_handler = on_stop }; /* no SA_RESTART: a stop ends poll() at once */
	char path[4096], *buf;
	size_t have = 0;
	uint32_t sent = 0;
	uint64_t next = now_ms() + FOLLOW_SYNC_MS;
	int fd;

	snprintf(path, sizeof(path), "%s/trace_pipe", o->tracing);
	if ((fd = open(path, O_RDONLY | O_NONBLOCK)) < 0) {
		fprintf(stderr, "boottrace: %s: %s\n", path, strerror(errno));
		return 0;
	}
	if (!(buf = malloc(FOLLOW_LINE_MAX))) {
		close(fd);
		return 0;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	while (!stopping && drain(r, fd, buf, &have)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint64_t t = now_ms();

		if (t >= next) {
			sent += sync_once(r, marker, seq++);
			next = t + FOLLOW_SYNC_MS;
		}
		poll(&p, 1, (int)(next - t < FOLLOW_SYNC_MS ? next - t : FOLLOW_SYNC_MS));
	}
	drain(r, fd, buf, &have);
	if (have)
		ht_trace_replay_line(r, buf, have);
	free(buf);
	close(fd);
	return sent;
}

/* The trace buffer's overruns: the sum of per_cpu/cpuN/stats "overrun:" lines. */
static uint64_t overruns(const char *tracing)
{
	uint64_t sum = 0;

	for (unsigned int cpu = 0; cpu < 8192; cpu++) {
		char path[4096], line[128];
		unsigned long long v;
		FILE *f;

		snprintf(path, sizeof(path), "%s/per_cpu/cpu%u/stats", tracing, cpu);
		if (!(f = fopen(path, "r")))
			break;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "overrun: %llu", &v) == 1)
				sum += v;
		fclose(f);
	}
	return sum;
}

int main(int argc, char **argv)
{
	struct options o = { .tracing = "/sys/kernel/tracing", .syncs = 20, .sync_ms = 50 };
	enum ht_guest_insn insn;
	struct ht_trace_replay r = { .emit = hypercall, .ctx = &insn };
	char err[256], path[4096], *line = NULL;
	size_t cap = 0;
	ssize_t len;
	uint32_t pairs;
	int marker;
	FILE *trace = NULL;

	if (ht_parse_options(argc, argv, ":h", long_options, parse_one, &o, err, sizeof(err))) {
		fprintf(stderr, "boottrace: %s\n", err);
		return 2;
	}
	if (o.help) {
		fputs(usage, stdout);
		return 0;
	}
	if (ht_guest_probe(&insn) != HT_GUEST_KVM) {
		fputs("boottrace: not a KVM guest on a CPU whose hypercall is known: run it inside a KVM guest\n", stderr);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/trace_marker", o.tracing);
	if ((marker = open(path, O_WRONLY)) < 0) {
		fprintf(stderr, "boottrace: %s: %s: run as root, with tracefs mounted (mount -t tracefs nodev %s)\n", path,
			strerror(errno), o.tracing);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/trace", o.tracing);
	if (!o.follow && !(trace = fopen(path, "r"))) {
		fprintf(stderr, "boottrace: %s: %s: run as root, with tracefs mounted\n", path, strerror(errno));
		close(marker);
		return 1;
	}
	r.run = (uint32_t)getpid() ^ (uint32_t)time(NULL) << 16;
	r.match = o.match;
	ht_trace_replay_begin(&r);
	pairs = send_syncs(&r, marker, &o);
	if (o.follow) {
		pairs += follow(&r, &o, marker, o.syncs);
	} else {
		while ((len = getline(&line, &cap, trace)) > 0)
			ht_trace_replay_line(&r, line, (size_t)len);
		free(line);
		fclose(trace);
	}
	close(marker);
	ht_trace_replay_end(&r, overruns(o.tracing));
	printf("boottrace: %llu lines in %llu hypercalls, %u clock pairs, %llu lines not parsed, %llu cut, %llu events the trace lost, %llu lines left out by --match\n",
	       (unsigned long long)r.lines, (unsigned long long)r.hypercalls, pairs, (unsigned long long)r.unparsed,
	       (unsigned long long)r.cut, (unsigned long long)r.lost, (unsigned long long)r.unmatched);
	return 0;
}
