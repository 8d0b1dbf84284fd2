// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `hypertrace-bpf record`: the daemon. Checks the host, creates the trace file,
 * loads and attaches the BPF programs, optionally starts CMD, and drains the
 * ring buffer into the file until told to stop. Stopping detaches first, then
 * drains what is left, so every record the kernel produced reaches the file.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "preflight.h"
#include "record.h"
#include "recording.h"
#include "trace_writer.h"

/* How often the loop wakes without records: bounds Ctrl-C latency and data age in the file. */
#define POLL_INTERVAL_MS 100
/* Buffered records are written at least this often, so a crash loses little. */
#define FLUSH_INTERVAL_NS 1000000000ull

static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static pid_t start_command(char **argv)
{
	pid_t pid = fork();

	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execvp(argv[0], argv);
		fprintf(stderr, "hypertrace-bpf: cannot run '%s': %s: check the command name and PATH\n",
			argv[0], strerror(errno));
		_exit(127);
	}
	return pid;
}

static void header_from_config(struct ht_file_header *hdr, const struct ht_record_config *cfg)
{
	const struct ht_filters *f = &cfg->filters;

	ht_header_init(hdr);
	hdr->filter_nr_count = f->nr_count;
	memcpy(hdr->filter_nr, f->nr, sizeof(hdr->filter_nr));
	if (f->exit_reason_on) {
		hdr->filter_flags |= HT_FILTER_F_EXIT_REASON;
		hdr->filter_exit_reason = f->exit_reason;
	}
	if (f->tgid_on) {
		hdr->filter_flags |= HT_FILTER_F_TGID;
		hdr->filter_tgid = f->tgid;
	}
	if (f->vcpu_on) {
		hdr->filter_flags |= HT_FILTER_F_VCPU;
		hdr->filter_vcpu = f->vcpu;
	}
	hdr->ringbuf_bytes = (__u32)cfg->ringbuf_bytes;
}

static unsigned long long file_size(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 ? (unsigned long long)sb.st_size : 0;
}

static void format_size(char *buf, size_t len, unsigned long long bytes)
{
	if (bytes < 10 * 1024)
		snprintf(buf, len, "%llu B", bytes);
	else if (bytes < 10 * 1024 * 1024)
		snprintf(buf, len, "%.1f KiB", bytes / 1024.0);
	else
		snprintf(buf, len, "%.1f MiB", bytes / (1024.0 * 1024.0));
}

static void print_summary(const struct ht_record_config *cfg, unsigned long long records,
			  const struct ht_trailer *t, unsigned long long bytes, double secs)
{
	unsigned long long lost = ht_trailer_lost(t);
	char size[32];

	format_size(size, sizeof(size), bytes);
	printf("hypertrace-bpf: %llu records, %llu dropped, %.2f s, %.0f records/s, %s written to %s\n",
	       records, lost, secs, secs > 0 ? records / secs : 0.0, size, cfg->output);
	if (lost)
		fprintf(stderr, "hypertrace-bpf: %llu hypercalls were not recorded: ring buffer full %llu (raise --ringbuf-size), no per-thread state %llu, another exit before kvm_entry %llu\n",
			lost, (unsigned long long)t->ringbuf_drops, (unsigned long long)t->state_alloc_fail,
			(unsigned long long)t->superseded);
}

