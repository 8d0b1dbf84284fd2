// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * record --exits' interrupts through the real BPF handlers: synthetic
 * acceptances (kvm_apic_accept_irq, from senders the test names),
 * injections, switches and entries of this thread as vCPU 0, at times the
 * test gives. Each interrupt is timed from its acceptance to the entry
 * after its vector's injection, split into the halted thread's wake-up,
 * the account's wait and the rest, and classed by its sender; the ones
 * that cannot be timed are counted as what they are; with --wakeups each
 * timed one is also a record of its own, through the trace file too.
 * Needs root.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "hypertrace/synthetic_events.h"
#include "record/tracer.h"
#include "kernel_test.h"
#include "synth.h"
#include "test.h"
#include "tracefile/trace_reader.h"

#define SVM HT_ISA_SVM
#define OTHER 77u          /* a thread that is no vCPU thread, of no VM */
#define SVM_INTR 0x60      /* an exit for a host interrupt: the kick of a running vCPU */
#define SVM_NPF 0x400
#define VCPU1 (OTHER + 1)  /* another vCPU thread of this VM: vCPU 1 */
#define DEVICE (OTHER + 2) /* a thread of this VM process that is no vCPU thread: the VMM's */
#define DM_FIXED 0x000
#define DM_LOWEST 0x100
#define DM_NMI 0x400
#define LATER 2000000000ull /* beyond HT_IRQ_STALE_NS */

static struct ht_synth_layout layout;

static struct ht_tracer *irqs_tracer_with(bool wakeups)
{
	/* Only the test's events move states: no real switch (see main). */
	struct ht_tracer_opts o = { .isa = SVM, .synthetic = true, .synthetic_switches_only = true, .exits = true,
				    .wakeups = wakeups, .ringbuf_bytes = 1 << 20 };

	ht_filters_default(&o.filters);
	return ht_kernel_test_tracer(&o);
}

static struct ht_tracer *irqs_tracer(void)
{
	return irqs_tracer_with(false);
}

static int accept(const struct ht_tracer *t, __u32 sender, __u32 dm, __u32 tm, __u32 vector, __u64 at)
{
	return ht_synth_accept_irq(t, (__u32)getpid(), sender, 0, dm, tm, vector, at);
}

/*
 * This thread, vCPU 0 of this process, and vCPU 1 (VCPU1) beside it:
 * - halted, an IPI from vCPU 1 at 1900 wakes it at 2000; on its CPU at
 *   2100, the IPI's vector injected, in guest at 2200: 300 ns, 100 waking,
 *   100 waiting;
 * - in guest, a device's interrupt (the VMM's thread) at 2900, the kick's
 *   exit at 3000, in guest with it at 3100: 200 ns, none waking or
 *   waiting;
 * - preempted since 4050, an IPI at 4100, on its CPU at 4400, in guest at
 *   4500: 400 ns, 300 waiting (not the 50 before the acceptance);
 * - halted, its timer due at 5990 wakes it at 6000, the timer accepted by
 *   its own thread at 6100, in guest at 6200: 100 ns (the wake-up before
 *   it is the wake-up's, not the interrupt's), its timer due 110 ns before
 *   the acceptance;
 * - an IPI at 7010, its vector again at 7020 (pending already:
 *   overlapped) and a device's at 7030: the device's in guest at 7100
 *   (70 ns), the IPI at 7200 (190 ns); a level-triggered acceptance, an NMI
 *   and an acceptance by another process's thread (unattributed);
 * - in guest, its timer due at 7590, accepted at 7600, in guest with it at
 *   7650: 50 ns, due 10 ns before; then its timer again at 7700 with no
 *   expiry since (a deadline already past when written): 20 ns, its due
 *   time not known (the last expiry's was taken);
 * - four vectors never injected take every slot, a fifth finds none
 *   (overlapped); an IPI 2 s later takes their slots back (4 stale) and is
 *   in guest 100 ns after it.
 */
