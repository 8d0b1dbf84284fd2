// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit tests of src/user/decode/guest_trace.c (a guest's replayed trace,
 * rebuilt from its events) and src/user/boot/initcalls.c (its initcalls):
 * what a hostile or broken replay does to them.
 */
#include <string.h>
#include "boot/initcalls.h"
#include "decode/guest_trace.h"
#include "hypertrace/guest.h"
#include "test.h"
#include "common/util.h"

#define PID 7100u

static struct ht_record rec(uint64_t at, uint32_t nr, struct ht_guest_args a)
{
	struct ht_record r;

	memset(&r, 0, sizeof(r));
	r.exit_ns = at;
	r.nr = nr;
	r.host_pid = PID;
	r.a0 = a.a[0];
	r.a1 = a.a[1];
	r.a2 = a.a[2];
	r.a3 = a.a[3];
	return r;
}

/* The records of one line of text at host time *at (1 us apart), appended to rs. */
static size_t line_recs(struct ht_record *rs, uint64_t *at, uint32_t seq, uint64_t guest_ns, uint32_t tid,
			const char *text)
{
	unsigned int len = (unsigned int)strlen(text);
	size_t n = 0;

	rs[n++] = rec((*at += 1000), HT_GUEST_NR_TRACE_LINE, ht_guest_pack_trace_line(guest_ns, seq, 0, tid, text, len, 0));
	for (unsigned int off = 8; off < len; off += 24)
		rs[n++] = rec((*at += 1000), HT_GUEST_NR_TRACE_TEXT, ht_guest_pack_trace_text(seq, off, text, len));
	return n;
}

static struct ht_record replay(uint64_t at, uint32_t run, unsigned int what, uint32_t seq)
{
	return rec(at, HT_GUEST_NR_TRACE_REPLAY, ht_guest_pack_trace_replay(run, what, seq, 0, 0, 0, 0));
}

static int add_all(struct ht_guest_traces *t, const struct ht_record *rs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ht_guest_traces_add(t, &rs[i]))
			return -1;
	return ht_guest_traces_finish(t);
}

/* Read in any order, the records are taken in their exits' order: the text comes out whole. */
static void test_records_read_out_of_order(void)
{
	struct ht_record rs[32], rev[32];
	struct ht_guest_traces t;
	uint64_t at = 1000000;
	size_t n = 0;
	const char *text = "initcall_start: func=a_rather_long_initcall_name+0x0/0x40";

	rs[n++] = replay(at, 5, HT_GUEST_REPLAY_BEGIN, 0);
	n += line_recs(rs + n, &at, 0, 42, 1, text);
	for (size_t i = 0; i < n; i++)
		rev[i] = rs[n - 1 - i];
	ht_guest_traces_init(&t);
	CHECK(!add_all(&t, rev, n), "add");
	const struct ht_guest_trace *g = ht_guest_traces_get(&t, 0);
	CHECK(g && g->nlines == 1, "lines");
	CHECK(!strcmp(g->lines[0].text, text) && g->lines[0].have == strlen(text), "text '%s'", g->lines[0].text);
	CHECK_EQ_U64(g->stray, 0);
	ht_guest_traces_free(&t);
}

/*
 * A piece out of place is stray and the line stays short; a length the
 * guest announces costs nothing until bytes come, and past the bound it
 * is cut.
 */
