/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Interpretation of CPUID values: are we a KVM guest, which hypercall
 * instruction does this CPU vendor use, does the CPU offer hardware
 * virtualization. Pure functions over a snapshot, so tests can feed bare-metal,
 * Xen, VMware, Hyper-V and KVM values without executing CPUID.
 */
#ifndef GUEST_CPUID_INFO_H
#define GUEST_CPUID_INFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The CPUID registers the guest programs look at. */
struct cpuid_snapshot {
	uint32_t vendor_ebx, vendor_ecx, vendor_edx; /* leaf 0: "GenuineIntel" in EBX,EDX,ECX */
	uint32_t leaf1_ecx;                          /* bit 31: hypervisor present, bit 5: VMX */
	uint32_t ext1_ecx;                           /* leaf 0x80000001 ECX, bit 2: SVM */
	uint32_t hv_ebx, hv_ecx, hv_edx;             /* leaf 0x40000000: hypervisor signature */
};

#define CPUID_LEAF1_ECX_VMX (1u << 5)
#define CPUID_LEAF1_ECX_HYPERVISOR (1u << 31)
#define CPUID_EXT1_ECX_SVM (1u << 2)

/* KVM's signature at leaf 0x40000000 (EBX, ECX, EDX), NUL padded to 12 bytes. */
#define KVM_CPUID_SIGNATURE "KVMKVMKVM\0\0\0"

enum hypervisor_kind {
	HYPERVISOR_NONE,  /* hypervisor bit clear: bare metal (or a hypervisor hiding itself) */
	HYPERVISOR_OTHER, /* a hypervisor whose signature is not KVM's */
	HYPERVISOR_KVM,
};

enum hypercall_insn {
	HYPERCALL_INSN_UNKNOWN,
	HYPERCALL_INSN_VMCALL,  /* Intel VMX: 0f 01 c1 */
	HYPERCALL_INSN_VMMCALL, /* AMD SVM:   0f 01 d9 */
};

/*
 * Decides whether the hypervisor is KVM. The signature leaf is only consulted
 * when the hypervisor bit is set: on bare metal leaf 0x40000000 is not defined
 * and returns whatever the CPU returns for out-of-range leaves.
 */
enum hypervisor_kind cpuid_hypervisor_kind(const struct cpuid_snapshot *c);

/* Writes the 12-byte vendor string of leaf 0 plus a NUL into out[13]. */
void cpuid_vendor_string(const struct cpuid_snapshot *c, char out[13]);

/*
 * Writes the hypervisor signature as printable text into out[13]: trailing
 * NULs dropped, other unprintable bytes shown as '?', so it can go in a message.
 */
void cpuid_hypervisor_signature(const struct cpuid_snapshot *c, char out[13]);

/* GenuineIntel -> vmcall; AuthenticAMD and HygonGenuine -> vmmcall; else unknown. */
enum hypercall_insn cpuid_vendor_hypercall_insn(const struct cpuid_snapshot *c);

/* True if the CPU advertises VMX or SVM, i.e. KVM could use it to run a guest. */
bool cpuid_has_hardware_virtualization(const struct cpuid_snapshot *c);

/* "vmcall", "vmmcall" or "unknown". */
const char *hypercall_insn_name(enum hypercall_insn insn);

/* Parses "vmcall" or "vmmcall"; returns HYPERCALL_INSN_UNKNOWN for anything else. */
enum hypercall_insn hypercall_insn_parse(const char *name);

/* The value of --insn, as both guest programs take it: true, or false with one line in err. */
bool hypercall_insn_option(const char *arg, enum hypercall_insn *insn, char *err, size_t err_size);

/*
 * Fills a snapshot from text, for tests: "VENDOR,HYPERVISOR_BIT,SIGNATURE",
 * e.g. "GenuineIntel,1,KVMKVMKVM" or "AuthenticAMD,0," (bare metal). VENDOR
 * and SIGNATURE are up to 12 characters, NUL padded. Returns false on
 * malformed text.
 */
bool cpuid_snapshot_from_text(const char *text, struct cpuid_snapshot *c);

#endif
