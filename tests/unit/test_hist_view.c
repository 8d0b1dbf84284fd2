// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Exact text of the latency histogram frames of hist_view.c, rendered into memory. */
#include "hist/hist_view.h"
#include "test.h"

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* Output of one render, and its lines (escape codes left in place). */
struct out {
	char *buf;
	size_t size;
	char *copy; /* of buf, split into lines */
	char *lines[512];
	int n;
};

/* Frees what o holds, ready for another render; an all-zero out holds nothing. */
static void out_free(struct out *o)
{
	free(o->buf);
	free(o->copy);
	memset(o, 0, sizeof(*o));
}

/* Splits a copy of the buffer at '\n'; a last line without '\n' counts too. */
static void split_copy(struct out *o)
{
	char *copy = strdup(o->buf), *p = copy;

	free(o->copy);
	o->copy = copy;
	o->n = 0;
	while (copy && *p && o->n < 512) {
		char *nl = strchr(p, '\n');

		o->lines[o->n++] = p;
		if (!nl)
			break;
		*nl = '\0';
		p = nl + 1;
	}
}

static int render(struct out *o, struct ht_latset *set, const struct ht_hv_opts *opts,
		  const struct ht_hv_frame *f)
{
	FILE *fp = open_memstream(&o->buf, &o->size);
	int err;

	if (!fp)
		return -1;
	err = ht_hv_render(fp, set, opts, f);
	fclose(fp);
	return err;
}

static int render_hist(struct out *o, const struct ht_hist *h, unsigned int width)
{
	FILE *fp = open_memstream(&o->buf, &o->size);
	int err;

	if (!fp)
		return -1;
	err = ht_hv_render_hist(fp, h, width);
	fclose(fp);
	return err;
}

static void add_total(struct ht_latset *set, uint32_t pid, uint16_t vcpu, uint32_t ns)
{
	struct ht_record r = { 0 };

	r.host_pid = pid;
	r.host_tid = pid + 1;
	r.vcpu_id = vcpu;
	r.exit_to_hcall_ns = ns;
	r.hcall_to_entry_ns = 0;
	ht_latset_add_record(set, &r);
}

static size_t count_char(const char *s, char c)
{
	size_t n = 0;

	for (; *s; s++)
		n += *s == c;
	return n;
}

static void test_hist_rows_like_print_log2_hist(void)
{
	struct ht_hist h = { 0 };
	struct out o = { 0 };

	for (int i = 0; i < 10; i++)
		ht_hist_add(&h, 300);
	for (int i = 0; i < 40; i++)
		ht_hist_add(&h, 1500);
	if (!ASSERT_MSG(render_hist(&o, &h, 80) == 0, "render"))
		goto cleanup;
	split_copy(&o);
	if (!ASSERT_MSG(o.n == 4, "%d lines:\n%s", o.n, o.buf))
		goto cleanup;
	/* Leading empty slots trimmed, the empty one between kept. */
	if (!ASSERT_STREQ(o.lines[0], "     nsecs               : count    distribution", "o.lines[0]"))
		goto cleanup;
	if (!ASSERT_STREQ(o.lines[1], "       256 -> 511        : 10       |**********                              |", "o.lines[1]"))
		goto cleanup;
	if (!ASSERT_STREQ(o.lines[2], "       512 -> 1023       : 0        |                                        |", "o.lines[2]"))
		goto cleanup;
	if (!ASSERT_STREQ(o.lines[3], "      1024 -> 2047       : 40       |****************************************|", "o.lines[3]"))
		goto cleanup;
cleanup:
	out_free(&o);
}

static void test_hist_zero_and_star_rounding(void)
{
	struct ht_hist h = { 0 };
	uint64_t raw[HT_HIST_SLOTS] = { 0 };
	struct out o = { 0 };

	raw[0] = 3;  /* values 0 and 1 */
	raw[1] = 40; /* 2..3 */
	raw[2] = 1;  /* 4..7: 1 * 40 / 40 = 1 star */
	ht_hist_add_slots(&h, raw);
	if (!ASSERT_MSG(render_hist(&o, &h, 80) == 0, "render"))
		goto cleanup;
	split_copy(&o);
	if (!ASSERT_MSG(o.n == 4, "%d lines:\n%s", o.n, o.buf))
		goto cleanup;
	if (!ASSERT_STREQ(o.lines[1], "         0 -> 1          : 3        |***                                     |", "o.lines[1]"))
		goto cleanup;
	if (!ASSERT_STREQ(o.lines[3], "         4 -> 7          : 1        |*                                       |", "o.lines[3]"))
		goto cleanup;
cleanup:
	out_free(&o);
}

