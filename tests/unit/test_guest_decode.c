// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Guest events on the host: what include/hypertrace/guest.h packs, the
 * built-in catalog decodes to the same values; user catalogs parse or are
 * refused with a line that says what to fix; guest symbols and the KASLR
 * offset; the decoded text/CSV/JSON forms; and `report` on crafted traces.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "decode/catalog.h"
#include "decode/decoder.h"
#include "decode/guest_event.h"
#include "decode/guest_symbols.h"
#include "decode/sched_summary.h"
#include "hypertrace/guest.h"
#include "fixture.h"
#include "test.h"
#include "tracefile/trace_writer.h"
#include "common/util.h"

static char err[512];
static char dir[] = "/tmp/ht-decode-XXXXXX";

/* Where the guest module's text is in the tests' guests, and a hypercall instruction in it. */
#define MODULE_TEXT 0xffffffffc0a00000ull
#define MODULE_TEXT_SIZE 0x6000u
#define MODULE_RIP (MODULE_TEXT + 0x1234)
/* A guest user program's hypercall. */
#define USER_RIP 0x401000ull

static struct ht_record rec_of(uint32_t nr, struct ht_guest_args a)
{
	struct ht_record r;

	memset(&r, 0, sizeof(r));
	r.nr = nr;
	r.a0 = a.a[0];
	r.a1 = a.a[1];
	r.a2 = a.a[2];
	r.a3 = a.a[3];
	r.host_pid = 500;
	r.isa = HT_ISA_SVM;
	r.exit_reason = 0x81;
	/* The project's events come from the guest kernel's module: a kernel address. */
	r.guest_rip = MODULE_RIP;
	return r;
}

static uint64_t field_u(const struct ht_event_desc *ev, const char *name, const struct ht_record *r)
{
	const struct ht_field *f = ht_event_field(ev, name);

	return f ? ht_field_bits(f, r) : 0xdeadbeefdeadbeefull;
}

static const char *field_s(const struct ht_event_desc *ev, const char *name, const struct ht_record *r)
{
	static char buf[33];
	const struct ht_field *f = ht_event_field(ev, name);

	if (!f)
		return "(no such field)";
	ht_field_text(f, r, buf);
	return buf;
}

