// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit tests of guest/minivm_payload.c. The generated real-mode code is run
 * in a small interpreter that knows exactly the instructions the generator
 * emits and records every exit the code would cause, so the tests check
 * behaviour (order, count and arguments of hypercalls and other exits, result
 * slot contents), not just bytes. Any other instruction fails the test.
 */
#include <string.h>

#include "minivm_payload.h"
#include "test.h"

enum event_kind { EV_HYPERCALL, EV_IO, EV_HLT, EV_DONE };

struct event {
	enum event_kind kind;
	uint32_t nr, a0, a1, a2, a3;
	uint16_t port;
	uint8_t insn_modrm; /* 0xc1 vmcall, 0xd9 vmmcall */
};

#define MAX_EVENTS 20000

struct machine {
	uint8_t mem[MINIVM_MEM_SIZE];
	uint32_t reg[8]; /* eax ecx edx ebx esp ebp esi edi */
	uint16_t ip;
	uint32_t ds_base;
	int zf, cf;
	struct event events[MAX_EVENTS];
	size_t nevents;
	uint32_t (*hypercall_ret)(uint32_t nr, uint32_t seq);
	char error[160];
};

enum { EAX, ECX, EDX, EBX, ESP, EBP, ESI, EDI };

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t *mem32(struct machine *m, uint16_t disp)
{
	return (uint32_t *)(void *)(m->mem + m->ds_base + disp);
}

static void record(struct machine *m, struct event ev)
{
	if (m->nevents < MAX_EVENTS)
		m->events[m->nevents++] = ev;
}

/* Executes one instruction; returns 0 to go on, 1 at the done exit, -1 on error. */
static int step(struct machine *m)
{
	const uint8_t *p = m->mem + m->ip;
	uint32_t v;

	if (p[0] == 0x66) {
		if (p[1] == 0x31 && p[2] == 0xed) { /* xor ebp, ebp */
			m->reg[EBP] = 0;
			m->ip += 3;
		} else if (p[1] == 0x81 && p[2] == 0xfd) { /* cmp ebp, imm32 */
			v = rd32(p + 3);
			m->cf = m->reg[EBP] < v;
			m->zf = m->reg[EBP] == v;
			m->ip += 7;
		} else if (p[1] >= 0xb8 && p[1] <= 0xbf) { /* mov r32, imm32 */
			m->reg[p[1] - 0xb8] = rd32(p + 2);
			m->ip += 6;
		} else if (p[1] == 0x89 && p[2] == 0xfb) { /* mov ebx, edi */
			m->reg[EBX] = m->reg[EDI];
			m->ip += 3;
		} else if (p[1] == 0x89 && p[2] == 0xe9) { /* mov ecx, ebp */
			m->reg[ECX] = m->reg[EBP];
			m->ip += 3;
		} else if (p[1] == 0xff && p[2] == 0x06) { /* inc dword [disp16] */
			(*mem32(m, rd16(p + 3)))++;
			m->ip += 5;
		} else if (p[1] == 0xa3) { /* mov [disp16], eax */
			*mem32(m, rd16(p + 2)) = m->reg[EAX];
			m->ip += 4;
		} else if (p[1] == 0x85 && p[2] == 0xed) { /* test ebp, ebp */
			m->zf = m->reg[EBP] == 0;
			m->ip += 3;
		} else if (p[1] == 0x3b && p[2] == 0x06) { /* cmp eax, [disp16] */
			m->zf = m->reg[EAX] == *mem32(m, rd16(p + 3));
			m->ip += 5;
		} else if (p[1] == 0x45) { /* inc ebp */
			m->reg[EBP]++;
			m->ip += 2;
		} else {
			goto unknown;
		}
		return 0;
	}
	switch (p[0]) {
	case 0x0f:
		if (p[1] == 0x83) { /* jae rel16 */
			m->ip = (uint16_t)(m->ip + 4 + (m->cf ? 0 : rd16(p + 2)));
			return 0;
		}
		if (p[1] == 0x01 && (p[2] == 0xc1 || p[2] == 0xd9)) {
			record(m, (struct event){ EV_HYPERCALL, m->reg[EAX], m->reg[EBX], m->reg[ECX],
						  m->reg[EDX], m->reg[ESI], 0, p[2] });
			m->reg[EAX] = m->hypercall_ret(m->reg[EAX], m->reg[ECX]);
			m->ip += 3;
			return 0;
		}
		goto unknown;
	case 0xe6: /* out imm8, al */
		record(m, (struct event){ .kind = p[1] == MINIVM_PORT_DONE ? EV_DONE : EV_IO,
					  .port = p[1] });
		m->ip += 2;
		return p[1] == MINIVM_PORT_DONE;
	case 0xf4:
		record(m, (struct event){ .kind = EV_HLT });
		m->ip += 1;
		return 0;
	case 0x74: /* je rel8 */
		m->ip = (uint16_t)(m->ip + 2 + (m->zf ? (int8_t)p[1] : 0));
		return 0;
	case 0x75: /* jnz rel8 */
		m->ip = (uint16_t)(m->ip + 2 + (m->zf ? 0 : (int8_t)p[1]));
		return 0;
	case 0xe9: /* jmp rel16 */
		m->ip = (uint16_t)(m->ip + 3 + rd16(p + 1));
		return 0;
	case 0xeb: /* jmp rel8 */
		m->ip = (uint16_t)(m->ip + 2 + (int8_t)p[1]);
		return 0;
	}
unknown:
	snprintf(m->error, sizeof(m->error), "unknown instruction %02x %02x %02x at 0x%x", p[0],
		 p[1], p[2], m->ip);
	return -1;
}

