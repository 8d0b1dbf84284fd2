// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * record --vcpu-sched through the real BPF handlers: synthetic switches of
 * made-up vCPU threads at times the test gives, drained from the rings as
 * record drains them, and through the trace file's writer and reader. Each
 * switch of a vCPU thread is one record; switches between other threads
 * are none. Needs root.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "bpf/vcpu_state.h"
#include "record/drain.h"
#include "record/recording.h"
#include "record/tracer.h"
#include "kernel_test.h"
#include "synth.h"
#include "test.h"
#include "tracefile/trace_reader.h"
#include "tracefile/trace_writer.h"

#define T 3000001u
#define G 3000000u
#define OTHER 77u
#define OTHER2 78u

static struct ht_tracer *filtered_sched_tracer(bool vcpu_sched, unsigned long ring_bytes, const struct ht_filters *f)
{
	/* Only the test's events move states: no real switch (see main). */
	struct ht_tracer_opts o = { .isa = HT_ISA_SVM, .synthetic = true, .synthetic_switches_only = true,
				    .exits = true, .vcpu_sched = vcpu_sched, .ringbuf_bytes = ring_bytes };

	if (f)
		o.filters = *f;
	else
		ht_filters_default(&o.filters);
	return ht_kernel_test_tracer(&o);
}

static struct ht_tracer *sched_tracer(bool vcpu_sched, unsigned long ring_bytes)
{
	return filtered_sched_tracer(vcpu_sched, ring_bytes, NULL);
}

/* A vCPU thread T of VM G, vcpu 5: blocked, back, preempted, back; a switch between two other threads. */
static int play_switches(const struct ht_tracer *t)
{
	int ret = ht_synth_register(t, T, G, 5, true, 1);

	ret = ret ?: ht_synth_switch(t, T, G, OTHER, OTHER, false, 100); /* blocks */
	ret = ret ?: ht_synth_switch(t, OTHER, OTHER, T, G, false, 400);
	ret = ret ?: ht_synth_switch(t, T, G, OTHER, OTHER, true, 500); /* preempted */
	ret = ret ?: ht_synth_switch(t, OTHER, OTHER, OTHER2, OTHER2, true, 700); /* no vCPU thread */
	ret = ret ?: ht_synth_switch(t, OTHER2, OTHER2, T, G, false, 900);
	return ret;
}

static bool switch_is(const struct ht_record *r, __u32 kind, __u64 time, __u64 state, __u32 involuntary,
		      __u32 other_tid, const char *other_comm)
{
	struct ht_vcpu_switch sw;
	char comm[17] = "";

	memcpy(&sw, r, sizeof(sw));
	memcpy(comm, sw.other_comm, 16);
	return ASSERT_EQ(sw.flags, HT_REC_F_VCPU_SWITCH, "flags") && ASSERT_EQ(sw.kind, kind, "kind") &&
	       ASSERT_EQ(sw.time_ns, time, "time") && ASSERT_EQ(sw.prev_state, state, "prev_state") &&
	       ASSERT_EQ(sw.involuntary, involuntary, "involuntary") && ASSERT_EQ(sw.other_tid, other_tid, "other_tid") &&
	       ASSERT_EQ(sw.other_pid, other_tid, "other_pid") && ASSERT_STREQ(comm, other_comm, "other_comm") &&
	       ASSERT_EQ(sw.host_pid, G, "host_pid") && ASSERT_EQ(sw.host_tid, T, "host_tid") &&
	       ASSERT_EQ(sw.vcpu_id, 5, "vcpu_id") && ASSERT_EQ(sw.cpu, sched_getcpu(), "cpu") &&
	       ASSERT_EQ(sw.reserved[0] | sw.reserved[1] | sw.reserved2 | sw.isa, 0, "reserved");
}

static void each_switch_of_a_vcpu_thread_is_one_record(void)
{
	struct ht_tracer *t = sched_tracer(true, 1 << 20);
	struct ht_kernel_test_drained *d = calloc(1, sizeof(*d));

	if (ASSERT_OK_PTR(t, "tracer") && ASSERT_OK_PTR(d, "memory") && ASSERT_OK(play_switches(t), "events") &&
	    ht_kernel_test_drain(t, d) && ASSERT_EQ(d->n, 4, "records")) {
		switch_is(&d->recs[0], HT_SWITCH_OUT, 100, 1, 0, OTHER, "t77");
		switch_is(&d->recs[1], HT_SWITCH_IN, 400, 0, 0, OTHER, "t77");
		switch_is(&d->recs[2], HT_SWITCH_OUT, 500, 0, 1, OTHER, "t77");
		switch_is(&d->recs[3], HT_SWITCH_IN, 900, 0, 0, OTHER2, "t78");
	}
	free(d);
	ht_tracer_destroy(t);
}

