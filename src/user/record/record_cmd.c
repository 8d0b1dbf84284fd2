// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `hypertrace-bpf record`: the daemon. Checks the host, creates the trace file,
 * loads and attaches the BPF programs, optionally starts CMD, and drains the
 * ring buffer into the file until told to stop, drawing live histograms every
 * interval. Stopping detaches first, then drains what is left, so every record
 * the kernel produced reaches the file. With --no-file the BPF programs keep
 * histograms instead of emitting records, and only the histograms are shown.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "exits/exit_view.h"
#include "exits/vcpu_wakeups.h"
#include "hypertrace/limits.h"
#include "record/command.h"
#include "hist/live_view.h"
#include "record/boot_sampler.h"
#include "record/exit_sampler.h"
#include "record/metrics_exporter.h"
#include "record/preflight.h"
#include "record/privileges.h"
#include "record/record_options.h"
#include "record/recording.h"
#include "record/vm_follower.h"
#include "record/vm_identity.h"
#include "tracefile/trace_writer.h"
#include "common/util.h"

/* How often the loop wakes without records: bounds Ctrl-C latency and data age in the file. */
#define POLL_INTERVAL_MS 100
/*
 * Buffered records go to the writer thread at least this often. With the poll
 * interval and the writer's own latency this keeps the promise made in the
 * docs: after a crash, every record older than a second is in the file.
 */
#define FLUSH_INTERVAL_NS 500000000ull
/*
 * How often the threads whose identity the file has are looked at: one
 * kill(tid, 0) each, and a thread goes after two looks found it gone, so
 * its records were drained long before (ht_thread_set_prune).
 */
#define FORGET_THREADS_INTERVAL_NS 5000000000ull
static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
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
	if (f->tgid_on && !cfg->vm_name) { /* --vm NAME: the processes come and go (IDENTITY blocks name them) */
		hdr->filter_flags |= HT_FILTER_F_TGID;
		hdr->filter_tgid = f->tgid;
	}
	if (f->vcpu_on) {
		hdr->filter_flags |= HT_FILTER_F_VCPU;
		hdr->filter_vcpu = f->vcpu;
	}
	if (cfg->vcpu_sched)
		hdr->filter_flags |= HT_FILTER_F_VCPU_SCHED;
	if (cfg->wakeups)
		hdr->filter_flags |= HT_FILTER_F_WAKEUPS;
	if (cfg->boot)
		hdr->filter_flags |= HT_FILTER_F_BOOT;
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

/* Hypercalls the kernel saw but could not record, from the BPF counters. */
static unsigned long long lost_now(const struct ht_tracer *t, __u64 c[HT_CNT_MAX])
{
	if (ht_tracer_counters(t, c))
		return 0;
	return c[HT_CNT_RINGBUF_DROPS] + c[HT_CNT_STATE_ALLOC_FAIL] + c[HT_CNT_SUPERSEDED] +
	       c[HT_CNT_AGG_GROUPS_FULL];
}

/* not_written: records the file system refused (file mode), or NULL (no file). */
static void print_lost_detail(unsigned long long lost, const __u64 c[HT_CNT_MAX],
			      const unsigned long long *not_written)
{
	char file_part[64] = "";

	if (!lost)
		return;
	if (c[HT_CNT_AGG_GROUPS_FULL])
		fprintf(stderr, "hypertrace-bpf: %llu hypercalls were not counted: more than %u histogram groups (VMs or vCPUs): group by VM (--per-vm) or not at all\n",
			(unsigned long long)c[HT_CNT_AGG_GROUPS_FULL], HT_AGG_MAX_GROUPS);
	if (not_written)
		snprintf(file_part, sizeof(file_part), ", not written: disk full %llu", *not_written);
	if (lost > c[HT_CNT_AGG_GROUPS_FULL])
		fprintf(stderr, "hypertrace-bpf: %llu hypercalls were not recorded: ring buffer full %llu (raise --ringbuf-size), no per-thread state %llu, another exit before kvm_entry %llu%s\n",
			lost - c[HT_CNT_AGG_GROUPS_FULL], (unsigned long long)c[HT_CNT_RINGBUF_DROPS],
			(unsigned long long)c[HT_CNT_STATE_ALLOC_FAIL], (unsigned long long)c[HT_CNT_SUPERSEDED],
			file_part);
}

