// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * report's summary: exact percentiles whether the latencies are all kept or
 * only histogrammed and refined by reading the file again; memory bounded
 * whatever the file holds; durations and key counts never wrap or grow
 * without bound.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "report/report_summary.h"
#include "tracefile/trace_reader.h"
#include "tracefile/trace_writer.h"
#include "test.h"

#define GNU_TIME "/usr/bin/time"

static char dir[] = "/tmp/ht-summary-XXXXXX";
static char path[160];

/* The trace file a test wrote, unless HT_KEEP asks to keep it for a look. */
static void remove_file(void)
{
	if (!getenv("HT_KEEP"))
		unlink(path);
}

typedef void (*fill_fn)(struct ht_record *r, unsigned int i);

static uint64_t rng = 88172645463325252ull;

static uint64_t xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int write_file(unsigned int n, fill_fn fill, unsigned int encoding)
{
	struct ht_file_header h;
	struct ht_trailer t = { .records = n };
	struct ht_writer *w;
	char err[256];

	ht_header_init(&h);
	if (ht_writer_open(path, true, &h, &w, err, sizeof(err)) || ht_writer_set_encoding(w, encoding))
		return -1;
	for (unsigned int i = 0; i < n; i++) {
		struct ht_record r = { .exit_ns = 1000 + i, .nr = 1000, .host_pid = 7, .isa = HT_ISA_SVM };

		fill(&r, i);
		ht_writer_add(w, &r);
	}
	return ht_writer_close(w, &t);
}

/* The summary of path as report prints it, with the given limits (0: defaults). */
static char *summarize(size_t exact_records, size_t collect_values, unsigned int *passes)
{
	struct ht_summary *s = ht_summary_new();
	struct ht_reader *r;
	struct ht_record rec;
	char err[256], *text = NULL;
	size_t len;
	FILE *out;

	if (!s || ht_reader_open(path, &r, err, sizeof(err)))
		return NULL;
	if (exact_records)
		ht_summary_set_limits(s, exact_records, collect_values);
	while (ht_reader_next(r, &rec) == 1)
		if (ht_summary_add(s, &rec))
			return NULL;
	out = open_memstream(&text, &len);
	ht_summary_print(s, out, path, ht_reader_header(r), ht_reader_status(r), r);
	fclose(out);
	if (passes)
		*passes = ht_summary_passes(s);
	ht_summary_free(s);
	ht_reader_close(r);
	return text;
}

static char *latency_table(char *text)
{
	char *t = text ? strstr(text, "latency (ns):") : NULL;

	return t ? t : "(no latency table)";
}

/* Small, mid and huge values, many repeats of one: every histogram path is taken. */
static void mixed_latencies(struct ht_record *r, unsigned int i)
{
	uint64_t x = xorshift();

	switch (i % 4) {
	case 0: r->exit_to_hcall_ns = (__u32)(x % 5000); break;
	case 1: r->exit_to_hcall_ns = 123457; break;
	case 2: r->exit_to_hcall_ns = (__u32)(x >> 32); break;
	default: r->exit_to_hcall_ns = (__u32)(1000000 + x % 100000); break;
	}
	r->hcall_to_entry_ns = i % 3 ? UINT32_MAX - (__u32)(x % 3) : (__u32)(x % 70000);
	r->vcpu_id = (__u16)(i % 5);
}

static void percentiles_beyond_the_exact_limit_are_the_exact_ones(void)
{
	char *exact = NULL, *collected = NULL, *refined = NULL;
	unsigned int passes = 0;

	if (!ASSERT_OK(write_file(40000, mixed_latencies, HT_ENCODING_RAW), "write"))
		goto cleanup;
	exact = summarize(0, 0, &passes);
	if (!ASSERT_OK_PTR(exact, "summary, all kept") || !ASSERT_EQ(passes, 1, "reads, all kept"))
		goto cleanup;
	/* Histograms refined by collecting each percentile's bucket. */
	collected = summarize(1000, 100000, &passes);
	if (!ASSERT_OK_PTR(collected, "summary, collecting") ||
	    !ASSERT_STREQ(latency_table(collected), latency_table(exact), "collected latencies"))
		goto cleanup;
	ASSERT_EQ(passes, 2, "reads, collecting");
	/* Histograms refined through sub-buckets (nothing collected until a bucket is tiny). */
	refined = summarize(1000, 1, &passes);
	if (!ASSERT_OK_PTR(refined, "summary, refining") ||
	    !ASSERT_STREQ(latency_table(refined), latency_table(exact), "refined latencies"))
		goto cleanup;
	ASSERT_GE(passes, 2, "reads, refining");
	ASSERT_LE(passes, 4, "reads, refining");
cleanup:
	free(exact);
	free(collected);
	free(refined);
	remove_file();
}

static void identical_latencies(struct ht_record *r, unsigned int i)
{
	(void)i;
	r->exit_to_hcall_ns = 123456789;
	r->hcall_to_entry_ns = 4000000000u;
}

