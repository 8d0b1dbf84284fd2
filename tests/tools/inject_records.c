// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Feeds records into a running `hypertrace-bpf record`, for the shell tests of
 * what happens to the file under a crash or a full disk. No guest runs on the
 * test host, so nothing else would produce records.
 *
 * It finds the recorder's array of ring buffers (one per CPU) among its open
 * BPF maps, loads the synthetic_fill program with that array in place of its
 * own, and runs it: the records reach the recorder through the ring of the
 * CPU the tool runs on and the same drain as real ones, numbered 0, 1, 2, ...
 * in a1. Drops are counted in this tool's own
 * counters map, so they are known exactly.
 *
 *   inject_records PID COUNT [PER_10MS]
 *       injects COUNT records (PER_10MS every 10 ms, or all at once); prints
 *       "injected N dropped D".
 *   inject_records PID --kill-after SECONDS
 *       injects 100 records every 10 ms, then sends SIGKILL to PID; prints
 *       "injected N dropped D older_than_1s M": records 0..M-1 were all
 *       injected at least one second before the kill.
 *   inject_records --check FILE M
 *       reads FILE; prints "records N missing K" where K counts the numbers
 *       0..M-1 that are not in it. Exit 0 if none is missing.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "bpf/vcpu_state.h" /* before the skeleton, whose .bss holds the CPU slots */
#include "hypertrace.skel.h"
#include "hypertrace/synthetic_fill.h"
#include "tracefile/trace_reader.h"
#include "common/util.h"

#define BPF_MAP_TYPE_ARRAY_OF_MAPS_ID 12

/* The id of the one array of maps PID holds open (its rings), or 0. */
static unsigned int find_rings(int pid)
{
	char dir[64], path[320], line[128];
	unsigned int id = 0;
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fdinfo", pid);
	d = opendir(dir);
	if (!d)
		return 0;
	while (!id && (de = readdir(d))) {
		unsigned int type = 0, map_id = 0;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			sscanf(line, "map_type: %u", &type);
			sscanf(line, "map_id: %u", &map_id);
		}
		fclose(f);
		if (type == BPF_MAP_TYPE_ARRAY_OF_MAPS_ID)
			id = map_id;
	}
	closedir(d);
	return id;
}

static bool all_rings_installed(int rings_fd, unsigned int n)
{
	for (__u32 i = 0; i < n; i++) {
		__u32 inner_id;
		if (bpf_map_lookup_elem(rings_fd, &i, &inner_id))
			return false;
	}
	return true;
}

static int check(const char *file, unsigned long long below)
{
	struct ht_reader *r;
	struct ht_record rec;
	char err[512];
	unsigned long long n = 0, missing = 0;
	unsigned char *seen = calloc(below ? below : 1, 1);

	if (!seen || ht_reader_open(file, &r, err, sizeof(err))) {
		fprintf(stderr, "inject_records: %s\n", seen ? err : "out of memory");
		free(seen);
		return 2;
	}
	while (ht_reader_next(r, &rec) == 1) {
		n++;
		if (rec.a1 < below)
			seen[rec.a1] = 1;
	}
	ht_reader_close(r);
	for (unsigned long long i = 0; i < below; i++)
		missing += !seen[i];
	free(seen);
	printf("records %llu missing %llu\n", n, missing);
	return missing ? 1 : 0;
}

static unsigned long long dropped(struct hypertrace_bpf *skel)
{
	int ncpus = libbpf_num_possible_cpus();
	__u32 key = HT_CNT_RINGBUF_DROPS;
	unsigned long long sum = 0;
	__u64 *vals = calloc((size_t)(ncpus > 0 ? ncpus : 1), sizeof(*vals));

	if (vals && ncpus > 0 && bpf_map_lookup_elem(bpf_map__fd(skel->maps.counters), &key, vals) == 0)
		for (int i = 0; i < ncpus; i++)
			sum += vals[i];
	free(vals);
	return sum;
}

static int fill(int prog_fd, unsigned long long seq, unsigned int count)
{
	struct ht_synthetic_fill_args a = { .seq = seq, .count = count };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &a, .ctx_size_in = sizeof(a));

	return bpf_prog_test_run_opts(prog_fd, &opts);
}

