// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * record --exits through the real BPF handlers: synthetic kvm_exit and
 * kvm_entry events at times the test gives (so every time in the host is
 * exact), and synthetic switches and wake-ups of made-up vCPU threads,
 * read back with the functions record uses. The calling thread plays the
 * vCPU thread of the exits. Needs root.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/kvm.h>
#include <bpf/libbpf.h>
#include "bpf/vcpu_state.h"
#include "kernel_test.h"
#include "record/exit_sampler.h"
#include "record/recording.h"
#include "record/tracer.h"
#include "record/tracer_private.h" /* the skeleton's links: one test detaches the switch programs */
#include "synth.h"
#include "test.h"
#include "tracefile/trace_reader.h"
#include "common/util.h"

#define VMX HT_ISA_VMX
#define SVM HT_ISA_SVM
#define VMX_IO 30
#define VMX_HLT 12
#define SVM_IO 0x7b
#define SVM_NPF 0x400

static struct ht_synth_layout layout;

/* A tracer of exits for the caller to destroy, or NULL (said why). */
static struct ht_tracer *exits_tracer(int isa, const struct ht_filters *f)
{
	/* Only the test's events move states: no real switch (see main). */
	struct ht_tracer_opts o = { .isa = isa, .synthetic = true, .synthetic_switches_only = true, .exits = true,
				    .ringbuf_bytes = 1 << 20 };

	if (f)
		o.filters = *f;
	else
		ht_filters_default(&o.filters);
	return ht_kernel_test_tracer(&o);
}

/* Tracer t (NULL until then) is loaded, or the test goes to the cleanup label that destroys it. */
#define LOAD(t, expr)                                            \
	if (!ASSERT_OK_PTR((t) = (expr), "tracer did not load")) \
		goto cleanup

/* What the tracer's maps hold, read as record reads them. */
#define MAX_SERIES 1024
struct series {
	struct ht_exit_key key;
	struct ht_exit_hist h;
};
static struct series got[MAX_SERIES];
static size_t ngot;

static void keep_series(void *ctx, const struct ht_exit_key *key, const struct ht_exit_hist *h)
{
	(void)ctx;
	if (ngot < MAX_SERIES) {
		got[ngot].key = *key;
		got[ngot].h = *h;
	}
	ngot++;
}

static int read_series(struct ht_tracer *t)
{
	ngot = 0;
	return ht_tracer_read_exits(t, keep_series, NULL);
}

static const struct ht_exit_hist *find(__u32 pid, __u16 vcpu, __u8 isa, __u32 reason)
{
	for (size_t i = 0; i < ngot && i < MAX_SERIES; i++)
		if (got[i].key.pid == pid && got[i].key.vcpu == vcpu && got[i].key.isa == isa &&
		    got[i].key.reason == reason)
			return &got[i].h;
	return NULL;
}

#define MAX_WAITS 64
static struct ht_vcpu_wait waits[MAX_WAITS];
static struct ht_vcpu_account accounts[MAX_WAITS];
static struct ht_vcpu_halts halts[MAX_WAITS];
static bool gones[MAX_WAITS];
static size_t nwaits;

static void keep_wait(void *ctx, const struct ht_vcpu_wait_rec *rec, bool gone)
{
	(void)ctx;
	if (nwaits < MAX_WAITS) {
		waits[nwaits] = rec->w;
		accounts[nwaits] = rec->a;
		halts[nwaits] = rec->h;
		gones[nwaits] = gone;
	}
	nwaits++;
}

static const struct ht_vcpu_halts *halts_of(struct ht_tracer *t, __u32 tid)
{
	nwaits = 0;
	ht_tracer_read_vcpu_waits(t, keep_wait, NULL);
	for (size_t i = 0; i < nwaits && i < MAX_WAITS; i++)
		if (waits[i].tid == tid)
			return &halts[i];
	return NULL;
}

static const struct ht_vcpu_wait *wait_of(struct ht_tracer *t, __u32 tid)
{
	nwaits = 0;
	ht_tracer_read_vcpu_waits(t, keep_wait, NULL);
	for (size_t i = 0; i < nwaits && i < MAX_WAITS; i++)
		if (waits[i].tid == tid)
			return &waits[i];
	return NULL;
}

/* One exit of the calling thread and its entry, dur ns later. */
static int exit_for(struct ht_tracer *t, __u32 isa, __u32 reason, __u32 vcpu, __u64 at, __u64 dur)
{
	int ret = ht_synth_exit_at(&layout, t, isa, reason, vcpu, at);

	return ret ? ret : ht_synth_entry_at(&layout, t, vcpu, at + dur);
}

