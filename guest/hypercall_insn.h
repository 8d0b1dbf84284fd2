/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The KVM hypercall itself, 64-bit ABI: nr in RAX, a0..a3 in RBX, RCX, RDX,
 * RSI, result in RAX. Two functions because the instruction differs by
 * vendor (vmcall on Intel VMX, vmmcall on AMD SVM) and must be chosen before
 * the timed loop, not inside it.
 *
 * Only execute these inside a KVM guest: on bare metal both raise #UD, and
 * under another hypervisor they are that hypervisor's calls.
 */
#ifndef GUEST_HYPERCALL_INSN_H
#define GUEST_HYPERCALL_INSN_H

#include <stdint.h>

static inline uint64_t hypercall4_vmcall(uint64_t nr, uint64_t a0, uint64_t a1, uint64_t a2,
					 uint64_t a3)
{
	uint64_t ret;

	/* "memory": the hypervisor may read or write guest memory on our behalf. */
	__asm__ volatile("vmcall"
			 : "=a"(ret)
			 : "a"(nr), "b"(a0), "c"(a1), "d"(a2), "S"(a3)
			 : "memory");
	return ret;
}

static inline uint64_t hypercall4_vmmcall(uint64_t nr, uint64_t a0, uint64_t a1, uint64_t a2,
					  uint64_t a3)
{
	uint64_t ret;

	__asm__ volatile("vmmcall"
			 : "=a"(ret)
			 : "a"(nr), "b"(a0), "c"(a1), "d"(a2), "S"(a3)
			 : "memory");
	return ret;
}

#endif
