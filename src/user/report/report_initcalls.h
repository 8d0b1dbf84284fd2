/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef HT_REPORT_INITCALLS_H
#define HT_REPORT_INITCALLS_H

#include <stdint.h>
#include <stdio.h>
#include "boot/initcalls.h"
#include "decode/guest_trace.h"
#include "report/report_options.h"

/* report --initcalls: each VM's initcall levels and initcalls from its replayed trace (text or --csv). The exit status. */
int ht_report_initcalls(struct ht_report_config *cfg);

/*
 * The text of one VM's replayed trace: its clock fit, its levels and its
 * slowest initcalls, with starts in seconds from origin_ns (host clock) and
 * indented by indent. Also report --boot's.
 */
void ht_print_initcalls(FILE *out, const struct ht_guest_trace *g, const struct ht_initcalls *c, uint64_t origin_ns,
			const char *origin_name, const char *indent);

#endif