static void print_bpf_stats(const struct ht_tracer *t)
{
	struct ht_prog_stats st[HT_MAX_TRACEPOINT_PROGS];
	int n = ht_tracer_prog_stats(t, st);

	if (n < 0) {
		fprintf(stderr, "hypertrace-bpf: warning: cannot read the BPF program statistics\n");
		return;
	}
	for (int i = 0; i < n; i++)
		printf("hypertrace-bpf: bpf-stats %s: %llu runs, %llu ns, %.1f ns/run, %u instructions verified\n",
		       st[i].tracepoint, st[i].run_cnt, st[i].run_time_ns,
		       st[i].run_cnt ? (double)st[i].run_time_ns / st[i].run_cnt : 0.0, st[i].verified_insns);
}

/* What the loop does each time it wakes; shared by both modes. */
struct session {
	const struct ht_record_config *cfg;
	bool stopped_in_setup;   /* a stop request came before tracing began: nothing to run */
	struct ht_tracer *tracer;
	struct ht_recording rec; /* file mode */
	struct ht_live *live;    /* NULL with --quiet */
	struct ht_metrics *metrics; /* NULL without --metrics */
	struct ht_exit_sampler exits; /* --exits */
	bool exits_ready;             /* exits is set up */
	struct ht_boot_sampler boot;  /* --boot */
	bool boot_ready;
	/* --boot with --vm: whether a VM process is the VM, by pid, the last few asked (pid 0: free). */
	struct {
		__u32 pid;
		bool selected;
	} boot_verdicts[64];
	unsigned int next_verdict;
	unsigned long long exits_due; /* without the live view: when the next sample is due */
	struct ht_vm_names *names;    /* VM and thread names for the live view */
	struct ht_command cmd; /* -- CMD */
	unsigned long long start, deadline;
	struct ht_vm_follower vm; /* --vm NAME */
};

/*
 * Returns true when the recording should stop. CMD is reaped first, so that
 * if it ended in the same tick as -d or Ctrl-C its status is not lost.
 */
static bool session_should_stop(struct session *s, unsigned long long now)
{
	bool ended = ht_command_reap(&s->cmd);

	return ended || stop_requested || (s->deadline && now >= s->deadline);
}

/* The recording's observer: each drained record to the live view and the metrics. */
static void session_observe(void *ctx, const struct ht_record *rec)
{
	struct session *s = ctx;

	if (s->live)
		ht_live_observe(s->live, rec);
	if (s->metrics)
		ht_metrics_observe(s->metrics, rec);
}

/* --exits: one interval's sample, at each live frame (or each interval without one). */
static void sample_exits(struct session *s, unsigned long long now, bool final)
{
	int ret = ht_exit_sampler_sample(&s->exits, now, final);

	if (ret && !s->exits.write_error)
		fprintf(stderr, "hypertrace-bpf: warning: cannot read the exit statistics: %s\n", strerror(-ret));
	ht_metrics_observe_exits(s->metrics, &s->exits.total);
	s->exits_due = now + (unsigned long long)(s->cfg->interval_s * 1e9);
	if (s->boot_ready && (ret = ht_boot_sampler_sample(&s->boot)))
		fprintf(stderr, "hypertrace-bpf: warning: cannot read the booting VMs' numbers: %s\n", strerror(-ret));
}

static bool session_tick(struct session *s, unsigned long long now)
{
	__u64 c[HT_CNT_MAX];

	if (s->exits_ready && (s->live ? !ht_live_until_due(s->live, now) : now >= s->exits_due))
		sample_exits(s, now, false);
	ht_metrics_update(s->metrics, s->tracer, s->cfg->no_file ? NULL : &s->rec, now, false);
	if (s->cfg->vm_name)
		ht_vm_follower_tick(&s->vm, now);

	if (!s->live || ht_live_until_due(s->live, now))
		return false;
	if (s->cfg->no_file)
		ht_tracer_read_aggregates(s->tracer, ht_live_add_aggregate, s->live);
	unsigned int frames = ht_live_tick(s->live, now, lost_now(s->tracer, c));
	return s->cfg->intervals && frames >= s->cfg->intervals;
}

static int poll_timeout_ms(const struct session *s, unsigned long long now)
{
	unsigned long long wait_ns = POLL_INTERVAL_MS * 1000000ull;

	if (s->live && ht_live_until_due(s->live, now) < wait_ns)
		wait_ns = ht_live_until_due(s->live, now);
	if (!s->live && s->exits_ready)
		wait_ns = HT_MIN(wait_ns, ht_ns_until(s->exits_due, now));
	return (int)(wait_ns / 1000000ull);
}

/*
 * What the end-of-run summary reports, gathered by whichever loop ran:
 * records kept, hypercalls lost and why, and how long the run lasted.
 */
