// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "kernel_test.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "hypertrace/synthetic_fill.h"
#include "record/drain.h"
#include "test.h"
#include "tracefile/trace_reader.h"
#include "tracefile/trace_writer.h"

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

struct ht_filters ht_kernel_test_filters(bool tgid_on, __u32 tgid, bool vcpu_on, __u32 vcpu)
{
	struct ht_filters f;

	ht_filters_default(&f);
	f.tgid_on = tgid_on;
	f.tgid = tgid;
	f.vcpu_on = vcpu_on;
	f.vcpu = vcpu;
	return f;
}

unsigned int ht_kernel_test_records_played(struct ht_tracer *t, int (*play)(const struct ht_tracer *t))
{
	struct ht_kernel_test_drained *d = calloc(1, sizeof(*d));
	unsigned int n = ~0u;

	if (ASSERT_OK_PTR(t, "tracer") && ASSERT_OK_PTR(d, "memory") && ASSERT_OK(play(t), "events") &&
	    ht_kernel_test_drain(t, d))
		n = d->n;
	free(d);
	ht_tracer_destroy(t);
	return n;
}

bool ht_kernel_test_fill_ring(const struct ht_tracer *t)
{
	/* 4096 records of 80 bytes, more than two pages hold. */
	struct ht_synthetic_fill_args a = { .seq = 1, .count = 4096 };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &a, .ctx_size_in = sizeof(a));

	return ASSERT_OK(bpf_prog_test_run_opts(ht_tracer_synthetic_fd(t, HT_SYNTH_FILL), &opts), "fill");
}

void ht_kernel_test_pin_here(void)
{
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	sched_setaffinity(0, sizeof(one), &one);
}

struct ht_reader *ht_kernel_test_file_of(const struct ht_record *recs, unsigned int n, bool compressed,
					 __u32 filter_flags)
{
	char path[] = "/tmp/ht-kernel-test-XXXXXX", err[256];
	struct ht_file_header h;
	struct ht_trailer tr = { 0 };
	struct ht_writer *w = NULL;
	struct ht_reader *r = NULL;
	int fd = mkstemp(path);

	if (!ASSERT_GE(fd, 0, "temp file"))
		return NULL;
	close(fd);
	ht_header_init(&h);
	h.filter_flags |= filter_flags;
	if (!ASSERT_OK(ht_writer_open(path, true, &h, &w, err, sizeof(err)), err) ||
	    (compressed && !ASSERT_OK(ht_writer_set_encoding(w, HT_ENCODING_DELTA_ZLIB), "encoding"))) {
		ht_writer_abandon(w);
		unlink(path);
		return NULL;
	}
	for (unsigned int i = 0; i < n; i++)
		ht_writer_add(w, &recs[i]);
	if (ASSERT_OK(ht_writer_close(w, &tr), "close") && ASSERT_EQ(tr.records, n, "the trailer counts every kind"))
		ASSERT_OK(ht_reader_open(path, &r, err, sizeof(err)), err);
	unlink(path);
	return r;
}
