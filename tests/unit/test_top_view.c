// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* top's frame: rows per VM from an interval's exit table, sorted, cut to the screen, names escaped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "exits/exit_table.h"
#include "test.h"
#include "top/top_view.h"

/* An interval's and the run's exit tables, and the text of the last frame written from them. */
struct fixture {
	struct ht_exit_table interval, total;
	char *text;
	size_t len;
};

static void fixture_init(struct fixture *fx)
{
	ht_exit_table_init(&fx->interval);
	ht_exit_table_init(&fx->total);
	fx->text = NULL;
	fx->len = 0;
}

static void fixture_free(struct fixture *fx)
{
	ht_exit_table_free(&fx->interval);
	ht_exit_table_free(&fx->total);
	free(fx->text);
	fx->text = NULL;
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

/* VM pid: n io exits and h hypercalls on vCPU 0 in the interval, one vCPU thread waiting w ns of it, in guest the rest. */
static void vm(struct fixture *fx, uint32_t pid, uint64_t n, uint64_t h, uint64_t w)
{
	struct ht_exit_key io = { .pid = pid, .isa = HT_ISA_SVM, .reason = 0x7b };
	struct ht_exit_key hc = { .pid = pid, .isa = HT_ISA_SVM, .reason = HT_SVM_EXIT_CODE_VMMCALL };
	struct ht_exit_hist hist = { .count = n, .total_ns = n * 1000, .min_ns = 1000, .max_ns = 1000 };
	struct ht_vcpu_wait wt = { .pid = pid, .tid = pid + 1, .wait_ns = w };

	hist.slots[9] = n;
	ht_exit_table_set_series(&fx->interval, &io, &hist);
	hist.count = hist.slots[9] = h;
	if (h)
		ht_exit_table_set_series(&fx->interval, &hc, &hist);
	struct ht_vcpu_account a = { .start_ns = 1000, .as_of_ns = 1000 + 1000000000 };

	a.state_ns[HT_VCPU_WAIT] = w;
	a.state_ns[HT_VCPU_GUEST] = 1000000000 - w;
	ht_exit_table_set_thread(&fx->interval, &wt, &a, NULL, false);
	ht_exit_table_set_thread(&fx->total, &wt, &a, NULL, false);
}

/* A frame written into fx->text (in place of the last one); its number of lines. */
static int frame(struct fixture *fx, struct ht_top_view_opts *o)
{
	FILE *f;
	int n;

	free(fx->text);
	fx->text = NULL;
	f = open_memstream(&fx->text, &fx->len);
	o->interval_ns = 1000000000;
	o->vm_name = names;
	o->alive = alive;
	n = ht_top_view_write(f, &fx->interval, &fx->total, o);
	fclose(f);
	return n;
}

static void rows_per_vm_sorted_by_the_key_with_names_escaped(void)
{
	struct ht_top_view_opts o = { .sort = HT_TOP_SORT_EXITS };
	struct fixture fx;
	const char *a, *b;

	fixture_init(&fx);
	vm(&fx, 10, 100, 0, 500000000);
	vm(&fx, 20, 300, 40, 0);
	vm(&fx, 30, 999, 0, 0);
	if (!ASSERT_MSG(frame(&fx, &o) == 4, "lines: %s", fx.text))
		goto cleanup;
	a = strstr(fx.text, " alpha ");
	b = strstr(fx.text, " b\\x1b[2Jeta ");
	if (!ASSERT_MSG(a && b && b < a, "exits/s: beta (340) before alpha (100):\n%s", fx.text))
		goto cleanup;
	if (!ASSERT_MSG(!strstr(fx.text, "gamma"), "an ended VM is shown:\n%s", fx.text))
		goto cleanup;
	if (!ASSERT_MSG(!strchr(fx.text, '\x1b'), "a raw escape byte"))
		goto cleanup;
	/* 80 columns: the exit rate and where the vCPUs' time went; p50, p99 and hypercalls/s dropped. */
	if (!ASSERT_MSG(strstr(fx.text, "    PID VM                    EXITS/S GUEST%   KVM%   VMM%  WAIT%  HALT%   BLK%\n") &&
				strstr(fx.text, "     20 b\\x1b[2Jeta               340  100.0    0.0    0.0    0.0    0.0    0.0\n"),
			"the beta row:\n%s", fx.text))
		goto cleanup;
	if (!ASSERT_MSG(strstr(fx.text, "     10 alpha                     100   50.0    0.0    0.0   50.0    0.0    0.0\n") != NULL,
			"alpha waits 50%%:\n%s", fx.text))
		goto cleanup;
	/* Wide enough: every column; POLL% "-" where KVM polled in no halt, PBURN% 0 where none was lost. */
	o.width = 140;
	if (!ASSERT_MSG(frame(&fx, &o) == 4 &&
				strstr(fx.text, "     20 b\\x1b[2Jeta               340 1.00us 1.00us  100.0    0.0    0.0    0.0    0.0    0.0      -    0.0      -      -      -       40\n"),
			"every column at 140:\n%s", fx.text))
		goto cleanup;
	/*
	 * alpha's vCPU: 10 halts polled in the interval, 4 of them caught; the
	 * 6 that slept polled 10 ms of its second (PBURN% 1.0); of them, 5
	 * wake-ups of the timer's in [32, 64) us, the longest 40
	 * us, and one of another vector's of 3 ms: their p99 is that one. Its
	 * interrupts: 2 IPIs under 4 us and a device's of 1.5 ms, their p99.
	 * Its timer wake-ups from their due time: 4 in [64, 128) us, the
	 * longest 90 us, their p99.
	 */
	{
		struct ht_vcpu_wait wt = { .pid = 10, .tid = 11, .wait_ns = 500000000 };
		struct ht_vcpu_account a = { .start_ns = 1000, .as_of_ns = 1000 + 1000000000 };
		struct ht_vcpu_halts h = { .halts = 12, .polled = 10, .caught = 4, .slept = 6, .slept_poll_ns = 10000000 };

		h.wake.c[HT_WAKE_TIMER] = (struct ht_vcpu_wake_hist){ .total_ns = 180000, .max_ns = 40000, .slots = { [15] = 5 } };
		h.wake.c[HT_WAKE_VECTOR] = (struct ht_vcpu_wake_hist){ .total_ns = 3000000, .max_ns = 3000000, .slots = { [21] = 1 } };

		a.state_ns[HT_VCPU_WAIT] = a.state_ns[HT_VCPU_GUEST] = 500000000;
		ht_exit_table_set_thread(&fx.interval, &wt, &a, &h, false);
		struct ht_vcpu_thread_row *in = ht_exit_table_thread(&fx.interval, 11, 1000, false);

		if (!ASSERT_OK_PTR(in, "alpha's thread"))
			goto cleanup;
		in->irqs.c[HT_IRQ_IPI] = (struct ht_vcpu_wake_hist){ .total_ns = 6000, .max_ns = 3000, .slots = { [11] = 2 } };
		in->irqs.c[HT_IRQ_DEVICE] = (struct ht_vcpu_wake_hist){ .total_ns = 1500000, .max_ns = 1500000, .slots = { [20] = 1 } };
		in->due = (struct ht_vcpu_timer_due){ .h = { .total_ns = 300000, .max_ns = 90000, .slots = { [16] = 4 } },
						      .fire_ns = 20000 };
	}
	if (!ASSERT_MSG(frame(&fx, &o) == 4 &&
				strstr(fx.text, "     10 alpha                     100 1.00us 1.00us   50.0    0.0    0.0   50.0    0.0    0.0   40.0    1.0 3.00ms 1.50ms 90.0us        0\n"),
			"POLL%% is caught of polled, PBURN%% the polling lost of the threads' time, WAKE99 the wake-ups' p99, IRQ99 the interrupts', DUE99 the timer wake-ups' from their due time:\n%s", fx.text))
		goto cleanup;
	/* Without the one of 3 ms, the p99 is the timer's slot's bound, lowered to their longest. */
	{
		struct ht_vcpu_wait wt = { .pid = 10, .tid = 11, .wait_ns = 500000000 };
		struct ht_vcpu_account a = { .start_ns = 1000, .as_of_ns = 1000 + 1000000000 };
		struct ht_vcpu_halts h = { .halts = 12, .polled = 10, .caught = 4, .slept = 6 };

		h.wake.c[HT_WAKE_TIMER] = (struct ht_vcpu_wake_hist){ .total_ns = 180000, .max_ns = 40000, .slots = { [15] = 5 } };
		a.state_ns[HT_VCPU_WAIT] = a.state_ns[HT_VCPU_GUEST] = 500000000;
		ht_exit_table_set_thread(&fx.interval, &wt, &a, &h, false);
	}
	if (!ASSERT_MSG(frame(&fx, &o) == 4 &&
				strstr(fx.text, "     10 alpha                     100 1.00us 1.00us   50.0    0.0    0.0   50.0    0.0    0.0   40.0    0.0 40.0us 1.50ms 90.0us        0\n"),
			"WAKE99 at most the longest:\n%s", fx.text))
		goto cleanup;
	o.width = 0;
	o.sort = HT_TOP_SORT_WAIT;
	if (!ASSERT_MSG(frame(&fx, &o) == 4, "lines"))
		goto cleanup;
	a = strstr(fx.text, " alpha ");
	b = strstr(fx.text, " b\\x1b[2Jeta ");
	if (!ASSERT_MSG(a && b && a < b, "wait: alpha before beta:\n%s", fx.text))
		goto cleanup;
	o.sort = HT_TOP_SORT_HCALLS;
	o.reasons = true;
	if (!ASSERT_MSG(frame(&fx, &o) == 7, "lines with reasons: %s", fx.text))
		goto cleanup;
	ASSERT_MSG(strstr(fx.text, "  hypercall ") != NULL, "the hypercall reason row");
cleanup:
	fixture_free(&fx);
}

static void a_frame_fits_the_screen(void)
{
	struct ht_top_view_opts o = { .sort = HT_TOP_SORT_PID, .width = 40, .height = 6, .vcpus = true };
	struct fixture fx;
	int n;

	fixture_init(&fx);
	for (uint32_t p = 100; p < 120; p++)
		vm(&fx, p, p, 0, 0);
	n = frame(&fx, &o);
	if (!ASSERT_MSG(n == 6, "%d lines for 6 rows:\n%s", n, fx.text))
		goto cleanup;
	if (!ASSERT_MSG(strstr(fx.text, "\n... 37 more rows\n") != NULL, "the cut is said:\n%s", fx.text))
		goto cleanup;
	for (char *l = fx.text; *l;) {
		size_t w = strcspn(l, "\n");
		if (!ASSERT_MSG(w <= 40, "a line of %zu columns", w))
			goto cleanup;
		l += w + (l[w] == '\n');
	}
cleanup:
	fixture_free(&fx);
}

/* Exits BPF could not count (series table full, no vCPU thread slot): a line of their own, in 80x24 too. */
static void lost_exits_are_shown(void)
{
	struct ht_top_view_opts o = { .sort = HT_TOP_SORT_EXITS, .width = 80, .height = 24, .terminal = true };
	struct fixture fx;

	fixture_init(&fx);
	vm(&fx, 10, 100, 0, 0);
	if (!ASSERT_MSG(frame(&fx, &o) == 4 && !strstr(fx.text, "lost"), "no loss, no line:\n%s", fx.text))
		goto cleanup;
	fx.interval.lost_series_full = 30;
	fx.interval.lost_no_thread = 12;
	if (!ASSERT_MSG(frame(&fx, &o) == 5, "lines:\n%s", fx.text))
		goto cleanup;
	ASSERT_MSG(strstr(fx.text, "\nlost 42 exits/s: 30/s series table full, 12/s no vCPU thread slot\n") != NULL,
		   "the loss line:\n%s", fx.text);
	o.terminal = false; /* batch */
	if (!ASSERT_MSG(frame(&fx, &o) == 4, "batch lines:\n%s", fx.text))
		goto cleanup;
	ASSERT_MSG(strstr(fx.text, "\nlost 42 exits/s:") != NULL, "the loss line in batch:\n%s", fx.text);
cleanup:
	fixture_free(&fx);
}

/* Exits whose cause BPF could not count (its cause table full): a line of their own, with the lost exits'. */
static void lost_causes_are_shown(void)
{
	struct ht_top_view_opts o = { .sort = HT_TOP_SORT_EXITS, .width = 80, .height = 24, .terminal = true };
	struct fixture fx;

	fixture_init(&fx);
	vm(&fx, 10, 100, 0, 0);
	if (!ASSERT_MSG(frame(&fx, &o) == 4 && !strstr(fx.text, "cause"), "no loss, no line:\n%s", fx.text))
		goto cleanup;
	fx.interval.causes.lost = 7;
	if (!ASSERT_MSG(frame(&fx, &o) == 5, "lines:\n%s", fx.text))
		goto cleanup;
	if (!ASSERT_MSG(strstr(fx.text, "\nlost the causes of 7 exits/s: cause table full (the exits are counted)\n") != NULL,
			"the lost causes line:\n%s", fx.text))
		goto cleanup;
	fx.interval.lost_series_full = 3;
	if (!ASSERT_MSG(frame(&fx, &o) == 6, "both loss lines:\n%s", fx.text))
		goto cleanup;
	ASSERT_MSG(strstr(fx.text, "\nlost 3 exits/s:") && strstr(fx.text, "\nlost the causes of 7 exits/s:"),
		   "both loss lines:\n%s", fx.text);
cleanup:
	fixture_free(&fx);
}

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * CPU seconds of one frame (every row, vCPUs and reasons) of n series and
 * n/2 threads: over n/2 VMs, or all of one vCPU of one VM (one_vm).
 */
static double frame_seconds(uint32_t n, bool one_vm)
{
	struct ht_top_view_opts o = { .sort = HT_TOP_SORT_EXITS, .vcpus = true, .reasons = true,
				      .interval_ns = 1000000000 };
	struct ht_exit_hist h = { .count = 1, .total_ns = 1000, .min_ns = 1000, .max_ns = 1000 };
	struct ht_exit_table interval, total;
	FILE *null = fopen("/dev/null", "w");
	double t = -1;

	h.slots[9] = 1;
	ht_exit_table_init(&interval);
	ht_exit_table_init(&total);
	for (uint32_t i = 0; i < n; i++) {
		struct ht_exit_key k = { .pid = one_vm ? 1000 : 1000 + i / 2, .vcpu = 0, .isa = HT_ISA_SVM,
					 .reason = one_vm ? i : i % 2 };
		struct ht_vcpu_wait w = { .pid = one_vm ? 1000 : 1000 + i, .tid = 100000 + i, .wait_ns = 5 };
		struct ht_vcpu_account acc = { .start_ns = 1, .as_of_ns = 1000000001, .state_ns = { 1000000000 } };

		if (ht_exit_table_set_series(&interval, &k, &h) ||
		    (i < n / 2 && (ht_exit_table_set_thread(&interval, &w, &acc, NULL, false) ||
				       ht_exit_table_set_thread(&total, &w, &acc, NULL, false))))
			goto out;
	}
	if (!null)
		goto out;
	t = cpu_seconds();
	if (ht_top_view_write(null, &interval, &total, &o) < 0)
		t = -1;
	else
		t = cpu_seconds() - t;
out:
	if (null)
		fclose(null);
	ht_exit_table_free(&interval);
	ht_exit_table_free(&total);
	return t;
}

/*
 * As many series and threads as BPF holds (16384, 8192), over many VMs or
 * on one vCPU: a frame costs about ten times what a tenth costs
 * (quadratic: a hundred), measured here.
 */
static void a_frame_is_linear_in_the_tables(void)
{
	for (int one_vm = 0; one_vm < 2; one_vm++) {
		double small = frame_seconds(1638, one_vm), big = frame_seconds(16384, one_vm);

		if (!ASSERT_MSG(small >= 0 && big >= 0, "frames"))
			return;
		if (!ASSERT_MSG(big < 30 * (small > 0.002 ? small : 0.002), "%s: %.3f s for 16384 series, %.3f s for 1638",
				one_vm ? "one vCPU" : "many VMs", big, small))
			return;
	}
}

int main(void)
{
	RUN(a_frame_is_linear_in_the_tables);
	RUN(lost_exits_are_shown);
	RUN(lost_causes_are_shown);
	RUN(rows_per_vm_sorted_by_the_key_with_names_escaped);
	RUN(a_frame_fits_the_screen);
	return ht_test_exit_status();
}
