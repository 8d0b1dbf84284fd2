// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Command line of `hypertrace-bpf convert`: strict parsing, one-line errors, exit 2. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "decode/decode_options.h"
#include "export/convert_options.h"
#include "parse.h"

static const char convert_help[] =
	"Usage: hypertrace-bpf convert (--ctf DIR | --lttng DIR | --perfetto FILE | --chrome FILE.json)\n"
	"                              [--force] [--mode MODE]\n"
	"                              [-p PID] [--vcpu N] [-n N]... [--since TIME]\n"
	"                              [--until TIME] [--catalog FILE]...\n"
	"                              [--guest-symbols FILE [--kaslr-offset N]] FILE\n"
	"\n"
	"Convert a trace file written by 'hypertrace-bpf record' for other tools. The\n"
	"file is read as it is converted: memory does not grow with its size. A\n"
	"damaged or truncated file is converted up to its last whole block, then\n"
	"the command says where it stopped and exits with status 1. The output is\n"
	"built under a name nobody sees and named only once complete: a convert\n"
	"that fails or is interrupted leaves no part of it behind.\n"
	"\n"
	"Formats:\n"
	"      --ctf DIR        a CTF 1.8 trace in the new or empty directory DIR, for\n"
	"                       babeltrace2 and Trace Compass: one stream per vCPU\n"
	"                       thread, one 'hypercall' event per record with all its\n"
	"                       fields, wall-clock timestamps, drops as discarded\n"
	"                       events, the recording's identity in the env block\n"
	"      --lttng DIR      an experiment of LTTng-kernel-shaped CTF traces in the\n"
	"                       new or empty directory DIR, for Trace Compass's\n"
	"                       virtual machine analysis: DIR/host (kvm_x86_exit,\n"
	"                       kvm_x86_hypercall, kvm_x86_entry per host CPU, and\n"
	"                       the sched_switch of vCPU threads of a file recorded\n"
	"                       with --vcpu-sched; with --wakeups, each wake-up of a\n"
	"                       halted vCPU and each interrupt delivery as an event\n"
	"                       at its entry) and one DIR/guest-VM per VM that\n"
	"                       sent guest events\n"
	"                       (sched_switch, sched_wakeup, irq_handler_*, function\n"
	"                       entry/exit per guest CPU), with the vmsync events\n"
	"                       that match host and guest\n"
	"      --perfetto FILE  Perfetto's protobuf trace for ui.perfetto.dev: a process\n"
	"                       per VM, a thread track per vCPU thread, a slice per\n"
	"                       hypercall with its phases nested; guest scheduling and\n"
	"                       IRQs on CPU tracks, guest calls on a track per guest\n"
	"                       task, flows from each guest event to its hypercall;\n"
	"                       with --vcpu-sched, each vCPU thread's time off its\n"
	"                       host CPU as 'preempted' and 'blocked' slices; each\n"
	"                       vCPU thread's account of a recording with --exits\n"
	"                       (what report --vcpu-time shows) as counter tracks;\n"
	"                       with --wakeups, each wake-up of a halted vCPU and\n"
	"                       each interrupt delivery as a slice to its entry\n"
	"      --chrome FILE    Chrome trace event JSON for Perfetto UI and\n"
	"                       chrome://tracing: a track per vCPU thread in its VM\n"
	"                       process, a slice per hypercall with its two phases\n"
	"                       nested in it; decoded guest events (built-in catalog\n"
	"                       and --catalog FILE) as instants on that track, guest\n"
	"                       function calls on a track per guest task and the\n"
	"                       running guest task on a track per guest CPU\n"
	"      --catalog FILE, --guest-symbols FILE, --kaslr-offset N\n"
	"                       as for report (docs/hypertracing.md); in CTF each\n"
	"                       decoded event is an event class of its own\n"
	"  -f, --force          with --chrome or --perfetto: replace FILE if it exists\n"
	"                       (the new file takes its place in one rename)\n"
	"      --mode MODE      the output's mode, octal (default 0600: guest arguments\n"
	"                       are not for every user), not writable by others, not\n"
	"                       executable; a CTF or LTTng directory gets MODE plus x\n"
	"                       where MODE has r\n"
	"  -V, --version        print the version\n"
	"  -h, --help           show this help\n"
	"\n"
	"%s"
	"\n"
	"See docs/exports.md for the layout of every format.\n"
	"\n"
	"EXAMPLES:\n"
	"    hypertrace-bpf convert --ctf t-ctf t.htr && babeltrace2 t-ctf\n"
	"    hypertrace-bpf convert --chrome t.json --vcpu 0 --since 2 --until 3 t.htr\n"
	"    hypertrace-bpf convert --lttng t-vm --guest-symbols kallsyms.txt guest.htr\n"
	"    hypertrace-bpf convert --perfetto t.pftrace --guest-symbols kallsyms.txt guest.htr\n";

