// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Writes a trace file of one VM whose guest replayed its own trace with
 * guest/boottrace (nr 1150..1152), as record writes it (no BPF), for the
 * tests of report --initcalls:
 *
 *   boottrace_gen FILE TRACE [--ppm N] [--syncs K] [--no-end] [--stray]
 *
 * TRACE is a guest's ftrace text (lines as tracefs's `trace` prints them).
 * The guest's trace clock runs at (1 + N ppm) of the host's (N default 40):
 * host = 500 s + rate * guest. After the trace's last line the guest
 * writes K (default 20) sync markers 50 ms apart, each line stamped in the
 * trace in microseconds as ftrace prints it, and issues each sync 3 us
 * after its marker's time. Then it replays the whole text (markers
 * included), through guest/trace_replay.c itself, one hypercall every
 * 20 us. VM process 7100 ("boot1"), thread 7101.
 *   --no-end   the replay's end is never sent (the guest stopped)
 *   --stray    a trace_text that continues no line, after the replay
 * Prints "rate R intercept I" (host = I + R * guest, the 3 us in I).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/parse_number.h"
#include "hypertrace/guest.h"
#include "hypertrace/trace_file.h"
#include "trace_replay.h"
#include "tracefile/trace_writer.h"

#define PID 7100u
#define TID 7101u
#define HOST_BASE_NS 500000000000ull
#define SYNC_GAP_NS 3000ull
#define USAGE "usage: boottrace_gen FILE TRACE [--ppm N] [--syncs K] [--no-end] [--stray]\n"

struct gen {
	struct ht_writer *w;
	struct ht_trailer t;
	uint64_t now; /* the next hypercall's exit */
	bool drop_end;
};

static void call(struct gen *g, uint32_t nr, struct ht_guest_args a)
{
	struct ht_record r;

	memset(&r, 0, sizeof(r));
	r.exit_ns = g->now;
	r.guest_rip = 0x401000; /* guest user space, as boottrace is */
	r.nr = nr;
	r.a0 = a.a[0];
	r.a1 = a.a[1];
	r.a2 = a.a[2];
	r.a3 = a.a[3];
	r.exit_reason = HT_SVM_EXIT_CODE_VMMCALL;
	r.isa = HT_ISA_SVM;
	r.exit_to_hcall_ns = 800;
	r.hcall_to_entry_ns = 400;
	r.host_pid = PID;
	r.host_tid = TID;
	ht_writer_add(g->w, &r);
	g->t.records++;
	g->now += 20000;
}

static void emit(void *ctx, uint32_t nr, struct ht_guest_args a)
{
	struct gen *g = ctx;

	if (g->drop_end && nr == HT_GUEST_NR_TRACE_REPLAY && (a.a[0] >> 32 & 0xff) == HT_GUEST_REPLAY_END)
		return;
	call(g, nr, a);
}

/* The trace's lines, and its last line's time (ns, as printed). */
static char **read_lines(const char *path, size_t *n, uint64_t *last_ns)
{
	FILE *f = fopen(path, "r");
	char **lines = NULL, *line = NULL;
	size_t cap = 0;
	ssize_t len;

	*n = 0;
	*last_ns = 0;
	if (!f)
		return NULL;
	while ((len = getline(&line, &cap, f)) > 0) {
		char *copy = strdup(line);
		char **grown = realloc(lines, (*n + 1) * sizeof(*lines));
		const char *colon = strstr(line, ": ");
		const char *p = colon;

		if (!copy || !grown)
			exit(1);
		lines = grown;
		lines[(*n)++] = copy;
		/* "... 12.345678: event": the time before the first ": " after the cpu column. */
		if (colon && strchr(line, ']')) {
			while (p > line && p[-1] != ' ')
				p--;
			unsigned long long s, us;
			if (sscanf(p, "%llu.%llu:", &s, &us) == 2)
				*last_ns = s * 1000000000ull + us * 1000ull;
		}
	}
	free(line);
	fclose(f);
	return lines;
}

