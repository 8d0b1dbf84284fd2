// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Command line of `hypertrace-bpf record`: strict parsing, one-line errors, exit 2. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "cli.h"
#include "common/util.h"
#include "hypertrace/limits.h"
#include "parse.h"
#include "record/record_options.h"
#include "record/tracer.h"
#include "tracefile/trace_writer.h"

static const char record_help[] =
	"Usage: hypertrace-bpf record [-o FILE] [--force] [--mode MODE] [-z] [--nr N]...\n"
	"                             [--exit-reason N] [-p PID | --vm NAME [--vm-user USER]]\n"
	"                             [--vcpu N]\n"
	"                             [-d SECONDS] [--ringbuf-size BYTES] [-i SECONDS]\n"
	"                             [--intervals N] [-T] [--per-vcpu | --per-vm]\n"
	"                             [--hist SERIES] [-q] [--no-file] [--exits]\n"
	"                             [--vcpu-sched] [--boot [--boot-window SECONDS]]\n"
	"                             [--vcpu-threads N]\n"
	"                             [--metrics [ADDR:]PORT|systemd [--metrics-per-vcpu]\n"
	"                             [--metrics-grace SECONDS]] [-v] [-V]\n"
	"                             [-- CMD [ARGS...]]\n"
	"\n"
	"Trace KVM hypercalls system-wide into a trace file. Each traced hypercall\n"
	"becomes one fused record: the hypercall exit (VMX exit reason 18 VMCALL, SVM\n"
	"0x81 VMMCALL), the kvm_hypercall event with a selected nr, and the next\n"
	"kvm_entry of the same vCPU thread. Stops on Ctrl-C (SIGINT/SIGTERM), after -d\n"
	"SECONDS, or when CMD exits; then drains every record and prints a summary.\n"
	"Needs root, or CAP_BPF, CAP_PERFMON and CAP_DAC_READ_SEARCH (tracefs, where\n"
	"libbpf reads tracepoint ids, is readable by root only). After attaching, it\n"
	"keeps only the capabilities it still needs; under sudo, CMD runs as the\n"
	"user who ran sudo (SUDO_UID, SUDO_GID).\n"
	"\n"
	"Options:\n"
	"  -o, --output FILE        trace file to write (default: " HT_DEFAULT_OUTPUT ")\n"
	"  -f, --force              replace FILE if it exists (a regular file only; the\n"
	"                           new file takes its place in one rename)\n"
	"      --mode MODE          the trace file's mode, octal (default 0600); not\n"
	"                           writable by others, not executable; under sudo the\n"
	"                           file belongs to the user who ran sudo\n"
	"  -z, --compress           compress record blocks (delta + zlib): about a tenth\n"
	"                           of the size, for a few M records/s less throughput\n"
	"  -n, --nr N               hypercall nr to trace, or a range FIRST-LAST; repeat;\n"
	"                           up to 8 in all (default 1000)\n"
	"  -e, --exit-reason N      match this exit reason instead of the hypercall exit\n"
	"                           (VMX: compared with its low 16 bits)\n"
	"  -p, --pid PID            only the VM process PID (e.g. a QEMU)\n"
	"      --vm NAME            only the VM QEMU runs with -name NAME (or\n"
	"                           guest=NAME), followed while it stops, starts and\n"
	"                           restarts: a process counts only if it holds a KVM\n"
	"                           VM (its hypercall exits, an anon_inode:kvm-vm fd);\n"
	"                           NAME is matched whole, whoever runs the process\n"
	"                           (a warning names the uids when several users do)\n"
	"      --vm-user USER       with --vm: only the processes USER (a name or a\n"
	"                           uid) runs\n"
	"  -c, --vcpu N             only vCPU id N (-c is a cgroup in libbpf-tools; no\n"
	"                           cgroup filter exists here, a VM is chosen with -p)\n"
	"  -d, --duration SECONDS   stop after SECONDS (decimals allowed)\n"
	"  -b, --ringbuf-size BYTES\n"
	"                           BPF ring buffer memory (one ring per CPU), a power\n"
	"                           of two with K/M/G (default 4M a ring, 64M at most)\n"
	"  -i, --interval SECONDS   live histograms every SECONDS (default 1); also\n"
	"                           how often the exit statistics are kept (--exits)\n"
	"      --intervals N        stop after N intervals\n"
	"  -T, --timestamp          wall-clock time on each interval\n"
	"      --per-vcpu           one histogram per vCPU (and VM process)\n"
	"      --per-vm             one histogram per VM process\n"
	"      --hist SERIES        which latencies to draw: total, exit-hcall,\n"
	"                           hcall-entry, all or a comma list (default all)\n"
	"  -q, --quiet              no live histograms (the trace file is the same); the\n"
	"                           options of the live view are then refused\n"
	"      --no-file            aggregate only: histograms kept in BPF, no record\n"
	"                           per hypercall, no trace file (lowest overhead)\n"
	"      --exits              also every VM exit of every VM: per VM process, vCPU\n"
	"                           and exit reason the count and a log2 histogram of\n"
	"                           the time in the host (kvm_exit to kvm_entry), and\n"
	"                           each vCPU thread's wait for a host CPU and\n"
	"                           preemptions; counted in BPF, kept in the trace file\n"
	"                           every interval (report --exits), shown live\n"
	"      --vcpu-sched         also each switch of a vCPU thread out of its host\n"
	"                           CPU and back in (its time preempted or blocked on\n"
	"                           the host), as records in the trace file\n"
	"                           (report --vcpu-switches, convert); implies --exits\n"
	"      --wakeups            also each wake-up of a halted vCPU: from the\n"
	"                           sched_wakeup that ends its sleep to its guest\n"
	"                           running, with its wait for a host CPU and the\n"
	"                           interrupt it was for, and each interrupt from\n"
	"                           its acceptance to the guest running with it,\n"
	"                           as records in the trace file (shown by\n"
	"                           report --latency); implies --exits\n"
	"      --boot               also every exit of each VM that starts while\n"
	"                           recording, one record each from its first\n"
	"                           instruction, with its guest RIP, mode, cause and\n"
	"                           where the vCPU's time went: the boot's phases\n"
	"                           (report --boot); at most " HT_STR(HT_BOOT_MAX_EXITS_PER_VM) " exits a VM;\n"
	"                           implies --exits\n"
	"      --boot-window SECONDS\n"
	"                           with --boot: how long from a VM's first entry its\n"
	"                           exits are recorded (default " HT_STR(HT_BOOT_WINDOW_DEFAULT_S) ")\n"
	"      --vcpu-threads N     with --exits: the vCPU threads the BPF tables keep\n"
	"                           at once, rounded up to a power of two, " HT_STR(HT_MIN_VCPU_THREADS) " to\n"
	"                           " HT_STR(HT_MAX_VCPU_THREADS) " (default " HT_STR(HT_VCPU_THREADS_PER_CPU) " a CPU): each is about 2.8 KB of\n"
	"                           kernel memory; the exits of threads that find no\n"
	"                           free entry are counted as lost\n"
	"      --metrics [ADDR:]PORT|systemd\n"
	"                           serve Prometheus metrics at http://ADDR:PORT/metrics\n"
	"                           while recording: hypercalls by VM process, vCPU and\n"
	"                           nr, drops by reason, latency histograms. PORT\n"
	"                           alone, 127.0.0.1:PORT or [::1]:PORT listen on both\n"
	"                           loopbacks, 0.0.0.0:PORT or [::]:PORT on every\n"
	"                           address, IPv4 and IPv6 (one dual-stack socket), so\n"
	"                           no other process can take the port's other family\n"
	"                           (IPv4 alone on a host without IPv6); scrape an\n"
	"                           address, not localhost. 'systemd': on the listening\n"
	"                           sockets systemd passed (socket activation:\n"
	"                           LISTEN_FDS, from fd 3), which stay bound while the\n"
	"                           service restarts. Given once\n"
	"      --metrics-per-vcpu   with --exits: the exit time histograms by vCPU too\n"
	"                           (more series: see docs/metrics.md)\n"
	"      --metrics-grace SECONDS\n"
	"                           keep the series of a VM that ended this long\n"
	"                           (default 300): a VM restarted meanwhile goes on\n"
	"                           in the same series, then they are dropped\n"
	"      --bpf-stats          at the end, print each tracepoint program's run count\n"
	"                           and average cost (kernel BPF run-time statistics)\n"
	"  -v, --verbose            show libbpf debug output and the verifier log\n"
	"  -V, --version            show the version\n"
	"  -h, --help               show this help\n"
	"\n"
	"CMD must follow '--' and is looked up before anything is loaded. It runs\n"
	"after tracing has started; tracing stays system-wide (use -p to restrict it\n"
	"to one VM process). When CMD ends the run, record exits with CMD's status\n"
	"(128+N if signal N killed it); when Ctrl-C or -d ends it, CMD gets SIGTERM.\n"
	"\n"
	"Live histograms (log2, nsecs below 10 us, else usecs) show each interval's\n"
	"count, rate, p50/p90/p99/max and drops, redrawn in place on a terminal and\n"
	"appended as plain text otherwise. Percentiles are exact when computed from\n"
	"records; in --no-file mode they are log2 bucket bounds, shown as '<='.\n"
	"\n"
	"EXAMPLES:\n"
	"    sudo hypertrace-bpf record                      # nr 1000 until Ctrl-C\n"
	"    sudo hypertrace-bpf record -d 5 -o t.htr        # 5 seconds into t.htr\n"
	"    sudo hypertrace-bpf record --nr 1000 --nr 1001 -p $(pgrep -f qemu-system)\n"
	"    sudo hypertrace-bpf record -- minivm --vcpus 2 --count 1000\n"
	"    sudo hypertrace-bpf record --no-file --per-vcpu -i 5   # watch a production host\n"
	"    sudo hypertrace-bpf record --no-file -q --metrics 0.0.0.0:9470   # for Prometheus\n"
	"    sudo hypertrace-bpf record --exits -d 10 -o t.htr   # every exit, then: report --exits t.htr\n";