static int play_irqs(const struct ht_tracer *t)
{
	const __u32 me = (__u32)gettid(), pid = (__u32)getpid();
	int ret = ht_synth_register(t, VCPU1, pid, 1, true, 500);

	ret = ret ?: ht_synth_exit_at(&layout, t, SVM, HT_SVM_EXIT_CODE_HLT, 0, 1000);
	ret = ret ?: ht_synth_switch(t, me, pid, OTHER, OTHER, false, 1100);
	ret = ret ?: accept(t, VCPU1, DM_FIXED, 0, 0xfd, 1900);
	ret = ret ?: ht_synth_wakeup(t, me, 2000);
	ret = ret ?: ht_synth_switch(t, OTHER, OTHER, me, pid, false, 2100);
	ret = ret ?: ht_synth_inj_virq(t, me, 0xfd);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 2200);

	ret = ret ?: accept(t, DEVICE, DM_LOWEST, 0, 0x41, 2900);
	ret = ret ?: ht_synth_exit_at(&layout, t, SVM, SVM_INTR, 0, 3000);
	ret = ret ?: ht_synth_inj_virq(t, me, 0x41);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 3100);

	ret = ret ?: ht_synth_exit_at(&layout, t, SVM, SVM_NPF, 0, 4000);
	ret = ret ?: ht_synth_switch(t, me, pid, OTHER, OTHER, true, 4050);
	ret = ret ?: accept(t, VCPU1, DM_FIXED, 0, 0xfb, 4100);
	ret = ret ?: ht_synth_switch(t, OTHER, OTHER, me, pid, false, 4400);
	ret = ret ?: ht_synth_inj_virq(t, me, 0xfb);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 4500);

	ret = ret ?: ht_synth_exit_at(&layout, t, SVM, HT_SVM_EXIT_CODE_HLT, 0, 5000);
	ret = ret ?: ht_synth_switch(t, me, pid, OTHER, OTHER, false, 5100);
	ret = ret ?: ht_synth_timer_expires(t, me, 5990);
	ret = ret ?: ht_synth_wakeup(t, me, 6000);
	ret = ret ?: ht_synth_switch(t, OTHER, OTHER, me, pid, false, 6050);
	ret = ret ?: accept(t, me, DM_FIXED, 0, HT_SYNTH_TIMER_VECTOR, 6100);
	ret = ret ?: ht_synth_inj_virq(t, me, HT_SYNTH_TIMER_VECTOR);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 6200);

	ret = ret ?: ht_synth_exit_at(&layout, t, SVM, SVM_NPF, 0, 7000);
	ret = ret ?: accept(t, VCPU1, DM_FIXED, 0, 0xfd, 7010);
	ret = ret ?: accept(t, VCPU1, DM_FIXED, 0, 0xfd, 7020); /* pending already: overlapped */
	ret = ret ?: accept(t, DEVICE, DM_FIXED, 0, 0x41, 7030);
	ret = ret ?: ht_synth_inj_virq(t, me, 0x41);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 7100);
	ret = ret ?: ht_synth_exit_at(&layout, t, SVM, SVM_INTR, 0, 7150);
	ret = ret ?: ht_synth_inj_virq(t, me, 0xfd);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 7200);
	ret = ret ?: accept(t, DEVICE, DM_FIXED, 1, 0x51, 7300);
	ret = ret ?: accept(t, VCPU1, DM_NMI, 0, 2, 7400);
	ret = ret ?: ht_synth_accept_irq(t, pid + 1, OTHER, 0, DM_FIXED, 0, 0x41, 7500);
	ret = ret ?: ht_synth_timer_expires(t, me, 7590);
	ret = ret ?: accept(t, me, DM_FIXED, 0, HT_SYNTH_TIMER_VECTOR, 7600);
	ret = ret ?: ht_synth_exit_at(&layout, t, SVM, SVM_INTR, 0, 7610);
	ret = ret ?: ht_synth_inj_virq(t, me, HT_SYNTH_TIMER_VECTOR);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 7650);
	ret = ret ?: accept(t, me, DM_FIXED, 0, HT_SYNTH_TIMER_VECTOR, 7700);
	ret = ret ?: ht_synth_exit_at(&layout, t, SVM, SVM_INTR, 0, 7710);
	ret = ret ?: ht_synth_inj_virq(t, me, HT_SYNTH_TIMER_VECTOR);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 7720);

	for (__u32 v = 0x60; v < 0x65; v++) /* four never injected take every slot; the fifth finds none */
		ret = ret ?: accept(t, DEVICE, DM_FIXED, 0, v, 10000 + v);
	ret = ret ?: accept(t, VCPU1, DM_FIXED, 0, 0xfd, 10000 + LATER);
	ret = ret ?: ht_synth_exit_at(&layout, t, SVM, SVM_INTR, 0, 10000 + LATER + 10);
	ret = ret ?: ht_synth_inj_virq(t, me, 0xfd);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 10000 + LATER + 100);
	return ret;
}

