// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Command line of `hypertrace-bpf report`: strict parsing, one-line errors, exit 2. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "common/parse_number.h"
#include "decode/decode_options.h"
#include "hist/hist_view.h"
#include "report/report_options.h"

static const char report_help[] =
	"Usage: hypertrace-bpf report [--dump | --csv | --json | --hist [SERIES]] [--exits [--causes]]\n"
	"                             [--per-vcpu | --per-vm] [-p PID] [--vcpu N] [-n N]...\n"
	"                             [--since TIME] [--until TIME] [--graph | --sched]\n"
	"                             [--vcpu-switches | --vcpu-time | --halts | --irqs]\n"
	"                             [--boot | --clock | --initcalls]\n"
	"                             [--latency [--worst N]]\n"
	"                             [--catalog FILE]... [--guest-symbols FILE] FILE\n"
	"\n"
	"Read a trace file written by 'hypertrace-bpf record'. Without an option, print\n"
	"a summary: records and drops, counts per vCPU and per hypercall nr, and\n"
	"min/avg/p50/p99/max of each latency (exit->hypercall, hypercall->entry, and\n"
	"the whole exit->entry round trip). A damaged or truncated file is read up to\n"
	"its last whole block, and the report says where it stopped.\n"
	"\n"
	"Options:\n"
	"  -D, --dump   one line per record, with wall-clock time\n"
	"  -C, --csv    CSV with a header line\n"
	"  -J, --json   one JSON object per record per line; 64-bit values are\n"
	"               strings (exit_ns in decimal, a0..a3 and guest_rip in hex)\n"
	"               so JSON readers that use doubles keep them exact\n"
	"  -H, --hist [SERIES]  log2 latency histograms of the selected records, as record\n"
	"               draws them live; SERIES: total, exit-hcall, hcall-entry, all\n"
	"               or a comma list (default all). A FILE named like a SERIES\n"
	"               needs a path: ./total\n"
	"      --per-vcpu, --per-vm  with --hist: one histogram per vCPU / VM process\n"
	"      --exits  the exit statistics of a recording made with record --exits:\n"
	"               per VM, per vCPU and per exit reason the count, rate and\n"
	"               min/p50/p99/max time in the host, and each vCPU's wait for a\n"
	"               host CPU and preemptions; with --csv or --json one row per\n"
	"               (VM, vCPU, exit reason) with its log2 buckets. The selection\n"
	"               below applies but for --nr; a time window is cut at the\n"
	"               recording's intervals; the text ends with the causes\n"
	"      --causes  the causes of the exits (record --exits): per VM and exit\n"
	"               reason the I/O ports, MMIO addresses, MSRs, CPUID leaves\n"
	"               and hypercall nrs KVM reported, each with its count and\n"
	"               time in KVM and in the VMM; with --csv or --json one row\n"
	"               per (VM, exit reason, cause) with its log2 buckets. A VM\n"
	"               names at most 16 causes per reason, the rest are 'other';\n"
	"               causes are per VM: --vcpu does not apply\n"
	"      --vcpu-time  where each vCPU's time went, from a recording made with\n"
	"               record --exits: per VM and vCPU thread the time in guest,\n"
	"               kvm (KVM handling an exit), vmm (the VMM in user space),\n"
	"               wait (runnable, no host CPU), halted (idle in a halt) and\n"
	"               blocked, adding up to its wall-clock time; with --csv\n"
	"               or --json one row per (VM, vCPU thread, state). The\n"
	"               selection applies but for --nr, as with --exits\n"
	"      --halts  each vCPU thread's halts in KVM, from a recording made with\n"
	"               record --exits: how many KVM polled in (halt_poll_ns not 0),\n"
	"               how many the polling caught and their time, how many\n"
	"               slept and their time in KVM (polling that failed, then\n"
	"               the sleep) with the CPU that polling burned in them, and\n"
	"               the halt_poll_ns in force at the end; then\n"
	"               the wake-ups of the halts that slept, to the guest running:\n"
	"               count, mean, p50, p99, longest and the share spent waiting\n"
	"               for a host CPU, by the interrupt KVM injected (the vCPU's\n"
	"               timer, another vector, none); with --csv or --json one\n"
	"               row per vCPU thread. The selection applies as with\n"
	"               --vcpu-time\n"
	"      --irqs   the interrupts KVM delivered to each vCPU thread, from a\n"
	"               recording made with record --exits: from their acceptance by\n"
	"               the vCPU's local APIC to the guest running with them, per\n"
	"               class (timer: the vCPU's own; ipi: from a vCPU of the VM;\n"
	"               device: from another thread of the VM process) the count,\n"
	"               mean, p50, p99 and longest, the mean's parts (waking the\n"
	"               halted thread, waiting for a host CPU, the rest), and the\n"
	"               ones not timed; with --csv or --json one row per vCPU\n"
	"               thread. The selection applies as with --vcpu-time\n"
	"      --latency  the wake-ups of halted vCPUs one by one, from a recording\n"
	"               made with record --wakeups: per VM, vCPU thread and\n"
	"               interrupt class (timer, vector, none) the count, exact\n"
	"               p50, p99 and max from the wake-up to the guest running,\n"
	"               the mean wait for a host CPU and the rest (switch-in and\n"
	"               KVM's entry), a log2 histogram; then the longest ones\n"
	"               with their parts, and the timer wake-ups' time from\n"
	"               their timer's due time (KVM's hrtimer expiry) to the\n"
	"               wake-up; with --csv one row per wake-up (due_ns: that\n"
	"               due time, empty if not a timer's). Then\n"
	"               the interrupts delivered to vCPUs the same way (format\n"
	"               14 on): acceptance to the guest running, per class\n"
	"               (timer, ipi, device), the mean of waking the halted\n"
	"               thread, waiting and the rest; with --csv one row each\n"
	"               after the wake-ups' (kind irq, wake_ns its acceptance,\n"
	"               woken_ns the waking); --json the same rows as JSON\n"
	"               lines. The selection applies but for --nr\n"
	"               (a wake-up's time is its end, the guest running)\n"
	"      --worst N  with --latency: how many of the longest wake-ups, and\n"
	"               of the longest interrupt deliveries, to list (default\n"
	"               10, 0 for none)\n"
	"      --boot   the boots of the VMs a recording made with record --boot saw\n"
	"               start: per VM its phases (firmware, decompressor, kernel,\n"
	"               user space) told from the guest's RIP and mode at its exits,\n"
	"               each with its start (and how much earlier it may have\n"
	"               begun), length, exits by reason and cause and where its\n"
	"               vCPUs' time went; where the boot stopped (each vCPU's last\n"
	"               exits, named with the guest's symbols); as CSV one row per\n"
	"               (VM, phase); the VMs selected with -p or --vm\n"
	"      --clock  the guest clocks of each VM on the host's clock, from the clock\n"
	"               pairs the guest module sends (its local_clock and\n"
	"               CLOCK_MONOTONIC, each with the host time of its\n"
	"               hypercall): per VM and clock the fitted rate (ppm) and\n"
	"               offset, the pairs used and refused (out of order, or off\n"
	"               the others' line) and the residuals' p50/p99/max; map a\n"
	"               guest time G to the host's as intercept_ns + rate * G;\n"
	"               a VM whose trace guest/boottrace sent has a row\n"
	"               trace-markers too (its trace's own clock); text or --csv;\n"
	"               the VMs selected with -p or --vm\n"
	"      --map FILE  with --clock: FILE (- for the standard input), the\n"
	"               guest's own ftrace text (cat trace, or trace-cmd report -t\n"
	"               of its trace.dat; by boottrace's markers if the file has\n"
	"               them, else as the 'local' trace clock) or dmesg, printed\n"
	"               with each time on its line put on the host's monotonic\n"
	"               clock (seconds, ns digits) by its VM's fit, and lines\n"
	"               without a time as they are (escaped on a terminal); a file\n"
	"               of several VMs needs a VM chosen with -p or --vm\n"
	"      --map-clock CLOCK  with --map: the guest's trace clock of the\n"
	"               ftrace text: local (its default) or mono (trace_clock\n"
	"               mono, trace-cmd record -C mono, or any text of\n"
	"               CLOCK_MONOTONIC seconds after its CPU field); with the\n"
	"               CTF metadata of --map-ctf: what its clocks count\n"
	"               (default mono)\n"
	"      --map-ctf FILE  with --clock: FILE (- for the standard input), the\n"
	"               metadata of a CTF trace the guest wrote (LTTng's, kernel\n"
	"               or user space), printed as TSDL with its clocks put on\n"
	"               the host's monotonic clock, offset to UTC as in convert's\n"
	"               LTTng traces: put it in a copy of the trace's directory\n"
	"               in place of its metadata; a VM chosen as for --map\n"
	"      --initcalls  a guest kernel's boot as its own trace tells it, sent by\n"
	"               guest/boottrace (record with nr 1150, 1151 and 1152): per\n"
	"               VM its initcall levels (start, length, time in initcalls\n"
	"               and between them) and the slowest initcalls, on the host's\n"
	"               clock through the trace's clock pairs; as CSV one row per\n"
	"               level and per initcall; the VMs selected with -p or --vm\n"
	"      --vcpu-switches  with --dump, --csv or --json: instead of the\n"
	"               hypercalls, the switches of vCPU threads out of their host\n"
	"               CPU and back in (record --vcpu-sched); the selection\n"
	"               applies but for --nr\n"
	"  -V, --version  print the version\n"
	"  -h, --help   show this help\n"
	"\n"
	"%s"
	"\n"
	"%s"
	"\n"
	"EXAMPLES:\n"
	"    hypertrace-bpf report hypertrace.htr\n"
	"    hypertrace-bpf report --csv t.htr > t.csv\n"
	"    hypertrace-bpf report --hist total --per-vcpu t.htr\n"
	"    hypertrace-bpf report --json -p 4242 --vcpu 1 --since 10 --until 12.5 t.htr\n"
	"    hypertrace-bpf report --graph --guest-symbols kallsyms.txt t.htr\n"
	"    hypertrace-bpf report --exits --vm web1 t.htr\n"
	"    hypertrace-bpf report --causes --csv t.htr\n"
	"    hypertrace-bpf report --vcpu-time --csv t.htr\n";

