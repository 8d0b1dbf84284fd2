/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef HT_REPORT_CLOCK_H
#define HT_REPORT_CLOCK_H

#include <stdio.h>
#include "decode/clock_fit.h"
#include "report/report_options.h"

/* report --clock: each VM's guest clocks on the host's clock (text or --csv). The exit status. */
int ht_report_clock(struct ht_report_config *cfg);

/*
 * Where fit's guest clock stepped against the host's (a VM paused, its
 * clock set): one line, then one per side with its line; nothing if it
 * never did. Each line begins with indent.
 */
void ht_print_clock_steps(FILE *out, const struct ht_clock_fit *fit, const char *indent);

#endif