struct run_totals {
	unsigned long long records, lost;
	unsigned long long vcpu_switches; /* --vcpu-sched: of the records, switches of vCPU threads */
	unsigned long long vcpu_wakeups;  /* --wakeups: of the records, wake-ups of halted vCPU threads */
	unsigned long long vcpu_irqs;     /* --wakeups: of the records, interrupt deliveries */
	__u64 counters[HT_CNT_MAX];
	double secs;
	unsigned long long malformed; /* file mode: ring samples that were not whole records */
	unsigned long long not_written; /* file mode: records of blocks the file system refused */
	int write_error;              /* file mode: -errno of the first failed write, or 0 */
};

/*
 * Nothing was traced: leave no trace file behind. A file not yet published
 * disappears by itself, and an older file at the path is then untouched.
 */
static void discard_output(struct session *s, struct ht_writer *writer)
{
	if (s->rec.writer)
		ht_writer_unpublish(s->rec.writer);
	ht_recording_abandon(&s->rec);
	ht_writer_abandon(writer);
}

/* The live view's exits part: the interval's table, or the whole run's in the final frame. */
static void live_exits(void *ctx, enum ht_lat_view view, unsigned int width, FILE *out)
{
	struct session *s = ctx;
	const struct ht_exit_sampler *e = &s->exits;
	struct ht_exit_view_opts o = {
		.elapsed_ns = view == HT_LAT_CUMULATIVE ? e->last_ns - e->start_ns : e->interval_ns,
		.width = width,
		.max_reasons = 5,
		.start_ns = e->start_ns,
		.vm_name = ht_vm_names_lookup,
		.thread_name = ht_vm_names_thread,
		.name_ctx = s->names,
	};

	fputs("\n", out);
	ht_exit_view_write(out, view == HT_LAT_CUMULATIVE ? &e->total : &e->interval, &o);
}

static struct ht_live *live_view_new(struct session *s)
{
	const struct ht_record_config *cfg = s->cfg;
	/* Names of the VM processes in per-vCPU/per-VM histograms, read once per pid. */
	static struct ht_vm_names vm_names = { .proc = "/proc" };
	s->names = &vm_names;
	struct ht_live_opts lo = {
		.interval_ns = (unsigned long long)(cfg->interval_s * 1e9),
		.series = cfg->series,
		.group_by = cfg->group_by == HT_AGG_BY_VCPU ? HT_LAT_BY_VCPU :
			    cfg->group_by == HT_AGG_BY_VM ? HT_LAT_BY_VM : HT_LAT_BY_NONE,
		.timestamp = cfg->timestamp,
		.terminal = -1,
		.vm_name = ht_vm_names_lookup,
		.thread_name = ht_vm_names_thread,
		.vm_name_ctx = &vm_names,
		.extra = cfg->exits ? live_exits : NULL,
		.extra_ctx = s,
	};

	return ht_live_new(&lo, stdout, ht_monotonic_ns());
}

/* record --exits: the final numbers, with the programs detached (file mode: before the trailer). */
static void final_exits(void *ctx, struct ht_writer *writer)
{
	struct session *s = ctx;

	(void)writer;
	sample_exits(s, ht_monotonic_ns(), true);
}

/*
 * --boot with -p or --vm: whether the boot exits of VM process pid are the
 * selected VM's (BPF follows every VM that starts; see recording.h).
 */
static bool boot_selects(void *ctx, __u32 pid)
{
	struct session *s = ctx;
	const struct ht_record_config *cfg = s->cfg;

	if (!cfg->vm_name)
		return pid == cfg->filters.tgid;
	for (size_t i = 0; i < ARRAY_SIZE(s->boot_verdicts); i++)
		if (s->boot_verdicts[i].pid == pid)
			return s->boot_verdicts[i].selected;
	uid_t uid;
	bool selected = ht_is_vm_named("/proc", pid, cfg->vm_name) &&
			(!cfg->vm_uid_on || (!ht_process_uid("/proc", pid, &uid) && uid == cfg->vm_uid));
	unsigned int at = s->next_verdict++ % ARRAY_SIZE(s->boot_verdicts);

	s->boot_verdicts[at].pid = pid;
	s->boot_verdicts[at].selected = selected;
	return selected;
}

static bool metrics_let_go(void *metrics, __u32 pid)
{
	return !ht_metrics_shows_vm(metrics, pid);
}

