// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The real BPF handlers, fed synthetic kvm_exit/kvm_hypercall/kvm_entry events
 * through BPF_PROG_TEST_RUN. Records go through the real ring buffer, the real
 * drain and writer into a trace file, which the real reader checks record by
 * record. The calling thread plays the vCPU thread. Needs root.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "record/recording.h"
#include "kernel_test.h"
#include "synth.h"
#include "test.h"
#include "tracefile/trace_reader.h"
#include "record/tracer.h"
#include "common/util.h"

#define VMX HT_ISA_VMX
#define SVM HT_ISA_SVM
#define VMCALL 18
#define VMMCALL 0x81
#define VMX_EXTERNAL_INTERRUPT 1
#define VMX_IO_INSTRUCTION 30
#define SVM_NPF 0x400
#define MAX_RECORDS 4096

static struct ht_synth_layout layout;
static char tmpdir[] = "/tmp/ht-fusion-XXXXXX";

/* What one scenario left behind: the file's records and trailer. */
struct outcome {
	struct ht_record rec[MAX_RECORDS];
	size_t n;
	struct ht_trailer trailer;
	struct ht_read_status status;
};
static struct outcome out;

/* A tracer for one host ISA: its hot-path pre-filter is set for that ISA, as on a real host. */
static struct ht_tracer *tracer_with(int isa, const struct ht_filters *f, unsigned long ringbuf_bytes)
{
	struct ht_tracer_opts o = { .isa = isa, .synthetic = true, .ringbuf_bytes = ringbuf_bytes };

	if (f)
		o.filters = *f;
	else
		ht_filters_default(&o.filters);
	return ht_kernel_test_tracer(&o);
}

static struct ht_tracer *vmx_tracer(void)
{
	return tracer_with(VMX, NULL, HT_DEFAULT_RINGBUF_BYTES);
}

static struct ht_tracer *svm_tracer(void)
{
	return tracer_with(SVM, NULL, HT_DEFAULT_RINGBUF_BYTES);
}

/* Drains the ring buffer into a trace file and reads it back into `out`. */
static int collect(struct ht_tracer *t)
{
	struct ht_file_header hdr;
	struct ht_recording rec;
	struct ht_writer *w;
	struct ht_reader *r;
	char path[64], err[512];
	int ret;

	snprintf(path, sizeof(path), "%s/t.htr", tmpdir);
	ht_header_init(&hdr);
	if ((ret = ht_writer_open(path, true, &hdr, &w, err, sizeof(err)))) {
		printf("    %s\n", err);
		return ret;
	}
	/* The recording owns the writer from its init on, and a failed finish frees what it holds. */
	if ((ret = ht_recording_init(&rec, t, w)) || (ret = ht_recording_finish(&rec, &out.trailer))) {
		ht_recording_abandon(&rec);
		printf("    recording failed: %s\n", strerror(-ret));
		return ret;
	}
	if ((ret = ht_reader_open(path, &r, err, sizeof(err)))) {
		printf("    %s\n", err);
		return ret;
	}
	out.n = 0;
	while (out.n < MAX_RECORDS && ht_reader_next(r, &out.rec[out.n]) == 1)
		out.n++;
	out.status = *ht_reader_status(r);
	ht_reader_close(r);
	return 0;
}

/* What the counters say now: HT_CNT_* of tracer t. */
static __u64 counter(const struct ht_tracer *t, enum ht_counter which)
{
	__u64 c[HT_CNT_MAX];

	return ht_tracer_counters(t, c) ? ~0ull : c[which];
}

/* One whole hypercall on the calling thread. */
static int hypercall(struct ht_tracer *t, __u32 isa, __u32 reason, __u32 vcpu, __u64 nr, __u64 a0,
		     __u64 a1)
{
	int ret = ht_synth_exit(&layout, t, isa, reason, 0xffffffff81000000ull + a1, vcpu);

	if (!ret)
		ret = ht_synth_hypercall(&layout, t, nr, a0, a1, 0xa2a2a2a2, 0xa3a3a3a3);
	if (!ret)
		ret = ht_synth_entry(&layout, t, vcpu, 0xffffffff81000003ull + a1);
	return ret;
}

/* Tracer t (NULL until then) is loaded, or the test goes to the cleanup label that destroys it. */
#define LOAD(t, expr)                                                    \
	if (!ASSERT_OK_PTR((t) = (expr), "tracer did not load"))         \
		goto cleanup

#define COLLECT(t)                                                                   \
	if (!ASSERT_MSG(collect(t) == 0, "collecting the records failed")) \
		goto cleanup

