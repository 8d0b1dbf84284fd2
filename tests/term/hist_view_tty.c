// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Driver for test_hist_view_tty.sh, not a test by itself: draws three
 * intervals of per-vCPU latency histograms in terminal mode into the
 * terminal it runs in, the way `record` does, so the script can check the
 * screen a real terminal (tmux) shows.
 *
 * Usage: hist_view_tty DIR
 * After frame k it writes "k" to DIR/status and waits for DIR/next (which it
 * removes) before going on; that lets the script look at every frame. The
 * first frame has 8 busy vCPUs and is taller than any terminal used, the last
 * has one: stale lines of the first would show if the redraw did not clear.
 */
#include "hist/hist_view.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

static int write_status(const char *dir, int k)
{
	char tmp[4096], path[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s/status.tmp", dir);
	snprintf(path, sizeof(path), "%s/status", dir);
	f = fopen(tmp, "w");
	if (!f)
		return -1;
	fprintf(f, "%d\n", k);
	if (fclose(f) != 0)
		return -1;
	return rename(tmp, path); /* the script never reads a half-written status */
}

/* Waits up to a minute for the script's go-ahead. */
static int wait_next(const char *dir)
{
	struct timespec nap = { 0, 20 * 1000 * 1000 };
	char path[4096];

	snprintf(path, sizeof(path), "%s/next", dir);
	for (int i = 0; i < 3000; i++) {
		if (unlink(path) == 0)
			return 0;
		nanosleep(&nap, NULL);
	}
	return -1;
}

int main(int argc, char **argv)
{
	static const unsigned int busy_vcpus[3] = { 8, 3, 1 };
	struct ht_hv_opts opts = { .mode = HT_HV_TERMINAL, .series = HT_HV_SERIES_ALL };
	struct winsize ws;
	struct ht_latset *set;
	int status = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	if (!isatty(STDOUT_FILENO)) {
		fprintf(stderr, "%s: stdout is not a terminal\n", argv[0]);
		return 2;
	}
	/* As `record` will: the terminal's size, 80 columns when it has none. */
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col) {
		opts.width = ws.ws_col;
		opts.height = ws.ws_row;
	}
	set = ht_latset_new(HT_LAT_BY_VCPU, 0);
	if (!set)
		return 1;
	for (unsigned int k = 1; k <= 3 && !status; k++) {
		struct ht_hv_frame frame = { .interval = k, .elapsed_ns = 1000000000,
					     .drops = k - 1 };

		for (unsigned int i = 0; i < 2000; i++) {
			struct ht_record r = { 0 };

			r.host_pid = 4242;
			r.vcpu_id = (uint16_t)(i % busy_vcpus[k - 1]);
			r.exit_to_hcall_ns = 200 + (i * 37 % 800) * k;
			r.hcall_to_entry_ns = 500 + i * i % 20000;
			ht_latset_add_record(set, &r);
		}
		if (ht_hv_render(stdout, set, &opts, &frame) < 0 || write_status(argv[1], (int)k) < 0 ||
		    wait_next(argv[1]) < 0)
			status = 1;
		ht_latset_next_interval(set);
	}
	ht_latset_free(set);
	return status;
}