/*
 * The records and --exits' counters read one clock value per switch: the
 * preempted time the records give (switch-out to switch-in) is exactly the
 * thread's preempt_ns, the blocked time its voluntary_ns.
 */
static void ht_vcpu_wait_of(void *ctx, const struct ht_vcpu_wait_rec *rec, bool gone)
{
	(void)gone;
	if (rec->w.tid == T)
		*(struct ht_vcpu_wait *)ctx = rec->w;
}

static void switch_records_add_up_to_the_exit_statistics(void)
{
	struct ht_tracer *t = sched_tracer(true, 1 << 20);
	struct ht_kernel_test_drained *d = calloc(1, sizeof(*d));
	struct ht_vcpu_wait w = { 0 };
	__u64 preempted = 0, blocked = 0, out_at = 0;
	bool involuntary = false;

	if (!ASSERT_OK_PTR(t, "tracer") || !ASSERT_OK_PTR(d, "memory") || !ASSERT_OK(play_switches(t), "events") ||
	    !ht_kernel_test_drain(t, d) || !ASSERT_OK(ht_tracer_read_vcpu_waits(t, ht_vcpu_wait_of, &w), "waits"))
		goto out;
	for (unsigned int i = 0; i < d->n; i++) {
		struct ht_vcpu_switch sw;

		memcpy(&sw, &d->recs[i], sizeof(sw));
		if (sw.kind == HT_SWITCH_OUT) {
			out_at = sw.time_ns;
			involuntary = sw.involuntary;
		} else if (out_at) {
			*(involuntary ? &preempted : &blocked) += sw.time_ns - out_at;
			out_at = 0;
		}
	}
	ASSERT_EQ(preempted, w.preempt_ns, "preempted time");
	ASSERT_EQ(blocked, w.voluntary_ns, "blocked time");
	ASSERT_EQ(preempted, 400, "preempted 500..900");
	ASSERT_EQ(blocked, 300, "blocked 100..400");
out:
	free(d);
	ht_tracer_destroy(t);
}

static void without_vcpu_sched_no_switch_is_recorded(void)
{
	ASSERT_EQ(ht_kernel_test_records_played(sched_tracer(false, 1 << 20), play_switches), 0, "records");
}

/* -p and --vcpu select the switches as they select hypercalls: only the selected VM's and vCPU's. */
static unsigned int switches_recorded_with(bool tgid_on, __u32 tgid, bool vcpu_on, __u32 vcpu)
{
	struct ht_filters f = ht_kernel_test_filters(tgid_on, tgid, vcpu_on, vcpu);

	return ht_kernel_test_records_played(filtered_sched_tracer(true, 1 << 20, &f), play_switches);
}

static void pid_and_vcpu_filters_select_switches(void)
{
	ASSERT_EQ(switches_recorded_with(true, G, false, 0), 4, "-p of the thread's VM");
	ASSERT_EQ(switches_recorded_with(true, G + 1, false, 0), 0, "-p of another VM");
	ASSERT_EQ(switches_recorded_with(false, 0, true, 5), 4, "--vcpu of the thread");
	ASSERT_EQ(switches_recorded_with(false, 0, true, 4), 0, "--vcpu of another vCPU");
}

/* A ring filled by the synthetic producer: the next switch is lost, and counted. */
static void a_switch_that_finds_its_ring_full_is_counted(void)
{
	struct ht_tracer *t = sched_tracer(true, 4096 * 2);
	__u64 c[HT_CNT_MAX] = { 0 };

	if (!ASSERT_OK_PTR(t, "tracer"))
		return;
	if (ht_kernel_test_fill_ring(t) && ASSERT_OK(ht_synth_register(t, T, G, 5, true, 1), "register") &&
	    ASSERT_OK(ht_synth_switch(t, T, G, OTHER, OTHER, true, 100), "switch") &&
	    ASSERT_OK(ht_tracer_counters(t, c), "counters"))
		ASSERT_EQ(c[HT_CNT_SWITCH_DROPS], 1, "switches lost");
	ht_tracer_destroy(t);
}

struct visited {
	unsigned int switches;
	__u64 times[8];
	unsigned int before_record[8]; /* hypercall records read before each switch */
	unsigned int records;
};

static void visit_switch(void *ctx, const struct ht_vcpu_switch *sw)
{
	struct visited *v = ctx;

	if (v->switches < 8) {
		v->times[v->switches] = sw->time_ns;
		v->before_record[v->switches] = v->records;
	}
	v->switches++;
}

