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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/option_error.h"
#include "common/parse_number.h"
#include "trace_replay.h"

static const char usage[] =
	"Usage: boottrace [--tracing DIR] [--match TEXT] [--syncs N] [--sync-ms MS]\n"
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
	"  -h, --help         show this help\n"
	"\n"
	"Each pair is a line written to DIR/trace_marker and a hypercall right after.\n"
	"Output: boottrace: N lines in H hypercalls, S clock pairs, U lines not parsed,\n"
	"C cut, L events the trace lost, M lines left out by --match. Exit status: 0 done, 1 not a KVM guest or no\n"
	"trace, 2 usage error.\n";

enum { OPT_TRACING = 256, OPT_SYNCS, OPT_SYNC_MS, OPT_MATCH };

static const struct option long_options[] = {
	{ "tracing", required_argument, NULL, OPT_TRACING },
	{ "syncs", required_argument, NULL, OPT_SYNCS },
	{ "sync-ms", required_argument, NULL, OPT_SYNC_MS },
	{ "match", required_argument, NULL, OPT_MATCH },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct options {
	const char *tracing, *match;
	uint32_t syncs, sync_ms;
	bool help;
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

/* The clock pairs: each marker line, then its hypercall at once. */
static uint32_t send_syncs(struct ht_trace_replay *r, int marker, const struct options *o)
{
	uint32_t sent = 0;

	for (uint32_t i = 0; i < o->syncs; i++) {
		char line[64];
		int n = snprintf(line, sizeof(line), HT_GUEST_SYNC_MARKER " %u %u", r->run, i);

		if (i)
			sleep_ms(o->sync_ms);
		if (write(marker, line, (size_t)n) != n)
			continue;
		ht_trace_replay_sync(r, i);
		sent++;
	}
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
	FILE *trace;

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
	if (!(trace = fopen(path, "r"))) {
		fprintf(stderr, "boottrace: %s: %s: run as root, with tracefs mounted\n", path, strerror(errno));
		close(marker);
		return 1;
	}
	r.run = (uint32_t)getpid() ^ (uint32_t)time(NULL) << 16;
	r.match = o.match;
	ht_trace_replay_begin(&r);
	pairs = send_syncs(&r, marker, &o);
	close(marker);
	while ((len = getline(&line, &cap, trace)) > 0)
		ht_trace_replay_line(&r, line, (size_t)len);
	free(line);
	fclose(trace);
	ht_trace_replay_end(&r, overruns(o.tracing));
	printf("boottrace: %llu lines in %llu hypercalls, %u clock pairs, %llu lines not parsed, %llu cut, %llu events the trace lost, %llu lines left out by --match\n",
	       (unsigned long long)r.lines, (unsigned long long)r.hypercalls, pairs, (unsigned long long)r.unparsed,
	       (unsigned long long)r.cut, (unsigned long long)r.lost, (unsigned long long)r.unmatched);
	return 0;
}
