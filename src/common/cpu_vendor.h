/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which hardware virtualization a CPU vendor builds, for the host (which
 * kvm_exit program to load, which module to name) and the guest (which
 * hypercall instruction to issue) alike.
 */
#ifndef HT_COMMON_CPU_VENDOR_H
#define HT_COMMON_CPU_VENDOR_H

/* The CPUID vendor string of this CPU, e.g. "GenuineIntel", "AuthenticAMD"; "" if unknown. */
void ht_cpu_vendor(char vendor[13]);
/* HT_ISA_SVM (AMD, Hygon), HT_ISA_VMX (Intel), or 0 for a vendor not known to run KVM. */
int ht_vendor_isa(const char *vendor);
/*
 * The hardware virtualization KVM uses on this host: ht_vendor_isa of this
 * CPU, with VMX for an unknown vendor (the x86 vendors other than AMD's
 * lineage that KVM supports, e.g. Centaur/Zhaoxin, build VMX).
 */
int ht_host_isa(void);

#endif
