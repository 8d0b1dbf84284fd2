// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test driver for `top` (tests/term/test_top_tty.sh): the real top loop over
 * a tracer loaded with --exits and its synthetic-event programs, fed by
 * child processes that play VMs. Each child is started with QEMU's
 * "-name NAME" on its command line (top reads names from /proc as for a
 * QEMU), names its thread "CPU 0/KVM", and issues synthetic exits through
 * the real handlers, from its own process: io exits of 1-10 us, some hlt
 * exits during which it sleeps (a switch-out mid-exit, so it becomes a vCPU
 * thread with waiting), and hypercall exits. A VM may start late or end
 * early: top must show it appear and disappear. Every VM keeps one schedule
 * from one base time, taken once every child has loaded its layout (each
 * says so on a pipe; the driver then sends the base to all): a child slow
 * to load (a busy machine) neither loses its window nor shifts it, so a VM
 * that stops before another starts never overlaps it, and one that starts
 * with top is in its first frames.
 *
 * Usage: top_feed [--vm NAME[,start=S][,stop=S]]... [TOP OPTIONS]
 * (TOP OPTIONS: -d, -n, -b, -o, --vcpus, --reasons as for hypertrace-bpf top)
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "parse.h"
#include "synth.h"
#include "top/top_run.h"
#include "common/util.h"

#define MAX_VMS 8

static int fail(const char *what, const char *why)
{
	fprintf(stderr, "top_feed: %s: %s\n", what, why);
	return 1;
}

static int run_fd(int fd, void *ctx, size_t len)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = ctx, .ctx_size_in = (__u32)len);

	return bpf_prog_test_run_opts(fd, &opts);
}

/* One exit and its entry at the real time, spending about dur_us in the host. */
static void exit_for(const struct ht_synth_layout *l, int exit_fd, int entry_fd, __u32 reason, unsigned int dur_us,
		     bool sleep_inside)
{
	struct ht_synth_timed_event ev = { .now_ns = ht_monotonic_ns() };

	ht_synth_build_exit(l, ev.event, HT_ISA_SVM, reason, 0x1000, 0);
	run_fd(exit_fd, &ev, sizeof(ev));
	if (sleep_inside)
		usleep(dur_us);
	ev.now_ns += dur_us * 1000ull;
	ht_synth_build_entry(l, ev.event, 0, 0x1003);
	run_fd(entry_fd, &ev, sizeof(ev));
}

/*
 * A VM: "--child EXIT_FD ENTRY_FD START_NS STOP_NS READY_FD GO_FD -name NAME"
 * (times after the base the driver sends on GO_FD; STOP_NS 0: never).
 */
static int child(char **argv)
{
	int exit_fd = atoi(argv[2]), entry_fd = atoi(argv[3]), ready_fd = atoi(argv[6]), go_fd = atoi(argv[7]);
	unsigned long long start = strtoull(argv[4], NULL, 10), end = strtoull(argv[5], NULL, 10), base;
	struct ht_synth_layout l;
	char err[256];

	prctl(PR_SET_NAME, "CPU 0/KVM");
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (ht_synth_layout_load(&l, err, sizeof(err)))
		return fail("layout", err);
	/* Loaded: one byte says so; the base comes back whole (8 bytes < PIPE_BUF: one write, one read). */
	if (write(ready_fd, "r", 1) != 1 || read(go_fd, &base, sizeof(base)) != (ssize_t)sizeof(base))
		return fail("schedule", "the driver's pipe closed");
	start += base;
	end = end ? end + base : 0;
	for (unsigned long long now = ht_monotonic_ns(); now < start; now = ht_monotonic_ns())
		usleep((useconds_t)((start - now) / 1000 + 1));
	for (unsigned int i = 0; !end || ht_monotonic_ns() < end; i++) {
		for (unsigned int k = 0; k < 20; k++)
			exit_for(&l, exit_fd, entry_fd, 0x7b, 1 + (i + k) % 10, false);
		exit_for(&l, exit_fd, entry_fd, HT_SVM_EXIT_CODE_VMMCALL, 2, false);
		exit_for(&l, exit_fd, entry_fd, 0x78, 2000, true); /* hlt: sleeps in the host */
	}
	return 0;
}

/* A program fd the child keeps across exec. */
static int inheritable(int fd)
{
	int dup_fd = dup(fd);

	if (dup_fd >= 0)
		fcntl(dup_fd, F_SETFD, 0);
	return dup_fd;
}