static void an_exit_and_its_entry_count_one_exit_with_its_time_in_the_host(void)
{
	struct ht_tracer *t = NULL;
	const struct ht_exit_hist *h;

	LOAD(t, exits_tracer(VMX, NULL));
	if (!ASSERT_MSG(exit_for(t, VMX, VMX_IO, 2, 1000000, 5000) == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(read_series(t) == 0, "read"))
		goto cleanup;
	if (!ASSERT_EQ(ngot, 1, "value"))
		goto cleanup;
	h = find((__u32)getpid(), 2, VMX, VMX_IO);
	if (!ASSERT_MSG(h != NULL, "no series for (this process, vcpu 2, VMX, 30)"))
		goto cleanup;
	if (!ASSERT_EQ(h->count, 1, "value"))
		goto cleanup;
	if (!ASSERT_EQ(h->total_ns, 5000, "value"))
		goto cleanup;
	if (!ASSERT_EQ(h->min_ns, 5000, "value"))
		goto cleanup;
	if (!ASSERT_EQ(h->max_ns, 5000, "value"))
		goto cleanup;
	ASSERT_EQ(h->slots[12], 1, "value"); /* 4096..8191 */
cleanup:
	ht_tracer_destroy(t);
}

/* Slot k holds [2^k, 2^(k+1) - 1] ns, slot 0 also 0; the last slot holds the rest. */
static void times_fall_in_their_log2_buckets_at_both_edges(void)
{
	static const __u64 durs[] = { 0, 1, 2, 3, 4, 7, 8, 1023, 1024, 2047, 2048,
				      (1ull << 38) - 1, 1ull << 38, (1ull << 39) - 1, 1ull << 39, 1ull << 45 };
	static const unsigned int slot_of[] = { 0, 0, 1, 1, 2, 2, 3, 9, 10, 10, 11, 37, 38, 38, 39, 39 };
	__u64 want[HT_EXIT_SLOTS] = { 0 }, total = 0;
	struct ht_tracer *t = NULL;
	const struct ht_exit_hist *h;

	LOAD(t, exits_tracer(SVM, NULL));
	for (size_t i = 0; i < ARRAY_SIZE(durs); i++) {
		if (!ASSERT_MSG(exit_for(t, SVM, SVM_NPF, 0, 1ull << 50, durs[i]) == 0, "events"))
			goto cleanup;
		want[slot_of[i]]++;
		total += durs[i];
	}
	if (!ASSERT_MSG(read_series(t) == 0, "read"))
		goto cleanup;
	h = find((__u32)getpid(), 0, SVM, SVM_NPF);
	if (!ASSERT_MSG(h != NULL, "no series"))
		goto cleanup;
	if (!ASSERT_EQ(h->count, ARRAY_SIZE(durs), "value"))
		goto cleanup;
	if (!ASSERT_EQ(h->min_ns, 0, "value"))
		goto cleanup;
	if (!ASSERT_EQ(h->max_ns, 1ull << 45, "value"))
		goto cleanup;
	if (!ASSERT_EQ(h->total_ns, total, "value"))
		goto cleanup;
	for (unsigned int k = 0; k < HT_EXIT_SLOTS; k++) {
		if (!ASSERT_MSG(h->slots[k] == want[k], "slot %u: %llu, want %llu", k, (unsigned long long)h->slots[k],
				(unsigned long long)want[k]))
			goto cleanup;
	}
cleanup:
	ht_tracer_destroy(t);
}

static void both_isas_vcpus_and_reasons_are_series_of_their_own(void)
{
	__u32 pid = (__u32)getpid();
	struct ht_tracer *t = NULL;
	const struct ht_exit_hist *h;

	LOAD(t, exits_tracer(SVM, NULL));
	/* VMX: the basic reason; flag bits (here FAILED_VMENTRY, enclave) do not make another series. */
	if (!ASSERT_MSG(exit_for(t, VMX, VMX_IO, 0, 1000, 100) == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(exit_for(t, VMX, VMX_IO | 0x80000000u, 0, 2000, 300) == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(exit_for(t, VMX, VMX_IO | 0x08000000u, 0, 3000, 200) == 0, "events"))
		goto cleanup;
	/* SVM: the whole exit code. Reason 30 of the other ISA is another series. */
	if (!ASSERT_MSG(exit_for(t, SVM, SVM_IO, 0, 4000, 10) == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(exit_for(t, SVM, SVM_IO | 0x10000u, 0, 5000, 10) == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(exit_for(t, SVM, VMX_IO, 0, 6000, 10) == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(exit_for(t, SVM, SVM_IO, 1, 7000, 20) == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(exit_for(t, VMX, VMX_HLT, 1, 8000, 30) == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(read_series(t) == 0, "read"))
		goto cleanup;
	if (!ASSERT_EQ(ngot, 6, "value"))
		goto cleanup;
	h = find(pid, 0, VMX, VMX_IO);
	if (!ASSERT_MSG(h && h->count == 3 && h->min_ns == 100 && h->max_ns == 300 && h->total_ns == 600,
			"VMX io on vcpu 0"))
		goto cleanup;
	if (!ASSERT_MSG((h = find(pid, 0, SVM, SVM_IO)) && h->count == 1 && h->total_ns == 10, "SVM io on vcpu 0"))
		goto cleanup;
	if (!ASSERT_MSG((h = find(pid, 0, SVM, SVM_IO | 0x10000u)) && h->count == 1, "SVM code 0x1007b"))
		goto cleanup;
	if (!ASSERT_MSG((h = find(pid, 0, SVM, VMX_IO)) && h->count == 1, "SVM code 30"))
		goto cleanup;
	if (!ASSERT_MSG((h = find(pid, 1, SVM, SVM_IO)) && h->count == 1 && h->total_ns == 20, "SVM io on vcpu 1"))
		goto cleanup;
	ASSERT_MSG((h = find(pid, 1, VMX, VMX_HLT)) && h->count == 1 && h->total_ns == 30, "VMX hlt on vcpu 1");
cleanup:
	ht_tracer_destroy(t);
}

static void pid_and_vcpu_filters_select_exits(void)
{
	struct ht_tracer *t = NULL, *t2 = NULL;
	struct ht_filters f;

	ht_filters_default(&f);
	f.tgid_on = true;
	f.tgid = (__u32)getpid() + 1;
	LOAD(t, exits_tracer(VMX, &f));
	if (!ASSERT_MSG(exit_for(t, VMX, VMX_IO, 0, 1000, 100) == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(read_series(t) == 0 && ngot == 0, "another process's filter counted %zu series", ngot))
		goto cleanup;

	f.tgid = (__u32)getpid();
	f.vcpu_on = true;
	f.vcpu = 1;
	LOAD(t2, exits_tracer(VMX, &f));
	for (__u32 v = 0; v < 3; v++) {
		if (!ASSERT_MSG(exit_for(t2, VMX, VMX_IO, v, 1000, 100 + v) == 0, "events"))
			goto cleanup;
	}
	if (!ASSERT_MSG(read_series(t2) == 0, "read"))
		goto cleanup;
	if (!ASSERT_EQ(ngot, 1, "value"))
		goto cleanup;
	if (!ASSERT_EQ(got[0].key.vcpu, 1, "value"))
		goto cleanup;
	ASSERT_EQ(got[0].h.total_ns, 101, "value");
cleanup:
	ht_tracer_destroy(t);
	ht_tracer_destroy(t2);
}

static void note_candidate(void *ctx, __u32 tgid, bool fresh)
{
	__u32 *fresh_tgid = ctx;

	if (fresh)
		*fresh_tgid = tgid;
}

/*
 * record --exits --vm NAME: a VM that makes no hypercall is still found by
 * its exits (a candidate for user space to match by name), and counted once
 * traced.
 */
static void a_followed_vm_is_found_by_any_exit(void)
{
	struct ht_tracer *t = NULL;
	struct ht_filters f;
	__u32 fresh = 0;

	ht_filters_default(&f);
	f.tgid_on = true;
	f.tgid = 0; /* --vm NAME before its process is known */
	LOAD(t, exits_tracer(VMX, &f));
	if (!ASSERT_MSG(exit_for(t, VMX, VMX_IO, 0, 1000, 100) == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(read_series(t) == 0 && ngot == 0, "an untraced process counted %zu series", ngot))
		goto cleanup;
	if (!ASSERT_MSG(ht_tracer_vm_candidates(t, note_candidate, &fresh) == 1 && fresh == (__u32)getpid(),
			"candidate %u, want this process %u", fresh, (__u32)getpid()))
		goto cleanup;
	if (!ASSERT_MSG(ht_tracer_trace_tgid(t, (__u32)getpid(), true) == 0, "trace"))
		goto cleanup;
	if (!ASSERT_MSG(exit_for(t, VMX, VMX_IO, 0, 2000, 200) == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(read_series(t) == 0, "read"))
		goto cleanup;
	if (!ASSERT_EQ(ngot, 1, "value"))
		goto cleanup;
	ASSERT_EQ(got[0].h.total_ns, 200, "value");
cleanup:
	ht_tracer_destroy(t);
}

/* Sums over CPUs: a vCPU thread that migrates adds to one series; min and max are over all CPUs. */
static void a_series_is_summed_over_cpus(void)
{
	struct ht_tracer *t = NULL;
	const struct ht_exit_hist *h;
	cpu_set_t all, one;
	int ret = 0;

	if (libbpf_num_possible_cpus() < 2)
		SKIP("one CPU");
	sched_getaffinity(0, sizeof(all), &all);
	LOAD(t, exits_tracer(SVM, NULL));
	for (int cpu = 0; cpu < 2; cpu++) {
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		sched_setaffinity(0, sizeof(one), &one);
		ret |= exit_for(t, SVM, SVM_IO, 0, 1000, cpu ? 7 : 70);
	}
	sched_setaffinity(0, sizeof(all), &all);
	if (!ASSERT_MSG(ret == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(read_series(t) == 0, "read"))
		goto cleanup;
	h = find((__u32)getpid(), 0, SVM, SVM_IO);
	ASSERT_MSG(h && h->count == 2 && h->min_ns == 7 && h->max_ns == 70 && h->total_ns == 77, "summed series");
cleanup:
	ht_tracer_destroy(t);
}

/*
 * More series than a CPU's table holds (or than its probes reach): the rest
 * are counted in the per-CPU hash map, and a read gives every one exactly.
 * The map allocates a new series' per-CPU memory from a cache that the
 * kernel refills asynchronously: hundreds of new series within a
 * millisecond on one CPU, as a loop of synthetic events makes them, can find
 * it empty (such exits are lost and counted as series full, seen on a
 * loaded host). New series come a few per millisecond here, the pace of
 * the busiest real VM start.
 */
static void more_series_than_a_cpus_table_are_all_counted(void)
{
	const unsigned int n = HT_EXIT_CACHE_WAYS + 200;
	struct ht_tracer *t = NULL;
	size_t wrong = 0;
	int ret = 0;

	LOAD(t, exits_tracer(SVM, NULL));
	for (unsigned int i = 0; i < n && !ret; i++) {
		if (i % 8 == 0)
			usleep(1000);
		for (unsigned int k = 0; k <= i % 3 && !ret; k++)
			ret = exit_for(t, SVM, 0x1000 + i, (__u32)(i % 7), 1000, 100 + i);
	}
	if (!ASSERT_MSG(ret == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(read_series(t) == 0, "read"))
		goto cleanup;
	if (!ASSERT_EQ(ngot, n, "value"))
		goto cleanup;
	for (size_t i = 0; i < ngot && i < MAX_SERIES; i++) {
		const struct series *g = &got[i];
		unsigned int k = g->key.reason - 0x1000;
		if (g->key.vcpu != k % 7 || g->h.count != k % 3 + 1 || g->h.min_ns != 100 + k)
			wrong++;
	}
	ASSERT_EQ(wrong, 0, "value");
cleanup:
	ht_tracer_destroy(t);
}

/*
 * A vCPU thread switched out between its exit and its entry (preempted
 * here) takes its open exit with it: its entry, wherever it comes, counts
 * the whole time in the host. Meanwhile another thread's exits on the CPU
 * are their own.
 */
static void an_exit_goes_with_its_thread_when_it_is_switched_out(void)
{
	__u32 me = (__u32)gettid(), pid = (__u32)getpid();
	struct ht_tracer *t = NULL;
	const struct ht_exit_hist *h;
	const struct ht_vcpu_wait *w;
	int ret;

	LOAD(t, exits_tracer(VMX, NULL));
	ret = ht_synth_switch(t, 1, 1, me, pid, false, 500); /* this thread runs here */
	ret = ret ?: ht_synth_exit_at(&layout, t, VMX, VMX_HLT, 3, 1000);
	ret = ret ?: ht_synth_switch(t, me, pid, 4242, 4242, true, 1100);
	ret = ret ?: ht_synth_switch(t, 4242, 4242, me, pid, false, 1600);
	ret = ret ?: ht_synth_entry_at(&layout, t, 3, 2000);
	if (!ASSERT_MSG(ret == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(read_series(t) == 0, "read"))
		goto cleanup;
	if (!ASSERT_EQ(ngot, 1, "value"))
		goto cleanup;
	h = find(pid, 3, VMX, VMX_HLT);
	if (!ASSERT_MSG(h && h->count == 1 && h->total_ns == 1000, "the exit's time in the host"))
		goto cleanup;
	w = wait_of(t, me);
	if (!ASSERT_MSG(w != NULL, "the switched-out thread is not a vCPU thread"))
		goto cleanup;
	if (!ASSERT_EQ(w->pid, pid, "value"))
		goto cleanup;
	if (!ASSERT_EQ(w->vcpu, 3, "value"))
		goto cleanup;
	if (!ASSERT_EQ(w->preempt_count, 1, "value"))
		goto cleanup;
	if (!ASSERT_EQ(w->preempt_ns, 500, "value"))
		goto cleanup;
	if (!ASSERT_EQ(w->wait_ns, 500, "value"))
		goto cleanup;
	if (!ASSERT_EQ(w->voluntary_count, 0, "value"))
		goto cleanup;
	ASSERT_MSG(wait_of(t, 4242) == NULL, "a thread without exits became a vCPU thread");
cleanup:
	ht_tracer_destroy(t);
}

/* A counter of t's programs; UINT64_MAX if unreadable. */
static __u64 counter_of(struct ht_tracer *t, int which)
{
	__u64 c[HT_CNT_MAX];

	return ht_tracer_counters(t, c) ? UINT64_MAX : c[which];
}

/*
 * Some kernels do not report every switch (one of them never reports a
 * switch from one CPU's idle task): here this thread is switched out, and
 * its switch back in is never seen. Its next exit is its own all the same:
 * counted with its time, none lost, its wait ended at that exit, and the
 * switch put right is counted.
 */
static void an_exit_after_an_unseen_switch_in_is_counted(void)
{
	__u32 me = (__u32)gettid(), pid = (__u32)getpid();
	struct ht_tracer *t = NULL;
	const struct ht_exit_hist *h;
	const struct ht_vcpu_wait *w;
	int ret;

	LOAD(t, exits_tracer(VMX, NULL));
	ret = ht_synth_switch(t, 1, 1, me, pid, false, 100);
	ret = ret ?: ht_synth_exit_at(&layout, t, VMX, VMX_HLT, 3, 200); /* a vCPU thread from now on */
	ret = ret ?: ht_synth_entry_at(&layout, t, 3, 300);
	ret = ret ?: ht_synth_switch(t, me, pid, 4242, 4242, true, 600);
	/* 4242 -> me: not reported. */
	ret = ret ?: ht_synth_exit_at(&layout, t, VMX, VMX_HLT, 3, 1000);
	ret = ret ?: ht_synth_entry_at(&layout, t, 3, 2500);
	if (!ASSERT_MSG(ret == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(read_series(t) == 0, "read"))
		goto cleanup;
	h = find(pid, 3, VMX, VMX_HLT);
	if (!ASSERT_MSG(h && h->count == 2 && h->total_ns == 100 + 1500, "%llu exits, %llu ns in the host; want 2, 1600",
			h ? (unsigned long long)h->count : 0, h ? (unsigned long long)h->total_ns : 0))
		goto cleanup;
	if (!ASSERT_EQ(counter_of(t, HT_CNT_EXIT_NO_THREAD), 0, "exits lost"))
		goto cleanup;
	if (!ASSERT_EQ(counter_of(t, HT_CNT_UNREPORTED_SWITCH), 1, "switches put right"))
		goto cleanup;
	w = wait_of(t, me);
	if (!ASSERT_MSG(w != NULL, "this thread is not a vCPU thread"))
		goto cleanup;
	/* Preempted at 600; the programs see it running again at its exit, 1000. */
	if (!ASSERT_EQ(w->preempt_count, 1, "value"))
		goto cleanup;
	ASSERT_EQ(w->preempt_ns, 400, "value");
cleanup:
	ht_tracer_destroy(t);
}

static struct ht_tracer *other_tracer;
static int other_result;

/* Another vCPU thread of the process: an exit of vCPU 5 and its entry, on this CPU. */
static void *exit_and_enter_on_vcpu_5(void *unused)
{
	(void)unused;
	other_result = ht_synth_exit_at(&layout, other_tracer, VMX, VMX_IO, 5, 1200);
	other_result = other_result ?: ht_synth_entry_at(&layout, other_tracer, 5, 1300);
	return NULL;
}

/*
 * This thread exits and its switch out is not seen: another vCPU thread
 * runs on the CPU with the exit still open there. That thread's exit does
 * not overwrite it, and its entry does not take it: the open exit is kept
 * for this thread, whose entry later ends it. Both exits are counted with
 * their own times, none lost.
 */
static void an_exit_left_open_by_an_unseen_switch_out_stays_its_threads(void)
{
	__u32 me = (__u32)gettid(), pid = (__u32)getpid();
	struct ht_tracer *t = NULL;
	const struct ht_exit_hist *h;
	pthread_t th;
	int ret;

	LOAD(t, exits_tracer(VMX, NULL));
	other_tracer = t;
	ret = ht_synth_switch(t, 1, 1, me, pid, false, 500);
	ret = ret ?: ht_synth_exit_at(&layout, t, VMX, VMX_HLT, 3, 1000);
	if (!ASSERT_MSG(ret == 0, "events"))
		goto cleanup;
	/* me -> the other thread, and back: neither reported. The process runs on one CPU (see main). */
	pthread_create(&th, NULL, exit_and_enter_on_vcpu_5, NULL);
	pthread_join(th, NULL);
	ret = other_result ?: ht_synth_entry_at(&layout, t, 3, 2000);
	if (!ASSERT_MSG(ret == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(read_series(t) == 0, "read"))
		goto cleanup;
	h = find(pid, 3, VMX, VMX_HLT);
	if (!ASSERT_MSG(h && h->count == 1 && h->total_ns == 1000, "this thread's exit: %llu, %llu ns; want 1, 1000",
			h ? (unsigned long long)h->count : 0, h ? (unsigned long long)h->total_ns : 0))
		goto cleanup;
	h = find(pid, 5, VMX, VMX_IO);
	if (!ASSERT_MSG(h && h->count == 1 && h->total_ns == 100, "the other's exit: %llu, %llu ns; want 1, 100",
			h ? (unsigned long long)h->count : 0, h ? (unsigned long long)h->total_ns : 0))
		goto cleanup;
	ASSERT_EQ(counter_of(t, HT_CNT_EXIT_NO_THREAD), 0, "exits lost");
cleanup:
	ht_tracer_destroy(t);
}

/*
 * Waiting: from a wake-up or a preemption until switched in. Voluntary
 * switch-outs (blocked) count their whole time off the CPU as voluntary,
 * and only the part after the wake-up as waiting; a wake-up that finds the
 * thread still on its CPU starts no wait.
 */
/* The numbers a thread's halts must have, all at once (one message names every field). */
static bool halts_are(const struct ht_vcpu_halts *h, __u64 halts, __u64 polled, __u64 caught, __u64 caught_ns,
		      __u64 slept, __u64 slept_ns, __u32 poll_ns, __u32 poll_unknown)
{
	if (!ASSERT_MSG(h != NULL, "no halts read"))
		return false;
	return ASSERT_MSG(h->halts == halts && h->polled == polled && h->caught == caught && h->caught_ns == caught_ns &&
				  h->slept == slept && h->slept_ns == slept_ns && h->poll_ns == poll_ns &&
				  h->poll_unknown == poll_unknown,
			  "halts %llu polled %llu caught %llu (%llu ns) slept %llu (%llu ns) poll_ns %u unknown %u; want %llu %llu %llu (%llu) %llu (%llu) %u %u",
			  (unsigned long long)h->halts, (unsigned long long)h->polled, (unsigned long long)h->caught,
			  (unsigned long long)h->caught_ns, (unsigned long long)h->slept, (unsigned long long)h->slept_ns,
			  h->poll_ns, h->poll_unknown, (unsigned long long)halts, (unsigned long long)polled,
			  (unsigned long long)caught, (unsigned long long)caught_ns, (unsigned long long)slept,
			  (unsigned long long)slept_ns, poll_ns, poll_unknown);
}

/*
 * A vCPU's halts: polled while KVM's halt_poll_ns for it is not 0, caught
 * when the halt never slept, and the value in force followed from change to
 * change (kvm_halt_poll_ns: old for the halt it happens in, new for the
 * next); before any value is known a halt's polling is counted unknown,
 * never guessed. A halt of a thread not seen before is not its own.
 */
static void halts_count_polling_caught_and_slept_with_the_value_in_force(void)
{
	const __u32 T = 3000101, G = 3000100, STRANGER = 3000102;
	struct ht_tracer *t = NULL;
	int ret;

	LOAD(t, exits_tracer(SVM, NULL));
	ret = ht_synth_register(t, T, G, 0, true, 1);
	if (!ASSERT_OK(ret, "register") || !halts_are(halts_of(t, T), 0, 0, 0, 0, 0, 0, HT_HALT_POLL_NS_UNKNOWN, 0))
		goto cleanup;
	/* No value known (no entry read it yet), no change during it: unknown; it slept. */
	ret = ht_synth_halt(t, T, 5000, true, false, 0, 0);
	if (!ASSERT_OK(ret, "halt 1") ||
	    !halts_are(halts_of(t, T), 1, 0, 0, 0, 1, 5000, HT_HALT_POLL_NS_UNKNOWN, 1))
		goto cleanup;
	/* KVM grew it from 0 during this halt: this one did not poll, it did not sleep either. */
	ret = ht_synth_halt(t, T, 300, false, true, 10000, 0);
	if (!ASSERT_OK(ret, "halt 2") || !halts_are(halts_of(t, T), 2, 0, 0, 0, 1, 5000, 10000, 1))
		goto cleanup;
	/* Polled with 10000 and caught, no change. */
	ret = ht_synth_halt(t, T, 700, false, false, 0, 0);
	if (!ASSERT_OK(ret, "halt 3") || !halts_are(halts_of(t, T), 3, 1, 1, 700, 1, 5000, 10000, 1))
		goto cleanup;
	/*
	 * Polled with 10000, slept, and KVM shrank it to 0 at its end; it
	 * never switched out (woken before it did): all of it was polling.
	 */
	ret = ht_synth_halt(t, T, 90000, true, true, 0, 10000);
	if (!ASSERT_OK(ret, "halt 4") || !halts_are(halts_of(t, T), 4, 2, 1, 700, 2, 95000, 0, 1) ||
	    !ASSERT_EQ(halts_of(t, T)->slept_poll_ns, 90000, "the polling of halt 4, which never switched out"))
		goto cleanup;
	/* Not polled (0 in force): it did not sleep, yet polling caught nothing. */
	ret = ht_synth_halt(t, T, 200, false, false, 0, 0);
	if (!ASSERT_OK(ret, "halt 5") || !halts_are(halts_of(t, T), 5, 2, 1, 700, 2, 95000, 0, 1))
		goto cleanup;
	/* A thread no exit or entry showed: its halt began before it was seen. */
	ret = ht_synth_halt(t, STRANGER, 1000, true, false, 0, 0);
	if (!ASSERT_OK(ret, "stranger"))
		goto cleanup;
	ASSERT_MSG(halts_of(t, STRANGER) == NULL, "a thread seen only halting was followed");
cleanup:
	ht_tracer_destroy(t);
}

/* This thread (me, of pid) blocks at out_ns, is woken at wake_ns and runs again at in_ns; another ran meanwhile. */
static int sleeps(const struct ht_tracer *t, __u32 me, __u32 pid, __u64 out_ns, __u64 wake_ns, __u64 in_ns)
{
	const __u32 other = 77;
	int ret = ht_synth_switch(t, me, pid, other, other, false, out_ns);

	ret = ret ?: ht_synth_wakeup(t, me, wake_ns);
	return ret ?: ht_synth_switch(t, other, other, me, pid, false, in_ns);
}

/* A class of wake-ups is count, in all total ns of which wait ns, the longest max ns, slot holding all of them. */
static bool wake_class_is(const struct ht_vcpu_halts *h, int c, __u64 count, __u64 total, __u64 wait, __u64 max,
			  unsigned int slot)
{
	const struct ht_vcpu_wake_hist *k;
	__u64 n = 0;

	if (!ASSERT_MSG(h != NULL, "no halts read"))
		return false;
	k = &h->wake.c[c];
	for (unsigned int i = 0; i < HT_WAKE_SLOTS; i++)
		n += k->slots[i];
	return ASSERT_MSG(n == count && k->slots[slot] == count && k->total_ns == total && k->wait_ns == wait &&
				  k->max_ns == max,
			  "class %d: %llu wake-ups (%llu in slot %u), %llu ns of which %llu waiting, longest %llu; want %llu, %llu, %llu, %llu",
			  c, (unsigned long long)n, (unsigned long long)k->slots[slot], slot,
			  (unsigned long long)k->total_ns, (unsigned long long)k->wait_ns, (unsigned long long)k->max_ns,
			  (unsigned long long)count, (unsigned long long)total, (unsigned long long)wait,
			  (unsigned long long)max);
}

/*
 * A halted thread's wake-up runs from its sched_wakeup to its entry; its
 * wait is the account's wait in between (preemptions after the switch-in
 * too); its class is the first vector KVM injected: the timer's (the
 * synthetic vCPUs' is HT_SYNTH_TIMER_VECTOR), another, or none. One that
 * blocks again before its entry is reblocked, in no class; a thread woken
 * from a block that is no halt has no wake-up.
 */
static void a_wake_up_from_a_halt_is_timed_to_its_entry_by_its_vector(void)
{
	const __u32 me = (__u32)gettid(), pid = (__u32)getpid(), OTHER = 77;
	const struct ht_vcpu_halts *h;
	struct ht_tracer *t = NULL;
	int ret;

	LOAD(t, exits_tracer(SVM, NULL));
	/* The timer's: 700 ns, 300 + 200 of them waiting; the second injection is not the wake-up's. */
	ret = ht_synth_exit_at(&layout, t, SVM, HT_SVM_EXIT_CODE_HLT, 0, 1000);
	ret = ret ?: ht_synth_switch(t, me, pid, OTHER, OTHER, false, 1100); /* halted */
	ret = ret ?: ht_synth_inj_virq(t, me, 0x31);                         /* no wake-up going on: not one's */
	ret = ret ?: ht_synth_wakeup(t, me, 2000);
	ret = ret ?: ht_synth_switch(t, OTHER, OTHER, me, pid, false, 2300);
	ret = ret ?: ht_synth_inj_virq(t, me, HT_SYNTH_TIMER_VECTOR);
	ret = ret ?: ht_synth_switch(t, me, pid, OTHER, OTHER, true, 2400);  /* preempted: still waking */
	ret = ret ?: ht_synth_switch(t, OTHER, OTHER, me, pid, false, 2600);
	ret = ret ?: ht_synth_inj_virq(t, me, 0x30);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 2700);
	if (!ASSERT_OK(ret, "events 1"))
		goto cleanup;
	h = halts_of(t, me);
	if (!wake_class_is(h, HT_WAKE_TIMER, 1, 700, 500, 700, 9) || !wake_class_is(h, HT_WAKE_VECTOR, 0, 0, 0, 0, 0) ||
	    !wake_class_is(h, HT_WAKE_NONE, 0, 0, 0, 0, 0))
		goto cleanup;
	/* Another vector: 100 ns, 50 waiting. */
	ret = ht_synth_exit_at(&layout, t, SVM, HT_SVM_EXIT_CODE_HLT, 0, 3000);
	ret = ret ?: ht_synth_switch(t, me, pid, OTHER, OTHER, false, 3100);
	ret = ret ?: ht_synth_wakeup(t, me, 5000);
	ret = ret ?: ht_synth_switch(t, OTHER, OTHER, me, pid, false, 5050);
	ret = ret ?: ht_synth_inj_virq(t, me, 0xfd);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 5100);
	/* Woken, blocked again in the halt (reblocked), woken again with no injection: 30 ns, 10 waiting. */
	ret = ret ?: ht_synth_exit_at(&layout, t, SVM, HT_SVM_EXIT_CODE_HLT, 0, 6000);
	ret = ret ?: sleeps(t, me, pid, 6100, 7000, 7100);
	ret = ret ?: sleeps(t, me, pid, 7200, 8000, 8010);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 8030);
	/* Blocked in the VMM after an I/O exit: its wake-up is no halt's. */
	ret = ret ?: ht_synth_exit_at(&layout, t, SVM, SVM_IO, 0, 9000);
	ret = ret ?: ht_synth_userspace_exit_at(t, KVM_EXIT_MMIO, 9100);
	ret = ret ?: ht_synth_switch(t, me, pid, OTHER, OTHER, false, 9200);
	ret = ret ?: ht_synth_wakeup(t, me, 9500);
	ret = ret ?: ht_synth_switch(t, OTHER, OTHER, me, pid, false, 9600);
	ret = ret ?: ht_synth_inj_virq(t, me, 0x40);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 9700);
	if (!ASSERT_OK(ret, "events 2"))
		goto cleanup;
	h = halts_of(t, me);
	if (wake_class_is(h, HT_WAKE_TIMER, 1, 700, 500, 700, 9) && wake_class_is(h, HT_WAKE_VECTOR, 1, 100, 50, 100, 6) &&
	    wake_class_is(h, HT_WAKE_NONE, 1, 30, 10, 30, 4))
		ASSERT_EQ(h->wake.reblocked, 1, "reblocked");
cleanup:
	ht_tracer_destroy(t);
}

/*
 * The polling of a halt that slept: from the halt's start (its end minus
 * its ns) to its first switch-out into the sleep, preemptions during the
 * polling included (KVM's halt_poll_fail_ns runs on its clock); a second
 * sleep of the same halt (woken, nothing to run, blocked again) is not
 * polling. A halt that never switched out burned all of it. A sleep in the
 * VMM (KVM_EXIT_HLT) is no halt in KVM: it leaves nothing for the next.
 */
static void a_slept_halts_polling_ends_at_its_first_sleep(void)
{
	const __u32 me = (__u32)gettid(), pid = (__u32)getpid(), OTHER = 77;
	struct ht_tracer *t = NULL;
	int ret;

	LOAD(t, exits_tracer(SVM, NULL));
	/* A first halt, with no polling, in which KVM grows halt_poll_ns to 10000: the later ones poll. */
	ret = ht_synth_exit_at(&layout, t, SVM, HT_SVM_EXIT_CODE_HLT, 0, 1000);
	ret = ret ?: ht_synth_halt(t, me, 100, false, true, 10000, 0);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 1200);
	/* From 3100: preempted while polling, polls on, sleeps at 3400, reblocks once, ends at 6100. */
	ret = ret ?: ht_synth_exit_at(&layout, t, SVM, HT_SVM_EXIT_CODE_HLT, 0, 3000);
	ret = ret ?: ht_synth_switch(t, me, pid, OTHER, OTHER, true, 3150);
	ret = ret ?: ht_synth_switch(t, OTHER, OTHER, me, pid, false, 3250);
	ret = ret ?: sleeps(t, me, pid, 3400, 5000, 5100);
	ret = ret ?: sleeps(t, me, pid, 5200, 6000, 6050);
	ret = ret ?: ht_synth_halt_at(t, me, 3000, true, 6100);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 6200);
	if (!ASSERT_OK(ret, "events 1"))
		goto cleanup;
	if (!halts_are(halts_of(t, me), 2, 1, 0, 0, 1, 3000, 10000, 0) ||
	    !ASSERT_EQ(halts_of(t, me)->slept_poll_ns, 300, "from 3100 to the sleep at 3400"))
		goto cleanup;
	/* Slept in the VMM (KVM handed it the halt), then a halt in KVM woken before it switched out: 200 ns, all polling. */
	ret = ht_synth_exit_at(&layout, t, SVM, HT_SVM_EXIT_CODE_HLT, 0, 8000);
	ret = ret ?: ht_synth_userspace_exit_at(t, KVM_EXIT_HLT, 8050);
	ret = ret ?: sleeps(t, me, pid, 8100, 8500, 8600);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 8700);
	ret = ret ?: ht_synth_exit_at(&layout, t, SVM, HT_SVM_EXIT_CODE_HLT, 0, 9200);
	ret = ret ?: ht_synth_halt_at(t, me, 200, true, 9500);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 9600);
	if (!ASSERT_OK(ret, "events 2"))
		goto cleanup;
	if (halts_are(halts_of(t, me), 3, 2, 0, 0, 2, 3200, 10000, 0))
		ASSERT_EQ(halts_of(t, me)->slept_poll_ns, 500, "300, then 200 of a halt that never switched out");
cleanup:
	ht_tracer_destroy(t);
}

static void vcpu_threads_wait_from_wakeup_or_preemption_until_switched_in(void)
{
	const __u32 T = 3000001, G = 3000000, OTHER = 77;
	struct ht_tracer *t = NULL;
	const struct ht_vcpu_wait *w;
	int ret;

	LOAD(t, exits_tracer(SVM, NULL));
	ret = ht_synth_register(t, T, G, 5, true, 1);
	ret = ret ?: ht_synth_switch(t, T, G, OTHER, OTHER, false, 100); /* blocks */
	ret = ret ?: ht_synth_wakeup(t, T, 250);
	ret = ret ?: ht_synth_switch(t, OTHER, OTHER, T, G, false, 400);
	if (!ASSERT_MSG(ret == 0, "events"))
		goto cleanup;
	w = wait_of(t, T);
	if (!ASSERT_MSG(w != NULL, "not registered"))
		goto cleanup;
	if (!ASSERT_EQ(w->pid, G, "value"))
		goto cleanup;
	if (!ASSERT_EQ(w->vcpu, 5, "value"))
		goto cleanup;
	if (!ASSERT_EQ(w->voluntary_count, 1, "value"))
		goto cleanup;
	if (!ASSERT_EQ(w->voluntary_ns, 300, "value"))
		goto cleanup;
	if (!ASSERT_EQ(w->wait_ns, 150, "value"))
		goto cleanup;
	if (!ASSERT_EQ(w->preempt_count, 0, "value"))
		goto cleanup;

	ret = ht_synth_switch(t, T, G, OTHER, OTHER, true, 500); /* preempted */
	ret = ret ?: ht_synth_wakeup(t, T, 600);                 /* not blocked: no new wait start */
	ret = ret ?: ht_synth_switch(t, OTHER, OTHER, T, G, false, 900);
	if (!ASSERT_MSG(ret == 0, "events"))
		goto cleanup;
	w = wait_of(t, T);
	if (!ASSERT_EQ(w->preempt_count, 1, "value"))
		goto cleanup;
	if (!ASSERT_EQ(w->preempt_ns, 400, "value"))
		goto cleanup;
	if (!ASSERT_EQ(w->wait_ns, 550, "value"))
		goto cleanup;

	ret = ht_synth_wakeup(t, T, 1000);                         /* still on its CPU */
	ret = ret ?: ht_synth_switch(t, T, G, OTHER, OTHER, false, 1100); /* then blocks */
	ret = ret ?: ht_synth_switch(t, OTHER, OTHER, T, G, false, 1200); /* and runs: no wake-up seen */
	if (!ASSERT_MSG(ret == 0, "events"))
		goto cleanup;
	w = wait_of(t, T);
	if (!ASSERT_EQ(w->wait_ns, 550, "value"))
		goto cleanup;
	if (!ASSERT_EQ(w->voluntary_count, 2, "value"))
		goto cleanup;
	if (!ASSERT_EQ(w->voluntary_ns, 400, "value"))
		goto cleanup;
	/* Threads that are not vCPU threads are not followed. */
	if (!ASSERT_MSG(wait_of(t, OTHER) == NULL, "the other thread was followed"))
		goto cleanup;
	ASSERT_EQ(nwaits, 1, "value");
cleanup:
	ht_tracer_destroy(t);
}

/* record -p/--vcpu: the sampler keeps the selected VM's vCPU threads only (BPF follows them all). */
static void the_sampler_keeps_the_selected_vcpu_threads(void)
{
	struct ht_exit_sampler sm = { 0 }; /* freeing one never initialized is a no-op */
	struct ht_tracer *t = NULL;
	struct ht_filters f;

	LOAD(t, exits_tracer(SVM, NULL));
	if (!ASSERT_MSG(ht_synth_register(t, 3100001, 3100000, 0, true, 1) == 0 &&
				ht_synth_register(t, 3200001, 3200000, 1, true, 1) == 0,
			"register"))
		goto cleanup;
	ht_filters_default(&f);
	f.tgid_on = true;
	f.tgid = 3200000;
	if (!ASSERT_MSG(ht_exit_sampler_init(&sm, t, NULL, 1) == 0, "init"))
		goto cleanup;
	sm.filters = &f;
	if (!ASSERT_MSG(ht_exit_sampler_sample(&sm, 2, false) == 0, "sample"))
		goto cleanup;
	if (!ASSERT_EQ(sm.total.nthreads, 1, "value"))
		goto cleanup;
	ASSERT_EQ(sm.total.threads[0].w.tid, 3200001, "value");
cleanup:
	ht_exit_sampler_free(&sm);
	ht_tracer_destroy(t);
}

/* What record reads at the end: exits whose entry has not come. */
static struct ht_exit_key open_keys[4];
static size_t nopen;

static void keep_open(void *ctx, const struct ht_exit_key *k)
{
	(void)ctx;
	if (nopen < ARRAY_SIZE(open_keys))
		open_keys[nopen] = *k;
	nopen++;
}

static void open_exits_are_read_after_the_end(void)
{
	struct ht_tracer *t = NULL;

	LOAD(t, exits_tracer(SVM, NULL));
	if (!ASSERT_MSG(ht_synth_exit_at(&layout, t, SVM, 0x78 /* hlt */, 1, 1000) == 0, "exit"))
		goto cleanup;
	nopen = 0;
	if (!ASSERT_MSG(ht_tracer_read_open_exits(t, keep_open, NULL) == 0, "read"))
		goto cleanup;
	if (!ASSERT_EQ(nopen, 1, "value"))
		goto cleanup;
	if (!ASSERT_EQ(open_keys[0].pid, (__u64)getpid(), "value"))
		goto cleanup;
	if (!ASSERT_EQ(open_keys[0].vcpu, 1, "value"))
		goto cleanup;
	if (!ASSERT_EQ(open_keys[0].isa, SVM, "value"))
		goto cleanup;
	ASSERT_EQ(open_keys[0].reason, 0x78, "value");
cleanup:
	ht_tracer_destroy(t);
}

/* A hypercall with --exits: the same fused record, and one exit of reason VMCALL. */
static void a_hypercall_with_exits_on_is_still_one_fused_record(void)
{
	char dir[] = "/tmp/ht-exits-XXXXXX", path[64] = "", err[512];
	struct ht_recording rec = { 0 };
	struct ht_tracer *t = NULL;
	struct ht_writer *w = NULL;
	struct ht_reader *r = NULL;
	const struct ht_exit_hist *h;
	struct ht_file_header hdr;
	struct ht_trailer trailer;
	struct ht_record one;
	char *tmpdir = NULL;
	int n = 0, ret;

	LOAD(t, exits_tracer(VMX, NULL));
	if (!ASSERT_MSG(ht_synth_exit(&layout, t, VMX, HT_VMX_EXIT_REASON_VMCALL, 0x1000, 0) == 0, "exit"))
		goto cleanup;
	if (!ASSERT_MSG(ht_synth_hypercall(&layout, t, 1000, 1, 2, 3, 4) == 0, "hypercall"))
		goto cleanup;
	if (!ASSERT_MSG(ht_synth_entry(&layout, t, 0, 0x1003) == 0, "entry"))
		goto cleanup;
	if (!ASSERT_MSG(read_series(t) == 0, "read"))
		goto cleanup;
	h = find((__u32)getpid(), 0, VMX, HT_VMX_EXIT_REASON_VMCALL);
	if (!ASSERT_MSG(h && h->count == 1, "the hypercall's exit was not counted"))
		goto cleanup;
	tmpdir = mkdtemp(dir);
	if (!ASSERT_MSG(tmpdir != NULL, "mkdtemp"))
		goto cleanup;
	snprintf(path, sizeof(path), "%s/t.htr", tmpdir);
	ht_header_init(&hdr);
	/* The recording owns the writer from its init on, even if that fails; a failed finish frees it. */
	ret = ht_writer_open(path, true, &hdr, &w, err, sizeof(err));
	ret = ret ?: ht_recording_init(&rec, t, w);
	ret = ret ?: ht_recording_finish(&rec, &trailer);
	ret = ret ?: ht_reader_open(path, &r, err, sizeof(err));
	if (!ASSERT_MSG(ret == 0, "recording: %s", strerror(-ret)))
		goto cleanup;
	while (ht_reader_next(r, &one) == 1)
		n++;
	if (!ASSERT_EQ(n, 1, "value"))
		goto cleanup;
	if (!ASSERT_EQ(one.a3, 4, "value"))
		goto cleanup;
	ASSERT_EQ(one.nr, 1000, "value");
cleanup:
	ht_reader_close(r);
	ht_recording_abandon(&rec); /* nothing left after a finish */
	if (tmpdir) {
		unlink(path);
		rmdir(tmpdir);
	}
	ht_tracer_destroy(t);
}

/*
 * A hypercall whose window (exit to entry) spans real switches: the thread
 * sleeps armed, so sched_switch moves its fusion state out and back in, and
 * its open exit out into its vcpu_thread_table entry. Coming back must bring the
 * fusion state only: the exit went with the thread, and a stale copy of it
 * in the slot would be handed to whichever thread is switched out next,
 * making that thread (the idle task, a kernel thread, any) a vCPU thread of
 * this VM with an exit that never ends. One exit, one record, one vCPU
 * thread, nothing left open.
 */
static void a_hypercall_armed_across_real_switches_leaves_no_exit_behind(void)
{
	__u32 me = (__u32)gettid(), pid = (__u32)getpid();
	struct ht_tracer *t = NULL;
	const struct ht_exit_hist *h;
	char err[512];
	int ret;

	LOAD(t, exits_tracer(SVM, NULL));
	if (!ASSERT_MSG(ht_tracer_attach(t, err, sizeof(err)) == 0, "%s", err)) /* the real switches */
		goto cleanup;
	ret = ht_synth_exit(&layout, t, SVM, HT_SVM_EXIT_CODE_VMMCALL, 0x1000, 1);
	for (int i = 0; i < 3 && !ret; i++)
		usleep(2000); /* switched out armed, and in again */
	ret = ret ?: ht_synth_hypercall(&layout, t, 1000, 1, 2, 3, 4);
	ret = ret ?: ht_synth_entry(&layout, t, 1, 0x1003);
	if (!ASSERT_MSG(ret == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(read_series(t) == 0, "read"))
		goto cleanup;
	if (!ASSERT_EQ(ngot, 1, "value"))
		goto cleanup;
	h = find(pid, 1, SVM, HT_SVM_EXIT_CODE_VMMCALL);
	if (!ASSERT_MSG(h && h->count == 1, "the hypercall's exit was not counted once"))
		goto cleanup;
	nopen = 0;
	if (!ASSERT_MSG(ht_tracer_read_open_exits(t, keep_open, NULL) == 0, "read open exits"))
		goto cleanup;
	if (!ASSERT_MSG(nopen == 0, "%zu exits left open, the first of pid %u vCPU %u", nopen, open_keys[0].pid,
			(unsigned int)open_keys[0].vcpu))
		goto cleanup;
	nwaits = 0;
	ht_tracer_read_vcpu_waits(t, keep_wait, NULL);
	ASSERT_MSG(nwaits == 1 && waits[0].tid == me, "%zu vCPU threads, the first tid %u; want only this thread (%u)",
		   nwaits, nwaits ? waits[0].tid : 0, me);
cleanup:
	ht_tracer_destroy(t);
}

static int thread_result;

static void *exit_then_block_then_die(void *tracer)
{
	/* An exit left open, then a real switch (the sleep) makes this a vCPU thread. */
	thread_result = ht_synth_exit_at(&layout, tracer, SVM, 0x78, 0, 1000);
	usleep(2000);
	return (void *)(long)gettid();
}

/* A vCPU thread that exits leaves no entry behind (its thread id may come back as any thread's). */
static void a_vcpu_thread_that_exits_is_forgotten(void)
{
	const struct ht_vcpu_wait *w = NULL;
	struct ht_tracer *t = NULL;
	char err[512];
	pthread_t th;
	void *tid;

	LOAD(t, exits_tracer(SVM, NULL));
	if (!ASSERT_MSG(ht_tracer_attach(t, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	pthread_create(&th, NULL, exit_then_block_then_die, t);
	pthread_join(th, &tid);
	if (!ASSERT_MSG(thread_result == 0, "exit event"))
		goto cleanup;
	/* sched_process_exit fires just after the join can return: give it up to a second. */
	for (int i = 0; i < 1000 && (w = wait_of(t, (__u32)(long)tid)); i++)
		usleep(1000);
	ASSERT_MSG(w == NULL, "the dead thread is still a vCPU thread");
cleanup:
	ht_tracer_destroy(t); /* detaches the programs first */
}

/* The account read now of thread tid (its wait entry too), or NULL. */
static const struct ht_vcpu_account *account_of(struct ht_tracer *t, __u32 tid, bool *gone)
{
	nwaits = 0;
	ht_tracer_read_vcpu_waits(t, keep_wait, NULL);
	for (size_t i = 0; i < nwaits && i < MAX_WAITS; i++)
		if (waits[i].tid == tid) {
			*gone = gones[i];
			return &accounts[i];
		}
	return NULL;
}

/* The states of an account add up to its span: to the nanosecond. */
static bool adds_up(const struct ht_vcpu_account *a)
{
	__u64 sum = 0;

	for (int k = 0; k < HT_VCPU_NSTATES; k++)
		sum += a->state_ns[k];
	return ASSERT_EQ(sum, a->as_of_ns - a->start_ns, "the states add up to the wall clock");
}

/*
 * The vCPU account: one vCPU thread through every state, each transition at
 * a time the test gives. Guest from entry to exit, kvm from exit to entry or
 * to the return to user space, vmm from there to the entry, halted when it
 * blocks in a halt exit, blocked when it blocks otherwise, wait when it is
 * runnable off its CPU (woken, or preempted); a switch-in resumes what it
 * left. The state it is in when read runs up to the read.
 */
static void the_account_puts_each_nanosecond_in_one_state(void)
{
	const __u32 me = (__u32)gettid(), pid = (__u32)getpid(), OTHER = 77;
	const struct ht_vcpu_account *a;
	struct ht_tracer *t = NULL;
	bool gone = true;
	int ret;

	LOAD(t, exits_tracer(SVM, NULL));
	ret = ht_synth_exit_at(&layout, t, SVM, SVM_IO, 0, 1000);           /* first seen: kvm */
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 1300);                 /* kvm 300 */
	ret = ret ?: ht_synth_exit_at(&layout, t, SVM, SVM_IO, 0, 1500);     /* guest 200 */
	ret = ret ?: ht_synth_userspace_exit_at(t, KVM_EXIT_IO, 1600);                    /* kvm 100 */
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 2000);                 /* vmm 400 */
	ret = ret ?: ht_synth_exit_at(&layout, t, SVM, HT_SVM_EXIT_CODE_HLT, 0, 2100); /* guest 100 */
	ret = ret ?: ht_synth_switch(t, me, pid, OTHER, OTHER, false, 2200); /* kvm 100, then halted */
	ret = ret ?: ht_synth_wakeup(t, me, 3200);                           /* halted 1000, then wait */
	ret = ret ?: ht_synth_switch(t, OTHER, OTHER, me, pid, false, 3500); /* wait 300, back in kvm */
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 3600);                 /* kvm 100 */
	ret = ret ?: ht_synth_exit_at(&layout, t, SVM, SVM_IO, 0, 3700);     /* guest 100 */
	ret = ret ?: ht_synth_switch(t, me, pid, OTHER, OTHER, true, 3800);  /* kvm 100, preempted: wait */
	ret = ret ?: ht_synth_switch(t, OTHER, OTHER, me, pid, false, 4000); /* wait 200, back in kvm */
	ret = ret ?: ht_synth_userspace_exit_at(t, KVM_EXIT_MMIO, 4100);                    /* kvm 100 */
	ret = ret ?: ht_synth_switch(t, me, pid, OTHER, OTHER, false, 4200); /* vmm 100, then blocked (no halt) */
	ret = ret ?: ht_synth_wakeup(t, me, 4500);                           /* blocked 300, then wait */
	ret = ret ?: ht_synth_switch(t, OTHER, OTHER, me, pid, false, 4600); /* wait 100, back in vmm */
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 4700);                 /* vmm 100, guest from here */
	if (!ASSERT_OK(ret, "events"))
		goto cleanup;
	a = account_of(t, me, &gone);
	if (!ASSERT_OK_PTR(a, "the thread has an account") || !ASSERT_FALSE(gone, "running, not gone"))
		goto cleanup;
	if (!ASSERT_EQ(a->start_ns, 1000, "first seen at its first exit") ||
	    !ASSERT_EQ(a->state_ns[HT_VCPU_KVM], 800, "kvm") || !ASSERT_EQ(a->state_ns[HT_VCPU_VMM], 600, "vmm") ||
	    !ASSERT_EQ(a->state_ns[HT_VCPU_WAIT], 600, "wait") ||
	    !ASSERT_EQ(a->state_ns[HT_VCPU_HALTED], 1000, "halted") ||
	    !ASSERT_EQ(a->state_ns[HT_VCPU_BLOCKED], 300, "blocked") ||
	    !ASSERT_EQ(a->state_ns[HT_VCPU_GUEST], 400 + (a->as_of_ns - 4700), "guest, up to the read"))
		goto cleanup;
	if (!adds_up(a))
		goto cleanup;
	/* The waiting statistics are the account's wait. */
	if (!ASSERT_EQ(waits[0].wait_ns, 600, "wait_ns is the account's wait"))
		goto cleanup;
	/* Read while an exit is open: guest until the exit, kvm from there to the read. */
	if (!ASSERT_OK(ht_synth_exit_at(&layout, t, SVM, SVM_IO, 0, 4800), "exit"))
		goto cleanup;
	a = account_of(t, me, &gone);
	if (!ASSERT_OK_PTR(a, "the thread") || !ASSERT_EQ(a->state_ns[HT_VCPU_GUEST], 500, "guest until the open exit") ||
	    !ASSERT_EQ(a->state_ns[HT_VCPU_KVM], 800 + (a->as_of_ns - 4800), "kvm from the open exit to the read"))
		goto cleanup;
	adds_up(a);
cleanup:
	ht_tracer_destroy(t);
}

/*
 * Halted is blocking in a halt: in KVM's own halt, or in the VMM after KVM
 * handed it the halt (KVM_EXIT_HLT). A thread that went back to the VMM
 * for something else (a signal: its VM stopped) and blocks there is
 * blocked, whatever exit it left open.
 */
static void a_vcpu_blocked_in_the_vmm_is_halted_only_in_a_halt(void)
{
	const __u32 me = (__u32)gettid(), pid = (__u32)getpid(), OTHER = 77;
	const struct ht_vcpu_account *a;
	struct ht_tracer *t = NULL;
	bool gone;
	int ret;

	LOAD(t, exits_tracer(SVM, NULL));
	ret = ht_synth_exit_at(&layout, t, SVM, HT_SVM_EXIT_CODE_HLT, 0, 1000);
	ret = ret ?: ht_synth_userspace_exit_at(t, KVM_EXIT_INTR, 1100);     /* a signal, not the halt */
	ret = ret ?: ht_synth_switch(t, me, pid, OTHER, OTHER, false, 1200); /* stopped in the VMM: blocked */
	ret = ret ?: ht_synth_switch(t, OTHER, OTHER, me, pid, false, 1500);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 1600);
	ret = ret ?: ht_synth_exit_at(&layout, t, SVM, HT_SVM_EXIT_CODE_HLT, 0, 1700);
	ret = ret ?: ht_synth_userspace_exit_at(t, KVM_EXIT_HLT, 1800);      /* the VMM halts it */
	ret = ret ?: ht_synth_switch(t, me, pid, OTHER, OTHER, false, 1900); /* halted */
	ret = ret ?: ht_synth_switch(t, OTHER, OTHER, me, pid, false, 2600);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 2700);
	if (!ASSERT_OK(ret, "events"))
		goto cleanup;
	a = account_of(t, me, &gone);
	if (ASSERT_OK_PTR(a, "the thread") && ASSERT_EQ(a->state_ns[HT_VCPU_BLOCKED], 300, "blocked after a signal") &&
	    ASSERT_EQ(a->state_ns[HT_VCPU_HALTED], 700, "halted in the VMM's halt"))
		adds_up(a);
cleanup:
	ht_tracer_destroy(t);
}

/* A thread that makes a halt exit and ends (exit_then_die). */
struct dying_vcpu {
	struct ht_tracer *tracer;
	bool to_user_space; /* the halt goes on to user space, where the thread ends: as a VMM stopping a vCPU does */
};

static void *exit_then_die(void *arg)
{
	const struct dying_vcpu *d = arg;

	/*
	 * The events take the kernel's clock (time 0), as real ones do: the
	 * thread's real switches are traced, and a busy host may preempt it
	 * anywhere in the sequence, so every event must be in one time order
	 * with them.
	 */
	thread_result = ht_synth_exit_at(&layout, d->tracer, SVM, HT_SVM_EXIT_CODE_HLT, 1, 0);
	if (!thread_result && d->to_user_space)
		thread_result = ht_synth_userspace_exit_at(d->tracer, KVM_EXIT_HLT, 0);
	return (void *)(long)gettid();
}

/*
 * Every exit the kernel reports is counted: a vCPU thread's last exit,
 * whose entry never comes because the thread ends, is counted when it ends,
 * with its time in the host until then; its account closes there and is
 * read once more, gone, with its states adding up to its life.
 *
 * The thread's end is real (sched_process_exit) and so are its switches:
 * the account's parts depend on where the scheduler preempted it, so the
 * test checks what holds wherever that was (the exact states of each
 * transition are checked with synthetic times above).
 */
static void a_thread_that_ends_keeps_its_last_exit_and_account(void)
{
	const struct ht_vcpu_account *a = NULL;
	const struct ht_exit_hist *h;
	struct ht_tracer *t = NULL;
	bool gone = false;
	char err[512];
	struct dying_vcpu d = { .to_user_space = true };
	pthread_t th;
	void *tid;

	LOAD(t, exits_tracer(SVM, NULL));
	if (!ASSERT_MSG(ht_tracer_attach(t, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	d.tracer = t;
	if (!ASSERT_OK(pthread_create(&th, NULL, exit_then_die, &d), "thread") ||
	    !ASSERT_OK(pthread_join(th, &tid), "join") || !ASSERT_OK(thread_result, "events"))
		goto cleanup;
	/* sched_process_exit fires just after the join can return: give it up to a second. */
	for (int i = 0; i < 1000; i++) {
		a = account_of(t, (__u32)(long)tid, &gone);
		if (!a || gone)
			break;
		usleep(1000);
	}
	if (!ASSERT_OK_PTR(a, "the ended thread is read once more") || !ASSERT_TRUE(gone, "marked gone"))
		goto cleanup;
	/*
	 * kvm from the exit to user space, vmm from there to its end; wait if
	 * the host preempted it, halted if it blocked after the VMM's halt.
	 * Never guest (no entry), never blocked outside a halt.
	 */
	if (!ASSERT_TRUE(a->state_ns[HT_VCPU_KVM] > 0, "kvm until it went to user space") ||
	    !ASSERT_TRUE(a->state_ns[HT_VCPU_VMM] > 0, "vmm from there until it ended") ||
	    !ASSERT_EQ(a->state_ns[HT_VCPU_GUEST] + a->state_ns[HT_VCPU_BLOCKED], 0, "neither guest nor blocked") ||
	    !adds_up(a))
		goto cleanup;
	if (!ASSERT_MSG(account_of(t, (__u32)(long)tid, &gone) == NULL, "read once gone, then forgotten"))
		goto cleanup;
	if (!ASSERT_OK(read_series(t), "read"))
		goto cleanup;
	h = find((__u32)getpid(), 1, SVM, HT_SVM_EXIT_CODE_HLT);
	if (!ASSERT_OK_PTR(h, "the last exit's series") || !ASSERT_EQ(h->count, 1, "the last exit counted"))
		goto cleanup;
	ASSERT_EQ(h->total_ns, a->as_of_ns - a->start_ns, "its time in the host: until the thread ended");
cleanup:
	ht_tracer_destroy(t);
}

/* VM process tgid's share of the vCPU thread table as BPF has it; threads UINT32_MAX if it has none. */
static struct ht_vm_share thread_share_of(const struct ht_tracer *t, __u32 tgid)
{
	struct ht_vm_share share = { .threads = UINT32_MAX };

	bpf_map__lookup_elem(t->skel->maps.vm_shares, &tgid, sizeof(tgid), &share, sizeof(share), 0);
	return share;
}

/*
 * A VM's vCPU threads take at most a quarter of the table (its share,
 * limits.h): a VM with more threads has the rest refused and counted, its
 * exits lost, while another VM still gets entries; a thread that ends gives
 * its share back, so the VM can register a new one. The end is a real
 * thread's (sched_process_exit).
 */
static void a_vms_vcpu_threads_stop_at_its_share_and_give_it_back(void)
{
	enum { SIZE = 256, SHARE = SIZE >> HT_VCPU_THREADS_PER_VM_SHIFT, MORE = 36 };
	const __u32 other = 4500000, me = (__u32)getpid();
	struct ht_tracer_opts o = { .isa = SVM, .synthetic = true, .synthetic_switches_only = true, .exits = true,
				    .ringbuf_bytes = 1 << 20, .vcpu_threads = SIZE };
	struct ht_exit_sampler sm = { 0 }; /* freeing one never initialized is a no-op */
	struct ht_tracer *t = NULL;
	unsigned int taken = 0, others = 0;
	char err[512];
	struct dying_vcpu d = { 0 };
	pthread_t th;
	void *tid;

	ht_filters_default(&o.filters);
	LOAD(t, ht_kernel_test_tracer(&o));
	if (!ASSERT_MSG(ht_tracer_attach(t, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	d.tracer = t;
	/* This process is a VM: all of its share but one to made-up threads, the last to a real one that ends. */
	for (__u32 i = 0; i < SHARE - 1; i++)
		taken += ht_synth_register(t, 4400001 + i, me, i, true, 1) == 0;
	if (!ASSERT_EQ(taken, SHARE - 1, "threads with an entry") ||
	    !ASSERT_OK(pthread_create(&th, NULL, exit_then_die, &d), "thread") ||
	    !ASSERT_OK(pthread_join(th, &tid), "join") || !ASSERT_OK(thread_result, "events"))
		goto cleanup;
	/* sched_process_exit fires just after the join can return: give it up to a second. */
	for (int i = 0; i < 1000 && thread_share_of(t, me).threads != SHARE - 1; i++)
		usleep(1000);
	if (!ASSERT_EQ(thread_share_of(t, me).threads, SHARE - 1, "the ended thread's share given back") ||
	    !ASSERT_EQ(counter_of(t, HT_CNT_EXIT_NO_THREAD), 0, "no exit lost"))
		goto cleanup;
	/* Then the VM has room for one more thread, not for the others: refused, counted. */
	taken = 0;
	for (__u32 i = 0; i < 1 + MORE; i++)
		taken += ht_synth_register(t, 4410001 + i, me, i, true, 1) == 0;
	for (__u32 i = 0; i < 10; i++)
		others += ht_synth_register(t, 4500001 + i, other, i, true, 1) == 0;
	printf("    %u of %d more threads of a VM with one free in its share registered, %u of 10 of another VM\n", taken,
	       1 + MORE, others);
	if (!ASSERT_EQ(taken, 1, "threads with an entry") ||
	    !ASSERT_EQ(thread_share_of(t, me).threads, SHARE, "its share taken") ||
	    !ASSERT_EQ(thread_share_of(t, me).threads_over, MORE, "refusals counted") ||
	    !ASSERT_EQ(others, 10, "the other VM's threads with an entry") ||
	    !ASSERT_EQ(thread_share_of(t, other).threads, 10, "the other VM's share"))
		goto cleanup;
	/* A real thread beyond the share: its exit is lost, and counted twice: in the totals and in its VM's excess. */
	if (!ASSERT_OK(pthread_create(&th, NULL, exit_then_die, &d), "thread") ||
	    !ASSERT_OK(pthread_join(th, &tid), "join") || !ASSERT_OK(thread_result, "events"))
		goto cleanup;
	if (!ASSERT_EQ(counter_of(t, HT_CNT_EXIT_NO_THREAD), 1, "its exit lost") ||
	    !ASSERT_EQ(thread_share_of(t, me).threads_over, MORE + 1, "and counted in its VM's excess"))
		goto cleanup;
	/* As record reads it: the VM's excess, and the total the metrics show. */
	if (!ASSERT_OK(ht_exit_sampler_init(&sm, t, NULL, 1), "sampler") ||
	    !ASSERT_OK(ht_exit_sampler_sample(&sm, 2, false), "sample"))
		goto cleanup;
	if (ASSERT_EQ(sm.nexcess, 1, "one VM past its share"))
		ASSERT_MSG(sm.excess[0].pid == me && sm.excess[0].threads_over == MORE + 1 &&
				   sm.total.share_threads_over == MORE + 1,
			   "VM %u: %llu refused, %llu in all", sm.excess[0].pid,
			   (unsigned long long)sm.excess[0].threads_over, (unsigned long long)sm.total.share_threads_over);
cleanup:
	ht_exit_sampler_free(&sm);
	ht_tracer_destroy(t);
}

/* The causes of exits, read as record reads them. */
#define MAX_CAUSES 256
struct cause {
	struct ht_exit_cause_key key;
	struct ht_exit_cause_hist h;
};
static struct cause causes[MAX_CAUSES];
static size_t ncauses;

static void keep_cause(void *ctx, const struct ht_exit_cause_key *key, const struct ht_exit_cause_hist *h)
{
	(void)ctx;
	if (ncauses < MAX_CAUSES) {
		causes[ncauses].key = *key;
		causes[ncauses].h = *h;
	}
	ncauses++;
}

static int read_causes(struct ht_tracer *t)
{
	ncauses = 0;
	return ht_tracer_read_exit_causes(t, keep_cause, NULL);
}

static const struct ht_exit_cause_hist *cause_of(__u32 reason, __u8 kind, __u64 value, __u32 detail)
{
	for (size_t i = 0; i < ncauses && i < MAX_CAUSES; i++) {
		const struct ht_exit_cause_key *k = &causes[i].key;

		if (k->pid == (__u32)getpid() && k->reason == reason && k->kind == kind && k->value == value &&
		    k->detail == detail)
			return &causes[i].h;
	}
	return NULL;
}

#define VMX_EXTERNAL_INTERRUPT 1
#define VMX_CPUID 10
#define VMX_VMCALL 18
#define VMX_MSR_READ 31
#define VMX_MSR_WRITE 32
#define VMX_EPT_MISCONFIG 49
#define PIO(dir, size) ((dir) | (size) << 8)

#define SVM_CPUID 0x72
#define SVM_MSR 0x7c
#define SVM_UD 0x46 /* SVM_EXIT_EXCP_BASE + UD_VECTOR */
#define SVM_INTR 0x60

/* The exits' causes not theirs counted so far (HT_CNT_EXIT_CAUSE_NOT_ITS); UINT64_MAX if unreadable. */
static __u64 causes_not_theirs(struct ht_tracer *t)
{
	__u64 c[HT_CNT_MAX];

	return ht_tracer_counters(t, c) ? UINT64_MAX : c[HT_CNT_EXIT_CAUSE_NOT_ITS];
}

/* A cause's numbers: count, time in KVM, and in the VMM (exits that went there, their time). */
static bool cause_is(const struct ht_exit_cause_hist *h, const char *what, __u64 count, __u64 kvm_ns,
		     __u64 vmm_count, __u64 vmm_ns)
{
	return ASSERT_MSG(h != NULL, "%s: no cause", what) &&
	       ASSERT_MSG(h->count == count && h->kvm_ns == kvm_ns && h->vmm_count == vmm_count && h->vmm_ns == vmm_ns,
			  "%s: count %llu kvm %llu ns vmm %llu/%llu ns; want %llu, %llu, %llu/%llu", what,
			  (unsigned long long)h->count, (unsigned long long)h->kvm_ns, (unsigned long long)h->vmm_count,
			  (unsigned long long)h->vmm_ns, (unsigned long long)count, (unsigned long long)kvm_ns,
			  (unsigned long long)vmm_count, (unsigned long long)vmm_ns);
}

/*
 * Each tracepoint KVM fires while handling an exit names the exit's cause:
 * counted per (VM, reason, cause), with the time in KVM up to the return to
 * user space (or to the entry) and the time in the VMM from there to the
 * entry, in log2 buckets. An exit with no such event has no cause; an
 * event with no open exit is no one's.
 */
static void each_cause_is_counted_with_its_time_in_kvm_and_in_the_vmm(void)
{
	const struct ht_exit_cause_hist *h;
	struct ht_tracer *t = NULL;
	int ret;

	LOAD(t, exits_tracer(VMX, NULL));
	/* outb to 0x80, to user space: 400 ns in KVM, 600 in the VMM. */
	ret = ht_synth_exit_at(&layout, t, VMX, VMX_IO, 0, 1000);
	ret = ret ?: ht_synth_pio(&layout, t, 1, 0x80, 1);
	ret = ret ?: ht_synth_userspace_exit_at(t, KVM_EXIT_IO, 1400);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 2000);
	/* Again, handled in KVM: 100 ns. */
	ret = ret ?: ht_synth_exit_at(&layout, t, VMX, VMX_IO, 0, 3000);
	ret = ret ?: ht_synth_pio(&layout, t, 1, 0x80, 1);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 3100);
	/* inb from 0x3f8: another cause of the same reason. */
	ret = ret ?: ht_synth_exit_at(&layout, t, VMX, VMX_IO, 0, 4000);
	ret = ret ?: ht_synth_pio(&layout, t, 0, 0x3f8, 1);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 4010);
	/* wrmsr 0x6e0 (TSC deadline) and rdmsr 0x1b (APIC base). */
	ret = ret ?: ht_synth_exit_at(&layout, t, VMX, VMX_MSR_WRITE, 0, 5000);
	ret = ret ?: ht_synth_msr(&layout, t, 1, 0x6e0);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 5050);
	ret = ret ?: ht_synth_exit_at(&layout, t, VMX, VMX_MSR_READ, 0, 6000);
	ret = ret ?: ht_synth_msr(&layout, t, 0, 0x1b);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 6020);
	/* cpuid leaf 0xd subleaf 1; leaf 1, whose ECX means nothing, whatever the guest left in it. */
	ret = ret ?: ht_synth_exit_at(&layout, t, VMX, VMX_CPUID, 0, 7000);
	ret = ret ?: ht_synth_cpuid(&layout, t, 0xd, 1);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 7030);
	ret = ret ?: ht_synth_exit_at(&layout, t, VMX, VMX_CPUID, 0, 7100);
	ret = ret ?: ht_synth_cpuid(&layout, t, 1, 0x444d4163);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 7110);
	ret = ret ?: ht_synth_exit_at(&layout, t, VMX, VMX_CPUID, 0, 7200);
	ret = ret ?: ht_synth_cpuid(&layout, t, 1, 7);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 7210);
	/* An MMIO read through user space: KVM reports it unsatisfied, then read; one exit, a read. */
	ret = ret ?: ht_synth_exit_at(&layout, t, VMX, VMX_EPT_MISCONFIG, 0, 8000);
	ret = ret ?: ht_synth_mmio(&layout, t, 0, 4, 0xfebf1000);
	ret = ret ?: ht_synth_userspace_exit_at(t, KVM_EXIT_MMIO, 8100);
	ret = ret ?: ht_synth_mmio(&layout, t, 1, 4, 0xfebf1000);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 9100);
	/* An MMIO write handled in KVM. */
	ret = ret ?: ht_synth_exit_at(&layout, t, VMX, VMX_EPT_MISCONFIG, 0, 10000);
	ret = ret ?: ht_synth_mmio(&layout, t, 2, 8, 0xfee000b0);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 10070);
	/* No cause: an external interrupt. And an event after the entry: no exit is open. */
	ret = ret ?: ht_synth_exit_at(&layout, t, VMX, VMX_EXTERNAL_INTERRUPT, 0, 11000);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 11005);
	ret = ret ?: ht_synth_pio(&layout, t, 1, 0x70, 1);
	/* A hypercall's nr. */
	ret = ret ?: ht_synth_exit_at(&layout, t, VMX, VMX_VMCALL, 0, 12000);
	ret = ret ?: ht_synth_hypercall(&layout, t, 1042, 0, 0, 0, 0);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 12500);
	if (!ASSERT_OK(ret, "events") || !ASSERT_OK(read_causes(t), "read"))
		goto cleanup;
	if (!ASSERT_EQ(ncauses, 9, "causes"))
		goto cleanup;
	h = cause_of(VMX_IO, HT_CAUSE_PIO, 0x80, PIO(HT_CAUSE_DIR_OUT, 1));
	if (!cause_is(h, "outb 0x80", 2, 400 + 100, 1, 600) ||
	    !ASSERT_EQ(h->kvm_slots[8], 1, "400 ns: slot 8") || !ASSERT_EQ(h->kvm_slots[6], 1, "100 ns: slot 6") ||
	    !ASSERT_EQ(h->vmm_slots[9], 1, "600 ns: slot 9"))
		goto cleanup;
	if (!cause_is(cause_of(VMX_IO, HT_CAUSE_PIO, 0x3f8, PIO(HT_CAUSE_DIR_IN, 1)), "inb 0x3f8", 1, 10, 0, 0) ||
	    !cause_is(cause_of(VMX_MSR_WRITE, HT_CAUSE_MSR, 0x6e0, HT_CAUSE_DIR_OUT), "wrmsr", 1, 50, 0, 0) ||
	    !cause_is(cause_of(VMX_MSR_READ, HT_CAUSE_MSR, 0x1b, HT_CAUSE_DIR_IN), "rdmsr", 1, 20, 0, 0) ||
	    !cause_is(cause_of(VMX_CPUID, HT_CAUSE_CPUID, 0xd, 1), "cpuid", 1, 30, 0, 0) ||
	    !cause_is(cause_of(VMX_CPUID, HT_CAUSE_CPUID, 1, 0), "cpuid leaf 1, any ECX", 2, 20, 0, 0) ||
	    !cause_is(cause_of(VMX_EPT_MISCONFIG, HT_CAUSE_MMIO, 0xfebf1000, PIO(HT_CAUSE_DIR_IN, 4)), "mmio read", 1,
		      100, 1, 1000) ||
	    !cause_is(cause_of(VMX_EPT_MISCONFIG, HT_CAUSE_MMIO, 0xfee000b0, PIO(HT_CAUSE_DIR_OUT, 8)), "mmio write",
		      1, 70, 0, 0))
		goto cleanup;
	cause_is(cause_of(VMX_VMCALL, HT_CAUSE_HYPERCALL, 1042, 0), "hypercall", 1, 500, 0, 0);
cleanup:
	ht_tracer_destroy(t);
}

