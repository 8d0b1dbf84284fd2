// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "host_cpu.h"

#include <cpuid.h>
#include <string.h>
#include "hypertrace/record.h"

void ht_cpu_vendor(char vendor[13])
{
	unsigned int eax, ebx, ecx, edx;

	memset(vendor, 0, 13);
	if (__get_cpuid(0, &eax, &ebx, &ecx, &edx)) {
		memcpy(vendor + 0, &ebx, 4);
		memcpy(vendor + 4, &edx, 4);
		memcpy(vendor + 8, &ecx, 4);
	}
}

int ht_host_isa(void)
{
	char vendor[13];

	ht_cpu_vendor(vendor);
	/* Hygon builds AMD's SVM; every other x86 vendor with KVM support uses VMX. */
	if (!strcmp(vendor, "AuthenticAMD") || !strcmp(vendor, "HygonGenuine"))
		return HT_ISA_SVM;
	return HT_ISA_VMX;
}
