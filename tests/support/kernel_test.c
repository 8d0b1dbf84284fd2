// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "kernel_test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void ht_kernel_test_begin(const char *suite, struct ht_synth_layout *layout, char *path)
{
	char err[512];

	if (geteuid() != 0) {
		printf("SKIP: %s: the in-kernel tests load BPF programs and need root\n", suite);
		exit(0);
	}
	if (layout && ht_synth_layout_load(layout, err, sizeof(err))) {
		printf("FAIL: %s_setup: %s\n", suite, err);
		exit(1);
	}
	if (path) {
		int fd = mkstemp(path);

		if (fd < 0) {
			printf("FAIL: %s_setup: mkstemp %s: %s\n", suite, path, strerror(errno));
			exit(1);
		}
		close(fd);
	}
}

struct ht_tracer *ht_kernel_test_tracer(const struct ht_tracer_opts *o)
{
	struct ht_tracer *t = NULL;
	char err[512];

	if (ht_tracer_load(&t, o, err, sizeof(err))) {
		printf("    load failed: %s\n", err);
		return NULL;
	}
	return t;
}
