/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which records of a trace file a report mode or an export looks at: VM
 * process, vCPU, hypercall nr and a time window. Every reader of a trace file
 * takes the same options and the same meaning from here.
 */
#ifndef HT_SELECTION_H
#define HT_SELECTION_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "hypertrace/trace_file.h"

#define HT_SELECT_MAX_NR 64

/* --since/--until: seconds from the recording start, or a wall-clock time (UTC). */
struct ht_time_bound {
	bool on;
	bool wallclock;    /* realtime_ns is set, else offset_ns */
	int64_t offset_ns; /* from the recording start */
	int64_t realtime_ns;
};

struct ht_selection {
	const char *vm_name; /* QEMU's -name, from the file's IDENTITY blocks; NULL: any */
	bool pid_on;
	uint32_t pid;
	bool vcpu_on;
	uint16_t vcpu;
	unsigned int nr_count;
	uint32_t nr[HT_SELECT_MAX_NR];
	struct ht_time_bound since, until;
	/* Resolved against a file's clock anchor by ht_selection_resolve(). */
	uint64_t from_ns, to_ns; /* CLOCK_MONOTONIC, inclusive */
};

/* getopt_long codes of the selection options (long-only ones are above 255). */
enum {
	HT_SELECT_OPT_PID = 'p',
	HT_SELECT_OPT_NR = 'n',
	HT_SELECT_OPT_VCPU = 0x300,
	HT_SELECT_OPT_SINCE,
	HT_SELECT_OPT_UNTIL,
	HT_SELECT_OPT_VM,
};

/* The short options ("p:n:") and long options to add to a command's own. */
#define HT_SELECT_SHORTOPTS "p:n:"
#define HT_SELECT_LONGOPTS                                              \
	{ "pid", required_argument, NULL, HT_SELECT_OPT_PID },          \
	{ "nr", required_argument, NULL, HT_SELECT_OPT_NR },            \
	{ "vcpu", required_argument, NULL, HT_SELECT_OPT_VCPU },        \
	{ "since", required_argument, NULL, HT_SELECT_OPT_SINCE },      \
	{ "until", required_argument, NULL, HT_SELECT_OPT_UNTIL },      \
	{ "vm", required_argument, NULL, HT_SELECT_OPT_VM }

/* The help text of those options, for a command's --help. */
extern const char ht_selection_help[];

/*
 * Handles one selection option. Returns 1 if opt was one (err untouched on
 * success), 0 if it was not a selection option, -1 with a one-line message in
 * err if its value is invalid.
 */
int ht_selection_option(struct ht_selection *s, int opt, const char *arg, char *err, size_t errlen);
/* Checks the options together (e.g. --since after --until); 0, or -1 with err. */
int ht_selection_check(const struct ht_selection *s, char *err, size_t errlen);
/*
 * Turns the time window into the file's monotonic clock. 0, or -1 with a
 * one-line message in err if the window is empty (a wall-clock --since after
 * a --until in seconds, or the other way round).
 */
int ht_selection_resolve(struct ht_selection *s, const struct ht_file_header *h, char *err, size_t errlen);
bool ht_selection_active(const struct ht_selection *s);
/*
 * Whether r is selected. names: the struct ht_reader r was read from, which
 * knows the VM names of its processes (needed for --vm; may be NULL otherwise).
 */
bool ht_selection_match(const struct ht_selection *s, const struct ht_record *r, void *names);
/*
 * Whether the VM process pid is selected (-p, --vm), whatever the vCPU, nr
 * and time: what selects a VM's boot, which is the whole VM's.
 */
bool ht_selection_match_vm(const struct ht_selection *s, uint32_t pid, void *names);
/* Whether a switch of a vCPU thread is selected: as a record, but --nr (switches have none) does not apply. */
bool ht_selection_match_switch(const struct ht_selection *s, const struct ht_vcpu_switch *sw, void *names);
/* A wake-up of a halted vCPU (record --wakeups): its VM, vCPU and end (the guest running). */
bool ht_selection_match_wakeup(const struct ht_selection *s, const struct ht_vcpu_wakeup *w, void *names);
/* An interrupt delivery (record --wakeups): its VM, vCPU and end, as a wake-up's. */
bool ht_selection_match_irq(const struct ht_selection *s, const struct ht_vcpu_irq *d, void *names);
/* "pid 4242, vcpu 1, nr 1000,1001, since +1.5 s" for reports. */
void ht_selection_describe(const struct ht_selection *s, char *buf, size_t len);

#endif
