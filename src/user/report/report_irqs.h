/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `report --irqs`: the interrupts KVM delivered to each vCPU thread, acceptance to guest running (record --exits). */
#ifndef HT_REPORT_IRQS_H
#define HT_REPORT_IRQS_H

#include "exits/exit_table.h"
#include "report/report_options.h"
#include "tracefile/trace_reader.h"

/*
 * The threads of window (a time window of the exit statistics) as text
 * (per VM, rows per vCPU thread and class), CSV or JSON lines (a row per
 * thread). 0 or -ENOMEM.
 */
int ht_report_irqs(enum ht_report_mode mode, const struct ht_exit_table *window, struct ht_reader *reader);

#endif
