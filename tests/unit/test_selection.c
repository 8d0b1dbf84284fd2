// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The record selection every report mode and export shares (-p, --vcpu, --nr,
 * --since/--until), and how report and convert read their command lines.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "export/convert_options.h"
#include "hist/hist_view.h"
#include "report/report_options.h"
#include "reading/selection.h"
#include "test.h"
#include "tracefile/trace_reader.h"
#include "tracefile/trace_writer.h"

/* A header whose clocks read 100 s (monotonic) at 2026-11-22T03:40:00Z. */
static struct ht_file_header header(void)
{
	struct ht_file_header h = { 0 };

	h.start_monotonic_ns = 100000000000ull;
	h.start_realtime_ns = 1795318800000000000ull;
	return h;
}

static struct ht_record rec(uint32_t pid, uint16_t vcpu, uint32_t nr, uint64_t exit_ns)
{
	struct ht_record r = { 0 };

	r.host_pid = pid;
	r.vcpu_id = vcpu;
	r.nr = nr;
	r.exit_ns = exit_ns;
	return r;
}

static int parse_report(int argc, char **argv, struct ht_report_config *cfg)
{
	return ht_report_parse(argc, argv, cfg);
}

static void no_option_selects_every_record(void)
{
	struct ht_selection s = { 0 };
	struct ht_file_header h = header();
	struct ht_record r = rec(1, 2, 3, 0);
	char err[256];

	CHECK(ht_selection_resolve(&s, &h, err, sizeof(err)) == 0, "%s", err);
	CHECK(!ht_selection_active(&s), "active");
	CHECK(ht_selection_match(&s, &r, NULL), "record at time 0 refused");
}

static void pid_vcpu_and_nr_must_all_match(void)
{
	char *argv[] = { "report", "-p", "42", "--vcpu", "1", "-n", "1000", "--nr", "0x3e9", "f.htr", NULL };
	struct ht_report_config cfg;
	struct ht_file_header h = header();
	char err[256];

	CHECK(parse_report(10, argv, &cfg) == -1, "options refused");
	CHECK(ht_selection_resolve(&cfg.selection, &h, err, sizeof(err)) == 0, "%s", err);
	struct ht_record yes1 = rec(42, 1, 1000, 0), yes2 = rec(42, 1, 1001, 0);
	struct ht_record other_pid = rec(43, 1, 1000, 0), other_vcpu = rec(42, 2, 1000, 0);
	struct ht_record other_nr = rec(42, 1, 1002, 0);
	CHECK(ht_selection_match(&cfg.selection, &yes1, NULL) && ht_selection_match(&cfg.selection, &yes2, NULL), "refused");
	CHECK(!ht_selection_match(&cfg.selection, &other_pid, NULL), "other pid");
	CHECK(!ht_selection_match(&cfg.selection, &other_vcpu, NULL), "other vcpu");
	CHECK(!ht_selection_match(&cfg.selection, &other_nr, NULL), "other nr");
	ASSERT_STREQ(cfg.path, "f.htr", "cfg.path");
}

