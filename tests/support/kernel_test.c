// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "kernel_test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "record/drain.h"
#include "test.h"

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

static struct ht_record *drained_slots(void *ctx, unsigned int *room)
{
	struct ht_kernel_test_drained *d = ctx;

	*room = HT_KERNEL_TEST_MAX_DRAINED - d->n;
	return d->recs + d->n;
}

static int drained_commit(void *ctx, unsigned int n)
{
	((struct ht_kernel_test_drained *)ctx)->n += n;
	return 0;
}

bool ht_kernel_test_drain(const struct ht_tracer *t, struct ht_kernel_test_drained *out)
{
	struct ht_record_sink sink = { .slots = drained_slots, .commit = drained_commit, .ctx = out };
	struct ht_drain *d = NULL;
	unsigned int nrings;
	const int *fds = ht_tracer_ring_fds(t, &nrings);

	out->n = 0;
	if (!ASSERT_OK(ht_drain_new(fds, nrings, &sink, &d), "drain"))
		return false;
	int ret = ht_drain_all(d);
	ht_drain_free(d);
	return ASSERT_GE(ret, 0, "drained");
}
