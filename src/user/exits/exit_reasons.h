/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Exit reason names, as the kernel prints them in kvm:kvm_exit: the tables
 * VMX_EXIT_REASONS (asm/vmx.h) and SVM_EXIT_REASONS (asm/svm.h) of the
 * kernel's UAPI headers, compiled in from the headers installed at build
 * time (linux-libc-dev), never written by hand.
 */
#ifndef HT_EXIT_REASONS_H
#define HT_EXIT_REASONS_H

#include <stddef.h>
#include <stdint.h>

struct ht_exit_reason {
	uint32_t code; /* VMX: basic exit reason; SVM: exit code (as kvm_exit's 32-bit field holds it) */
	const char *name;
};

/* The table of an ISA (HT_ISA_VMX or HT_ISA_SVM); *n entries. NULL for another ISA. */
const struct ht_exit_reason *ht_exit_reasons(unsigned int isa, size_t *n);
/* The kernel's name of a reason, or NULL if the headers did not know it. */
const char *ht_exit_reason_name(unsigned int isa, uint32_t reason);
/* The name, or the number in hex ("0x4d2") when it has none. */
void ht_exit_reason_format(char *buf, size_t len, unsigned int isa, uint32_t reason);
/* "VMX", "SVM" or "?". */
const char *ht_isa_name(unsigned int isa);

#endif