int main(int argc, char **argv)
{
	struct hypertrace_bpf *skel;
	struct bpf_program *prog;
	unsigned long long count = 0, injected = 0, old = 0;
	double kill_after = 0;
	unsigned int id = 0;
	int pid, ring_fd = -1;

	if (argc == 4 && !strcmp(argv[1], "--check"))
		return check(argv[2], strtoull(argv[3], NULL, 0));
	if (argc == 4 && !strcmp(argv[2], "--kill-after"))
		kill_after = atof(argv[3]);
	else if (argc == 3 || argc == 4)
		count = strtoull(argv[2], NULL, 0);
	else {
		fprintf(stderr, "usage: inject_records PID COUNT [PER_10MS] | PID --kill-after SECONDS | --check FILE M\n");
		return 2;
	}
	pid = atoi(argv[1]);
	/* The recorder creates its rings at load: give it time to get there. */
	for (int i = 0; i < 300 && !(id = find_rings(pid)); i++)
		usleep(10000);
	if (!id || (ring_fd = bpf_map_get_fd_by_id(id)) < 0) {
		fprintf(stderr, "inject_records: no BPF ring buffers in process %d\n", pid);
		return 1;
	}
	struct bpf_map_info info;
	__u32 info_len = sizeof(info);
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(ring_fd, &info, &info_len)) {
		fprintf(stderr, "inject_records: cannot read the rings map of process %d\n", pid);
		return 1;
	}
	/* The recorder puts its rings into the map just after loading: wait until every one is there. */
	for (int i = 0; i < 300 && !all_rings_installed(ring_fd, info.max_entries); i++)
		usleep(10000);
	skel = hypertrace_bpf__open();
	if (!skel)
		return 1;
	bpf_object__for_each_program(prog, skel->obj)
		bpf_program__set_autoload(prog, prog == skel->progs.synthetic_fill);
	/* The recorder's CPU-to-ring mapping: as many rings as its array holds (a power of two). */
	skel->rodata->ring_mask = info.max_entries - 1;
	if (bpf_map__reuse_fd(skel->maps.rings, ring_fd) || hypertrace_bpf__load(skel)) {
		fprintf(stderr, "inject_records: cannot load synthetic_fill with the recorder's ring buffers\n");
		hypertrace_bpf__destroy(skel);
		return 1;
	}
	int prog_fd = bpf_program__fd(skel->progs.synthetic_fill);
	if (!kill_after) {
		unsigned int per = argc == 4 ? (unsigned int)strtoul(argv[3], NULL, 0) : 1000;
		while (per && injected < count) {
			unsigned int n = count - injected < per ? (unsigned int)(count - injected) : per;
			if (fill(prog_fd, injected, n))
				break;
			injected += n;
			if (argc == 4)
				usleep(10000);
		}
		printf("injected %llu dropped %llu\n", injected, dropped(skel));
	} else {
		/* (time, records so far) at each batch, to know which were a second old at the kill. */
		size_t cap = (size_t)(kill_after * 100) + 16, n = 0;
		unsigned long long *at = calloc(cap, sizeof(*at)), *upto = calloc(cap, sizeof(*upto));
		unsigned long long start = ht_monotonic_ns(), end = start + (unsigned long long)(kill_after * 1e9);
		while (at && upto && ht_monotonic_ns() < end && n < cap) {
			if (fill(prog_fd, injected, 100))
				break;
			injected += 100;
			at[n] = ht_monotonic_ns();
			upto[n++] = injected;
			usleep(10000);
		}
		unsigned long long killed = ht_monotonic_ns();
		kill(pid, SIGKILL);
		for (size_t i = 0; i < n; i++)
			if (at[i] + 1000000000ull <= killed)
				old = upto[i];
		free(at);
		free(upto);
		printf("injected %llu dropped %llu older_than_1s %llu\n", injected, dropped(skel), old);
	}
	hypertrace_bpf__destroy(skel);
	return 0;
}