enum { OPT_CTF = 0x200, OPT_CHROME, OPT_MODE, OPT_LTTNG, OPT_PERFETTO };
/* One getopt_long loop for the format, selection and guest-event options: their codes must not meet. */
_Static_assert((int)HT_OPT_CATALOG > (int)HT_SELECT_OPT_VM, "guest-event and selection option codes overlap");

static const struct option convert_longopts[] = {
	{ "ctf", required_argument, NULL, OPT_CTF },
	{ "chrome", required_argument, NULL, OPT_CHROME },
	{ "lttng", required_argument, NULL, OPT_LTTNG },
	{ "perfetto", required_argument, NULL, OPT_PERFETTO },
	{ "force", no_argument, NULL, 'f' },
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "version", no_argument, NULL, 'V' },
	{ "help", no_argument, NULL, 'h' },
	HT_SELECT_LONGOPTS,
	HT_DECODE_LONGOPTS,
	{ NULL, 0, NULL, 0 },
};

int ht_convert_parse(int argc, char **argv, struct ht_convert_config *cfg)
{
	char err[256];
	int opt, formats = 0;

	memset(cfg, 0, sizeof(*cfg));
	cfg->mode = HT_EXPORT_DEFAULT_MODE;
	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, ":fVh" HT_SELECT_SHORTOPTS, convert_longopts, NULL)) != -1) {
		int sel = ht_selection_option(&cfg->selection, opt, optarg, err, sizeof(err));
		if (sel < 0)
			return ht_usage_error("convert", "%s", err);
		if (sel > 0)
			continue;
		int dec = ht_decode_option("convert", opt, optarg, &cfg->decode);
		if (dec == 1)
			continue;
		if (dec)
			return dec;
		switch (opt) {
		case OPT_CTF:
		case OPT_CHROME:
		case OPT_LTTNG:
		case OPT_PERFETTO:
			if (!optarg[0])
				return ht_usage_error("convert", "%s", opt == OPT_CTF ? "--ctf needs a directory name" :
								       opt == OPT_LTTNG ? "--lttng needs a directory name" :
								       opt == OPT_PERFETTO ? "--perfetto needs a file name" :
											  "--chrome needs a file name");
			cfg->format = opt == OPT_CTF	    ? HT_CONVERT_CTF :
				      opt == OPT_LTTNG	    ? HT_CONVERT_LTTNG :
				      opt == OPT_PERFETTO ? HT_CONVERT_PERFETTO :
							    HT_CONVERT_CHROME;
			cfg->output = optarg;
			formats++;
			break;
		case 'f':
			cfg->force = true;
			break;
		case OPT_MODE:
			if (!ht_parse_mode(optarg, &cfg->mode, err, sizeof(err)))
				return ht_usage_error("convert", "%s", err);
			break;
		case 'V':
			return ht_print_version();
		case 'h':
			printf(convert_help, ht_selection_help);
			return HT_EXIT_OK;
		default:
			return ht_option_error("convert", opt, argv);
		}
	}
	if (formats == 0)
		return ht_usage_error("convert", "no format given: add --ctf DIR, --lttng DIR, --perfetto FILE or --chrome FILE.json");
	if (formats > 1)
		return ht_usage_error("convert", "one format at a time: --ctf, --lttng, --perfetto or --chrome");
	if (cfg->decode.analysis != HT_ANALYSIS_NONE)
		return ht_usage_error("convert", "--graph and --sched are report's: use 'hypertrace-bpf report --graph' or '--sched'");
	if (cfg->force && (cfg->format == HT_CONVERT_CTF || cfg->format == HT_CONVERT_LTTNG))
		return ht_usage_error("convert", "--force goes with --chrome or --perfetto: %s writes only into a new or empty directory",
				      cfg->format == HT_CONVERT_CTF ? "--ctf" : "--lttng");
	if (ht_selection_check(&cfg->selection, err, sizeof(err)))
		return ht_usage_error("convert", "%s", err);
	if (optind == argc)
		return ht_usage_error("convert", "no trace file given");
	if (optind + 1 < argc)
		return ht_usage_error("convert", "one trace file at a time, got '%s' and '%s'", argv[optind], argv[optind + 1]);
	cfg->path = argv[optind];
	return -1;
}
