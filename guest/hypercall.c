// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * hypercall: issues KVM hypercalls from a Linux KVM guest's user space and
 * reports the return value and round-trip latency. Copy the static binary
 * into any KVM guest and run it while the host records.
 *
 * Why user space works: KVM's kvm_emulate_hypercall() fires the
 * kvm_hypercall tracepoint before it checks the caller's CPL, then answers a
 * CPL > 0 caller with -KVM_EPERM (-1) without doing anything. So the host
 * sees the full kvm_exit / kvm_hypercall / kvm_entry sequence for every call,
 * and no kernel module is needed in the guest.
 *
 * Timing: CLOCK_MONOTONIC is read before and after each call. In a KVM guest
 * that is a vDSO read of the TSC via kvmclock, with no exit of its own, so it
 * does not disturb the host trace; its own cost is measured and reported.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "cpuid_info.h"
#include "cpuid_read.h"
#include "hypercall_options.h"
#include "latency_stats.h"
#include "common/util.h"
#include "hypertrace/guest.h"

#define TEST_CPUID_ENV "HYPERCALL_TEST_CPUID"
#define CLOCK_OVERHEAD_SAMPLES 1001

static void sleep_until_ns(uint64_t deadline)
{
	struct timespec ts = {
		.tv_sec = (time_t)(deadline / 1000000000ull),
		.tv_nsec = (long)(deadline % 1000000000ull),
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* A hypervisor that does not intercept the instruction makes it raise #UD. */
static void on_sigill(int sig)
{
	static const char msg[] =
		"hypercall: the hypercall instruction raised #UD (SIGILL): the hypervisor did "
		"not intercept it; try the other --insn\n";

	(void)sig;
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {
		/* Nothing more to report with. */
	}
	_exit(1);
}

/* Median cost of one back-to-back clock read, the bias included in every sample. */
static double clock_overhead_ns(void)
{
	static uint64_t samples[CLOCK_OVERHEAD_SAMPLES];
	struct latency_summary s;

	for (size_t i = 0; i < CLOCK_OVERHEAD_SAMPLES; i++) {
		uint64_t t0 = ht_monotonic_ns();

		samples[i] = ht_monotonic_ns() - t0;
	}
	latency_summarize(samples, CLOCK_OVERHEAD_SAMPLES, &s);
	return s.median;
}

/* Reads CPUID, or the test hook's text; returns -1 (message printed) if that text is bad. */
static int load_cpuid(struct cpuid_snapshot *c, int *from_test_hook)
{
	const char *text = getenv(TEST_CPUID_ENV);

	*from_test_hook = text != NULL;
	if (!text) {
		cpuid_snapshot_read(c);
		return 0;
	}
	if (!cpuid_snapshot_from_text(text, c)) {
		fprintf(stderr,
			"hypercall: %s='%s' is malformed: expected VENDOR,HYPERVISOR_BIT,SIGNATURE, "
			"e.g. GenuineIntel,1,KVMKVMKVM\n",
			TEST_CPUID_ENV, text);
		return -1;
	}
	return 0;
}

/* Returns true for a KVM guest; otherwise prints why not and returns false. */
static bool check_kvm_guest(const struct cpuid_snapshot *c)
{
	char sig[13];

	switch (cpuid_hypervisor_kind(c)) {
	case HYPERVISOR_KVM:
		return true;
	case HYPERVISOR_NONE:
		fprintf(stderr, "hypercall: not running under a hypervisor (CPUID hypervisor bit is "
				"clear); refusing to issue a hypercall: run this inside a KVM guest\n");
		return false;
	default:
		cpuid_hypervisor_signature(c, sig);
		fprintf(stderr,
			"hypercall: the hypervisor is '%s', not KVM (KVMKVMKVM); refusing to issue "
			"a hypercall: run this inside a KVM guest\n",
			sig);
		return false;
	}
}

/*
 * The command line, the KVM check and the instruction choice: -1 to go on
 * with *insn chosen, else the exit status (usage, --help, not a KVM guest,
 * or the test hook's stop).
 */
static int prepare(int argc, char **argv, struct hypercall_options *o, enum hypercall_insn *insn)
{
	struct cpuid_snapshot cpu;
	char err[256], vendor[13];
	int test_hook;

	if (hypercall_options_parse(argc, argv, o, err, sizeof(err)) < 0) {
		fprintf(stderr, "hypercall: %s\n", err);
		return 2;
	}
	if (o->help) {
		fputs(hypercall_usage, stdout);
		return 0;
	}
	if (load_cpuid(&cpu, &test_hook) < 0)
		return 2;
	if (!check_kvm_guest(&cpu))
		return 1;
	*insn = o->insn != HYPERCALL_INSN_UNKNOWN ? o->insn : cpuid_vendor_hypercall_insn(&cpu);
	if (*insn == HYPERCALL_INSN_UNKNOWN) {
		cpuid_vendor_string(&cpu, vendor);
		fprintf(stderr,
			"hypercall: cannot choose vmcall or vmmcall for CPU vendor '%s'; pass --insn\n",
			vendor);
		return 1;
	}
	if (test_hook) {
		printf("hypercall: test hook %s: KVM guest, insn=%s; not issuing hypercalls\n",
		       TEST_CPUID_ENV, hypercall_insn_name(*insn));
		return 0;
	}
	return -1;
}

/*
 * The deadline of call i at --rate, the first call's at start: i periods
 * on. With --timer-lateness each one a period after the last (*last), the
 * first one period on: every sample a sleep of its own. One the guest
 * already passed (it woke more than a period late) would be no sleep, no
 * timer to measure: it moves to a period from now.
 */
static uint64_t sample_deadline(const struct hypercall_options *o, uint64_t i, uint64_t start, uint64_t *last)
{
	uint64_t period = 1000000000ull / o->rate, now;

	if (!o->timer_lateness)
		return start + i * 1000000000ull / o->rate;
	now = ht_monotonic_ns();
	*last += period;
	if (*last <= now)
		*last = now + period;
	return *last;
}

/*
 * Issues o->count hypercalls, each one's round trip into samples[i] (and with
 * --timer-lateness how late its sleep ended into lateness[i]); returns
 * the first call's return value and counts in *mismatches the calls that
 * returned another.
 */
static uint64_t issue_hypercalls(const struct hypercall_options *o, enum ht_guest_insn ginsn,
				 uint64_t *samples, uint64_t *lateness, uint64_t *mismatches)
{
	uint64_t first_ret = 0, start = ht_monotonic_ns(), timer_deadline = start;

	for (uint64_t i = 0; i < o->count; i++) {
		uint64_t a0 = o->a0_fixed ? o->a0 : i, a1 = o->a1, a2 = o->a2, ret, t0, t1;

		if (o->rate) {
			uint64_t deadline = sample_deadline(o, i, start, &timer_deadline);

			sleep_until_ns(deadline);
			if (o->timer_lateness) {
				uint64_t woke = ht_monotonic_ns();

				a1 = woke > deadline ? woke - deadline : 0;
				a2 = deadline;
				lateness[i] = a1;
			}
		}
		t0 = ht_monotonic_ns();
		ret = ht_guest_hypercall(ginsn, o->nr, a0, a1, a2, o->a3);
		t1 = ht_monotonic_ns();
		samples[i] = t1 - t0;
		if (i == 0)
			first_ret = ret;
		else if (ret != first_ret)
			(*mismatches)++;
	}
	return first_ret;
}

/* The output lines of --help's "Output" section. */
static void print_report(const struct hypercall_options *o, enum hypercall_insn insn,
			 uint64_t first_ret, uint64_t mismatches,
			 const struct latency_summary *lat, double clock_ns)
{
	printf("hypercall: issued=%llu nr=%llu insn=%s", (unsigned long long)o->count,
	       (unsigned long long)o->nr, hypercall_insn_name(insn));
	if (o->a0_fixed)
		printf(" a0=0x%llx", (unsigned long long)o->a0);
	else
		printf(" a0=0..%llu", (unsigned long long)(o->count - 1));
	printf(" a1=0x%llx a2=0x%llx a3=0x%llx ret=%lld ret_mismatches=%llu\n",
	       (unsigned long long)o->a1, (unsigned long long)o->a2, (unsigned long long)o->a3,
	       (long long)first_ret, (unsigned long long)mismatches);
	printf("hypercall: round_trip_ns count=%zu mean=%.1f median=%.1f stddev=%.1f min=%llu "
	       "p99=%llu max=%llu\n",
	       lat->count, lat->mean, lat->median, lat->stddev, (unsigned long long)lat->min,
	       (unsigned long long)lat->p99, (unsigned long long)lat->max);
	printf("hypercall: clock_overhead_ns median=%.1f\n", clock_ns);
	if ((int64_t)first_ret == -1)
		printf("hypercall: note: ret -1 is -KVM_EPERM: KVM traced each call, then refused "
		       "it because it came from user space (CPL 3)\n");
}

/* The biggest --snapshot file read: /proc files are far smaller. */
#define SNAPSHOT_MAX (16u << 20)

/* FILE's bytes, read whole, into *buf (malloc'd), their count in *len; false with a message printed. */
static bool read_snapshot(const char *path, char **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 1 << 16, n = 0;
	char *b = malloc(cap);

	if (!f || !b) {
		fprintf(stderr, "hypercall: cannot read --snapshot %s: %s\n", path, f ? "out of memory" : strerror(errno));
		if (f)
			fclose(f);
		free(b);
		return false;
	}
	for (;;) {
		size_t got = fread(b + n, 1, cap - n, f);

		n += got;
		if (got == 0 || n == SNAPSHOT_MAX)
			break;
		if (n == cap) {
			char *nb = realloc(b, cap * 2 > SNAPSHOT_MAX ? SNAPSHOT_MAX : cap * 2);

			if (!nb)
				break;
			b = nb;
			cap = cap * 2 > SNAPSHOT_MAX ? SNAPSHOT_MAX : cap * 2;
		}
	}
	bool ok = !ferror(f);

	if (!ok)
		fprintf(stderr, "hypercall: cannot read --snapshot %s: %s\n", path, strerror(errno));
	fclose(f);
	if (!ok) {
		free(b);
		return false;
	}
	*buf = b;
	*len = n;
	return true;
}

int main(int argc, char **argv)
{
	struct hypercall_options o;
	struct latency_summary lat;
	enum hypercall_insn insn;
	enum ht_guest_insn ginsn;
	uint64_t *samples, *lateness = NULL, first_ret, mismatches = 0;
	double clock_ns;
	int status;

	if ((status = prepare(argc, argv, &o, &insn)) >= 0)
		return status;
	samples = calloc(o.count, sizeof(*samples));
	if (o.timer_lateness)
		lateness = calloc(o.count, sizeof(*lateness));
	if (!samples || (o.timer_lateness && !lateness)) {
		free(samples);
		fprintf(stderr, "hypercall: cannot allocate %llu samples; use a smaller --count\n",
			(unsigned long long)o.count);
		return 1;
	}
	/* The choice (probed, or forced by --insn) in the shared guest header's terms. */
	ginsn = insn == HYPERCALL_INSN_VMCALL ? HT_GUEST_INSN_VMCALL : HT_GUEST_INSN_VMMCALL;
	signal(SIGILL, on_sigill);
	clock_ns = clock_overhead_ns();
	/* The timer's own slack (50 us by default) would be most of its lateness: cyclictest's 1 ns. */
	if (o.timer_lateness && prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL))
		fprintf(stderr, "hypercall: cannot set the timer slack to 1 ns: %s\n", strerror(errno));
	first_ret = issue_hypercalls(&o, ginsn, samples, lateness, &mismatches);
	if (o.snapshot) {
		/* Read between two calls, printed only after the second: nothing slow inside the bracket. */
		char *snap;
		size_t snap_len;
		uint64_t close_a0 = o.a0_fixed ? o.a0 + 1 : o.count;

		if (!read_snapshot(o.snapshot, &snap, &snap_len)) {
			free(samples);
			free(lateness);
			return 1;
		}
		ht_guest_hypercall(ginsn, o.nr, close_a0, o.a1, o.a2, o.a3);
		fwrite(snap, 1, snap_len, stdout);
		free(snap);
	}
	latency_summarize(samples, o.count, &lat);
	free(samples);
	print_report(&o, insn, first_ret, mismatches, &lat, clock_ns);
	if (lateness) {
		latency_summarize(lateness, o.count, &lat);
		printf("hypercall: timer_lateness_ns count=%zu mean=%.1f median=%.1f stddev=%.1f min=%llu p99=%llu max=%llu\n",
		       lat.count, lat.mean, lat.median, lat.stddev, (unsigned long long)lat.min,
		       (unsigned long long)lat.p99, (unsigned long long)lat.max);
		free(lateness);
	}
	return 0;
}
