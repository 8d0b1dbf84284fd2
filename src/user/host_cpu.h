/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What the host CPU is, for choosing the KVM flavour and naming it in messages and files. */
#ifndef HT_HOST_CPU_H
#define HT_HOST_CPU_H

/* The CPUID vendor string, e.g. "GenuineIntel", "AuthenticAMD"; "" if unknown. */
void ht_cpu_vendor(char vendor[13]);
/* The hardware virtualization KVM uses here, by vendor: HT_ISA_SVM (AMD, Hygon) or HT_ISA_VMX. */
int ht_host_isa(void);

#endif
