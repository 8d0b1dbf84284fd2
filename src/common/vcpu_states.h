/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The names of the vCPU account's states (enum ht_vcpu_state), as every
 * output says them: reports, top, metrics' state label, the exports' tracks.
 */
#ifndef HT_COMMON_VCPU_STATES_H
#define HT_COMMON_VCPU_STATES_H

#include "hypertrace/record.h"

extern const char *const ht_vcpu_state_names[HT_VCPU_NSTATES];

#endif
