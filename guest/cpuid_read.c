// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "cpuid_read.h"

#include <cpuid.h>
#include <string.h>

void cpuid_snapshot_read(struct cpuid_snapshot *c)
{
	unsigned int eax, ebx, ecx, edx, max_ext;

	memset(c, 0, sizeof(*c));
	__cpuid(0, eax, ebx, ecx, edx);
	c->vendor_ebx = ebx;
	c->vendor_ecx = ecx;
	c->vendor_edx = edx;
	__cpuid(1, eax, ebx, ecx, edx);
	c->leaf1_ecx = ecx;
	__cpuid(0x80000000, max_ext, ebx, ecx, edx);
	if (max_ext >= 0x80000001) {
		__cpuid(0x80000001, eax, ebx, ecx, edx);
		c->ext1_ecx = ecx;
	}
	/* Leaf 0x40000000 only means something when a hypervisor says it is there. */
	if (c->leaf1_ecx & CPUID_LEAF1_ECX_HYPERVISOR) {
		__cpuid(0x40000000, eax, ebx, ecx, edx);
		c->hv_ebx = ebx;
		c->hv_ecx = ecx;
		c->hv_edx = edx;
	}
}
