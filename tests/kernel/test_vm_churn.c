// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * record --exits' host-wide tables under VM churn and hostile tenants,
 * through the real BPF handlers: each VM is a child process that plays its
 * exits as synthetic events (its own tgid, as a VM process's vCPU thread
 * has) and ends. The sampler frees an ended VM's entries after reading its
 * last numbers; each VM's share bounds what it can take, and every share is
 * read, however many VMs there are. Needs root.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <bpf/libbpf.h>
#include "hypertrace/limits.h"
#include "kernel_test.h"
#include "record/exit_sampler.h"
#include "record/tracer.h"
#include "synth.h"
#include "test.h"
#include "common/util.h"
#include "tracefile/trace_reader.h"
#include "tracefile/trace_writer.h"

#define VMX HT_ISA_VMX
/* VMX exit reasons and the cause KVM reports for each. */
#define VMX_CPUID 10
#define VMX_VMCALL 18
#define VMX_IO 30
#define VMX_MSR_READ 31
#define VMX_MSR_WRITE 32
#define VMX_APIC_ACCESS 44
#define VMX_EPT_VIOLATION 48
#define VMX_EPT_MISCONFIG 49

static struct ht_synth_layout layout;

static struct ht_tracer *exits_tracer(void)
{
	/* Only the test's events move states: no real switch (see test_exits.c's main). */
	struct ht_tracer_opts o = { .isa = VMX, .synthetic = true, .synthetic_switches_only = true, .exits = true,
				    .ringbuf_bytes = 1 << 20 };

	ht_filters_default(&o.filters);
	return ht_kernel_test_tracer(&o);
}

#define LOAD(t, expr)                                            \
	if (!ASSERT_OK_PTR((t) = (expr), "tracer did not load")) \
		goto cleanup

/* One exit of reason with the cause of the given kind and value (kind 0: none), 10 ns in the host. */
static int exit_with_cause(struct ht_tracer *t, __u32 reason, __u32 vcpu, __u32 value, __u64 at)
{
	int ret = ht_synth_exit_at(&layout, t, VMX, reason, vcpu, at);

	switch (reason) {
	case VMX_IO:
		ret = ret ?: ht_synth_pio(&layout, t, 1, value, 1);
		break;
	case VMX_MSR_READ:
	case VMX_MSR_WRITE:
		ret = ret ?: ht_synth_msr(&layout, t, reason == VMX_MSR_WRITE, value);
		break;
	case VMX_CPUID:
		ret = ret ?: ht_synth_cpuid(&layout, t, value, 0);
		break;
	case VMX_APIC_ACCESS:
	case VMX_EPT_VIOLATION:
	case VMX_EPT_MISCONFIG:
		ret = ret ?: ht_synth_mmio(&layout, t, 2, 4, 0xfe000000ull + value * 4096ull);
		break;
	case VMX_VMCALL:
		ret = ret ?: ht_synth_hypercall(&layout, t, value, 0, 0, 0, 0);
		break;
	}
	return ret ?: ht_synth_entry_at(&layout, t, vcpu, at + 10);
}

/* What a VM plays: causes per reason of its first nreasons, and series (vCPU x reason without a cause). */
struct vm_play {
	unsigned int nreasons, causes;
	unsigned int vcpus, series_reasons;
};

static const __u32 cause_reasons[] = { VMX_IO, VMX_MSR_READ, VMX_MSR_WRITE, VMX_CPUID,
				       VMX_EPT_MISCONFIG, VMX_VMCALL, VMX_EPT_VIOLATION, VMX_APIC_ACCESS };
#define SERIES_REASON 0x1000

/*
 * Each exit of a play is a new series or cause. A new entry's per-CPU
 * memory comes from a pool the kernel refills in a worker of this CPU:
 * thousands of new entries in a loop can find it empty (the exit is lost,
 * and counted), where a real VM makes its series and causes a few per
 * millisecond at most. A short sleep every PACE exits lets the worker run.
 */
#define PACE 16
static int pace(unsigned int *n)
{
	if (++*n % PACE == 0)
		usleep(200);
	return 0;
}

static int play(struct ht_tracer *t, const struct vm_play *p)
{
	unsigned int n = 0;
	__u64 at = 1000;
	int ret = 0;

	for (unsigned int r = 0; r < p->nreasons && !ret; r++)
		for (unsigned int c = 0; c < p->causes && !ret; c++, at += 100)
			ret = exit_with_cause(t, cause_reasons[r], 0, 0x100 + c, at) ?: pace(&n);
	for (unsigned int v = 0; v < p->vcpus && !ret; v++)
		for (unsigned int r = 0; r < p->series_reasons && !ret; r++, at += 100)
			ret = exit_with_cause(t, SERIES_REASON + r, v, 0, at) ?: pace(&n);
	return ret;
}

/* A VM's lifetime: the tracer and the play, and how it went. */
struct lifetime {
	struct ht_tracer *t;
	const struct vm_play *p;
	int ret;
};