int main(int argc, char **argv)
{
	uint64_t ppm = 40, syncs = 20, last_ns;
	bool stray = false;
	struct ht_file_header hdr;
	struct gen g = { .now = 0 };
	struct ht_identity id = { .pid = PID, .tid = TID };
	struct ht_trace_replay r = { .emit = emit, .ctx = &g, .run = 4242 };
	char err[512], **lines;
	size_t n;

	if (argc < 3) {
		fputs(USAGE, stderr);
		return 2;
	}
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--ppm") && i + 1 < argc && ht_parse_u64(argv[i + 1], 0, 1000000, &ppm))
			i++;
		else if (!strcmp(argv[i], "--syncs") && i + 1 < argc && ht_parse_u64(argv[i + 1], 0, 1000, &syncs))
			i++;
		else if (!strcmp(argv[i], "--no-end"))
			g.drop_end = true;
		else if (!strcmp(argv[i], "--stray"))
			stray = true;
		else {
			fputs(USAGE, stderr);
			return 2;
		}
	}
	if (!(lines = read_lines(argv[2], &n, &last_ns))) {
		fprintf(stderr, "boottrace_gen: cannot read %s\n", argv[2]);
		return 1;
	}
	ht_header_init(&hdr);
	hdr.filter_nr_count = 3;
	hdr.filter_nr[0] = HT_GUEST_NR_TRACE_LINE;
	hdr.filter_nr[1] = HT_GUEST_NR_TRACE_TEXT;
	hdr.filter_nr[2] = HT_GUEST_NR_TRACE_REPLAY;
	hdr.start_monotonic_ns = HOST_BASE_NS - 1000000000ull;
	if (ht_writer_open(argv[1], true, &hdr, &g.w, err, sizeof(err))) {
		fprintf(stderr, "boottrace_gen: %s\n", err);
		return 1;
	}
	id.first_seen_ns = hdr.start_monotonic_ns;
	snprintf(id.process_name, sizeof(id.process_name), "qemu-system-x86");
	snprintf(id.thread_name, sizeof(id.thread_name), "CPU 0/KVM");
	snprintf(id.vm_name, sizeof(id.vm_name), "boot1");
	ht_writer_add_identity(g.w, &id);

	long double rate = 1.0L + (long double)ppm / 1e6L;
	/* The markers: 1 s after the trace's last line, 50 ms apart (in the trace, in microseconds). */
	uint64_t first_marker = last_ns + 1000000000ull;
	char (*marker)[160] = calloc(syncs + 1, sizeof(*marker));

	if (!marker)
		return 1;
	g.now = HOST_BASE_NS + (uint64_t)((long double)first_marker * rate) - 1000000;
	ht_trace_replay_begin(&r);
	for (uint64_t i = 0; i < syncs; i++) {
		uint64_t at = first_marker + i * 50000000ull;

		snprintf(marker[i], sizeof(marker[i]),
			 "       boottrace-77      [000] .....  %llu.%06llu: tracing_mark_write: " HT_GUEST_SYNC_MARKER " %u %llu\n",
			 (unsigned long long)(at / 1000000000ull), (unsigned long long)(at % 1000000000ull / 1000), r.run,
			 (unsigned long long)i);
		g.now = HOST_BASE_NS + SYNC_GAP_NS + (uint64_t)((long double)at * rate + 0.5L);
		ht_trace_replay_sync(&r, (uint32_t)i);
	}
	g.now += 1000000;
	for (size_t i = 0; i < n; i++)
		ht_trace_replay_line(&r, lines[i], strlen(lines[i]));
	for (uint64_t i = 0; i < syncs; i++)
		ht_trace_replay_line(&r, marker[i], strlen(marker[i]));
	ht_trace_replay_end(&r, 0);
	if (stray)
		call(&g, HT_GUEST_NR_TRACE_TEXT, ht_guest_pack_trace_text(123456, 8, "stray text here: nowhere", 24));
	g.t.end_monotonic_ns = g.now + 1000000;
	g.t.end_realtime_ns = hdr.start_realtime_ns + (g.t.end_monotonic_ns - hdr.start_monotonic_ns);
	if (ht_writer_close(g.w, &g.t)) {
		fprintf(stderr, "boottrace_gen: cannot write %s\n", argv[1]);
		return 1;
	}
	printf("rate %.12Lf intercept %.0Lf\n", rate, (long double)HOST_BASE_NS + SYNC_GAP_NS);
	for (size_t i = 0; i < n; i++)
		free(lines[i]);
	free(lines);
	free(marker);
	return 0;
}