static const struct option report_longopts[] = {
	{ "dump", no_argument, NULL, 'D' },
	{ "csv", no_argument, NULL, 'C' },
	{ "json", no_argument, NULL, 'J' },
	{ "hist", optional_argument, NULL, 'H' },
	{ "per-vcpu", no_argument, NULL, 'P' },
	{ "per-vm", no_argument, NULL, 'M' },
	{ "exits", no_argument, NULL, 'E' },
	{ "vcpu-switches", no_argument, NULL, 'W' },
	{ "vcpu-time", no_argument, NULL, 'A' },
	{ "halts", no_argument, NULL, 'L' },
	{ "irqs", no_argument, NULL, 'R' },
	{ "latency", no_argument, NULL, 'Y' },
	{ "worst", required_argument, NULL, 'Z' },
	{ "boot", no_argument, NULL, 'B' },
	{ "clock", no_argument, NULL, 'K' },
	{ "initcalls", no_argument, NULL, 'I' },
	{ "map", required_argument, NULL, 'G' },
	{ "map-clock", required_argument, NULL, 'Q' },
	{ "map-ctf", required_argument, NULL, 'F' },
	{ "causes", no_argument, NULL, 'U' },
	{ "version", no_argument, NULL, 'V' },
	{ "help", no_argument, NULL, 'h' },
	HT_SELECT_LONGOPTS,
	HT_DECODE_LONGOPTS,
	{ NULL, 0, NULL, 0 },
};

