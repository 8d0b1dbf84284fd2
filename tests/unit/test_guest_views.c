// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What the decoded guest events show: the probed function under its own
 * name (not an alias at its address), a module's symbol as one token with
 * its module apart in CSV and JSON, a negative --kaslr-offset, the task of a
 * vCPU's first calls in --graph, and one idle task per CPU in --sched's
 * every-vCPU table.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "decode/decode_options.h"
#include "decode/decoder.h"
#include "decode/func_graph.h"
#include "decode/guest_symbols.h"
#include "decode/sched_summary.h"
#include "hypertrace/guest.h"
#include "common/util.h"
#include "test.h"

static char err[512];

/* The aliases a zero-argument syscall has in a 6.1 guest's kallsyms, and a module's function. */
static const char kallsyms[] =
	"ffffffff9a2a1f30 T __ia32_sys_getppid\n"
	"ffffffff9a2a1f30 T __x64_sys_getppid\n"
	"ffffffff9a2a1f30 t __do_sys_getppid\n"
	"ffffffff9a3ac050 T __ia32_sys_sync\n"
	"ffffffff9a3ac050 T __x64_sys_sync\n"
	"ffffffff9a3b1000 T iterate_supers\n"
	"ffffffffc0a01000 t emit_module_event\t[hypertrace_guest]\n";

