// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * record --wakeups through the real BPF handlers: synthetic halts, wake-ups,
 * injections and entries of this thread as a vCPU thread, at times the test
 * gives, drained from the rings as record drains them, and through the
 * trace file's writer and reader. Each wake-up from a halt that slept is
 * one record, equal to what the halts' histograms counted; a reblocked
 * wake-up and a wake-up from a block that is no halt are none. Needs root.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/kvm.h>
#include "hypertrace/synthetic_events.h"
#include "record/tracer.h"
#include "kernel_test.h"
#include "synth.h"
#include "test.h"
#include "tracefile/trace_reader.h"

#define SVM HT_ISA_SVM
#define OTHER 77u
#define SVM_IO 0x7b

static struct ht_synth_layout layout;

static struct ht_tracer *wakeups_tracer(bool wakeups, unsigned long ring_bytes, const struct ht_filters *f)
{
	/* Only the test's events move states: no real switch (see main). */
	struct ht_tracer_opts o = { .isa = SVM, .synthetic = true, .synthetic_switches_only = true, .exits = true,
				    .wakeups = wakeups, .ringbuf_bytes = ring_bytes };

	if (f)
		o.filters = *f;
	else
		ht_filters_default(&o.filters);
	return ht_kernel_test_tracer(&o);
}

/*
 * This thread, a vCPU thread of vcpu 0: a timer wake-up (700 ns, 500
 * waiting, the second injection not its own; its timer due at 1990, the
 * expiry noted while it sleeps), a vector's (100 ns, 50 waiting; a timer
 * that expired while it ran before its halt is not its), two reblocked
 * wake-ups (the second's timer expiry goes with it) then one with no injection
 * (30 ns, 10 waiting), and a wake-up from a block in the VMM, which is no
 * halt's.
 */
static int play_wakeups(const struct ht_tracer *t)
{
	const __u32 me = (__u32)gettid(), pid = (__u32)getpid();
	int ret = ht_synth_exit_at(&layout, t, SVM, HT_SVM_EXIT_CODE_HLT, 0, 1000);

	ret = ret ?: ht_synth_switch(t, me, pid, OTHER, OTHER, false, 1100); /* halted */
	ret = ret ?: ht_synth_timer_expires(t, me, 1990);
	ret = ret ?: ht_synth_wakeup(t, me, 2000);
	ret = ret ?: ht_synth_switch(t, OTHER, OTHER, me, pid, false, 2300);
	ret = ret ?: ht_synth_inj_virq(t, me, HT_SYNTH_TIMER_VECTOR);
	ret = ret ?: ht_synth_switch(t, me, pid, OTHER, OTHER, true, 2400); /* preempted: still waking */
	ret = ret ?: ht_synth_switch(t, OTHER, OTHER, me, pid, false, 2600);
	ret = ret ?: ht_synth_inj_virq(t, me, 0x30);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 2700);
	ret = ret ?: ht_synth_timer_expires(t, me, 2800); /* running: not a wake-up's */
	ret = ret ?: ht_synth_exit_at(&layout, t, SVM, HT_SVM_EXIT_CODE_HLT, 0, 3000);
	ret = ret ?: ht_synth_switch(t, me, pid, OTHER, OTHER, false, 3100);
	ret = ret ?: ht_synth_wakeup(t, me, 5000);
	ret = ret ?: ht_synth_switch(t, OTHER, OTHER, me, pid, false, 5050);
	ret = ret ?: ht_synth_inj_virq(t, me, 0xfd);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 5100);
	ret = ret ?: ht_synth_exit_at(&layout, t, SVM, HT_SVM_EXIT_CODE_HLT, 0, 6000);
	ret = ret ?: ht_synth_switch(t, me, pid, OTHER, OTHER, false, 6100);
	ret = ret ?: ht_synth_wakeup(t, me, 7000);
	ret = ret ?: ht_synth_switch(t, OTHER, OTHER, me, pid, false, 7100);
	ret = ret ?: ht_synth_switch(t, me, pid, OTHER, OTHER, false, 7200); /* blocked again: reblocked */
	ret = ret ?: ht_synth_timer_expires(t, me, 7300);                   /* asleep again: the next wake-up's */
	ret = ret ?: ht_synth_wakeup(t, me, 7350);
	ret = ret ?: ht_synth_switch(t, OTHER, OTHER, me, pid, false, 7400);
	ret = ret ?: ht_synth_switch(t, me, pid, OTHER, OTHER, false, 7500); /* reblocked: its expiry goes */
	ret = ret ?: ht_synth_wakeup(t, me, 8000);
	ret = ret ?: ht_synth_switch(t, OTHER, OTHER, me, pid, false, 8010);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 8030);
	ret = ret ?: ht_synth_exit_at(&layout, t, SVM, SVM_IO, 0, 9000);
	ret = ret ?: ht_synth_userspace_exit_at(t, KVM_EXIT_MMIO, 9100);
	ret = ret ?: ht_synth_switch(t, me, pid, OTHER, OTHER, false, 9200);
	ret = ret ?: ht_synth_wakeup(t, me, 9500);
	ret = ret ?: ht_synth_switch(t, OTHER, OTHER, me, pid, false, 9600);
	ret = ret ?: ht_synth_inj_virq(t, me, 0x40);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 9700);
	return ret;
}