/* Both option sets share one getopt_long loop: their codes must not meet. */
_Static_assert((int)HT_OPT_CATALOG > (int)HT_SELECT_OPT_VM, "guest-event and selection option codes overlap");

static const char hist_series_error[] =
	"invalid --hist '%s': expected total, exit-hcall, hcall-entry, all or a comma list";

/* One option of report's own (not a selection or guest-event option): -1 to go on, else the exit status. */
static int report_option(int opt, int argc, char **argv, struct ht_report_config *cfg, int *modes)
{
	switch (opt) {
	case 'H':
		cfg->mode = HT_REPORT_HIST;
		(*modes)++;
		if (optarg) {
			if (!ht_hv_parse_series(optarg, &cfg->series))
				return ht_usage_error("report", hist_series_error, optarg);
		} else if (optind < argc && ht_hv_parse_series(argv[optind], &cfg->series)) {
			/* `--hist total`, as record takes it: the next word is the series. */
			optind++;
		}
		break;
	case 'P':
	case 'M':
		if (cfg->group_by != HT_LAT_BY_NONE)
			return ht_usage_error("report", "--per-vcpu and --per-vm exclude each other");
		cfg->group_by = opt == 'P' ? HT_LAT_BY_VCPU : HT_LAT_BY_VM;
		break;
	case 'E': cfg->exits = true; break;
	case 'W': cfg->vcpu_switches = true; break;
	case 'A': cfg->vcpu_time = true; break;
	case 'L': cfg->halts = true; break;
	case 'R': cfg->irqs = true; break;
	case 'Y': cfg->latency = true; break;
	case 'Z': {
		uint64_t n;

		if (!ht_parse_u64(optarg, 0, 1000000, &n))
			return ht_usage_error("report", "invalid --worst '%s': expected a count from 0 to 1000000", optarg);
		cfg->worst = (size_t)n;
		cfg->worst_given = true;
		break;
	}
	case 'B': cfg->boot = true; break;
	case 'K': cfg->clock = true; break;
	case 'I': cfg->initcalls = true; break;
	case 'G': cfg->clock_map = optarg; break;
	case 'F': cfg->clock_map_ctf = optarg; break;
	case 'Q':
		if (!strcmp(optarg, "local"))
			cfg->map_clock = HT_MAP_CLOCK_LOCAL;
		else if (!strcmp(optarg, "mono"))
			cfg->map_clock = HT_MAP_CLOCK_MONO;
		else
			return ht_usage_error("report", "invalid --map-clock '%s': expected local or mono", optarg);
		break;
	case 'U': cfg->causes = true; break;
	case 'D': cfg->mode = HT_REPORT_DUMP; (*modes)++; break;
	case 'C': cfg->mode = HT_REPORT_CSV; (*modes)++; break;
	case 'J': cfg->mode = HT_REPORT_JSON; (*modes)++; break;
	case 'V':
		return ht_print_version();
	case 'h':
		printf(report_help, ht_selection_help, ht_decode_help);
		return HT_EXIT_OK;
	default:
		return ht_option_error("report", opt, argv);
	}
	return -1;
}

