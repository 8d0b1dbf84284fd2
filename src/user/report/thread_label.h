/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* How every --dump line names a VM thread: "pid P (vm NAME) tid T (THREAD)". */
#ifndef HT_REPORT_THREAD_LABEL_H
#define HT_REPORT_THREAD_LABEL_H

#include <stdio.h>
#include "hypertrace/trace_file.h"

/* Names a VM owner chose are escaped, never raw on the terminal; id may be NULL (no IDENTITY block). */
void ht_print_thread_label(FILE *out, __u32 pid, __u32 tid, const struct ht_identity *id);

#endif