static bool wakeup_is(const struct ht_record *r, __u64 due, __u64 wake, __u64 entry, __u64 wait, __u32 vector,
		      __u32 wake_class)
{
	struct ht_vcpu_wakeup w;

	memcpy(&w, r, sizeof(w));
	return ASSERT_EQ(w.flags, HT_REC_F_VCPU_WAKEUP, "flags") && ASSERT_EQ(w.due_ns, due, "due_ns") &&
	       ASSERT_EQ(w.wake_ns, wake, "wake_ns") &&
	       ASSERT_EQ(w.entry_ns, entry, "entry_ns") && ASSERT_EQ(w.wait_ns, wait, "wait_ns") &&
	       ASSERT_EQ(w.vector, vector, "vector") && ASSERT_EQ(w.timer_vector, HT_SYNTH_TIMER_VECTOR, "timer_vector") &&
	       ASSERT_EQ(w.wake_class, wake_class, "class") && ASSERT_EQ(w.host_pid, (__u32)getpid(), "host_pid") &&
	       ASSERT_EQ(w.host_tid, (__u32)gettid(), "host_tid") && ASSERT_EQ(w.vcpu_id, 0, "vcpu_id") &&
	       ASSERT_EQ(w.cpu, sched_getcpu(), "cpu") &&
	       ASSERT_EQ(w.reserved0 | w.reserved[0] | w.reserved[1] | w.reserved2 | w.isa, 0,
			 "reserved");
}

static void each_wake_up_from_a_halt_is_one_record_with_its_parts(void)
{
	struct ht_tracer *t = wakeups_tracer(true, 1 << 20, NULL);
	struct ht_kernel_test_drained *d = calloc(1, sizeof(*d));

	if (ASSERT_OK_PTR(t, "tracer") && ASSERT_OK_PTR(d, "memory") && ASSERT_OK(play_wakeups(t), "events") &&
	    ht_kernel_test_drain(t, d) && ASSERT_EQ(d->n, 3, "records: the reblocked one and the VMM's block are none")) {
		wakeup_is(&d->recs[0], 1990, 2000, 2700, 500, HT_SYNTH_TIMER_VECTOR, HT_WAKE_TIMER);
		wakeup_is(&d->recs[1], 0, 5000, 5100, 50, 0xfd, HT_WAKE_VECTOR);
		wakeup_is(&d->recs[2], 0, 8000, 8030, 10, HT_WAKE_VECTOR_NONE, HT_WAKE_NONE);
	}
	free(d);
	ht_tracer_destroy(t);
}

static void halts_of_me(void *ctx, const struct ht_vcpu_wait_rec *rec, bool gone)
{
	(void)gone;
	if (rec->w.tid == (__u32)gettid())
		*(struct ht_vcpu_halts *)ctx = rec->h;
}