struct irqs_of {
	__u32 tid;
	bool found;
	struct ht_vcpu_irqs i;
};

static void irqs_of(void *ctx, const struct ht_vcpu_wait_rec *rec, bool gone)
{
	struct irqs_of *o = ctx;

	(void)gone;
	if (rec->w.tid == o->tid) {
		o->found = true;
		o->i = rec->i;
	}
}

static __u64 count_of(const struct ht_vcpu_wake_hist *h)
{
	__u64 n = 0;

	for (unsigned int k = 0; k < HT_WAKE_SLOTS; k++)
		n += h->slots[k];
	return n;
}

static void class_is(const struct ht_vcpu_irqs *i, int c, __u64 n, __u64 total, __u64 wait, __u64 woken, __u64 max,
		     const char *what)
{
	const struct ht_vcpu_wake_hist *h = &i->c[c];

	ASSERT_MSG(count_of(h) == n && h->total_ns == total && h->wait_ns == wait && i->woken_ns[c] == woken &&
			   h->max_ns == max,
		   "%s: %llu delivered, %llu ns, %llu waiting, %llu waking, the longest %llu; want %llu, %llu, %llu, %llu, %llu",
		   what, (unsigned long long)count_of(h), (unsigned long long)h->total_ns,
		   (unsigned long long)h->wait_ns, (unsigned long long)i->woken_ns[c], (unsigned long long)h->max_ns,
		   (unsigned long long)n, (unsigned long long)total, (unsigned long long)wait,
		   (unsigned long long)woken, (unsigned long long)max);
}

static void each_interrupt_is_timed_from_its_acceptance_to_its_entry(void)
{
	struct ht_tracer *t = irqs_tracer();
	struct irqs_of me = { .tid = (__u32)gettid() }, vcpu1 = { .tid = VCPU1 };
	__u64 c[HT_CNT_MAX] = { 0 };

	if (!ASSERT_OK_PTR(t, "tracer") || !ASSERT_OK(play_irqs(t), "events") ||
	    !ASSERT_OK(ht_tracer_read_vcpu_waits(t, irqs_of, &me), "threads") ||
	    !ASSERT_OK(ht_tracer_read_vcpu_waits(t, irqs_of, &vcpu1), "threads again") ||
	    !ASSERT_TRUE(me.found && vcpu1.found, "both vCPU threads read"))
		goto out;
	class_is(&me.i, HT_IRQ_IPI, 4, 300 + 400 + 190 + 100, 100 + 300, 100, 400, "IPIs");
	class_is(&me.i, HT_IRQ_DEVICE, 2, 200 + 70, 0, 0, 200, "devices");
	class_is(&me.i, HT_IRQ_TIMER, 3, 100 + 50 + 20, 0, 0, 100, "timer");
	ASSERT_EQ(me.i.accepted, 15, "edge-triggered acceptances");
	ASSERT_EQ(me.i.overlapped, 2, "a vector pending already, and one that found every slot taken");
	ASSERT_EQ(me.i.stale, 4, "the ones never injected");
	ASSERT_EQ(me.i.level, 1, "level-triggered");
	ASSERT_EQ(vcpu1.i.accepted + vcpu1.i.level, 0, "vCPU 1 was sent nothing");
	if (ASSERT_OK(ht_tracer_counters(t, c), "counters"))
		ASSERT_EQ(c[HT_CNT_IRQ_UNATTRIBUTED], 1, "another process's thread's interrupt");
out:
	ht_tracer_destroy(t);
}

