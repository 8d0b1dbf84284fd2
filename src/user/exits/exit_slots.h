/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The log2 slots of the times in the host (HT_EXIT_SLOTS, hypertrace/record.h)
 * as times: what the series (exit_table.c) and the causes (exit_causes.c)
 * both bucket by. Pure.
 */
#ifndef HT_EXIT_SLOTS_H
#define HT_EXIT_SLOTS_H

#include <stdint.h>

/* Bucket bounds of a slot: [low, high] ns; the last slot has no upper bound (UINT64_MAX). */
uint64_t ht_exit_slot_low(unsigned int slot);
uint64_t ht_exit_slot_high(unsigned int slot);

#endif