static int live(void *arg)
{
	struct lifetime *l = arg;

	l->ret = ht_synth_switch(l->t, 1, 1, (__u32)gettid(), (__u32)getpid(), true, 0);
	l->ret = l->ret ?: play(l->t, l->p);
	return 0;
}

/*
 * A VM's lifetime in a child process: a switch names it the thread on this
 * CPU (no real switch is seen), it plays p, and it ends. The child shares
 * this process's memory (CLONE_VM, as posix_spawn's child does, and this
 * one waits for it: CLONE_VFORK): a copy of this process's page tables
 * per lifetime would cost more than the lifetime. Its pid once reaped, 0
 * if it failed.
 */
static __u32 vm_lifetime(struct ht_tracer *t, const struct vm_play *p)
{
	static char *stack;
	const size_t stack_bytes = 1 << 20;
	struct lifetime l = { .t = t, .p = p, .ret = -1 };
	int status;
	pid_t pid;

	if (!stack && !(stack = malloc(stack_bytes)))
		return 0;
	pid = clone(live, stack + stack_bytes, CLONE_VM | CLONE_VFORK | SIGCHLD, &l);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || l.ret)
		return 0;
	usleep(1000); /* between VMs too (see PACE) */
	return (__u32)pid;
}

/* What total holds of pid: its series, their exits, its causes, their exits, its named causes (not other). */
struct vm_rows {
	size_t series, causes, named;
	__u64 series_exits, cause_exits;
};

static struct vm_rows rows_of(const struct ht_exit_table *total, __u32 pid)
{
	struct vm_rows r = { 0 };

	for (size_t i = 0; i < total->nseries; i++)
		if (total->series[i].key.pid == pid) {
			r.series++;
			r.series_exits += total->series[i].h.count;
		}
	for (size_t i = 0; i < total->causes.n; i++)
		if (total->causes.rows[i].key.pid == pid) {
			r.causes++;
			r.cause_exits += total->causes.rows[i].h.count;
			r.named += total->causes.rows[i].key.kind != HT_CAUSE_OTHER;
		}
	return r;
}

/* Whether r is series of series_exits and causes of cause_exits (what says whose); a failed check if not. */
static bool rows_are(const char *what, struct vm_rows r, size_t series, __u64 series_exits, size_t causes,
		     __u64 cause_exits)
{
	return ASSERT_MSG(r.series == series && r.series_exits == series_exits && r.causes == causes &&
				  r.cause_exits == cause_exits,
			  "%s: %zu series of %llu exits, %zu causes of %llu; want %zu of %llu, %zu of %llu", what, r.series,
			  (unsigned long long)r.series_exits, r.causes, (unsigned long long)r.cause_exits, series,
			  (unsigned long long)series_exits, causes, (unsigned long long)cause_exits);
}

static int sample(struct ht_exit_sampler *s)
{
	return ht_exit_sampler_sample(s, ht_monotonic_ns(), false);
}

/*
 * A scenario that makes thousands of new entries, run until the kernel's
 * allocator kept up (see PACE): on a loaded host its worker may not run in
 * time and new entries are lost, which the scenario tells from what it
 * expects lost (once returns true: "again", nothing asserted). The last
 * try asserts whatever happened.
 */
#define TRIES 3
#define WITH_RETRIES(once)                                                                          \
	do {                                                                                        \
		for (int try_ = 0; try_ < TRIES && (once)(try_ == TRIES - 1); try_++)                 \
			printf("    (new entries lost to the kernel's allocator under load: again)\n"); \
	} while (0)

static __u64 counter(struct ht_tracer *t, enum ht_counter which)
{
	__u64 c[HT_CNT_MAX];

	return ht_tracer_counters(t, c) ? ~0ull : c[which];
}

/*
 * A VM process that ended: the read after its end has its last numbers;
 * then its series (in the CPU's own table and in exit_hists), causes,
 * cause names and share are deleted from BPF, and its numbers stay in the
 * cumulative table.
 */
