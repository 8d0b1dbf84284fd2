/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The verdict on how reading a trace file ended, the same for every command
 * that reads one (report, convert).
 */
#ifndef HT_READ_OUTCOME_H
#define HT_READ_OUTCOME_H

#include "tracefile/trace_reader.h"

/*
 * After reading PATH to its end: a damaged file is an error (exit 1, one line
 * with where reading stopped), a file without trailer a warning. The status.
 */
int ht_report_read_outcome(const char *path, const struct ht_read_status *st);

#endif