/*
 * Long-only options: no letter of their own, so values above every char that
 * the short-option string could ever hold.
 */
enum {
	OPT_MODE = 0x100,
	OPT_VM,
	OPT_INTERVALS,
	OPT_PER_VCPU,
	OPT_PER_VM,
	OPT_HIST,
	OPT_NO_FILE,
	OPT_BPF_STATS,
	OPT_METRICS,
	OPT_EXITS,
	OPT_METRICS_PER_VCPU,
	OPT_METRICS_GRACE,
	OPT_VCPU_SCHED,
	OPT_WAKEUPS,
	OPT_VM_USER,
	OPT_BOOT,
	OPT_BOOT_WINDOW,
	OPT_VCPU_THREADS,
};

static const struct option record_longopts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "force", no_argument, NULL, 'f' },
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "compress", no_argument, NULL, 'z' },
	{ "nr", required_argument, NULL, 'n' },
	{ "exit-reason", required_argument, NULL, 'e' },
	{ "pid", required_argument, NULL, 'p' },
	{ "vm", required_argument, NULL, OPT_VM },
	{ "vm-user", required_argument, NULL, OPT_VM_USER },
	{ "vcpu", required_argument, NULL, 'c' },
	{ "duration", required_argument, NULL, 'd' },
	{ "ringbuf-size", required_argument, NULL, 'b' },
	{ "interval", required_argument, NULL, 'i' },
	{ "intervals", required_argument, NULL, OPT_INTERVALS },
	{ "timestamp", no_argument, NULL, 'T' },
	{ "per-vcpu", no_argument, NULL, OPT_PER_VCPU },
	{ "per-vm", no_argument, NULL, OPT_PER_VM },
	{ "hist", required_argument, NULL, OPT_HIST },
	{ "quiet", no_argument, NULL, 'q' },
	{ "no-file", no_argument, NULL, OPT_NO_FILE },
	{ "bpf-stats", no_argument, NULL, OPT_BPF_STATS },
	{ "metrics", required_argument, NULL, OPT_METRICS },
	{ "exits", no_argument, NULL, OPT_EXITS },
	{ "vcpu-sched", no_argument, NULL, OPT_VCPU_SCHED },
	{ "wakeups", no_argument, NULL, OPT_WAKEUPS },
	{ "boot", no_argument, NULL, OPT_BOOT },
	{ "boot-window", required_argument, NULL, OPT_BOOT_WINDOW },
	{ "vcpu-threads", required_argument, NULL, OPT_VCPU_THREADS },
	{ "metrics-per-vcpu", no_argument, NULL, OPT_METRICS_PER_VCPU },
	{ "metrics-grace", required_argument, NULL, OPT_METRICS_GRACE },
	{ "verbose", no_argument, NULL, 'v' },
	{ "version", no_argument, NULL, 'V' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* ht_record_parse's results: -1 to go on; an option another parser takes; else the exit status. */
#define GO_ON (-1)
#define NOT_MINE (-2)

/* What the checks after the options need to know of them. */
struct parse_state {
	bool nr_given, ringbuf_given, interval_given;
	const char *live_option; /* the first option that only the live view uses */
};

static void note_live_option(struct parse_state *st, const char *name)
{
	if (!st->live_option)
		st->live_option = name;
}

/* The trace file: -o, --force, --mode, --compress. */
static int file_option(int opt, struct ht_record_config *cfg, struct parse_state *st)
{
	char err[256];

	(void)st;
	switch (opt) {
	case 'o':
		if (!optarg[0])
			return ht_usage_error("record", "-o needs a file name");
		if (!strcmp(optarg, "-"))
			return ht_usage_error("record", "-o -: the trace cannot go to standard output, it is written to a regular file: give a file path");
		cfg->output = optarg;
		cfg->output_given = true;
		return GO_ON;
	case 'f':
		cfg->force = true;
		return GO_ON;
	case OPT_MODE:
		if (!ht_parse_mode(optarg, &cfg->file_mode, err, sizeof(err)))
			return ht_usage_error("record", "%s", err);
		cfg->mode_given = true;
		return GO_ON;
	case 'z':
		cfg->compress = true;
		return GO_ON;
	}
	return NOT_MINE;
}

/* --nr's value: one nr, or FIRST-LAST (the nr from FIRST to LAST, FIRST <= LAST). */
static bool parse_nr_range(const char *arg, uint64_t *first, uint64_t *last)
{
	const char *dash = strchr(arg, '-');
	char head[32];

	if (!dash) {
		if (!ht_parse_u64(arg, 0, UINT32_MAX, first))
			return false;
		*last = *first;
		return true;
	}
	if ((size_t)(dash - arg) >= sizeof(head))
		return false;
	memcpy(head, arg, (size_t)(dash - arg));
	head[dash - arg] = '\0';
	return ht_parse_u64(head, 0, UINT32_MAX, first) && ht_parse_u64(dash + 1, 0, UINT32_MAX, last) && *first <= *last;
}

/* What is traced: --nr, --exit-reason, -p, --vm, --vm-user, --vcpu. */
static int filter_option(int opt, struct ht_record_config *cfg, struct parse_state *st)
{
	uint64_t v;

	switch (opt) {
	case 'n': {
		uint64_t last;

		if (!parse_nr_range(optarg, &v, &last))
			return ht_usage_error("record", "invalid --nr '%s': expected an integer 0..4294967295 or a range FIRST-LAST", optarg);
		if (!st->nr_given) {
			cfg->filters.nr_count = 0;
			st->nr_given = true;
		}
		if (last - v >= (uint64_t)(HT_MAX_SELECTED_NR - cfg->filters.nr_count))
			return ht_usage_error("record", "too many --nr: at most %d hypercall numbers", HT_MAX_SELECTED_NR);
		for (; v <= last; v++)
			cfg->filters.nr[cfg->filters.nr_count++] = (__u32)v;
		return GO_ON;
	}
	case 'e':
		if (!ht_parse_u64(optarg, 0, UINT32_MAX, &v))
			return ht_usage_error("record", "invalid --exit-reason '%s': expected an integer such as 18 or 0x81", optarg);
		cfg->filters.exit_reason_on = true;
		cfg->filters.exit_reason = (__u32)v;
		return GO_ON;
	case 'p':
		if (!ht_parse_u64(optarg, 0, INT32_MAX, &v) || v == 0)
			return ht_usage_error("record", "invalid --pid '%s': expected a process id", optarg);
		cfg->filters.tgid_on = true;
		cfg->filters.tgid = (__u32)v;
		return GO_ON;
	case OPT_VM:
		if (!optarg[0])
			return ht_usage_error("record", "--vm needs a QEMU guest name");
		cfg->vm_name = optarg;
		return GO_ON;
	case OPT_VM_USER:
		if (!ht_parse_user(optarg, &cfg->vm_uid))
			return ht_usage_error("record", "invalid --vm-user '%s': expected a user name of /etc/passwd or a numeric uid", optarg);
		cfg->vm_uid_on = true;
		return GO_ON;
	case 'c':
		if (!ht_parse_u64(optarg, 0, UINT16_MAX, &v))
			return ht_usage_error("record", "invalid --vcpu '%s': expected a vCPU id 0..65535", optarg);
		cfg->filters.vcpu_on = true;
		cfg->filters.vcpu = (__u32)v;
		return GO_ON;
	}
	return NOT_MINE;
}

/* The live view: -i, --intervals, -T, --per-vcpu, --per-vm, --hist, -q. */
static int live_view_option(int opt, struct ht_record_config *cfg, struct parse_state *st)
{
	uint64_t v;

	switch (opt) {
	case 'i':
		if (!ht_parse_seconds(optarg, 86400, &cfg->interval_s) || cfg->interval_s < 0.01)
			return ht_usage_error("record", "invalid --interval '%s': expected seconds, at least 0.01", optarg);
		st->interval_given = true;
		return GO_ON;
	case OPT_INTERVALS:
		if (!ht_parse_u64(optarg, 0, 1000000, &v) || v == 0)
			return ht_usage_error("record", "invalid --intervals '%s': expected a count 1..1000000", optarg);
		cfg->intervals = (unsigned int)v;
		note_live_option(st, "--intervals");
		return GO_ON;
	case 'T':
		cfg->timestamp = true;
		note_live_option(st, "-T/--timestamp");
		return GO_ON;
	case OPT_PER_VCPU:
	case OPT_PER_VM:
		if (cfg->group_by != HT_AGG_BY_NONE)
			return ht_usage_error("record", "--per-vcpu and --per-vm exclude each other");
		cfg->group_by = opt == OPT_PER_VCPU ? HT_AGG_BY_VCPU : HT_AGG_BY_VM;
		note_live_option(st, opt == OPT_PER_VCPU ? "--per-vcpu" : "--per-vm");
		return GO_ON;
	case OPT_HIST:
		if (!ht_hv_parse_series(optarg, &cfg->series))
			return ht_usage_error("record", "invalid --hist '%s': expected total, exit-hcall, hcall-entry, all or a comma list", optarg);
		note_live_option(st, "--hist");
		return GO_ON;
	case 'q':
		cfg->quiet = true;
		return GO_ON;
	}
	return NOT_MINE;
}

/* How the run goes: -d, --ringbuf-size, --no-file, --exits, --vcpu-sched, --bpf-stats, -v. */
static int run_option(int opt, struct ht_record_config *cfg, struct parse_state *st)
{
	uint64_t v;

	switch (opt) {
	case 'd':
		if (!ht_parse_seconds(optarg, 1e7, &cfg->duration_s) || cfg->duration_s <= 0)
			return ht_usage_error("record", "invalid --duration '%s': expected a positive number of seconds", optarg);
		return GO_ON;
	case 'b':
		if (!ht_parse_size(optarg, &v) || v < 4096 || v > (1ull << 30) || (v & (v - 1)))
			return ht_usage_error("record", "invalid --ringbuf-size '%s': expected a power of two from 4K to 1G", optarg);
		cfg->ringbuf_bytes = (unsigned long)v;
		st->ringbuf_given = true;
		return GO_ON;
	case OPT_NO_FILE:
		cfg->no_file = true;
		return GO_ON;
	case OPT_EXITS:
		cfg->exits = true;
		return GO_ON;
	case OPT_VCPU_SCHED:
		/* Which threads are vCPU threads is what --exits keeps track of. */
		cfg->vcpu_sched = true;
		cfg->exits = true;
		return GO_ON;
	case OPT_WAKEUPS:
		/* The wake-ups are the halts', which --exits keeps per vCPU thread. */
		cfg->wakeups = true;
		cfg->exits = true;
		return GO_ON;
	case OPT_BOOT:
		/* A boot exit's parts are the vCPU account's, which --exits keeps. */
		cfg->boot = true;
		cfg->exits = true;
		return GO_ON;
	case OPT_BOOT_WINDOW:
		if (!ht_parse_seconds(optarg, 1e6, &cfg->boot_window_s) || cfg->boot_window_s <= 0)
			return ht_usage_error("record", "invalid --boot-window '%s': expected a positive number of seconds", optarg);
		return GO_ON;
	case OPT_VCPU_THREADS:
		if (!ht_parse_u64(optarg, 0, HT_MAX_VCPU_THREADS, &v) || v == 0)
			return ht_usage_error("record", "invalid --vcpu-threads '%s': expected 1 to %u", optarg,
					      HT_MAX_VCPU_THREADS);
		cfg->vcpu_threads = (unsigned int)v;
		return GO_ON;
	case OPT_BPF_STATS:
		cfg->bpf_stats = true;
		return GO_ON;
	case 'v':
		cfg->verbose = true;
		return GO_ON;
	}
	return NOT_MINE;
}

/* Prometheus: --metrics, --metrics-per-vcpu, --metrics-grace. */
static int metrics_option(int opt, struct ht_record_config *cfg, struct parse_state *st)
{
	(void)st;
	switch (opt) {
	case OPT_METRICS:
		/*
		 * One server, one address: a second --metrics (one left in a
		 * service's HYPERTRACE_OPTIONS) would silently move it off the
		 * socket the service manager holds for it.
		 */
		if (cfg->metrics)
			return ht_usage_error("record", "--metrics given twice ('%s', then '%s'): give it once (the service gives --metrics systemd: set the address in hypertrace-exporter.socket)",
					      cfg->metrics_addr.from_systemd ? HT_METRICS_FROM_SYSTEMD : cfg->metrics_addr.text, optarg);
		if (!ht_listen_addr_parse(optarg, &cfg->metrics_addr))
			return ht_usage_error("record", "invalid --metrics '%s': expected [ADDR:]PORT with PORT 1..65535 and ADDR an IP address (IPv6 in brackets), e.g. 9470 or 0.0.0.0:9470, or 'systemd' for the socket systemd passes", optarg);
		cfg->metrics = true;
		return GO_ON;
	case OPT_METRICS_PER_VCPU:
		cfg->metrics_per_vcpu = true;
		return GO_ON;
	case OPT_METRICS_GRACE:
		if (!ht_parse_seconds(optarg, 1e7, &cfg->metrics_grace_s) || cfg->metrics_grace_s < 1)
			return ht_usage_error("record", "invalid --metrics-grace '%s': expected seconds, at least 1", optarg);
		return GO_ON;
	}
	return NOT_MINE;
}

/*
 * What follows the options, from argv[optind]: CMD after '--', nothing
 * else. next: where getopt's last call began.
 */
static int parse_command(int argc, char **argv, int next, struct ht_record_config *cfg)
{
	if (optind >= argc)
		return GO_ON;
	/* getopt stepped over a '--' of its own only if it took one argument in its last call. */
	bool after_dashes = optind == next + 1 && !strcmp(argv[next], "--");

	if (!after_dashes && ht_parse_seconds(argv[optind], 1e9, &(double){ 0 }))
		return ht_usage_error("record", "unexpected argument '%s': for live histograms every SECONDS use -i SECONDS, to stop after N of them --intervals N, after SECONDS -d SECONDS; a command to run goes after '--'",
				      argv[optind]);
	if (!after_dashes)
		return ht_usage_error("record", "unexpected argument '%s': a command to run goes after '--' (record [OPTIONS] -- CMD [ARGS...])",
				      argv[optind]);
	cfg->command = argv + optind;
	return GO_ON;
}

/* The options that need or exclude others. */
static int check_combinations(const struct ht_record_config *cfg, struct parse_state *st)
{
	if (cfg->metrics_grace_s > 0 && !cfg->metrics)
		return ht_usage_error("record", "--metrics-grace only changes what --metrics serves: add --metrics [ADDR:]PORT");
	if (cfg->vm_uid_on && !cfg->vm_name)
		return ht_usage_error("record", "--vm-user chooses among the processes of --vm NAME: add --vm NAME (with -p the process is chosen already)");
	if (cfg->vm_name && cfg->filters.tgid_on)
		return ht_usage_error("record", "-p and --vm both select the VM process: give one of them");
	if (cfg->no_file && (cfg->output_given || cfg->force || cfg->compress || cfg->mode_given))
		return ht_usage_error("record", "--no-file writes no trace file: drop -o/--force/--compress/--mode");
	if (cfg->no_file && cfg->quiet && !cfg->metrics)
		return ht_usage_error("record", "--no-file with --quiet would show nothing: drop one of them, or add --metrics");
	if (cfg->vcpu_threads && !cfg->exits)
		return ht_usage_error("record", "--vcpu-threads sizes the tables of --exits: add --exits");
	if (cfg->boot_window_s > 0 && !cfg->boot)
		return ht_usage_error("record", "--boot-window is how long --boot records a VM's exits: add --boot");
	if (cfg->no_file && cfg->boot)
		return ht_usage_error("record", "--boot writes each exit of a booting VM to the trace file: drop --no-file");
	if (cfg->no_file && cfg->vcpu_sched)
		return ht_usage_error("record", "--vcpu-sched writes each switch of a vCPU thread to the trace file: drop --no-file");
	if (cfg->no_file && cfg->wakeups)
		return ht_usage_error("record", "--wakeups writes each wake-up of a halted vCPU to the trace file: drop --no-file");
	if (cfg->no_file && st->ringbuf_given)
		return ht_usage_error("record", "--no-file sends no records through the ring buffer: drop --ringbuf-size");
	if (cfg->metrics_per_vcpu && (!cfg->metrics || !cfg->exits))
		return ht_usage_error("record", "--metrics-per-vcpu splits the exit metrics by vCPU: it needs --exits and --metrics");
	/* With --exits the interval is also how often the exit statistics are read and kept. */
	if (st->interval_given && !cfg->exits)
		note_live_option(st, "-i/--interval");
	if (cfg->quiet && cfg->intervals)
		return ht_usage_error("record", "--intervals counts live histograms, which --quiet turns off: drop -q, or stop after a time with -d");
	if (cfg->quiet && st->live_option)
		return ht_usage_error("record", "%s only changes the live histograms, which --quiet turns off: drop one of them",
				      st->live_option);
	return GO_ON;
}

static void record_defaults(struct ht_record_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->output = HT_DEFAULT_OUTPUT;
	cfg->file_mode = HT_WRITER_DEFAULT_MODE;
	int cpus = libbpf_num_possible_cpus();

	cfg->ringbuf_bytes = ht_default_ringbuf_bytes(cpus > 0 ? (unsigned int)cpus : 1);
	cfg->interval_s = 1.0;
	cfg->series = HT_HV_SERIES_ALL;
	ht_filters_default(&cfg->filters);
}

int ht_record_parse(int argc, char **argv, struct ht_record_config *cfg)
{
	static int (*const parsers[])(int opt, struct ht_record_config *cfg, struct parse_state *st) = {
		file_option, filter_option, live_view_option, run_option, metrics_option,
	};
	struct parse_state st = { .nr_given = false };
	int opt, next, ret;

	record_defaults(cfg);
	opterr = 0;
	optind = 1;
	/* '+': stop at '--' or at the first non-option, which is then refused. */
	for (;;) {
		next = optind;
		opt = getopt_long(argc, argv, "+:o:fzn:e:p:c:d:b:i:TqvVh", record_longopts, NULL);
		if (opt == -1)
			break;
		if (opt == 'V')
			return ht_print_version();
		if (opt == 'h') {
			fputs(record_help, stdout);
			return HT_EXIT_OK;
		}
		ret = NOT_MINE;
		for (size_t i = 0; i < ARRAY_SIZE(parsers) && ret == NOT_MINE; i++)
			ret = parsers[i](opt, cfg, &st);
		if (ret == NOT_MINE)
			return ht_option_error("record", opt, argv);
		if (ret != GO_ON)
			return ret;
	}
	if ((ret = parse_command(argc, argv, next, cfg)) != GO_ON)
		return ret;
	return check_combinations(cfg, &st);
}