static int setup_exits(struct session *s, struct ht_writer *writer)
{
	unsigned long long now = ht_monotonic_ns();

	if (ht_exit_sampler_init(&s->exits, s->tracer, writer, now))
		return ht_runtime_error("out of memory");
	s->exits.filters = &s->cfg->filters;
	/*
	 * An ended VM's rows go once its last numbers are in the file and the
	 * metrics no longer show it: record runs for months through VM churn.
	 */
	s->exits.keep_ended_ns = 0;
	if (s->metrics) {
		s->exits.may_forget = metrics_let_go;
		s->exits.may_forget_ctx = s->metrics;
	}
	s->exits_ready = true;
	if (s->cfg->boot && writer) {
		ht_boot_sampler_init(&s->boot, s->tracer, writer);
		s->boot_ready = true;
		if (s->cfg->vm_name || s->cfg->filters.tgid_on) {
			s->rec.boot_selects = boot_selects;
			s->rec.boot_select_ctx = s;
		}
	}
	s->exits_due = now + (unsigned long long)(s->cfg->interval_s * 1e9);
	if (writer) {
		s->rec.before_close = final_exits;
		s->rec.before_close_ctx = s;
	}
	return HT_EXIT_OK;
}

/* Loads and attaches the BPF programs and opens what they feed. */
static int setup_tracing(struct session *s, struct ht_writer **writer)
{
	const struct ht_record_config *cfg = s->cfg;
	struct ht_tracer_opts topts = {
		.filters = cfg->filters,
		/* Aggregate-only emits no records: the ring buffer only has to exist. */
		.ringbuf_bytes = cfg->no_file ? 4096 : cfg->ringbuf_bytes,
		/* Wake the drain at each threshold crossing; the poll timeout picks up the rest. */
		.wakeup_bytes = ht_wakeup_bytes_for(cfg->ringbuf_bytes),
		.aggregate_only = cfg->no_file,
		/* Metrics label by vCPU and nr; the live view groups the finer keys as asked. */
		.group_by = cfg->metrics ? HT_AGG_BY_VCPU : cfg->group_by,
		.aggregate_by_nr = cfg->metrics,
		.exits = cfg->exits,
		.vcpu_sched = cfg->vcpu_sched,
		.wakeups = cfg->wakeups,
		/* --boot: the VMs that start from now on. */
		.boot = cfg->boot,
		.boot_since_ns = ht_monotonic_ns(),
		.boot_window_ns = (unsigned long long)((cfg->boot_window_s > 0 ? cfg->boot_window_s : HT_BOOT_WINDOW_DEFAULT_S) * 1e9),
		.boot_max_exits = HT_BOOT_MAX_EXITS_PER_VM,
		.vcpu_threads = cfg->vcpu_threads,
		.verbose = cfg->verbose,
	};
	char err[512];
	int ret;

	if (cfg->compress && ht_writer_set_encoding(*writer, HT_ENCODING_DELTA_ZLIB))
		return ht_runtime_error("out of memory");
	if (ht_tracer_load(&s->tracer, &topts, err, sizeof(err)))
		return ht_runtime_error("%s", err);
	if (ht_tracer_exit_fallback(s->tracer))
		fprintf(stderr, "hypertrace-bpf: warning: %s\n", ht_tracer_exit_fallback(s->tracer));
	if (cfg->bpf_stats && (ret = ht_tracer_enable_stats(s->tracer)))
		return ht_runtime_error("cannot enable BPF run-time statistics: %s: the kernel needs BPF_ENABLE_STATS (5.8+)",
					strerror(-ret));
	if (ht_tracer_attach(s->tracer, err, sizeof(err)))
		return ht_runtime_error("%s", err);
	if (!cfg->quiet && !(s->live = live_view_new(s)))
		return ht_runtime_error("out of memory");
	if (cfg->no_file)
		return cfg->exits ? setup_exits(s, NULL) : HT_EXIT_OK;
	ret = ht_recording_init(&s->rec, s->tracer, *writer);
	*writer = NULL;
	if (ret)
		return ht_runtime_error("cannot set up the ring buffer consumer: %s", strerror(-ret));
	if (cfg->exits && (ret = setup_exits(s, s->rec.writer)) != HT_EXIT_OK)
		return ret;
	/* Each VM process and vCPU thread is named in the file (IDENTITY blocks). */
	s->rec.identities = ht_thread_set_new();
	if (!s->rec.identities)
		return ht_runtime_error("out of memory");
	if (s->live || s->metrics) {
		s->rec.observer = session_observe;
		s->rec.observer_ctx = s;
	}
	return HT_EXIT_OK;
}

/* The trace file, not yet named (ht_writer_publish): 0, or -1 with the reason in err. */
static int open_trace_file(const struct ht_record_config *cfg, struct ht_writer **writer, char *err, size_t errlen)
{
	struct ht_command_user owner;
	struct ht_file_header hdr;

	/* Under sudo the trace belongs to the user who asked for it, not to root. */
	if (ht_command_user_from_sudo(&owner, err, errlen))
		return -1;
	header_from_config(&hdr, cfg);
	if (ht_writer_open(cfg->output, cfg->force, &hdr, writer, err, errlen) ||
	    ht_writer_set_access(*writer, cfg->file_mode, owner.set ? owner.uid : (uid_t)-1,
				 owner.set ? owner.gid : (gid_t)-1, err, errlen))
		return -1;
	return 0;
}