int main(int argc, char **argv)
{
	struct ht_top_opts o = { .interval_s = 1.0, .proc = "/proc" };
	struct ht_tracer_opts topts = { .isa = HT_ISA_SVM, .synthetic = true, .exits = true, .aggregate_only = true,
					.ringbuf_bytes = 4096 };
	struct ht_tracer *t;
	char err[512], fds[4][16], start[MAX_VMS][24], stop[MAX_VMS][24];
	double start_s[MAX_VMS], stop_s[MAX_VMS];
	const char *names[MAX_VMS];
	pid_t pids[MAX_VMS];
	int nvms = 0;
	uint64_t v;

	if (argc > 1 && !strcmp(argv[1], "--child") && argc == 10)
		return child(argv);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--vm") && i + 1 < argc && nvms < MAX_VMS) {
			char *spec = argv[++i], *p;
			double a = 0, b = 0;

			if ((p = strstr(spec, ",start=")))
				a = atof(p + 7);
			if ((p = strstr(spec, ",stop=")))
				b = atof(p + 6);
			if ((p = strchr(spec, ',')))
				*p = '\0';
			names[nvms] = spec;
			start_s[nvms] = a;
			stop_s[nvms] = b;
			nvms++;
		} else if (!strcmp(argv[i], "-d") && i + 1 < argc) {
			ht_parse_seconds(argv[++i], 86400, &o.interval_s);
		} else if (!strcmp(argv[i], "-n") && i + 1 < argc && ht_parse_u64(argv[i + 1], 1, 1000, &v)) {
			o.iterations = (unsigned int)v;
			i++;
		} else if (!strcmp(argv[i], "-b")) {
			o.batch = true;
		} else if (!strcmp(argv[i], "-o") && i + 1 < argc && ht_top_sort_parse(argv[i + 1], &o.sort)) {
			i++;
		} else if (!strcmp(argv[i], "--vcpus")) {
			o.vcpus = true;
		} else if (!strcmp(argv[i], "--reasons")) {
			o.reasons = true;
		} else {
			return fail(argv[i], "unknown argument");
		}
	}
	ht_filters_default(&topts.filters);
	if (ht_tracer_load(&t, &topts, err, sizeof(err)))
		return fail("tracer", err);
	snprintf(fds[0], sizeof(fds[0]), "%d", inheritable(ht_tracer_synthetic_fd(t, HT_SYNTH_KVM_EXIT_AT)));
	snprintf(fds[1], sizeof(fds[1]), "%d", inheritable(ht_tracer_synthetic_fd(t, HT_SYNTH_KVM_ENTRY_AT)));
	int ready[2], go[2];

	if (pipe(ready) || pipe(go))
		return fail("pipe", strerror(errno));
	/* The children keep only their ends across exec. */
	fcntl(ready[0], F_SETFD, FD_CLOEXEC);
	fcntl(go[1], F_SETFD, FD_CLOEXEC);
	snprintf(fds[2], sizeof(fds[2]), "%d", ready[1]);
	snprintf(fds[3], sizeof(fds[3]), "%d", go[0]);
	for (int i = 0; i < nvms; i++) {
		snprintf(start[i], sizeof(start[0]), "%llu", (unsigned long long)(start_s[i] * 1e9));
		snprintf(stop[i], sizeof(stop[0]), "%llu", (unsigned long long)(stop_s[i] * 1e9));
		pids[i] = fork();
		if (pids[i] == 0) {
			char *cargv[] = { argv[0], "--child", fds[0], fds[1], start[i], stop[i], fds[2], fds[3],
					  "-name", (char *)names[i], NULL };
			execv("/proc/self/exe", cargv);
			_exit(127);
		}
	}
	close(ready[1]);
	close(go[0]);
	/* Every VM's schedule from one time, once all are loaded: now. */
	int loaded = 0;
	char byte;

	/* A child that dies before it loads never writes: wait 60 s at most. */
	struct pollfd pfd = { .fd = ready[0], .events = POLLIN };

	while (loaded < nvms && poll(&pfd, 1, 60000) == 1 && read(ready[0], &byte, 1) == 1)
		loaded++;
	unsigned long long base = ht_monotonic_ns();

	for (int i = 0; i < loaded; i++)
		if (write(go[1], &base, sizeof(base)) != (ssize_t)sizeof(base))
			break;
	close(ready[0]);
	close(go[1]);
	if (loaded < nvms) {
		for (int i = 0; i < nvms; i++) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
		}
		ht_tracer_destroy(t);
		return fail("children", "a VM ended before its layout loaded");
	}
	int status = ht_top_run(&o, t);
	for (int i = 0; i < nvms; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
	}
	ht_tracer_destroy(t);
	return status;
}