/*
 * The options given together that exclude or need each other: -1 if they
 * fit, else the exit status. In this order, so that of several faults the
 * same one is reported; --causes is made to imply --exits on the way.
 */
static int check_combinations(struct ht_report_config *cfg, int modes)
{
	if (modes > 1)
		return ht_usage_error("report", "--dump, --csv, --json and --hist exclude each other");
	if (cfg->worst_given && !cfg->latency)
		return ht_usage_error("report", "--worst is how many wake-ups --latency lists: add --latency");
	if (cfg->latency && (cfg->exits || cfg->causes || cfg->vcpu_time || cfg->halts || cfg->irqs ||
			     cfg->vcpu_switches || cfg->boot || cfg->clock || cfg->initcalls))
		return ht_usage_error("report", "--latency is a view of its own: drop --exits, --causes, --vcpu-time, --halts, --irqs, --vcpu-switches, --boot, --clock and --initcalls");
	if (cfg->latency && (cfg->mode == HT_REPORT_DUMP || cfg->mode == HT_REPORT_HIST ||
			     cfg->decode.analysis != HT_ANALYSIS_NONE || cfg->decode.ncatalogs || cfg->decode.symbols ||
			     cfg->decode.offset_given || cfg->selection.nr_count))
		return ht_usage_error("report", "--latency prints the wake-ups as text, --csv or --json: drop --dump, --hist, --nr and the guest-event options");
	if (cfg->halts + cfg->irqs + cfg->vcpu_time > 1)
		return ht_usage_error("report", "--halts, --irqs and --vcpu-time are three views of the vCPU threads: give one");
	/* --halts and --irqs read what --vcpu-time reads, with the same options: its rules below are theirs. */
	cfg->vcpu_time |= cfg->halts || cfg->irqs;
	if (modes && cfg->decode.analysis != HT_ANALYSIS_NONE)
		return ht_usage_error("report", "--graph and --sched exclude --dump, --csv, --json and --hist");
	if (cfg->map_clock != HT_MAP_CLOCK_AUTO && !cfg->clock_map && !cfg->clock_map_ctf)
		return ht_usage_error("report", "--map-clock goes with --map or --map-ctf: it names the guest clock of what is mapped");
	if (cfg->clock_map && cfg->clock_map_ctf)
		return ht_usage_error("report", "--map and --map-ctf each print a file: give one");
	if ((cfg->clock_map || cfg->clock_map_ctf) && (!cfg->clock || cfg->mode != HT_REPORT_SUMMARY))
		return ht_usage_error("report", "%s goes with --clock alone: drop --csv and the other views",
				      cfg->clock_map ? "--map" : "--map-ctf");
	if (cfg->clock && (cfg->boot || cfg->exits || cfg->causes || cfg->vcpu_time || cfg->vcpu_switches ||
			   cfg->mode == HT_REPORT_DUMP || cfg->mode == HT_REPORT_JSON || cfg->mode == HT_REPORT_HIST ||
			   cfg->decode.analysis != HT_ANALYSIS_NONE || cfg->decode.ncatalogs || cfg->decode.symbols ||
			   cfg->decode.offset_given))
		return ht_usage_error("report", "--clock prints the clock fits as text or --csv: drop the other views, --dump, --json, --hist, --graph, --sched, --catalog and --guest-symbols");
	if (cfg->clock && (cfg->selection.nr_count || cfg->selection.vcpu_on || cfg->selection.since.on ||
			   cfg->selection.until.on))
		return ht_usage_error("report", "--clock fits a VM's clock over the whole recording: select VMs with -p or --vm, not --nr, --vcpu, --since or --until");
	if (cfg->initcalls && (cfg->clock || cfg->boot || cfg->exits || cfg->causes || cfg->vcpu_time || cfg->vcpu_switches ||
			       cfg->mode == HT_REPORT_DUMP || cfg->mode == HT_REPORT_JSON || cfg->mode == HT_REPORT_HIST ||
			       cfg->decode.analysis != HT_ANALYSIS_NONE || cfg->decode.ncatalogs || cfg->decode.symbols ||
			       cfg->decode.offset_given))
		return ht_usage_error("report", "--initcalls prints the guest's initcalls as text or --csv: drop the other views, --dump, --json, --hist, --graph, --sched, --catalog and --guest-symbols");
	if (cfg->initcalls && (cfg->selection.nr_count || cfg->selection.vcpu_on || cfg->selection.since.on ||
			       cfg->selection.until.on))
		return ht_usage_error("report", "--initcalls shows a VM's whole replayed trace: select VMs with -p or --vm, not --nr, --vcpu, --since or --until");
	if (cfg->boot && (cfg->exits || cfg->causes || cfg->vcpu_time || cfg->vcpu_switches || cfg->mode == HT_REPORT_DUMP ||
			  cfg->mode == HT_REPORT_JSON || cfg->mode == HT_REPORT_HIST || cfg->decode.analysis != HT_ANALYSIS_NONE ||
			  cfg->decode.ncatalogs))
		return ht_usage_error("report", "--boot prints the boots as text or --csv: drop --exits, --causes, --vcpu-time, --vcpu-switches, --dump, --json, --hist, --graph, --sched and --catalog");
	if (cfg->boot && (cfg->selection.nr_count || cfg->selection.vcpu_on || cfg->selection.since.on ||
			  cfg->selection.until.on))
		return ht_usage_error("report", "--boot shows whole boots of whole VMs: select them with -p or --vm, not --nr, --vcpu, --since or --until");
	if ((cfg->decode.ncatalogs || cfg->decode.symbols || cfg->decode.offset_given) && !cfg->boot &&
	    cfg->decode.analysis == HT_ANALYSIS_NONE &&
	    (cfg->mode == HT_REPORT_SUMMARY || cfg->mode == HT_REPORT_HIST))
		return ht_usage_error("report", "--catalog, --guest-symbols and --kaslr-offset go with --dump, --csv, --json, --graph or --sched");
	if (cfg->causes && cfg->vcpu_time)
		return ht_usage_error("report", "--causes and --vcpu-time are two views of the exit statistics: give one");
	cfg->exits |= cfg->causes;
	if (cfg->vcpu_time && cfg->exits)
		return ht_usage_error("report", "--vcpu-time and --exits are two views of the exit statistics: give one");
	if (cfg->vcpu_time && (cfg->mode == HT_REPORT_DUMP || cfg->mode == HT_REPORT_HIST ||
			       cfg->decode.analysis != HT_ANALYSIS_NONE || cfg->decode.ncatalogs || cfg->decode.symbols ||
			       cfg->decode.offset_given || cfg->selection.nr_count || cfg->vcpu_switches))
		return ht_usage_error("report", "--vcpu-time prints where the vCPUs' time went as text, --csv or --json: drop --dump, --hist, --nr, --vcpu-switches and the guest-event options");
	if (cfg->exits && (cfg->mode == HT_REPORT_DUMP || cfg->mode == HT_REPORT_HIST ||
			   cfg->decode.analysis != HT_ANALYSIS_NONE || cfg->decode.ncatalogs || cfg->decode.symbols ||
			   cfg->decode.offset_given))
		return ht_usage_error("report", "--exits prints the exit statistics as text, --csv or --json: drop --dump, --hist and the guest-event options");
	if (cfg->exits && cfg->selection.nr_count)
		return ht_usage_error("report", "--nr selects hypercalls; exits have no nr: drop --nr with --exits");
	if (cfg->vcpu_switches && (cfg->mode == HT_REPORT_SUMMARY || cfg->mode == HT_REPORT_HIST || cfg->exits))
		return ht_usage_error("report", "--vcpu-switches lists the switches of vCPU threads: add --dump, --csv or --json (not --hist or --exits)");
	if (cfg->vcpu_switches && (cfg->selection.nr_count || cfg->decode.ncatalogs || cfg->decode.symbols ||
				   cfg->decode.offset_given))
		return ht_usage_error("report", "--vcpu-switches lists switches, which carry no hypercall: drop --nr and the guest-event options");
	if (cfg->group_by != HT_LAT_BY_NONE && cfg->mode != HT_REPORT_HIST)
		return ht_usage_error("report", "--per-vcpu and --per-vm go with --hist");
	return -1;
}

