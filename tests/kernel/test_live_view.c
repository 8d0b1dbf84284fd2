// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Live histograms fed by the real BPF handlers: synthetic hypercalls go
 * through the ring buffer and the recording's observer into the live view
 * (record mode), or into the BPF per-CPU histograms (aggregate-only mode);
 * the frames drawn must count exactly the hypercalls issued. Needs root.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include "common/util.h"
#include "hist/live_view.h"
#include "record/recording.h"
#include "kernel_test.h"
#include "synth.h"
#include "test.h"
#include "record/tracer.h"

static struct ht_synth_layout layout;
static char path[] = "/tmp/ht-live-XXXXXX";

/* What a test holds: the tracer, the live view and the frames it draws. */
struct fixture {
	struct ht_tracer *tracer;
	struct ht_live *live;
	char *frame;
	size_t frame_len;
	FILE *frame_out;
};

/* Frees what f holds; a fixture all zero holds nothing. */
static void fixture_free(struct fixture *f)
{
	ht_live_free(f->live);
	ht_tracer_destroy(f->tracer);
	if (f->frame_out)
		fclose(f->frame_out);
	free(f->frame);
}

static int load(struct fixture *f, bool aggregate, enum ht_agg_group_by by)
{
	struct ht_tracer_opts o = { .isa = HT_ISA_SVM, .synthetic = true, .ringbuf_bytes = 1 << 20,
				    .aggregate_only = aggregate, .group_by = by };
	ht_filters_default(&o.filters);
	if (!(f->tracer = ht_kernel_test_tracer(&o)))
		return -1;
	struct ht_live_opts lo = { .interval_ns = 1000, .terminal = 0,
				   .group_by = by == HT_AGG_BY_VCPU ? HT_LAT_BY_VCPU : HT_LAT_BY_NONE };
	f->frame_out = open_memstream(&f->frame, &f->frame_len);
	f->live = ht_live_new(&lo, f->frame_out, 0);
	return f->live && f->frame_out ? 0 : -1;
}

static int hypercalls(struct ht_tracer *tracer, unsigned int n, __u32 vcpu)
{
	for (unsigned int i = 0; i < n; i++) {
		if (ht_synth_exit(&layout, tracer, HT_ISA_SVM, HT_SVM_EXIT_CODE_VMMCALL, 0x1000, vcpu) ||
		    ht_synth_hypercall(&layout, tracer, 1000, vcpu, i, 0, 0) ||
		    ht_synth_entry(&layout, tracer, vcpu, 0x1003))
			return -1;
	}
	return 0;
}

