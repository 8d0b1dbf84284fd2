// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer harness: each input is a trace file, read by every report mode
 * and every export through the command's own entry point, as a user would
 * run it, and what each wrote checked (check_output below). A new mode or
 * export is one line in `runs` below.
 *
 * Built with HT_FUZZ_BLOCKS it is fuzz_blocks: each input's checksums are
 * made right again first (fix_crcs.h), so mutations get past the CRCs into
 * EXITS blocks and vCPU switch records, and the modes are those that read
 * them (the others are fuzz_report's).
 */
#include <errno.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "common/util.h"
#include "output_check.h"
#ifdef HT_FUZZ_BLOCKS
#include "fix_crcs.h"
#endif

#define INPUT "@INPUT@"   /* replaced by the input's path */
#define OUTPUT "@OUTPUT@" /* replaced by a scratch output path */

/* How a run's output is checked (output_check.h): stdout, or for --chrome the file it writes. */
enum check { TEXT = OC_TEXT, JSON_LINES = OC_JSON_LINES, CSV = OC_CSV, JSON_FILE = OC_JSON_FILE, BINARY };

struct run {
	int (*cmd)(int argc, char **argv);
	enum check check;
	const char *argv[10];
};

#ifdef HT_FUZZ_BLOCKS
static const struct run runs[] = {
	{ ht_cmd_report, TEXT, { "report", INPUT } },
	{ ht_cmd_report, TEXT, { "report", "--exits", INPUT } },
	{ ht_cmd_report, JSON_LINES, { "report", "--exits", "--json", "--vcpu", "0", "--since", "0.5", INPUT } },
	{ ht_cmd_report, CSV, { "report", "--exits", "--csv", "--until", "1", INPUT } },
	{ ht_cmd_report, TEXT, { "report", "--causes", INPUT } },
	{ ht_cmd_report, CSV, { "report", "--causes", "--csv", INPUT } },
	{ ht_cmd_report, JSON_LINES, { "report", "--causes", "--json", "--since", "0.5", INPUT } },
	{ ht_cmd_report, TEXT, { "report", "--vcpu-time", INPUT } },
	{ ht_cmd_report, JSON_LINES, { "report", "--vcpu-time", "--json", "--since", "0.5", INPUT } },
	{ ht_cmd_report, CSV, { "report", "--vcpu-time", "--csv", "--until", "1", INPUT } },
	{ ht_cmd_report, TEXT, { "report", "--halts", INPUT } },
	{ ht_cmd_report, JSON_LINES, { "report", "--halts", "--json", "--since", "0.5", INPUT } },
	{ ht_cmd_report, CSV, { "report", "--halts", "--csv", INPUT } },
	{ ht_cmd_report, CSV, { "report", "--vcpu-switches", "--csv", INPUT } },
	{ ht_cmd_report, TEXT, { "report", "--vcpu-switches", "--dump", INPUT } },
	{ ht_cmd_report, JSON_LINES, { "report", "--vcpu-switches", "--json", "--vcpu", "1", INPUT } },
	{ ht_cmd_report, TEXT, { "report", "--sched", INPUT } },
	{ ht_cmd_report, TEXT, { "report", "--boot", INPUT } },
	{ ht_cmd_report, CSV, { "report", "--boot", "--csv", INPUT } },
	{ ht_cmd_report, TEXT, { "report", "--irqs", INPUT } },
	{ ht_cmd_report, JSON_LINES, { "report", "--irqs", "--json", "--vcpu", "1", INPUT } },
	{ ht_cmd_report, TEXT, { "report", "--latency", "--worst", "3", INPUT } },
	{ ht_cmd_report, CSV, { "report", "--latency", "--csv", "--since", "0.5", INPUT } },
	{ ht_cmd_report, JSON_LINES, { "report", "--latency", "--json", INPUT } },
	{ ht_cmd_convert, BINARY, { "convert", "--perfetto", OUTPUT, INPUT } },
	{ ht_cmd_convert, JSON_FILE, { "convert", "--chrome", OUTPUT, INPUT } },
	{ ht_cmd_convert, BINARY, { "convert", "--lttng", OUTPUT, INPUT } },
};
#else
static const struct run runs[] = {
	{ ht_cmd_report, TEXT, { "report", INPUT } },
	{ ht_cmd_report, TEXT, { "report", "--dump", INPUT } },
	{ ht_cmd_report, CSV, { "report", "--csv", INPUT } },
	{ ht_cmd_report, JSON_LINES, { "report", "--json", INPUT } },
	{ ht_cmd_report, TEXT, { "report", "--hist", INPUT } },
	{ ht_cmd_report, TEXT, { "report", "--hist=total", "--per-vcpu", INPUT } },
	{ ht_cmd_report, TEXT, { "report", "--hist=exit-hcall,hcall-entry", "--per-vm", INPUT } },
	{ ht_cmd_report, CSV, { "report", "--csv", "--vcpu", "1", "--until", "2", INPUT } },
	{ ht_cmd_report, TEXT, { "report", "--graph", INPUT } },
	{ ht_cmd_report, TEXT, { "report", "--sched", INPUT } },
	{ ht_cmd_report, TEXT, { "report", "--exits", INPUT } },
	{ ht_cmd_report, JSON_LINES, { "report", "--exits", "--json", "--vcpu", "0", "--since", "0.5", INPUT } },
	{ ht_cmd_report, CSV, { "report", "--exits", "--csv", "--until", "1", INPUT } },
	{ ht_cmd_report, TEXT, { "report", "--causes", INPUT } },
	{ ht_cmd_report, CSV, { "report", "--causes", "--csv", INPUT } },
	{ ht_cmd_report, JSON_LINES, { "report", "--causes", "--json", INPUT } },
	{ ht_cmd_report, CSV, { "report", "--vcpu-time", "--csv", INPUT } },
	{ ht_cmd_report, CSV, { "report", "--halts", "--csv", INPUT } },
	{ ht_cmd_report, TEXT, { "report", "--vcpu-switches", "--dump", INPUT } },
	{ ht_cmd_report, JSON_LINES, { "report", "--vcpu-switches", "--json", "--vcpu", "1", INPUT } },
	{ ht_cmd_report, TEXT, { "report", "--latency", INPUT } },
	{ ht_cmd_report, CSV, { "report", "--latency", "--csv", "--vcpu", "0", INPUT } },
	{ ht_cmd_report, JSON_LINES, { "report", "--latency", "--json", "--until", "2", INPUT } },
	{ ht_cmd_convert, BINARY, { "convert", "--ctf", OUTPUT, INPUT } },
	{ ht_cmd_convert, JSON_FILE, { "convert", "--chrome", OUTPUT, INPUT } },
	{ ht_cmd_convert, BINARY, { "convert", "--lttng", OUTPUT, INPUT } },
	{ ht_cmd_convert, BINARY, { "convert", "--perfetto", OUTPUT, INPUT } },
};
#endif

static char input_path[64], output_path[64], stdout_path[64];
/*
 * HT_FUZZ_LOG=FILE: each run's checked rows are appended to FILE ("rows N:
 * ARGV"), so that a test can see that a view reached its rows and was
 * checked (tests/fuzz/test_fuzz.sh). Off while fuzzing.
 */
static FILE *run_log;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	snprintf(input_path, sizeof(input_path), "/tmp/ht-fuzz-%d.in", (int)getpid());
	snprintf(output_path, sizeof(output_path), "/tmp/ht-fuzz-%d.out", (int)getpid());
	snprintf(stdout_path, sizeof(stdout_path), "/tmp/ht-fuzz-%d.stdout", (int)getpid());
	oc_self_test();
	const char *log = getenv("HT_FUZZ_LOG");
	if (log && !(run_log = fopen(log, "a")))
		abort();
	return 0;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return type == FTW_DP ? rmdir(path) : unlink(path);
}

