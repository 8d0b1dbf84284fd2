// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A failed load is explained by the verifier's own reason, taken from its log. */
#include <string.h>
#include <bpf/libbpf.h>
#include "record/tracer.h"
#include "bpf/vcpu_state.h" /* before the skeleton, whose .bss holds the CPU slots */
#include "hypertrace.skel.h"
#include "test.h"

/* The tail of a real 6.1 log of on_kvm_entry in aggregate mode. */
static const char log_6_1[] =
	"func#0 @0\n"
	"0: R1=ctx(off=0,imm=0) R10=fp0\n"
	"; h->slots[HT_AGG_TOTAL][log2_slot(r->exit_to_hcall_ns + hcall_to_entry) & (HT_AGG_SLOTS - 1)]++;\n"
	"112: (0f) r1 += r2\n"
	"math between map_value pointer and register with unbounded min value is not allowed\n"
	"processed 120 insns (limit 1000000) max_states_per_insn 0 total_states 7 peak_states 7 mark_read 4\n";

static void the_reason_is_the_last_line_before_the_statistics(void)
{
	char out[128];

	CHECK(ht_verifier_log_reason(log_6_1, out, sizeof(out)), "no reason found");
	ASSERT_STREQ(out, "math between map_value pointer and register with unbounded min value is not allowed", "out");
}

static void newer_kernels_statistics_lines_are_skipped_too(void)
{
	char out[128];
	const char log[] = "0: (b7) r0 = 0\n"
			   "R0 !read_ok\n"
			   "verification time 12 usec\n"
			   "stack depth 0\n"
			   "processed 1 insns (limit 1000000) max_states_per_insn 0 total_states 0\n\n";

	CHECK(ht_verifier_log_reason(log, out, sizeof(out)) && !strcmp(out, "R0 !read_ok"), "reason '%s'", out);
}

static void an_empty_log_has_no_reason(void)
{
	char out[16];

	CHECK(!ht_verifier_log_reason("", out, sizeof(out)), "reason in an empty log");
	CHECK(!ht_verifier_log_reason("processed 3 insns\n", out, sizeof(out)), "statistics taken as a reason");
}

/*
 * Every program that loads gets a log, however many there are: the object's
 * programs all set to load (more than the 16 a fixed table once held), none
 * is left without one, and so none fails without its reason.
 */
static void every_program_that_loads_has_a_log(void)
{
	struct hypertrace_bpf *skel = hypertrace_bpf__open();
	struct ht_verifier_logs logs = { .n = 0 };
	struct bpf_program *prog;
	unsigned int programs = 0, without_log = 0;

	if (!ASSERT_OK_PTR(skel, "hypertrace_bpf__open"))
		return;
	bpf_object__for_each_program(prog, skel->obj) {
		bpf_program__set_autoload(prog, true);
		programs++;
	}
	if (!ASSERT_GT(programs, 16u, "programs in the object"))
		goto cleanup;
	if (!ASSERT_OK(ht_verifier_logs_attach(&logs, skel->obj), "ht_verifier_logs_attach"))
		goto cleanup;
	ASSERT_EQ(logs.n, programs, "logs");
	bpf_object__for_each_program(prog, skel->obj) {
		size_t size = 0;
		without_log += !bpf_program__log_buf(prog, &size) || !size;
	}
	ASSERT_EQ(without_log, 0u, "programs without a log");
cleanup:
	ht_verifier_logs_free(&logs);
	hypertrace_bpf__destroy(skel);
}

int main(void)
{
	RUN(the_reason_is_the_last_line_before_the_statistics);
	RUN(newer_kernels_statistics_lines_are_skipped_too);
	RUN(an_empty_log_has_no_reason);
	RUN(every_program_that_loads_has_a_log);
	return ht_test_exit_status();
}
