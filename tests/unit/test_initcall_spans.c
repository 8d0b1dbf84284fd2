// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit tests of src/user/export/initcall_spans.c (a guest's initcalls as
 * the viewers draw them): on the host's clock, on lanes where nothing
 * overlaps, and what a hostile trace cannot make them draw.
 */
#include <string.h>
#include "export/initcall_spans.h"
#include "test.h"
#include "common/util.h"

struct line_spec {
	uint64_t ns;
	uint32_t tid;
	const char *text;
};

/* A guest trace of these lines, its clock host = 1000 + 2 * guest (or no pair). */
static void trace_of(struct ht_guest_trace *g, struct ht_trace_line *lines, const struct line_spec *spec, size_t n,
		     bool pairs)
{
	memset(g, 0, sizeof(*g));
	for (size_t i = 0; i < n; i++) {
		lines[i] = (struct ht_trace_line){ .guest_ns = spec[i].ns, .seq = (uint32_t)i, .tid = spec[i].tid,
						   .len = (uint32_t)strlen(spec[i].text),
						   .have = (uint32_t)strlen(spec[i].text), .text = (char *)spec[i].text };
	}
	g->host_pid = 7100;
	g->lines = lines;
	g->nlines = n;
	if (pairs) {
		g->fit.used = 2;
		g->fit.rate = 2;
		g->fit.intercept = 1000;
	}
}

/* Levels, calls and an unfinished one, on the host's clock; labels as named. */
static void test_spans_on_the_hosts_clock(void)
{
	static const struct line_spec spec[] = {
		{ 100, 1, "initcall_level: level=core" },
		{ 110, 1, "initcall_start: func=a+0x0/0x10" },
		{ 150, 1, "initcall_finish: func=a+0x0/0x10 ret=-19" },
		{ 200, 1, "initcall_level: level=late" },
		{ 210, 1, "initcall_start: func=b+0x0/0x10" },
		{ 260, 1, "initcall_finish: func=b+0x0/0x10 ret=0" },
		{ 300, 80, "initcall_start: func=m_init+0x0/0x10 [m]" },
	};
	struct ht_trace_line lines[ARRAY_SIZE(spec)];
	struct ht_guest_trace g;
	struct ht_initcall_view v;
	struct ht_initcall_counts counts = { 0 };
	char label[HT_INITCALL_LABEL_MAX];

	trace_of(&g, lines, spec, ARRAY_SIZE(spec), true);
	CHECK(ht_initcall_view_build(&g, &v, &counts) == 1, "built");
	CHECK(v.nlevels == 2 && v.ncalls == 3 && v.lanes == 1 && !v.not_drawn, "spans");
	CHECK(v.levels[0].start_ns == 1200 && v.levels[0].end_ns == 1400, "core: %llu..%llu",
	      (unsigned long long)v.levels[0].start_ns, (unsigned long long)v.levels[0].end_ns);
	CHECK(v.levels[1].start_ns == 1400 && v.levels[1].end_ns == 1520, "late ends at its last return");
	CHECK(v.calls[0].start_ns == 1220 && v.calls[0].end_ns == 1300, "a");
	ht_initcall_label(label, sizeof(label), &v.levels[0]);
	CHECK(!strcmp(label, "core"), "level label '%s'", label);
	ht_initcall_label(label, sizeof(label), &v.calls[2]);
	CHECK(!strcmp(label, "m_init [m] (no return)"), "unfinished label '%s'", label);
	CHECK(v.calls[2].start_ns == v.calls[2].end_ns && v.calls[2].start_ns == 1600, "an instant at its start");
	ht_initcall_level_label(label, sizeof(label), &v.calls[2]);
	CHECK(!strcmp(label, "modules"), "module's level '%s'", label);
	ht_initcall_level_label(label, sizeof(label), &v.calls[1]);
	CHECK(!strcmp(label, "late"), "b's level '%s'", label);
	CHECK(!counts.vms_without_clock && !counts.not_drawn, "counts");
	ht_initcall_view_free(&v);
}

/* Without a clock pair nothing is drawn, and that is counted; without initcalls nothing is counted. */
static void test_no_clock_pair_draws_nothing(void)
{
	static const struct line_spec spec[] = { { 100, 1, "initcall_level: level=core" } };
	static const struct line_spec other[] = { { 100, 1, "sched_switch: prev_comm=a" } };
	struct ht_trace_line lines[1];
	struct ht_guest_trace g;
	struct ht_initcall_view v;
	struct ht_initcall_counts counts = { 0 };

	trace_of(&g, lines, spec, 1, false);
	CHECK(ht_initcall_view_build(&g, &v, &counts) == 0 && counts.vms_without_clock == 1, "no pair");
	trace_of(&g, lines, other, 1, false);
	CHECK(ht_initcall_view_build(&g, &v, &counts) == 0 && counts.vms_without_clock == 1, "no initcall");
}