static uint32_t ret_enosys(uint32_t nr, uint32_t seq)
{
	(void)nr;
	(void)seq;
	return (uint32_t)-1000;
}

/* Loads the code as minivm does and runs vCPU `index` until its done exit. */
static int run_payload(struct machine *m, const uint8_t *code, size_t len, uint32_t index)
{
	memset(m, 0, sizeof(*m));
	memcpy(m->mem + MINIVM_CODE_ADDR, code, len);
	m->ip = MINIVM_CODE_ADDR;
	m->reg[EDI] = index;
	m->ds_base = MINIVM_SLOT_BASE + index * MINIVM_SLOT_SIZE;
	m->hypercall_ret = ret_enosys;
	for (long steps = 0; steps < 10000000; steps++) {
		int r = step(m);

		if (r)
			return r;
	}
	snprintf(m->error, sizeof(m->error), "no done exit after 10M instructions");
	return -1;
}

static uint32_t slot(struct machine *m, uint32_t field)
{
	return *mem32(m, (uint16_t)field);
}

static struct minivm_payload_config config(uint32_t count, enum hypercall_insn insn)
{
	return (struct minivm_payload_config){
		.nr = 1000, .other_nr = 1001, .count = count, .insn = insn, .mix_per_call = 1,
	};
}

static uint8_t code[MINIVM_CODE_MAX];
static struct machine machine;

static int is_hypercall(const struct event *e, uint32_t nr, uint32_t vcpu, uint32_t seq)
{
	return e->kind == EV_HYPERCALL && e->nr == nr && e->a0 == vcpu && e->a1 == seq &&
	       e->a2 == MINIVM_A2 && e->a3 == MINIVM_A3;
}

static void test_payload_plain_hypercalls(void)
{
	struct minivm_payload_config cfg = config(1000, HYPERCALL_INSN_VMMCALL);
	struct machine *m = &machine;
	size_t len = minivm_payload_build(&cfg, code, sizeof(code));

	CHECK(len > 0, "build failed");
	CHECK(run_payload(m, code, len, 3) == 1, "%s", m->error);
	CHECK_EQ_U64(m->nevents, 1001);
	for (uint32_t i = 0; i < 1000; i++)
		CHECK(is_hypercall(&m->events[i], 1000, 3, i), "event %u: nr %u a0 %u a1 %u", i,
		      m->events[i].nr, m->events[i].a0, m->events[i].a1);
	CHECK(m->events[1000].kind == EV_DONE, "last event is not the done exit");
	CHECK_EQ_U64(m->reg[EBP], 1000);
	CHECK_EQ_U64(slot(m, MINIVM_SLOT_FIRST_RET), (uint32_t)-1000);
	CHECK_EQ_U64(slot(m, MINIVM_SLOT_RET_MISMATCHES), 0);
	CHECK_EQ_U64(slot(m, MINIVM_SLOT_OTHER_COUNT), 0);
}

static void test_payload_instruction_bytes(void)
{
	struct minivm_payload_config cfg = config(5, HYPERCALL_INSN_VMCALL);
	static const uint8_t vmcall[] = { 0x0f, 0x01, 0xc1 }, vmmcall[] = { 0x0f, 0x01, 0xd9 };
	size_t len = minivm_payload_build(&cfg, code, sizeof(code));

	CHECK(len > 0, "build failed");
	CHECK(memmem(code, len, vmcall, 3) && !memmem(code, len, vmmcall, 3), "vmcall bytes");
	CHECK(run_payload(&machine, code, len, 0) == 1, "%s", machine.error);
	CHECK(machine.events[0].insn_modrm == 0xc1, "vmcall not executed");

	cfg.insn = HYPERCALL_INSN_VMMCALL;
	len = minivm_payload_build(&cfg, code, sizeof(code));
	CHECK(memmem(code, len, vmmcall, 3) && !memmem(code, len, vmcall, 3), "vmmcall bytes");
	/* The loop bound is the count, as an imm32 of cmp ebp. */
	CHECK(memmem(code, len, (const uint8_t[]){ 0x66, 0x81, 0xfd, 5, 0, 0, 0 }, 7),
	      "cmp ebp, 5 missing");
}

