/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `hypertrace-bpf report`: its configuration, parsed from the command line. */
#ifndef HT_REPORT_OPTIONS_H
#define HT_REPORT_OPTIONS_H

#include "decode/decoder.h"
#include "hist/latency_hist.h"
#include "reading/selection.h"

/* The trace clock of the ftrace text --map reads: boottrace's markers, else 'local'; or as --map-clock names it. */
enum ht_map_clock { HT_MAP_CLOCK_AUTO, HT_MAP_CLOCK_LOCAL, HT_MAP_CLOCK_MONO };

enum ht_report_mode { HT_REPORT_SUMMARY, HT_REPORT_DUMP, HT_REPORT_CSV, HT_REPORT_JSON, HT_REPORT_HIST };

struct ht_report_config {
	enum ht_report_mode mode;
	unsigned int series;            /* --hist: HT_HV_SERIES() mask */
	enum ht_lat_group_by group_by;  /* --hist: --per-vcpu / --per-vm */
	struct ht_selection selection;
	struct ht_decode_config decode; /* guest events: catalogs, symbols, --graph/--sched */
	bool exits;                     /* --exits: the exit statistics (text, --csv, --json) */
	bool vcpu_switches;             /* --vcpu-switches: the switch records of vCPU threads instead */
	bool vcpu_time;                 /* --vcpu-time: where each vCPU thread's time went (text, --csv, --json) */
	bool halts;                     /* --halts: each vCPU thread's halts and halt polling (with vcpu_time's rules) */
	bool irqs;                      /* --irqs: the interrupts delivered to each vCPU thread (with vcpu_time's rules) */
	bool latency;                   /* --latency: the wake-up records of halted vCPUs (text, --csv) */
	size_t worst;                   /* --worst N: with --latency, the longest N wake-ups listed (default 10) */
	bool worst_given;
	bool causes;                    /* --causes: the causes of the exits (text, --csv, --json); sets exits */
	bool boot;                      /* --boot: the boots of VMs recorded with record --boot (text, --csv) */
	bool initcalls;                 /* --initcalls: the guest's initcalls from its replayed trace (text, --csv) */
	bool clock;                     /* --clock: the guest clocks on the host's, from the module's clock pairs (text, --csv) */
	const char *clock_map;          /* --clock --map FILE: the guest's ftrace or dmesg text, its times put on the host's clock */
	const char *clock_map_ctf;      /* --clock --map-ctf FILE: a guest CTF trace's metadata, its clocks put on the host's */
	enum ht_map_clock map_clock;    /* --map-clock: which guest clock the ftrace text's times are */
	const char *path;
};

/* Parses argv (argv[0] is "report"). Returns -1 to go on, else the exit status. */
int ht_report_parse(int argc, char **argv, struct ht_report_config *cfg);

#endif