/* The drained switches with a hypercall that entered at 450 between them, as the drain merges them, into path. */
static bool write_mixed_file(const char *path, const struct ht_kernel_test_drained *d)
{
	struct ht_record hc = { .exit_ns = 430, .exit_to_hcall_ns = 10, .hcall_to_entry_ns = 10, .nr = 1000,
				.host_pid = G, .host_tid = T, .vcpu_id = 5, .isa = HT_ISA_SVM,
				.exit_reason = HT_SVM_EXIT_CODE_VMMCALL };
	struct ht_record all[5] = { d->recs[0], d->recs[1], hc, d->recs[2], d->recs[3] };
	struct ht_file_header h;
	struct ht_trailer tr = { 0 };
	struct ht_writer *w = NULL;
	char err[256];

	ht_header_init(&h);
	/* The compressed encoding: its columns of deltas carry switches as they carry records. */
	if (!ASSERT_OK(ht_writer_open(path, true, &h, &w, err, sizeof(err)), err) ||
	    !ASSERT_OK(ht_writer_set_encoding(w, HT_ENCODING_DELTA_ZLIB), "encoding")) {
		ht_writer_abandon(w);
		return false;
	}
	for (unsigned int i = 0; i < 5; i++)
		ht_writer_add(w, &all[i]);
	return ASSERT_OK(ht_writer_close(w, &tr), "close") && ASSERT_EQ(tr.records, 5, "the trailer counts both kinds");
}

/*
 * Through the trace file: the reader hands the hypercall to ht_reader_next
 * and the switches to its visitor, in file order, and the trailer's count
 * of both checks out.
 */
static void the_trace_file_keeps_switches_between_hypercalls(void)
{
	struct ht_tracer *t = sched_tracer(true, 1 << 20);
	struct ht_kernel_test_drained *d = calloc(1, sizeof(*d));
	char path[] = "/tmp/ht-vcpu-sched-XXXXXX";
	struct ht_reader *r = NULL;
	struct visited v = { 0 };
	struct ht_record rec;
	char err[256];
	int fd = mkstemp(path);

	if (fd >= 0)
		close(fd);
	if (!ASSERT_GE(fd, 0, "temp file") || !ASSERT_OK_PTR(t, "tracer") || !ASSERT_OK_PTR(d, "memory") ||
	    !ASSERT_OK(play_switches(t), "events") || !ht_kernel_test_drain(t, d) || !ASSERT_EQ(d->n, 4, "drained") ||
	    !write_mixed_file(path, d) || !ASSERT_OK(ht_reader_open(path, &r, err, sizeof(err)), err)) {
		free(d);
		ht_tracer_destroy(t);
		unlink(path);
		return;
	}
	ASSERT_MSG(ht_reader_header(r)->version >= 4, "switches came with format version 4 or later: got %u", ht_reader_header(r)->version);
	ht_reader_set_switch_visitor(r, visit_switch, &v);
	while (ht_reader_next(r, &rec) == 1) {
		ASSERT_EQ(rec.nr, 1000, "only the hypercall is a record");
		v.records++;
	}
	const struct ht_read_status *st = ht_reader_status(r);
	ASSERT_TRUE(st->has_trailer && !st->damaged, "read to its clean end");
	ASSERT_EQ(st->records, 1, "hypercall records");
	ASSERT_EQ(st->vcpu_switches, 4, "switches");
	if (ASSERT_EQ(v.switches, 4, "visited")) {
		ASSERT_EQ(v.times[0], 100, "first");
		ASSERT_EQ(v.times[3], 900, "last");
		ASSERT_EQ(v.before_record[1], 0, "the switch-in at 400 before the hypercall");
		ASSERT_EQ(v.before_record[2], 1, "the preemption at 500 after it");
	}
	ht_reader_close(r);
	unlink(path);
	free(d);
	ht_tracer_destroy(t);
}

int main(void)
{
	ht_kernel_test_begin("vcpu_sched", NULL, NULL);
	ht_kernel_test_pin_here(); /* and the tracers see only the tests' own switches */
	RUN(each_switch_of_a_vcpu_thread_is_one_record);
	RUN(switch_records_add_up_to_the_exit_statistics);
	RUN(without_vcpu_sched_no_switch_is_recorded);
	RUN(pid_and_vcpu_filters_select_switches);
	RUN(a_switch_that_finds_its_ring_full_is_counted);
	RUN(the_trace_file_keeps_switches_between_hypercalls);
	return ht_test_exit_status();
}
