// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer harness: each input is a trace file, read by every report mode
 * and every export through the command's own entry point, as a user would
 * run it. A new mode
 * or export is one line in `runs` below.
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
#ifdef HT_FUZZ_BLOCKS
#include "fix_crcs.h"
#endif

#define INPUT "@INPUT@"   /* replaced by the input's path */
#define OUTPUT "@OUTPUT@" /* replaced by a scratch output path */

struct run {
	int (*cmd)(int argc, char **argv);
	const char *argv[10];
};

#ifdef HT_FUZZ_BLOCKS
static const struct run runs[] = {
	{ ht_cmd_report, { "report", INPUT } },
	{ ht_cmd_report, { "report", "--exits", INPUT } },
	{ ht_cmd_report, { "report", "--exits", "--json", "--vcpu", "0", "--since", "0.5", INPUT } },
	{ ht_cmd_report, { "report", "--exits", "--csv", "--until", "1", INPUT } },
	{ ht_cmd_report, { "report", "--vcpu-time", INPUT } },
	{ ht_cmd_report, { "report", "--vcpu-time", "--json", "--since", "0.5", INPUT } },
	{ ht_cmd_report, { "report", "--vcpu-switches", "--csv", INPUT } },
	{ ht_cmd_report, { "report", "--vcpu-switches", "--dump", INPUT } },
	{ ht_cmd_report, { "report", "--vcpu-switches", "--json", "--vcpu", "1", INPUT } },
	{ ht_cmd_report, { "report", "--sched", INPUT } },
	{ ht_cmd_convert, { "convert", "--perfetto", OUTPUT, INPUT } },
};
#else
static const struct run runs[] = {
	{ ht_cmd_report, { "report", INPUT } },
	{ ht_cmd_report, { "report", "--dump", INPUT } },
	{ ht_cmd_report, { "report", "--csv", INPUT } },
	{ ht_cmd_report, { "report", "--json", INPUT } },
	{ ht_cmd_report, { "report", "--hist", INPUT } },
	{ ht_cmd_report, { "report", "--hist=total", "--per-vcpu", INPUT } },
	{ ht_cmd_report, { "report", "--hist=exit-hcall,hcall-entry", "--per-vm", INPUT } },
	{ ht_cmd_report, { "report", "--csv", "--vcpu", "1", "--until", "2", INPUT } },
	{ ht_cmd_report, { "report", "--graph", INPUT } },
	{ ht_cmd_report, { "report", "--sched", INPUT } },
	{ ht_cmd_report, { "report", "--exits", INPUT } },
	{ ht_cmd_report, { "report", "--exits", "--json", "--vcpu", "0", "--since", "0.5", INPUT } },
	{ ht_cmd_report, { "report", "--exits", "--csv", "--until", "1", INPUT } },
	{ ht_cmd_report, { "report", "--vcpu-time", "--csv", INPUT } },
	{ ht_cmd_report, { "report", "--vcpu-switches", "--dump", INPUT } },
	{ ht_cmd_report, { "report", "--vcpu-switches", "--json", "--vcpu", "1", INPUT } },
	{ ht_cmd_convert, { "convert", "--ctf", OUTPUT, INPUT } },
	{ ht_cmd_convert, { "convert", "--chrome", OUTPUT, INPUT } },
	{ ht_cmd_convert, { "convert", "--lttng", OUTPUT, INPUT } },
	{ ht_cmd_convert, { "convert", "--perfetto", OUTPUT, INPUT } },
};
#endif

static char input_path[64], output_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	snprintf(input_path, sizeof(input_path), "/tmp/ht-fuzz-%d.in", (int)getpid());
	snprintf(output_path, sizeof(output_path), "/tmp/ht-fuzz-%d.out", (int)getpid());
	/* Reports go nowhere; libFuzzer keeps its own stderr (-close_fd_mask=2 silences ours). */
	if (!freopen("/dev/null", "w", stdout))
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
		int status = runs[i].cmd(argc, argv);
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
		fflush(stdout);
		remove_output();
	}
	unlink(input_path);
	return 0;
}