static void vmx_hypercall_becomes_one_fused_record(void)
{
	struct ht_tracer *t = NULL;
	const struct ht_record *r;
	__u64 before, after;

	LOAD(t, vmx_tracer());
	before = ht_monotonic_ns();
	if (!ASSERT_MSG(ht_synth_exit(&layout, t, VMX, VMCALL, 0x7f001000, 3) == 0, "exit"))
		goto cleanup;
	if (!ASSERT_MSG(ht_tracer_armed_threads(t) == 1, "exit did not arm the thread"))
		goto cleanup;
	if (!ASSERT_MSG(ht_synth_hypercall(&layout, t, 1000, 0x11, 0x22, 0x33, 0x44) == 0, "hypercall"))
		goto cleanup;
	if (!ASSERT_MSG(ht_synth_entry(&layout, t, 3, 0x7f001003) == 0, "entry"))
		goto cleanup;
	after = ht_monotonic_ns();
	if (!ASSERT_MSG(ht_tracer_armed_threads(t) == 0, "entry did not disarm the thread"))
		goto cleanup;
	COLLECT(t);
	if (!ASSERT_EQ(out.n, 1, "value"))
		goto cleanup;
	r = &out.rec[0];
	if (!ASSERT_EQ(r->nr, 1000, "value"))
		goto cleanup;
	if (!ASSERT_EQ(r->a0, 0x11, "value"))
		goto cleanup;
	if (!ASSERT_EQ(r->a1, 0x22, "value"))
		goto cleanup;
	if (!ASSERT_EQ(r->a2, 0x33, "value"))
		goto cleanup;
	if (!ASSERT_EQ(r->a3, 0x44, "value"))
		goto cleanup;
	if (!ASSERT_EQ(r->guest_rip, 0x7f001000, "value"))
		goto cleanup;
	if (!ASSERT_EQ(r->vcpu_id, 3, "value"))
		goto cleanup;
	if (!ASSERT_EQ(r->isa, VMX, "value"))
		goto cleanup;
	if (!ASSERT_EQ(r->exit_reason, VMCALL, "value"))
		goto cleanup;
	if (!ASSERT_EQ(r->host_pid, (__u64)getpid(), "value"))
		goto cleanup;
	if (!ASSERT_EQ(r->host_tid, (__u64)gettid(), "value"))
		goto cleanup;
	if (!ASSERT_EQ(r->flags, 0, "value"))
		goto cleanup;
	if (!ASSERT_MSG(r->exit_ns >= before && r->exit_ns <= after, "exit_ns %llu outside [%llu, %llu]",
			(unsigned long long)r->exit_ns, (unsigned long long)before, (unsigned long long)after))
		goto cleanup;
	if (!ASSERT_MSG(r->exit_to_hcall_ns > 0 && r->hcall_to_entry_ns > 0, "latencies %u %u",
			r->exit_to_hcall_ns, r->hcall_to_entry_ns))
		goto cleanup;
	if (!ASSERT_MSG(r->exit_ns + r->exit_to_hcall_ns + r->hcall_to_entry_ns <= after, "latencies too long"))
		goto cleanup;
	if (!ASSERT_MSG(r->exit_cpu < 4096 && r->entry_cpu < 4096, "cpu %u %u", r->exit_cpu, r->entry_cpu))
		goto cleanup;
	if (!ASSERT_MSG(out.status.has_trailer && !out.status.damaged, "file not whole"))
		goto cleanup;
	if (!ASSERT_EQ(out.trailer.records, 1, "value"))
		goto cleanup;
	ASSERT_EQ(ht_trailer_lost(&out.trailer), 0, "value");
cleanup:
	ht_tracer_destroy(t);
}

static void svm_vmmcall_becomes_one_fused_record(void)
{
	struct ht_tracer *t = NULL;
	LOAD(t, svm_tracer());
	if (!ASSERT_MSG(hypercall(t, SVM, VMMCALL, 0, 1000, 7, 8) == 0, "events"))
		goto cleanup;
	COLLECT(t);
	if (!ASSERT_EQ(out.n, 1, "value"))
		goto cleanup;
	if (!ASSERT_EQ(out.rec[0].isa, SVM, "value"))
		goto cleanup;
	if (!ASSERT_EQ(out.rec[0].exit_reason, VMMCALL, "value"))
		goto cleanup;
	if (!ASSERT_EQ(out.rec[0].a0, 7, "value"))
		goto cleanup;
	if (!ASSERT_EQ(out.rec[0].a1, 8, "value"))
		goto cleanup;
	if (!ASSERT_EQ(out.rec[0].a2, 0xa2a2a2a2, "value"))
		goto cleanup;
	ASSERT_EQ(out.rec[0].a3, 0xa3a3a3a3, "value");
cleanup:
	ht_tracer_destroy(t);
}

static void vmx_exit_reason_flag_bits_are_ignored_for_matching_and_kept(void)
{
	struct ht_tracer *t = NULL;
	/* Bits 16..31 of a VMX exit reason are flags (e.g. bit 27: exit from enclave mode). */
	__u32 reason = VMCALL | (1u << 27);
	LOAD(t, vmx_tracer());
	if (!ASSERT_MSG(hypercall(t, VMX, reason, 1, 1000, 1, 1) == 0, "events"))
		goto cleanup;
	COLLECT(t);
	if (!ASSERT_EQ(out.n, 1, "value"))
		goto cleanup;
	ASSERT_EQ(out.rec[0].exit_reason, reason, "value");
cleanup:
	ht_tracer_destroy(t);
}