/* play_irqs' timed interrupts in the order of their entries (the delivery before the wake-up its entry also ends). */
static const struct ht_vcpu_irq want_deliveries[] = {
	{ .accept_ns = 1900, .entry_ns = 2200, .woken_ns = 100, .wait_ns = 100, .vector = 0xfd, .irq_class = HT_IRQ_IPI },
	{ .accept_ns = 2900, .entry_ns = 3100, .vector = 0x41, .irq_class = HT_IRQ_DEVICE },
	{ .accept_ns = 4100, .entry_ns = 4500, .wait_ns = 300, .vector = 0xfb, .irq_class = HT_IRQ_IPI },
	{ .accept_ns = 6100, .entry_ns = 6200, .vector = HT_SYNTH_TIMER_VECTOR, .irq_class = HT_IRQ_TIMER, .due_ns = 5990 },
	{ .accept_ns = 7030, .entry_ns = 7100, .vector = 0x41, .irq_class = HT_IRQ_DEVICE },
	{ .accept_ns = 7010, .entry_ns = 7200, .vector = 0xfd, .irq_class = HT_IRQ_IPI },
	{ .accept_ns = 7600, .entry_ns = 7650, .vector = HT_SYNTH_TIMER_VECTOR, .irq_class = HT_IRQ_TIMER, .due_ns = 7590 },
	{ .accept_ns = 7700, .entry_ns = 7720, .vector = HT_SYNTH_TIMER_VECTOR, .irq_class = HT_IRQ_TIMER },
	{ .accept_ns = 10000 + LATER, .entry_ns = 10000 + LATER + 100, .vector = 0xfd, .irq_class = HT_IRQ_IPI },
};
#define NDELIVERIES (sizeof(want_deliveries) / sizeof(want_deliveries[0]))

struct visited {
	unsigned int irqs, wakeups, records;
	struct ht_vcpu_irq d[NDELIVERIES];
};

static void visit_irq(void *ctx, const struct ht_vcpu_irq *d)
{
	struct visited *v = ctx;

	if (v->irqs < NDELIVERIES)
		v->d[v->irqs] = *d;
	v->irqs++;
}

static void visit_wakeup(void *ctx, const struct ht_vcpu_wakeup *w)
{
	(void)w;
	((struct visited *)ctx)->wakeups++;
}

/* The drained records' interrupt deliveries into v, in order; false with the failure reported. */
static bool deliveries_of(const struct ht_kernel_test_drained *d, struct visited *v)
{
	for (unsigned int i = 0; i < d->n; i++) {
		if (d->recs[i].flags == HT_REC_F_VCPU_WAKEUP) {
			v->wakeups++;
		} else if (ASSERT_EQ(d->recs[i].flags, HT_REC_F_VCPU_IRQ, "a record's kind: a delivery or a wake-up")) {
			if (v->irqs < NDELIVERIES)
				memcpy(&v->d[v->irqs], &d->recs[i], sizeof(v->d[0]));
			v->irqs++;
		} else {
			return false;
		}
	}
	return ASSERT_EQ(v->irqs, NDELIVERIES, "one record per timed interrupt") &&
	       ASSERT_EQ(v->wakeups, 2, "and the two wake-ups from a halt");
}