/* --mix io,other-nr: io, other hypercall, then the hypercall, per iteration. */
static void test_payload_mix_io_other(void)
{
	struct minivm_payload_config cfg = config(100, HYPERCALL_INSN_VMMCALL);
	struct machine *m = &machine;
	size_t len;

	cfg.mix[0] = MINIVM_MIX_IO;
	cfg.mix[1] = MINIVM_MIX_OTHER_NR;
	cfg.mix_len = 2;
	len = minivm_payload_build(&cfg, code, sizeof(code));
	CHECK(len > 0, "build failed");
	CHECK(run_payload(m, code, len, 1) == 1, "%s", m->error);
	CHECK_EQ_U64(m->nevents, 301);
	for (uint32_t i = 0; i < 100; i++) {
		const struct event *e = &m->events[3 * i];

		CHECK(e[0].kind == EV_IO && e[0].port == MINIVM_PORT_MIX, "iteration %u: no io", i);
		CHECK(is_hypercall(&e[1], 1001, 1, i), "iteration %u: other-nr wrong", i);
		CHECK(is_hypercall(&e[2], 1000, 1, i), "iteration %u: hypercall wrong", i);
	}
	CHECK_EQ_U64(slot(m, MINIVM_SLOT_OTHER_COUNT), 100);
	CHECK_EQ_U64(slot(m, MINIVM_SLOT_OTHER_RET), (uint32_t)-1000);
}

/* Ten rounds of io,hlt,other-nr per hypercall, as a benchmark would ask. */
static void test_payload_mix_per_call(void)
{
	struct minivm_payload_config cfg = config(20, HYPERCALL_INSN_VMCALL);
	struct machine *m = &machine;
	size_t len, io = 0, hlt = 0, other = 0, main = 0;

	cfg.mix[0] = MINIVM_MIX_HLT;
	cfg.mix[1] = MINIVM_MIX_IO;
	cfg.mix[2] = MINIVM_MIX_OTHER_NR;
	cfg.mix_len = 3;
	cfg.mix_per_call = 10;
	len = minivm_payload_build(&cfg, code, sizeof(code));
	CHECK(len > 0, "build failed");
	CHECK(run_payload(m, code, len, 0) == 1, "%s", m->error);
	CHECK_EQ_U64(m->nevents, 20 * 31 + 1);
	CHECK(m->events[0].kind == EV_HLT && m->events[1].kind == EV_IO &&
		      m->events[2].kind == EV_HYPERCALL && m->events[2].nr == 1001,
	      "mix order is not hlt, io, other-nr");
	for (size_t i = 0; i < m->nevents; i++) {
		io += m->events[i].kind == EV_IO;
		hlt += m->events[i].kind == EV_HLT;
		other += m->events[i].kind == EV_HYPERCALL && m->events[i].nr == 1001;
		main += m->events[i].kind == EV_HYPERCALL && m->events[i].nr == 1000;
	}
	CHECK(io == 200 && hlt == 200 && other == 200 && main == 20,
	      "io %zu hlt %zu other %zu hypercalls %zu", io, hlt, other, main);
	CHECK(is_hypercall(&m->events[30], 1000, 0, 0), "first hypercall not after 30 exits");
}

/* Only every third call returns -1000: the slot must count the others. */
static uint32_t ret_varies(uint32_t nr, uint32_t seq)
{
	(void)nr;
	return seq % 3 ? 7 : (uint32_t)-1000;
}

static void test_payload_return_mismatches(void)
{
	struct minivm_payload_config cfg = config(30, HYPERCALL_INSN_VMMCALL);
	struct machine *m = &machine;
	size_t len = minivm_payload_build(&cfg, code, sizeof(code));

	CHECK(len > 0, "build failed");
	memset(m, 0, sizeof(*m));
	memcpy(m->mem + MINIVM_CODE_ADDR, code, len);
	m->ip = MINIVM_CODE_ADDR;
	m->ds_base = MINIVM_SLOT_BASE;
	m->hypercall_ret = ret_varies;
	for (int r = 0; r == 0;) {
		r = step(m);
		CHECK(r >= 0, "%s", m->error);
	}
	CHECK_EQ_U64(slot(m, MINIVM_SLOT_FIRST_RET), (uint32_t)-1000);
	CHECK_EQ_U64(slot(m, MINIVM_SLOT_RET_MISMATCHES), 20);
}

