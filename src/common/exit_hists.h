/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Sums of the exit histograms of include/hypertrace/record.h, each number
 * saturating (only a crafted file gets there), for every stage that adds
 * them: the exit table's groups, the trace reader's restarted keys.
 */
#ifndef HT_COMMON_EXIT_HISTS_H
#define HT_COMMON_EXIT_HISTS_H

#include "hypertrace/record.h"

/* sum += h; min and max over both (h's only where it counted exits). */
void ht_exit_hist_add(struct ht_exit_hist *sum, const struct ht_exit_hist *h);
/* sum += h. */
void ht_exit_cause_hist_add(struct ht_exit_cause_hist *sum, const struct ht_exit_cause_hist *h);

#endif
