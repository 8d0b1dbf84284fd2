// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit tests of guest/trace_text.c (ftrace's text lines) and
 * guest/trace_replay.c (a line as the project's trace events): what the
 * guest program sends of each line it reads.
 */
#include <string.h>
#include "test.h"
#include "trace_replay.h"
#include "trace_text.h"
#include "common/util.h"

static bool parse(const char *s, struct ht_trace_text_line *l)
{
	return ht_trace_text_parse(s, strlen(s), l);
}

static void test_the_default_columns(void)
{
	struct ht_trace_text_line l;
	const char *s = "       swapper/0-1       [003] .....     1.234567: initcall_start: func=con_init+0x0/0x250\n";

	CHECK(parse(s, &l), "not parsed");
	CHECK_EQ_U64(l.ns, 1234567000ull);
	CHECK_EQ_U64(l.pid, 1);
	CHECK_EQ_U64(l.cpu, 3);
	CHECK(l.text_len == strlen("initcall_start: func=con_init+0x0/0x250") &&
		      !memcmp(l.text, "initcall_start: func=con_init+0x0/0x250", l.text_len),
	      "text '%.*s'", (int)l.text_len, l.text);
}

/* Without irq-info there is no flags column; a counter clock prints a bare number. */
static void test_no_flags_and_a_counter_clock(void)
{
	struct ht_trace_text_line l;

	CHECK(parse("          <idle>-0     [000]     0.000100: initcall_level: level=console", &l), "no flags");
	CHECK_EQ_U64(l.ns, 100000ull);
	CHECK_EQ_U64(l.pid, 0);
	CHECK(parse("            sh-80      [001] d..1. 123456789: tracing_mark_write: hi", &l), "counter");
	CHECK_EQ_U64(l.ns, 123456789ull);
	CHECK_EQ_U64(l.pid, 80);
	/* Nine digits after the point: kept to the ns. */
	CHECK(parse("  a-2 [000] ..... 1.000000007: x: y", &l) && l.ns == 1000000007ull, "ns digits");
}

/* A comm can hold brackets, spaces and a dash: the line is read from its "[CPU] ... TIME: " column. */
static void test_a_comm_with_brackets_and_spaces(void)
{
	struct ht_trace_text_line l;

	CHECK(parse("  my [42] prog-x-77    [002] .....  5.000001: sched_waking: comm=a", &l), "not parsed");
	CHECK_EQ_U64(l.cpu, 2);
	CHECK_EQ_U64(l.pid, 77);
	CHECK_EQ_U64(l.ns, 5000001000ull);
	CHECK(l.text_len == 20 && !memcmp(l.text, "sched_waking: comm=a", 20), "text '%.*s'", (int)l.text_len, l.text);
}

static void test_what_is_not_a_line(void)
{
	struct ht_trace_text_line l;
	const char *bad[] = {
		"# tracer: nop",
		"",
		"\n",
		"CPU:1 [LOST 12 EVENTS]",
		"##### CPU 1 buffer started ####",
		"   sh-1 [000] ..... 1.5x: a: b",
		"   sh-1 [000] ..... 99999999999999999999.000001: a: b",
		"   sh-1 [abc] ..... 1.000001: a: b",
		"   sh-1 [000] ..... 1.0000000001: a: b",
	};

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK(!parse(bad[i], &l), "parsed '%s'", bad[i]);
	CHECK_EQ_U64(ht_trace_text_lost("CPU:1 [LOST 12 EVENTS]", 22), 12);
	CHECK_EQ_U64(ht_trace_text_lost("CPU:1 [LOST x EVENTS]", 21), 0);
	CHECK_EQ_U64(ht_trace_text_lost("  sh-1 [000] ..... 1.000001: a: b", 33), 0);
}

struct sent {
	uint32_t nr[64];
	struct ht_guest_args a[64];
	unsigned int n;
};

static void keep(void *ctx, uint32_t nr, struct ht_guest_args a)
{
	struct sent *s = ctx;

	if (s->n < ARRAY_SIZE(s->nr)) {
		s->nr[s->n] = nr;
		s->a[s->n++] = a;
	}
}

/* The text's bytes from its events: 8 in the line, 24 in each piece, in order. */
static void test_a_line_as_events(void)
{
	struct sent s = { .n = 0 };
	struct ht_trace_replay r = { .emit = keep, .ctx = &s, .run = 9 };
	const char *line = "  sh-80 [001] ..... 2.000003: initcall_start: func=virtio_net_driver_init+0x0/0x1000 [virtio_net]\n";
	const char *text = "initcall_start: func=virtio_net_driver_init+0x0/0x1000 [virtio_net]";
	char got[128] = { 0 };
	size_t len = strlen(text);

	ht_trace_replay_begin(&r);
	ht_trace_replay_line(&r, line, strlen(line));
	ht_trace_replay_line(&r, "# comment\n", 10);
	ht_trace_replay_line(&r, "garbage\n", 8);
	ht_trace_replay_line(&r, "CPU:0 [LOST 5 EVENTS]\n", 22);
	ht_trace_replay_end(&r, 2);
	/* begin, the line, ceil((len - 8) / 24) pieces, end */
	CHECK_EQ_U64(s.n, 3 + (len - 8 + 23) / 24);
	CHECK(s.nr[0] == HT_GUEST_NR_TRACE_REPLAY && (s.a[0].a[0] >> 32 & 0xff) == HT_GUEST_REPLAY_BEGIN &&
		      (uint32_t)s.a[0].a[0] == 9,
	      "begin");
	CHECK(s.nr[1] == HT_GUEST_NR_TRACE_LINE && s.a[1].a[0] == 2000003000ull, "line time");
	CHECK_EQ_U64(s.a[1].a[1] >> 48, len);
	CHECK_EQ_U64(s.a[1].a[1] >> 32 & 0xffff, 1);
	CHECK_EQ_U64((uint32_t)s.a[1].a[2], 80);
	for (unsigned int i = 0; i < 8; i++)
		got[i] = (char)(s.a[1].a[3] >> (8 * i));
	for (unsigned int e = 2; e < s.n - 1; e++) {
		unsigned int off = (unsigned int)(s.a[e].a[0] >> 32);

		CHECK(s.nr[e] == HT_GUEST_NR_TRACE_TEXT && (uint32_t)s.a[e].a[0] == 0 && off == 8 + 24 * (e - 2),
		      "piece %u at %u", e, off);
		for (unsigned int i = 0; i < 24 && off + i < sizeof(got); i++)
			got[off + i] = (char)(s.a[e].a[1 + i / 8] >> (8 * (i % 8)));
	}
	CHECK(!strcmp(got, text), "text '%s'", got);
	/* The end: 1 line, 1 not parsed (the garbage), 0 cut, lost the larger of 5 and 2. */
	const struct ht_guest_args *end = &s.a[s.n - 1];
	CHECK((end->a[0] >> 32 & 0xff) == HT_GUEST_REPLAY_END && (uint32_t)end->a[2] == 1 && end->a[2] >> 32 == 1 &&
		      (uint32_t)end->a[3] == 0 && end->a[3] >> 32 == 5,
	      "end %llx %llx", (unsigned long long)end->a[2], (unsigned long long)end->a[3]);
}

/* A line longer than the bound is cut there, and says so. */
static void test_a_long_line_is_cut(void)
{
	static char line[HT_GUEST_TRACE_TEXT_MAX + 200];
	struct sent s = { .n = 0 };
	struct ht_trace_replay r = { .emit = keep, .ctx = &s, .run = 1 };
	int n = snprintf(line, sizeof(line), "  sh-1 [000] ..... 1.000001: ");

	memset(line + n, 'x', sizeof(line) - (size_t)n - 1);
	ht_trace_replay_line(&r, line, strlen(line));
	CHECK_EQ_U64(r.cut, 1);
	CHECK_EQ_U64(s.a[0].a[1] >> 48, HT_GUEST_TRACE_TEXT_MAX);
	CHECK_EQ_U64(s.a[0].a[2] >> 32, 1);
}

/* --match: only the lines that hold its text, and the sync markers whatever it is. */
static void test_match_keeps_its_lines_and_the_markers(void)
{
	struct sent s = { .n = 0 };
	struct ht_trace_replay r = { .emit = keep, .ctx = &s, .run = 3, .match = "initcall_" };
	const char *lines[] = {
		"  sh-1 [000] ..... 1.000001: initcall_level: level=core\n",
		"  sh-1 [000] ..... 1.000002: sched_switch: prev_comm=sh\n",
		"  sh-1 [000] ..... 1.000003: tracing_mark_write: " HT_GUEST_SYNC_MARKER " 3 0\n",
	};

	for (size_t i = 0; i < ARRAY_SIZE(lines); i++)
		ht_trace_replay_line(&r, lines[i], strlen(lines[i]));
	CHECK_EQ_U64(r.lines, 2);
	CHECK_EQ_U64(r.unmatched, 1);
	CHECK(s.a[0].a[0] == 1000001000ull, "the initcall line first");
	CHECK(s.nr[s.n - 1] == HT_GUEST_NR_TRACE_TEXT && (uint32_t)s.a[s.n - 1].a[0] == 1, "the marker's pieces last");
}

int main(void)
{
	RUN(test_the_default_columns);
	RUN(test_no_flags_and_a_counter_clock);
	RUN(test_a_comm_with_brackets_and_spaces);
	RUN(test_what_is_not_a_line);
	RUN(test_a_line_as_events);
	RUN(test_a_long_line_is_cut);
	RUN(test_match_keeps_its_lines_and_the_markers);
	return ht_test_exit_status();
}
