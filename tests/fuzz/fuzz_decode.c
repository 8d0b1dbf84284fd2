// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer harness of the guest-event decoding: each input is a catalog
 * file, a symbol file, the names of a VM thread and records (guest events
 * among them), laid out as
 *
 *   u16 catalog length, u16 symbols length (little-endian),
 *   catalog text, symbol text, 96 bytes of names (process 16, thread 16,
 *   VM 64), then records (struct ht_record, 80 bytes each; one with flags
 *   bit 7 is a switch of a vCPU thread, struct ht_vcpu_switch)
 *
 * (a short input leaves the later parts empty). The harness writes them as
 * files, the records as a trace through the real writer, and runs the
 * report modes and the exports that decode, through the commands' own
 * entry points. Then it checks what they wrote, not only that they did not
 * crash: every --json line is one strict JSON value (so is the Chrome
 * file), every --csv row has the header's columns, and nothing a terminal
 * interprets is in any output (tests/fuzz/output_check.c). The LTTng and
 * Perfetto exports are binary: sanitizers and exit statuses only (their
 * strings are checked on a hostile trace by tests/unit/test_hostile_output.c).
 * A violation aborts, and libFuzzer saves the input.
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
#include "tracefile/trace_writer.h"

#define NAMES_BYTES 96

enum check { CHECK_TEXT, CHECK_JSON_LINES, CHECK_CSV, CHECK_JSON_FILE, CHECK_EXPORT_RUNS };

struct run {
	int (*cmd)(int argc, char **argv);
	enum check check;
	const char *argv[12];
};

/* Replaced by the files' paths. */
#define TRACE "@TRACE@"
#define CATALOG "@CATALOG@"
#define SYMBOLS "@SYMBOLS@"
#define OUT "@OUT@"
#define EXPORT "@EXPORT@" /* an LTTng experiment's directory or a Perfetto file */

static const struct run runs[] = {
	{ ht_cmd_report, CHECK_JSON_LINES,
	  { "report", "--json", "--catalog", CATALOG, "--guest-symbols", SYMBOLS, "--kaslr-offset", "0", TRACE } },
	{ ht_cmd_report, CHECK_JSON_LINES, { "report", "--json", "--catalog", CATALOG, TRACE } },
	{ ht_cmd_report, CHECK_CSV, { "report", "--csv", "--catalog", CATALOG, "--guest-symbols", SYMBOLS, TRACE } },
	{ ht_cmd_report, CHECK_TEXT,
	  { "report", "--dump", "--catalog", CATALOG, "--guest-symbols", SYMBOLS, "--kaslr-offset", "0", TRACE } },
	{ ht_cmd_report, CHECK_TEXT, { "report", "--graph", "--guest-symbols", SYMBOLS, "--kaslr-offset", "0", TRACE } },
	{ ht_cmd_report, CHECK_TEXT, { "report", "--sched", TRACE } },
	{ ht_cmd_report, CHECK_TEXT, { "report", TRACE } },
	{ ht_cmd_report, CHECK_TEXT, { "report", "--hist", "--per-vcpu", TRACE } },
	{ ht_cmd_report, CHECK_CSV, { "report", "--vcpu-switches", "--csv", TRACE } },
	{ ht_cmd_report, CHECK_JSON_LINES, { "report", "--vcpu-switches", "--json", TRACE } },
	{ ht_cmd_report, CHECK_TEXT, { "report", "--vcpu-switches", "--dump", TRACE } },
	{ ht_cmd_convert, CHECK_JSON_FILE,
	  { "convert", "--chrome", OUT, "--catalog", CATALOG, "--guest-symbols", SYMBOLS, "--kaslr-offset", "0", TRACE } },
	{ ht_cmd_convert, CHECK_EXPORT_RUNS,
	  { "convert", "--lttng", EXPORT, "--catalog", CATALOG, "--guest-symbols", SYMBOLS, "--kaslr-offset", "0", TRACE } },
	{ ht_cmd_convert, CHECK_EXPORT_RUNS,
	  { "convert", "--perfetto", EXPORT, "--catalog", CATALOG, "--guest-symbols", SYMBOLS, "--kaslr-offset", "0",
	    TRACE } },
};

static char trace_path[64], catalog_path[64], symbols_path[64], out_path[64], stdout_path[64], export_path[64];

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return type == FTW_DP ? rmdir(path) : unlink(path);
}

/* An export's output: a file, or an LTTng experiment's directory tree. */
static void remove_export(void)
{
	if (nftw(export_path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) && errno != ENOENT)
		abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	oc_self_test();
	snprintf(trace_path, sizeof(trace_path), "/tmp/ht-fuzzd-%d.htr", (int)getpid());
	snprintf(catalog_path, sizeof(catalog_path), "/tmp/ht-fuzzd-%d.cat", (int)getpid());
	snprintf(symbols_path, sizeof(symbols_path), "/tmp/ht-fuzzd-%d.map", (int)getpid());
	snprintf(out_path, sizeof(out_path), "/tmp/ht-fuzzd-%d.json", (int)getpid());
	snprintf(stdout_path, sizeof(stdout_path), "/tmp/ht-fuzzd-%d.out", (int)getpid());
	snprintf(export_path, sizeof(export_path), "/tmp/ht-fuzzd-%d.export", (int)getpid());
	return 0;
}