/* The scratch output: a file, or the directory of a CTF trace or an LTTng experiment (with subdirectories). */
static void remove_output(void)
{
	if (nftw(output_path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) && errno != ENOENT)
		abort();
}

static void write_input(const uint8_t *data, size_t size)
{
	FILE *f = fopen(input_path, "wb");
#ifdef HT_FUZZ_BLOCKS
	uint8_t *fixed = malloc(size ? size : 1);

	if (!fixed)
		abort();
	if (size)
		memcpy(fixed, data, size);
	ht_fuzz_fix_crcs(fixed, size);
	data = fixed;
#endif
	if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f))
		abort(); /* the harness, not the reader, failed */
#ifdef HT_FUZZ_BLOCKS
	free(fixed);
#endif
}

/*
 * What a run wrote, whatever the input: nothing a terminal interprets, each
 * --json line one strict JSON value (the Chrome export one value), each
 * --csv row the header's columns (output_check.h). Binary exports:
 * sanitizers and exit statuses only. A violation aborts: libFuzzer saves
 * the input.
 */
static void check_output(const struct run *r, char **argv, const char *path)
{
	const char *what;
	size_t len, at, rows;
	char *text;

	if (r->check == BINARY || access(path, F_OK) != 0)
		return; /* a convert refused before its output exists */
	text = oc_read_output(path, &len);
	rows = oc_check((enum oc_kind)r->check, text, len, &what, &at);
	if (what) {
		fprintf(stderr, "fuzz: '%s %s %s': %s at byte %zu: %.120s\n", argv[0], argv[1], argv[2] ? argv[2] : "",
			what, at, text + (at > 60 ? at - 60 : 0));
		abort();
	}
	if (run_log) {
		fprintf(run_log, "rows %zu:", rows);
		for (const char *const *a = r->argv; *a; a++)
			fprintf(run_log, " %s", *a);
		fputc('\n', run_log);
		fflush(run_log);
	}
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	write_input(data, size);
	for (size_t i = 0; i < ARRAY_SIZE(runs); i++) {
		char *argv[ARRAY_SIZE(runs[i].argv) + 1];
		int argc = 0;

		for (; runs[i].argv[argc]; argc++) {
			const char *a = runs[i].argv[argc];
			argv[argc] = (char *)(!strcmp(a, INPUT) ? input_path : !strcmp(a, OUTPUT) ? output_path : a);
		}
		argv[argc] = NULL;
		/* Reports go to a file that is checked; libFuzzer keeps its own stderr (-close_fd_mask=2 silences ours). */
		if (!freopen(stdout_path, "w", stdout))
			abort();
		int status = runs[i].cmd(argc, argv);
		fflush(stdout);
		/* A damaged input is a runtime error (1), never a usage error or anything else. */
		if (status != 0 && status != 1) {
			fprintf(stderr, "fuzz: '%s %s' exited with %d\n", argv[0], argv[1], status);
			abort();
		}
		/* A failed conversion (a damaged input) leaves nothing under the output's name. */
		if (runs[i].cmd == ht_cmd_convert && status != 0 && access(output_path, F_OK) == 0) {
			fprintf(stderr, "fuzz: '%s %s' failed with %d and left %s\n", argv[0], argv[1], status, output_path);
			abort();
		}
		check_output(&runs[i], argv, runs[i].check == JSON_FILE ? output_path : stdout_path);
		remove_output();
	}
	if (!freopen("/dev/null", "w", stdout))
		abort();
	unlink(input_path);
	unlink(stdout_path);
	return 0;
}
