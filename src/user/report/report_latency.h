/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `report --latency`: the wake-ups of halted vCPUs in a trace file, one by one (record --wakeups). */
#ifndef HT_REPORT_LATENCY_H
#define HT_REPORT_LATENCY_H

#include "report/report_options.h"

/* Prints the selected ones for cfg (text, or --csv: one row each); the exit status. */
int ht_report_latency(struct ht_report_config *cfg);

#endif