static void test_unit_switch_at_10us(void)
{
	struct ht_hist h = { 0 };
	struct out o = { 0 };

	ht_hist_add(&h, 9999);
	if (!ASSERT_MSG(render_hist(&o, &h, 80) == 0, "render"))
		goto cleanup;
	split_copy(&o);
	if (!ASSERT_MSG(o.n == 2, "%d lines", o.n))
		goto cleanup;
	if (!ASSERT_STREQ(o.lines[0], "     nsecs               : count    distribution", "o.lines[0]"))
		goto cleanup;
	if (!ASSERT_STREQ(o.lines[1], "      8192 -> 16383      : 1        |****************************************|", "o.lines[1]"))
		goto cleanup;
	out_free(&o);

	/* Same bucket, max 10000 ns: the bounds in usecs, exact to the ns. */
	ht_hist_add(&h, 10000);
	if (!ASSERT_MSG(render_hist(&o, &h, 80) == 0, "render"))
		goto cleanup;
	split_copy(&o);
	if (!ASSERT_MSG(o.n == 2, "%d lines", o.n))
		goto cleanup;
	if (!ASSERT_STREQ(o.lines[0], "     usecs               : count    distribution", "o.lines[0]"))
		goto cleanup;
	if (!ASSERT_STREQ(o.lines[1], "     8.192 -> 16.383     : 2        |****************************************|", "o.lines[1]"))
		goto cleanup;
cleanup:
	out_free(&o);
}

static void test_bar_narrows_with_width(void)
{
	struct ht_hist h = { 0 };
	struct out o = { 0 };

	for (int i = 0; i < 40; i++)
		ht_hist_add(&h, 1500);
	for (int i = 0; i < 3; i++)
		ht_hist_add(&h, 600);
	/* 60 columns: 36 for the columns, 2 for the bars, 22 stars. */
	if (!ASSERT_MSG(render_hist(&o, &h, 60) == 0, "render"))
		goto cleanup;
	split_copy(&o);
	if (!ASSERT_MSG(o.n == 3, "%d lines", o.n))
		goto cleanup;
	if (!ASSERT_STREQ(o.lines[1], "       512 -> 1023       : 3        |*                     |", "o.lines[1]"))
		goto cleanup;
	if (!ASSERT_STREQ(o.lines[2], "      1024 -> 2047       : 40       |**********************|", "o.lines[2]"))
		goto cleanup;
	if (!ASSERT_MSG(strlen(o.lines[2]) == 60, "row of %zu columns", strlen(o.lines[2])))
		goto cleanup;
	out_free(&o);

	/* 200 columns: no wider than print_log2_hist's 40 stars. */
	if (!ASSERT_MSG(render_hist(&o, &h, 200) == 0, "render"))
		goto cleanup;
	split_copy(&o);
	if (!ASSERT_MSG(count_char(o.lines[2], '*') == HT_HV_MAX_BAR, "%zu stars", count_char(o.lines[2], '*')))
		goto cleanup;
	out_free(&o);

	/* 40 columns: columns as narrow as the values allow, the bar keeps the rest. */
	if (!ASSERT_MSG(render_hist(&o, &h, 40) == 0, "render"))
		goto cleanup;
	split_copy(&o);
	if (!ASSERT_STREQ(o.lines[0], "     nsecs   : count distribution", "o.lines[0]"))
		goto cleanup;
	if (!ASSERT_STREQ(o.lines[2], "1024 -> 2047 : 40    |*****************|", "o.lines[2]"))
		goto cleanup;
cleanup:
	out_free(&o);
}