static void a_file_of_one_repeated_value_gives_that_value(void)
{
	char *text = NULL;

	if (!ASSERT_OK(write_file(5000, identical_latencies, HT_ENCODING_DELTA_ZLIB), "write"))
		goto cleanup;
	text = summarize(10, 1, NULL);
	if (!ASSERT_OK_PTR(text, "summary"))
		goto cleanup;
	if (!ASSERT_TRUE(strstr(text, "exit->hypercall       123456789  123456789  123456789  123456789  123456789"),
			 "exit->hypercall row") ||
	    !ASSERT_TRUE(strstr(text, "total (exit->entry)  4123456789 4123456789 4123456789 4123456789 4123456789"),
			 "total row"))
		printf("%s\n", latency_table(text));
cleanup:
	free(text);
	remove_file();
}

static void many_vcpus(struct ht_record *r, unsigned int i)
{
	r->vcpu_id = (__u16)i;
	r->host_pid = 100 + i / 65536;
	r->nr = i % 2;
}

static void keys_beyond_the_limit_are_counted_together(void)
{
	char *text = NULL;

	if (!ASSERT_OK(write_file(HT_SUMMARY_MAX_KEYS + 1234, many_vcpus, HT_ENCODING_DELTA_ZLIB), "write"))
		goto cleanup;
	text = summarize(0, 0, NULL);
	if (!ASSERT_OK_PTR(text, "summary"))
		goto cleanup;
	if (!ASSERT_TRUE(strstr(text, "(1234 records of further vCPUs, not listed: at most 65536 are)"),
			 "further vCPUs counted together"))
		printf("%.300s\n", text);
	ASSERT_TRUE(strstr(text, "\n           0      33385\n           1      33385\n"), "per nr");
cleanup:
	free(text);
	remove_file();
}

static void a_trailer_ending_before_the_start_is_not_a_huge_duration(void)
{
	struct ht_file_header h = { .start_monotonic_ns = 10000000000ull };
	struct ht_read_status st = { .has_trailer = true, .trailer.end_monotonic_ns = 6710000000ull };
	struct ht_summary *s = ht_summary_new();
	char *text = NULL;
	size_t len;
	FILE *out = open_memstream(&text, &len);

	ht_summary_print(s, out, "t.htr", &h, &st, NULL);
	fclose(out);
	ht_summary_free(s);
	if (!ASSERT_TRUE(strstr(text, "duration: unknown: the trailer's end is 3.290 s before the start"),
			 "duration line"))
		printf("%s\n", text);
	free(text);
}

/*
 * Peak RSS in KiB of `hypertrace-bpf report path` (the unsanitized build), or
 * -1. GNU time forks it from a small process: a child forked from this
 * sanitized one would count this process's memory as its own peak.
 */
static long report_peak_rss_kib(const char *bin)
{
	char rss_path[200], line[64];
	long kib = -1;
	int status;
	FILE *f;
	pid_t pid;

	snprintf(rss_path, sizeof(rss_path), "%s/rss", dir);
	pid = fork();
	if (pid == 0) {
		if (!freopen("/dev/null", "w", stdout))
			_exit(127);
		execl(GNU_TIME, GNU_TIME, "-f", "%M", "-o", rss_path, bin, "report", path, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	f = fopen(rss_path, "r");
	if (f && fgets(line, sizeof(line), f))
		kib = strtol(line, NULL, 10);
	if (f)
		fclose(f);
	unlink(rss_path);
	return kib;
}

static void slowly_rising(struct ht_record *r, unsigned int i)
{
	r->exit_to_hcall_ns = 500 + i / 1024;
	r->hcall_to_entry_ns = 700;
}

static void a_big_compressed_file_is_summarized_in_bounded_memory(void)
{
	const char *output = getenv("OUTPUT") ? getenv("OUTPUT") : ".output";
	char bin[256];
	unsigned int n = 6u << 20; /* kept whole: 3 series x 8 B x 6 Mi = 144 MiB at least */

	snprintf(bin, sizeof(bin), "%s/hypertrace-bpf", output);
	if (access(bin, X_OK))
		SKIP("%s is not built (make): RSS is measured on the unsanitized binary", bin);
	if (access(GNU_TIME, X_OK))
		SKIP("%s is missing (Debian package time, installed by make deps)", GNU_TIME);
	if (ASSERT_OK(write_file(n, slowly_rising, HT_ENCODING_DELTA_ZLIB), "write")) {
		long kib = report_peak_rss_kib(bin);

		if (ASSERT_GT(kib, 0, "report's peak RSS (report failed)")) {
			printf("    (report of %u records: peak RSS %ld KiB)\n", n, kib);
			ASSERT_LT(kib, 48 * 1024, "peak RSS in KiB, want < 48 MiB");
		}
	}
	remove_file();
}

int main(void)
{
	if (!mkdtemp(dir))
		return perror("mkdtemp"), 1;
	snprintf(path, sizeof(path), "%s/t.htr", dir);
	RUN(percentiles_beyond_the_exact_limit_are_the_exact_ones);
	RUN(a_file_of_one_repeated_value_gives_that_value);
	RUN(keys_beyond_the_limit_are_counted_together);
	RUN(a_trailer_ending_before_the_start_is_not_a_huge_duration);
	RUN(a_big_compressed_file_is_summarized_in_bounded_memory);
	rmdir(dir);
	return ht_test_exit_status();
}
