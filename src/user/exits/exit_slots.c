// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "exits/exit_slots.h"

#include "hypertrace/record.h"

uint64_t ht_exit_slot_low(unsigned int slot)
{
	return slot ? 1ull << slot : 0;
}

uint64_t ht_exit_slot_high(unsigned int slot)
{
	return slot >= HT_EXIT_SLOTS - 1 ? UINT64_MAX : (1ull << (slot + 1)) - 1;
}