/* No line of any frame may pass the width, down to absurdly narrow terminals. */
static void test_no_line_longer_than_width(void)
{
	struct ht_latset *set = ht_latset_new(HT_LAT_BY_VCPU, 0);
	struct ht_hv_frame f = { .interval = 12, .elapsed_ns = 1000000000, .drops = 7 };
	struct out o = { 0 };
	struct ht_record r = { 0 };

	if (!ASSERT_MSG(set, "new"))
		goto cleanup;
	for (uint32_t i = 0; i < 2000; i++)
		add_total(set, 1000 + i % 3, (uint16_t)(i % 5), i * 977);
	r.exit_to_hcall_ns = UINT32_MAX; /* saturated: the widest bounds */
	r.hcall_to_entry_ns = UINT32_MAX;
	ht_latset_add_record(set, &r);
	for (unsigned int w = 1; w <= 140; w++) {
		for (int mode = HT_HV_PLAIN; mode <= HT_HV_TERMINAL; mode++) {
			struct ht_hv_opts opts = { .mode = mode, .width = w, .height = 0,
						   .series = HT_HV_SERIES_ALL, .timestamp = true };

			if (!ASSERT_MSG(render(&o, set, &opts, &f) == 0, "render"))
				goto cleanup;
			split_copy(&o);
			for (int i = 0; i < o.n; i++) {
				const char *s = o.lines[i];
				size_t len;

				/* Terminal lines carry "\033[K" before the text. */
				if (!strncmp(s, "\033[H", 3))
					s += 3;
				if (!strncmp(s, "\033[K", 3))
					s += 3;
				len = strlen(s);
				if (len >= 3 && !strcmp(s + len - 3, "\033[J"))
					len -= 3;
				if (!ASSERT_MSG(len <= w, "width %u mode %d: line %d has %zu chars", w, mode, i, len))
					goto cleanup;
			}
			out_free(&o);
		}
	}
cleanup:
	out_free(&o);
	ht_latset_free(set);
}

static void test_plain_frame_exact(void)
{
	struct ht_latset *set = ht_latset_new(HT_LAT_BY_NONE, 0);
	struct ht_hv_opts opts = { .mode = HT_HV_PLAIN, .width = 80, .timestamp = true };
	struct ht_hv_frame f = { .interval = 7, .elapsed_ns = 2000000000, .drops = 4,
				 .now = 3723 };
	static const char *const want[] = {
		"01:02:03 interval 7: 3 hypercalls, 1.5/s, 4 drops",
		"",
		"exit->entry: p50 200 ns, p90 300 ns, p99 300 ns, max 300 ns",
		"     nsecs               : count    distribution",
		"        64 -> 127        : 1        |****************************************|",
		"       128 -> 255        : 1        |****************************************|",
		"       256 -> 511        : 1        |****************************************|",
		"",
	};
	struct out o = { 0 };

	if (!ASSERT_MSG(set, "new"))
		goto cleanup;
	setenv("TZ", "UTC", 1);
	tzset();
	add_total(set, 1, 0, 100);
	add_total(set, 1, 0, 200);
	add_total(set, 1, 0, 300);
	if (!ASSERT_MSG(render(&o, set, &opts, &f) == 0, "render"))
		goto cleanup;
	if (!ASSERT_MSG(!strchr(o.buf, '\033'), "plain output has an escape code"))
		goto cleanup;
	if (!ASSERT_MSG(o.size >= 2 && !strcmp(o.buf + o.size - 2, "\n\n"), "block ends with a blank line"))
		goto cleanup;
	split_copy(&o);
	if (!ASSERT_MSG(o.n == 8, "%d lines:\n%s", o.n, o.buf))
		goto cleanup;
	for (int i = 0; i < 8; i++)
		if (!ASSERT_STREQ(o.lines[i], want[i], "o.lines[i]"))
			goto cleanup;
	out_free(&o);

	/* Since start, after the interval ended: bucket bounds with "<=". */
	ht_latset_next_interval(set);
	f = (struct ht_hv_frame){ .view = HT_LAT_CUMULATIVE, .drops = 9 };
	opts.timestamp = false;
	if (!ASSERT_MSG(render(&o, set, &opts, &f) == 0, "render"))
		goto cleanup;
	split_copy(&o);
	if (!ASSERT_STREQ(o.lines[0], "since start: 3 hypercalls, 9 drops", "o.lines[0]"))
		goto cleanup;
	if (!ASSERT_STREQ(o.lines[2], "exit->entry: p50 <= 255 ns, p90 300 ns, p99 300 ns, max 300 ns", "o.lines[2]"))
		goto cleanup;
	out_free(&o);

	/* The interval itself is empty now. */
	f = (struct ht_hv_frame){ .interval = 8, .elapsed_ns = 1000000000 };
	if (!ASSERT_MSG(render(&o, set, &opts, &f) == 0, "render"))
		goto cleanup;
	split_copy(&o);
	if (!ASSERT_STREQ(o.lines[0], "interval 8: 0 hypercalls, 0.0/s, 0 drops", "o.lines[0]"))
		goto cleanup;
	if (!ASSERT_STREQ(o.lines[2], "exit->entry: none", "o.lines[2]"))
		goto cleanup;
	if (!ASSERT_MSG(o.n == 4, "%d lines", o.n))
		goto cleanup;
cleanup:
	out_free(&o);
	ht_latset_free(set);
}