/* --vm selects by the names the file recorded (IDENTITY blocks), as report and convert read it. */
static void vm_name_selects_the_processes_recorded_under_it(void)
{
	char path[] = "/tmp/ht-select-vm-XXXXXX";
	char *argv[] = { "report", "--vm", "web1", path, NULL };
	struct ht_report_config cfg;
	struct ht_identity web = { .pid = 10, .tid = 11, .vm_name = "web1", .process_name = "qemu-system-x86" };
	struct ht_identity db = { .pid = 20, .tid = 21, .vm_name = "db2", .process_name = "qemu-system-x86" };
	struct ht_file_header h;
	struct ht_trailer t;
	struct ht_writer *w = NULL;
	struct ht_reader *r = NULL;
	struct ht_record x;
	char err[256];
	unsigned int selected = 0, total = 0;
	int ret, fd = mkstemp(path);

	CHECK(fd >= 0, "mkstemp");
	close(fd);
	ht_header_init(&h);
	if (!ASSERT_MSG(ht_writer_open(path, true, &h, &w, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	if (!ASSERT_MSG(ht_writer_add_identity(w, &web) == 0 && ht_writer_add_identity(w, &db) == 0, "identities"))
		goto cleanup;
	for (unsigned int i = 0; i < 6; i++) {
		x = rec(i % 3 ? 20 : 10, 0, 1000, h.start_monotonic_ns + i);
		x.host_tid = x.host_pid + 1;
		ht_writer_add(w, &x);
	}
	ret = ht_writer_close(w, &t);
	w = NULL; /* freed either way */
	if (!ASSERT_OK(ret, "close"))
		goto cleanup;

	if (!ASSERT_EQ(parse_report(4, argv, &cfg), -1, "options refused"))
		goto cleanup;
	if (!ASSERT_MSG(ht_reader_open(path, &r, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	if (!ASSERT_MSG(ht_selection_resolve(&cfg.selection, ht_reader_header(r), err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	while (ht_reader_next(r, &x) == 1) {
		total++;
		if (ht_selection_match(&cfg.selection, &x, r)) {
			selected++;
			if (!ASSERT_EQ(x.host_pid, 10, "pid selected as web1"))
				goto cleanup;
		}
	}
cleanup:
	ht_writer_abandon(w);
	ht_reader_close(r);
	unlink(path);
	if (ht_test_failed)
		return;
	CHECK_EQ_U64(total, 6);
	CHECK_EQ_U64(selected, 2);
	/* Without the names (a file from before they were recorded) nothing can match a name. */
	x = rec(10, 0, 1000, 0);
	CHECK(!ht_selection_match(&cfg.selection, &x, NULL), "matched without names");
	char desc[128];
	ht_selection_describe(&cfg.selection, desc, sizeof(desc));
	ASSERT_STREQ(desc, "vm web1", "desc");
}

static void since_and_until_in_seconds_count_from_the_recording_start(void)
{
	struct ht_selection s = { 0 };
	struct ht_file_header h = header();
	char err[256];

	CHECK(ht_selection_option(&s, HT_SELECT_OPT_SINCE, "1.5", err, sizeof(err)) == 1, "%s", err);
	CHECK(ht_selection_option(&s, HT_SELECT_OPT_UNTIL, "2", err, sizeof(err)) == 1, "%s", err);
	CHECK(ht_selection_resolve(&s, &h, err, sizeof(err)) == 0, "%s", err);
	struct ht_record before = rec(1, 0, 0, 101499999999ull), first = rec(1, 0, 0, 101500000000ull);
	struct ht_record last = rec(1, 0, 0, 102000000000ull), after = rec(1, 0, 0, 102000000001ull);
	CHECK(!ht_selection_match(&s, &before, NULL), "before --since");
	CHECK(ht_selection_match(&s, &first, NULL), "at --since");
	CHECK(ht_selection_match(&s, &last, NULL), "at --until (inclusive)");
	CHECK(!ht_selection_match(&s, &after, NULL), "after --until");
}

static void since_and_until_as_utc_times_go_through_the_clock_anchor(void)
{
	struct ht_selection s = { 0 };
	struct ht_file_header h = header();
	char err[256];

	/* As --dump/--csv print times, and as the summary prints them. */
	CHECK(ht_selection_option(&s, HT_SELECT_OPT_SINCE, "2026-11-22T03:40:01.25Z", err, sizeof(err)) == 1, "%s", err);
	CHECK(ht_selection_option(&s, HT_SELECT_OPT_UNTIL, "2026-11-22 03:40:02.000001 UTC", err, sizeof(err)) == 1, "%s", err);
	CHECK(ht_selection_resolve(&s, &h, err, sizeof(err)) == 0, "%s", err);
	CHECK_EQ_U64(s.from_ns, 101250000000ull);
	CHECK_EQ_U64(s.to_ns, 102000001000ull);
}

static void bounds_saturate_whatever_the_header_anchors_hold(void)
{
	struct ht_selection s = { 0 };
	struct ht_file_header h = { 0 };
	char err[256];

	/* A crafted header: both anchors past INT64_MAX, so every sum would overflow. */
	h.start_monotonic_ns = UINT64_MAX - 10;
	h.start_realtime_ns = (uint64_t)INT64_MAX + 10;
	CHECK(ht_selection_option(&s, HT_SELECT_OPT_SINCE, "1", err, sizeof(err)) == 1, "%s", err);
	CHECK(ht_selection_option(&s, HT_SELECT_OPT_UNTIL, "2262-01-01T00:00:00Z", err, sizeof(err)) == 1, "%s", err);
	CHECK(ht_selection_resolve(&s, &h, err, sizeof(err)) == 0, "%s", err);
	CHECK_EQ_U64(s.from_ns, UINT64_MAX);
	CHECK_EQ_U64(s.to_ns, UINT64_MAX);
	h.start_monotonic_ns = 5;
	h.start_realtime_ns = (uint64_t)INT64_MAX;
	s = (struct ht_selection){ 0 };
	CHECK(ht_selection_option(&s, HT_SELECT_OPT_SINCE, "1970-01-01T00:00:00Z", err, sizeof(err)) == 1, "%s", err);
	CHECK(ht_selection_resolve(&s, &h, err, sizeof(err)) == 0, "%s", err);
	CHECK_EQ_U64(s.from_ns, 0);
}

static void bad_values_are_refused_with_what_to_type(void)
{
	struct ht_selection s = { 0 };
	char err[256] = "";

	CHECK(ht_selection_option(&s, HT_SELECT_OPT_SINCE, "yesterday", err, sizeof(err)) == -1, "accepted");
	CHECK(strstr(err, "invalid --since 'yesterday': expected seconds from the start") != NULL, "%s", err);
	CHECK(ht_selection_option(&s, HT_SELECT_OPT_UNTIL, "2026-13-01T00:00:00Z", err, sizeof(err)) == -1, "month 13");
	CHECK(ht_selection_option(&s, HT_SELECT_OPT_UNTIL, "-1", err, sizeof(err)) == -1, "negative");
	/* Nanoseconds since 1970 in 64 signed bits end in 2262. */
	CHECK(ht_selection_option(&s, HT_SELECT_OPT_UNTIL, "9999-12-31T23:59:59Z", err, sizeof(err)) == -1, "year 9999");
	CHECK(ht_selection_option(&s, HT_SELECT_OPT_PID, "0", err, sizeof(err)) == -1, "pid 0");
	CHECK(ht_selection_option(&s, HT_SELECT_OPT_VCPU, "65536", err, sizeof(err)) == -1, "vcpu 65536");
	CHECK(ht_selection_option(&s, HT_SELECT_OPT_NR, "12abc", err, sizeof(err)) == -1, "nr 12abc");
	CHECK(ht_selection_option(&s, 'x', "1", err, sizeof(err)) == 0, "not a selection option");
}

static void since_after_until_is_refused(void)
{
	struct ht_selection s = { 0 };
	char err[256] = "";

	ht_selection_option(&s, HT_SELECT_OPT_SINCE, "5", err, sizeof(err));
	ht_selection_option(&s, HT_SELECT_OPT_UNTIL, "2", err, sizeof(err));
	CHECK(ht_selection_check(&s, err, sizeof(err)) == -1, "accepted");
	CHECK(strstr(err, "--since is after --until") != NULL, "%s", err);
}

static void a_window_empty_in_the_file_is_refused(void)
{
	struct ht_selection s = { 0 };
	struct ht_file_header h = header();
	char err[256] = "";

	/* 5 s from the start is 03:40:05Z: after an --until of 03:40:02Z. */
	ht_selection_option(&s, HT_SELECT_OPT_SINCE, "5", err, sizeof(err));
	ht_selection_option(&s, HT_SELECT_OPT_UNTIL, "2026-11-22T03:40:02Z", err, sizeof(err));
	CHECK(ht_selection_check(&s, err, sizeof(err)) == 0, "refused before the file is known");
	CHECK(ht_selection_resolve(&s, &h, err, sizeof(err)) == -1, "accepted");
	CHECK(strstr(err, "--since is after --until in this recording") != NULL, "%s", err);
}

static void report_hist_takes_a_series_as_record_does(void)
{
	char *a1[] = { "report", "--hist", "total", "f.htr", NULL };
	char *a2[] = { "report", "f.htr", "--hist", "exit-hcall,hcall-entry", NULL };
	char *a3[] = { "report", "--hist", "f.htr", NULL };
	char *a4[] = { "report", "--hist=total", "f.htr", NULL };
	struct ht_report_config cfg;

	CHECK(parse_report(4, a1, &cfg) == -1 && cfg.mode == HT_REPORT_HIST, "--hist total");
	CHECK(cfg.series == HT_HV_SERIES(HT_LAT_TOTAL) && !strcmp(cfg.path, "f.htr"), "series %x path %s", cfg.series, cfg.path);
	CHECK(parse_report(4, a2, &cfg) == -1, "file first");
	CHECK(cfg.series == (HT_HV_SERIES(HT_LAT_EXIT_HCALL) | HT_HV_SERIES(HT_LAT_HCALL_ENTRY)) &&
	      !strcmp(cfg.path, "f.htr"), "series %x path %s", cfg.series, cfg.path);
	CHECK(parse_report(3, a3, &cfg) == -1 && cfg.series == HT_HV_SERIES_ALL && !strcmp(cfg.path, "f.htr"),
	      "--hist FILE");
	CHECK(parse_report(3, a4, &cfg) == -1 && cfg.series == HT_HV_SERIES(HT_LAT_TOTAL), "--hist=total");
}

static void convert_takes_the_same_selection(void)
{
	char *argv[] = { "convert", "--ctf", "out", "-p", "7", "--since", "1", "t.htr", NULL };
	struct ht_convert_config cfg;

	CHECK(ht_convert_parse(8, argv, &cfg) == -1, "options refused");
	CHECK(cfg.format == HT_CONVERT_CTF && !strcmp(cfg.output, "out") && !strcmp(cfg.path, "t.htr"), "config");
	CHECK(cfg.selection.pid_on && cfg.selection.pid == 7 && cfg.selection.since.on, "selection");
}

int main(void)
{
	RUN(no_option_selects_every_record);
	RUN(pid_vcpu_and_nr_must_all_match);
	RUN(vm_name_selects_the_processes_recorded_under_it);
	RUN(since_and_until_in_seconds_count_from_the_recording_start);
	RUN(since_and_until_as_utc_times_go_through_the_clock_anchor);
	RUN(bounds_saturate_whatever_the_header_anchors_hold);
	RUN(bad_values_are_refused_with_what_to_type);
	RUN(since_after_until_is_refused);
	RUN(a_window_empty_in_the_file_is_refused);
	RUN(report_hist_takes_a_series_as_record_does);
	RUN(convert_takes_the_same_selection);
	return ht_test_exit_status();
}