static void delivery_is(const struct ht_vcpu_irq *got, const struct ht_vcpu_irq *want, unsigned int i)
{
	ASSERT_MSG(got->accept_ns == want->accept_ns && got->entry_ns == want->entry_ns &&
			   got->woken_ns == want->woken_ns && got->wait_ns == want->wait_ns && got->vector == want->vector &&
			   got->irq_class == want->irq_class && got->due_ns == want->due_ns,
		   "delivery %u: accepted %llu, entry %llu, waking %llu, wait %llu, vector %#x, class %u, due %llu; want %llu, %llu, %llu, %llu, %#x, %u, %llu",
		   i, (unsigned long long)got->accept_ns, (unsigned long long)got->entry_ns,
		   (unsigned long long)got->woken_ns, (unsigned long long)got->wait_ns, got->vector, got->irq_class,
		   (unsigned long long)got->due_ns, (unsigned long long)want->accept_ns,
		   (unsigned long long)want->entry_ns, (unsigned long long)want->woken_ns,
		   (unsigned long long)want->wait_ns, want->vector, want->irq_class, (unsigned long long)want->due_ns);
	ASSERT_MSG(got->host_pid == (__u32)getpid() && got->host_tid == (__u32)gettid() && got->vcpu_id == 0 &&
			   got->cpu == sched_getcpu() && got->flags == HT_REC_F_VCPU_IRQ,
		   "delivery %u: thread %u/%u vcpu %u cpu %u flags %#x", i, got->host_pid, got->host_tid, got->vcpu_id,
		   got->cpu, got->flags);
	ASSERT_EQ(got->reserved[0] | got->reserved[1] | got->reserved2 | got->isa, 0, "reserved");
}

/* d's records through a trace file (both encodings): every delivery read back byte for byte, and counted. */
static void through_a_file(const struct ht_kernel_test_drained *d, const struct visited *drained)
{
	for (int compressed = 0; compressed < 2; compressed++) {
		struct ht_reader *r = ht_kernel_test_file_of(d->recs, d->n, compressed, HT_FILTER_F_WAKEUPS);
		struct visited v = { 0 };
		struct ht_record rec;

		if (r) {
			ht_reader_set_irq_visitor(r, visit_irq, &v);
			ht_reader_set_wakeup_visitor(r, visit_wakeup, &v);
			while (ht_reader_next(r, &rec) == 1)
				v.records++;
			const struct ht_read_status *st = ht_reader_status(r);

			ASSERT_TRUE(st->has_trailer && !st->damaged, "read to its clean end");
			ASSERT_EQ(v.records + st->records, 0, "no delivery taken for a hypercall");
			ASSERT_EQ(st->vcpu_irqs, NDELIVERIES, "deliveries counted");
			ASSERT_EQ(st->vcpu_wakeups, 2, "wake-ups counted");
			if (ASSERT_EQ(v.irqs, NDELIVERIES, "visited"))
				for (unsigned int i = 0; i < NDELIVERIES; i++)
					ASSERT_MSG(!memcmp(&v.d[i], &drained->d[i], sizeof(v.d[i])),
						   "delivery %u changed through the file (%s)", i, compressed ? "compressed" : "plain");
			ht_reader_close(r);
		}
	}
}

/*
 * --wakeups: each timed interrupt is one record with the numbers its class
 * adds up, in the order of its entry, beside the wake-ups; without it, none.
 */
static void with_wakeups_each_timed_interrupt_is_one_record_with_its_parts(void)
{
	struct ht_tracer *t = irqs_tracer_with(true);
	struct ht_kernel_test_drained *d = calloc(1, sizeof(*d));
	struct visited v = { 0 };

	if (ASSERT_OK_PTR(t, "tracer") && ASSERT_OK_PTR(d, "memory") && ASSERT_OK(play_irqs(t), "events") &&
	    ht_kernel_test_drain(t, d) && deliveries_of(d, &v)) {
		for (unsigned int i = 0; i < NDELIVERIES; i++)
			delivery_is(&v.d[i], &want_deliveries[i], i);
		through_a_file(d, &v);
	}
	free(d);
	ht_tracer_destroy(t);
	ASSERT_EQ(ht_kernel_test_records_played(irqs_tracer_with(false), play_irqs), 0, "records without --wakeups");
}

static int dying_result;

/*
 * vCPU 5 of this process for a moment: an exit makes it a vCPU thread; a
 * later exit names vCPU id 6 and is open when the thread is switched out
 * (the thread then reports id 6: park_open_exit), and it ends.
 */