/* The records and the halts' histograms are one reading of the same events: each class's count, time and wait agree. */
static void the_records_add_up_to_the_halts_wake_ups(void)
{
	struct ht_tracer *t = wakeups_tracer(true, 1 << 20, NULL);
	struct ht_kernel_test_drained *d = calloc(1, sizeof(*d));
	struct ht_vcpu_halts h = { 0 };
	__u64 n[HT_WAKE_NCLASSES] = { 0 }, total[HT_WAKE_NCLASSES] = { 0 }, wait[HT_WAKE_NCLASSES] = { 0 };

	if (!ASSERT_OK_PTR(t, "tracer") || !ASSERT_OK_PTR(d, "memory") || !ASSERT_OK(play_wakeups(t), "events") ||
	    !ht_kernel_test_drain(t, d) || !ASSERT_OK(ht_tracer_read_vcpu_waits(t, halts_of_me, &h), "halts"))
		goto out;
	for (unsigned int i = 0; i < d->n; i++) {
		struct ht_vcpu_wakeup w;

		memcpy(&w, &d->recs[i], sizeof(w));
		if (!ASSERT_MSG(w.wake_class < HT_WAKE_NCLASSES, "class %u", w.wake_class))
			goto out;
		n[w.wake_class]++;
		total[w.wake_class] += w.entry_ns - w.wake_ns;
		wait[w.wake_class] += w.wait_ns;
	}
	for (int c = 0; c < HT_WAKE_NCLASSES; c++) {
		__u64 count = 0;

		for (unsigned int k = 0; k < HT_WAKE_SLOTS; k++)
			count += h.wake.c[c].slots[k];
		ASSERT_EQ(n[c], count, "a class's records and its histogram's count");
		ASSERT_EQ(total[c], h.wake.c[c].total_ns, "a class's time");
		ASSERT_EQ(wait[c], h.wake.c[c].wait_ns, "a class's wait");
	}
	ASSERT_EQ(h.wake.reblocked, 2, "the reblocked wake-ups, counted and not recorded");
out:
	free(d);
	ht_tracer_destroy(t);
}

static void timer_due_of_me(void *ctx, const struct ht_vcpu_wait_rec *rec, bool gone)
{
	(void)gone;
	if (rec->w.tid == (__u32)gettid())
		*(struct ht_vcpu_timer_due *)ctx = rec->due;
}

/*
 * The timer wake-ups from their due time (the thread's struct
 * ht_vcpu_timer_due): only the first wake-up's, due at 1990, woken at
 * 2000, running at 2700 with 500 of it waiting: 710 ns, 10 of it firing.
 * The expiry while the thread ran (2800) and the one that went with a
 * reblocked wake-up (7300) are in none; nor are the wake-ups of other
 * classes.
 */
static void a_timer_wake_up_is_counted_from_its_due_time(void)
{
	struct ht_tracer *t = wakeups_tracer(false, 1 << 20, NULL);
	struct ht_vcpu_timer_due due = { 0 };
	__u64 count = 0;

	if (!ASSERT_OK_PTR(t, "tracer") || !ASSERT_OK(play_wakeups(t), "events") ||
	    !ASSERT_OK(ht_tracer_read_vcpu_waits(t, timer_due_of_me, &due), "threads"))
		goto out;
	for (unsigned int k = 0; k < HT_WAKE_SLOTS; k++)
		count += due.h.slots[k];
	ASSERT_EQ(count, 1, "timer wake-ups with their due time");
	ASSERT_EQ(due.h.slots[9], 1, "its slot: 710 ns in [512, 1024)");
	ASSERT_EQ(due.h.total_ns, 710, "due to guest running");
	ASSERT_EQ(due.h.max_ns, 710, "the longest");
	ASSERT_EQ(due.h.wait_ns, 500, "of it waiting for a CPU");
	ASSERT_EQ(due.fire_ns, 10, "of it from the due time to the wake-up");
out:
	ht_tracer_destroy(t);
}

static void without_wakeups_no_wake_up_is_recorded(void)
{
	ASSERT_EQ(ht_kernel_test_records_played(wakeups_tracer(false, 1 << 20, NULL), play_wakeups), 0, "records");
}

/* -p and --vcpu select the wake-ups as they select hypercalls. */
static unsigned int wakeups_recorded_with(bool tgid_on, __u32 tgid, bool vcpu_on, __u32 vcpu)
{
	struct ht_filters f = ht_kernel_test_filters(tgid_on, tgid, vcpu_on, vcpu);

	return ht_kernel_test_records_played(wakeups_tracer(true, 1 << 20, &f), play_wakeups);
}

static void pid_and_vcpu_filters_select_wake_ups(void)
{
	ASSERT_EQ(wakeups_recorded_with(true, (__u32)getpid(), false, 0), 3, "-p of the thread's VM");
	ASSERT_EQ(wakeups_recorded_with(true, (__u32)getpid() + 1, false, 0), 0, "-p of another VM");
	ASSERT_EQ(wakeups_recorded_with(false, 0, true, 0), 3, "--vcpu of the thread");
	ASSERT_EQ(wakeups_recorded_with(false, 0, true, 4), 0, "--vcpu of another vCPU");
}

