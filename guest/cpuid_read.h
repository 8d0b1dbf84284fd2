/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Reads the CPUID values of struct cpuid_snapshot from the running CPU. */
#ifndef GUEST_CPUID_READ_H
#define GUEST_CPUID_READ_H

#include "cpuid_info.h"

void cpuid_snapshot_read(struct cpuid_snapshot *c);

#endif