static int start_metrics(struct session *s, char *err, size_t errlen)
{
	const struct ht_record_config *cfg = s->cfg;
	struct ht_metrics_opts mo = { .addr = cfg->metrics_addr, .filters = &cfg->filters,
				      .aggregate = cfg->no_file, .version = HT_VERSION, .log = stderr,
				      .exits = cfg->exits, .exits_per_vcpu = cfg->metrics_per_vcpu,
				      .grace_s = cfg->metrics_grace_s };

	return ht_metrics_start(&s->metrics, &mo, err, errlen);
}

/* --vm NAME: its processes that run now into the filter; the others as they are found. */
static int follow_vm(struct session *s)
{
	const struct ht_record_config *cfg = s->cfg;
	size_t unverified = 0;
	int ret;

	s->vm = (struct ht_vm_follower){ .tracer = s->tracer, .name = cfg->vm_name, .proc = "/proc", .log = stderr,
					 .uid_on = cfg->vm_uid_on, .uid = cfg->vm_uid,
					 .verbose = cfg->verbose,
					 .found_by = cfg->exits ? "its first exit" : "its first hypercall exit" };
	if ((ret = ht_vm_follower_start(&s->vm, &unverified)) < 0)
		return ht_runtime_error("cannot list /proc: %s", strerror(-ret));
	return HT_EXIT_OK;
}

/* CMD forked, waiting while the capabilities tracing no longer needs are dropped, then let run. */
static int start_command_unprivileged(struct session *s, const struct ht_command_user *user)
{
	int gate = -1, ret;

	if (s->cfg->command && (ret = ht_command_start(&s->cmd, s->cfg->command, user, &gate)))
		return ht_runtime_error("cannot start '%s': %s", s->cfg->command[0], strerror(-ret));
	ret = ht_drop_privileges(user->set);
	if (gate >= 0)
		close(gate); /* CMD may run now */
	if (ret)
		return ht_runtime_error("cannot drop the capabilities tracing no longer needs: %s", strerror(-ret));
	return HT_EXIT_OK;
}

/*
 * Everything before the loop: host checks, the trace file, the BPF programs,
 * the live view, signal handlers and CMD. On failure nothing is left behind
 * but what session_teardown frees: every failure leaves through `fail`,
 * which discards the output (nothing yet acquired is nothing to discard).
 */
static int session_setup(struct session *s)
{
	const struct ht_record_config *cfg = s->cfg;
	struct ht_command_user user = { .set = false };
	struct ht_writer *writer = NULL;
	struct sigaction sa = { .sa_handler = on_stop_signal };
	char err[512];
	int status;

	if ((cfg->command && ht_command_find(cfg->command[0], err, sizeof(err))) ||
	    (cfg->command && ht_command_user_from_sudo(&user, err, sizeof(err))) ||
	    ht_preflight(err, sizeof(err)) || (!cfg->no_file && open_trace_file(cfg, &writer, err, sizeof(err))))
		goto fail_err;
	/*
	 * From the moment anything can see us (the metrics port; a service
	 * manager stopping us while the programs load), a stop request ends the
	 * run cleanly instead of killing it half-made.
	 */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (cfg->metrics && start_metrics(s, err, sizeof(err)))
		goto fail_err;
	status = setup_tracing(s, &writer); /* takes writer over once the recording has it */
	if (status == HT_EXIT_OK && cfg->vm_name)
		status = follow_vm(s);
	if (status != HT_EXIT_OK)
		goto fail;
	if (stop_requested) {
		/* Nothing was traced: no file (an older one stays as it was), and a clean end. */
		discard_output(s, NULL);
		s->stopped_in_setup = true;
		fprintf(stderr, "hypertrace-bpf: stopped before tracing began%s\n",
			cfg->no_file ? "" : ": no trace file written");
		return HT_EXIT_OK;
	}

	/*
	 * Only now does the file get its name, replacing an older one: a run that
	 * failed or was killed before leaves none. Before dropping privileges:
	 * replacing another user's file in a sticky directory takes CAP_FOWNER.
	 */
	if (!cfg->no_file && ht_writer_publish(s->rec.writer, err, sizeof(err)))
		goto fail_err;
	if ((status = start_command_unprivileged(s, &user)) != HT_EXIT_OK)
		goto fail;
	if (cfg->verbose)
		fprintf(stderr, "hypertrace-bpf: tracing; stop with Ctrl-C\n");
	s->start = ht_monotonic_ns();
	s->deadline = cfg->duration_s > 0 ? s->start + (unsigned long long)(cfg->duration_s * 1e9) : 0;
	return HT_EXIT_OK;

fail_err:
	status = ht_runtime_error("%s", err);
fail:
	discard_output(s, writer);
	return status;
}