static void an_ended_vms_entries_are_freed_after_its_last_read(void)
{
	const struct vm_play p = { .nreasons = 2, .causes = 20, .vcpus = 2, .series_reasons = 3 };
	struct ht_exit_sampler s;
	struct ht_tracer *t = NULL;
	struct vm_rows before, after;
	long entries;
	__u32 pid;

	memset(&s, 0, sizeof(s));
	LOAD(t, exits_tracer());
	if (!ASSERT_OK(ht_exit_sampler_init(&s, t, NULL, ht_monotonic_ns()), "sampler"))
		goto cleanup;
	if (!ASSERT_MSG((pid = vm_lifetime(t, &p)) != 0, "the VM's lifetime"))
		goto cleanup;
	/* The first read after its end sees it for the first time: it has numbers still to read. */
	if (!ASSERT_OK(sample(&s), "first sample"))
		goto cleanup;
	before = rows_of(&s.total, pid);
	entries = ht_tracer_vm_entries(t, pid);
	/* Series: its 2 reasons with causes, 2 vCPUs x 3 without; 2 x (16 named + other) causes, 2 names; its share. */
	if (!ASSERT_EQ(before.series, 2 + 6, "series read") || !ASSERT_EQ(before.causes, 2 * 17, "causes read") ||
	    !ASSERT_EQ(entries, 8 + 2 * 17 + 2 + 1, "its entries in BPF"))
		goto cleanup;
	if (!ASSERT_OK(sample(&s), "second sample"))
		goto cleanup;
	after = rows_of(&s.total, pid);
	if (!ASSERT_EQ(ht_tracer_vm_entries(t, pid), 0, "its entries in BPF once read after its end"))
		goto cleanup;
	ASSERT_MSG(after.series == before.series && after.series_exits == before.series_exits &&
			   after.causes == before.causes && after.cause_exits == before.cause_exits &&
			   after.series_exits == 2 * 20 + 2 * 3,
		   "its numbers stay: %zu series (%llu exits), %zu causes (%llu exits)", after.series,
		   (unsigned long long)after.series_exits, after.causes, (unsigned long long)after.cause_exits);
cleanup:
	ht_exit_sampler_free(&s);
	ht_tracer_destroy(t);
}

static __u32 pretend_ended_pid;

static bool pretend_ended(__u32 pid)
{
	return pid == pretend_ended_pid;
}

/*
 * This process as a VM process (an IO exit with its cause, a series
 * without one) that ends, read as record reads it, and then as the next
 * process of its pid (two IO exits of the same cause, one more of the
 * series), read twice. 0, or -1 after a failed check.
 */
static int this_pid_ends_and_comes_back(struct ht_tracer *t, struct ht_exit_sampler *s)
{
	const __u32 me = (__u32)getpid();
	int ret = -1;

	s->ends.ended = pretend_ended;
	if (!ASSERT_OK(exit_with_cause(t, VMX_IO, 0, 0x80, 1000) ?: exit_with_cause(t, SERIES_REASON, 1, 0, 2000),
		       "events") ||
	    !ASSERT_OK(sample(s), "read"))
		return -1;
	pretend_ended_pid = me;
	if (!ASSERT_OK(sample(s), "read after the end") || !ASSERT_EQ(ht_tracer_vm_entries(t, me), 0, "freed"))
		goto out;
	pretend_ended_pid = 0;
	if (ASSERT_OK(exit_with_cause(t, VMX_IO, 0, 0x80, 3000) ?: exit_with_cause(t, VMX_IO, 0, 0x80, 4000) ?:
			      exit_with_cause(t, SERIES_REASON, 1, 0, 5000),
		      "events of the new process") &&
	    ASSERT_OK(sample(s), "read") && ASSERT_OK(sample(s), "read again"))
		ret = 0;
out:
	pretend_ended_pid = 0;
	return ret;
}

/*
 * A pid that comes back after its process's entries were freed is a new
 * process, whose BPF entries start from zero: its numbers go on top of the
 * rows the ended one left, which never go down. (This process plays both:
 * the sampler is told the first one ended.)
 */
static void a_pid_that_comes_back_adds_to_what_its_ended_process_left(void)
{
	struct ht_exit_sampler s;
	struct ht_tracer *t = NULL;

	memset(&s, 0, sizeof(s));
	LOAD(t, exits_tracer());
	if (ASSERT_OK(ht_exit_sampler_init(&s, t, NULL, ht_monotonic_ns()), "sampler") &&
	    !this_pid_ends_and_comes_back(t, &s))
		rows_are("both processes (2 + 3 exits, a cause of 1 + 2)", rows_of(&s.total, (__u32)getpid()), 2, 5, 1, 3);
cleanup:
	ht_exit_sampler_free(&s);
	ht_tracer_destroy(t);
}

/* A file's EXITS blocks into a table, as every reader takes them: each series and cause at its latest numbers. */
struct file_reading {
	struct ht_exit_table *t;
	int err;
};

static void file_series(void *ctx, const struct ht_exits_header *h, const struct ht_exit_series_rec *s,
			const struct ht_vcpu_wait_rec *threads)
{
	struct file_reading *f = ctx;

	(void)threads;
	for (__u32 i = 0; i < h->nseries && !f->err; i++)
		f->err = ht_exit_table_set_series(f->t, &s[i].key, &s[i].h);
}

static void file_causes(void *ctx, const struct ht_exits_header *h, const struct ht_exit_cause_rec *c)
{
	struct file_reading *f = ctx;

	for (__u32 i = 0; i < h->ncauses && !f->err; i++)
		f->err = ht_exit_causes_set(&f->t->causes, &c[i].key, &c[i].h);
}