int ht_report_parse(int argc, char **argv, struct ht_report_config *cfg)
{
	char err[256];
	int opt, modes = 0, ret;

	memset(cfg, 0, sizeof(*cfg));
	cfg->mode = HT_REPORT_SUMMARY;
	cfg->series = HT_HV_SERIES_ALL;
	cfg->group_by = HT_LAT_BY_NONE;
	cfg->worst = 10;

	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, ":DCJHVh" HT_SELECT_SHORTOPTS, report_longopts, NULL)) != -1) {
		int sel = ht_selection_option(&cfg->selection, opt, optarg, err, sizeof(err));
		if (sel < 0)
			return ht_usage_error("report", "%s", err);
		if (sel > 0)
			continue;
		int dec = ht_decode_option("report", opt, optarg, &cfg->decode);
		if (dec == 1)
			continue;
		if (dec)
			return dec;
		ret = report_option(opt, argc, argv, cfg, &modes);
		if (ret != -1)
			return ret;
	}
	ret = check_combinations(cfg, modes);
	if (ret != -1)
		return ret;
	if (ht_selection_check(&cfg->selection, err, sizeof(err)))
		return ht_usage_error("report", "%s", err);
	if (optind == argc)
		return ht_usage_error("report", "no trace file given");
	if (optind + 1 < argc)
		return ht_usage_error("report", "one trace file at a time, got '%s' and '%s'", argv[optind], argv[optind + 1]);
	cfg->path = argv[optind];
	return -1;
}