static void test_usecs_stats_and_bounds(void)
{
	struct ht_latset *set = ht_latset_new(HT_LAT_BY_NONE, 0);
	struct ht_hv_opts opts = { .mode = HT_HV_PLAIN, .width = 80 };
	struct ht_hv_frame f = { .view = HT_LAT_CUMULATIVE };
	struct out o = { 0 };

	if (!ASSERT_MSG(set, "new"))
		goto cleanup;
	for (int i = 0; i < 99; i++)
		add_total(set, 1, 0, 12000); /* 8192..16383 */
	add_total(set, 1, 0, 40000);
	if (!ASSERT_MSG(render(&o, set, &opts, &f) == 0, "render"))
		goto cleanup;
	split_copy(&o);
	if (!ASSERT_STREQ(o.lines[2], "exit->entry: p50 <= 16.383 us, p90 <= 16.383 us, " "p99 <= 16.383 us, max 40.000 us", "o.lines[2]"))
		goto cleanup;
	if (!ASSERT_STREQ(o.lines[3], "     usecs               : count    distribution", "o.lines[3]"))
		goto cleanup;
	if (!ASSERT_STREQ(o.lines[5], "    16.384 -> 32.767     : 0        |                                        |", "o.lines[5]"))
		goto cleanup;
	if (!ASSERT_STREQ(o.lines[6], "    32.768 -> 65.535     : 1        |                                        |", "o.lines[6]"))
		goto cleanup;
cleanup:
	out_free(&o);
	ht_latset_free(set);
}

static void test_terminal_mode_escapes(void)
{
	struct ht_latset *set = ht_latset_new(HT_LAT_BY_NONE, 0);
	struct ht_hv_opts opts = { .mode = HT_HV_TERMINAL, .width = 80, .height = 40 };
	struct ht_hv_frame f = { .interval = 1 };
	struct out o = { 0 };

	if (!ASSERT_MSG(set, "new"))
		goto cleanup;
	add_total(set, 1, 0, 100);
	if (!ASSERT_MSG(render(&o, set, &opts, &f) == 0, "render"))
		goto cleanup;
	/* Home, each line cleared before it is written, the rest of the screen after. */
	if (!ASSERT_STREQ(o.buf, "\033[H" "\033[Kinterval 1: 1 hypercalls, 0 drops\n" "\033[K\n" "\033[Kexit->entry: p50 100 ns, p90 100 ns, p99 100 ns, max 100 ns\n" "\033[K     nsecs               : count    distribution\n" "\033[K        64 -> 127        : 1        " "|****************************************|\n" "\033[J", "o.buf"))
		goto cleanup;
	split_copy(&o);
cleanup:
	out_free(&o);
	ht_latset_free(set);
}