/* The file at path read whole into t (an initialized table). 0, or -1 (damaged, not readable, out of memory). */
static int read_file_rows(const char *path, struct ht_exit_table *t)
{
	struct file_reading f = { .t = t };
	struct ht_reader *r = NULL;
	struct ht_record rec;
	char err[256];
	int ret;

	if (ht_reader_open(path, &r, err, sizeof(err)))
		return -1;
	ht_reader_set_exits_visitor(r, file_series, &f);
	ht_reader_set_exit_causes_visitor(r, file_causes, &f);
	while (ht_reader_next(r, &rec) == 1)
		;
	ret = ht_reader_status(r)->damaged || f.err ? -1 : 0;
	ht_reader_close(r);
	return ret;
}

/* record's sampler, forgetting ended VMs at once (keep 0), writing a file; the file read back into file. */
struct forgetting {
	char dir[32], path[64];
	struct ht_exit_sampler s;
	struct ht_tracer *t;
	struct ht_writer *w;
	struct ht_exit_table file;
};

/* 0, or -1 (f is ready for forgetting_end either way). */
static int forgetting_start(struct forgetting *f)
{
	struct ht_file_header hdr;
	char err[256];

	memset(f, 0, sizeof(*f));
	ht_exit_table_init(&f->file);
	snprintf(f->dir, sizeof(f->dir), "/tmp/ht-churn-XXXXXX");
	if (!(f->t = exits_tracer()) || !mkdtemp(f->dir))
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/t.htr", f->dir);
	ht_header_init(&hdr);
	hdr.start_monotonic_ns = ht_monotonic_ns();
	if (ht_writer_open(f->path, true, &hdr, &f->w, err, sizeof(err)) ||
	    ht_exit_sampler_init(&f->s, f->t, f->w, ht_monotonic_ns()))
		return -1;
	f->s.keep_ended_ns = 0;
	return 0;
}

/* The final sample, the file closed and read into f->file. 0 or -1. */
static int forgetting_read(struct forgetting *f)
{
	struct ht_trailer tr;
	int ret = ht_exit_sampler_sample(&f->s, ht_monotonic_ns(), true) ?: ht_writer_close(f->w, &tr);

	f->w = NULL;
	return ret ? -1 : read_file_rows(f->path, &f->file);
}

static void forgetting_end(struct forgetting *f)
{
	ht_exit_sampler_free(&f->s);
	ht_writer_abandon(f->w);
	ht_tracer_destroy(f->t);
	ht_exit_table_free(&f->file);
	if (f->path[0]) {
		unlink(f->path);
		rmdir(f->dir);
	}
}

/*
 * record forgets an ended VM once its last numbers are written (keep 0):
 * VM after VM ends, and the sampler's tables hold none of them, while the
 * file keeps every one's numbers. Without the forgetting, the tables hold
 * every VM ever seen (12 x 8 series); without the last numbers first, the
 * file misses the exits after the sample before the end.
 */
static void ended_vms_are_forgotten_once_their_numbers_are_in_the_file(void)
{
	const struct vm_play p = { .nreasons = 2, .causes = 20, .vcpus = 2, .series_reasons = 3 };
	enum { VMS = 12 };
	struct forgetting f;
	struct ht_exit_sampler *s = &f.s;
	__u32 pids[VMS];
	size_t wrong = 0;

	if (!ASSERT_OK(forgetting_start(&f), "tracer, file and sampler"))
		goto cleanup;
	for (unsigned int i = 0; i < VMS; i++)
		if (!ASSERT_MSG((pids[i] = vm_lifetime(f.t, &p)) != 0, "lifetime %u", i) ||
		    (i % 4 == 3 && !ASSERT_OK(sample(s), "sample")))
			goto cleanup;
	/* The last ones' end is found by this read, their rows go after it. */
	if (!ASSERT_OK(sample(s), "last sample"))
		goto cleanup;
	/*
	 * Each VM's one vCPU thread is forgotten with it. (Its entry stays in
	 * BPF here, and is read again: these threads' ends are not traced, a
	 * real thread's end frees its entry before its process is gone.)
	 */
	if (!ASSERT_MSG(s->total.nseries == 0 && s->total.causes.n == 0 && s->ends.nfreed == 0 && s->nended == 0,
			"left: %zu series, %zu causes, %zu pids freed, %zu to forget", s->total.nseries,
			s->total.causes.n, s->ends.nfreed, s->nended) ||
	    !ASSERT_EQ(s->forgotten.vms, VMS, "VMs forgotten") || !ASSERT_EQ(s->forgotten.series, VMS * 8, "their series") ||
	    !ASSERT_EQ(s->forgotten.threads, VMS, "their threads") ||
	    !ASSERT_EQ(s->forgotten.exits, VMS * (2 * 20 + 2 * 3), "their exits, for the summary") ||
	    !ASSERT_OK(forgetting_read(&f), "the file"))
		goto cleanup;
	for (unsigned int i = 0; i < VMS; i++) {
		struct vm_rows r = rows_of(&f.file, pids[i]);

		wrong += r.series != 8 || r.series_exits != 2 * 20 + 2 * 3 || r.causes != 2 * 17 || r.cause_exits != 2 * 20;
	}
	ASSERT_MSG(wrong == 0, "%zu of %d VMs' numbers not whole in the file", wrong, VMS);
cleanup:
	forgetting_end(&f);
}