static void test_hostile_pieces_and_lengths(void)
{
	struct ht_guest_traces t;
	struct ht_record rs[8];
	size_t n = 0;

	rs[n++] = replay(10, 1, HT_GUEST_REPLAY_BEGIN, 0);
	rs[n++] = rec(20, HT_GUEST_NR_TRACE_LINE, ht_guest_pack_trace_line(1, 0, 0, 1, "abcdefgh", 40, 0));
	/* The piece at 32, not 8: out of place. */
	rs[n++] = rec(30, HT_GUEST_NR_TRACE_TEXT, ht_guest_pack_trace_text(0, 32, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN", 40));
	/* Another line's piece. */
	rs[n++] = rec(40, HT_GUEST_NR_TRACE_TEXT, ht_guest_pack_trace_text(9, 8, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN", 40));
	/* 65535 bytes announced, 8 sent. */
	struct ht_guest_args big = ht_guest_pack_trace_line(2, 1, 0, 1, "12345678", 8, 0);
	big.a[1] |= 0xffffull << 48;
	rs[n++] = rec(50, HT_GUEST_NR_TRACE_LINE, big);
	ht_guest_traces_init(&t);
	CHECK(!add_all(&t, rs, n), "add");
	const struct ht_guest_trace *g = ht_guest_traces_get(&t, 0);
	CHECK(g && g->nlines == 2, "lines");
	CHECK_EQ_U64(g->stray, 2);
	CHECK(g->lines[0].have == 8 && g->lines[0].len == 40 && !strcmp(g->lines[0].text, "abcdefgh"), "short line");
	CHECK(g->lines[1].len == HT_GUEST_TRACE_TEXT_MAX && g->lines[1].cut && g->lines[1].have == 8, "announced");
	ht_guest_traces_free(&t);
}

/*
 * Clock pairs: a marker line of the kept replay whose sync came; another
 * run's marker or sync, and a marker without its sync, pair with nothing.
 * A second replay replaces the first.
 */
static void test_sync_markers_pair_with_their_own_syncs(void)
{
	struct ht_record rs[256];
	struct ht_guest_traces t;
	uint64_t at = 100;
	size_t n = 0;
	char m[96];

	/* A first replay, replaced. */
	rs[n++] = replay(at, 1, HT_GUEST_REPLAY_BEGIN, 0);
	n += line_recs(rs + n, &at, 0, 5, 1, "old: line");
	/* The kept one: run 7, syncs 0..3 at host 1000 s + guest time + 2 us. */
	rs[n++] = replay((at += 1000), 7, HT_GUEST_REPLAY_BEGIN, 0);
	for (uint32_t i = 0; i < 4; i++)
		rs[n++] = replay(1000000000000ull + (10 + i) * 1000000000ull + 2000, 7, HT_GUEST_REPLAY_SYNC, i);
	rs[n++] = replay(1000000000000ull + 13500000000ull, 8, HT_GUEST_REPLAY_SYNC, 9); /* another run's */
	at = 1000000000000ull + 20000000000ull;
	for (uint32_t i = 0; i < 4; i++) {
		snprintf(m, sizeof(m), "tracing_mark_write: " HT_GUEST_SYNC_MARKER " 7 %u", i);
		n += line_recs(rs + n, &at, i, (10 + i) * 1000000000ull, 80, m);
	}
	n += line_recs(rs + n, &at, 4, 14000000000ull, 80, "tracing_mark_write: " HT_GUEST_SYNC_MARKER " 8 9");
	n += line_recs(rs + n, &at, 5, 15000000000ull, 80, "tracing_mark_write: " HT_GUEST_SYNC_MARKER " 7 77");
	rs[n++] = replay((at += 1000), 7, HT_GUEST_REPLAY_END, 0);
	ht_guest_traces_init(&t);
	CHECK(!add_all(&t, rs, n), "add");
	const struct ht_guest_trace *g = ht_guest_traces_get(&t, 0);
	CHECK(g && g->runs == 2 && g->run == 7 && g->ended, "replays");
	CHECK_EQ_U64(g->nlines, 6);
	CHECK_EQ_U64(g->syncs, 4);
	CHECK_EQ_U64(g->npairs, 4);
	CHECK(g->fit.used == 4 && ht_clock_fit_map(&g->fit, 12000000000ull) == 1000000000000ull + 12000000000ull + 2000,
	      "fit maps 12 s to %llu", (unsigned long long)ht_clock_fit_map(&g->fit, 12000000000ull));
	ht_guest_traces_free(&t);
}

/* A line of a guest's trace: its guest time, task and text. */
struct trace_line {
	uint64_t ns;
	uint32_t tid;
	const char *text;
};

/*
 * The trace of LINES, sent in their order as the guest sends them, into T
 * (initialized here, for the caller to free) and its initcalls into C (to
 * free when this returned true).
 */
static bool initcalls_of(const struct trace_line *lines, size_t nlines, struct ht_guest_traces *t,
			 struct ht_initcalls *c)
{
	struct ht_record rs[128];
	uint64_t at = 10;
	size_t n = 0;

	ht_guest_traces_init(t);
	for (uint32_t i = 0; i < nlines; i++) {
		/* A line is a record and one per further 24 bytes of its text. */
		if (!ASSERT_MSG(n + 1 + strlen(lines[i].text) / 24 + 1 <= ARRAY_SIZE(rs), "more lines than the test holds"))
			return false;
		n += line_recs(rs + n, &at, i, lines[i].ns, lines[i].tid, lines[i].text);
	}
	return ASSERT_EQ(add_all(t, rs, n), 0, "add") &&
	       ASSERT_EQ(ht_initcalls_build(ht_guest_traces_get(t, 0), c), 0, "build");
}

/*
 * Levels whose times go back (a guest's trace out of order): no level ends
 * before it began, each one counted; initcalls keep their own times.
 */
static void test_initcall_levels_out_of_time_order(void)
{
	static const struct trace_line lines[] = {
		{ 1000, 1, "initcall_level: level=core" },
		{ 500, 1, "initcall_level: level=postcore" }, /* before core's start */
		{ 510, 1, "initcall_start: func=a+0x0/0x10" },
		{ 520, 1, "initcall_finish: func=a+0x0/0x10 ret=0" },
		{ 400, 1, "initcall_level: level=arch" }, /* before postcore's */
		{ 600, 1, "initcall_level: level=subsys" },
		{ 650, 1, "initcall_start: func=b+0x0/0x10" },
		{ 640, 1, "initcall_finish: func=b+0x0/0x10 ret=0" }, /* before its start: unmatched */
	};
	struct ht_guest_traces t;
	struct ht_initcalls c;

	if (!initcalls_of(lines, ARRAY_SIZE(lines), &t, &c))
		goto out;
	if (ASSERT_EQ(c.nlevels, 4, "levels") && ASSERT_EQ(c.levels_back, 2, "levels that began before the one before")) {
		for (size_t i = 0; i < c.nlevels; i++)
			ASSERT_MSG(c.levels[i].end_ns >= c.levels[i].start_ns, "level %zu ends at %llu, before its start %llu", i,
				   (unsigned long long)c.levels[i].end_ns, (unsigned long long)c.levels[i].start_ns);
		ASSERT_TRUE(c.levels[0].end_ns == 1000 && c.levels[1].end_ns == 500, "core and postcore end where they began");
		ASSERT_TRUE(c.levels[0].went_back && c.levels[1].went_back && !c.levels[2].went_back && !c.levels[3].went_back,
			    "the levels the next one went back from are marked");
		ASSERT_TRUE(c.levels[2].end_ns == 600 && c.levels[1].in_initcalls_ns == 10, "arch to subsys; a in postcore");
		ASSERT_EQ(c.finish_unmatched, 1, "b's return before its start");
		ASSERT_EQ(c.unfinished, 1, "b never returned");
	}
	ht_initcalls_free(&c);
out:
	ht_guest_traces_free(&t);
}

/* Initcalls: levels by task, a module's apart, and what has no partner counted. */
static void test_initcalls_of_a_trace(void)
{
	static const struct trace_line lines[] = {
		{ 100, 0, "initcall_level: level=console" },
		{ 110, 0, "initcall_start: func=con_init+0x0/0x250" },
		{ 150, 0, "initcall_finish: func=con_init+0x0/0x250 ret=0" },
		{ 200, 1, "initcall_level: level=core" },
		{ 210, 1, "initcall_start: func=a+0x0/0x10" },
		{ 220, 1, "initcall_finish: func=b+0x0/0x10 ret=0" }, /* not a's: unmatched */
		{ 230, 1, "initcall_start: func=c+0x0/0x10" },        /* a never finished */
		{ 260, 1, "initcall_finish: func=c+0x0/0x10 ret=-12" },
		{ 270, 55, "initcall_finish: func=d+0x0/0x10 ret=0" }, /* no start */
		{ 300, 80, "initcall_start: func=m_init+0x0/0x10 [m]" },
		{ 400, 80, "initcall_finish: func=m_init+0x0/0x10 [m] ret=0" },
		{ 500, 1, "initcall_start: func=x+0x0/0x10" },        /* after: still core's task, never finished */
	};
	struct ht_guest_traces t;
	struct ht_initcalls c;

	if (!initcalls_of(lines, ARRAY_SIZE(lines), &t, &c))
		goto out;
	ASSERT_EQ(c.nlevels, 2, "levels");
	ASSERT_EQ(c.ncalls, 5, "initcalls");
	ASSERT_TRUE(c.nlevels == 2 && c.levels[0].start_ns == 100 && c.levels[0].end_ns == 200 &&
			    c.levels[0].initcalls == 1 && c.levels[0].in_initcalls_ns == 40,
		    "console");
	/* core: to its last return (c's, 260), three of its task's initcalls, 30 ns inside them. */
	ASSERT_TRUE(c.nlevels == 2 && c.levels[1].end_ns == 260 && c.levels[1].initcalls == 3 &&
			    c.levels[1].in_initcalls_ns == 30,
		    "core");
	ASSERT_TRUE(c.ncalls == 5 && c.calls[3].level == HT_INITCALL_MODULES && c.calls[3].module_len == 1 &&
			    c.calls[3].module[0] == 'm' && c.calls[3].end_ns == 400,
		    "module");
	ASSERT_TRUE(c.ncalls == 5 && c.calls[2].finished && c.calls[2].ret == -12, "c's return");
	ASSERT_EQ(c.unfinished, 2, "a and x never returned");
	ASSERT_EQ(c.finish_unmatched, 2, "b's and d's returns have no start");
	ASSERT_EQ(c.module_calls, 1, "m_init");
	ht_initcalls_free(&c);
out:
	ht_guest_traces_free(&t);
}

int main(void)
{
	RUN(test_records_read_out_of_order);
	RUN(test_hostile_pieces_and_lengths);
	RUN(test_sync_markers_pair_with_their_own_syncs);
	RUN(test_initcalls_of_a_trace);
	RUN(test_initcall_levels_out_of_time_order);
	return ht_test_exit_status();
}