static void test_terminal_mode_fits_height(void)
{
	struct ht_latset *set = ht_latset_new(HT_LAT_BY_NONE, 0);
	struct ht_hv_opts opts = { .mode = HT_HV_TERMINAL, .width = 80, .height = 6,
				   .series = HT_HV_SERIES_ALL };
	struct ht_hv_frame f = { .interval = 1 };
	struct out o = { 0 };

	if (!ASSERT_MSG(set, "new"))
		goto cleanup;
	add_total(set, 1, 0, 100);
	/* 3 series x (blank, stats, unit line, 1 row) + header = 13 lines; 5 rows free. */
	if (!ASSERT_MSG(render(&o, set, &opts, &f) == 0, "render"))
		goto cleanup;
	split_copy(&o);
	if (!ASSERT_MSG(o.n == 6, "%d lines:\n%s", o.n, o.buf)) /* 5 newlines, then "\033[J" */
		goto cleanup;
	if (!ASSERT_STREQ(o.lines[4], "\033[K... 9 more lines", "o.lines[4]"))
		goto cleanup;
	if (!ASSERT_STREQ(o.lines[5], "\033[J", "o.lines[5]"))
		goto cleanup;
	if (!ASSERT_EQ(count_char(o.buf, '\n'), 5, "count_char(o.buf, '\\n')"))
		goto cleanup;
	out_free(&o);

	/* Plain mode never cuts the height. */
	opts.mode = HT_HV_PLAIN;
	if (!ASSERT_MSG(render(&o, set, &opts, &f) == 0, "render"))
		goto cleanup;
	if (!ASSERT_EQ(count_char(o.buf, '\n'), 14, "count_char(o.buf, '\\n')"))
		goto cleanup;
cleanup:
	out_free(&o);
	ht_latset_free(set);
}

static void test_grouped_frame(void)
{
	struct ht_latset *set = ht_latset_new(HT_LAT_BY_VCPU, 0);
	struct ht_hv_opts opts = { .mode = HT_HV_PLAIN, .width = 80,
				   .series = HT_HV_SERIES(HT_LAT_EXIT_HCALL) };
	struct ht_hv_frame f = { .interval = 2, .elapsed_ns = 1000000000 };
	struct out o = { 0 };
	int line = 0;

	if (!ASSERT_MSG(set, "new"))
		goto cleanup;
	add_total(set, 300, 1, 100); /* idle in the next interval */
	ht_latset_next_interval(set);
	add_total(set, 300, 2, 1000);
	add_total(set, 200, 5, 500);
	add_total(set, 200, 5, 600);
	if (!ASSERT_MSG(render(&o, set, &opts, &f) == 0, "render"))
		goto cleanup;
	split_copy(&o);
	if (!ASSERT_STREQ(o.lines[line++], "interval 2: 3 hypercalls, 3.0/s, 0 drops", "o.lines[line++]"))
		goto cleanup;
	if (!ASSERT_STREQ(o.lines[line++], "exit->hcall: p50 600 ns, p90 1000 ns, p99 1000 ns, " "max 1000 ns", "o.lines[line++]"))
		goto cleanup;
	if (!ASSERT_STREQ(o.lines[line++], "", "o.lines[line++]"))
		goto cleanup;
	if (!ASSERT_STREQ(o.lines[line++], "vcpu 5 (pid 200): 2 hypercalls, 2.0/s", "o.lines[line++]"))
		goto cleanup;
	if (!ASSERT_STREQ(o.lines[line++], "exit->hcall: p50 500 ns, p90 600 ns, p99 600 ns, " "max 600 ns", "o.lines[line++]"))
		goto cleanup;
	line += 3; /* unit line, rows 256 -> 511 and 512 -> 1023 */
	if (!ASSERT_STREQ(o.lines[line++], "", "o.lines[line++]"))
		goto cleanup;
	if (!ASSERT_STREQ(o.lines[line++], "vcpu 2 (pid 300): 1 hypercalls, 1.0/s", "o.lines[line++]"))
		goto cleanup;
	if (!ASSERT_MSG(!strstr(o.buf, "vcpu 1 "), "idle vCPU shown:\n%s", o.buf))
		goto cleanup;
	if (!ASSERT_MSG(!strstr(o.buf, "exit->entry"), "unselected series shown"))
		goto cleanup;
cleanup:
	out_free(&o);
	ht_latset_free(set);
}