/*
 * A pid that comes back after its ended process was forgotten is a new
 * process whose rows count from zero: the sampler holds only its numbers,
 * and the file, whose rows say they count from zero, is read with both
 * processes' (HT_EXIT_ROW_F_FROM_ZERO). Without the flag the file's
 * latest rows of those keys are the new process's alone (3 exits, a cause
 * of 2): the ended one's numbers lost.
 */
static void a_pid_that_comes_back_after_it_was_forgotten_counts_from_zero_in_the_file(void)
{
	const __u32 me = (__u32)getpid();
	struct forgetting f;

	if (!ASSERT_OK(forgetting_start(&f), "tracer, file and sampler") || this_pid_ends_and_comes_back(f.t, &f.s))
		goto cleanup;
	if (!ASSERT_EQ(f.s.forgotten.exits, 2, "the ended process's exits, kept for the summary") ||
	    !rows_are("the sampler: the new process alone", rows_of(&f.s.total, me), 2, 3, 1, 2) ||
	    !ASSERT_OK(forgetting_read(&f), "the file"))
		goto cleanup;
	rows_are("the file: both processes (2 + 3 exits, a cause of 1 + 2)", rows_of(&f.file, me), 2, 5, 1, 3);
cleanup:
	forgetting_end(&f);
}

/*
 * Hundreds of lifetimes of an ordinary VM (6 reasons x 20 causes, 4 vCPUs x
 * 30 reasons of series), read as record reads them, one after another:
 * every VM keeps all its causes and series, the last as the first, and
 * nothing is lost. Without the freeing the cause table is full after 40
 * lifetimes (102 causes each) and the series table after about 130.
 */
static bool hundreds_of_lifetimes_once(bool last)
{
	const struct vm_play p = { .nreasons = 6, .causes = 20, .vcpus = 4, .series_reasons = 30 };
	const unsigned int lifetimes = 200;
	static __u32 pids[200];
	struct ht_exit_sampler s;
	struct ht_tracer *t = NULL;
	__u64 c[HT_CNT_MAX];
	struct vm_rows r, first = { 0 };
	size_t wrong = 0, first_wrong = 0;
	bool again = false;

	memset(&s, 0, sizeof(s));
	LOAD(t, exits_tracer());
	if (!ASSERT_OK(ht_exit_sampler_init(&s, t, NULL, ht_monotonic_ns()), "sampler"))
		goto cleanup;
	/* A read every 8 lifetimes: the entries of up to 16 VMs are in BPF at once. */
	for (unsigned int i = 0; i < lifetimes; i++) {
		if (!ASSERT_MSG((pids[i] = vm_lifetime(t, &p)) != 0, "lifetime %u", i) ||
		    (i % 8 == 7 && !ASSERT_OK(sample(&s), "sample")))
			goto cleanup;
	}
	if (!ASSERT_OK(sample(&s), "last sample"))
		goto cleanup;
	/* Nothing is lost here but to the allocator. */
	if (!last && (counter(t, HT_CNT_EXIT_CAUSE_LOST) || counter(t, HT_CNT_EXIT_SERIES_FULL))) {
		again = true;
		goto cleanup;
	}
	for (unsigned int i = 0; i < lifetimes; i++) {
		r = rows_of(&s.total, pids[i]);
		/* Per reason 16 named causes and "other" with the 4 after them; 6 cause series and 120 others. */
		if (r.named != 6 * HT_EXIT_CAUSES_PER_REASON || r.causes != 6 * (HT_EXIT_CAUSES_PER_REASON + 1) ||
		    r.cause_exits != 6 * 20 || r.series != 6 + 4 * 30 || r.series_exits != 6 * 20 + 4 * 30) {
			if (!wrong++) {
				first_wrong = i;
				first = r;
			}
		}
	}
	if (!ASSERT_MSG(wrong == 0,
			"%zu of %u lifetimes lost numbers; the %zu-th: %zu causes (%zu named) of %llu exits, %zu series of %llu",
			wrong, lifetimes, first_wrong + 1, first.causes, first.named, (unsigned long long)first.cause_exits,
			first.series, (unsigned long long)first.series_exits))
		goto cleanup;
	if (ASSERT_OK(ht_tracer_counters(t, c), "counters"))
		ASSERT_MSG(!c[HT_CNT_EXIT_CAUSE_LOST] && !c[HT_CNT_EXIT_SERIES_FULL], "lost: %llu causes, %llu series",
			   (unsigned long long)c[HT_CNT_EXIT_CAUSE_LOST], (unsigned long long)c[HT_CNT_EXIT_SERIES_FULL]);
cleanup:
	ht_exit_sampler_free(&s);
	ht_tracer_destroy(t);
	return again;
}