/*
 * A guest's hostile times: a level whose next one comes earlier is not
 * drawn; initcalls of many tasks at once take the lanes there are, the
 * rest counted; on a lane none overlaps the one before.
 */
static void test_hostile_times_bound_the_tracks(void)
{
	static const char *const starts[] = {
		"initcall_start: func=t0+0x0/0x1", "initcall_start: func=t1+0x0/0x1", "initcall_start: func=t2+0x0/0x1",
		"initcall_start: func=t3+0x0/0x1", "initcall_start: func=t4+0x0/0x1", "initcall_start: func=t5+0x0/0x1",
		"initcall_start: func=t6+0x0/0x1", "initcall_start: func=t7+0x0/0x1", "initcall_start: func=t8+0x0/0x1",
		"initcall_start: func=t9+0x0/0x1",
	};
	static const char *const finishes[] = {
		"initcall_finish: func=t0+0x0/0x1 ret=0", "initcall_finish: func=t1+0x0/0x1 ret=0",
		"initcall_finish: func=t2+0x0/0x1 ret=0", "initcall_finish: func=t3+0x0/0x1 ret=0",
		"initcall_finish: func=t4+0x0/0x1 ret=0", "initcall_finish: func=t5+0x0/0x1 ret=0",
		"initcall_finish: func=t6+0x0/0x1 ret=0", "initcall_finish: func=t7+0x0/0x1 ret=0",
		"initcall_finish: func=t8+0x0/0x1 ret=0", "initcall_finish: func=t9+0x0/0x1 ret=0",
	};
	struct line_spec spec[2 + 2 * ARRAY_SIZE(starts) + 1];
	struct ht_trace_line lines[ARRAY_SIZE(spec)];
	struct ht_guest_trace g;
	struct ht_initcall_view v;
	struct ht_initcall_counts counts = { 0 };
	size_t n = 0;

	spec[n++] = (struct line_spec){ 500, 1, "initcall_level: level=core" };
	spec[n++] = (struct line_spec){ 100, 1, "initcall_level: level=back" };
	/* Ten tasks' initcalls all at once, from 1000 to 2000. */
	for (uint32_t i = 0; i < ARRAY_SIZE(starts); i++)
		spec[n++] = (struct line_spec){ 1000 + i, 100 + i, starts[i] };
	for (uint32_t i = 0; i < ARRAY_SIZE(finishes); i++)
		spec[n++] = (struct line_spec){ 2000, 100 + i, finishes[i] };
	/* After them all: back on the first lane. */
	spec[n++] = (struct line_spec){ 2000, 200, "initcall_start: func=late+0x0/0x1" };
	trace_of(&g, lines, spec, n, true);
	CHECK(ht_initcall_view_build(&g, &v, &counts) == 1, "built");
	CHECK(v.nlevels == 1 && v.levels[0].start_ns == 1200, "core, not drawn: %zu levels", v.nlevels);
	CHECK(v.lanes == HT_INITCALL_LANES && v.ncalls == HT_INITCALL_LANES + 1, "%u lanes, %zu calls", v.lanes,
	      v.ncalls);
	CHECK_EQ_U64(v.not_drawn, 1 + ARRAY_SIZE(starts) - HT_INITCALL_LANES);
	CHECK_EQ_U64(counts.not_drawn, v.not_drawn);
	CHECK(v.calls[v.ncalls - 1].lane == 0, "the one after on the first lane");
	for (size_t i = 0; i < v.ncalls; i++)
		for (size_t j = i + 1; j < v.ncalls; j++)
			if (v.calls[i].lane == v.calls[j].lane)
				CHECK(v.calls[i].end_ns <= v.calls[j].start_ns, "calls %zu and %zu overlap on lane %u", i,
				      j, v.calls[i].lane);
	ht_initcall_view_free(&v);
}

int main(void)
{
	RUN(test_spans_on_the_hosts_clock);
	RUN(test_no_clock_pair_draws_nothing);
	RUN(test_hostile_times_bound_the_tracks);
	return ht_test_exit_status();
}