/*
 * A (VM, reason) names HT_EXIT_CAUSES_PER_REASON causes, the first seen;
 * the exits of any cause after them are counted together as its "other"
 * cause, while the named ones go on counting. Another reason has a bound of
 * its own. Nothing is lost.
 */
static void a_reasons_causes_beyond_the_bound_are_counted_as_other(void)
{
	const unsigned int ports = HT_EXIT_CAUSES_PER_REASON + 5;
	struct ht_tracer *t = NULL;
	__u64 c[HT_CNT_MAX], at = 1000;
	size_t named = 0;
	int ret = 0;

	LOAD(t, exits_tracer(VMX, NULL));
	for (unsigned int i = 0; i < ports && !ret; i++, at += 1000) {
		ret = ht_synth_exit_at(&layout, t, VMX, VMX_IO, 0, at);
		ret = ret ?: ht_synth_pio(&layout, t, 1, 0x100 + i, 2);
		ret = ret ?: ht_synth_entry_at(&layout, t, 0, at + 10);
	}
	/* The first port once more: still its own. */
	ret = ret ?: ht_synth_exit_at(&layout, t, VMX, VMX_IO, 0, at);
	ret = ret ?: ht_synth_pio(&layout, t, 1, 0x100, 2);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, at + 10);
	ret = ret ?: ht_synth_exit_at(&layout, t, VMX, VMX_MSR_WRITE, 0, at + 1000);
	ret = ret ?: ht_synth_msr(&layout, t, 1, 0x10);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, at + 1010);
	if (!ASSERT_OK(ret, "events") || !ASSERT_OK(read_causes(t), "read"))
		goto cleanup;
	for (unsigned int i = 0; i < HT_EXIT_CAUSES_PER_REASON; i++)
		named += cause_of(VMX_IO, HT_CAUSE_PIO, 0x100 + i, PIO(HT_CAUSE_DIR_OUT, 2)) != NULL;
	if (!ASSERT_EQ(named, HT_EXIT_CAUSES_PER_REASON, "the first causes are named") ||
	    !ASSERT_EQ(ncauses, HT_EXIT_CAUSES_PER_REASON + 2, "named, other, and the msr") ||
	    !cause_is(cause_of(VMX_IO, HT_CAUSE_PIO, 0x100, PIO(HT_CAUSE_DIR_OUT, 2)), "the first port", 2, 20, 0, 0) ||
	    !cause_is(cause_of(VMX_IO, HT_CAUSE_OTHER, 0, 0), "other", 5, 50, 0, 0) ||
	    !cause_is(cause_of(VMX_MSR_WRITE, HT_CAUSE_MSR, 0x10, HT_CAUSE_DIR_OUT), "another reason's", 1, 10, 0, 0))
		goto cleanup;
	if (ASSERT_OK(ht_tracer_counters(t, c), "counters"))
		ASSERT_EQ(c[HT_CNT_EXIT_CAUSE_LOST], 0, "nothing lost");
