/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef HT_REPORT_CLOCK_H
#define HT_REPORT_CLOCK_H

#include "report/report_options.h"

/* report --clock: each VM's guest clocks on the host's clock (text or --csv). The exit status. */
int ht_report_clock(struct ht_report_config *cfg);

#endif
