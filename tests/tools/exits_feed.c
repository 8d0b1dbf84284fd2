// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test driver: record --exits in one process, fed with synthetic exits at
 * exact times through the real BPF handlers (this host cannot run a guest),
 * sampled by the real exit sampler into a trace file and/or the metrics
 * server. The VM is this process: give it a hostile QEMU-style name with
 * -name, and its thread is called "CPU 0/KVM". When everything is written
 * and published it writes READY (what it fired), then serves /metrics until
 * STOP exists or 120 s pass.
 *
 * Usage: exits_feed READY STOP [--file FILE.htr] [--metrics PORT [--per-vcpu]] [-name NAME]
 *
 * What it fires (pid = this process; SVM):
 *   vCPU 0: 1000 io (0x7b) exits, exit i spending 1000 * (1 + i % 10) ns in the host;
 *           20 hlt (0x78) exits of 2 ms
 *   vCPU 1: 300 npf (0x400) exits of 700 ns
 *   a made-up vCPU thread (tid 4000001, vCPU 2): waits 5 ms, 3 preemptions of
 *           1 ms each and one wake-up 2 ms before it runs; 2 voluntary switch-outs
 *           (the second one's 1 ms off the CPU still runs when it ends)
 * half before a first sample, half a second later before the final one.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
#include "record/exit_sampler.h"
#include "record/metrics_exporter.h"
#include "record/vm_identity.h"
#include "synth.h"
#include "common/util.h"

#define SERVE_MAX_S 120
#define FAKE_TID 4000001u
#define MS 1000000ull

static struct ht_synth_layout layout;
static struct ht_tracer *tracer;
static unsigned long long clock_now = 1ull << 40; /* the synthetic clock */

static int fail(const char *what, const char *why)
{
	fprintf(stderr, "exits_feed: %s: %s\n", what, why);
	return 1;
}

static int exit_for(__u32 reason, __u32 vcpu, unsigned long long dur)
{
	int ret = ht_synth_exit_at(&layout, tracer, HT_ISA_SVM, reason, vcpu, clock_now);

	clock_now += dur;
	if (!ret)
		ret = ht_synth_entry_at(&layout, tracer, vcpu, clock_now);
	clock_now += 100;
	return ret;
}

/* Half of the scenario: which = 0 or 1. */
static int fire(int which)
{
	int ret = 0;

	for (unsigned int i = 500 * which; i < 500 * (which + 1u) && !ret; i++)
		ret = exit_for(0x7b, 0, 1000ull * (1 + i % 10));
	for (int i = 0; i < 10 && !ret; i++)
		ret = exit_for(0x78, 0, 2 * MS);
	for (int i = 0; i < 150 && !ret; i++)
		ret = exit_for(0x400, 1, 700);
	return ret;
}

/*
 * The made-up thread: preempted three times for 1 ms, then blocks, is woken,
 * and runs 2 ms later. Another made-up thread (no vCPU thread) runs between.
 */
static int fake_thread(void)
{
	const __u32 me = (__u32)gettid(), pid = (__u32)getpid(), other = FAKE_TID + 1;
	unsigned long long t = 1ull << 41;
	int ret = ht_synth_register(tracer, FAKE_TID, pid, 2, true, t);

	for (int i = 0; i < 3 && !ret; i++) {
		ret = ht_synth_switch(tracer, FAKE_TID, pid, other, pid, true, t);
		ret = ret ?: ht_synth_switch(tracer, other, pid, FAKE_TID, pid, false, t + MS);
		t += 2 * MS;
	}
	ret = ret ?: ht_synth_switch(tracer, FAKE_TID, pid, other, pid, false, t);
	ret = ret ?: ht_synth_wakeup(tracer, FAKE_TID, t + 10 * MS);
	ret = ret ?: ht_synth_switch(tracer, other, pid, FAKE_TID, pid, false, t + 12 * MS);
	/* Back to this thread, which is what runs on this CPU. */
	ret = ret ?: ht_synth_switch(tracer, FAKE_TID, pid, me, pid, false, t + 13 * MS);
	return ret;
}

int main(int argc, char **argv)
{
	/* Only the synthetic events move states (see main's pinning below). */
	struct ht_tracer_opts o = { .isa = HT_ISA_SVM, .synthetic = true, .synthetic_switches_only = true,
				    .exits = true, .ringbuf_bytes = 1 << 20 };
	struct ht_metrics_opts mo = { .version = "feed", .log = stderr, .exits = true };
	struct ht_exit_sampler sampler;
	struct ht_writer *w = NULL;
	struct ht_metrics *m = NULL;
	const char *file = NULL, *port = NULL;
	char err[512], spec[32];
	FILE *ready;

	if (argc < 3)
		return fail("usage", "exits_feed READY STOP [--file FILE.htr] [--metrics PORT [--per-vcpu]] [-name NAME]");
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--file") && i + 1 < argc)
			file = argv[++i];
		else if (!strcmp(argv[i], "--metrics") && i + 1 < argc)
			port = argv[++i];
		else if (!strcmp(argv[i], "--per-vcpu"))
			mo.exits_per_vcpu = true;
		else if (!strcmp(argv[i], "-name") && i + 1 < argc)
			i++; /* read back from /proc/self/cmdline as QEMU's would be */
		else
			return fail(argv[i], "unknown argument");
	}
	prctl(PR_SET_NAME, "CPU 0/KVM");
	/*
	 * One CPU, and no real switch seen: a synthetic event's program can be
	 * preempted half-way (BPF_PROG_TEST_RUN only disables migration), which
	 * no tracepoint's can, and a real switch in that gap, or a migration
	 * between an exit and its entry, would make the numbers those of the
	 * host's scheduling instead of exactly what this program fires.
	 */
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	sched_setaffinity(0, sizeof(one), &one);
	ht_filters_default(&o.filters);
	mo.filters = &o.filters;
	if (ht_synth_layout_load(&layout, err, sizeof(err)) || ht_tracer_load(&tracer, &o, err, sizeof(err)))
		return fail("setup", err);
	if (port) {
		snprintf(spec, sizeof(spec), "127.0.0.1:%s", port);
		if (!ht_listen_addr_parse(spec, &mo.addr))
			return fail(spec, "not a port");
		if (ht_metrics_start(&m, &mo, err, sizeof(err)))
			return fail("metrics", err);
	}
	if (file) {
		struct ht_file_header h;

		ht_header_init(&h);
		if (ht_writer_open(file, true, &h, &w, err, sizeof(err)))
			return fail(file, err);
	}
	if (ht_exit_sampler_init(&sampler, tracer, w, ht_monotonic_ns()))
		return fail("sampler", "out of memory");
	for (int half = 0; half < 2; half++) {
		if (fire(half) || (half == 0 && fake_thread()))
			return fail("synthetic events", strerror(errno));
		/* The final sample, as record takes it: with the programs detached. */
		if (half == 1)
			ht_tracer_detach(tracer);
		if (ht_exit_sampler_sample(&sampler, ht_monotonic_ns(), half == 1))
			return fail("sample", "cannot read the BPF maps");
		ht_metrics_observe_exits(m, &sampler.total);
		ht_metrics_update(m, tracer, NULL, ht_monotonic_ns(), true);
		if (w)
			ht_writer_flush(w);
		/* The halves a second apart: report --since/--until can tell them apart. */
		if (half == 0)
			usleep(1000000);
	}
	if (w) {
		struct ht_trailer t = { .end_monotonic_ns = ht_monotonic_ns(), .end_realtime_ns = ht_clock_ns(CLOCK_REALTIME) };

		if (ht_writer_close(w, &t))
			return fail(file, "cannot write");
	}
	ready = fopen(argv[1], "w");
	if (!ready)
		return fail(argv[1], strerror(errno));
	fprintf(ready, "pid %d\ntid %d\nfake_tid %u\n", getpid(), gettid(), FAKE_TID);
	fclose(ready);
	for (int i = 0; i < SERVE_MAX_S * 10 && access(argv[2], F_OK) != 0; i++)
		usleep(100000);
	ht_exit_sampler_free(&sampler);
	ht_metrics_stop(m);
	ht_tracer_destroy(tracer);
	return 0;
}