cleanup:
	ht_tracer_destroy(t);
}

/* A thread switched out in the VMM takes its exit's cause along: counted at its entry on its return. */
static void a_cause_goes_with_its_thread_when_it_is_switched_out(void)
{
	__u32 me = (__u32)gettid(), pid = (__u32)getpid();
	struct ht_tracer *t = NULL;
	int ret;

	LOAD(t, exits_tracer(VMX, NULL));
	ret = ht_synth_switch(t, 1, 1, me, pid, false, 500);
	ret = ret ?: ht_synth_exit_at(&layout, t, VMX, VMX_IO, 3, 1000);
	ret = ret ?: ht_synth_pio(&layout, t, 1, 0x510, 2);
	ret = ret ?: ht_synth_userspace_exit_at(t, KVM_EXIT_IO, 1050);
	ret = ret ?: ht_synth_switch(t, me, pid, 4242, 4242, true, 1100);
	/* Another thread's exit on the CPU meanwhile has no cause of this one. */
	ret = ret ?: ht_synth_switch(t, 4242, 4242, me, pid, false, 1600);
	ret = ret ?: ht_synth_entry_at(&layout, t, 3, 2000);
	if (!ASSERT_OK(ret, "events") || !ASSERT_OK(read_causes(t), "read") || !ASSERT_EQ(ncauses, 1, "causes"))
		goto cleanup;
	cause_is(cause_of(VMX_IO, HT_CAUSE_PIO, 0x510, PIO(HT_CAUSE_DIR_OUT, 2)), "outw 0x510", 1, 50, 1, 950);
cleanup:
	ht_tracer_destroy(t);
}

