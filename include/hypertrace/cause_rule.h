/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which kinds of cause an exit can have (record --exits): the rule by which
 * a cause tracepoint seen while an exit is open becomes that exit's cause,
 * or is only counted as seen during it (HT_CNT_EXIT_CAUSE_NOT_ITS). Shared
 * by the BPF programs, which apply it, and user space, which explains the
 * rows of files recorded before it. docs/design.md gives KVM's code behind
 * each line.
 *
 * KVM fires the cause tracepoints for its own lookups too: kvm_cpuid from
 * the instruction emulator's vendor checks (the string-instruction quirk of
 * x86_emulate_insn in every kernel, and 6.1's SYSCALL/SYSENTER checks), and
 * kvm_mmio from the memory operand of an emulated string I/O instruction.
 * An exit's cause is what the guest's exiting instruction asked for, so
 * each reason takes only the kinds its handler's instruction can ask for.
 */
#ifndef HYPERTRACE_CAUSE_RULE_H
#define HYPERTRACE_CAUSE_RULE_H

#include "hypertrace/record.h"

/* VMX basic exit reasons (arch/x86/include/uapi/asm/vmx.h) the rule names. */
#define HT_VMX_EXCEPTION_NMI 0
#define HT_VMX_CPUID 10
#define HT_VMX_IO_INSTRUCTION 30
#define HT_VMX_MSR_READ 31
#define HT_VMX_MSR_WRITE 32
#define HT_VMX_INVALID_STATE 33
#define HT_VMX_APIC_ACCESS 44
#define HT_VMX_GDTR_IDTR 46
#define HT_VMX_LDTR_TR 47
#define HT_VMX_EPT_VIOLATION 48
#define HT_VMX_EPT_MISCONFIG 49
#define HT_VMX_TDCALL 77
/* SVM exit codes (arch/x86/include/uapi/asm/svm.h). */
#define HT_SVM_EXCP_BASE 0x40 /* 0x40 + vector: an intercepted exception */
#define HT_SVM_LAST_EXCP 0x5f
#define HT_SVM_CPUID 0x72
#define HT_SVM_IOIO 0x7b
#define HT_SVM_MSR 0x7c
#define HT_SVM_NPF 0x400
#define HT_SVM_AVIC_UNACCELERATED_ACCESS 0x402
#define HT_SVM_VMGEXIT 0x403

#define HT_CAUSE_BIT(kind) (1u << (kind))
/* An exception exit: KVM emulates the instruction (#UD, #GP's VMware backdoor, #PF without NPT/EPT). */
#define HT_CAUSES_EMULATED (HT_CAUSE_BIT(HT_CAUSE_PIO) | HT_CAUSE_BIT(HT_CAUSE_MMIO) | HT_CAUSE_BIT(HT_CAUSE_MSR))
/* A request the guest makes through a protocol (SEV-ES's GHCB, TDX's TDVMCALL): any of them. */
#define HT_CAUSES_ANY                                                                                              \
	(HT_CAUSES_EMULATED | HT_CAUSE_BIT(HT_CAUSE_CPUID) | HT_CAUSE_BIT(HT_CAUSE_HYPERCALL))

/*
 * The kinds (HT_CAUSE_BIT of enum ht_cause_kind) that can be the cause of an
 * exit of reason on isa (VMX: the basic reason, its low 16 bits). 0: none,
 * as for an external interrupt or a halt.
 */
static inline __attribute__((always_inline)) __u32 ht_exit_cause_kinds(__u32 isa, __u32 reason)
{
	if (isa == HT_ISA_VMX) {
		switch (reason & HT_VMX_EXIT_REASON_MASK) {
		case HT_VMX_IO_INSTRUCTION:
			return HT_CAUSE_BIT(HT_CAUSE_PIO);
		case HT_VMX_EPT_VIOLATION: case HT_VMX_EPT_MISCONFIG: case HT_VMX_APIC_ACCESS:
		case HT_VMX_GDTR_IDTR: case HT_VMX_LDTR_TR:
			return HT_CAUSE_BIT(HT_CAUSE_MMIO);
		case HT_VMX_MSR_READ: case HT_VMX_MSR_WRITE:
			return HT_CAUSE_BIT(HT_CAUSE_MSR);
		case HT_VMX_CPUID:
			return HT_CAUSE_BIT(HT_CAUSE_CPUID);
		case HT_VMX_EXIT_REASON_VMCALL:
			return HT_CAUSE_BIT(HT_CAUSE_HYPERCALL);
		case HT_VMX_EXCEPTION_NMI:
			return HT_CAUSES_EMULATED;
		case HT_VMX_INVALID_STATE: /* handle_invalid_guest_state emulates whatever the guest runs */
			return HT_CAUSES_EMULATED | HT_CAUSE_BIT(HT_CAUSE_CPUID);
		case HT_VMX_TDCALL:
			return HT_CAUSES_ANY;
		}
		return 0;
	}
	switch (reason) {
	case HT_SVM_IOIO:
		return HT_CAUSE_BIT(HT_CAUSE_PIO);
	case HT_SVM_NPF: case HT_SVM_AVIC_UNACCELERATED_ACCESS:
		return HT_CAUSE_BIT(HT_CAUSE_MMIO);
	case HT_SVM_MSR:
		return HT_CAUSE_BIT(HT_CAUSE_MSR);
	case HT_SVM_CPUID:
		return HT_CAUSE_BIT(HT_CAUSE_CPUID);
	case HT_SVM_EXIT_CODE_VMMCALL:
		return HT_CAUSE_BIT(HT_CAUSE_HYPERCALL);
	case HT_SVM_VMGEXIT:
		return HT_CAUSES_ANY;
	}
	return reason - HT_SVM_EXCP_BASE <= HT_SVM_LAST_EXCP - HT_SVM_EXCP_BASE ? HT_CAUSES_EMULATED : 0;
}

/* Whether a cause of kind can be the cause of an exit of reason on isa. */
static inline __attribute__((always_inline)) int ht_exit_cause_fits(__u32 isa, __u32 reason, __u32 kind)
{
	return kind < 32 && (ht_exit_cause_kinds(isa, reason) >> kind) & 1;
}

#endif /* HYPERTRACE_CAUSE_RULE_H */