static void test_probed_syscall_named_by_its_x64_entry_not_an_alias(void)
{
	struct ht_symtab t;
	char buf[128];

	if (!ASSERT_MSG(ht_symtab_parse(&t, kallsyms, "kallsyms", err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	if (!ASSERT_MSG(ht_symtab_format(&t, 0xffffffff9a2a1f30ull, buf, sizeof(buf)) && !strcmp(buf, "__x64_sys_getppid+0x0"),
			"%s", buf))
		goto cleanup;
	if (!ASSERT_MSG(ht_symtab_format(&t, 0xffffffff9a3ac061ull, buf, sizeof(buf)) && !strcmp(buf, "__x64_sys_sync+0x11"),
			"%s", buf))
		goto cleanup;
	if (!ASSERT_MSG(ht_symtab_format(&t, 0xffffffff9a3b1004ull, buf, sizeof(buf)) && !strcmp(buf, "iterate_supers+0x4"),
			"%s", buf))
		goto cleanup;
cleanup:
	ht_symtab_free(&t);
}

static void test_module_symbol_is_one_token_and_its_module_apart(void)
{
	struct ht_decoder d;
	struct ht_record r = { .nr = HT_GUEST_NR_IRQ_EXIT, .guest_rip = 0xffffffffc0a01071ull };
	const char *mod = NULL;
	char buf[128], *text = NULL;
	size_t len = 0;
	FILE *f;

	memset(&d, 0, sizeof(d));
	ht_guest_origin_init(&d.origin);
	if (!ASSERT_MSG(ht_catalog_init(&d.cat, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	if (!ASSERT_MSG(ht_symtab_parse(&d.syms, kallsyms, "kallsyms", err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	d.have_syms = d.columns = true;
	if (!ASSERT_MSG(ht_decoder_symbol(&d, r.guest_rip, buf, sizeof(buf)) &&
		      !strcmp(buf, "emit_module_event+0x71 [hypertrace_guest]"), "text: %s", buf))
		goto cleanup;
	if (!ASSERT_MSG(ht_decoder_symbol_parts(&d, r.guest_rip, buf, sizeof(buf), &mod) && !strcmp(buf, "emit_module_event+0x71") &&
		      mod && !strcmp(mod, "hypertrace_guest"), "parts: %s %s", buf, mod ? mod : "(none)"))
		goto cleanup;
	if (!ASSERT_MSG(ht_decoder_symbol_parts(&d, 0xffffffff9a3b1000ull, buf, sizeof(buf), &mod) && !mod, "a kernel symbol has no module"))
		goto cleanup;
	/* Where a call is shown (graph, slices, event classes): no "+0x0", the module after the name. */
	if (!ASSERT_MSG(ht_decoder_function(&d, 0xffffffffc0a01000ull, buf, sizeof(buf)) &&
		      !strcmp(buf, "emit_module_event [hypertrace_guest]"), "function: %s", buf))
		goto cleanup;
	if (!ASSERT_MSG(ht_decoder_function(&d, 0xffffffff9a3b1000ull, buf, sizeof(buf)) && !strcmp(buf, "iterate_supers"),
			"function: %s", buf))
		goto cleanup;
	if (!ASSERT_MSG(ht_decoder_function(&d, 0xffffffff9a3b1004ull, buf, sizeof(buf)) && !strcmp(buf, "iterate_supers+0x4"),
			"function: %s", buf))
		goto cleanup;

	f = open_memstream(&text, &len);
	ht_decode_print_json(&d, &r, f);
	fclose(f);
	if (!ASSERT_MSG(strstr(text, ",\"rip_sym\":\"emit_module_event+0x71\",\"rip_module\":\"hypertrace_guest\""), "json: %s", text))
		goto cleanup;
	free(text);
	f = open_memstream(&text, &len);
	ht_decode_print_csv_header(&d, f);
	fputc('\n', f);
	ht_decode_print_csv(&d, &r, f);
	fclose(f);
	if (!ASSERT_MSG(strstr(text, ",event,fields,rip_sym,rip_module\n") &&
		      strstr(text, ",\"emit_module_event+0x71\",\"hypertrace_guest\""), "csv: %s", text))
		goto cleanup;
cleanup:
	free(text);
	ht_decoder_close(&d);
}

static void test_kaslr_offset_may_be_negative(void)
{
	struct ht_decode_config cfg;
	FILE *saved = stderr;

	memset(&cfg, 0, sizeof(cfg));
	CHECK(ht_decode_option("report", HT_OPT_KASLR_OFFSET, "-0xde00000", &cfg) == 1 && cfg.offset_given &&
		      cfg.offset == (uint64_t)-0xde00000ll, "offset %#llx", (unsigned long long)cfg.offset);
	CHECK(ht_decode_option("report", HT_OPT_KASLR_OFFSET, "0x1a000000", &cfg) == 1 && cfg.offset == 0x1a000000u,
	      "positive");
	stderr = fopen("/dev/null", "w");
	int ret = ht_decode_option("report", HT_OPT_KASLR_OFFSET, "--5", &cfg);
	int ret2 = ht_decode_option("report", HT_OPT_KASLR_OFFSET, "-", &cfg);
	fclose(stderr);
	stderr = saved;
	CHECK(ret == HT_EXIT_USAGE && ret2 == HT_EXIT_USAGE, "--5: %d, -: %d", ret, ret2);
}

static struct ht_record guest_rec(uint32_t nr, struct ht_guest_args a, uint64_t t, uint16_t vcpu)
{
	struct ht_record r = { .exit_ns = t, .nr = nr, .a0 = a.a[0], .a1 = a.a[1], .a2 = a.a[2], .a3 = a.a[3],
			       .host_pid = 500, .host_tid = 501u + vcpu, .vcpu_id = vcpu, .isa = HT_ISA_SVM,
			       .exit_to_hcall_ns = 100, .hcall_to_entry_ns = 100 };
	return r;
}

static void test_graph_names_the_task_of_a_vcpus_first_calls(void)
{
	struct ht_fgraph *g = ht_fgraph_new(NULL);
	struct ht_record r[] = {
		guest_rec(HT_GUEST_NR_FUNC_ENTRY, ht_guest_pack_func(0xffffffff9a3ac050ull, 0, 77, 1), 1000, 1),
		guest_rec(HT_GUEST_NR_FUNC_EXIT, ht_guest_pack_func(0xffffffff9a3ac050ull, 0, 77, 1), 5000, 1),
	};
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	for (size_t i = 0; i < ARRAY_SIZE(r); i++)
		if (!ASSERT_MSG(ht_fgraph_observe(g, &r[i]) == 0, "observe"))
			goto cleanup;
	ht_fgraph_print(g, f, 0, NULL);
	fclose(f);
	if (!ASSERT_MSG(strstr(text, "FUNCTION CALLS\n ------------------------------------------ tid 77\n"), "%s", text))
		goto cleanup;
cleanup:
	free(text);
	ht_fgraph_free(g);
}

static void test_sched_every_vcpu_table_keeps_each_cpus_idle_task(void)
{
	struct ht_sched *s = ht_sched_new();
	struct ht_record r[] = {
		guest_rec(HT_GUEST_NR_SCHED_SWITCH, ht_guest_pack_sched_switch(7, 120, 1, 0, 120, "swapper/0", 0), 1000, 0),
		guest_rec(HT_GUEST_NR_SCHED_SWITCH, ht_guest_pack_sched_switch(8, 120, 1, 0, 120, "swapper/1", 1), 1500, 1),
		guest_rec(HT_GUEST_NR_SCHED_SWITCH, ht_guest_pack_sched_switch(0, 120, 0, 7, 120, "work", 0), 3000, 0),
		guest_rec(HT_GUEST_NR_SCHED_SWITCH, ht_guest_pack_sched_switch(0, 120, 0, 8, 120, "work2", 1), 5500, 1),
	};
	char *text = NULL, *table;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	for (size_t i = 0; i < ARRAY_SIZE(r); i++)
		if (!ASSERT_MSG(ht_sched_observe(s, &r[i]) == 0, "observe"))
			goto cleanup;
	ht_sched_print(s, f, 0, 6000, NULL);
	fclose(f);
	table = strstr(text, "every vCPU:");
	/* swapper/0 ran 2000 ns on vCPU 0, swapper/1 4000 ns on vCPU 1: two rows, not one. */
	if (!ASSERT_MSG(table && strstr(table, "         0  swapper/1               1          0.004  1\n") &&
		      strstr(table, "         0  swapper/0               1          0.002  0\n"), "%s", text))
		goto cleanup;
cleanup:
	free(text);
	ht_sched_free(s);
}

int main(void)
{
	RUN(test_probed_syscall_named_by_its_x64_entry_not_an_alias);
	RUN(test_module_symbol_is_one_token_and_its_module_apart);
	RUN(test_kaslr_offset_may_be_negative);
	RUN(test_graph_names_the_task_of_a_vcpus_first_calls);
	RUN(test_sched_every_vcpu_table_keeps_each_cpus_idle_task);
	return ht_test_exit_status();
}