/* File mode: drain into the file until told to stop, then finish it. */
static int run_file_loop(struct session *s, struct run_totals *t)
{
	unsigned long long last_flush = s->start, last_forget = s->start;
	struct ht_trailer trailer;
	bool write_failed = false;
	int ret;

	for (;;) {
		ret = ht_recording_pump(&s->rec, poll_timeout_ms(s, ht_monotonic_ns()));
		if (ret < 0)
			break;
		unsigned long long now = ht_monotonic_ns();
		if (now - last_flush >= FLUSH_INTERVAL_NS) {
			ht_writer_flush(s->rec.writer);
			last_flush = now;
		}
		if (now - last_forget >= FORGET_THREADS_INTERVAL_NS) {
			ht_recording_forget_ended_threads(&s->rec);
			last_forget = now;
		}
		if (!write_failed && (ret = ht_writer_error(s->rec.writer, NULL))) {
			/* Said once, as it happens; the count comes with the summary. */
			fprintf(stderr, "hypertrace-bpf: cannot write %s: %s: recording goes on, counting the records that cannot be written\n",
				s->cfg->output, strerror(-ret));
			write_failed = true;
		}
		if (session_tick(s, now) || session_should_stop(s, now)) {
			ret = 0;
			break;
		}
	}
	if (ret >= 0)
		ret = ht_recording_finish(&s->rec, &trailer);
	else
		ht_recording_abandon(&s->rec);
	if (ret < 0)
		return ht_runtime_error("cannot drain the ring buffer into %s: %s", s->cfg->output,
					strerror(-ret));
	ht_metrics_update(s->metrics, s->tracer, &s->rec, ht_monotonic_ns(), true);
	t->records = trailer.records;
	t->vcpu_switches = s->rec.vcpu_switches;
	t->vcpu_wakeups = s->rec.vcpu_wakeups;
	t->vcpu_irqs = s->rec.vcpu_irqs;
	t->lost = ht_trailer_lost(&trailer);
	t->counters[HT_CNT_RINGBUF_DROPS] = trailer.ringbuf_drops;
	t->counters[HT_CNT_STATE_ALLOC_FAIL] = trailer.state_alloc_fail;
	t->counters[HT_CNT_SUPERSEDED] = trailer.superseded;
	{
		__u64 c[HT_CNT_MAX];

		if (ht_tracer_counters(s->tracer, c) == 0)
			t->counters[HT_CNT_FORGED_GUEST_EVENT] = c[HT_CNT_FORGED_GUEST_EVENT];
	}
	t->malformed = s->rec.malformed;
	t->not_written = trailer.not_written;
	t->write_error = s->rec.write_error;
	return HT_EXIT_OK;
}

/* Aggregate-only mode: the BPF programs keep the histograms; read them every interval. */
static int run_aggregate_loop(struct session *s, struct run_totals *t)
{
	for (;;) {
		int ms = poll_timeout_ms(s, ht_monotonic_ns());
		struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
		nanosleep(&ts, NULL); /* a signal ends it early: fine */
		unsigned long long now = ht_monotonic_ns();
		if (session_tick(s, now) || session_should_stop(s, now))
			break;
	}
	ht_tracer_detach(s->tracer);
	if (s->exits_ready)
		sample_exits(s, ht_monotonic_ns(), true);
	ht_metrics_update(s->metrics, s->tracer, NULL, ht_monotonic_ns(), true);
	t->lost = lost_now(s->tracer, t->counters);
	t->records = ht_metrics_hypercalls(s->metrics); /* --quiet needs --metrics here */
	if (s->live) {
		ht_tracer_read_aggregates(s->tracer, ht_live_add_aggregate, s->live);
		t->records = ht_live_total(s->live);
	}
	return HT_EXIT_OK;
}

