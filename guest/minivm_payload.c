// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Hand-assembled 16-bit code. Every 32-bit operation carries the 0x66
 * operand-size prefix; memory operands use 16-bit direct addressing
 * (ModRM mod=00 rm=110, disp16) relative to DS, which points at the vCPU's
 * result slot.
 */
#include "minivm_payload.h"

#include <string.h>

struct emitter {
	uint8_t *buf;
	size_t cap, len;
	bool overflow;
};

static void emit(struct emitter *e, const uint8_t *bytes, size_t n)
{
	if (e->overflow || e->cap - e->len < n) {
		e->overflow = true;
		return;
	}
	memcpy(e->buf + e->len, bytes, n);
	e->len += n;
}

static void emit_u8(struct emitter *e, uint8_t b)
{
	emit(e, &b, 1);
}

static void emit_u16(struct emitter *e, uint16_t v)
{
	uint8_t b[2] = { (uint8_t)v, (uint8_t)(v >> 8) };

	emit(e, b, 2);
}

static void emit_u32(struct emitter *e, uint32_t v)
{
	uint8_t b[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };

	emit(e, b, 4);
}

/* mov r32, imm32: 66 B8+r id */
static void emit_mov_imm32(struct emitter *e, uint8_t reg, uint32_t imm)
{
	emit_u8(e, 0x66);
	emit_u8(e, (uint8_t)(0xb8 + reg));
	emit_u32(e, imm);
}

enum { REG_EAX, REG_ECX, REG_EDX, REG_EBX, REG_ESP, REG_EBP, REG_ESI, REG_EDI };

/* Loads nr and the four arguments and issues the hypercall. */
static void emit_hypercall(struct emitter *e, uint32_t nr, enum hypercall_insn insn)
{
	static const uint8_t mov_ebx_edi[] = { 0x66, 0x89, 0xfb }; /* a0 = vcpu index */
	static const uint8_t mov_ecx_ebp[] = { 0x66, 0x89, 0xe9 }; /* a1 = sequence number */
	static const uint8_t vmcall[] = { 0x0f, 0x01, 0xc1 };
	static const uint8_t vmmcall[] = { 0x0f, 0x01, 0xd9 };

	emit_mov_imm32(e, REG_EAX, nr);
	emit(e, mov_ebx_edi, sizeof(mov_ebx_edi));
	emit(e, mov_ecx_ebp, sizeof(mov_ecx_ebp));
	emit_mov_imm32(e, REG_EDX, MINIVM_A2);
	emit_mov_imm32(e, REG_ESI, MINIVM_A3);
	emit(e, insn == HYPERCALL_INSN_VMCALL ? vmcall : vmmcall, 3);
}

/* One exit of the given kind that the tracer must not record as hypercall nr. */
static void emit_mix(struct emitter *e, enum minivm_mix_kind kind, const struct minivm_payload_config *cfg)
{
	switch (kind) {
	case MINIVM_MIX_IO:
		emit_u8(e, 0xe6); /* out imm8, al */
		emit_u8(e, MINIVM_PORT_MIX);
		break;
	case MINIVM_MIX_HLT:
		emit_u8(e, 0xf4);
		break;
	default:
		emit_hypercall(e, cfg->other_nr, cfg->insn);
		emit_u8(e, 0x66); /* inc dword [OTHER_COUNT] */
		emit_u8(e, 0xff);
		emit_u8(e, 0x06);
		emit_u16(e, MINIVM_SLOT_OTHER_COUNT);
		emit_u8(e, 0x66); /* mov [OTHER_RET], eax */
		emit_u8(e, 0xa3);
		emit_u16(e, MINIVM_SLOT_OTHER_RET);
		break;
	}
}