static void hundreds_of_vm_lifetimes_keep_every_later_vms_causes_and_series(void)
{
	WITH_RETRIES(hundreds_of_lifetimes_once);
}

/*
 * A name a reason took for a cause it could not make is given back. Enough
 * VMs at their full share fill exit_causes (33 x 120 of 4096 entries and
 * more); a live VM's new cause then finds no room, even for its reason's
 * "other" (lost, counted). Once the ended VMs' entries are freed, that VM
 * still names HT_EXIT_CAUSES_PER_REASON causes of the reason. The same
 * give-back covers a cause another CPU made first. Without it the reason
 * named one fewer, for the VM's lifetime.
 */
static bool full_table_once(bool last)
{
	const unsigned int hostile = HT_EXIT_MAX_CAUSES / (HT_EXIT_CAUSES_PER_VM - 8) + 2;
	const struct vm_play bad = { .nreasons = 8, .causes = 20 };
	const __u32 me = (__u32)getpid();
	struct ht_exit_sampler s;
	struct ht_tracer *t = NULL;
	size_t named = 0;
	bool again = false;
	__u64 lost;
	int ret = 0;

	memset(&s, 0, sizeof(s));
	LOAD(t, exits_tracer());
	if (!ASSERT_OK(ht_exit_sampler_init(&s, t, NULL, ht_monotonic_ns()), "sampler"))
		goto cleanup;
	for (unsigned int i = 0; i < hostile; i++)
		if (!ASSERT_MSG(vm_lifetime(t, &bad) != 0, "VM %u", i))
			goto cleanup;
	/* This process is the live VM. */
	lost = counter(t, HT_CNT_EXIT_CAUSE_LOST);
	if (!ASSERT_OK(exit_with_cause(t, VMX_IO, 0, 0x500, 1000), "the cause that finds the table full"))
		goto cleanup;
	/* The premise: the table was full (the allocator may have left room, or lost entries: try again). */
	if (counter(t, HT_CNT_EXIT_CAUSE_LOST) != lost + 1) {
		again = !last;
		if (again)
			goto cleanup;
		ASSERT_MSG(false, "the table had room for the cause: %llu causes lost before it, %llu after",
			   (unsigned long long)lost, (unsigned long long)counter(t, HT_CNT_EXIT_CAUSE_LOST));
		goto cleanup;
	}
	/* The ended VMs' entries go after the reads that follow their end. */
	if (!ASSERT_OK(sample(&s), "read") || !ASSERT_OK(sample(&s), "read again"))
		goto cleanup;
	for (unsigned int c = 0; c <= HT_EXIT_CAUSES_PER_REASON && !ret; c++)
		ret = exit_with_cause(t, VMX_IO, 0, 0x600 + c, 2000 + 100 * c);
	if (!ASSERT_OK(ret, "the causes after the freeing") || !ASSERT_OK(sample(&s), "read"))
		goto cleanup;
	for (size_t i = 0; i < s.total.causes.n; i++) {
		const struct ht_exit_cause_row *row = &s.total.causes.rows[i];

		named += row->key.pid == me && row->key.reason == VMX_IO && row->key.kind != HT_CAUSE_OTHER;
	}
	if (named < HT_EXIT_CAUSES_PER_REASON && !last && counter(t, HT_CNT_EXIT_CAUSE_LOST) != lost + 1) {
		again = true; /* the allocator lost one of them */
		goto cleanup;
	}
	ASSERT_MSG(named == HT_EXIT_CAUSES_PER_REASON, "the reason names %zu causes after the table was full; want %u",
		   named, HT_EXIT_CAUSES_PER_REASON);
cleanup:
	ht_exit_sampler_free(&s);
	ht_tracer_destroy(t);
	return again;
}

static void a_cause_the_full_table_refused_leaves_its_reason_every_name(void)
{
	WITH_RETRIES(full_table_once);
}

/* Each VM's share as BPF has it now, by tgid. */
#define MAX_SHARES 64
static struct {
	__u32 tgid;
	struct ht_vm_share s;
} shares[MAX_SHARES];
static size_t nshares;

static void keep_share(void *ctx, __u32 tgid, const struct ht_vm_share *s)
{
	(void)ctx;
	if (nshares < MAX_SHARES) {
		shares[nshares].tgid = tgid;
		shares[nshares].s = *s;
	}
	nshares++;
}

static const struct ht_vm_share *share_of(__u32 tgid)
{
	for (size_t i = 0; i < nshares && i < MAX_SHARES; i++)
		if (shares[i].tgid == tgid)
			return &shares[i].s;
	return NULL;
}

/*
 * As many VMs as leave one share of the cause tables free, each naming
 * more causes than its share holds (8 reasons x 20): a victim after them
 * still names every cause of its own, and each hostile VM's excess is
 * counted as its own, and kept once its entries are freed. Without shares,
 * 31 such VMs fill the tables.
 */