/* With -p: the causes of another process's exits are not counted. */
static void an_untraced_vms_causes_are_not_counted(void)
{
	struct ht_tracer *t = NULL;
	struct ht_filters f;
	int ret;

	ht_filters_default(&f);
	f.tgid_on = true;
	f.tgid = (__u32)getpid() + 1;
	LOAD(t, exits_tracer(VMX, &f));
	ret = ht_synth_exit_at(&layout, t, VMX, VMX_IO, 0, 1000);
	ret = ret ?: ht_synth_pio(&layout, t, 1, 0x80, 1);
	ret = ret ?: ht_synth_cpuid(&layout, t, 0, 0);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 1100);
	if (ASSERT_OK(ret, "events") && ASSERT_OK(read_causes(t), "read") && ASSERT_EQ(ncauses, 0, "causes"))
		ASSERT_EQ(causes_not_theirs(t), 0, "nor what was seen during them");
cleanup:
	ht_tracer_destroy(t);
}

/*
 * KVM's own CPUID lookup inside an I/O exit, as in a real boot: SVM's
 * io_interception emulates a string instruction (kvm_emulate_instruction),
 * and x86_emulate_insn's string_registers_quirk asks for leaf 0 (the
 * vendor) when a REP string instruction with 32-bit addresses finds ECX 0.
 * After a port, the lookup does not replace it; with no port at all (the
 * zero count does no I/O) the exit has no cause. Both lookups are counted
 * apart, and no cpuid is anyone's cause.
 */
