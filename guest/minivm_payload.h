/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Generates minivm's guest code: 16-bit real-mode x86 that issues hypercalls
 * in a loop, with optional other exits between them, then signals completion.
 *
 * Guest memory layout (guest physical = host offset, one 64 KiB region):
 *   0x0800 + 16 * vcpu   per-vCPU result slot, reached through DS (the host
 *                        sets DS base to the slot, so every vCPU runs the same
 *                        code yet writes its own slot)
 *   0x1000               the shared code, entered with CS base 0, IP 0x1000
 *
 * Register contract (the host sets EDI; the rest the code sets itself):
 *   EDI  vcpu index, copied into EBX (a0) before each hypercall
 *   EBP  sequence number of the next hypercall; at the done exit, the number
 *        of hypercalls issued
 *   EAX  nr in, return value out; EBX, ECX, EDX, ESI = a0..a3
 *
 * Each iteration: for each of mix_per_call rounds, one exit of every listed
 * mix kind in the listed order; then the hypercall nr with a0 = vcpu index,
 * a1 = sequence number, a2 = MINIVM_A2, a3 = MINIVM_A3. After `count`
 * iterations: OUT to MINIVM_PORT_DONE.
 *
 * Real mode keeps the payload tiny (no page tables, no descriptor tables).
 * The price: KVM treats a real-mode hypercall as 32-bit and truncates nr,
 * a0..a3 and the return value to 32 bits (after tracing them), so all values
 * here are 32-bit.
 */
#ifndef GUEST_MINIVM_PAYLOAD_H
#define GUEST_MINIVM_PAYLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpuid_info.h"

#define MINIVM_MEM_SIZE 0x10000u
#define MINIVM_SLOT_BASE 0x0800u
#define MINIVM_SLOT_SIZE 16u
#define MINIVM_MAX_VCPUS 64u
#define MINIVM_CODE_ADDR 0x1000u
#define MINIVM_CODE_MAX (MINIVM_MEM_SIZE - MINIVM_CODE_ADDR)

/* Result slot fields (byte offsets, 32-bit little-endian values). */
#define MINIVM_SLOT_FIRST_RET 0u      /* return value of the first hypercall */
#define MINIVM_SLOT_RET_MISMATCHES 4u /* hypercalls whose return differed from the first */
#define MINIVM_SLOT_OTHER_COUNT 8u    /* other-nr hypercalls issued */
#define MINIVM_SLOT_OTHER_RET 12u     /* return value of the last other-nr hypercall */

/* I/O ports: no device model sits behind them, so every OUT exits to minivm. */
#define MINIVM_PORT_MIX 0xe0u
#define MINIVM_PORT_DONE 0xe1u

/* Fixed argument patterns, recognizable in a trace. */
#define MINIVM_A2 0xa2a2a2a2u
#define MINIVM_A3 0xa3a3a3a3u

#define MINIVM_MAX_MIX_PER_CALL 1000u

enum minivm_mix_kind {
	MINIVM_MIX_IO,       /* OUT to MINIVM_PORT_MIX: KVM_EXIT_IO in minivm */
	MINIVM_MIX_HLT,      /* HLT: KVM_EXIT_HLT in minivm (no in-kernel irqchip) */
	MINIVM_MIX_OTHER_NR, /* a hypercall with nr other_nr, same arguments */
	MINIVM_MIX_KINDS,
};

struct minivm_payload_config {
	uint32_t nr;
	uint32_t other_nr;
	uint32_t count; /* hypercalls nr per vCPU, >= 1 */
	enum hypercall_insn insn;
	enum minivm_mix_kind mix[MINIVM_MIX_KINDS]; /* in emission order, no repeats */
	size_t mix_len;
	uint32_t mix_per_call; /* rounds of the mix before each hypercall */
};

/*
 * Writes the code into buf (at most cap bytes, to be loaded at
 * MINIVM_CODE_ADDR). Returns the length, or 0 if the configuration is invalid
 * or the code does not fit.
 */
size_t minivm_payload_build(const struct minivm_payload_config *cfg, uint8_t *buf, size_t cap);

/* "io", "hlt", "other-nr". */
const char *minivm_mix_kind_name(enum minivm_mix_kind kind);

#endif
