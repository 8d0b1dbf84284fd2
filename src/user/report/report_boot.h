/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef HT_REPORT_BOOT_H
#define HT_REPORT_BOOT_H

#include "report/report_options.h"

/* report --boot: the boots in cfg->path (text or --csv). The exit status. */
int ht_report_boot(struct ht_report_config *cfg);

#endif