/* --exits: one line, and why exits were lost if any were. */
static void print_exits_summary(const struct ht_exit_sampler *e, unsigned int vcpu_threads)
{
	/* The ended VMs whose rows went during the recording (see keep_ended_ns) too. */
	unsigned long long exits = e->forgotten.exits, in_host = 0, vms = e->forgotten.vms;

	for (size_t i = 0; i < e->total.nseries; i++) {
		exits += e->total.series[i].h.count;
		in_host += e->total.series[i].in_host_at_end;
		if (!i || e->total.series[i].key.pid != e->total.series[i - 1].key.pid)
			vms++;
	}
	printf("hypertrace-bpf: %llu exits of %llu VM processes (%llu series, %llu vCPU threads), %llu still in the host at the end, %llu lost\n",
	       exits, vms, (unsigned long long)(e->total.nseries + e->forgotten.series),
	       (unsigned long long)(e->total.nthreads + e->forgotten.threads), in_host,
	       (unsigned long long)(e->total.lost_series_full + e->total.lost_no_thread));
	if (e->total.lost_series_full)
		fprintf(stderr, "hypertrace-bpf: %llu exits were not counted: more than %u series (VM process, vCPU, reason): select a VM with -p or --vm\n",
			(unsigned long long)e->total.lost_series_full, HT_EXIT_MAX_SERIES);
	if (e->total.lost_no_thread)
		fprintf(stderr, "hypertrace-bpf: %llu exits were not counted: their vCPU threads got no entry among %u (none free, or their VM's share of a quarter spent): raise --vcpu-threads (at most %u)\n",
			(unsigned long long)e->total.lost_no_thread, vcpu_threads, HT_MAX_VCPU_THREADS);
	/* Each VM process held to its share, the first few by name: one line each. */
	for (size_t i = 0; i < e->nexcess && i < 8; i++)
		fprintf(stderr, "hypertrace-bpf: VM process %u went past its share of the BPF tables (%u series, %u causes and cause names, %u vCPU threads): %llu exits of new series not counted, %llu new causes counted as \"other\" or not at all, %llu exits of threads beyond its share not counted (raise --vcpu-threads)\n",
			(unsigned int)e->excess[i].pid, HT_EXIT_SERIES_PER_VM, HT_EXIT_CAUSES_PER_VM,
			vcpu_threads >> HT_VCPU_THREADS_PER_VM_SHIFT, (unsigned long long)e->excess[i].series_over,
			(unsigned long long)e->excess[i].causes_over, (unsigned long long)e->excess[i].threads_over);
	if (e->nexcess > 8)
		fprintf(stderr, "hypertrace-bpf: and %zu more VM processes went past their share\n", e->nexcess - 8);
	if (e->nexcess_forgotten)
		fprintf(stderr, "hypertrace-bpf: and %zu VM processes that ended during the recording went past their share: %llu exits of new series not counted, %llu new causes counted as \"other\" or not at all, %llu exits of threads beyond their share not counted\n",
			e->nexcess_forgotten, (unsigned long long)e->excess_forgotten.series_over,
			(unsigned long long)e->excess_forgotten.causes_over,
			(unsigned long long)e->excess_forgotten.threads_over);
	if (e->write_error)
		fprintf(stderr, "hypertrace-bpf: warning: exit statistics could not be queued for the file: %s\n",
			strerror(-e->write_error));
}

/* --boot: one line, and what was not recorded if anything was not. */
static void print_boot_summary(const struct session *s)
{
	struct ht_boot_vm sum;

	ht_boot_sampler_totals(&s->boot, &sum);
	printf("hypertrace-bpf: of the records, %llu exits of %llu booting VMs (report --boot); %llu lost (ring buffer full)\n",
	       s->rec.boot_exits, s->boot.vms_seen, (unsigned long long)sum.lost);
	if (sum.over)
		fprintf(stderr, "hypertrace-bpf: %llu exits of booting VMs were not recorded: past the bound of %u exits a VM; shorten --boot-window\n",
			(unsigned long long)sum.over, HT_BOOT_MAX_EXITS_PER_VM);
	if (s->boot.refused)
		fprintf(stderr, "hypertrace-bpf: %llu VMs that started were not followed: %u boots were followed at once already\n",
			(unsigned long long)s->boot.refused, HT_MAX_BOOT_VMS);
	if (s->rec.boot_unselected)
		printf("hypertrace-bpf: %llu exits of other VMs' boots left out (-p/--vm)\n", s->rec.boot_unselected);
	if (s->boot.write_error)
		fprintf(stderr, "hypertrace-bpf: warning: the booting VMs' numbers could not be queued for the file: %s\n",
			strerror(-s->boot.write_error));
}

