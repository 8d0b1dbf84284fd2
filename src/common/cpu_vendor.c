// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "common/cpu_vendor.h"

#include <cpuid.h>
#include <string.h>
#include "hypertrace/record.h"

void ht_cpu_vendor(char vendor[13])
{
	unsigned int eax, ebx, ecx, edx;

	memset(vendor, 0, 13);
	if (__get_cpuid(0, &eax, &ebx, &ecx, &edx)) {
		/* Leaf 0 orders the vendor string EBX, EDX, ECX. */
		memcpy(vendor + 0, &ebx, 4);
		memcpy(vendor + 4, &edx, 4);
		memcpy(vendor + 8, &ecx, 4);
	}
}

/* The vendor's hypercall instruction says which: vmcall is VMX's, vmmcall SVM's. */
int ht_vendor_isa(const char *vendor)
{
	switch (ht_vendor_insn(vendor)) {
	case HT_GUEST_INSN_VMCALL:
		return HT_ISA_VMX;
	case HT_GUEST_INSN_VMMCALL:
		return HT_ISA_SVM;
	default:
		return 0;
	}
}

int ht_host_isa(void)
{
	char vendor[13];
	int isa;

	ht_cpu_vendor(vendor);
	isa = ht_vendor_isa(vendor);
	return isa ? isa : HT_ISA_VMX;
}