/* Names of VM processes, as record (from /proc) and report (from the file) give them. */
static const char *vm_of(void *ctx, uint32_t pid)
{
	(void)ctx;
	return pid == 200 ? "web1" : pid == 300 ? "" : NULL;
}

/* Thread 201 of VM process 200 is its "CPU 5/KVM"; other threads have no known name. */
static const char *thread_of(void *ctx, uint32_t pid, uint32_t tid)
{
	(void)ctx;
	return pid == 200 && tid == 201 ? "CPU 5/KVM" : NULL;
}

static void test_groups_named_after_their_vm(void)
{
	struct ht_latset *vcpus = ht_latset_new(HT_LAT_BY_VCPU, 0), *vms = ht_latset_new(HT_LAT_BY_VM, 0);
	struct ht_hv_opts opts = { .mode = HT_HV_PLAIN, .width = 80, .vm_name = vm_of, .thread_name = thread_of };
	struct ht_hv_frame f = { .interval = 1 };
	struct out o = { 0 }, p = { 0 };

	if (!ASSERT_MSG(vcpus && vms, "new"))
		goto cleanup;
	add_total(vcpus, 200, 5, 500);
	add_total(vcpus, 300, 2, 500);
	add_total(vcpus, 400, 1, 500);
	add_total(vms, 200, 5, 500);
	add_total(vms, 400, 1, 500);
	if (!ASSERT_MSG(render(&o, vcpus, &opts, &f) == 0 && render(&p, vms, &opts, &f) == 0, "render"))
		goto cleanup;
	if (!ASSERT_MSG(strstr(o.buf, "\nvcpu 5 (pid 200, vm web1, CPU 5/KVM): 1 hypercalls\n"), "named vCPU group:\n%s", o.buf))
		goto cleanup;
	/* No name known (gone, or none): the pid alone, as before. */
	if (!ASSERT_MSG(strstr(o.buf, "\nvcpu 2 (pid 300): 1 hypercalls\n"), "unnamed vCPU group:\n%s", o.buf))
		goto cleanup;
	if (!ASSERT_MSG(strstr(o.buf, "\nvcpu 1 (pid 400): 1 hypercalls\n"), "unnamed vCPU group:\n%s", o.buf))
		goto cleanup;
	if (!ASSERT_MSG(strstr(p.buf, "\npid 200 (vm web1): 1 hypercalls\n"), "named VM group:\n%s", p.buf))
		goto cleanup;
	if (!ASSERT_MSG(strstr(p.buf, "\npid 400: 1 hypercalls\n"), "unnamed VM group:\n%s", p.buf))
		goto cleanup;
cleanup:
	out_free(&o);
	out_free(&p);
	ht_latset_free(vcpus);
	ht_latset_free(vms);
}

/* A VM owner's names, as record's live view reads them from /proc: escape sequences, a name in another script. */
static const char *hostile_vm_of(void *ctx, uint32_t pid)
{
	(void)ctx;
	return pid == 200 ? "\x1b]0;pwned\x07\xe7\xbd\x91\xe7\xab\x99" : NULL;
}

static const char *hostile_thread_of(void *ctx, uint32_t pid, uint32_t tid)
{
	(void)ctx;
	(void)pid;
	(void)tid;
	return "CPU 0/\x1b[2J";
}