/* The one end-of-run summary: last interval, totals, one line, the drop detail. */
static void print_summary(const struct session *s, const struct run_totals *t)
{
	const struct ht_record_config *cfg = s->cfg;
	char size[32];

	if (s->live) {
		ht_live_end_interval(s->live, ht_monotonic_ns(), t->lost);
		ht_live_final(s->live, ht_monotonic_ns(), t->lost);
	}
	if (cfg->no_file) {
		printf("hypertrace-bpf: %llu hypercalls, %llu dropped, %.2f s, %.0f hypercalls/s (aggregate only: no trace file)\n",
		       t->records, t->lost, t->secs, t->secs > 0 ? t->records / t->secs : 0.0);
	} else {
		format_size(size, sizeof(size), file_size(cfg->output));
		printf("hypertrace-bpf: %llu records, %llu dropped, %.2f s, %.0f records/s, %s written to %s\n",
		       t->records, t->lost, t->secs, t->secs > 0 ? t->records / t->secs : 0.0, size,
		       cfg->output);
	}
	if (s->exits_ready) {
		unsigned long long delivered = s->exits.forgotten.irqs_delivered;

		print_exits_summary(&s->exits, ht_tracer_vcpu_threads(s->tracer));
		for (size_t i = 0; i < s->exits.total.nthreads; i++)
			delivered += ht_irqs_delivered(&s->exits.total.threads[i].irqs);
		printf("hypertrace-bpf: %llu interrupts delivered to vCPU threads, timed from acceptance to guest (report --irqs); %llu accepted from outside their VM process, not timed\n",
		       delivered, (unsigned long long)t->counters[HT_CNT_IRQ_UNATTRIBUTED]);
	}
	if (s->boot_ready)
		print_boot_summary(s);
	if (cfg->vcpu_sched)
		printf("hypertrace-bpf: of the records, %llu switches of vCPU threads; %llu lost (ring buffer full)\n",
		       t->vcpu_switches, s->exits_ready ? (unsigned long long)s->exits.total.lost_vcpu_switches : 0ull);
	if (cfg->wakeups)
		printf("hypertrace-bpf: of the records, %llu wake-ups of halted vCPUs and %llu interrupt deliveries (report --latency); %llu lost (ring buffer full)\n",
		       t->vcpu_wakeups, t->vcpu_irqs, (unsigned long long)t->counters[HT_CNT_WAKEUP_DROPS]);
	fflush(stdout); /* the summary first, then what went wrong, even into one log */
	if (t->malformed)
		fprintf(stderr, "hypertrace-bpf: warning: %llu ring buffer samples were not whole records and were skipped: the BPF programs and this binary disagree on the record layout; rebuild both\n",
			t->malformed);
	print_lost_detail(t->lost, t->counters, cfg->no_file ? NULL : &t->not_written);
	/* Not a loss, but never silent: events of the guest module forged from guest user space. */
	if (t->counters[HT_CNT_FORGED_GUEST_EVENT])
		printf("hypertrace-bpf: %llu hypercalls of the project's guest kernel events (nr %u..%u) came from guest user space, not its kernel: forged, not recorded\n",
		       (unsigned long long)t->counters[HT_CNT_FORGED_GUEST_EVENT], HT_GUEST_NR_PROJECT_FIRST,
		       HT_GUEST_NR_KERNEL_LAST);
	if (cfg->bpf_stats)
		print_bpf_stats(s->tracer);
}

static void session_teardown(struct session *s)
{
	ht_command_stop(&s->cmd);
	if (s->exits_ready)
		ht_exit_sampler_free(&s->exits);
	if (s->boot_ready)
		ht_boot_sampler_free(&s->boot);
	ht_metrics_stop(s->metrics);
	ht_live_free(s->live);
	ht_tracer_destroy(s->tracer);
}

static int run_record(const struct ht_record_config *cfg)
{
	struct session s = { .cfg = cfg, .cmd = { .pid = -1 } };
	struct run_totals totals = { 0 };
	int status = session_setup(&s);

	if (status == HT_EXIT_OK && !s.stopped_in_setup) {
		status = cfg->no_file ? run_aggregate_loop(&s, &totals) : run_file_loop(&s, &totals);
		totals.secs = (ht_monotonic_ns() - s.start) / 1e9;
		if (status == HT_EXIT_OK) {
			print_summary(&s, &totals);
			status = ht_command_finish(&s.cmd);
		}
		if (totals.write_error) {
			bool full = totals.write_error == -ENOSPC || totals.write_error == -EDQUOT;
			int ret = ht_runtime_error("cannot write %s: %s: %llu records not written (not written: %s): free space or choose another path with -o",
						   cfg->output, strerror(-totals.write_error), totals.not_written,
						   full ? "disk full" : "write error");
			if (status == HT_EXIT_OK)
				status = ret;
		}
	}
	session_teardown(&s);
	return status;
}

int ht_cmd_record(int argc, char **argv)
{
	struct ht_record_config cfg;
	int ret = ht_record_parse(argc, argv, &cfg);

	if (ret >= 0)
		return ret;
	if (cfg.vm_name) {
		/* The VM's processes go into the filter as they are found (vm_follower.h). */
		cfg.filters.tgid_on = true;
		cfg.filters.tgid = 0;
	}
	return run_record(&cfg);
}
