/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Guest events in the Chrome trace JSON (convert --chrome with a decoder):
 * besides the hypercall slices on the vCPU thread's track,
 *   - every decoded event is an instant event ("ph":"i") on that track,
 *     named by the event, with its fields as args;
 *   - func_entry/func_exit open and close slices ("B"/"E") named by the
 *     (symbolized) function on a track per guest task, in a process
 *     "guest tasks of VM P" (pid 0x40000000 + P, tid = the guest tid);
 *   - sched_switch closes the running task's slice and opens the next one's
 *     on a track per guest CPU, in a process "guest CPUs of VM P" (pid
 *     0x20000000 + P, tid = the guest CPU), so the viewers show which guest
 *     task ran where, on the host's clock.
 */
#ifndef HT_CHROME_GUEST_H
#define HT_CHROME_GUEST_H

#include <stdio.h>
#include "decode/decoder.h"

#define HT_CHROME_GUEST_TASKS_PID 0x40000000u
#define HT_CHROME_GUEST_CPUS_PID 0x20000000u

struct ht_chrome_guest;

/* The writer's separator between events: called before each event written. */
typedef void (*ht_chrome_sep_fn)(void *arg);

struct ht_chrome_guest *ht_chrome_guest_new(const struct ht_decoder *dec);
/* The events of r, at ts (µs text, as the hypercall slice's). 0 or -ENOMEM. */
int ht_chrome_guest_add(struct ht_chrome_guest *g, FILE *f, ht_chrome_sep_fn sep, void *arg,
			const struct ht_record *r, const char *ts);
/* Ends the guest CPU slices still open, at ts. */
void ht_chrome_guest_finish(struct ht_chrome_guest *g, FILE *f, ht_chrome_sep_fn sep, void *arg,
			    const char *ts);
void ht_chrome_guest_free(struct ht_chrome_guest *g);

#endif
