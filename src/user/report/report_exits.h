/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `report --exits`: the exit statistics of a trace file (record --exits). */
#ifndef HT_REPORT_EXITS_H
#define HT_REPORT_EXITS_H

#include "report/report_options.h"

/* Prints them for cfg (mode: summary text, CSV or JSON lines); the exit status. */
int ht_report_exits(struct ht_report_config *cfg);

#endif
