/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `report --vcpu-switches`: the switches of vCPU threads in a trace file (record --vcpu-sched). */
#ifndef HT_REPORT_SWITCHES_H
#define HT_REPORT_SWITCHES_H

#include "report/report_options.h"

/* Prints the selected ones for cfg (mode: --dump, --csv or --json); the exit status. */
int ht_report_switches(struct ht_report_config *cfg);

#endif