static void kvms_own_cpuid_lookup_is_not_an_io_exits_cause(void)
{
	__u32 me = (__u32)gettid(), pid = (__u32)getpid();
	struct ht_tracer *t = NULL;
	int ret;

	LOAD(t, exits_tracer(SVM, NULL));
	ret = ht_synth_switch(t, 1, 1, me, pid, false, 500);
	ret = ret ?: ht_synth_exit_at(&layout, t, SVM, SVM_IO, 0, 1000);
	ret = ret ?: ht_synth_pio(&layout, t, 0, 0x511, 1);
	ret = ret ?: ht_synth_cpuid(&layout, t, 0, 0);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 1100);
	/* rep insb with ECX 0: the lookup alone. */
	ret = ret ?: ht_synth_exit_at(&layout, t, SVM, SVM_IO, 0, 2000);
	ret = ret ?: ht_synth_cpuid(&layout, t, 0, 0);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 2050);
	/* The thread switched out in the VMM and back: its exit's reason went with it. */
	ret = ret ?: ht_synth_exit_at(&layout, t, SVM, SVM_IO, 0, 3000);
	ret = ret ?: ht_synth_pio(&layout, t, 0, 0x511, 1);
	ret = ret ?: ht_synth_userspace_exit_at(t, KVM_EXIT_IO, 3050);
	ret = ret ?: ht_synth_switch(t, me, pid, 4242, 4242, true, 3100);
	ret = ret ?: ht_synth_switch(t, 4242, 4242, me, pid, false, 3600);
	ret = ret ?: ht_synth_cpuid(&layout, t, 0, 0);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 4000);
	if (!ASSERT_OK(ret, "events") || !ASSERT_OK(read_causes(t), "read"))
		goto cleanup;
	if (!cause_is(cause_of(SVM_IO, HT_CAUSE_PIO, 0x511, PIO(HT_CAUSE_DIR_IN, 1)), "the port stays the cause", 2,
		      100 + 50, 1, 950) ||
	    !ASSERT_EQ(cause_of(SVM_IO, HT_CAUSE_CPUID, 0, 0), NULL, "the lookup is no exit's cause") ||
	    !ASSERT_EQ(ncauses, 1, "one cause: the port"))
		goto cleanup;
	ASSERT_EQ(causes_not_theirs(t), 3, "the lookups counted apart");
