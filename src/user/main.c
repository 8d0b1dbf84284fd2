// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* hypertrace-bpf: dispatch to the record, report, convert and top commands. */
#include <stdio.h>
#include <string.h>
#include "cli.h"

static const char usage[] =
	"Usage: hypertrace-bpf COMMAND [OPTIONS]\n"
	"\n"
	"Trace selected KVM hypercalls on the host: one fused record per hypercall\n"
	"(kvm_exit + kvm_hypercall + kvm_entry of one vCPU thread) with its arguments,\n"
	"vCPU and round-trip latency, written to a binary trace file.\n"
	"\n"
	"Commands:\n"
	"  record    trace hypercalls into a trace file (needs root)\n"
	"  report    summarize a trace file, or list its records (text, CSV, JSON)\n"
	"  convert   convert a trace file for other tools: CTF (babeltrace2, Trace\n"
	"            Compass), LTTng kernel traces (Trace Compass's VM analysis),\n"
	"            Perfetto's protobuf trace, Chrome trace JSON (Perfetto UI,\n"
	"            DevTools, chrome://tracing)\n"
	"  top       every VM of the host live: exits, time in the host, waiting\n"
	"            (needs root)\n"
	"\n"
	"Options:\n"
	"  -V, --version  print the version\n"
	"  -h, --help     show this help\n"
	"\n"
	"Run 'hypertrace-bpf COMMAND --help' for the options of a command.\n"
	"\n"
	"EXAMPLES:\n"
	"    sudo hypertrace-bpf record -d 10          # trace hypercall nr 1000 for 10 s\n"
	"    hypertrace-bpf report hypertrace.htr      # latency summary per vCPU and nr\n"
	"    sudo hypertrace-bpf top                   # every VM's exits, live\n";

int main(int argc, char **argv)
{
	if (argc < 2)
		return fprintf(stderr, "hypertrace-bpf: no command given: see 'hypertrace-bpf --help'\n"),
		       HT_EXIT_USAGE;
	if (!strcmp(argv[1], "record"))
		return ht_cmd_record(argc - 1, argv + 1);
	if (!strcmp(argv[1], "report"))
		return ht_cmd_report(argc - 1, argv + 1);
	if (!strcmp(argv[1], "convert"))
		return ht_cmd_convert(argc - 1, argv + 1);
	if (!strcmp(argv[1], "top"))
		return ht_cmd_top(argc - 1, argv + 1);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		fputs(usage, stdout);
		return HT_EXIT_OK;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version"))
		return ht_print_version();
	fprintf(stderr, "hypertrace-bpf: unknown command '%s': see 'hypertrace-bpf --help'\n", argv[1]);
	return HT_EXIT_USAGE;
}