static void exit_reasons_are_matched_per_isa(void)
{
	struct ht_tracer *t = NULL, *t2 = NULL;
	/* On an SVM host: 18 is write_cr2, VMX events never match, SVM compares all 32 bits. */
	LOAD(t, svm_tracer());
	if (!ASSERT_MSG(hypercall(t, SVM, VMCALL, 0, 1000, 1, 1) == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(hypercall(t, VMX, VMMCALL, 0, 1000, 1, 2) == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(hypercall(t, VMX, VMCALL, 0, 1000, 1, 3) == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(hypercall(t, SVM, VMMCALL | 0x10000, 0, 1000, 1, 4) == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(hypercall(t, SVM, VMMCALL, 0, 1000, 1, 5) == 0, "events"))
		goto cleanup;
	COLLECT(t);
	if (!ASSERT_EQ(out.n, 1, "value"))
		goto cleanup;
	if (!ASSERT_EQ(out.rec[0].a1, 5, "value"))
		goto cleanup;

	/* On a VMX host: only basic reason 18 of a VMX exit, whatever its flag bits. */
	LOAD(t2, vmx_tracer());
	if (!ASSERT_MSG(hypercall(t2, SVM, VMCALL, 0, 1000, 1, 1) == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(hypercall(t2, SVM, VMMCALL, 0, 1000, 1, 2) == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(hypercall(t2, VMX, VMMCALL, 0, 1000, 1, 3) == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(hypercall(t2, VMX, VMCALL | 0x10000, 0, 1000, 1, 4) == 0, "events"))
		goto cleanup;
	COLLECT(t2);
	if (!ASSERT_EQ(out.n, 1, "value"))
		goto cleanup;
	ASSERT_EQ(out.rec[0].a1, 4, "value");
cleanup:
	ht_tracer_destroy(t);
	ht_tracer_destroy(t2);
}

static void nr_1000_is_recorded_and_1001_is_not(void)
{
	struct ht_tracer *t = NULL;
	LOAD(t, vmx_tracer());
	if (!ASSERT_MSG(hypercall(t, VMX, VMCALL, 0, 1001, 1, 1) == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(hypercall(t, VMX, VMCALL, 0, 1000, 1, 2) == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(hypercall(t, VMX, VMCALL, 0, 1000 + (1ull << 32), 1, 3) == 0, "events"))
		goto cleanup;
	COLLECT(t);
	if (!ASSERT_EQ(out.n, 1, "value"))
		goto cleanup;
	if (!ASSERT_EQ(out.rec[0].nr, 1000, "value"))
		goto cleanup;
	if (!ASSERT_EQ(out.rec[0].a1, 2, "value"))
		goto cleanup;
	ASSERT_EQ(out.trailer.unselected_nr, 2, "value");
cleanup:
	ht_tracer_destroy(t);
}

static void nr_set_selects_exactly_its_members(void)
{
	static const __u64 nrs[] = { 1000, 1001, 42, 43, 0xffffffffull, 0 };
	struct ht_tracer *t = NULL;
	struct ht_filters f;
	ht_filters_default(&f);
	f.nr_count = 3;
	f.nr[0] = 1001;
	f.nr[1] = 42;
	f.nr[2] = 0xffffffffu;
	LOAD(t, tracer_with(SVM, &f, HT_DEFAULT_RINGBUF_BYTES));
	for (size_t i = 0; i < ARRAY_SIZE(nrs); i++)
		if (!ASSERT_MSG(hypercall(t, SVM, VMMCALL, 0, nrs[i], 0, i) == 0, "events"))
			goto cleanup;
	COLLECT(t);
	if (!ASSERT_EQ(out.n, 3, "value"))
		goto cleanup;
	if (!ASSERT_EQ(out.rec[0].nr, 1001, "value"))
		goto cleanup;
	if (!ASSERT_EQ(out.rec[1].nr, 42, "value"))
		goto cleanup;
	ASSERT_EQ(out.rec[2].nr, 0xffffffffu, "value");
cleanup:
	ht_tracer_destroy(t);
}

/*
 * The project's guest kernel events (1100..1149) come from the guest kernel
 * only: one issued from guest user space (a user-half RIP) is dropped in BPF
 * and counted, and cannot take a real event's place in the ring; the same nr
 * from a kernel RIP, a marker nr and the project's user-space events
 * (1150..1199, the boot trace's replay) from user space are recorded. The
 * last kernel nr and the first user one: the boundary is where the ABI says.
 */
static void a_guest_event_forged_from_user_space_is_dropped_and_counted(void)
{
	struct ht_tracer *t = NULL;
	struct ht_filters f;
	int ret;

	ht_filters_default(&f);
	f.nr_count = 3;
	f.nr[0] = HT_GUEST_NR_KERNEL_LAST;
	f.nr[1] = 1001;
	f.nr[2] = HT_GUEST_NR_KERNEL_LAST + 1;
	LOAD(t, tracer_with(SVM, &f, HT_DEFAULT_RINGBUF_BYTES));
	/* From user space (RIP 0x401000): forged. */
	ret = ht_synth_exit(&layout, t, SVM, VMMCALL, 0x401000, 0);
	ret = ret ?: ht_synth_hypercall(&layout, t, HT_GUEST_NR_KERNEL_LAST, 1, 2, 3, 4);
	ret = ret ?: ht_synth_entry(&layout, t, 0, 0x401003);
	/* A marker from user space: fine. */
	ret = ret ?: ht_synth_exit(&layout, t, SVM, VMMCALL, 0x401000, 0);
	ret = ret ?: ht_synth_hypercall(&layout, t, 1001, 5, 6, 7, 8);
	ret = ret ?: ht_synth_entry(&layout, t, 0, 0x401003);
	/* The project's user-space event from user space: fine. */
	ret = ret ?: ht_synth_exit(&layout, t, SVM, VMMCALL, 0x401000, 0);
	ret = ret ?: ht_synth_hypercall(&layout, t, HT_GUEST_NR_KERNEL_LAST + 1, 11, 12, 13, 14);
	ret = ret ?: ht_synth_entry(&layout, t, 0, 0x401003);
	/* The event from the kernel: recorded. */
	ret = ret ?: hypercall(t, SVM, VMMCALL, 0, HT_GUEST_NR_KERNEL_LAST, 9, 10);
	if (!ASSERT_OK(ret, "events"))
		goto cleanup;
	if (!ASSERT_EQ(counter(t, HT_CNT_FORGED_GUEST_EVENT), 1, "forged, counted"))
		goto cleanup;
	COLLECT(t);
	if (ASSERT_EQ(out.n, 3, "the marker, the user-space event and the kernel's event") &&
	    ASSERT_EQ(out.rec[0].nr, 1001, "the marker") &&
	    ASSERT_EQ(out.rec[1].a0, 11, "the user-space event"))
		ASSERT_EQ(out.rec[2].a0, 9, "the kernel's event");
cleanup:
	ht_tracer_destroy(t);
}

/* Interleaving vCPU threads: every step of every thread happens between the same barriers. */
#define THREADS 4
#define ROUNDS 50
static pthread_barrier_t barrier;
static struct ht_tracer *shared_tracer;
static int thread_errors;
static pid_t thread_tids[THREADS];

static void *vcpu_thread(void *arg)
{
	__u32 idx = (__u32)(unsigned long)arg;
	int err = 0;

	thread_tids[idx] = gettid();
	/* Switched out at the barriers, never in the middle of a synthetic event (see ht_synth_unpreempted). */
	if (ht_synth_unpreempted())
		printf("    note: no real-time priority (%s): a preemption may cut a synthetic event\n", strerror(errno));
	for (__u64 i = 0; i < ROUNDS; i++) {
		pthread_barrier_wait(&barrier);
		err |= ht_synth_exit(&layout, shared_tracer, VMX, VMCALL, 0x1000 + idx, idx);
		pthread_barrier_wait(&barrier);
		err |= ht_synth_hypercall(&layout, shared_tracer, 1000, idx, i, 0xa2, 0xa3);
		pthread_barrier_wait(&barrier);
		err |= ht_synth_entry(&layout, shared_tracer, idx, 0x1003 + idx);
	}
	if (err)
		__atomic_fetch_add(&thread_errors, 1, __ATOMIC_RELAXED);
	return NULL;
}

static void interleaved_vcpu_threads_are_fused_per_thread(void)
{
	struct ht_tracer *t = NULL;
	unsigned int seen[THREADS][ROUNDS];
	pthread_t th[THREADS];
	__u64 unreported;
	/*
	 * Four threads on fewer CPUs switch each other out mid-hypercall: their
	 * states move out of the CPU slots and back only through the sched_switch
	 * program, which a synthetic tracer attaches as record does.
	 */
	LOAD(t, vmx_tracer());
	shared_tracer = t;
	thread_errors = 0;
	pthread_barrier_init(&barrier, NULL, THREADS);
	for (unsigned long i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, vcpu_thread, (void *)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&barrier);
	if (!ASSERT_MSG(thread_errors == 0, "a synthetic event failed"))
		goto cleanup;
	COLLECT(t);
	if (!ASSERT_EQ(out.n, THREADS * ROUNDS, "value"))
		goto cleanup;
	memset(seen, 0, sizeof(seen));
	for (size_t k = 0; k < out.n; k++) {
		const struct ht_record *r = &out.rec[k];
		if (!ASSERT_MSG(r->a0 < THREADS && r->a1 < ROUNDS, "bad args a0 %llu a1 %llu",
				(unsigned long long)r->a0, (unsigned long long)r->a1))
			goto cleanup;
		/* Each field must come from the thread that issued it: nothing crossed threads. */
		if (!ASSERT_EQ(r->vcpu_id, r->a0, "value"))
			goto cleanup;
		if (!ASSERT_EQ(r->guest_rip, 0x1000 + r->a0, "value"))
			goto cleanup;
		if (!ASSERT_EQ(r->host_tid, (__u64)thread_tids[r->a0], "value"))
			goto cleanup;
		seen[r->a0][r->a1]++;
	}
	for (int i = 0; i < THREADS; i++)
		for (int j = 0; j < ROUNDS; j++)
			if (!ASSERT_MSG(seen[i][j] == 1, "thread %d round %d seen %u times", i, j, seen[i][j]))
				goto cleanup;
	unreported = counter(t, HT_CNT_UNREPORTED_SWITCH);
	if (unreported)
		printf("    note: %llu switches of the threads were not reported by the kernel and were put right\n",
		       (unsigned long long)unreported);
cleanup:
	ht_tracer_destroy(t);
}

static void a_second_exit_before_entry_is_never_fused(void)
{
	struct ht_tracer *t = NULL;
	cpu_set_t all, one;
	__u64 between;

	/*
	 * As in the kernel: a thread's exit that follows its exit without a
	 * kvm_entry comes on the same CPU (see cpu_states in maps.bpf.h).
	 */
	sched_getaffinity(0, sizeof(all), &all);
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	sched_setaffinity(0, sizeof(one), &one);
	if (!ASSERT_OK_PTR(t = vmx_tracer(), "tracer did not load"))
		goto cleanup;
	/* hypercall exit, hypercall, another exit, entry: the hypercall's window was cut. */
	if (!ASSERT_OK(ht_synth_exit(&layout, t, VMX, VMCALL, 0x1000, 0), "exit") ||
	    !ASSERT_OK(ht_synth_hypercall(&layout, t, 1000, 1, 1, 1, 1), "hypercall") ||
	    !ASSERT_OK(ht_synth_exit(&layout, t, VMX, VMX_EXTERNAL_INTERRUPT, 0x1003, 0), "exit") ||
	    !ASSERT_EQ(ht_tracer_armed_threads(t), 0, "a non-hypercall exit must disarm") ||
	    !ASSERT_OK(ht_synth_entry(&layout, t, 0, 0x1003), "entry"))
		goto cleanup;
	/* hypercall exit twice (old kernels' fast-path reentry): the newer one wins. */
	if (!ASSERT_OK(ht_synth_exit(&layout, t, VMX, VMCALL, 0x2000, 0), "exit"))
		goto cleanup;
	between = ht_monotonic_ns();
	if (!ASSERT_OK(ht_synth_exit(&layout, t, VMX, VMCALL, 0x3000, 0), "exit") ||
	    !ASSERT_EQ(ht_tracer_armed_threads(t), 1, "re-arming must not count twice") ||
	    !ASSERT_OK(ht_synth_hypercall(&layout, t, 1000, 2, 2, 2, 2), "hypercall") ||
	    !ASSERT_OK(ht_synth_entry(&layout, t, 0, 0x3003), "entry") ||
	    !ASSERT_OK(collect(t), "collecting the records failed") ||
	    !ASSERT_EQ(out.n, 1, "records"))
		goto cleanup;
	ASSERT_EQ(out.rec[0].guest_rip, 0x3000, "guest_rip");
	ASSERT_EQ(out.rec[0].a0, 2, "a0");
	ASSERT_GE(out.rec[0].exit_ns, between, "fused with the stale exit");
	ASSERT_EQ(out.trailer.superseded, 1, "superseded");
cleanup:
	ht_tracer_destroy(t);
	sched_setaffinity(0, sizeof(all), &all);
}

static void an_exit_without_hypercall_records_nothing(void)
{
	struct ht_tracer *t = NULL;
	LOAD(t, svm_tracer());
	if (!ASSERT_MSG(ht_synth_exit(&layout, t, SVM, VMMCALL, 0x1000, 0) == 0, "exit"))
		goto cleanup;
	if (!ASSERT_MSG(ht_synth_entry(&layout, t, 0, 0x1003) == 0, "entry"))
		goto cleanup;
	if (!ASSERT_MSG(ht_tracer_armed_threads(t) == 0, "entry must disarm"))
		goto cleanup;
	/* A later hypercall alone must not complete the old exit. */
	if (!ASSERT_MSG(ht_synth_hypercall(&layout, t, 1000, 9, 9, 9, 9) == 0, "hypercall"))
		goto cleanup;
	if (!ASSERT_MSG(ht_synth_entry(&layout, t, 0, 0x1003) == 0, "entry"))
		goto cleanup;
	if (!ASSERT_MSG(hypercall(t, SVM, VMMCALL, 0, 1000, 5, 5) == 0, "events"))
		goto cleanup;
	COLLECT(t);
	if (!ASSERT_EQ(out.n, 1, "value"))
		goto cleanup;
	ASSERT_EQ(out.rec[0].a0, 5, "value");
cleanup:
	ht_tracer_destroy(t);
}

static void a_hypercall_without_hypercall_exit_records_nothing(void)
{
	struct ht_tracer *t = NULL;
	LOAD(t, svm_tracer());
	if (!ASSERT_MSG(ht_synth_hypercall(&layout, t, 1000, 1, 1, 1, 1) == 0, "hypercall"))
		goto cleanup;
	if (!ASSERT_MSG(ht_synth_entry(&layout, t, 0, 0) == 0, "entry"))
		goto cleanup;
	if (!ASSERT_MSG(ht_synth_exit(&layout, t, SVM, SVM_NPF, 0x1000, 0) == 0, "exit"))
		goto cleanup;
	if (!ASSERT_MSG(ht_synth_hypercall(&layout, t, 1000, 2, 2, 2, 2) == 0, "hypercall"))
		goto cleanup;
	if (!ASSERT_MSG(ht_synth_entry(&layout, t, 0, 0) == 0, "entry"))
		goto cleanup;
	COLLECT(t);
	if (!ASSERT_EQ(out.n, 0, "value"))
		goto cleanup;
	ASSERT_EQ(ht_trailer_lost(&out.trailer), 0, "value");
cleanup:
	ht_tracer_destroy(t);
}

static void *arm_and_exit(void *arg)
{
	/* A hypercall exit, then the vCPU thread dies before its kvm_entry. */
	*(int *)arg = ht_synth_exit(&layout, shared_tracer, VMX, VMCALL, 0x1000, 0);
	return NULL;
}

static void a_thread_that_exits_while_armed_is_disarmed(void)
{
	struct ht_tracer *t = NULL;
	char err[512];
	pthread_t th;
	int ret = -1;

	LOAD(t, vmx_tracer());
	/* The thread-exit program is a real tracepoint program: attach them all. */
	if (!ASSERT_MSG(ht_tracer_attach(t, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	shared_tracer = t;
	pthread_create(&th, NULL, arm_and_exit, &ret);
	pthread_join(th, NULL);
	if (!ASSERT_MSG(ret == 0, "exit event failed"))
		goto cleanup;
	/* pthread_join returns when do_exit releases the thread's memory, just before
	 * sched_process_exit fires: give it up to a second. */
	for (int i = 0; i < 1000 && ht_tracer_armed_threads(t); i++)
		usleep(1000);
	if (!ASSERT_EQ(ht_tracer_armed_threads(t), 0, "value"))
		goto cleanup;
	ht_tracer_detach(t);
cleanup:
	ht_tracer_destroy(t);
}

static void run_on_cpu(int cpu)
{
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	sched_setaffinity(0, sizeof(one), &one);
}

/*
 * With the programs attached, an armed thread that is switched out and runs
 * on another CPU is still found there by kvm_entry and kvm_exit: the
 * sched_switch program moved its state out of the old CPU's slot and into
 * the new one's (see cpu_states).
 */
static void armed_threads_are_found_on_the_cpu_they_move_to(void)
{
	struct ht_tracer *t = NULL;
	char err[512];
	cpu_set_t all;

	if (libbpf_num_possible_cpus() < 2)
		SKIP("one CPU: a thread cannot move");
	sched_getaffinity(0, sizeof(all), &all);
	if (!ASSERT_OK_PTR(t = vmx_tracer(), "tracer did not load"))
		goto cleanup;
	if (!ASSERT_OK(ht_tracer_attach(t, err, sizeof(err)), err))
		goto cleanup;
	/* Armed on CPU 0, switched out (a sleep), entry on CPU 1: one record. */
	run_on_cpu(0);
	if (!ASSERT_OK(ht_synth_exit(&layout, t, VMX, VMCALL, 0x1000, 0), "exit") ||
	    !ASSERT_OK(ht_synth_hypercall(&layout, t, 1000, 1, 1, 1, 1), "hypercall"))
		goto cleanup;
	usleep(1000);
	run_on_cpu(1);
	if (!ASSERT_OK(ht_synth_entry(&layout, t, 0, 0x1003), "entry") ||
	    !ASSERT_EQ(ht_tracer_armed_threads(t), 0, "entry on the other CPU did not disarm"))
		goto cleanup;
	/* Armed on CPU 1, hypercall there, moved to CPU 0: another exit there cuts the window. */
	if (!ASSERT_OK(ht_synth_exit(&layout, t, VMX, VMCALL, 0x2000, 0), "exit") ||
	    !ASSERT_OK(ht_synth_hypercall(&layout, t, 1000, 2, 2, 2, 2), "hypercall"))
		goto cleanup;
	usleep(1000);
	run_on_cpu(0);
	if (!ASSERT_OK(ht_synth_exit(&layout, t, VMX, VMX_EXTERNAL_INTERRUPT, 0x2003, 0), "exit") ||
	    !ASSERT_EQ(ht_tracer_armed_threads(t), 0, "an exit on the other CPU did not disarm") ||
	    !ASSERT_OK(ht_synth_entry(&layout, t, 0, 0x2003), "entry"))
		goto cleanup;
	/* Armed on CPU 0, moved to CPU 1 before its hypercall: fused on CPU 1. */
	if (!ASSERT_OK(ht_synth_exit(&layout, t, VMX, VMCALL, 0x3000, 0), "exit"))
		goto cleanup;
	usleep(1000);
	run_on_cpu(1);
	if (!ASSERT_OK(ht_synth_hypercall(&layout, t, 1000, 3, 3, 3, 3), "hypercall") ||
	    !ASSERT_OK(ht_synth_entry(&layout, t, 0, 0x3003), "entry"))
		goto cleanup;
	ht_tracer_detach(t);
	if (!ASSERT_OK(collect(t), "collecting the records failed") || !ASSERT_EQ(out.n, 2, "records"))
		goto cleanup;
	ASSERT_EQ(out.rec[0].a0, 1, "first record's a0");
	ASSERT_EQ(out.rec[0].exit_cpu, 0, "first record's exit_cpu");
	ASSERT_EQ(out.rec[0].entry_cpu, 1, "first record's entry_cpu");
	ASSERT_EQ(out.rec[1].a0, 3, "second record's a0");
	ASSERT_EQ(out.trailer.superseded, 1, "superseded");
cleanup:
	ht_tracer_destroy(t);
	sched_setaffinity(0, sizeof(all), &all);
}

static void *foreign_vcpu_entry_then_own_hypercall(void *arg)
{
	int *ret = arg;

	*ret = ht_synth_entry(&layout, shared_tracer, 1, 0x1003);
	if (!*ret)
		*ret = hypercall(shared_tracer, VMX, VMCALL, 1, 1000, 2, 2);
	return NULL;
}

/*
 * A switch the kernel does not report (here: no sched_switch program
 * attached) leaves the first thread's armed state in the CPU's slot when a
 * second thread runs there. The second thread's kvm_entry must not fuse it
 * (another thread's window), nor end it: it is kept for its thread, whose
 * own kvm_entry later fuses it. Nothing is lost; the switch is counted.
 */
static void an_unreported_switch_never_fuses_across_threads(void)
{
	struct ht_tracer *t = NULL;
	cpu_set_t all;
	pthread_t th;
	int ret = -1;

	sched_getaffinity(0, sizeof(all), &all);
	LOAD(t, vmx_tracer());
	ht_tracer_detach(t); /* the sched programs a synthetic tracer attaches */
	shared_tracer = t;
	run_on_cpu(sched_getcpu()); /* the second thread inherits this CPU */
	if (!ASSERT_OK(ht_synth_exit(&layout, t, VMX, VMCALL, 0x1000, 0), "exit") ||
	    !ASSERT_OK(ht_synth_hypercall(&layout, t, 1000, 1, 1, 1, 1), "hypercall"))
		goto cleanup;
	pthread_create(&th, NULL, foreign_vcpu_entry_then_own_hypercall, &ret);
	pthread_join(th, NULL);
	if (!ASSERT_OK(ret, "synthetic events failed") ||
	    !ASSERT_OK(ht_synth_entry(&layout, t, 0, 0x1003), "the first thread's entry"))
		goto cleanup;
	if (!ASSERT_EQ(ht_tracer_armed_threads(t), 0, "armed threads") ||
	    !ASSERT_OK(collect(t), "collecting the records failed") || !ASSERT_EQ(out.n, 2, "records"))
		goto cleanup;
	for (size_t k = 0; k < out.n; k++) {
		/* a0 1 is the first thread's (vCPU 0), a0 2 the second's (vCPU 1). */
		if (!ASSERT_EQ(out.rec[k].vcpu_id, out.rec[k].a0 - 1, "vcpu_id of the record whose a0 is that"))
			goto cleanup;
	}
	ASSERT_EQ(out.rec[0].a0 + out.rec[1].a0, 3, "one record of each thread");
	ASSERT_EQ(out.trailer.superseded, 0, "superseded");
	/* Parked at the second thread's entry, taken back at the first thread's. */
	ASSERT_EQ(counter(t, HT_CNT_UNREPORTED_SWITCH), 2, "unreported switches");
cleanup:
	ht_tracer_destroy(t);
	sched_setaffinity(0, sizeof(all), &all);
}

struct parked_thread {
	int wake[2];     /* the main thread writes a byte: go on */
	int armed[2];    /* the thread writes a byte: armed and about to sleep */
	bool hypercall_first; /* armed by the exit and its hypercall, then an exit of another kind */
	int ret;
};

/*
 * Armed on this CPU, asleep (switched out, parked), then woken: hypercall
 * and entry; or, hypercall_first, hypercall before the sleep and an
 * external-interrupt exit after it, then the entry.
 */
static void *arm_sleep_then_finish(void *arg)
{
	struct parked_thread *p = arg;
	char c = 0;

	p->ret = ht_synth_exit(&layout, shared_tracer, VMX, VMCALL, 0x4000, 4);
	if (!p->ret && p->hypercall_first)
		p->ret = ht_synth_hypercall(&layout, shared_tracer, 1000, 4, 4, 4, 4);
	if (write(p->armed[1], &c, 1) != 1 || read(p->wake[0], &c, 1) != 1)
		p->ret = -EIO;
	if (!p->ret)
		p->ret = p->hypercall_first
				 ? ht_synth_exit(&layout, shared_tracer, VMX, VMX_EXTERNAL_INTERRUPT, 0x4003, 4)
				 : ht_synth_hypercall(&layout, shared_tracer, 1000, 4, 4, 4, 4);
	if (!p->ret)
		p->ret = ht_synth_entry(&layout, shared_tracer, 4, 0x4003);
	return NULL;
}

/*
 * Starts arm_sleep_then_finish, waits until its state is parked, detaches
 * the sched programs (its switch in goes unreported) and wakes it.
 */
static int run_parked_thread(struct ht_tracer *t, struct parked_thread *p)
{
	pthread_t th;
	char c = 0;

	shared_tracer = t;
	if (!ASSERT_OK(pipe(p->wake), "pipe") || !ASSERT_OK(pipe(p->armed), "pipe"))
		return -1;
	pthread_create(&th, NULL, arm_sleep_then_finish, p);
	if (!ASSERT_EQ(read(p->armed[0], &c, 1), 1, "the thread armed")) {
		pthread_join(th, NULL);
		return -1;
	}
	/* Asleep in read() once the main thread sees it parked. */
	for (int i = 0; i < 1000 && ht_tracer_parked_states(t) == 0; i++)
		usleep(1000);
	ht_tracer_detach(t);
	if (write(p->wake[1], &c, 1) != 1)
		p->ret = -EIO;
	pthread_join(th, NULL);
	return ASSERT_OK(p->ret, "synthetic events failed") ? 0 : -1;
}

static void close_parked_thread(struct parked_thread *p)
{
	for (int i = 0; i < 2; i++) {
		if (p->wake[i] >= 0)
			close(p->wake[i]);
		if (p->armed[i] >= 0)
			close(p->armed[i]);
	}
}

/*
 * The other half of an unreported switch: a thread switched out armed (its
 * state parked, as the sched_switch program does) runs again without a
 * reported switch-in (here: the sched programs detached while it sleeps).
 * Its kvm_hypercall takes its parked state back: one record, nothing lost.
 */
static void a_parked_state_comes_back_when_its_switch_in_is_unreported(void)
{
	struct parked_thread p = { .wake = { -1, -1 }, .armed = { -1, -1 }, .ret = -1 };
	struct ht_tracer *t = NULL;

	LOAD(t, vmx_tracer());
	if (run_parked_thread(t, &p) || !ASSERT_EQ(ht_tracer_armed_threads(t), 0, "armed threads") ||
	    !ASSERT_OK(collect(t), "collecting the records failed") || !ASSERT_EQ(out.n, 1, "records"))
		goto cleanup;
	ASSERT_EQ(out.rec[0].a0, 4, "a0");
	ASSERT_EQ(out.rec[0].vcpu_id, 4, "vcpu_id");
	ASSERT_EQ(out.trailer.superseded, 0, "superseded");
	ASSERT_EQ(counter(t, HT_CNT_UNREPORTED_SWITCH), 1, "unreported switches");
cleanup:
	close_parked_thread(&p);
	ht_tracer_destroy(t);
}

/*
 * The same unreported switch in, with the hypercall before the sleep: the
 * thread's next exit is another kind's. It must end the parked window (the
 * slot is idle: only the parked state says the thread is armed), or the
 * thread's entry would take it back and fuse the hypercall across that exit.
 */
static void an_exit_ends_a_parked_window_whose_switch_in_is_unreported(void)
{
	struct parked_thread p = { .wake = { -1, -1 }, .armed = { -1, -1 }, .hypercall_first = true, .ret = -1 };
	struct ht_tracer *t = NULL;

	LOAD(t, vmx_tracer());
	if (run_parked_thread(t, &p) || !ASSERT_EQ(ht_tracer_armed_threads(t), 0, "armed threads") ||
	    !ASSERT_OK(collect(t), "collecting the records failed"))
		goto cleanup;
	ASSERT_EQ(out.n, 0, "records (a hypercall fused across another exit)");
	ASSERT_EQ(out.trailer.superseded, 1, "superseded");
	ASSERT_EQ(counter(t, HT_CNT_UNREPORTED_SWITCH), 1, "unreported switches");
cleanup:
	close_parked_thread(&p);
	ht_tracer_destroy(t);
}

static void pid_filter_keeps_only_that_process(void)
{
	struct ht_tracer *t = NULL, *t2 = NULL;
	struct ht_filters f;
	ht_filters_default(&f);
	f.tgid_on = true;
	f.tgid = (__u32)getpid();
	LOAD(t, tracer_with(VMX, &f, HT_DEFAULT_RINGBUF_BYTES));
	if (!ASSERT_MSG(hypercall(t, VMX, VMCALL, 0, 1000, 1, 1) == 0, "events"))
		goto cleanup;
	COLLECT(t);
	if (!ASSERT_EQ(out.n, 1, "value"))
		goto cleanup;

	f.tgid = (__u32)getpid() + 1;
	LOAD(t2, tracer_with(VMX, &f, HT_DEFAULT_RINGBUF_BYTES));
	if (!ASSERT_MSG(hypercall(t2, VMX, VMCALL, 0, 1000, 1, 1) == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(ht_tracer_armed_threads(t2) == 0, "a filtered exit must not arm"))
		goto cleanup;
	COLLECT(t2);
	ASSERT_EQ(out.n, 0, "value");
cleanup:
	ht_tracer_destroy(t);
	ht_tracer_destroy(t2);
}

struct candidates {
	unsigned int seen, fresh;
	__u32 last;
};

static void note_candidate(void *ctx, __u32 tgid, bool fresh)
{
	struct candidates *c = ctx;

	c->seen++;
	c->fresh += fresh;
	c->last = tgid;
}

/*
 * record --vm NAME follows its VM: processes are traced from when user space
 * adds them to the filter until it takes them out, and an untraced process
 * that exits for a hypercall is reported once as a candidate (again only
 * after it is forgotten: its pid may come back as a new process).
 */
static void followed_vm_processes_come_and_go(void)
{
	struct ht_tracer *t = NULL;
	struct candidates c = { 0 };
	struct ht_filters f;

	ht_filters_default(&f);
	f.tgid_on = true;
	f.tgid = 0; /* no process yet */
	LOAD(t, tracer_with(VMX, &f, HT_DEFAULT_RINGBUF_BYTES));
	if (!ASSERT_MSG(hypercall(t, VMX, VMCALL, 0, 1000, 1, 1) == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(hypercall(t, VMX, VMCALL, 0, 1000, 2, 1) == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(ht_tracer_vm_candidates(t, note_candidate, &c) == 1, "one fresh candidate"))
		goto cleanup;
	if (!ASSERT_MSG(c.seen == 1 && c.fresh == 1 && c.last == (__u32)getpid(), "seen %u fresh %u tgid %u", c.seen, c.fresh, c.last))
		goto cleanup;
	if (!ASSERT_MSG(ht_tracer_trace_tgid(t, (__u32)getpid(), true) == 0, "trace"))
		goto cleanup;
	if (!ASSERT_MSG(hypercall(t, VMX, VMCALL, 0, 1000, 3, 1) == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(ht_tracer_trace_tgid(t, (__u32)getpid(), false) == 0, "untrace"))
		goto cleanup;
	if (!ASSERT_MSG(hypercall(t, VMX, VMCALL, 0, 1000, 4, 1) == 0, "events"))
		goto cleanup;
	c = (struct candidates){ 0 };
	if (!ASSERT_MSG(ht_tracer_vm_candidates(t, note_candidate, &c) == 0, "already looked at"))
		goto cleanup;
	if (!ASSERT_MSG(c.seen == 1, "seen %u", c.seen))
		goto cleanup;
	ht_tracer_forget_candidate(t, (__u32)getpid());
	if (!ASSERT_MSG(hypercall(t, VMX, VMCALL, 0, 1000, 5, 1) == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(ht_tracer_vm_candidates(t, note_candidate, &c) == 1, "fresh again once forgotten"))
		goto cleanup;
	COLLECT(t);
	if (!ASSERT_EQ(out.n, 1, "value"))
		goto cleanup;
	ASSERT_EQ(out.rec[0].a0, 3, "value");
cleanup:
	ht_tracer_destroy(t);
}

static void vcpu_filter_keeps_only_that_vcpu(void)
{
	struct ht_tracer *t = NULL;
	struct ht_filters f;
	ht_filters_default(&f);
	f.vcpu_on = true;
	f.vcpu = 1;
	LOAD(t, tracer_with(VMX, &f, HT_DEFAULT_RINGBUF_BYTES));
	for (__u32 v = 0; v < 3; v++)
		if (!ASSERT_MSG(hypercall(t, VMX, VMCALL, v, 1000, v, 0) == 0, "events"))
			goto cleanup;
	COLLECT(t);
	if (!ASSERT_EQ(out.n, 1, "value"))
		goto cleanup;
	ASSERT_EQ(out.rec[0].vcpu_id, 1, "value");
cleanup:
	ht_tracer_destroy(t);
}

static void explicit_exit_reason_replaces_the_hypercall_exit(void)
{
	struct ht_tracer *t = NULL;
	struct ht_filters f;
	ht_filters_default(&f);
	f.exit_reason_on = true;
	f.exit_reason = VMX_IO_INSTRUCTION;
	LOAD(t, tracer_with(VMX, &f, HT_DEFAULT_RINGBUF_BYTES));
	if (!ASSERT_MSG(hypercall(t, VMX, VMCALL, 0, 1000, 1, 1) == 0, "events"))
		goto cleanup;
	if (!ASSERT_MSG(hypercall(t, VMX, VMX_IO_INSTRUCTION | (1u << 28), 0, 1000, 1, 2) == 0, "events"))
		goto cleanup;
	COLLECT(t);
	if (!ASSERT_EQ(out.n, 1, "value"))
		goto cleanup;
	ASSERT_EQ(out.rec[0].a1, 2, "value");
cleanup:
	ht_tracer_destroy(t);
}

static void a_full_ring_buffer_drops_are_counted_and_records_stay_whole(void)
{
	struct ht_tracer *t = NULL;
	const unsigned int burst = 500;
	cpu_set_t all, one;

	/*
	 * The rings are per CPU: the burst must go into one of them for "the
	 * first ones fit, the rest were dropped" to hold; a migration in the
	 * middle would start filling the other CPU's ring.
	 */
	sched_getaffinity(0, sizeof(all), &all);
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	sched_setaffinity(0, sizeof(one), &one);
	/* One page holds 4096 / (80 + 8 byte sample header) = 46 records. */
	LOAD(t, tracer_with(SVM, NULL, 4096));
	for (unsigned int i = 0; i < burst; i++)
		if (!ASSERT_MSG(hypercall(t, SVM, VMMCALL, 2, 1000, 2, i) == 0, "events"))
			goto cleanup;
	COLLECT(t);
	if (!ASSERT_MSG(out.n > 0 && out.n < burst, "%zu records of a %u burst", out.n, burst))
		goto cleanup;
	if (!ASSERT_EQ(out.n + out.trailer.ringbuf_drops, burst, "value"))
		goto cleanup;
	if (!ASSERT_EQ(out.trailer.records, out.n, "value"))
		goto cleanup;
	for (size_t k = 0; k < out.n; k++) {
		const struct ht_record *r = &out.rec[k];
		/* Records are whole and in order: the first ones fit, the rest were dropped. */
		if (!ASSERT_EQ(r->a1, k, "value"))
			goto cleanup;
		if (!ASSERT_EQ(r->a0, 2, "value"))
			goto cleanup;
		if (!ASSERT_EQ(r->a2, 0xa2a2a2a2, "value"))
			goto cleanup;
		if (!ASSERT_EQ(r->a3, 0xa3a3a3a3, "value"))
			goto cleanup;
		if (!ASSERT_EQ(r->guest_rip, 0xffffffff81000000ull + k, "value"))
			goto cleanup;
		if (!ASSERT_EQ(r->vcpu_id, 2, "value"))
			goto cleanup;
	}
cleanup:
	ht_tracer_destroy(t);
	sched_setaffinity(0, sizeof(all), &all);
}

int main(void)
{
	ht_kernel_test_begin("fusion", &layout, NULL);
	if (!mkdtemp(tmpdir)) {
		printf("FAIL: fusion_setup: mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	RUN(vmx_hypercall_becomes_one_fused_record);
	RUN(svm_vmmcall_becomes_one_fused_record);
	RUN(vmx_exit_reason_flag_bits_are_ignored_for_matching_and_kept);
	RUN(exit_reasons_are_matched_per_isa);
	RUN(nr_1000_is_recorded_and_1001_is_not);
	RUN(nr_set_selects_exactly_its_members);
	RUN(a_guest_event_forged_from_user_space_is_dropped_and_counted);
	RUN(interleaved_vcpu_threads_are_fused_per_thread);
	RUN(a_second_exit_before_entry_is_never_fused);
	RUN(an_exit_without_hypercall_records_nothing);
	RUN(a_hypercall_without_hypercall_exit_records_nothing);
	RUN(a_thread_that_exits_while_armed_is_disarmed);
	RUN(armed_threads_are_found_on_the_cpu_they_move_to);
	RUN(an_unreported_switch_never_fuses_across_threads);
	RUN(a_parked_state_comes_back_when_its_switch_in_is_unreported);
	RUN(an_exit_ends_a_parked_window_whose_switch_in_is_unreported);
	RUN(pid_filter_keeps_only_that_process);
	RUN(followed_vm_processes_come_and_go);
	RUN(vcpu_filter_keeps_only_that_vcpu);
	RUN(explicit_exit_reason_replaces_the_hypercall_exit);
	RUN(a_full_ring_buffer_drops_are_counted_and_records_stay_whole);
	char path[64];
	snprintf(path, sizeof(path), "%s/t.htr", tmpdir);
	unlink(path);
	rmdir(tmpdir);
	return ht_test_exit_status();
}
