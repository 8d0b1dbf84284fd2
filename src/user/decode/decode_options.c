// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "decode/decode_options.h"

#include <getopt.h>
#include "cli.h"
#include "common/parse_number.h"

const char ht_decode_help[] =
	"Guest events (hypercalls of include/hypertrace/guest.h and user catalogs):\n"
	"      --catalog FILE        more events: 'NR NAME FIELD=aN[LO-HI][:TYPE]...' lines\n"
	"                            (docs/hypertracing.md); repeat for up to 8 files\n"
	"      --guest-symbols FILE  the guest kernel's System.map or a copy of its\n"
	"                            /proc/kallsyms: addresses and RIPs become name+0xoff\n"
	"      --kaslr-offset N      run-time minus file addresses, negative if lower\n"
	"                            (-0xde00000); default: found from the guest\n"
	"                            module's hypertrace_module event\n"
	"      --graph               guest function graph (func_entry/func_exit), per vCPU\n"
	"      --sched               guest scheduling summary (sched_switch), per vCPU\n"
	"  Decoded events add ' => NAME: field=value...' to --dump lines, 'event,fields,\n"
	"  rip_sym,rip_module' columns to --csv and \"event\"/\"fields\" members to --json.\n";

int ht_decode_option(const char *cmd, int opt, const char *arg, struct ht_decode_config *cfg)
{
	switch (opt) {
	case HT_OPT_CATALOG:
		if (cfg->ncatalogs == HT_DECODE_MAX_CATALOGS)
			return ht_usage_error(cmd, "too many --catalog: at most %d files", HT_DECODE_MAX_CATALOGS);
		cfg->catalogs[cfg->ncatalogs++] = arg;
		return 1;
	case HT_OPT_GUEST_SYMBOLS:
		if (cfg->symbols)
			return ht_usage_error(cmd, "--guest-symbols given twice: one guest kernel at a time");
		cfg->symbols = arg;
		return 1;
	case HT_OPT_KASLR_OFFSET:
		/* Negative when the run-time addresses are below the file's (another boot's kallsyms): mod 2^64. */
		if (!ht_parse_u64(arg[0] == '-' ? arg + 1 : arg, 0, UINT64_MAX, &cfg->offset) || (arg[0] == '-' && arg[1] == '-'))
			return ht_usage_error(cmd, "invalid --kaslr-offset '%s': expected an integer, e.g. 0x1a000000 or -0xde00000", arg);
		if (arg[0] == '-')
			cfg->offset = 0 - cfg->offset;
		cfg->offset_given = true;
		return 1;
	case HT_OPT_GRAPH:
	case HT_OPT_SCHED:
		if (cfg->analysis != HT_ANALYSIS_NONE)
			return ht_usage_error(cmd, "--graph and --sched exclude each other");
		cfg->analysis = opt == HT_OPT_GRAPH ? HT_ANALYSIS_GRAPH : HT_ANALYSIS_SCHED;
		return 1;
	default:
		return 0;
	}
}