static void test_group_names_are_escaped_and_cut_at_a_character(void)
{
	struct ht_latset *vcpus = ht_latset_new(HT_LAT_BY_VCPU, 0);
	struct ht_hv_opts opts = { .mode = HT_HV_PLAIN, .width = 80, .vm_name = hostile_vm_of,
				   .thread_name = hostile_thread_of };
	struct ht_hv_frame f = { .interval = 1 };
	struct out o = { 0 };

	if (!ASSERT_MSG(vcpus, "new"))
		goto cleanup;
	add_total(vcpus, 200, 5, 500);
	if (!ASSERT_MSG(render(&o, vcpus, &opts, &f) == 0, "render"))
		goto cleanup;
	if (!ASSERT_MSG(!strchr(o.buf, '\x1b') && !strchr(o.buf, '\x07'), "raw control bytes:\n%s", o.buf))
		goto cleanup;
	if (!ASSERT_MSG(strstr(o.buf, "\nvcpu 5 (pid 200, vm \\x1b]0;pwned\\x07\xe7\xbd\x91\xe7\xab\x99, CPU 0/\\x1b[2J): 1 hypercalls\n"), "escaped names:\n%s", o.buf))
		goto cleanup;
	out_free(&o);
	/* So narrow that the line is cut inside the name in another script: never inside one of its characters. */
	opts.width = 40;
	if (!ASSERT_MSG(render(&o, vcpus, &opts, &f) == 0, "render"))
		goto cleanup;
	if (!ASSERT_MSG(strstr(o.buf, "\nvcpu 5 (pid 200, vm \\x1b]0;pwned\\x07\xe7\xbd\x91\n"), "cut:\n%s", o.buf))
		goto cleanup;
cleanup:
	out_free(&o);
	ht_latset_free(vcpus);
}

static void test_other_group_label(void)
{
	struct ht_latset *set = ht_latset_new(HT_LAT_BY_VM, 0);
	struct ht_hv_opts opts = { .mode = HT_HV_PLAIN, .width = 80 };
	struct ht_hv_frame f = { .interval = 1 };
	struct out o = { 0 };

	if (!ASSERT_MSG(set, "new"))
		goto cleanup;
	for (uint32_t pid = 1; pid <= HT_LAT_MAX_GROUPS + 2; pid++)
		add_total(set, pid, 0, 100);
	if (!ASSERT_MSG(render(&o, set, &opts, &f) == 0, "render"))
		goto cleanup;
	if (!ASSERT_MSG(strstr(o.buf, "\npid 64: 1 hypercalls\n"), "last keyed group"))
		goto cleanup;
	if (!ASSERT_MSG(!strstr(o.buf, "\npid 65:"), "pid 65 has no group"))
		goto cleanup;
	if (!ASSERT_MSG(strstr(o.buf, "\nother (after 64 groups): 2 hypercalls\n"), "other group:\n%s", o.buf))
		goto cleanup;
cleanup:
	out_free(&o);
	ht_latset_free(set);
}

static void test_parse_series(void)
{
	unsigned int m = 0;

	CHECK(ht_hv_parse_series("total", &m) && m == HT_HV_SERIES(HT_LAT_TOTAL), "total");
	CHECK(ht_hv_parse_series("exit-hcall", &m) && m == HT_HV_SERIES(HT_LAT_EXIT_HCALL),
	      "exit-hcall");
	CHECK(ht_hv_parse_series("hcall-entry", &m) && m == HT_HV_SERIES(HT_LAT_HCALL_ENTRY),
	      "hcall-entry");
	CHECK(ht_hv_parse_series("all", &m) && m == HT_HV_SERIES_ALL, "all");
	CHECK(ht_hv_parse_series("total,hcall-entry", &m) &&
		      m == (HT_HV_SERIES(HT_LAT_TOTAL) | HT_HV_SERIES(HT_LAT_HCALL_ENTRY)),
	      "list");
	m = 12345;
	CHECK(!ht_hv_parse_series("", &m), "empty");
	CHECK(!ht_hv_parse_series("totals", &m), "totals");
	CHECK(!ht_hv_parse_series("total,", &m), "trailing comma");
	CHECK(!ht_hv_parse_series("exit", &m), "prefix");
	CHECK_EQ_U64(m, 12345);
}

int main(void)
{
	RUN(test_hist_rows_like_print_log2_hist);
	RUN(test_hist_zero_and_star_rounding);
	RUN(test_unit_switch_at_10us);
	RUN(test_bar_narrows_with_width);
	RUN(test_no_line_longer_than_width);
	RUN(test_plain_frame_exact);
	RUN(test_usecs_stats_and_bounds);
	RUN(test_terminal_mode_escapes);
	RUN(test_terminal_mode_fits_height);
	RUN(test_grouped_frame);
	RUN(test_groups_named_after_their_vm);
	RUN(test_group_names_are_escaped_and_cut_at_a_character);
	RUN(test_other_group_label);
	RUN(test_parse_series);
	return ht_test_exit_status();
}