cleanup:
	ht_tracer_destroy(t);
}

/*
 * An MSR seen during an exit it cannot have caused: after a port on a VMX
 * I/O exit it leaves the port the cause, and on an interrupt exit it makes
 * none. Counted apart.
 */
static void an_msr_in_an_unrelated_exit_is_counted_apart(void)
{
	struct ht_tracer *t = NULL;
	int ret;

	LOAD(t, exits_tracer(VMX, NULL));
	ret = ht_synth_exit_at(&layout, t, VMX, VMX_IO, 0, 1000);
	ret = ret ?: ht_synth_pio(&layout, t, 1, 0x80, 1);
	ret = ret ?: ht_synth_msr(&layout, t, 0, 0x10);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 1030);
	ret = ret ?: ht_synth_exit_at(&layout, t, VMX, VMX_EXTERNAL_INTERRUPT, 0, 2000);
	ret = ret ?: ht_synth_msr(&layout, t, 1, 0x6e0);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 2010);
	if (!ASSERT_OK(ret, "events") || !ASSERT_OK(read_causes(t), "read"))
		goto cleanup;
	if (!cause_is(cause_of(VMX_IO, HT_CAUSE_PIO, 0x80, PIO(HT_CAUSE_DIR_OUT, 1)), "outb 0x80", 1, 30, 0, 0) ||
	    !ASSERT_EQ(ncauses, 1, "no msr cause"))
		goto cleanup;
	ASSERT_EQ(causes_not_theirs(t), 2, "both msrs counted apart");
