// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The process_* metrics: exact text from a fake /proc (a process name with
 * spaces and parentheses, a boot time after a long intr line), nothing made
 * up when a file is missing, and plausible numbers from this process's own
 * /proc/self.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include "metrics/process_metrics.h"
#include "test.h"

static char root[] = "/tmp/ht-procmetrics-XXXXXX";
static char self[300], stat_path[300];

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* The exposition text of the paths p, in a malloc'ed string. */
static char *render(const struct ht_process_paths *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f || ht_process_metrics_render(p, f)) {
		if (f)
			fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	return buf;
}

static void fake_proc_gives_exact_values(void)
{
	struct ht_process_paths p = { .self = self, .stat = stat_path };
	char path[400], want[2048], *text = NULL;
	long hz = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);

	if (!ASSERT_MSG(hz == 100, "these expected values assume 100 ticks per second, not %ld", hz))
		goto cleanup;
	snprintf(path, sizeof(path), "%s/stat", self);
	/* utime 250 and stime 75 ticks, start 1234 ticks after boot, 10 MB virtual, 300 pages resident. */
	write_file(path, "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 3 0 1234 10485760 300 18446744073709551615\n");
	snprintf(path, sizeof(path), "%s/limits", self);
	write_file(path, "Limit                     Soft Limit           Hard Limit           Units     \n"
			 "Max cpu time              unlimited            unlimited            seconds   \n"
			 "Max open files            1024                 524288               files     \n");
	snprintf(path, sizeof(path), "%s/fd", self);
	if (!ASSERT_MSG(mkdir(path, 0700) == 0, "mkdir %s", path))
		goto cleanup;
	for (int i = 0; i < 5; i++) {
		snprintf(path, sizeof(path), "%s/fd/%d", self, i);
		write_file(path, "");
	}
	{
		/* A long intr line before btime, as on a host with many interrupts. */
		size_t n = 20000;
		char *intr = malloc(n + 64);

		if (!ASSERT_MSG(intr, "out of memory"))
			goto cleanup;
		size_t l;

		strcpy(intr, "cpu  1 2 3 4\nintr 1");
		for (l = strlen(intr); l < n; l += 2)
			memcpy(intr + l, " 0", 2);
		strcpy(intr + l, "\nctxt 99\nbtime 1700000000\nprocesses 5\n");
		write_file(stat_path, intr);
		free(intr);
	}
	text = render(&p);
	if (!ASSERT_MSG(text, "render failed"))
		goto cleanup;
	snprintf(want, sizeof(want),
		 "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
		 "# TYPE process_cpu_seconds_total counter\n"
		 "process_cpu_seconds_total 3.25\n"
		 "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
		 "# TYPE process_resident_memory_bytes gauge\n"
		 "process_resident_memory_bytes %ld\n"
		 "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
		 "# TYPE process_virtual_memory_bytes gauge\n"
		 "process_virtual_memory_bytes 10485760\n"
		 "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n"
		 "# TYPE process_start_time_seconds gauge\n"
		 "process_start_time_seconds 1700000012.34\n"
		 "# HELP process_open_fds Number of open file descriptors.\n"
		 "# TYPE process_open_fds gauge\n"
		 "process_open_fds 5\n"
		 "# HELP process_max_fds Maximum number of open file descriptors.\n"
		 "# TYPE process_max_fds gauge\n"
		 "process_max_fds 1024\n",
		 300 * page);
	if (!ASSERT_MSG(!strcmp(text, want), "got:\n%s\nwant:\n%s", text, want))
		goto cleanup;
cleanup:
	free(text);
}

static void missing_files_leave_their_metrics_out(void)
{
	struct ht_process_paths p = { .self = "/nonexistent/self", .stat = "/nonexistent/stat" };
	char *text = render(&p);

	if (!ASSERT_MSG(text, "render failed"))
		goto cleanup;
	if (!ASSERT_MSG(text[0] == '\0', "made-up values: %s", text))
		goto cleanup;
cleanup:
	free(text);
}

static uint64_t value_of(const char *text, const char *name)
{
	char key[128];
	const char *line;

	snprintf(key, sizeof(key), "\n%s ", name);
	line = strstr(text, key);
	return line ? strtoull(line + strlen(key), NULL, 10) : 0;
}

static void own_process_is_plausible(void)
{
	char *text = render(&ht_process_paths_live);
	uint64_t start = value_of(text ? text : "", "process_start_time_seconds");

	if (!ASSERT_MSG(text, "render failed"))
		goto cleanup;
	if (!ASSERT_MSG(value_of(text, "process_resident_memory_bytes") > 4096, "%s", text))
		goto cleanup;
	if (!ASSERT_MSG(value_of(text, "process_open_fds") >= 3, "stdin, stdout, stderr at least: %s", text))
		goto cleanup;
	if (!ASSERT_MSG(value_of(text, "process_max_fds") >= 64, "%s", text))
		goto cleanup;
	if (!ASSERT_MSG(start > 1600000000 && start <= (uint64_t)time(NULL) + 1, "start %" PRIu64, start))
		goto cleanup;
cleanup:
	free(text);
}

int main(void)
{
	if (!mkdtemp(root)) {
		printf("FAIL: setup: mkdtemp\n");
		return 1;
	}
	snprintf(self, sizeof(self), "%s/self", root);
	snprintf(stat_path, sizeof(stat_path), "%s/stat", root);
	if (mkdir(self, 0700)) {
		printf("FAIL: setup: mkdir\n");
		return 1;
	}
	RUN(fake_proc_gives_exact_values);
	RUN(missing_files_leave_their_metrics_out);
	RUN(own_process_is_plausible);
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	if (system(cmd) != 0)
		printf("    cleanup failed: %s\n", cmd);
	return ht_test_exit_status();
}