static int run_record(const struct ht_record_config *cfg)
{
	struct ht_tracer_opts topts = {
		.filters = cfg->filters,
		.ringbuf_bytes = cfg->ringbuf_bytes,
		/* Wake the drain only once the ring is 1/8 full; the poll timeout picks up the rest. */
		.wakeup_bytes = cfg->ringbuf_bytes / 8,
		.verbose = cfg->verbose,
	};
	struct ht_recording rec = { 0 };
	struct ht_tracer *tracer = NULL;
	struct ht_writer *writer = NULL;
	struct ht_file_header hdr;
	struct ht_trailer trailer;
	char err[512];
	pid_t child = -1;
	int child_status = 0, status = HT_EXIT_RUNTIME, ret;

	if (ht_preflight(err, sizeof(err)))
		return ht_runtime_error("%s", err);

	header_from_config(&hdr, cfg);
	if (ht_writer_open(cfg->output, cfg->force, &hdr, &writer, err, sizeof(err)))
		return ht_runtime_error("%s", err);

	if (ht_tracer_load(&tracer, &topts, err, sizeof(err)) ||
	    ht_tracer_attach(tracer, err, sizeof(err))) {
		ht_runtime_error("%s", err);
		goto fail_unlink;
	}
	ret = ht_recording_init(&rec, tracer, writer);
	writer = NULL;
	if (ret) {
		ht_runtime_error("cannot set up the ring buffer consumer: %s", strerror(-ret));
		goto fail_unlink;
	}

	struct sigaction sa = { .sa_handler = on_stop_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	if (cfg->command) {
		child = start_command(cfg->command);
		if (child < 0) {
			ht_runtime_error("cannot start '%s': %s", cfg->command[0], strerror(errno));
			goto fail_unlink;
		}
	}
	if (cfg->verbose)
		fprintf(stderr, "hypertrace-bpf: tracing; stop with Ctrl-C\n");

	unsigned long long start = now_ns(), last_flush = start;
	unsigned long long deadline = cfg->duration_s > 0 ? start + (unsigned long long)(cfg->duration_s * 1e9) : 0;
	while (!stop_requested) {
		ret = ht_recording_pump(&rec, POLL_INTERVAL_MS);
		if (ret < 0)
			break;
		unsigned long long now = now_ns();
		if (now - last_flush >= FLUSH_INTERVAL_NS) {
			if ((ret = ht_writer_flush(rec.writer)))
				break;
			last_flush = now;
		}
		if (deadline && now >= deadline)
			break;
		if (child > 0 && waitpid(child, &child_status, WNOHANG) == child) {
			child = -1;
			break;
		}
	}
	if (ret >= 0)
		ret = ht_recording_finish(&rec, &trailer);
	else
		ht_recording_abandon(&rec);
	if (ret < 0) {
		ht_runtime_error("cannot write %s: %s: free space or choose another path with -o",
				 cfg->output, strerror(-ret));
		goto out;
	}
	print_summary(cfg, trailer.records, &trailer, file_size(cfg->output), (now_ns() - start) / 1e9);
	status = HT_EXIT_OK;

	if (child > 0) {
		/* Stopped by Ctrl-C or -d while CMD runs: end it too. */
		kill(child, SIGTERM);
		waitpid(child, &child_status, 0);
		child = -1;
	} else if (cfg->command) {
		if (WIFEXITED(child_status) && WEXITSTATUS(child_status) != 0) {
			fprintf(stderr, "hypertrace-bpf: '%s' exited with status %d\n", cfg->command[0],
				WEXITSTATUS(child_status));
			status = HT_EXIT_RUNTIME;
		} else if (WIFSIGNALED(child_status)) {
			fprintf(stderr, "hypertrace-bpf: '%s' was killed by signal %d\n", cfg->command[0],
				WTERMSIG(child_status));
			status = HT_EXIT_RUNTIME;
		}
	}
	goto out;

fail_unlink:
	/* Nothing was traced: leave no empty trace file behind. */
	ht_recording_abandon(&rec);
	ht_writer_abandon(writer);
	unlink(cfg->output);
out:
	if (child > 0) {
		kill(child, SIGTERM);
		waitpid(child, NULL, 0);
	}
	ht_tracer_destroy(tracer);
	return status;
}

int ht_cmd_record(int argc, char **argv)
{
	struct ht_record_config cfg;
	int ret = ht_record_parse(argc, argv, &cfg);

	if (ret >= 0)
		return ret;
	return run_record(&cfg);
}