static void write_file(const char *path, const uint8_t *data, size_t size)
{
	FILE *f = fopen(path, "wb");

	if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f))
		abort(); /* the harness, not the code under test, failed */
}

/* The trace: a header selecting the project's events and the first records' nr, names, records. */
static void write_trace(const uint8_t *names, const uint8_t *recs, size_t n)
{
	struct ht_file_header h;
	struct ht_identity id = { 0 };
	struct ht_trailer t = { .records = n };
	struct ht_writer *w;
	char err[256];

	ht_header_init(&h);
	snprintf(h.kernel_release, sizeof(h.kernel_release), "6.1.0-fuzz");
	h.start_monotonic_ns = 1000000000ull;
	h.start_realtime_ns = 1795318801000000000ull;
	h.filter_nr_count = 0;
	for (unsigned int k = 0; k < 7; k++)
		h.filter_nr[h.filter_nr_count++] = 1100 + k;
	h.filter_nr[h.filter_nr_count++] = 1200;
	if (ht_writer_open(trace_path, true, &h, &w, err, sizeof(err)))
		abort();
	if (names) {
		memcpy(id.process_name, names, 16);
		memcpy(id.thread_name, names + 16, 16);
		memcpy(id.vm_name, names + 32, 64);
		id.process_name[15] = id.thread_name[15] = id.vm_name[63] = '\0';
	}
	for (size_t i = 0; i < n; i++) {
		struct ht_record r;

		memcpy(&r, recs + i * sizeof(r), sizeof(r));
		if (i == 0 && names) {
			id.pid = r.host_pid;
			id.tid = r.host_tid;
			if (ht_writer_add_identity(w, &id))
				abort();
		}
		ht_writer_add(w, &r);
	}
	if (ht_writer_close(w, &t))
		abort();
}

static void fail(const struct run *r, const char *what, const char *text, size_t at)
{
	fprintf(stderr, "fuzz_decode: '%s %s': %s at byte %zu: %.120s\n", r->argv[0], r->argv[1], what, at,
		text + (at > 60 ? at - 60 : 0));
	abort();
}

/* The checks of one run's output (stdout, or the Chrome file): tests/fuzz/output_check.c. */
static void check_output(const struct run *r, const char *text, size_t len)
{
	static const enum oc_kind kinds[] = { [CHECK_TEXT] = OC_TEXT, [CHECK_JSON_LINES] = OC_JSON_LINES,
					      [CHECK_CSV] = OC_CSV, [CHECK_JSON_FILE] = OC_JSON_FILE,
					      [CHECK_EXPORT_RUNS] = OC_TEXT };
	const char *what;
	size_t at;

	oc_check(kinds[r->check], text, len, &what, &at);
	if (what)
		fail(r, what, text, at);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t cat_len = size >= 2 ? (size_t)(data[0] | data[1] << 8) : 0;
	size_t sym_len = size >= 4 ? (size_t)(data[2] | data[3] << 8) : 0;
	size_t pos = size >= 4 ? 4 : size;

	cat_len = HT_MIN(cat_len, size - pos);
	write_file(catalog_path, data + pos, cat_len);
	pos += cat_len;
	sym_len = HT_MIN(sym_len, size - pos);
	write_file(symbols_path, data + pos, sym_len);
	pos += sym_len;
	const uint8_t *names = size - pos >= NAMES_BYTES ? data + pos : NULL;
	pos += names ? NAMES_BYTES : 0;
	write_trace(names, data + pos, (size - pos) / sizeof(struct ht_record));

	for (size_t i = 0; i < ARRAY_SIZE(runs); i++) {
		const struct run *r = &runs[i];
		char *argv[ARRAY_SIZE(r->argv) + 1];
		int argc = 0;

		for (; r->argv[argc]; argc++) {
			const char *a = r->argv[argc];

			argv[argc] = (char *)(!strcmp(a, TRACE) ? trace_path : !strcmp(a, CATALOG) ? catalog_path :
					      !strcmp(a, SYMBOLS) ? symbols_path : !strcmp(a, OUT) ? out_path :
					      !strcmp(a, EXPORT) ? export_path : a);
		}
		argv[argc] = NULL;
		unlink(out_path);
		remove_export();
		if (!freopen(stdout_path, "w", stdout))
			abort();
		int status = r->cmd(argc, argv);
		fflush(stdout);
		/* A bad catalog or symbol file is a runtime error (1), never a usage error or anything else. */
		if (status != 0 && status != 1) {
			fprintf(stderr, "fuzz_decode: '%s %s' exited with %d\n", argv[0], argv[1], status);
			abort();
		}
		/* A convert refused before its output exists (a bad catalog) leaves nothing to check. */
		const char *written = r->check == CHECK_JSON_FILE ? out_path : stdout_path;
		if (access(written, F_OK) == 0) {
			size_t len;
			char *text = oc_read_output(written, &len);

			check_output(r, text, len);
			free(text);
		}
	}
	if (!freopen("/dev/null", "w", stdout))
		abort();
	unlink(trace_path);
	unlink(catalog_path);
	unlink(symbols_path);
	unlink(stdout_path);
	unlink(out_path);
	remove_export();
	return 0;
}
