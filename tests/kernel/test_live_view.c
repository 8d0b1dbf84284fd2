// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Live histograms fed by the real BPF handlers: synthetic hypercalls go
 * through the ring buffer and the recording's observer into the live view
 * (record mode), or into the BPF per-CPU histograms (aggregate-only mode);
 * the frames drawn must count exactly the hypercalls issued. Needs root.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "hist/live_view.h"
#include "record/recording.h"
#include "synth.h"
#include "test.h"
#include "record/tracer.h"

static struct ht_synth_layout layout;
static char path[] = "/tmp/ht-live-XXXXXX";
static struct ht_tracer *tracer;
static struct ht_live *live;
static char *frame;
static size_t frame_len;
static FILE *frame_out;

static void cleanup(void)
{
	ht_live_free(live);
	live = NULL;
	ht_tracer_destroy(tracer);
	tracer = NULL;
	if (frame_out)
		fclose(frame_out);
	frame_out = NULL;
	free(frame);
	frame = NULL;
}

static int load(bool aggregate, enum ht_agg_group_by by)
{
	struct ht_tracer_opts o = { .isa = HT_ISA_SVM, .synthetic = true, .ringbuf_bytes = 1 << 20,
				    .aggregate_only = aggregate, .group_by = by };
	char err[512];

	ht_filters_default(&o.filters);
	if (ht_tracer_load(&tracer, &o, err, sizeof(err))) {
		printf("    %s\n", err);
		return -1;
	}
	struct ht_live_opts lo = { .interval_ns = 1000, .terminal = 0,
				   .group_by = by == HT_AGG_BY_VCPU ? HT_LAT_BY_VCPU : HT_LAT_BY_NONE };
	frame_out = open_memstream(&frame, &frame_len);
	live = ht_live_new(&lo, frame_out, 0);
	return live && frame_out ? 0 : -1;
}

static int hypercalls(unsigned int n, __u32 vcpu)
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
	struct ht_recording rec;
	struct ht_writer *w;
	struct ht_file_header h;
	struct ht_trailer t;
	char err[256];

	CHECK(load(false, HT_AGG_BY_NONE) == 0, "setup");
	ht_header_init(&h);
	CHECK(ht_writer_open(path, true, &h, &w, err, sizeof(err)) == 0, "%s", err);
	CHECK(ht_recording_init(&rec, tracer, w) == 0, "recording");
	rec.observer = ht_live_observe;
	rec.observer_ctx = live;
	CHECK(hypercalls(37, 0) == 0, "events");
	/* The drain writes a record once every CPU's earlier records are surely in their rings. */
	usleep(HT_DRAIN_ORDER_SLACK_NS / 1000 + 1000);
	CHECK(ht_recording_pump(&rec, 0) == 37, "drained a different number of records");
	CHECK(ht_live_tick(live, 1000000, 0) == 1, "no frame drawn");
	CHECK(hypercalls(5, 0) == 0, "events");
	CHECK(ht_recording_finish(&rec, &t) == 0, "finish");
	CHECK(ht_live_tick(live, 2000000, 0) == 2, "no second frame");
	fflush(frame_out);
	CHECK(strstr(frame, "interval 1: 37 hypercalls") != NULL, "frame:\n%s", frame);
	CHECK(strstr(frame, "interval 2: 5 hypercalls") != NULL, "frame:\n%s", frame);
	CHECK(strstr(frame, "exit->entry:") && strstr(frame, ": count    distribution"), "no histogram:\n%s", frame);
	CHECK_EQ_U64(ht_live_total(live), 42);
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
	struct agg_seen seen = { { 0 } };
	__u64 c[HT_CNT_MAX];

	CHECK(load(true, HT_AGG_BY_VCPU) == 0, "setup");
	CHECK(hypercalls(3, 0) == 0 && hypercalls(5, 1) == 0, "events");
	CHECK(ht_tracer_read_aggregates(tracer, count_groups, &seen) == 0, "read");
	CHECK_EQ_U64(seen.count[0], 3);
	CHECK_EQ_U64(seen.count[1], 5);
	CHECK(ht_tracer_counters(tracer, c) == 0, "counters");
	CHECK_EQ_U64(c[HT_CNT_RINGBUF_DROPS], 0);

	/* The view takes each interval's share of the cumulative BPF counts. */
	CHECK(ht_tracer_read_aggregates(tracer, ht_live_add_aggregate, live) == 0, "read");
	CHECK(ht_live_tick(live, 1000000, 0) == 1, "no frame");
	CHECK(hypercalls(2, 1) == 0, "events");
	CHECK(ht_tracer_read_aggregates(tracer, ht_live_add_aggregate, live) == 0, "read");
	CHECK(ht_live_tick(live, 2000000, 0) == 2, "no frame");
	fflush(frame_out);
	CHECK(strstr(frame, "interval 1: 8 hypercalls") != NULL, "frame:\n%s", frame);
	CHECK(strstr(frame, "vcpu 0 (pid ") && strstr(frame, "): 3 hypercalls"), "frame:\n%s", frame);
	CHECK(strstr(frame, "): 5 hypercalls") != NULL, "frame:\n%s", frame);
	CHECK(strstr(frame, "interval 2: 2 hypercalls") != NULL, "frame:\n%s", frame);
	/* From buckets, percentiles are bounds and say so. */
	CHECK(strstr(frame, "p99 <=") != NULL, "bucket bounds not marked:\n%s", frame);
	CHECK_EQ_U64(ht_live_total(live), 10);

	/* Nothing went through the ring buffer. */
	struct ht_recording rec;
	struct ht_writer *w;
	struct ht_file_header h;
	char err[256];
	ht_header_init(&h);
	CHECK(ht_writer_open(path, true, &h, &w, err, sizeof(err)) == 0, "%s", err);
	CHECK(ht_recording_init(&rec, tracer, w) == 0, "recording");
	CHECK(ht_recording_pump(&rec, 0) == 0, "records were emitted in aggregate-only mode");
	ht_recording_abandon(&rec);
	unlink(path);
}

/* More groups than the BPF map holds: the rest are counted as such, not as ring-buffer drops. */
static void aggregate_groups_beyond_the_map_are_counted_on_their_own(void)
{
	__u64 c[HT_CNT_MAX];

	CHECK(load(true, HT_AGG_BY_VCPU) == 0, "setup");
	for (__u32 vcpu = 0; vcpu < HT_AGG_MAX_GROUPS + 3; vcpu++)
		CHECK(hypercalls(1, vcpu) == 0, "events");
	CHECK(ht_tracer_counters(tracer, c) == 0, "counters");
	CHECK_EQ_U64(c[HT_CNT_AGG_GROUPS_FULL], 3);
	CHECK_EQ_U64(c[HT_CNT_RINGBUF_DROPS], 0);
}

int main(void)
{
	char err[512];

	if (geteuid() != 0) {
		printf("SKIP: live_view: the in-kernel tests load BPF programs and need root\n");
		return 0;
	}
	if (ht_synth_layout_load(&layout, err, sizeof(err))) {
		printf("FAIL: live_view_setup: %s\n", err);
		return 1;
	}
	int fd = mkstemp(path);
	if (fd < 0) {
		printf("FAIL: live_view_setup: %s\n", strerror(errno));
		return 1;
	}
	close(fd);
	ht_test_cleanup = cleanup;
	RUN(interval_frame_counts_every_record_drained);
	RUN(aggregate_only_counts_in_bpf_per_vcpu_and_emits_no_records);
	RUN(aggregate_groups_beyond_the_map_are_counted_on_their_own);
	unlink(path);
	return ht_test_exit_status();
}