/* A ring filled by the synthetic producer: the wake-ups are lost, and counted. */
static void a_wake_up_that_finds_its_ring_full_is_counted(void)
{
	struct ht_tracer *t = wakeups_tracer(true, 4096 * 2, NULL);
	__u64 c[HT_CNT_MAX] = { 0 };

	if (!ASSERT_OK_PTR(t, "tracer"))
		return;
	if (ht_kernel_test_fill_ring(t) && ASSERT_OK(play_wakeups(t), "events") && ASSERT_OK(ht_tracer_counters(t, c), "counters"))
		ASSERT_EQ(c[HT_CNT_WAKEUP_DROPS], 3, "wake-ups lost");
	ht_tracer_destroy(t);
}

struct visited {
	unsigned int wakeups, records;
	struct ht_vcpu_wakeup w[4];
};

static void visit_wakeup(void *ctx, const struct ht_vcpu_wakeup *w)
{
	struct visited *v = ctx;

	if (v->wakeups < 4)
		v->w[v->wakeups] = *w;
	v->wakeups++;
}

/*
 * Through the trace file, both encodings: the reader hands the hypercall to
 * ht_reader_next and the wake-ups to their visitor, byte for byte, and the
 * trailer's count of both checks out.
 */
static void the_trace_file_keeps_wake_ups_between_hypercalls(void)
{
	struct ht_tracer *t = wakeups_tracer(true, 1 << 20, NULL);
	struct ht_kernel_test_drained *d = calloc(1, sizeof(*d));

	if (!ASSERT_OK_PTR(t, "tracer") || !ASSERT_OK_PTR(d, "memory") || !ASSERT_OK(play_wakeups(t), "events") ||
	    !ht_kernel_test_drain(t, d) || !ASSERT_EQ(d->n, 3, "drained"))
		goto out;
	for (int compressed = 0; compressed < 2; compressed++) {
		struct ht_record hc = { .exit_ns = 4000, .exit_to_hcall_ns = 10, .hcall_to_entry_ns = 10, .nr = 1000,
					.host_pid = (__u32)getpid(), .host_tid = (__u32)gettid(), .isa = SVM,
					.exit_reason = HT_SVM_EXIT_CODE_VMMCALL };
		struct ht_record all[4] = { d->recs[0], hc, d->recs[1], d->recs[2] };
		struct ht_reader *r = ht_kernel_test_file_of(all, 4, compressed, HT_FILTER_F_WAKEUPS);
		struct visited v = { 0 };
		struct ht_record rec;

		if (r) {
			ASSERT_EQ(ht_reader_header(r)->version, HT_FILE_VERSION, "format version");
			ht_reader_set_wakeup_visitor(r, visit_wakeup, &v);
			while (ht_reader_next(r, &rec) == 1) {
				ASSERT_EQ(rec.nr, 1000, "only the hypercall is a record");
				v.records++;
			}
			const struct ht_read_status *st = ht_reader_status(r);
			ASSERT_TRUE(st->has_trailer && !st->damaged, "read to its clean end");
			ASSERT_EQ(st->records, 1, "hypercall records");
			ASSERT_EQ(st->vcpu_wakeups, 3, "wake-ups");
			if (ASSERT_EQ(v.wakeups, 3, "visited"))
				for (int i = 0; i < 3; i++)
					ASSERT_MSG(!memcmp(&v.w[i], &d->recs[i], sizeof(v.w[i])),
						   "wake-up %d changed through the file (%s)", i, compressed ? "compressed" : "plain");
			ht_reader_close(r);
		}
	}
out:
	free(d);
	ht_tracer_destroy(t);
}

int main(void)
{
	ht_kernel_test_begin("wakeups", &layout, NULL);
	ht_kernel_test_pin_here(); /* and the tracers see only the tests' own switches */
	RUN(each_wake_up_from_a_halt_is_one_record_with_its_parts);
	RUN(the_records_add_up_to_the_halts_wake_ups);
	RUN(a_timer_wake_up_is_counted_from_its_due_time);
	RUN(without_wakeups_no_wake_up_is_recorded);
	RUN(pid_and_vcpu_filters_select_wake_ups);
	RUN(a_wake_up_that_finds_its_ring_full_is_counted);
	RUN(the_trace_file_keeps_wake_ups_between_hypercalls);
	return ht_test_exit_status();
}
