// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* top's frame: rows per VM from an interval's exit table, sorted, cut to the screen, names escaped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "exits/exit_table.h"
#include "test.h"
#include "top/top_view.h"

static struct ht_exit_table interval, total;
static char *text;
static size_t len;

static void cleanup(void)
{
	ht_exit_table_free(&interval);
	ht_exit_table_free(&total);
	free(text);
	text = NULL;
}

static const char *names(void *ctx, uint32_t pid)
{
	(void)ctx;
	return pid == 10 ? "alpha" : pid == 20 ? "b\x1b[2Jeta" : pid == 30 ? "gamma" : NULL;
}

static bool alive(void *ctx, uint32_t pid)
{
	(void)ctx;
	return pid != 30; /* gamma has ended */
}

/* VM pid: n io exits and h hypercalls on vCPU 0 in the interval, one vCPU thread waiting w ns. */
static void vm(uint32_t pid, uint64_t n, uint64_t h, uint64_t w)
{
	struct ht_exit_key io = { .pid = pid, .isa = HT_ISA_SVM, .reason = 0x7b };
	struct ht_exit_key hc = { .pid = pid, .isa = HT_ISA_SVM, .reason = HT_SVM_EXIT_CODE_VMMCALL };
	struct ht_exit_hist hist = { .count = n, .total_ns = n * 1000, .min_ns = 1000, .max_ns = 1000 };
	struct ht_vcpu_wait wt = { .pid = pid, .tid = pid + 1, .wait_ns = w };

	hist.slots[9] = n;
	ht_exit_table_set_series(&interval, &io, &hist);
	hist.count = hist.slots[9] = h;
	if (h)
		ht_exit_table_set_series(&interval, &hc, &hist);
	ht_exit_table_set_thread(&interval, &wt);
	ht_exit_table_set_thread(&total, &wt);
}

static int frame(struct ht_top_view_opts *o)
{
	FILE *f = open_memstream(&text, &len);

	o->interval_ns = 1000000000;
	o->vm_name = names;
	o->alive = alive;
	int n = ht_top_view_write(f, &interval, &total, o);
	fclose(f);
	return n;
}

static void rows_per_vm_sorted_by_the_key_with_names_escaped(void)
{
	struct ht_top_view_opts o = { .sort = HT_TOP_SORT_EXITS };

	ht_exit_table_init(&interval);
	ht_exit_table_init(&total);
	vm(10, 100, 0, 500000000);
	vm(20, 300, 40, 0);
	vm(30, 999, 0, 0);
	CHECK(frame(&o) == 4, "lines: %s", text);
	const char *a = strstr(text, " alpha "), *b = strstr(text, " b\\x1b[2Jeta ");
	CHECK(a && b && b < a, "exits/s: beta (340) before alpha (100):\n%s", text);
	CHECK(!strstr(text, "gamma"), "an ended VM is shown:\n%s", text);
	CHECK(!strchr(text, '\x1b'), "a raw escape byte");
	CHECK(strstr(text, "     20 b\\x1b[2Jeta                 340  1.00us  1.00us    0.0       40\n") != NULL,
	      "the beta row:\n%s", text);
	CHECK(strstr(text, "   50.0        0\n") != NULL, "alpha waits 50%%:\n%s", text);
	free(text);
	text = NULL;
	o.sort = HT_TOP_SORT_WAIT;
	CHECK(frame(&o) == 4, "lines");
	a = strstr(text, " alpha ");
	b = strstr(text, " b\\x1b[2Jeta ");
	CHECK(a && b && a < b, "wait: alpha before beta:\n%s", text);
	free(text);
	text = NULL;
	o.sort = HT_TOP_SORT_HCALLS;
	o.reasons = true;
	CHECK(frame(&o) == 7, "lines with reasons: %s", text);
	CHECK(strstr(text, "  hypercall ") != NULL, "the hypercall reason row");
}

static void a_frame_fits_the_screen(void)
{
	struct ht_top_view_opts o = { .sort = HT_TOP_SORT_PID, .width = 40, .height = 6, .vcpus = true };

	ht_exit_table_init(&interval);
	ht_exit_table_init(&total);
	for (uint32_t p = 100; p < 120; p++)
		vm(p, p, 0, 0);
	int n = frame(&o);
	CHECK(n == 6, "%d lines for 6 rows:\n%s", n, text);
	CHECK(strstr(text, "\n... 37 more rows\n") != NULL, "the cut is said:\n%s", text);
	for (char *l = text; *l;) {
		size_t w = strcspn(l, "\n");
		CHECK(w <= 40, "a line of %zu columns", w);
		l += w + (l[w] == '\n');
	}
}

int main(void)
{
	ht_test_cleanup = cleanup;
	RUN(rows_per_vm_sorted_by_the_key_with_names_escaped);
	RUN(a_frame_fits_the_screen);
	return ht_test_exit_status();
}