static bool hostile_causes_once(bool last)
{
	const unsigned int hostile = HT_EXIT_MAX_CAUSES / HT_EXIT_CAUSES_PER_VM - 1;
	const struct vm_play bad = { .nreasons = 8, .causes = 20 }, victim = { .nreasons = 6, .causes = 20 };
	static __u32 pids[64];
	struct ht_exit_sampler s;
	struct ht_tracer *t = NULL;
	const struct ht_vm_share *sh;
	size_t over = 0, kept = 0;
	__u64 sum = 0, refused = 0;
	bool again = false;
	struct vm_rows r;
	__u32 v;

	memset(&s, 0, sizeof(s));
	LOAD(t, exits_tracer());
	if (!ASSERT_OK(ht_exit_sampler_init(&s, t, NULL, ht_monotonic_ns()), "sampler"))
		goto cleanup;
	for (unsigned int i = 0; i < hostile; i++)
		if (!ASSERT_MSG((pids[i] = vm_lifetime(t, &bad)) != 0, "hostile VM %u", i))
			goto cleanup;
	if (!ASSERT_MSG((v = vm_lifetime(t, &victim)) != 0, "the victim"))
		goto cleanup;
	/* Shares are read before the sampler frees the ended VMs' entries. */
	nshares = 0;
	if (!ASSERT_OK(ht_tracer_read_vm_shares(t, keep_share, NULL), "shares") || !ASSERT_OK(sample(&s), "sample"))
		goto cleanup;
	/*
	 * Each cause a share refused is lost here (its reason's "other" was
	 * refused too), and a VM short of its entries with nothing refused
	 * lost them elsewhere: both are the allocator's doing.
	 */
	for (size_t i = 0; i < nshares && i < MAX_SHARES; i++) {
		refused += shares[i].s.causes_over;
		again |= shares[i].tgid != v && shares[i].s.causes != HT_EXIT_CAUSES_PER_VM;
		again |= shares[i].tgid == v && shares[i].s.causes != 6 * (HT_EXIT_CAUSES_PER_REASON + 2);
	}
	again |= counter(t, HT_CNT_EXIT_CAUSE_LOST) != refused;
	if (again && !last)
		goto cleanup;
	again = false;
	r = rows_of(&s.total, v);
	if (!ASSERT_MSG(r.named == 6 * HT_EXIT_CAUSES_PER_REASON && r.cause_exits == 6 * 20,
			"the victim: %zu named causes of %llu exits; want %u of %u", r.named,
			(unsigned long long)r.cause_exits, 6 * HT_EXIT_CAUSES_PER_REASON, 6 * 20))
		goto cleanup;
	sh = share_of(v);
	if (!ASSERT_OK_PTR(sh, "the victim's share") || !ASSERT_EQ(sh->causes_over, 0, "the victim's excess"))
		goto cleanup;
	for (unsigned int i = 0; i < hostile; i++) {
		sh = share_of(pids[i]);
		over += sh && sh->causes == HT_EXIT_CAUSES_PER_VM && sh->causes_over > 0;
	}
	if (!ASSERT_EQ(over, hostile, "hostile VMs held to their share, their excess counted"))
		goto cleanup;
	/* Their shares go with their entries once read after their end; their excess stays, per VM. */
	if (!ASSERT_OK(sample(&s), "sample after the end") || !ASSERT_EQ(s.nexcess, hostile, "VMs with an excess"))
		goto cleanup;
	for (size_t i = 0; i < s.nexcess; i++) {
		sh = share_of(s.excess[i].pid);
		kept += sh && s.excess[i].causes_over == sh->causes_over && !s.excess[i].series_over &&
			!ht_tracer_vm_entries(t, s.excess[i].pid);
		sum += s.excess[i].causes_over;
	}
	if (ASSERT_EQ(kept, hostile, "each VM's excess kept, its entries freed"))
		ASSERT_EQ(s.total.share_causes_over, sum, "their sum");
cleanup:
	ht_exit_sampler_free(&s);
	ht_tracer_destroy(t);
	return again;
}

static void hostile_vms_cannot_take_a_victims_share_of_causes(void)
{
	WITH_RETRIES(hostile_causes_once);
}

/*
 * As many VMs as leave one share of exit_hists free, each with 64 vCPUs x
 * 30 reasons of series (more than its share): a victim after them has
 * every series, and each hostile VM's excess is counted. Without shares,
 * 9 such VMs fill the table and the victim's exits are in no series.
 */