/* Records the first return value and counts later ones that differ from it. */
static void emit_check_return(struct emitter *e)
{
	static const uint8_t code[] = {
		0x66, 0x85, 0xed,                   /* test ebp, ebp      ; first call?   */
		0x75, 0x04,                         /* jnz compare                        */
		0x66, 0xa3, MINIVM_SLOT_FIRST_RET, 0x00, /* mov [FIRST_RET], eax          */
		/* compare: */
		0x66, 0x3b, 0x06, MINIVM_SLOT_FIRST_RET, 0x00, /* cmp eax, [FIRST_RET]    */
		0x74, 0x05,                         /* je same                            */
		0x66, 0xff, 0x06, MINIVM_SLOT_RET_MISMATCHES, 0x00, /* inc dword [MISMATCHES] */
		/* same: */
	};

	emit(e, code, sizeof(code));
}

/* A 16-bit relative displacement from the end of a jump at `end` to `target`. */
static uint16_t rel16(size_t end, size_t target)
{
	return (uint16_t)(target - end);
}

size_t minivm_payload_build(const struct minivm_payload_config *cfg, uint8_t *buf, size_t cap)
{
	struct emitter e = { .buf = buf, .cap = cap };
	size_t loop, jae_disp, done;
	bool seen[MINIVM_MIX_KINDS] = { false };

	if (cfg->count == 0 || cfg->mix_len > MINIVM_MIX_KINDS ||
	    cfg->mix_per_call > MINIVM_MAX_MIX_PER_CALL ||
	    (cfg->insn != HYPERCALL_INSN_VMCALL && cfg->insn != HYPERCALL_INSN_VMMCALL))
		return 0;
	for (size_t i = 0; i < cfg->mix_len; i++) {
		if (cfg->mix[i] >= MINIVM_MIX_KINDS || seen[cfg->mix[i]])
			return 0;
		seen[cfg->mix[i]] = true;
	}
	/* Jumps are 16-bit and IP wraps at 64 KiB: the code must fit below it. */
	if (cap > MINIVM_CODE_MAX)
		cap = e.cap = MINIVM_CODE_MAX;

	emit(&e, (const uint8_t[]){ 0x66, 0x31, 0xed }, 3); /* xor ebp, ebp */
	loop = e.len;
	emit(&e, (const uint8_t[]){ 0x66, 0x81, 0xfd }, 3); /* cmp ebp, count */
	emit_u32(&e, cfg->count);
	emit(&e, (const uint8_t[]){ 0x0f, 0x83 }, 2); /* jae done */
	jae_disp = e.len;
	emit_u16(&e, 0); /* patched below */

	for (uint32_t round = 0; round < cfg->mix_per_call; round++)
		for (size_t i = 0; i < cfg->mix_len; i++)
			emit_mix(&e, cfg->mix[i], cfg);
	emit_hypercall(&e, cfg->nr, cfg->insn);
	emit_check_return(&e);
	emit(&e, (const uint8_t[]){ 0x66, 0x45 }, 2); /* inc ebp */
	emit_u8(&e, 0xe9);                          /* jmp loop */
	emit_u16(&e, rel16(e.len + 2, loop));

	done = e.len;
	emit_u8(&e, 0xe6); /* out DONE, al */
	emit_u8(&e, MINIVM_PORT_DONE);
	emit_u8(&e, 0xf4); /* hlt: minivm never resumes after done; stay put if it does */
	emit_u8(&e, 0xeb); /* jmp done */
	emit_u8(&e, (uint8_t)(done - (e.len + 1)));

	if (e.overflow)
		return 0;
	buf[jae_disp] = (uint8_t)rel16(jae_disp + 2, done);
	buf[jae_disp + 1] = (uint8_t)(rel16(jae_disp + 2, done) >> 8);
	return e.len;
}

const char *minivm_mix_kind_name(enum minivm_mix_kind kind)
{
	switch (kind) {
	case MINIVM_MIX_IO:
		return "io";
	case MINIVM_MIX_HLT:
		return "hlt";
	case MINIVM_MIX_OTHER_NR:
		return "other-nr";
	default:
		return "unknown";
	}
}
