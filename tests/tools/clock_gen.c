// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Writes a trace file of one VM whose guest module sends clock pairs (nr
 * 1107), as record writes it (no BPF), for the tests of report --clock.
 * Every value is fixed, so a test knows what the fit must find:
 *
 *   clock_gen FILE [--ppm N] [--outliers K] [--backwards] [--forged] [--one] [--paused]
 *
 * VM process 7000 ("clock1"), vCPU 0 (thread 7001). The module's load event
 * (its text 0xffffffffc0a01000, 0x2000 bytes), then 200 clock pairs, one
 * every ms from the file's start + 1 ms. Pair i's host exit is at H_i; the
 * guest read its clock GAP_i = 2000 + (i % 5) * 100 ns before, and its
 * local_clock then read (H_i - GAP_i - 1000 s) / (1 + N ppm) (N default
 * 25), its CLOCK_MONOTONIC 3 s more, its ftrace clock 1.9 s less.
 *   --outliers K  K pairs (every 37th from the 10th) read their local clock
 *                 300 us early (an interrupt between the read and the call):
 *                 still in order, off the others' line
 *   --backwards   pair 100's local clock is 50 ms behind pair 99's
 *   --forged      one more clock pair, from guest user space (forged)
 *   --one         a single pair (no rate)
 *   --paused      the VM paused for 5 s after pair 99, its clocks held: the
 *                 exits of pairs 100 on are 5 s later, their clocks not
 * Prints "rate R intercept I" of the truth for the local clock with the
 * mean gap in the offset (host = I + R * guest).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/parse_number.h"
#include "hypertrace/guest.h"
#include "hypertrace/trace_file.h"
#include "tracefile/trace_writer.h"

#define PID 7000u
#define TID 7001u
#define MODULE_TEXT 0xffffffffc0a01000ull
#define NPAIRS 200
#define GUEST_BEHIND_NS 1000000000000ull /* the guest's clock started 1000 s after the host's */
#define MONO_AHEAD_NS 3000000000ull
#define TRACE_BEHIND_NS 1900000000ull /* ftrace's local clock: sched_clock, local_clock less an offset */
#define USAGE "usage: clock_gen FILE [--ppm N] [--outliers K] [--backwards] [--forged] [--one] [--paused]\n"
#define PAUSE_NS 5000000000ull

static void call(struct ht_writer *w, struct ht_trailer *t, uint64_t at, uint64_t rip, uint32_t nr,
		 struct ht_guest_args a)
{
	struct ht_record r;

	memset(&r, 0, sizeof(r));
	r.exit_ns = at;
	r.guest_rip = rip;
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
	ht_writer_add(w, &r);
	t->records++;
}

int main(int argc, char **argv)
{
	uint64_t ppm = 25, outliers = 0;
	bool backwards = false, forged = false, one = false, paused = false;
	struct ht_file_header hdr;
	struct ht_trailer t = { 0 };
	struct ht_identity id = { .pid = PID, .tid = TID };
	struct ht_writer *w;
	char err[512];

	if (argc < 2) {
		fputs(USAGE, stderr);
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--ppm") && i + 1 < argc && ht_parse_u64(argv[i + 1], 0, 1000000, &ppm))
			i++;
		else if (!strcmp(argv[i], "--outliers") && i + 1 < argc && ht_parse_u64(argv[i + 1], 0, 5, &outliers))
			i++;
		else if (!strcmp(argv[i], "--backwards"))
			backwards = true;
		else if (!strcmp(argv[i], "--forged"))
			forged = true;
		else if (!strcmp(argv[i], "--one"))
			one = true;
		else if (!strcmp(argv[i], "--paused"))
			paused = true;
		else {
			fputs(USAGE, stderr);
			return 2;
		}
	}
	ht_header_init(&hdr);
	hdr.filter_nr_count = 2;
	hdr.filter_nr[0] = HT_GUEST_NR_MODULE;
	hdr.filter_nr[1] = HT_GUEST_NR_CLOCK_PAIR;
	if (ht_writer_open(argv[1], true, &hdr, &w, err, sizeof(err))) {
		fprintf(stderr, "clock_gen: %s\n", err);
		return 1;
	}
	id.first_seen_ns = hdr.start_monotonic_ns;
	snprintf(id.process_name, sizeof(id.process_name), "qemu-system-x86");
	snprintf(id.thread_name, sizeof(id.thread_name), "CPU 0/KVM");
	snprintf(id.vm_name, sizeof(id.vm_name), "clock1");
	ht_writer_add_identity(w, &id);

	long double rate = 1.0L + (long double)ppm / 1e6L;
	uint64_t h0 = hdr.start_monotonic_ns + 1000000, last = h0;

	call(w, &t, h0 - 500000, MODULE_TEXT + 0x40, HT_GUEST_NR_MODULE,
	     ht_guest_module_text(ht_guest_pack_module(1, 0, 0, 0, 0xffffffff9a0c1230ull, "_printk"), MODULE_TEXT, 0x2000));
	for (unsigned int i = 0; i < (one ? 1u : NPAIRS); i++) {
		uint64_t host = h0 + (uint64_t)i * 1000000, gap = 2000 + (i % 5) * 100;
		uint64_t local = (uint64_t)((long double)(host - gap - GUEST_BEHIND_NS) / rate + 0.5L);

		if (i >= 10 && (i - 10) % 37 == 0 && (i - 10) / 37 < outliers)
			local -= 300000;
		if (backwards && i == 100)
			local -= 50000000;
		if (paused && i >= 100)
			host += PAUSE_NS; /* the guest's clock where it was, the host's 5 s on */
		call(w, &t, host, MODULE_TEXT + 0x100, HT_GUEST_NR_CLOCK_PAIR,
		     ht_guest_pack_clock_pair(local, local + MONO_AHEAD_NS, local - TRACE_BEHIND_NS, i, 0));
		last = host;
	}
	if (forged)
		call(w, &t, last + 500000, 0x401000, HT_GUEST_NR_CLOCK_PAIR, ht_guest_pack_clock_pair(1, 1, 1, 999, 0));
	t.end_monotonic_ns = last + 1000000;
	t.end_realtime_ns = hdr.start_realtime_ns + (t.end_monotonic_ns - hdr.start_monotonic_ns);
	if (ht_writer_close(w, &t)) {
		fprintf(stderr, "clock_gen: cannot write %s\n", argv[1]);
		return 1;
	}
	/* host = GUEST_BEHIND + mean gap + rate * guest */
	printf("rate %.12Lf intercept %.0Lf\n", rate, (long double)GUEST_BEHIND_NS + 2200.0L);
	return 0;
}