static void test_builtin_catalog_decodes_what_the_guest_header_packs_sched_switch(void)
{
	struct ht_catalog cat = { 0 };
	struct ht_record r = rec_of(HT_GUEST_NR_SCHED_SWITCH,
				    ht_guest_pack_sched_switch(4194303, 120, 0x100, 77, -1, "kworker/1:2H-ev", 3));
	const struct ht_event_desc *ev;

	if (!ASSERT_MSG(ht_catalog_init(&cat, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	ev = ht_catalog_find(&cat, HT_GUEST_NR_SCHED_SWITCH);
	if (!ASSERT_MSG(ev && !strcmp(ev->name, "sched_switch"), "no sched_switch"))
		goto cleanup;
	if (!ASSERT_EQ(field_u(ev, "prev_tid", &r), 4194303, "value"))
		goto cleanup;
	if (!ASSERT_EQ(field_u(ev, "next_tid", &r), 77, "value"))
		goto cleanup;
	if (!ASSERT_EQ(field_u(ev, "prev_prio", &r), 120, "value"))
		goto cleanup;
	if (!ASSERT_EQ(field_u(ev, "next_prio", &r), HT_GUEST_PRIO_DEADLINE, "value"))
		goto cleanup;
	if (!ASSERT_EQ(field_u(ev, "prev_state", &r), 0x100, "value"))
		goto cleanup;
	if (!ASSERT_EQ(field_u(ev, "cpu_id", &r), 3, "value"))
		goto cleanup;
	ASSERT_MSG(!strcmp(field_s(ev, "next_comm", &r), "kworker/1:2H-ev"), "next_comm '%s'", field_s(ev, "next_comm", &r));
cleanup:
	ht_catalog_free(&cat);
}

static void test_builtin_catalog_decodes_every_project_event(void)
{
	struct ht_catalog cat = { 0 };
	struct ht_record r;
	const struct ht_event_desc *ev;
	const struct ht_field *f;

	if (!ASSERT_MSG(ht_catalog_init(&cat, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	r = rec_of(HT_GUEST_NR_SCHED_WAKEUP, ht_guest_pack_sched_wakeup(1234, 98, 1, "a-sixteen-chars!", 0));
	ev = ht_catalog_find(&cat, r.nr);
	if (!ASSERT_MSG(ev && !strcmp(ev->name, "sched_wakeup"), "no sched_wakeup"))
		goto cleanup;
	if (!ASSERT_MSG(field_u(ev, "tid", &r) == 1234 && field_u(ev, "prio", &r) == 98 && field_u(ev, "target_cpu", &r) == 1,
			"wakeup fields"))
		goto cleanup;
	/* A 16-byte comm has no NUL: all 16 bytes are kept. */
	if (!ASSERT_MSG(!strcmp(field_s(ev, "comm", &r), "a-sixteen-chars!"), "comm '%s'", field_s(ev, "comm", &r)))
		goto cleanup;

	r = rec_of(HT_GUEST_NR_IRQ_ENTRY, ht_guest_pack_irq_entry(11, "virtio0-input.0-and-more-than-24", 1));
	ev = ht_catalog_find(&cat, r.nr);
	if (!ASSERT_MSG(ev && !strcmp(ev->name, "irq_handler_entry") && field_u(ev, "irq", &r) == 11 &&
			field_u(ev, "cpu_id", &r) == 1, "irq entry"))
		goto cleanup;
	if (!ASSERT_MSG(!strcmp(field_s(ev, "name", &r), "virtio0-input.0-and-more"), "name cut at 24: '%s'", field_s(ev, "name", &r)))
		goto cleanup;

	r = rec_of(HT_GUEST_NR_IRQ_EXIT, ht_guest_pack_irq_exit(11, -22, 1));
	ev = ht_catalog_find(&cat, r.nr);
	f = ev ? ht_event_field(ev, "ret") : NULL;
	if (!ASSERT_MSG(f && f->type == HT_FT_S && ht_field_signed(f, &r) == -22, "irq exit ret"))
		goto cleanup;

	r = rec_of(HT_GUEST_NR_FUNC_ENTRY, ht_guest_pack_func(0xffffffff81234560ull, 0xffffffff81100010ull, 42, 1));
	ev = ht_catalog_find(&cat, r.nr);
	if (!ASSERT_MSG(ev && !strcmp(ev->name, "func_entry") && field_u(ev, "addr", &r) == 0xffffffff81234560ull &&
			field_u(ev, "call_site", &r) == 0xffffffff81100010ull && field_u(ev, "tid", &r) == 42 &&
			field_u(ev, "cpu_id", &r) == 1, "func_entry"))
		goto cleanup;
	r = rec_of(HT_GUEST_NR_FUNC_EXIT, ht_guest_pack_func(0xffffffff81234560ull, (uint64_t)-12, 42, 1));
	ev = ht_catalog_find(&cat, r.nr);
	if (!ASSERT_MSG(ev && !strcmp(ev->name, "func_exit") && field_u(ev, "ret", &r) == (uint64_t)-12, "func_exit"))
		goto cleanup;

	r = rec_of(HT_GUEST_NR_MODULE, ht_guest_pack_module(1, 0xf, 3, 5, 0xffffffff9a0c1230ull, "_printk"));
	ev = ht_catalog_find(&cat, r.nr);
	if (!ASSERT_MSG(ev && field_u(ev, "state", &r) == 1 && field_u(ev, "events", &r) == 0xf &&
			field_u(ev, "functions", &r) == 3 && field_u(ev, "missed", &r) == 5 &&
			field_u(ev, "anchor_addr", &r) == 0xffffffff9a0c1230ull &&
			!strcmp(field_s(ev, "anchor_name", &r), "_printk"), "module event"))
		goto cleanup;
	if (!ASSERT_MSG(field_u(ev, "text_start", &r) == 0 && field_u(ev, "text_size", &r) == 0, "no text range"))
		goto cleanup;
	/* With the module's text range; missed keeps 32 bits, saturated. */
	r = rec_of(HT_GUEST_NR_MODULE, ht_guest_module_text(ht_guest_pack_module(0, 0xf, 3, 1ull << 40, 0, "_printk"),
							     0xffffffffc0a02000ull, 0x5000));
	if (!ASSERT_MSG(field_u(ev, "text_start", &r) == 0xc0a02000u && field_u(ev, "text_size", &r) == 0x5000 &&
			field_u(ev, "missed", &r) == 0xffffffffu && field_u(ev, "functions", &r) == 3 &&
			field_u(ev, "state", &r) == 0, "module event with its text: start 0x%llx size 0x%llx missed 0x%llx",
			(unsigned long long)field_u(ev, "text_start", &r), (unsigned long long)field_u(ev, "text_size", &r),
			(unsigned long long)field_u(ev, "missed", &r)))
		goto cleanup;
	ASSERT_MSG(!ht_catalog_find(&cat, HT_DEFAULT_HYPERCALL_NR), "nr 1000 must stay undecoded");
cleanup:
	ht_catalog_free(&cat);
}

/* The one decoder of the project's events gives every field the guest header packs, by name. */
static void test_guest_event_decoder_gives_what_the_guest_header_packs(void)
{
	struct ht_gev_decoder g;
	struct ht_record r;
	struct ht_gev ev;

	if (!ASSERT_OK(ht_gev_decoder_init(&g), "decoder"))
		return;
	r = rec_of(HT_GUEST_NR_SCHED_SWITCH, ht_guest_pack_sched_switch(7, 120, 0x100, 0x123456, -1, "next-task", 3));
	ht_gev_decode(&g, &r, &ev);
	if (!ASSERT_MSG(ev.kind == HT_GEV_SCHED_SWITCH && ev.cpu == 3 && ev.u.sw.prev_tid == 7 &&
			ev.u.sw.next_tid == 0x123456 && ev.u.sw.prev_prio == 120 && ev.u.sw.next_prio == -1 &&
			ev.u.sw.prev_state == 0x100 && !strcmp(ev.u.sw.next_comm, "next-task"), "sched_switch"))
		return;
	r = rec_of(HT_GUEST_NR_SCHED_WAKEUP, ht_guest_pack_sched_wakeup(1234, 98, 5, "a-sixteen-chars!", 2));
	ht_gev_decode(&g, &r, &ev);
	if (!ASSERT_MSG(ev.kind == HT_GEV_SCHED_WAKEUP && ev.cpu == 2 && ev.u.wake.tid == 1234 && ev.u.wake.prio == 98 &&
			ev.u.wake.target_cpu == 5 && !strcmp(ev.u.wake.comm, "a-sixteen-chars!"), "sched_wakeup"))
		return;
	r = rec_of(HT_GUEST_NR_IRQ_ENTRY, ht_guest_pack_irq_entry(11, "virtio0-input.0-and-more-than-24", 1));
	ht_gev_decode(&g, &r, &ev);
	if (!ASSERT_MSG(ev.kind == HT_GEV_IRQ_ENTRY && ev.cpu == 1 && ev.u.irq.irq == 11 &&
			!strcmp(ev.u.irq.name, "virtio0-input.0-and-more"), "irq_handler_entry"))
		return;
	r = rec_of(HT_GUEST_NR_IRQ_EXIT, ht_guest_pack_irq_exit(11, -22, 1));
	ht_gev_decode(&g, &r, &ev);
	if (!ASSERT_MSG(ev.kind == HT_GEV_IRQ_EXIT && ev.u.irq.irq == 11 && ev.u.irq.ret == -22, "irq_handler_exit"))
		return;
	r = rec_of(HT_GUEST_NR_FUNC_ENTRY, ht_guest_pack_func(0xffffffff81234560ull, 0xffffffff81100010ull, 42, 4));
	ht_gev_decode(&g, &r, &ev);
	if (!ASSERT_MSG(ev.kind == HT_GEV_FUNC_ENTRY && ev.cpu == 4 && ev.u.func.tid == 42 &&
			ev.u.func.addr == 0xffffffff81234560ull && ev.u.func.call_site == 0xffffffff81100010ull, "func_entry"))
		return;
	r = rec_of(HT_GUEST_NR_FUNC_EXIT, ht_guest_pack_func(0xffffffff81234560ull, (uint64_t)-12, 42, 4));
	ht_gev_decode(&g, &r, &ev);
	if (!ASSERT_MSG(ev.kind == HT_GEV_FUNC_EXIT && ev.u.func.ret == (uint64_t)-12 && ev.u.func.call_site == 0, "func_exit"))
		return;
	r = rec_of(HT_GUEST_NR_MODULE, ht_guest_module_text(ht_guest_pack_module(1, 0xf, 3, 5, 0xffffffff9a0c1230ull, "_printk"),
							     0xffffffffc0a02000ull, 0x5000));
	ht_gev_decode(&g, &r, &ev);
	if (!ASSERT_MSG(ev.kind == HT_GEV_MODULE && ev.u.mod.state == 1 && ev.u.mod.events == 0xf &&
			ev.u.mod.functions == 3 && ev.u.mod.missed == 5 && ev.u.mod.anchor_addr == 0xffffffff9a0c1230ull &&
			!strcmp(ev.u.mod.anchor_name, "_printk") && ev.u.mod.text_start == 0xc0a02000u &&
			ev.u.mod.text_size == 0x5000, "hypertrace_module"))
		return;
	r = rec_of(HT_DEFAULT_HYPERCALL_NR, (struct ht_guest_args){ { 1, 2, 3, 4 } });
	ht_gev_decode(&g, &r, &ev);
	ASSERT_MSG(ev.kind == HT_GEV_NONE, "nr 1000 is none of the project's events");
}

static void test_guest_header_chooses_the_instruction_by_vendor_and_knows_kvm(void)
{
	/* "GenuineIntel", "AuthenticAMD", "HygonGenuine" in EBX, ECX, EDX. */
	CHECK(ht_guest_vendor_insn(0x756e6547, 0x6c65746e, 0x49656e69) == HT_GUEST_INSN_VMCALL, "Intel");
	CHECK(ht_guest_vendor_insn(0x68747541, 0x444d4163, 0x69746e65) == HT_GUEST_INSN_VMMCALL, "AMD");
	CHECK(ht_guest_vendor_insn(0x6f677948, 0x656e6975, 0x6e65476e) == HT_GUEST_INSN_VMMCALL, "Hygon");
	CHECK(ht_guest_vendor_insn(0x746e6543, 0x736c7561, 0x48727561) == HT_GUEST_INSN_UNKNOWN, "Centaur");
	/* "KVMKVMKVM\0\0\0" and Xen's "XenVMMXenVMM". */
	CHECK(ht_guest_is_kvm_signature(0x4b4d564b, 0x564b4d56, 0x4d), "KVM");
	CHECK(!ht_guest_is_kvm_signature(0x566e6558, 0x65584d4d, 0x4d4d566e), "Xen taken for KVM");
	CHECK(ht_guest_hypercall(HT_GUEST_INSN_UNKNOWN, 1000, 0, 0, 0, 0) == (ht_u64)-1,
	      "an unknown instruction must issue nothing");
}

static void test_guest_header_packs_marker_text_in_memory_order(void)
{
	struct ht_catalog cat = { 0 };
	const char *t = "startup done, phase two of three!";
	struct ht_record r = rec_of(1201, (struct ht_guest_args){ { ht_guest_text_word(t, 32, 0),
		ht_guest_text_word(t, 32, 1), ht_guest_text_word(t, 32, 2), ht_guest_text_word(t, 32, 3) } });

	if (!ASSERT_MSG(ht_catalog_init(&cat, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	if (!ASSERT_MSG(ht_catalog_parse(&cat, "1201 phase name=a0-a3:str\n", "user", false, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	if (!ASSERT_MSG(!strcmp(field_s(ht_catalog_find(&cat, 1201), "name", &r), "startup done, phase two of three"),
			"32-byte cut: '%s'", field_s(ht_catalog_find(&cat, 1201), "name", &r)))
		goto cleanup;
	r = rec_of(1201, (struct ht_guest_args){ { ht_guest_text_word("ab", 32, 0), ht_guest_text_word("ab", 32, 1), 0, 0 } });
	ASSERT_MSG(r.a0 == 0x6261 && r.a1 == 0, "short text a0=0x%llx a1=0x%llx", (unsigned long long)r.a0,
		   (unsigned long long)r.a1);
cleanup:
	ht_catalog_free(&cat);
}

static void test_user_catalog_fields_bits_types(void)
{
	struct ht_catalog cat = { 0 };
	struct ht_record r;
	const struct ht_event_desc *ev;

	if (!ASSERT_MSG(ht_catalog_init(&cat, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	if (!ASSERT_MSG(ht_catalog_parse(&cat,
			"# my app\n\n"
			"  1200 request  req=a0[0-31] status=a0[32-47]:s  bytes=a1 # trailing comment\n"
			"0x4b1 tag t=a2[8-23]:str whole=a3:x\n",
			"app.cat", false, err, sizeof(err)) == 0,
			"%s", err))
		goto cleanup;
	ev = ht_catalog_find(&cat, 1200);
	if (!ASSERT_MSG(ev && !strcmp(ev->name, "request") && ev->nfields == 3 && !ev->builtin, "request"))
		goto cleanup;
	r = rec_of(1200, (struct ht_guest_args){ { 0x0000fffe00000007ull, 4096, 0, 0 } });
	if (!ASSERT_MSG(field_u(ev, "req", &r) == 7 && ht_field_signed(ht_event_field(ev, "status"), &r) == -2 &&
			field_u(ev, "bytes", &r) == 4096, "request values"))
		goto cleanup;
	ev = ht_catalog_find(&cat, 0x4b1);
	if (!ASSERT_MSG(ev && ht_event_field(ev, "whole")->type == HT_FT_X, "tag"))
		goto cleanup;
	r = rec_of(0x4b1, (struct ht_guest_args){ { 0, 0, 0x00594b00ull, 0 } });
	ASSERT_MSG(!strcmp(field_s(ev, "t", &r), "KY"), "str from bits 8-23: '%s'", field_s(ev, "t", &r));
cleanup:
	ht_catalog_free(&cat);
}

static void test_user_catalog_errors_name_the_line_and_the_fix(void)
{
	struct ht_catalog cat = { 0 };
	static const struct { const char *text, *want; } cases[] = {
		{ "1101 mine a=a0\n", "app.cat:1: nr 1101 belongs to the project's own events (1100-1199): choose another nr" },
		{ "\n1200 x a=a0\n1200 y b=a1\n", "app.cat:3: nr 1200 is already defined (as x)" },
		{ "12z x\n", "app.cat:1: '12z' is not a hypercall nr" },
		{ "1200\n", "app.cat:1: expected an event NAME after nr 1200" },
		{ "1200 9x\n", "expected an event NAME" },
		{ "1200 x a=a4\n", "field 'a=a4': expected NAME=aN" },
		{ "1200 x a=a0[40-8]\n", "bits are [LO-HI] with 0 <= LO <= HI <= 63" },
		{ "1200 x a=a0[0-64]\n", "bits are [LO-HI]" },
		{ "1200 x a=a0[4-11]:str\n", "must cover whole bytes" },
		{ "1200 x a=a0-a2\n", "only for :str" },
		{ "1200 x a=a0:float\n", "unknown type: use u, s, x, str or sym" },
		{ "1200 x a=a0 a=a1\n", "field 'a' appears twice in x" },
		{ "1200 x =a0\n", "needs a NAME" },
		{ "1200 x a=a0 b=a0 c=a0 d=a0 e=a0 f=a0 g=a0 h=a0 i=a0 j=a0 k=a0 l=a0 m=a0 n=a0 o=a0 p=a0 q=a0\n",
		  "x has more than 16 fields" },
		/* Names every decoded event has in the exports, and the NAME_sym twin of a :sym field. */
		{ "1200 x vcpu_id=a0\n", "app.cat:1: field 'vcpu_id' of x: every guest event has a field of that name in the exports (vcpu_id, guest_rip, exit_to_hcall_ns, hcall_to_entry_ns): choose another name" },
		{ "1200 x a=a0 guest_rip=a1:x\n", "field 'guest_rip' of x: every guest event has a field of that name" },
		{ "1200 x exit_to_hcall_ns=a0\n", "field 'exit_to_hcall_ns' of x" },
		{ "1200 x hcall_to_entry_ns=a0\n", "field 'hcall_to_entry_ns' of x" },
		{ "1200 x addr=a0:sym addr_sym=a1\n", "app.cat:1: field 'addr_sym' of x is the name of the symbol of field 'addr' (a :sym field): choose another name" },
		{ "1200 x addr_sym=a1:str addr=a0:sym\n", "field 'addr_sym' of x is the name of the symbol of field 'addr'" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		ht_catalog_free(&cat);
		if (!ASSERT_MSG(ht_catalog_init(&cat, err, sizeof(err)) == 0, "%s", err))
			goto cleanup;
		err[0] = '\0';
		if (!ASSERT_MSG(ht_catalog_parse(&cat, cases[i].text, "app.cat", false, err, sizeof(err)) < 0,
				"accepted: %s", cases[i].text))
			goto cleanup;
		if (!ASSERT_MSG(strstr(err, cases[i].want), "case %zu: message '%s', want '%s'", i, err, cases[i].want))
			goto cleanup;
	}
	ASSERT_MSG(ht_catalog_load_file(&cat, "/nonexistent/app.cat", err, sizeof(err)) < 0 &&
		   strstr(err, "cannot open catalog /nonexistent/app.cat"), "%s", err);
cleanup:
	ht_catalog_free(&cat);
}

static const char system_map[] =
	"ffffffff81000000 T _stext\n"
	"ffffffff81000000 T _text\n"
	"ffffffff81001000 t local_helper\n"
	"ffffffff81002000 D some_data\n"
	"ffffffff81003000 T vfs_read\n"
	"ffffffff81003400 T vfs_write\n"
	"ffffffff81100000 T _printk\n"
	"ffffffff81200000 T _etext\n";

static void test_symbols_name_plus_offset_with_kaslr(void)
{
	struct ht_symtab syms = { 0 };
	char buf[128];
	uint64_t addr;

	if (!ASSERT_MSG(ht_symtab_parse(&syms, system_map, "System.map", err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	if (!ASSERT_MSG(syms.n == 7, "code symbols %zu, want 7 (data skipped)", syms.n))
		goto cleanup;
	if (!ASSERT_MSG(ht_symtab_format(&syms, 0xffffffff81003010ull, buf, sizeof(buf)) && !strcmp(buf, "vfs_read+0x10"), "%s", buf))
		goto cleanup;
	if (!ASSERT_MSG(ht_symtab_format(&syms, 0xffffffff81000004ull, buf, sizeof(buf)) && !strcmp(buf, "_stext+0x4"),
			"aliases: first by name, got %s", buf))
		goto cleanup;
	if (!ASSERT_MSG(ht_symtab_format(&syms, 0xffffffff81002100ull, buf, sizeof(buf)) && !strcmp(buf, "local_helper+0x1100"),
			"data symbols are not code: %s", buf))
		goto cleanup;
	if (!ASSERT_MSG(!ht_symtab_format(&syms, 0xffffffff80ffffffull, buf, sizeof(buf)), "below the first symbol"))
		goto cleanup;
	if (!ASSERT_MSG(!ht_symtab_format(&syms, 0xffffffff81200000ull + (2u << 20), buf, sizeof(buf)), "far past the end"))
		goto cleanup;
	if (!ASSERT_MSG(!ht_symtab_format(&syms, 0x401000, buf, sizeof(buf)), "user-space address"))
		goto cleanup;
	/* KASLR: run-time = file + offset. */
	if (!ASSERT_MSG(ht_symtab_format(&syms, 0xffffffff811fff00ull, buf, sizeof(buf)) && !strcmp(buf, "_printk+0xfff00"), "%s", buf))
		goto cleanup;
	if (!ASSERT_MSG(ht_symtab_addr_of(&syms, "_printk", &addr) && addr == 0xffffffff81100000ull, "addr_of"))
		goto cleanup;
	syms.offset = 0x1a000000;
	ASSERT_MSG(ht_symtab_format(&syms, 0xffffffff9b003404ull, buf, sizeof(buf)) && !strcmp(buf, "vfs_write+0x4"), "%s", buf);
cleanup:
	ht_symtab_free(&syms);
}

static void test_symbols_kallsyms_modules_and_refusals(void)
{
	struct ht_symtab syms = { 0 };
	if (!ASSERT_MSG(ht_symtab_parse(&syms, "ffffffffc0a00000 t kvm_foo\t[kvm]\nffffffff81000000 T _stext\n", "kallsyms",
			err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	char buf[128];
	if (!ASSERT_MSG(ht_symtab_format(&syms, 0xffffffffc0a00020ull, buf, sizeof(buf)) && !strcmp(buf, "kvm_foo+0x20 [kvm]"), "%s", buf))
		goto cleanup;
	/* Another boot's kallsyms (offset != 0) cannot name module addresses: modules move on their own. */
	syms.offset = 0x2000000;
	if (!ASSERT_MSG(!ht_symtab_format(&syms, 0xffffffffc0a00020ull, buf, sizeof(buf)), "module address named with an offset: %s", buf))
		goto cleanup;
	if (!ASSERT_MSG(ht_symtab_format(&syms, 0xffffffff83000010ull, buf, sizeof(buf)) && !strcmp(buf, "_stext+0x10"), "%s", buf))
		goto cleanup;
	ht_symtab_free(&syms);
	if (!ASSERT_MSG(ht_symtab_parse(&syms, "ffffffff81000000 T a\nffffffff81400000 T b\n", "map", err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	if (!ASSERT_MSG(!ht_symtab_format(&syms, 0xffffffff81200000ull, buf, sizeof(buf)), "in a gap of 2 MiB: %s", buf))
		goto cleanup;
	if (!ASSERT_MSG(ht_symtab_format(&syms, 0xffffffff810fffffull, buf, sizeof(buf)), "within 1 MiB"))
		goto cleanup;
	ht_symtab_free(&syms);
	if (!ASSERT_MSG(ht_symtab_parse(&syms, "ffffffffc0a00000 t kvm_foo\t[kvm]\nffffffff81000000 T _stext\n", "kallsyms",
			err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	/* A kernel-image address never lands on a module symbol. */
	syms.offset = 0;
	if (!ASSERT_MSG(!ht_symtab_format(&syms, 0xffffffffbfff0000ull, buf, sizeof(buf)), "image address named: %s", buf))
		goto cleanup;
	ht_symtab_free(&syms);
	/* A syscall wrapper and the local function inlined into it share an address: the global name wins. */
	if (!ASSERT_MSG(ht_symtab_parse(&syms, "ffffffff812ac050 t __do_sys_sync\nffffffff812ac050 T __x64_sys_sync\n", "kallsyms",
			err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	if (!ASSERT_MSG(ht_symtab_format(&syms, 0xffffffff812ac050ull, buf, sizeof(buf)) && !strcmp(buf, "__x64_sys_sync+0x0"), "%s", buf))
		goto cleanup;
	ht_symtab_free(&syms);
	if (!ASSERT_MSG(ht_symtab_parse(&syms, "0000000000000000 T _stext\n0000000000000000 T vfs_read\n", "kallsyms", err,
			sizeof(err)) < 0 && strstr(err, "every address is 0: copy /proc/kallsyms as root"), "%s", err))
		goto cleanup;
	if (!ASSERT_MSG(ht_symtab_parse(&syms, "hello world\n", "x", err, sizeof(err)) < 0 && strstr(err, "x:1: expected 'ADDRESS TYPE NAME'"),
			"%s", err))
		goto cleanup;
	if (!ASSERT_MSG(ht_symtab_parse(&syms, "zzzz T foo\n", "x", err, sizeof(err)) < 0 && strstr(err, "not a hexadecimal address"),
			"%s", err))
		goto cleanup;
	ASSERT_MSG(ht_symtab_load(&syms, "/nonexistent/System.map", err, sizeof(err)) < 0 &&
		   strstr(err, "cannot open guest symbols /nonexistent/System.map"), "%s", err);
cleanup:
	ht_symtab_free(&syms);
}

/* A trace file in dir with these records; returns its path. */
static const char *write_trace(const char *name, const struct ht_record *recs, size_t n, const uint32_t *nrs,
			       unsigned int nnrs)
{
	static char path[256];
	struct ht_file_header h;
	struct ht_writer *w;
	struct ht_trailer t = { .records = n };

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ht_header_init(&h);
	h.start_monotonic_ns = 1000000000ull;
	h.filter_nr_count = nnrs;
	for (unsigned int i = 0; i < nnrs; i++)
		h.filter_nr[i] = nrs[i];
	if (ht_writer_open(path, true, &h, &w, err, sizeof(err)))
		return NULL;
	for (size_t i = 0; i < n; i++)
		ht_writer_add(w, &recs[i]);
	t.end_monotonic_ns = n ? recs[n - 1].exit_ns + 1000 : h.start_monotonic_ns;
	return ht_writer_close(w, &t) ? NULL : path;
}

static void test_decoder_finds_kaslr_offset_from_module_event(void)
{
	struct ht_decoder dec = { 0 };
	struct ht_record recs[2];
	struct ht_decode_config cfg = { 0 };
	struct ht_file_header h;
	const uint32_t nrs[] = { 1100, 1105 };
	char path[256], symfile[256], buf[128];

	recs[0] = rec_of(HT_GUEST_NR_MODULE, ht_guest_pack_module(1, HT_GUEST_EV_FUNCTIONS, 1, 0,
								  0xffffffff81100000ull + 0x2c000000, "_printk"));
	recs[1] = rec_of(HT_GUEST_NR_FUNC_ENTRY, ht_guest_pack_func(0xffffffff81003000ull + 0x2c000000, 0, 1, 0));
	recs[0].exit_ns = 1000001000;
	recs[1].exit_ns = 1000002000;
	if (!ASSERT_MSG(write_trace("kaslr.htr", recs, 2, nrs, 2), "%s", err))
		goto cleanup;
	snprintf(path, sizeof(path), "%s/kaslr.htr", dir);
	snprintf(symfile, sizeof(symfile), "%s/System.map", dir);
	if (!ASSERT_MSG(ht_test_write_text(symfile, system_map) == 0, "cannot write %s", symfile))
		goto cleanup;
	memset(&h, 0, sizeof(h));
	h.filter_nr_count = 2;
	h.filter_nr[0] = 1100;
	h.filter_nr[1] = 1105;
	cfg.symbols = symfile;
	if (!ASSERT_MSG(ht_decoder_open(&dec, &cfg, path, &h, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	if (!ASSERT_MSG(dec.syms.offset == 0x2c000000, "offset 0x%llx", (unsigned long long)dec.syms.offset))
		goto cleanup;
	if (!ASSERT_MSG(dec.columns, "a file selecting nr 1100 has decoded columns"))
		goto cleanup;
	if (!ASSERT_MSG(ht_decoder_symbol(&dec, recs[1].a0, buf, sizeof(buf)) && !strcmp(buf, "vfs_read+0x0"), "%s", buf))
		goto cleanup;
	ht_decoder_close(&dec);
	/* Given explicitly, the offset wins over the anchor. */
	cfg.offset_given = true;
	cfg.offset = 0;
	if (!ASSERT_MSG(ht_decoder_open(&dec, &cfg, path, &h, err, sizeof(err)) == 0 && dec.syms.offset == 0, "given offset"))
		goto cleanup;
	ht_decoder_close(&dec);
	/* A file selecting only nr 1000 and no symbols: CSV stays as it was. */
	cfg = (struct ht_decode_config){ 0 };
	h.filter_nr_count = 1;
	h.filter_nr[0] = 1000;
	ASSERT_MSG(ht_decoder_open(&dec, &cfg, path, &h, err, sizeof(err)) == 0 && !dec.columns, "undecodable file has no columns");
cleanup:
	ht_decoder_close(&dec);
}

static void test_decoded_text_csv_json_forms(void)
{
	struct ht_decoder dec = { 0 };
	struct ht_decode_config cfg = { 0 };
	struct ht_file_header h = { .filter_nr_count = 1, .filter_nr = { 1101 } };
	struct ht_record r = rec_of(HT_GUEST_NR_SCHED_SWITCH,
				    ht_guest_pack_sched_switch(0, 120, 0, 12, 120, "my \"sh\"", 1));
	char *text = NULL;
	size_t len = 0;
	FILE *m;
	int same;

	if (!ASSERT_MSG(ht_decoder_open(&dec, &cfg, "/nonexistent.htr", &h, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	m = open_memstream(&text, &len);
	if (!ASSERT_MSG(m, "open_memstream"))
		goto cleanup;
	ht_decode_print_text(&dec, &r, m);
	fputc('\n', m);
	ht_decode_print_csv(&dec, &r, m);
	fputc('\n', m);
	ht_decode_print_json(&dec, &r, m);
	fclose(m);
	static const char want[] =
		" => sched_switch: prev_tid=0 next_tid=12 prev_prio=120 next_prio=120 prev_state=0x0 cpu_id=1 next_comm=\"my \\\"sh\\\"\"\n"
		",\"sched_switch\",\"prev_tid=0 next_tid=12 prev_prio=120 next_prio=120 prev_state=0x0 cpu_id=1 next_comm=\"\"my \\\"\"sh\\\"\"\"\"\",\"\",\"\"\n"
		",\"event\":\"sched_switch\",\"fields\":{\"prev_tid\":0,\"next_tid\":12,\"prev_prio\":120,\"next_prio\":120,"
		"\"prev_state\":\"0x0\",\"cpu_id\":1,\"next_comm\":\"my \\\"sh\\\"\"}";
	same = !strcmp(text, want);
	if (!same)
		printf("    got:\n%s\n    want:\n%s\n", text, want);
	free(text);
	ASSERT_MSG(same, "decoded forms differ");
cleanup:
	ht_decoder_close(&dec);
}

/*
 * Field names that clash in the CTF metadata make babeltrace2 refuse the
 * whole trace: such a catalog is refused before any output exists; names
 * that only look alike convert, and babeltrace2 reads them.
 */
static void test_ctf_field_names_never_clash(void)
{
	struct ht_record recs[1];
	const uint32_t nrs[] = { 1200 };
	char cmd[1400], catfile[256];
	int status;

	recs[0] = rec_of(1200, (struct ht_guest_args){ { 7, 0xffffffff81003000ull, 9, 0 } });
	recs[0].exit_ns = 1000001000;
	CHECK(write_trace("clash.htr", recs, 1, nrs, 1), "%s", err);
	snprintf(catfile, sizeof(catfile), "%s/clash.cat", dir);
	CHECK(ht_test_write_text(catfile, "1200 mine vcpu_id=a0 addr=a1:sym\n") == 0, "cannot write %s", catfile);
	snprintf(cmd, sizeof(cmd), "%s convert --ctf %s/clash-ctf --catalog %s %s/clash.htr 2>&1; echo status $?; ls %s/clash-ctf 2>&1 | head -1",
		 ht_test_bin(), dir, catfile, dir, dir);
	char *out = ht_test_run(cmd, NULL, &status);
	CHECK(out, "popen");
	int ok = strstr(out, "field 'vcpu_id' of mine: every guest event has a field of that name") &&
		 strstr(out, "status 1\n") && strstr(out, "No such file or directory") && !strstr(out, "converted");
	if (!ok)
		printf("    %s\n", out);
	free(out);
	CHECK(ok, "a clashing catalog was not refused before the output");
	CHECK(ht_test_write_text(catfile, "1200 mine vcpu=a0 addr=a1:sym addr_symbol=a2 _guest_rip=a3\n") == 0,
	      "cannot write %s", catfile);
	snprintf(cmd, sizeof(cmd), "%s convert --ctf %s/near-ctf --catalog %s %s/clash.htr >/dev/null 2>&1 && babeltrace2 %s/near-ctf 2>&1",
		 ht_test_bin(), dir, catfile, dir, dir);
	out = ht_test_run(cmd, NULL, &status);
	CHECK(out, "popen");
	ok = status == 0 && strstr(out, "mine: { pid = 500, tid = 0 }, { vcpu_id = 0, guest_rip = 0xFFFFFFFFC0A01234, "
				     "exit_to_hcall_ns = 0, hcall_to_entry_ns = 0, vcpu = 7, addr = 0xFFFFFFFF81003000, "
				     "addr_sym = \"\", addr_symbol = 9, _guest_rip = 0 }");
	if (!ok)
		printf("    status %d: %s\n", status, out);
	free(out);
	CHECK(ok, "babeltrace2 did not read the near names");
}

static void test_report_graph_pairs_nests_and_symbolizes(void)
{
	/* vcpu 0, tid 7: A { B(); B(); } then an exit of C whose entry came before the recording. */
	const uint64_t A = 0xffffffff81003000ull, B = 0xffffffff81003400ull, C = 0xffffffff81100000ull;
	struct ht_record recs[8];
	const uint32_t nrs[] = { 1105, 1106 };
	const struct { uint32_t nr; uint64_t addr; uint64_t t; } ev[] = {
		{ 1105, A, 1000 }, { 1105, B, 2000 }, { 1106, B, 2500 }, { 1105, B, 3000 },
		{ 1106, B, 4000 }, { 1106, A, 10000 }, { 1106, C, 11000 }, { 1105, C, 12000 },
	};
	char cmd[1024], symfile[256];
	int status;

	for (size_t i = 0; i < 8; i++) {
		recs[i] = rec_of(ev[i].nr, ht_guest_pack_func(ev[i].addr, 0, 7, 0));
		recs[i].exit_ns = 1000000000ull + ev[i].t;
	}
	CHECK(write_trace("graph.htr", recs, 8, nrs, 2), "%s", err);
	snprintf(symfile, sizeof(symfile), "%s/kallsyms", dir);
	CHECK(ht_test_write_text(symfile, system_map) == 0, "cannot write %s", symfile);
	snprintf(cmd, sizeof(cmd), "%s report --graph --guest-symbols %s --kaslr-offset 0 %s/graph.htr 2>&1", ht_test_bin(),
		 symfile, dir);
	char *out = ht_test_run(cmd, NULL, &status);
	CHECK(out, "popen");
	int ok = status == 0 && strstr(out, "# vCPU 0 of VM pid 500") &&
		 strstr(out, "|  vfs_read() {\n") && strstr(out, "0.500 us |    vfs_write();\n") &&
		 strstr(out, "1.000 us |    vfs_write();\n") && strstr(out, "9.000 us |  } /* vfs_read */\n") &&
		 strstr(out, "} /* _printk */ (entry not in the trace)") && strstr(out, "|  _printk() {\n") &&
		 strstr(out, "# 4 entries, 4 exits: 3 paired calls, 1 exits without entry, 1 entries without exit; max depth 1") &&
		 strstr(out, "          2          1.500        0.750        1.000  vfs_write");
	if (!ok)
		printf("    status %d, output:\n%s\n", status, out);
	free(out);
	CHECK(ok, "graph output");
}

static void test_report_sched_summary_run_times_and_gaps(void)
{
	/* vcpu 0: 0 -> 10 at 1 ms, 10 -> 0 at 4 ms, 0 -> 11 at 5 ms, (gap) 12 -> 0 at 8 ms; end 10 ms. */
	const struct { uint32_t prev, next; uint64_t ms; const char *comm; } ev[] = {
		{ 0, 10, 1, "sh" }, { 10, 0, 4, "swapper/0" }, { 0, 11, 5, "worker" }, { 12, 0, 8, "swapper/0" },
	};
	struct ht_record recs[5];
	const uint32_t nrs[] = { 1101 };
	char cmd[1024];
	int status;

	for (size_t i = 0; i < 4; i++) {
		recs[i] = rec_of(1101, ht_guest_pack_sched_switch(ev[i].prev, 120, 1, ev[i].next, 120, ev[i].comm, 0));
		recs[i].exit_ns = 1000000000ull + ev[i].ms * 1000000ull;
	}
	/* A second vCPU running tid 10 too: its total counts both. */
	recs[4] = rec_of(1101, ht_guest_pack_sched_switch(0, 120, 0, 10, 120, "sh", 1));
	recs[4].vcpu_id = 1;
	recs[4].exit_ns = 1000000000ull + 9 * 1000000ull;
	CHECK(write_trace("sched.htr", recs, 5, nrs, 1), "%s", err);
	/* The trailer ends the recording 1 us after the last record: 9.001 ms. */
	snprintf(cmd, sizeof(cmd), "%s report --sched %s/sched.htr 2>&1", ht_test_bin(), dir);
	char *out = ht_test_run(cmd, NULL, &status);
	CHECK(out, "popen");
	int ok = status == 0 &&
		 strstr(out, "guest scheduling: 5 sched_switch events on 2 vCPU(s), 1 gap(s)") &&
		 strstr(out, "vCPU 0 of VM pid 500: 4 switches from 0.001000 s to 0.008000 s, 1 gap(s)") &&
		 strstr(out, "        10  sh                      1          3.000") &&
		 strstr(out, "         0  swapper/0               2          2.001") &&
		 strstr(out, "        11  worker                  1          0.000") &&
		 strstr(out, "        10  sh                      2          3.001  0,1");
	if (!ok)
		printf("    status %d, output:\n%s\n", status, out);
	free(out);
	CHECK(ok, "sched output");
}

static void test_report_csv_unchanged_for_undecodable_files_and_rip_symbolized(void)
{
	struct ht_record recs[1];
	const uint32_t nrs[] = { 1000 };
	char cmd[1024], symfile[256];
	int status;

	recs[0] = rec_of(1000, (struct ht_guest_args){ { 1, 2, 3, 4 } });
	recs[0].exit_ns = 1000001000;
	recs[0].guest_rip = 0xffffffff81003404ull;
	CHECK(write_trace("plain.htr", recs, 1, nrs, 1), "%s", err);
	snprintf(cmd, sizeof(cmd), "%s report --csv %s/plain.htr 2>&1 | head -n 1", ht_test_bin(), dir);
	char *out = ht_test_run(cmd, NULL, &status);
	CHECK(out, "popen");
	int ok = !strcmp(out, "exit_ns,wallclock,host_pid,host_tid,vcpu_id,exit_cpu,entry_cpu,isa,exit_reason,nr,"
			      "a0,a1,a2,a3,guest_rip,exit_to_hcall_ns,hcall_to_entry_ns,total_ns,flags,"
			      "vm_name,process_name,thread_name\n");
	if (!ok)
		printf("    header: %s", out);
	free(out);
	CHECK(ok, "the CSV header of a file with no catalogued nr changed");
	snprintf(symfile, sizeof(symfile), "%s/rip.map", dir);
	CHECK(ht_test_write_text(symfile, system_map) == 0, "cannot write %s", symfile);
	snprintf(cmd, sizeof(cmd), "%s report --dump --guest-symbols %s --kaslr-offset 0 %s/plain.htr 2>&1", ht_test_bin(),
		 symfile, dir);
	out = ht_test_run(cmd, NULL, &status);
	CHECK(out, "popen");
	ok = status == 0 && strstr(out, " rip 0xffffffff81003404 ") && strstr(out, " rip_sym=vfs_write+0x4\n") && !strstr(out, "=>");
	if (!ok)
		printf("    %s", out);
	free(out);
	CHECK(ok, "guest RIP not symbolized in --dump");
}

static void test_convert_chrome_shows_guest_tasks_calls_and_events(void)
{
	struct ht_record recs[5];
	const uint32_t nrs[] = { 1101, 1105, 1106 };
	char cmd[2048], symfile[256];
	int status;

	recs[0] = rec_of(1101, ht_guest_pack_sched_switch(0, 120, 0, 42, 120, "worker", 1));
	recs[1] = rec_of(1105, ht_guest_pack_func(0xffffffff81003000ull, 0, 42, 1));
	recs[2] = rec_of(1106, ht_guest_pack_func(0xffffffff81003000ull, 7, 42, 1));
	recs[3] = rec_of(1101, ht_guest_pack_sched_switch(42, 120, 1, 0, 120, "swapper/1", 1));
	recs[4] = rec_of(1000, (struct ht_guest_args){ { 1, 2, 3, 4 } });
	for (int i = 0; i < 5; i++) {
		recs[i].exit_ns = 1000000000ull + 1000ull * (uint64_t)(i + 1);
		recs[i].host_tid = 501;
		recs[i].vcpu_id = 1;
	}
	CHECK(write_trace("chrome.htr", recs, 5, nrs, 3), "%s", err);
	snprintf(symfile, sizeof(symfile), "%s/chrome.map", dir);
	CHECK(ht_test_write_text(symfile, system_map) == 0, "cannot write %s", symfile);
	/* Python's json module is the reader: the file must be JSON, and hold the guest tracks. */
	snprintf(cmd, sizeof(cmd),
		 "%s convert --chrome %s/g.json --guest-symbols %s --kaslr-offset 0 %s/chrome.htr >/dev/null 2>&1 && "
		 "python3 -c 'import json, sys\n"
		 "ev = json.load(open(sys.argv[1]))[\"traceEvents\"]\n"
		 "def one(**kw): return [e for e in ev if all(e.get(k) == v for k, v in kw.items())]\n"
		 "tasks, cpus = 0x40000000 + 500, 0x20000000 + 500\n"
		 "assert len(one(ph=\"I\", name=\"sched_switch\", pid=500, tid=501)) == 2, \"sched_switch instants\"\n"
		 "i = one(ph=\"I\", name=\"func_exit\")[0]; assert i[\"args\"][\"addr_sym\"] == \"vfs_read+0x0\" and i[\"args\"][\"ret\"] == \"0x7\", i\n"
		 "assert [e[\"ts\"] for e in one(pid=tasks, tid=42, name=\"vfs_read\")] == [2.0, 3.0], \"call slice\"\n"
		 "assert [e[\"ph\"] for e in one(pid=tasks, tid=42) if e[\"ph\"] in \"BE\"] == [\"B\", \"E\"]\n"
		 "assert [(e[\"ph\"], e.get(\"name\")) for e in one(pid=cpus, tid=1) if e[\"ph\"] in \"BE\"] == "
		 "[(\"B\", \"worker (42)\"), (\"E\", None), (\"B\", \"swapper/1 (0)\"), (\"E\", None)], \"cpu track\"\n"
		 "assert one(ph=\"M\", pid=tasks, name=\"process_name\")[0][\"args\"][\"name\"] == \"guest tasks of VM 500\"\n"
		 "assert not one(ph=\"I\", name=\"hypercall 1000\") and len(one(ph=\"I\")) == 4\n"
		 "print(\"ok\")' %s/g.json 2>&1",
		 ht_test_bin(), dir, symfile, dir, dir);
	char *out = ht_test_run(cmd, NULL, &status);
	CHECK(out, "popen");
	int ok = status == 0 && !strcmp(out, "ok\n");
	if (!ok)
		printf("    status %d: %s\n", status, out);
	free(out);
	CHECK(ok, "Chrome JSON guest events");
	/* CTF: each decoded event an event class of its own, as babeltrace2 reads it. */
	snprintf(cmd, sizeof(cmd), "%s convert --ctf %s/ctf --guest-symbols %s --kaslr-offset 0 %s/chrome.htr >/dev/null 2>&1 && "
		 "babeltrace2 %s/ctf 2>&1", ht_test_bin(), dir, symfile, dir, dir);
	out = ht_test_run(cmd, NULL, &status);
	CHECK(out, "popen");
	ok = status == 0 &&
	     strstr(out, "sched_switch: { pid = 500, tid = 501 }, { vcpu_id = 1, guest_rip = 0xFFFFFFFFC0A01234, exit_to_hcall_ns = 0, "
			 "hcall_to_entry_ns = 0, prev_tid = 0, next_tid = 42, prev_prio = 120, next_prio = 120, prev_state = 0x0, "
			 "cpu_id = 1, next_comm = \"worker\" }") &&
	     strstr(out, "func_exit: { pid = 500, tid = 501 }, { vcpu_id = 1, guest_rip = 0xFFFFFFFFC0A01234, exit_to_hcall_ns = 0, "
			 "hcall_to_entry_ns = 0, addr = 0xFFFFFFFF81003000, addr_sym = \"vfs_read+0x0\", ret = 0x7, tid = 42, cpu_id = 1 }") &&
	     strstr(out, "hypercall: { pid = 500, tid = 501 }, { nr = 1000,");
	if (!ok)
		printf("    status %d: %s\n", status, out);
	free(out);
	CHECK(ok, "CTF guest event classes");
}

static void test_sched_run_ends_at_module_unload_and_idle_names_per_vcpu(void)
{
	struct ht_sched *sched = NULL;
	char *mem = NULL;
	struct ht_record r[4];
	struct ht_sched_stats st;
	size_t len = 0;
	FILE *m;
	int ok;

	sched = ht_sched_new();
	if (!ASSERT_MSG(sched, "ht_sched_new"))
		goto cleanup;
	r[0] = rec_of(1101, ht_guest_pack_sched_switch(10, 120, 1, 0, 120, "swapper/0", 0));
	r[1] = rec_of(1101, ht_guest_pack_sched_switch(11, 120, 1, 0, 120, "swapper/1", 1));
	r[1].vcpu_id = 1;
	r[2] = rec_of(1101, ht_guest_pack_sched_switch(0, 120, 0, 10, 120, "sh", 0));
	r[3] = rec_of(HT_GUEST_NR_MODULE, ht_guest_pack_module(0, 1, 0, 0, 0, "_printk"));
	r[0].exit_ns = 1000000;
	r[1].exit_ns = 1500000;
	r[2].exit_ns = 2000000;
	r[3].exit_ns = 3000000;
	for (int i = 0; i < 4; i++)
		if (!ASSERT_MSG(ht_sched_observe(sched, &r[i]) == 0, "observe %d", i))
			goto cleanup;
	m = open_memstream(&mem, &len);
	if (!ASSERT_MSG(m, "open_memstream"))
		goto cleanup;
	ht_sched_print(sched, m, 0, 10000000, &st);
	fclose(m);
	/* tid 10 ran from 2 ms to the unload at 3 ms, not to the end at 10 ms; so did vCPU 1's idle task from 1.5 ms. */
	ok = st.switches == 3 && st.gaps == 0 && st.vcpus == 2 &&
	     strstr(mem, "        10  sh                      1          1.000   50.0%") &&
	     strstr(mem, "         0  swapper/0               1          1.000   50.0%") &&
	     strstr(mem, "         0  swapper/1               1          1.500  100.0%");
	if (!ok)
		printf("%s", mem);
	ASSERT_MSG(ok, "run times or names");
cleanup:
	ht_sched_free(sched);
	free(mem);
}

static void test_report_dump_decodes_user_catalog_and_leaves_others(void)
{
	struct ht_record recs[2];
	const uint32_t nrs[] = { 1000, 1201 };
	char cmd[1024], catfile[256];
	int status;

	recs[0] = rec_of(1000, (struct ht_guest_args){ { 5, 0, 0, 0 } });
	recs[1] = rec_of(1201, (struct ht_guest_args){ { ht_guest_text_word("boot", 32, 0), 0, 0, 0 } });
	recs[0].exit_ns = 1000001000;
	recs[1].exit_ns = 1000002000;
	CHECK(write_trace("marks.htr", recs, 2, nrs, 2), "%s", err);
	snprintf(catfile, sizeof(catfile), "%s/app.cat", dir);
	CHECK(ht_test_write_text(catfile, "1201 phase name=a0-a3:str\n") == 0, "cannot write %s", catfile);
	snprintf(cmd, sizeof(cmd), "%s report --dump --catalog %s %s/marks.htr 2>&1", ht_test_bin(), catfile, dir);
	char *out = ht_test_run(cmd, NULL, &status);
	CHECK(out, "popen");
	/* Line 1: nr 1000, left as it was; line 2: the user's event, decoded. */
	char *second = strchr(out, '\n');
	int ok = status == 0 && second && strstr(out, "nr 1000 ") < second && !memmem(out, (size_t)(second - out), "=>", 2) &&
		 strstr(second, "nr 1201 ") && strstr(second, " => phase: name=\"boot\"\n");
	if (!ok)
		printf("    status %d, output:\n%s\n", status, out);
	free(out);
	CHECK(ok, "dump output");
	snprintf(cmd, sizeof(cmd), "%s report --dump --catalog %s/missing.cat %s/marks.htr 2>&1", ht_test_bin(), dir, dir);
	out = ht_test_run(cmd, NULL, &status);
	CHECK(out, "popen");
	ok = WEXITSTATUS(status) == 1 && strstr(out, "cannot open catalog");
	if (!ok)
		printf("    status %d, output:\n%s\n", status, out);
	free(out);
	CHECK(ok, "missing catalog is a runtime error");
	CHECK(ht_test_write_text(catfile, "# ok\n1201 phase name=a0[0-3]:str\n") == 0, "cannot write %s", catfile);
	snprintf(cmd, sizeof(cmd), "%s report --json --catalog %s %s/marks.htr 2>&1", ht_test_bin(), catfile, dir);
	out = ht_test_run(cmd, NULL, &status);
	CHECK(out, "popen");
	ok = WEXITSTATUS(status) == 1 && strstr(out, "app.cat:2: field 'name=a0[0-3]:str': a :str bit range must cover whole bytes") &&
	     !strchr(strchr(out, ':') ? strchr(out, ':') : out, '\n')[1];
	if (!ok)
		printf("    status %d, output:\n%s\n", status, out);
	free(out);
	CHECK(ok, "a bad catalog line: one line naming file:line, status 1");
	snprintf(cmd, sizeof(cmd), "%s report --csv --guest-symbols %s/none.map %s/marks.htr 2>&1", ht_test_bin(), dir, dir);
	out = ht_test_run(cmd, NULL, &status);
	CHECK(out, "popen");
	ok = WEXITSTATUS(status) == 1 && strstr(out, "cannot open guest symbols");
	if (!ok)
		printf("    status %d, output:\n%s\n", status, out);
	free(out);
	CHECK(ok, "missing symbols are a runtime error");
}

/*
 * KVM traces a hypercall before its privilege check: any process in the
 * guest can issue the project's nr. A trace with such forged events (from a
 * user-space rip, and from kernel code outside the module's text once the
 * load event gave its range) next to the module's own.
 */
static const char *write_forged_trace(const char *name, bool with_text_range)
{
	static struct ht_record recs[520];
	const uint32_t nrs[] = { 1100, 1101, 1105, 1106, 1201 };
	struct ht_guest_args load = ht_guest_pack_module(1, HT_GUEST_EV_SCHED_SWITCH, 1, 0,
							 0xffffffff81100000ull + 0x2c000000, "_printk");
	size_t n = 0;

	if (with_text_range)
		load = ht_guest_module_text(load, MODULE_TEXT, MODULE_TEXT_SIZE);
	/* Guest user space first: a module event with a bogus KASLR anchor. */
	recs[n] = rec_of(HT_GUEST_NR_MODULE, ht_guest_pack_module(1, 1, 0, 0, 0xffffffff81100000ull + 0x7000000, "_printk"));
	recs[n++].guest_rip = USER_RIP;
	recs[n++] = rec_of(HT_GUEST_NR_MODULE, load);
	recs[n++] = rec_of(HT_GUEST_NR_SCHED_SWITCH, ht_guest_pack_sched_switch(0, 120, 0, 10, 120, "sh", 0));
	/* 500 switches between two invented tasks, from user space. */
	for (int i = 0; i < 500; i++) {
		recs[n] = rec_of(HT_GUEST_NR_SCHED_SWITCH, ht_guest_pack_sched_switch(i % 2 ? 667 : 666, 120, 0,
										 i % 2 ? 666 : 667, 120, "evil", 0));
		recs[n++].guest_rip = USER_RIP + 3;
	}
	/* Kernel code, but not the module's: forged once the module's text is known. */
	recs[n] = rec_of(HT_GUEST_NR_FUNC_ENTRY, ht_guest_pack_func(0xffffffff81003000ull + 0x2c000000, 0, 10, 0));
	recs[n++].guest_rip = 0xffffffff81234567ull;
	recs[n++] = rec_of(HT_GUEST_NR_FUNC_ENTRY, ht_guest_pack_func(0xffffffff81003400ull + 0x2c000000, 0, 10, 0));
	recs[n++] = rec_of(HT_GUEST_NR_FUNC_EXIT, ht_guest_pack_func(0xffffffff81003400ull + 0x2c000000, 0, 10, 0));
	recs[n++] = rec_of(HT_GUEST_NR_SCHED_SWITCH, ht_guest_pack_sched_switch(10, 120, 1, 0, 120, "swapper/0", 0));
	/* A user marker from user space: valid there. */
	recs[n] = rec_of(1201, (struct ht_guest_args){ { ht_guest_text_word("boot", 32, 0), 0, 0, 0 } });
	recs[n++].guest_rip = USER_RIP + 6;
	for (size_t i = 0; i < n; i++)
		recs[i].exit_ns = 1000000000ull + 1000 * (i + 1);
	return write_trace(name, recs, n, nrs, 5);
}

/* `report ARGS DIR/NAME`, 2>&1, with the file's symbols and app.cat in DIR. */
static char *report_on(const char *name, const char *args, int *status)
{
	char cmd[1400];

	snprintf(cmd, sizeof(cmd), "%s report %s %s/%s 2>&1", ht_test_bin(), args, dir, name);
	return ht_test_run(cmd, NULL, status);
}

static void test_forged_guest_events_are_counted_never_decoded(void)
{
	char symfile[256], catfile[256], args[800];
	int status;

	CHECK(write_forged_trace("forged.htr", true), "%s", err);
	snprintf(symfile, sizeof(symfile), "%s/forged.map", dir);
	snprintf(catfile, sizeof(catfile), "%s/forged.cat", dir);
	CHECK(ht_test_write_text(symfile, system_map) == 0, "cannot write %s", symfile);
	CHECK(ht_test_write_text(catfile, "1201 phase name=a0-a3:str\n") == 0, "cannot write %s", catfile);

	/* --sched: no invented task, the forged switches counted. */
	char *out = report_on("forged.htr", "--sched", &status);
	CHECK(out, "popen");
	int ok = status == 0 && !strstr(out, "666") && !strstr(out, "evil") &&
		 strstr(out, "guest scheduling: 2 sched_switch events on 1 vCPU(s), 0 gap(s)") &&
		 strstr(out, "502 guest module event(s) not from the guest kernel's module (forged): ignored");
	if (!ok)
		printf("    --sched, status %d:\n%s\n", status, out);
	free(out);
	CHECK(ok, "--sched used forged events");

	/* --dump: the KASLR offset from the module's own anchor; forged lines say so; the marker decodes. */
	snprintf(args, sizeof(args), "--dump --guest-symbols %s --catalog %s", symfile, catfile);
	out = report_on("forged.htr", args, &status);
	CHECK(out, "popen");
	ok = status == 0 && strstr(out, "rip 0x401000 ") && strstr(out, " => (forged: not from the guest kernel's module, not decoded)\n") &&
	     strstr(out, "=> func_entry: addr=vfs_write+0x0 ") && !strstr(out, "evil") &&
	     strstr(out, "rip 0xffffffff81234567 ") && strstr(out, " => phase: name=\"boot\"\n");
	if (!ok)
		printf("    --dump, status %d:\n%.3000s\n", status, out);
	free(out);
	CHECK(ok, "--dump decoded forged events, or took the forged anchor");

	/* --graph: only the module's call. */
	snprintf(args, sizeof(args), "--graph --guest-symbols %s", symfile);
	out = report_on("forged.htr", args, &status);
	CHECK(out, "popen");
	ok = status == 0 && strstr(out, "# 1 entries, 1 exits: 1 paired calls") && !strstr(out, "vfs_read") &&
	     strstr(out, "# 502 guest module event(s) not from the guest kernel's module (forged): ignored");
	if (!ok)
		printf("    --graph, status %d:\n%s\n", status, out);
	free(out);
	CHECK(ok, "--graph used forged events");

	/* The summary counts them; --json and --csv mark them. */
	out = report_on("forged.htr", "", &status);
	CHECK(out, "popen");
	ok = status == 0 && strstr(out, "\nguest module events not from the guest kernel's module (forged, not decoded): 502\n");
	if (!ok)
		printf("    summary, status %d:\n%s\n", status, out);
	free(out);
	CHECK(ok, "summary");
	out = report_on("forged.htr", "--json", &status);
	CHECK(out, "popen");
	ok = status == 0 && strstr(out, "\"guest_rip\":\"0x401000\",") && strstr(out, ",\"forged\":true}\n") &&
	     !strstr(out, "\"next_comm\":\"evil\"");
	free(out);
	CHECK(ok, "--json");
	out = report_on("forged.htr", "--csv", &status);
	CHECK(out, "popen");
	ok = status == 0 && strstr(out, ",0x401000,") && strstr(out, ",\"(forged)\",\"\",\"\",\"\"\n") && !strstr(out, "evil");
	if (!ok)
		printf("    --csv, status %d:\n%.2000s\n", status, out);
	free(out);
	CHECK(ok, "--csv");

	/* Exports: forged records stay plain hypercalls, counted in the metadata. */
	snprintf(args, sizeof(args),
		 "%s convert --chrome %s/forged.json %s/forged.htr >/dev/null 2>&1 && python3 -c 'import json, sys\n"
		 "d = json.load(open(sys.argv[1])); ev = d[\"traceEvents\"]\n"
		 "assert not [e for e in ev if \"evil\" in json.dumps(e) or e.get(\"tid\") in (666, 667)], \"forged task\"\n"
		 "assert len([e for e in ev if e.get(\"ph\") == \"I\" and e[\"name\"] == \"sched_switch\"]) == 2\n"
		 "assert d[\"metadata\"][\"forged_guest_events\"] == 502, d[\"metadata\"]\n"
		 "print(\"ok\")' %s/forged.json 2>&1",
		 ht_test_bin(), dir, dir, dir);
	out = ht_test_run(args, NULL, &status);
	CHECK(out, "popen");
	ok = status == 0 && !strcmp(out, "ok\n");
	if (!ok)
		printf("    chrome: %s\n", out);
	free(out);
	CHECK(ok, "convert --chrome used forged events");
	snprintf(args, sizeof(args), "%s convert --ctf %s/forged-ctf %s/forged.htr >/dev/null 2>&1 && babeltrace2 %s/forged-ctf 2>&1",
		 ht_test_bin(), dir, dir, dir);
	out = ht_test_run(args, NULL, &status);
	CHECK(out, "popen");
	ok = status == 0 && !strstr(out, "evil") && strstr(out, "sched_switch: ") &&
	     strstr(out, "hypercall: { pid = 500, tid = 0 }, { nr = 1101,");
	if (!ok)
		printf("    ctf: %.2000s\n", out);
	free(out);
	CHECK(ok, "convert --ctf used forged events");
	snprintf(args, sizeof(args), "grep -c 'forged_guest_events = 502;' %s/forged-ctf/metadata", dir);
	out = ht_test_run(args, NULL, &status);
	CHECK(out && !strcmp(out, "1\n"), "CTF env: %s", out ? out : "");
	free(out);

	char cmd[2400];

	/*
	 * LTTng: the forged records are the host's kvm events alone, no guest
	 * event and no vmsync pair (the module's 5 events have theirs), counted
	 * in the host's env.
	 */
	snprintf(cmd, sizeof(cmd),
		 "%s convert --lttng %s/forged-lttng %s/forged.htr >/dev/null 2>&1 && cd %s/forged-lttng && ls && "
		 "grep -c 'forged_guest_events = 502;' host/metadata && babeltrace2 host | grep -c 'kvm_x86_hypercall: .* nr = 1101,' && "
		 "babeltrace2 host | grep -c 'vmsync_gh_host:' && babeltrace2 guest-500 | grep -c ' sched_switch:' && "
		 "! babeltrace2 guest-500 host 2>&1 | grep -i -e evil -e 'tid = 66[67]' -e warning",
		 ht_test_bin(), dir, dir, dir);
	out = ht_test_run(cmd, NULL, &status);
	CHECK(out, "popen");
	ok = status == 0 && !strcmp(out, "guest-500\nhost\n1\n502\n5\n2\n");
	if (!ok)
		printf("    lttng, status %d: %.2000s\n", status, out);
	free(out);
	CHECK(ok, "convert --lttng used forged events");

	/* Perfetto: plain hypercall slices equal to report --csv, 2 guest switches, the count an attribute. */
	snprintf(cmd, sizeof(cmd),
		 "%s convert --perfetto %s/forged.pftrace %s/forged.htr >/dev/null 2>&1 && "
		 "%s report --csv %s/forged.htr >%s/forged.csv && mkdir -p %s/forged-pb && "
		 "/usr/bin/python3 tests/export/check_perfetto.py third_party/perfetto/perfetto_trace.proto %s/forged.pftrace "
		 "%s/forged.csv --payloads %s/forged-pb --attribute dev.hypertrace.forged_guest_events=502 2>&1 | tail -n 1 && "
		 "protoc --proto_path=third_party/perfetto --decode=perfetto.protos.Trace perfetto_trace.proto "
		 "<%s/forged-pb/bundle-0.pb >%s/forged-pb/bundle-0.txt && grep -c 'name: \"hypercall 1101\"' %s/forged-pb/bundle-0.txt && "
		 "! grep -e evil -e 'pid: 66[67]$' %s/forged-pb/bundle-0.txt",
		 ht_test_bin(), dir, dir, ht_test_bin(), dir, dir, dir, dir, dir, dir, dir, dir, dir, dir);
	out = ht_test_run(cmd, NULL, &status);
	CHECK(out, "popen");
	ok = status == 0 && !strcmp(out, "check_perfetto: OK\n1\n");
	if (!ok)
		printf("    perfetto, status %d: %.2000s\n", status, out);
	free(out);
	CHECK(ok, "convert --perfetto used forged events");
}

/* The rules of decode/guest_origin.c one by one, per VM. */
static void test_guest_origin_rules(void)
{
	struct ht_guest_origin o;
	struct ht_record load = rec_of(HT_GUEST_NR_MODULE, ht_guest_module_text(ht_guest_pack_module(1, 1, 0, 0, 0, "_printk"),
										   MODULE_TEXT, MODULE_TEXT_SIZE));
	struct ht_record sw = rec_of(HT_GUEST_NR_SCHED_SWITCH, ht_guest_pack_sched_switch(0, 120, 0, 1, 120, "a", 0));
	struct ht_record marker = rec_of(1201, (struct ht_guest_args){ { 1, 0, 0, 0 } });
	struct ht_record bogus;

	ht_guest_origin_init(&o);
	/* Before any load event: the kernel half. */
	sw.guest_rip = 0xffffffff81000000ull;
	if (!ASSERT_FALSE(ht_guest_origin_forged(&o, &sw), "kernel rip, no range yet"))
		goto cleanup;
	sw.guest_rip = 0x00007fffffffe000ull;
	if (!ASSERT_TRUE(ht_guest_origin_forged(&o, &sw), "user rip"))
		goto cleanup;
	marker.guest_rip = USER_RIP;
	if (!ASSERT_FALSE(ht_guest_origin_forged(&o, &marker), "a user marker from user space is the user's"))
		goto cleanup;
	/* The load event's range, for its VM only. */
	if (!ASSERT_OK(ht_guest_origin_note(&o, &load), "note"))
		goto cleanup;
	sw.guest_rip = MODULE_TEXT + MODULE_TEXT_SIZE - 1;
	if (!ASSERT_FALSE(ht_guest_origin_forged(&o, &sw), "last byte of the text"))
		goto cleanup;
	sw.guest_rip = MODULE_TEXT + MODULE_TEXT_SIZE;
	if (!ASSERT_TRUE(ht_guest_origin_forged(&o, &sw), "past the text"))
		goto cleanup;
	sw.host_pid = 501;
	if (!ASSERT_FALSE(ht_guest_origin_forged(&o, &sw), "another VM has no range"))
		goto cleanup;
	/* A load event from user space changes nothing; one whose range misses itself drops the range. */
	bogus = load;
	bogus.guest_rip = USER_RIP;
	if (!ASSERT_TRUE(ht_guest_origin_forged(&o, &bogus) && ht_guest_origin_note(&o, &bogus) == 0, "forged load"))
		goto cleanup;
	sw.host_pid = 500;
	if (!ASSERT_TRUE(ht_guest_origin_forged(&o, &sw), "the range still holds"))
		goto cleanup;
	bogus.guest_rip = MODULE_TEXT + MODULE_TEXT_SIZE + 0x1000;
	if (!ASSERT_TRUE(!ht_guest_origin_forged(&o, &bogus) && ht_guest_origin_note(&o, &bogus) == 0, "kernel load"))
		goto cleanup;
	ASSERT_FALSE(ht_guest_origin_forged(&o, &sw), "a range that does not hold its own load event is dropped");
cleanup:
	ht_guest_origin_free(&o);
}

/* A recording of an older module (no text range): the kernel half is the rule. */
static void test_without_a_text_range_kernel_addresses_decode(void)
{
	int status;

	CHECK(write_forged_trace("forged-old.htr", false), "%s", err);
	char *out = report_on("forged-old.htr", "--graph", &status);
	CHECK(out, "popen");
	/* The kernel call outside the module now counts (no range to hold it to); user space still does not. */
	int ok = status == 0 && strstr(out, "# 2 entries, 1 exits: 1 paired calls") &&
		 strstr(out, "# 501 guest module event(s) not from the guest kernel's module (forged): ignored");
	if (!ok)
		printf("    status %d:\n%s\n", status, out);
	free(out);
	CHECK(ok, "--graph of an older recording");
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_builtin_catalog_decodes_what_the_guest_header_packs_sched_switch);
	RUN(test_builtin_catalog_decodes_every_project_event);
	RUN(test_guest_event_decoder_gives_what_the_guest_header_packs);
	RUN(test_guest_header_chooses_the_instruction_by_vendor_and_knows_kvm);
	RUN(test_guest_header_packs_marker_text_in_memory_order);
	RUN(test_user_catalog_fields_bits_types);
	RUN(test_user_catalog_errors_name_the_line_and_the_fix);
	RUN(test_ctf_field_names_never_clash);
	RUN(test_symbols_name_plus_offset_with_kaslr);
	RUN(test_symbols_kallsyms_modules_and_refusals);
	RUN(test_decoder_finds_kaslr_offset_from_module_event);
	RUN(test_decoded_text_csv_json_forms);
	RUN(test_report_graph_pairs_nests_and_symbolizes);
	RUN(test_report_sched_summary_run_times_and_gaps);
	RUN(test_report_dump_decodes_user_catalog_and_leaves_others);
	RUN(test_report_csv_unchanged_for_undecodable_files_and_rip_symbolized);
	RUN(test_convert_chrome_shows_guest_tasks_calls_and_events);
	RUN(test_forged_guest_events_are_counted_never_decoded);
	RUN(test_without_a_text_range_kernel_addresses_decode);
	RUN(test_guest_origin_rules);
	RUN(test_sched_run_ends_at_module_unload_and_idle_names_per_vcpu);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
	return ht_test_exit_status();
}
