/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `hypertrace-bpf top`'s loop, given a tracer loaded with --exits: sample
 * every interval, draw the frame full-screen on a terminal (keys: q, v, r,
 * s) or as plain repeated tables in batch mode, and restore the terminal
 * however it ends. The command (top_cmd.c) and its terminal test driver
 * share it.
 */
#ifndef HT_TOP_RUN_H
#define HT_TOP_RUN_H

#include <stdbool.h>
#include "record/tracer.h"
#include "record/vm_follower.h"
#include "top/top_view.h"

struct ht_top_opts {
	double interval_s;       /* -d */
	unsigned int iterations; /* -n: frames before it ends; 0: until q or a signal */
	bool batch;              /* -b, or stdout is not a terminal */
	enum ht_top_sort sort;   /* -o */
	bool vcpus, reasons;     /* rows per vCPU / per reason from the start */
	const char *proc;        /* "/proc" */
	const struct ht_filters *filters; /* -p: only that VM's vCPU threads; NULL: all */
	struct ht_vm_follower *follow;    /* --vm NAME: its processes as they come and go; NULL: none */
};

/* Runs until q, a signal, or the iterations; the exit status. */
int ht_top_run(const struct ht_top_opts *o, struct ht_tracer *t);

#endif