/* Every vCPU runs the same bytes but writes only its own result slot. */
static void test_payload_slots_per_vcpu(void)
{
	struct minivm_payload_config cfg = config(3, HYPERCALL_INSN_VMMCALL);
	struct machine *m = &machine;
	size_t len;

	cfg.mix[0] = MINIVM_MIX_OTHER_NR;
	cfg.mix_len = 1;
	len = minivm_payload_build(&cfg, code, sizeof(code));
	CHECK(run_payload(m, code, len, MINIVM_MAX_VCPUS - 1) == 1, "%s", m->error);
	for (uint32_t a = 0; a < MINIVM_MEM_SIZE; a += 4) {
		uint32_t own = MINIVM_SLOT_BASE + (MINIVM_MAX_VCPUS - 1) * MINIVM_SLOT_SIZE;
		uint32_t v;

		if (a >= MINIVM_CODE_ADDR && a < MINIVM_CODE_ADDR + len)
			continue;
		memcpy(&v, m->mem + a, 4);
		CHECK(v == 0 || (a >= own && a < own + MINIVM_SLOT_SIZE),
		      "write at 0x%x outside the vcpu's slot", a);
	}
	CHECK(MINIVM_SLOT_BASE + MINIVM_MAX_VCPUS * MINIVM_SLOT_SIZE <= MINIVM_CODE_ADDR,
	      "slots overlap the code");
}

static void test_payload_rejects_bad_config(void)
{
	struct minivm_payload_config cfg = config(10, HYPERCALL_INSN_VMCALL);
	uint8_t small[16];

	cfg.count = 0;
	CHECK(minivm_payload_build(&cfg, code, sizeof(code)) == 0, "count 0 accepted");
	cfg = config(10, HYPERCALL_INSN_UNKNOWN);
	CHECK(minivm_payload_build(&cfg, code, sizeof(code)) == 0, "unknown insn accepted");
	cfg = config(10, HYPERCALL_INSN_VMCALL);
	cfg.mix[0] = cfg.mix[1] = MINIVM_MIX_IO;
	cfg.mix_len = 2;
	CHECK(minivm_payload_build(&cfg, code, sizeof(code)) == 0, "repeated mix kind accepted");
	cfg.mix_len = 1;
	cfg.mix_per_call = MINIVM_MAX_MIX_PER_CALL + 1;
	CHECK(minivm_payload_build(&cfg, code, sizeof(code)) == 0, "mix_per_call over max");
	cfg = config(10, HYPERCALL_INSN_VMCALL);
	CHECK(minivm_payload_build(&cfg, small, sizeof(small)) == 0, "overflowed a small buffer");
}

/* The largest configuration the options allow must fit below 64 KiB and still run. */
static void test_payload_largest_fits(void)
{
	struct minivm_payload_config cfg = config(2, HYPERCALL_INSN_VMMCALL);
	struct machine *m = &machine;
	size_t len;

	cfg.mix[0] = MINIVM_MIX_IO;
	cfg.mix[1] = MINIVM_MIX_HLT;
	cfg.mix[2] = MINIVM_MIX_OTHER_NR;
	cfg.mix_len = 3;
	cfg.mix_per_call = MINIVM_MAX_MIX_PER_CALL;
	cfg.count = UINT32_MAX;
	len = minivm_payload_build(&cfg, code, sizeof(code));
	CHECK(len > 0 && len <= MINIVM_CODE_MAX, "largest payload does not fit: %zu", len);
	cfg.count = 2;
	len = minivm_payload_build(&cfg, code, sizeof(code));
	CHECK(run_payload(m, code, len, 0) == 1, "%s", m->error);
	CHECK_EQ_U64(m->nevents, 2 * (3 * MINIVM_MAX_MIX_PER_CALL + 1) + 1);
}

int main(void)
{
	RUN(test_payload_plain_hypercalls);
	RUN(test_payload_instruction_bytes);
	RUN(test_payload_mix_io_other);
	RUN(test_payload_mix_per_call);
	RUN(test_payload_return_mismatches);
	RUN(test_payload_slots_per_vcpu);
	RUN(test_payload_rejects_bad_config);
	RUN(test_payload_largest_fits);
	return ht_test_exit_status();
}
