// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* process_* metrics from /proc, as Prometheus' client libraries export them. */
#include "metrics/process_metrics.h"
#include "common/small_file.h"
#include "metrics/metrics_exposition.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const struct ht_process_paths ht_process_paths_live = { .self = "/proc/self", .stat = "/proc/stat" };

/* Fields of /proc/PID/stat, counted from 1 as proc(5) does; the name (2) may hold spaces and ')'. */
struct self_stat {
	uint64_t utime, stime, starttime, vsize, rss_pages;
};

static bool parse_stat(const char *text, struct self_stat *st)
{
	const char *p = strrchr(text, ')');
	unsigned long long v[24];
	int field;

	if (!p)
		return false;
	p++;
	/* Field 3 is the state letter; the numbers from 4 on. */
	while (*p == ' ')
		p++;
	if (!*p)
		return false;
	p++;
	for (field = 4; field <= 24; field++) {
		char *end;

		while (*p == ' ')
			p++;
		errno = 0;
		v[field - 1] = strtoull(p, &end, 10);
		if (end == p || errno)
			return false;
		p = end;
	}
	st->utime = v[13];
	st->stime = v[14];
	st->starttime = v[21];
	st->vsize = v[22];
	st->rss_pages = v[23];
	return true;
}

/* The soft limit on open files from /proc/self/limits ("Max open files  1024  524288  files"). */
static bool max_open_files(const char *limits, uint64_t *out)
{
	const char *line = strstr(limits, "Max open files");
	char *end;

	if (!line)
		return false;
	line += strlen("Max open files");
	while (*line == ' ')
		line++;
	if (!strncmp(line, "unlimited", 9))
		return false;
	*out = strtoull(line, &end, 10);
	return end != line;
}

/* btime of /proc/stat, streamed: the intr line before it can be long on a big host. */
static bool boot_time(const char *stat_path, uint64_t *out)
{
	FILE *f = fopen(stat_path, "re");
	char *line = NULL;
	size_t cap = 0;
	bool found = false;

	if (!f)
		return false;
	while (!found && getline(&line, &cap, f) > 0) {
		char *end;

		if (strncmp(line, "btime ", 6))
			continue;
		*out = strtoull(line + 6, &end, 10);
		found = end != line + 6;
	}
	free(line);
	fclose(f);
	return found;
}

/* Entries of DIR/fd: this process's open descriptors (the one reading the directory included, as in the Go client). */
static bool count_fds(const char *self, uint64_t *out)
{
	char path[512];
	struct dirent *e;
	uint64_t n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/fd", self);
	d = opendir(path);
	if (!d)
		return false;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	*out = n;
	return true;
}

static void metric(FILE *out, const char *name, const char *type, const char *help, const char *value)
{
	ht_metrics_family(out, name, type, help);
	fprintf(out, "%s %s\n", name, value);
}

static void metric_u64(FILE *out, const char *name, const char *type, const char *help, uint64_t v)
{
	char value[32];

	snprintf(value, sizeof(value), "%" PRIu64, v);
	metric(out, name, type, help, value);
}

/* ticks as seconds with two decimals (a tick is 1/100 s on Linux): exact, no float rounding. */
static void ticks_to_seconds(uint64_t ticks, uint64_t hz, char *out, size_t len)
{
	uint64_t cs = ticks * 100 / hz;

	snprintf(out, len, "%" PRIu64 ".%02" PRIu64, cs / 100, cs % 100);
}

int ht_process_metrics_render(const struct ht_process_paths *p, FILE *out)
{
	long hz = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	char text[4096], value[48], path[512];
	struct self_stat st;
	uint64_t v, btime;

	if (hz <= 0)
		hz = 100;
	snprintf(path, sizeof(path), "%s/stat", p->self);
	if (ht_read_small_file(path, text, sizeof(text)) > 0 && parse_stat(text, &st)) {
		ticks_to_seconds(st.utime + st.stime, (uint64_t)hz, value, sizeof(value));
		metric(out, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.", value);
		metric_u64(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
			   st.rss_pages * (uint64_t)(page > 0 ? page : 4096));
		metric_u64(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", st.vsize);
		if (boot_time(p->stat, &btime)) {
			ticks_to_seconds(btime * (uint64_t)hz + st.starttime, (uint64_t)hz, value, sizeof(value));
			metric(out, "process_start_time_seconds", "gauge",
			       "Start time of the process since unix epoch in seconds.", value);
		}
	}
	if (count_fds(p->self, &v))
		metric_u64(out, "process_open_fds", "gauge", "Number of open file descriptors.", v);
	snprintf(path, sizeof(path), "%s/limits", p->self);
	if (ht_read_small_file(path, text, sizeof(text)) > 0 && max_open_files(text, &v))
		metric_u64(out, "process_max_fds", "gauge", "Maximum number of open file descriptors.", v);
	return ferror(out) ? -EIO : 0;
}
