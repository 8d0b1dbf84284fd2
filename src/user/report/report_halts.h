/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `report --halts`: each vCPU thread's halts in KVM and its halt polling (record --exits). */
#ifndef HT_REPORT_HALTS_H
#define HT_REPORT_HALTS_H

#include "exits/exit_table.h"
#include "report/report_options.h"
#include "tracefile/trace_reader.h"

/*
 * The threads of window (a time window of the exit statistics) as text
 * (per VM, a row per vCPU thread), CSV or JSON lines (a row per thread).
 * 0 or -ENOMEM.
 */
int ht_report_halts(enum ht_report_mode mode, const struct ht_exit_table *window, struct ht_reader *reader);

#endif