static bool hostile_series_once(bool last)
{
	const unsigned int hostile = HT_EXIT_MAX_SERIES / HT_EXIT_SERIES_PER_VM - 1;
	const struct vm_play bad = { .vcpus = 64, .series_reasons = 30 }, victim = { .vcpus = 8, .series_reasons = 30 };
	static __u32 pids[64];
	struct ht_exit_sampler s;
	struct ht_tracer *t = NULL;
	const struct ht_vm_share *sh;
	size_t over = 0;
	struct vm_rows r;
	__u64 refused = 0;
	bool again = false;
	__u32 v;

	memset(&s, 0, sizeof(s));
	LOAD(t, exits_tracer());
	if (!ASSERT_OK(ht_exit_sampler_init(&s, t, NULL, ht_monotonic_ns()), "sampler"))
		goto cleanup;
	for (unsigned int i = 0; i < hostile; i++)
		if (!ASSERT_MSG((pids[i] = vm_lifetime(t, &bad)) != 0, "hostile VM %u", i))
			goto cleanup;
	if (!ASSERT_MSG((v = vm_lifetime(t, &victim)) != 0, "the victim"))
		goto cleanup;
	nshares = 0;
	if (!ASSERT_OK(ht_tracer_read_vm_shares(t, keep_share, NULL), "shares") || !ASSERT_OK(sample(&s), "sample"))
		goto cleanup;
	/* Each series a share refused is lost: any other loss, or a VM short of its share, is the allocator's. */
	for (size_t i = 0; i < nshares && i < MAX_SHARES; i++) {
		refused += shares[i].s.series_over;
		again |= shares[i].tgid != v && shares[i].s.series != HT_EXIT_SERIES_PER_VM;
	}
	again |= counter(t, HT_CNT_EXIT_SERIES_FULL) != refused;
	if (again && !last)
		goto cleanup;
	again = false;
	r = rows_of(&s.total, v);
	if (!ASSERT_MSG(r.series == 8 * 30 && r.series_exits == 8 * 30, "the victim: %zu series of %llu exits; want %u",
			r.series, (unsigned long long)r.series_exits, 8 * 30))
		goto cleanup;
	for (unsigned int i = 0; i < hostile; i++) {
		sh = share_of(pids[i]);
		over += sh && sh->series == HT_EXIT_SERIES_PER_VM && sh->series_over > 0;
	}
	ASSERT_EQ(over, hostile, "hostile VMs held to their share, their excess counted");
cleanup:
	ht_exit_sampler_free(&s);
	ht_tracer_destroy(t);
	return again;
}

static void hostile_vms_cannot_take_a_victims_share_of_series(void)
{
	WITH_RETRIES(hostile_series_once);
}

/* Every share read, one VM each, whatever the number of batches: the tgids seen and how many times. */
#define MANY_VMS 300
static __u32 many[MANY_VMS];
static unsigned int seen_times[MANY_VMS], seen_other;

static void count_share(void *ctx, __u32 tgid, const struct ht_vm_share *s)
{
	(void)ctx;
	(void)s; /* made with the VM's first cause, before its entry (which the allocator may refuse) */
	for (unsigned int i = 0; i < MANY_VMS; i++)
		if (many[i] == tgid) {
			seen_times[i]++;
			return;
		}
	seen_other++;
}

/* More VMs than one batch of the shares' read holds (256): each VM's share read once. */
static void every_vms_share_is_read_past_one_batch(void)
{
	const struct vm_play p = { .nreasons = 1, .causes = 1 };
	struct ht_tracer *t = NULL;
	unsigned int once = 0;

	LOAD(t, exits_tracer());
	for (unsigned int i = 0; i < MANY_VMS; i++)
		if (!ASSERT_MSG((many[i] = vm_lifetime(t, &p)) != 0, "VM %u", i))
			goto cleanup;
	memset(seen_times, 0, sizeof(seen_times));
	seen_other = 0;
	if (!ASSERT_OK(ht_tracer_read_vm_shares(t, count_share, NULL), "shares"))
		goto cleanup;
	for (unsigned int i = 0; i < MANY_VMS; i++)
		once += seen_times[i] == 1;
	ASSERT_MSG(once == MANY_VMS, "%u of %u VMs' shares read once", once, MANY_VMS);
	ASSERT_MSG(seen_other == 0, "%u shares of no VM of the test", seen_other);
cleanup:
	ht_tracer_destroy(t);
}

int main(void)
{
	ht_kernel_test_begin("vm_churn", &layout, NULL);
	/* One CPU for the whole run, the VMs' too: see test_exits.c's main. */
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	sched_setaffinity(0, sizeof(one), &one);
	RUN(an_ended_vms_entries_are_freed_after_its_last_read);
	RUN(a_pid_that_comes_back_adds_to_what_its_ended_process_left);
	RUN(ended_vms_are_forgotten_once_their_numbers_are_in_the_file);
	RUN(a_pid_that_comes_back_after_it_was_forgotten_counts_from_zero_in_the_file);
	RUN(hundreds_of_vm_lifetimes_keep_every_later_vms_causes_and_series);
	RUN(hostile_vms_cannot_take_a_victims_share_of_causes);
	RUN(a_cause_the_full_table_refused_leaves_its_reason_every_name);
	RUN(hostile_vms_cannot_take_a_victims_share_of_series);
	RUN(every_vms_share_is_read_past_one_batch);
	return ht_test_exit_status();
}
