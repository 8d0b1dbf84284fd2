/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the host (BPF programs, `record`) and the guest (guest/hypercall,
 * minivm, the guest module) must agree on, written once: the hypercall nr
 * traced by default, and which hypercall instruction each CPU vendor builds
 * (which is also which hardware virtualization KVM uses there).
 *
 * Self-contained: it includes nothing and holds no code that runs on its
 * own, so the BPF programs, host and guest user space and a guest kernel
 * module (DKMS ships it beside guest.h) all include it.
 */
#ifndef HYPERTRACE_HYPERCALL_ABI_H
#define HYPERTRACE_HYPERCALL_ABI_H

/* The hypercall nr KVM leaves unused and the project traces by default (guest.h: the nr map). */
#define HT_DEFAULT_HYPERCALL_NR 1000u

/*
 * The project's own guest events (guest.h: the nr map). 1100..1149 are the
 * guest kernel's: only it may send them, from a kernel address (the upper
 * half of the address space: bit 63 of the guest RIP). KVM traces a
 * hypercall before its privilege check, so guest user space can issue these
 * nr too; the BPF programs drop such a forged one (counted) and the host
 * never decodes one. 1150..1199 are sent by a guest program (guest/boottrace
 * replays the guest's boot-time trace): any guest process can send them, and
 * the host treats what they carry as the guest's word, as any marker.
 */
#define HT_GUEST_NR_PROJECT_FIRST 1100u
#define HT_GUEST_NR_KERNEL_LAST 1149u
#define HT_GUEST_NR_PROJECT_LAST 1199u
#define HT_GUEST_KERNEL_HALF_BIT 63

/* The hypercall instruction of the CPU vendor; UNKNOWN until probed. */
enum ht_guest_insn {
	HT_GUEST_INSN_UNKNOWN = 0,
	HT_GUEST_INSN_VMCALL,  /* Intel VMX: 0f 01 c1 */
	HT_GUEST_INSN_VMMCALL, /* AMD/Hygon SVM: 0f 01 d9 */
};

#ifndef __bpf__ /* the BPF programs need the constants only */
/*
 * The instruction for a CPUID vendor string (leaf 0's EBX, EDX, ECX, 12
 * characters, NUL-terminated), UNKNOWN for a vendor not known to run KVM.
 * Pure, so it can be tested with any vendor's string.
 */
static inline enum ht_guest_insn ht_vendor_insn(const char *vendor)
{
	static const struct {
		char name[13];
		enum ht_guest_insn insn;
	} vendors[] = {
		{ "GenuineIntel", HT_GUEST_INSN_VMCALL },
		{ "AuthenticAMD", HT_GUEST_INSN_VMMCALL },
		/* Hygon CPUs are AMD Zen derivatives with SVM. */
		{ "HygonGenuine", HT_GUEST_INSN_VMMCALL },
	};

	for (unsigned int i = 0; i < sizeof(vendors) / sizeof(vendors[0]); i++) {
		unsigned int j = 0;

		/* Up to and with the NUL: equal strings, as strcmp would say. */
		while (j < sizeof(vendors[i].name) && vendor[j] == vendors[i].name[j] && vendor[j])
			j++;
		if (j == sizeof(vendors[i].name) - 1 && !vendor[j])
			return vendors[i].insn;
	}
	return HT_GUEST_INSN_UNKNOWN;
}
#endif

#endif /* HYPERTRACE_HYPERCALL_ABI_H */
