/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Guest scheduling summary from sched_switch events (nr 1101): per vCPU,
 * which guest tasks ran there, how many times and for how long (host time
 * from being switched in to being switched out); then per task, over all
 * vCPUs. A switch whose prev_tid is not the task the previous switch on that
 * vCPU put in means switches are missing from the trace (recording started
 * late, or events lost): counted, never guessed across. A task's run ends at
 * its switch out, at the module's unload event (hypertrace_module state 0:
 * nothing is known after it), or at the end of the recording.
 */
#ifndef HT_DECODE_SCHED_SUMMARY_H
#define HT_DECODE_SCHED_SUMMARY_H

#include <stdint.h>
#include <stdio.h>
#include "hypertrace/record.h"

struct ht_sched;

struct ht_sched *ht_sched_new(void);
/* Takes sched_switch (and sched_wakeup, for task names) records, ignores others. -1: out of memory. */
int ht_sched_observe(struct ht_sched *s, const struct ht_record *r);

struct ht_sched_stats {
	uint64_t switches;
	uint64_t gaps;      /* prev_tid differed from the vCPU's last next_tid */
	unsigned int vcpus, tasks;
};

/* end_ns: the end of the recording (the last task on each vCPU ran until then). */
void ht_sched_print(struct ht_sched *s, FILE *out, uint64_t start_ns, uint64_t end_ns,
		    struct ht_sched_stats *stats);
void ht_sched_free(struct ht_sched *s);

#endif