cleanup:
	ht_tracer_destroy(t);
}

/*
 * A kind that can be its exit's cause is still counted as its cause, and
 * the last such one wins: a CPUID exit's leaf, an MSR exit's MSR on SVM,
 * an MSR of an instruction KVM emulates on a #UD, an NPF's address, and
 * the port of an I/O exit after the memory of its emulated `rep insb`
 * (kvm_mmio from the emulator's write-back), which is no cause of it.
 */
static void a_cause_whose_kind_fits_its_exit_still_counts(void)
{
	struct ht_tracer *t = NULL;
	int ret;

	LOAD(t, exits_tracer(SVM, NULL));
	ret = ht_synth_exit_at(&layout, t, SVM, SVM_CPUID, 0, 1000);
	ret = ret ?: ht_synth_cpuid(&layout, t, 0xd, 1);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 1010);
	ret = ret ?: ht_synth_exit_at(&layout, t, SVM, SVM_MSR, 0, 2000);
	ret = ret ?: ht_synth_msr(&layout, t, 1, 0xc0000103);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 2020);
	ret = ret ?: ht_synth_exit_at(&layout, t, SVM, SVM_UD, 0, 3000);
	ret = ret ?: ht_synth_msr(&layout, t, 0, 0x1b);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 3040);
	ret = ret ?: ht_synth_exit_at(&layout, t, SVM, SVM_NPF, 0, 4000);
	ret = ret ?: ht_synth_mmio(&layout, t, 2, 4, 0xfee00300);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 4080);
	ret = ret ?: ht_synth_exit_at(&layout, t, SVM, SVM_IO, 0, 5000);
	ret = ret ?: ht_synth_pio(&layout, t, 0, 0x1f0, 2);
	ret = ret ?: ht_synth_mmio(&layout, t, 2, 2, 0xfebf0000);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 5160);
	/* No cause of an interrupt's, whatever KVM says then. */
	ret = ret ?: ht_synth_exit_at(&layout, t, SVM, SVM_INTR, 0, 6000);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 6005);
	if (!ASSERT_OK(ret, "events") || !ASSERT_OK(read_causes(t), "read"))
		goto cleanup;
	if (!cause_is(cause_of(SVM_CPUID, HT_CAUSE_CPUID, 0xd, 1), "cpuid 0xd.1", 1, 10, 0, 0) ||
	    !cause_is(cause_of(SVM_MSR, HT_CAUSE_MSR, 0xc0000103, HT_CAUSE_DIR_OUT), "wrmsr TSC_AUX", 1, 20, 0, 0) ||
	    !cause_is(cause_of(SVM_UD, HT_CAUSE_MSR, 0x1b, HT_CAUSE_DIR_IN), "an emulated rdmsr", 1, 40, 0, 0) ||
	    !cause_is(cause_of(SVM_NPF, HT_CAUSE_MMIO, 0xfee00300, PIO(HT_CAUSE_DIR_OUT, 4)), "mmio write", 1, 80, 0,
		      0) ||
	    !cause_is(cause_of(SVM_IO, HT_CAUSE_PIO, 0x1f0, PIO(HT_CAUSE_DIR_IN, 2)), "insw 0x1f0", 1, 160, 0, 0) ||
	    !ASSERT_EQ(ncauses, 5, "causes"))
		goto cleanup;
	ASSERT_EQ(causes_not_theirs(t), 1, "the string's memory counted apart");
cleanup:
	ht_tracer_destroy(t);
}

static void *io_then_die(void *tracer)
{
	/* An I/O exit that goes to user space, and the thread ends there. */
	__u64 now = ht_monotonic_ns();

	thread_result = ht_synth_exit_at(&layout, tracer, VMX, VMX_IO, 1, now);
	thread_result = thread_result ?: ht_synth_pio(&layout, tracer, 1, 0x604, 2);
	thread_result = thread_result ?: ht_synth_userspace_exit_at(tracer, KVM_EXIT_IO, now + 10);
	return (void *)(long)gettid();
}

/* The cause of a vCPU thread's last exit, whose entry never comes: counted when the thread ends. */
static void a_thread_that_ends_keeps_its_last_exits_cause(void)
{
	const struct ht_exit_cause_hist *h = NULL;
	struct ht_tracer *t = NULL;
	char err[512];
	pthread_t th;
	void *tid;

	LOAD(t, exits_tracer(VMX, NULL));
	if (!ASSERT_MSG(ht_tracer_attach(t, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	pthread_create(&th, NULL, io_then_die, t);
	pthread_join(th, &tid);
	if (!ASSERT_OK(thread_result, "events"))
		goto cleanup;
	/* sched_process_exit fires just after the join can return: give it up to a second. */
	for (int i = 0; i < 1000 && !h; i++) {
		if (!ASSERT_OK(read_causes(t), "read"))
			goto cleanup;
		h = cause_of(VMX_IO, HT_CAUSE_PIO, 0x604, PIO(HT_CAUSE_DIR_OUT, 2));
		if (!h)
			usleep(1000);
	}
	if (ASSERT_OK_PTR(h, "the last exit's cause") && ASSERT_EQ(h->count, 1, "counted once") &&
	    ASSERT_EQ(h->kvm_ns, 10, "in KVM until it went to user space"))
		ASSERT_EQ(h->vmm_count, 1, "then in the VMM until the thread ended");
cleanup:
	ht_tracer_destroy(t);
}

/*
 * The per-thread tables of --exits are preallocated (tens of megabytes at
 * full size, zeroed at their creation): a recording without --exits creates
 * them with one entry each, one with --exits with an entry a vCPU thread of
 * the host's (ht_vcpu_threads_for), the VMs' shares at their own size.
 */
static void exits_tables_are_made_only_for_exits(void)
{
	int cpus = libbpf_num_possible_cpus();
	struct ht_tracer *t = NULL, *full = NULL;
	struct ht_tracer_opts o = { .isa = VMX, .synthetic = true, .ringbuf_bytes = 1 << 20 };
	struct bpf_map *small[HT_VCPU_THREAD_MAPS], *big[HT_VCPU_THREAD_MAPS];

	ht_filters_default(&o.filters);
	if (!ASSERT_OK_PTR(t = ht_kernel_test_tracer(&o), "tracer without --exits did not load"))
		goto cleanup;
	if (!ASSERT_OK_PTR(full = exits_tracer(VMX, NULL), "tracer with --exits did not load"))
		goto cleanup;
	ht_tracer_vcpu_thread_maps(t->skel, small);
	ht_tracer_vcpu_thread_maps(full->skel, big);
	for (size_t i = 0; i < ARRAY_SIZE(small); i++)
		if (!ASSERT_EQ(bpf_map__max_entries(small[i]), 1, bpf_map__name(small[i])) ||
		    !ASSERT_EQ(bpf_map__max_entries(big[i]), ht_vcpu_threads_for((unsigned int)cpus),
			       bpf_map__name(big[i])))
			goto cleanup;
	if (!ASSERT_EQ(bpf_map__max_entries(t->skel->maps.vm_shares), 1, "vm_shares without --exits"))
		goto cleanup;
	ASSERT_GE(bpf_map__max_entries(full->skel->maps.vm_shares), 4096, "vm_shares with --exits");
cleanup:
	ht_tracer_destroy(full);
	ht_tracer_destroy(t);
}

/*
 * record --vcpu-threads N: every per-thread table has N entries rounded up
 * to a power of two, and a thread's probes for a free entry stay among
 * them (the programs mask its hash with the size): more threads than
 * entries fill most of the table, each at an index below the size, and the
 * others are refused. Without the mask the probes of most threads would
 * fall past the end and find nothing.
 */
static void vcpu_threads_fill_a_table_of_the_size_asked(void)
{
	enum { ASKED = 300, SIZE = 512, THREADS = 600 };
	struct ht_tracer_opts o = { .isa = VMX, .synthetic = true, .synthetic_switches_only = true, .exits = true,
				    .ringbuf_bytes = 1 << 20, .vcpu_threads = ASKED };
	struct ht_tracer *t = NULL;
	struct bpf_map *maps[HT_VCPU_THREAD_MAPS];
	unsigned int taken = 0, marked = 0;

	ht_filters_default(&o.filters);
	LOAD(t, ht_kernel_test_tracer(&o));
	if (!ASSERT_EQ(ht_tracer_vcpu_threads(t), SIZE, "entries"))
		goto cleanup;
	ht_tracer_vcpu_thread_maps(t->skel, maps);
	for (size_t i = 0; i < ARRAY_SIZE(maps); i++)
		if (!ASSERT_EQ(bpf_map__max_entries(maps[i]), SIZE, bpf_map__name(maps[i])))
			goto cleanup;
	/* Of 8 VMs, each within its share (a quarter of the table). */
	for (__u32 i = 0; i < THREADS; i++)
		taken += ht_synth_register(t, 4100000 + i, 4200000 + i % 8, i, true, 1) == 0;
	for (size_t i = 0; i < HT_MAX_VCPU_THREADS; i++) {
		if (!t->vcpu_thread_used->used[i])
			continue;
		if (!ASSERT_MSG(i < SIZE, "a thread at index %zu of a table of %d", i, SIZE))
			goto cleanup;
		marked++;
	}
	printf("    %u of %d threads have an entry of %d\n", taken, THREADS, SIZE);
	if (ASSERT_EQ(marked, taken, "entries marked") && ASSERT_GE(taken, SIZE * 3 / 4, "threads with an entry"))
		ASSERT_LT(taken, THREADS, "threads with an entry");
cleanup:
	ht_tracer_destroy(t);
}

int main(void)
{
	ht_kernel_test_begin("exits", &layout, NULL);
	/*
	 * One CPU, and only the tests' own switches (exits_tracer): see
	 * ht_kernel_test_pin_here. The tests about real switches attach the
	 * sched programs themselves.
	 */
	ht_kernel_test_pin_here();
	RUN(an_exit_and_its_entry_count_one_exit_with_its_time_in_the_host);
	RUN(exits_tables_are_made_only_for_exits);
	RUN(vcpu_threads_fill_a_table_of_the_size_asked);
	RUN(times_fall_in_their_log2_buckets_at_both_edges);
	RUN(both_isas_vcpus_and_reasons_are_series_of_their_own);
	RUN(pid_and_vcpu_filters_select_exits);
	RUN(a_series_is_summed_over_cpus);
	RUN(more_series_than_a_cpus_table_are_all_counted);
	RUN(an_exit_goes_with_its_thread_when_it_is_switched_out);
	RUN(an_exit_after_an_unseen_switch_in_is_counted);
	RUN(an_exit_left_open_by_an_unseen_switch_out_stays_its_threads);
	RUN(vcpu_threads_wait_from_wakeup_or_preemption_until_switched_in);
	RUN(halts_count_polling_caught_and_slept_with_the_value_in_force);
	RUN(a_wake_up_from_a_halt_is_timed_to_its_entry_by_its_vector);
	RUN(a_slept_halts_polling_ends_at_its_first_sleep);
	RUN(the_sampler_keeps_the_selected_vcpu_threads);
	RUN(a_followed_vm_is_found_by_any_exit);
	RUN(open_exits_are_read_after_the_end);
	RUN(a_hypercall_with_exits_on_is_still_one_fused_record);
	RUN(a_hypercall_armed_across_real_switches_leaves_no_exit_behind);
	RUN(a_vcpu_thread_that_exits_is_forgotten);
	RUN(the_account_puts_each_nanosecond_in_one_state);
	RUN(a_thread_that_ends_keeps_its_last_exit_and_account);
	RUN(a_vms_vcpu_threads_stop_at_its_share_and_give_it_back);
	RUN(a_vcpu_blocked_in_the_vmm_is_halted_only_in_a_halt);
	RUN(each_cause_is_counted_with_its_time_in_kvm_and_in_the_vmm);
	RUN(a_reasons_causes_beyond_the_bound_are_counted_as_other);
	RUN(a_cause_goes_with_its_thread_when_it_is_switched_out);
	RUN(kvms_own_cpuid_lookup_is_not_an_io_exits_cause);
	RUN(an_msr_in_an_unrelated_exit_is_counted_apart);
	RUN(a_cause_whose_kind_fits_its_exit_still_counts);
	RUN(an_untraced_vms_causes_are_not_counted);
	RUN(a_thread_that_ends_keeps_its_last_exits_cause);
	return ht_test_exit_status();
}