static void *be_vcpu_5_then_die(void *tracer)
{
	const __u32 me = (__u32)gettid(), pid = (__u32)getpid();
	int ret = ht_synth_exit_at(&layout, tracer, SVM, SVM_NPF, 5, 1000);

	ret = ret ?: ht_synth_entry_at(&layout, tracer, 5, 1100);
	ret = ret ?: ht_synth_exit_at(&layout, tracer, SVM, SVM_NPF, 6, 1200);
	ret = ret ?: ht_synth_switch(tracer, me, pid, OTHER, OTHER, false, 1300);
	dying_result = ret;
	return (void *)(long)me;
}

static bool thread_known(const struct ht_tracer *t, __u32 tid)
{
	struct irqs_of o = { .tid = tid };

	return ht_tracer_read_vcpu_waits(t, irqs_of, &o) == 0 && o.found;
}

/*
 * A vCPU thread that ends takes its VM and vCPU id with it, the id it was
 * registered with even if a later exit named another: an interrupt for
 * that vCPU is then unattributed, and a new thread of the same vCPU id gets
 * its own, from zero.
 */
static void an_ended_thread_is_no_target_and_its_successor_starts_anew(void)
{
	struct ht_tracer *t = irqs_tracer();
	const __u32 pid = (__u32)getpid();
	struct irqs_of next = { .tid = OTHER + 5 };
	__u64 before[HT_CNT_MAX] = { 0 }, after[HT_CNT_MAX] = { 0 };
	char err[512];
	pthread_t th;
	void *tid = NULL;
	int ret;

	if (!ASSERT_OK_PTR(t, "tracer") || !ASSERT_MSG(ht_tracer_attach(t, err, sizeof(err)) == 0, "%s", err))
		goto out;
	pthread_create(&th, NULL, be_vcpu_5_then_die, t);
	pthread_join(th, &tid);
	if (!ASSERT_OK(dying_result, "its exit"))
		goto out;
	/* sched_process_exit fires just after the join can return: give it up to a second, and one more read. */
	for (int i = 0; i < 1000 && thread_known(t, (__u32)(long)tid); i++)
		usleep(1000);
	if (!ASSERT_TRUE(!thread_known(t, (__u32)(long)tid), "the thread that ended is forgotten") ||
	    !ASSERT_OK(ht_tracer_counters(t, before), "counters"))
		goto out;
	ret = ht_synth_accept_irq(t, pid, OTHER, 5, DM_FIXED, 0, 0xfd, 0);
	ret = ret ?: ht_synth_register(t, OTHER + 5, pid, 5, true, 0);
	ret = ret ?: ht_synth_accept_irq(t, pid, OTHER, 5, DM_FIXED, 0, 0xfd, 0);
	if (ASSERT_OK(ret, "events") && ASSERT_OK(ht_tracer_read_vcpu_waits(t, irqs_of, &next), "threads") &&
	    ASSERT_TRUE(next.found, "the new thread read") && ASSERT_OK(ht_tracer_counters(t, after), "counters")) {
		ASSERT_EQ(after[HT_CNT_IRQ_UNATTRIBUTED] - before[HT_CNT_IRQ_UNATTRIBUTED], 1,
			  "the interrupt for the ended thread's vCPU");
		ASSERT_EQ(next.i.accepted, 1, "the new thread of vCPU 5 has its own interrupt, and only it");
	}
out:
	ht_tracer_destroy(t); /* detaches the programs first */
}

int main(void)
{
	ht_kernel_test_begin("irqs", &layout, NULL);
	ht_kernel_test_pin_here(); /* and the tracers see only the tests' own switches */
	RUN(each_interrupt_is_timed_from_its_acceptance_to_its_entry);
	RUN(with_wakeups_each_timed_interrupt_is_one_record_with_its_parts);
	RUN(an_ended_thread_is_no_target_and_its_successor_starts_anew);
	return ht_test_exit_status();
}
