/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `hypertrace-bpf record`: its configuration, parsed from the command line. */
#ifndef HT_RECORD_OPTIONS_H
#define HT_RECORD_OPTIONS_H

#include <stdbool.h>
#include "record/tracer.h"
#include "hist/hist_view.h"
#include "metrics/metrics_http.h"

#define HT_DEFAULT_OUTPUT "hypertrace.htr"

struct ht_record_config {
	const char *output;
	bool force;
	unsigned int file_mode; /* the trace file's mode (--mode; default 0600) */
	bool mode_given;
	struct ht_filters filters;
	double duration_s;    /* 0: until Ctrl-C (or CMD exits) */
	unsigned long ringbuf_bytes;
	bool verbose;
	char **command;       /* NULL-terminated argv of CMD, or NULL */
	/* Live histograms */
	bool quiet;           /* no live display */
	double interval_s;    /* seconds between frames */
	unsigned int intervals; /* stop after this many frames; 0: no limit */
	bool timestamp;       /* -T */
	unsigned int series;  /* HT_HV_SERIES() mask */
	enum ht_agg_group_by group_by;
	bool no_file;         /* aggregate-only: histograms kept in BPF, no trace file */
	bool output_given;
	bool compress;        /* record blocks as HT_ENCODING_DELTA_ZLIB */
	bool bpf_stats;       /* print each program's run count and cost at the end */
	bool metrics;         /* serve Prometheus metrics on metrics_addr */
	struct ht_listen_addr metrics_addr;
	double metrics_grace_s;   /* --metrics-grace: series of ended VMs kept this long; 0: default */
	const char *vm_name;  /* --vm: the QEMU guest name, resolved to -p at start */
	bool vm_uid_on;       /* --vm-user: only the VM's processes this user runs */
	uid_t vm_uid;
	bool exits;           /* --exits: every exit's time in the host, vCPU waiting */
	bool vcpu_sched;      /* --vcpu-sched: each switch of a vCPU thread, in the file (implies exits) */
	bool wakeups;         /* --wakeups: each wake-up of a halted vCPU thread, in the file (implies exits) */
	bool boot;            /* --boot: each exit of a VM that starts, in the file (implies exits) */
	double boot_window_s; /* --boot-window; 0: HT_BOOT_WINDOW_DEFAULT_S */
	unsigned int vcpu_threads; /* --vcpu-threads; 0: by the host's CPUs (ht_vcpu_threads_for) */
	bool metrics_per_vcpu; /* --metrics-per-vcpu: the exit histograms also by vCPU */
};

/* Parses argv (argv[0] is "record"). Returns -1 to go on, else the exit status. */
int ht_record_parse(int argc, char **argv, struct ht_record_config *cfg);

#endif