static void interval_frame_counts_every_record_drained(void)
{
	struct fixture fx = { 0 };
	struct ht_recording rec = { 0 };
	struct ht_writer *w = NULL;
	struct ht_file_header h;
	struct ht_trailer t;
	char err[256];
	int ret;

	if (!ASSERT_MSG(load(&fx, false, HT_AGG_BY_NONE) == 0, "setup"))
		goto cleanup;
	ht_header_init(&h);
	if (!ASSERT_MSG(ht_writer_open(path, true, &h, &w, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	ret = ht_recording_init(&rec, fx.tracer, w); /* it owns the writer from here, even if it fails */
	if (!ASSERT_MSG(ret == 0, "recording"))
		goto cleanup;
	rec.observer = ht_live_observe;
	rec.observer_ctx = fx.live;
	if (!ASSERT_MSG(hypercalls(fx.tracer, 37, 0) == 0, "events"))
		goto cleanup;
	/* The drain writes a record once every CPU's earlier records are surely in their rings. */
	usleep(HT_DRAIN_ORDER_SLACK_NS / 1000 + 1000);
	if (!ASSERT_MSG(ht_recording_pump(&rec, 0) == 37, "drained a different number of records"))
		goto cleanup;
	if (!ASSERT_MSG(ht_live_tick(fx.live, 1000000, 0) == 1, "no frame drawn"))
		goto cleanup;
	if (!ASSERT_MSG(hypercalls(fx.tracer, 5, 0) == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(ht_recording_finish(&rec, &t) == 0, "finish"))
		goto cleanup;
	if (!ASSERT_MSG(ht_live_tick(fx.live, 2000000, 0) == 2, "no second frame"))
		goto cleanup;
	fflush(fx.frame_out);
	if (!ASSERT_MSG(strstr(fx.frame, "interval 1: 37 hypercalls") != NULL, "frame:\n%s", fx.frame))
		goto cleanup;
	if (!ASSERT_MSG(strstr(fx.frame, "interval 2: 5 hypercalls") != NULL, "frame:\n%s", fx.frame))
		goto cleanup;
	if (!ASSERT_MSG(strstr(fx.frame, "exit->entry:") && strstr(fx.frame, ": count    distribution"), "no histogram:\n%s", fx.frame))
		goto cleanup;
	ASSERT_EQ(ht_live_total(fx.live), 42, "value");
cleanup:
	ht_recording_abandon(&rec); /* nothing left after a finish */
	fixture_free(&fx);
	unlink(path);
}

struct agg_seen {
	__u64 count[4];
};

static void count_groups(void *ctx, __u64 key, const struct ht_agg_hist *h)
{
	struct agg_seen *seen = ctx;
	__u32 vcpu = (__u32)(key & 0xffff);

	for (int i = 0; i < HT_AGG_SLOTS; i++)
		if (vcpu < 4)
			seen->count[vcpu] += h->slots[HT_AGG_TOTAL][i];
}

static void aggregate_only_counts_in_bpf_per_vcpu_and_emits_no_records(void)
{
	struct fixture fx = { 0 };
	struct agg_seen seen = { { 0 } };
	__u64 c[HT_CNT_MAX];
	struct ht_recording rec = { 0 };
	struct ht_writer *w = NULL;
	struct ht_file_header h;
	char err[256];
	int ret;

	if (!ASSERT_MSG(load(&fx, true, HT_AGG_BY_VCPU) == 0, "setup"))
		goto cleanup;
	if (!ASSERT_MSG(hypercalls(fx.tracer, 3, 0) == 0 && hypercalls(fx.tracer, 5, 1) == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(ht_tracer_read_aggregates(fx.tracer, count_groups, &seen) == 0, "read"))
		goto cleanup;
	if (!ASSERT_EQ(seen.count[0], 3, "value"))
		goto cleanup;
	if (!ASSERT_EQ(seen.count[1], 5, "value"))
		goto cleanup;
	if (!ASSERT_MSG(ht_tracer_counters(fx.tracer, c) == 0, "counters"))
		goto cleanup;
	if (!ASSERT_EQ(c[HT_CNT_RINGBUF_DROPS], 0, "value"))
		goto cleanup;

	/* The view takes each interval's share of the cumulative BPF counts. */
	if (!ASSERT_MSG(ht_tracer_read_aggregates(fx.tracer, ht_live_add_aggregate, fx.live) == 0, "read"))
		goto cleanup;
	if (!ASSERT_MSG(ht_live_tick(fx.live, 1000000, 0) == 1, "no frame"))
		goto cleanup;
	if (!ASSERT_MSG(hypercalls(fx.tracer, 2, 1) == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(ht_tracer_read_aggregates(fx.tracer, ht_live_add_aggregate, fx.live) == 0, "read"))
		goto cleanup;
	if (!ASSERT_MSG(ht_live_tick(fx.live, 2000000, 0) == 2, "no frame"))
		goto cleanup;
	fflush(fx.frame_out);
	if (!ASSERT_MSG(strstr(fx.frame, "interval 1: 8 hypercalls") != NULL, "frame:\n%s", fx.frame))
		goto cleanup;
	if (!ASSERT_MSG(strstr(fx.frame, "vcpu 0 (pid ") && strstr(fx.frame, "): 3 hypercalls"), "frame:\n%s", fx.frame))
		goto cleanup;
	if (!ASSERT_MSG(strstr(fx.frame, "): 5 hypercalls") != NULL, "frame:\n%s", fx.frame))
		goto cleanup;
	if (!ASSERT_MSG(strstr(fx.frame, "interval 2: 2 hypercalls") != NULL, "frame:\n%s", fx.frame))
		goto cleanup;
	/* From buckets, percentiles are bounds and say so. */
	if (!ASSERT_MSG(strstr(fx.frame, "p99 <=") != NULL, "bucket bounds not marked:\n%s", fx.frame))
		goto cleanup;
	if (!ASSERT_EQ(ht_live_total(fx.live), 10, "value"))
		goto cleanup;

	/* Nothing went through the ring buffer. */
	ht_header_init(&h);
	if (!ASSERT_MSG(ht_writer_open(path, true, &h, &w, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	ret = ht_recording_init(&rec, fx.tracer, w); /* it owns the writer from here, even if it fails */
	if (!ASSERT_MSG(ret == 0, "recording"))
		goto cleanup;
	ASSERT_MSG(ht_recording_pump(&rec, 0) == 0, "records were emitted in aggregate-only mode");
cleanup:
	ht_recording_abandon(&rec);
	fixture_free(&fx);
	unlink(path);
}

/* More groups than the BPF map holds: the rest are counted as such, not as ring-buffer drops. */
static void aggregate_groups_beyond_the_map_are_counted_on_their_own(void)
{
	struct fixture fx = { 0 };
	__u64 c[HT_CNT_MAX];

	if (!ASSERT_MSG(load(&fx, true, HT_AGG_BY_VCPU) == 0, "setup"))
		goto cleanup;
	for (__u32 vcpu = 0; vcpu < HT_AGG_MAX_GROUPS + 3; vcpu++)
		if (!ASSERT_MSG(hypercalls(fx.tracer, 1, vcpu) == 0, "events"))
			goto cleanup;
	if (!ASSERT_MSG(ht_tracer_counters(fx.tracer, c) == 0, "counters"))
		goto cleanup;
	if (!ASSERT_EQ(c[HT_CNT_AGG_GROUPS_FULL], 3, "value"))
		goto cleanup;
	ASSERT_EQ(c[HT_CNT_RINGBUF_DROPS], 0, "value");
cleanup:
	fixture_free(&fx);
}

/* From now on, in this process, the bpf() command cmd fails with EPERM; 0 or -1. */
static int fail_bpf_command(__u32 cmd)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_bpf, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, cmd, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = ARRAY_SIZE(filter), .filter = filter };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return (int)syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

static void ignore_group(void *ctx, __u64 key, const struct ht_agg_hist *h)
{
	(void)ctx;
	(void)key;
	(void)h;
}

/*
 * A map read that fails is the caller's error (-errno), not the end of the
 * groups: in a child whose bpf() refuses first the walk of the keys, then the
 * lookups.
 */
static void a_failed_aggregate_read_returns_its_errno(void)
{
	static const __u32 refused[] = { BPF_MAP_GET_NEXT_KEY, BPF_MAP_LOOKUP_ELEM };
	struct fixture fx = { 0 };

	if (!ASSERT_MSG(load(&fx, true, HT_AGG_BY_VCPU) == 0, "setup"))
		goto cleanup;
	if (!ASSERT_MSG(hypercalls(fx.tracer, 3, 0) == 0, "events"))
		goto cleanup;
	for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
		int status = 0;
		pid_t child = fork();

		if (!ASSERT_GE(child, 0, "fork"))
			goto cleanup;
		if (child == 0) {
			if (fail_bpf_command(refused[i]))
				_exit(3);
			_exit(ht_tracer_read_aggregates(fx.tracer, ignore_group, NULL) == -EPERM ? 0 : 1);
		}
		if (!ASSERT_EQ(waitpid(child, &status, 0), child, "waitpid"))
			goto cleanup;
		if (!ASSERT_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
				"bpf command %u refused: status %#x (exit 1: not -EPERM, 3: no seccomp filter)",
				refused[i], status))
			goto cleanup;
	}
	ASSERT_OK(ht_tracer_read_aggregates(fx.tracer, ignore_group, NULL), "read without a refusal");
cleanup:
	fixture_free(&fx);
}

int main(void)
{
	ht_kernel_test_begin("live_view", &layout, path);
	/* No preemption in the middle of a synthetic event (see ht_synth_unpreempted). */
	if (ht_synth_unpreempted())
		printf("    note: no real-time priority (%s): a preemption may cut a synthetic event\n", strerror(errno));
	RUN(interval_frame_counts_every_record_drained);
	RUN(aggregate_only_counts_in_bpf_per_vcpu_and_emits_no_records);
	RUN(aggregate_groups_beyond_the_map_are_counted_on_their_own);
	RUN(a_failed_aggregate_read_returns_its_errno);
	unlink(path);
	return ht_test_exit_status();
}
