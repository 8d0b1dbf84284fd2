// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * record --boot through the real BPF handlers: synthetic exits and entries
 * of the calling thread (it plays a vCPU thread) at times the test gives,
 * drained from the rings as record drains them, and through the trace
 * file's writer and reader. A thread whose process started while record
 * runs gets one record per exit, with its RIP, the mode it ran in, its
 * cause and its parts; one that started before gets none; the bounds hold.
 * Needs root.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "bpf/vcpu_state.h"
#include "record/boot_sampler.h"
#include "record/drain.h"
#include "record/recording.h"
#include "record/tracer.h"
#include "record/tracer_private.h" /* the skeleton's .bss: the synthetic process start and mode */
#include "kernel_test.h"
#include "synth.h"
#include "test.h"
#include "tracefile/trace_reader.h"
#include "tracefile/trace_writer.h"

#define SVM HT_ISA_SVM
#define SVM_IO 0x7b
#define SVM_HLT 0x78
#define SVM_MSR 0x7c
#define SINCE 1000u
#define KERNEL_RIP 0xffffffff81000010ull

static struct ht_synth_layout layout;

static struct ht_tracer *boot_tracer(__u64 window_ns, __u64 max_exits)
{
	/* Only the test's events move states: no real switch (see main). */
	struct ht_tracer_opts o = { .isa = SVM, .synthetic = true, .synthetic_switches_only = true, .exits = true,
				    .boot = true, .boot_since_ns = SINCE, .boot_window_ns = window_ns,
				    .boot_max_exits = max_exits, .ringbuf_bytes = 1 << 20 };

	ht_filters_default(&o.filters);
	return ht_kernel_test_tracer(&o);
}

#define LOAD(t, expr)                                            \
	if (!ASSERT_OK_PTR((t) = (expr), "tracer did not load")) \
		goto cleanup

/* What the synthetic programs take for the calling thread's process start and its guest's mode. */
static void pretend(struct ht_tracer *t, __u64 process_start, __u8 mode)
{
	t->skel->bss->synthetic_process_start_ns = process_start;
	t->skel->bss->synthetic_boot_mode = mode;
}

static struct ht_boot_exit boot_exit_at(const struct ht_kernel_test_drained *d, unsigned int i)
{
	struct ht_boot_exit be;

	memcpy(&be, &d->recs[i], sizeof(be));
	return be;
}

static void note_vm(void *ctx, __u32 pid, const struct ht_boot_vm *vm)
{
	if (pid == (__u32)getpid())
		*(struct ht_boot_vm *)ctx = *vm;
}

/*
 * A boot's start as the handlers see it: the first entry (real mode), an
 * I/O exit of the firmware (protected mode from the entry before it), then
 * an MSR exit at a kernel RIP in long mode.
 */
static int play_boot(struct ht_tracer *t)
{
	int ret;

	pretend(t, SINCE + 1, HT_BOOT_MODE_KNOWN);
	ret = ht_synth_entry_at(&layout, t, 0, 10000);
	pretend(t, SINCE + 1, HT_BOOT_MODE_KNOWN | HT_BOOT_MODE_PE);
	ret = ret ?: ht_synth_exit_rip_at(&layout, t, SVM, SVM_IO, 0xfff0, 0, 10100);
	ret = ret ?: ht_synth_pio(&layout, t, 1, 0x70, 1);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 10150);
	pretend(t, SINCE + 1, HT_BOOT_MODE_KNOWN | HT_BOOT_MODE_PE | HT_BOOT_MODE_PG | HT_BOOT_MODE_LMA);
	ret = ret ?: ht_synth_exit_rip_at(&layout, t, SVM, SVM_MSR, KERNEL_RIP, 0, 10400);
	ret = ret ?: ht_synth_msr(&layout, t, 1, 0xc0000080);
	ret = ret ?: ht_synth_entry_at(&layout, t, 0, 10430);
	return ret;
}

static void a_vm_that_starts_gets_a_record_per_exit(void)
{
	struct ht_tracer *t = NULL;
	struct ht_kernel_test_drained *d = calloc(1, sizeof(*d));
	struct ht_boot_exit first, io, msr;

	LOAD(t, boot_tracer(1000000000ull, 100));
	if (!ASSERT_OK_PTR(d, "memory") || !ASSERT_OK(play_boot(t), "events") || !ht_kernel_test_drain(t, d) ||
	    !ASSERT_EQ(d->n, 3, "records: the first entry and two exits"))
		goto cleanup;
	first = boot_exit_at(d, 0);
	io = boot_exit_at(d, 1);
	msr = boot_exit_at(d, 2);
	ASSERT_EQ(first.flags, HT_REC_F_BOOT_EXIT, "a boot exit's flag");
	ASSERT_EQ(first.boot_flags, HT_BOOT_F_FIRST_ENTRY, "the first entry is one alone");
	ASSERT_EQ(first.exit_ns, 10000, "first entry: its time");
	ASSERT_EQ(first.entry_ns, 10000, "first entry: no exit");
	ASSERT_EQ(first.mode, HT_BOOT_MODE_KNOWN, "first entry: real mode");
	ASSERT_EQ(first.host_pid, (__u32)getpid(), "pid");
	ASSERT_EQ(first.host_tid, (__u32)gettid(), "tid");

	ASSERT_EQ(io.exit_ns, 10100, "I/O exit: time");
	ASSERT_EQ(io.entry_ns, 10150, "I/O exit: its entry");
	ASSERT_EQ(io.guest_rip, 0xfff0, "I/O exit: RIP");
	ASSERT_EQ(io.reason, SVM_IO, "I/O exit: reason");
	ASSERT_EQ(io.isa, SVM, "isa");
	/* The mode read at the first entry: the guest ran in it up to this exit. */
	ASSERT_EQ(io.mode, HT_BOOT_MODE_KNOWN, "I/O exit: the mode it ran in");
	ASSERT_EQ(io.boot_flags, HT_BOOT_F_CAUSE, "I/O exit: its cause");
	ASSERT_EQ(io.cause_kind, HT_CAUSE_PIO, "I/O exit: cause kind");
	ASSERT_EQ(io.cause_value, 0x70, "I/O exit: port");
	ASSERT_EQ(io.kvm_ns, 50, "I/O exit: 50 ns in KVM");
	ASSERT_EQ(io.vmm_ns + io.wait_ns + io.halted_ns + io.blocked_ns, 0, "I/O exit: nothing else");

	ASSERT_EQ(msr.guest_rip, KERNEL_RIP, "MSR exit: RIP");
	ASSERT_EQ(msr.mode, HT_BOOT_MODE_KNOWN | HT_BOOT_MODE_PE, "MSR exit: the mode read at the entry before");
	ASSERT_EQ(msr.cause_kind, HT_CAUSE_MSR, "MSR exit: cause kind");
	ASSERT_EQ(msr.cause_value, 0xc0000080, "MSR exit: EFER");
	ASSERT_EQ(msr.kvm_ns, 30, "MSR exit: 30 ns in KVM");
	/* The guest's time between: from the I/O exit's entry to this exit. */
	ASSERT_EQ(msr.exit_ns - io.entry_ns, 250, "guest time");
cleanup:
	free(d);
	ht_tracer_destroy(t);
}

static void a_vm_that_ran_before_the_recording_gets_none(void)
{
	struct ht_tracer *t = NULL;
	struct ht_kernel_test_drained *d = calloc(1, sizeof(*d));
	struct ht_boot_vm vm = { 0 };

	LOAD(t, boot_tracer(1000000000ull, 100));
	if (!ASSERT_OK_PTR(d, "memory"))
		goto cleanup;
	pretend(t, SINCE - 1, HT_BOOT_MODE_KNOWN);
	if (!ASSERT_OK(ht_synth_entry_at(&layout, t, 0, 10000), "entry") ||
	    !ASSERT_OK(ht_synth_exit_rip_at(&layout, t, SVM, SVM_IO, 0xfff0, 0, 10100), "exit") ||
	    !ASSERT_OK(ht_synth_entry_at(&layout, t, 0, 10150), "entry") || !ht_kernel_test_drain(t, d))
		goto cleanup;
	ASSERT_EQ(d->n, 0, "records");
	ASSERT_OK(ht_tracer_read_boot_vms(t, note_vm, &vm), "read");
	ASSERT_EQ(vm.first_ns, 0, "no boot_vms entry");
cleanup:
	free(d);
	ht_tracer_destroy(t);
}

/* Its bound in exits: the rest counted in its over, not recorded, and not lost. */
static void a_vm_past_its_bound_is_counted_not_recorded(void)
{
	struct ht_tracer *t = NULL;
	struct ht_kernel_test_drained *d = calloc(1, sizeof(*d));
	struct ht_boot_vm vm = { 0 };

	LOAD(t, boot_tracer(1000000000ull, 2));
	if (!ASSERT_OK_PTR(d, "memory") || !ASSERT_OK(play_boot(t), "events") ||
	    !ASSERT_OK(ht_synth_exit_rip_at(&layout, t, SVM, SVM_IO, 0x1234, 0, 20000), "exit") ||
	    !ASSERT_OK(ht_synth_entry_at(&layout, t, 0, 20010), "entry") || !ht_kernel_test_drain(t, d))
		goto cleanup;
	ASSERT_EQ(d->n, 2, "records: the bound");
	ASSERT_OK(ht_tracer_read_boot_vms(t, note_vm, &vm), "read");
	ASSERT_EQ(vm.recorded, 2, "recorded");
	ASSERT_EQ(vm.over, 2, "over");
	ASSERT_EQ(vm.lost, 0, "lost");
	ASSERT_EQ(vm.first_ns, 10000, "its window's start: its first entry");
cleanup:
	free(d);
	ht_tracer_destroy(t);
}

/* Its bound in time: nothing after its window, from then on. */
static void nothing_is_recorded_after_the_window(void)
{
	struct ht_tracer *t = NULL;
	struct ht_kernel_test_drained *d = calloc(1, sizeof(*d));

	LOAD(t, boot_tracer(1000, 100));
	if (!ASSERT_OK_PTR(d, "memory") || !ASSERT_OK(play_boot(t), "events") ||
	    !ASSERT_OK(ht_synth_exit_rip_at(&layout, t, SVM, SVM_IO, 0x1234, 0, 11500), "exit") ||
	    !ASSERT_OK(ht_synth_entry_at(&layout, t, 0, 11510), "entry") ||
	    !ASSERT_OK(ht_synth_exit_rip_at(&layout, t, SVM, SVM_IO, 0x1234, 0, 11600), "exit") ||
	    !ASSERT_OK(ht_synth_entry_at(&layout, t, 0, 11610), "entry") || !ht_kernel_test_drain(t, d))
		goto cleanup;
	ASSERT_EQ(d->n, 3, "records: those within 1000 ns of the first entry");
cleanup:
	free(d);
	ht_tracer_destroy(t);
}

/*
 * An exit's parts are the vCPU account's: preempted inside an exit is
 * wait, blocked in a halt is halted, and they add up to its time in the
 * host.
 */
static void an_exits_parts_add_up_to_its_time_in_the_host(void)
{
	const __u32 me = (__u32)gettid(), pid = (__u32)getpid(), OTHER = 77;
	struct ht_tracer *t = NULL;
	struct ht_kernel_test_drained *d = calloc(1, sizeof(*d));
	struct ht_boot_exit pre, hlt;
	int ret;

	LOAD(t, boot_tracer(1000000000ull, 100));
	if (!ASSERT_OK_PTR(d, "memory"))
		goto cleanup;
	pretend(t, SINCE + 1, HT_BOOT_MODE_KNOWN);
	ret = ht_synth_entry_at(&layout, t, 1, 1000);
	ret = ret ?: ht_synth_exit_rip_at(&layout, t, SVM, SVM_IO, 0x500, 1, 2000);
	ret = ret ?: ht_synth_switch(t, me, pid, OTHER, OTHER, true, 2050);
	ret = ret ?: ht_synth_switch(t, OTHER, OTHER, me, pid, false, 2150);
	ret = ret ?: ht_synth_entry_at(&layout, t, 1, 2200);
	ret = ret ?: ht_synth_exit_rip_at(&layout, t, SVM, SVM_HLT, 0x600, 1, 3000);
	ret = ret ?: ht_synth_switch(t, me, pid, OTHER, OTHER, false, 3010);
	ret = ret ?: ht_synth_wakeup(t, me, 3200);
	ret = ret ?: ht_synth_switch(t, OTHER, OTHER, me, pid, false, 3250);
	ret = ret ?: ht_synth_entry_at(&layout, t, 1, 3300);
	if (!ASSERT_OK(ret, "events") || !ht_kernel_test_drain(t, d) || !ASSERT_EQ(d->n, 3, "records"))
		goto cleanup;
	pre = boot_exit_at(d, 1);
	hlt = boot_exit_at(d, 2);
	ASSERT_EQ(pre.kvm_ns, 100, "preempted exit: in KVM 2000..2050 and 2150..2200");
	ASSERT_EQ(pre.wait_ns, 100, "preempted exit: waiting 2050..2150");
	ASSERT_EQ(pre.kvm_ns + pre.vmm_ns + pre.wait_ns + pre.halted_ns + pre.blocked_ns, pre.entry_ns - pre.exit_ns,
		  "preempted exit: parts add up");
	ASSERT_EQ(hlt.halted_ns, 190, "halt: halted 3010..3200");
	ASSERT_EQ(hlt.wait_ns, 50, "halt: woken, waiting 3200..3250");
	ASSERT_EQ(hlt.kvm_ns, 60, "halt: in KVM 3000..3010 and 3250..3300");
	ASSERT_EQ(hlt.vcpu_id, 1, "vcpu");
	ASSERT_EQ(hlt.exit_ns - pre.entry_ns, 800, "guest time between");
cleanup:
	free(d);
	ht_tracer_destroy(t);
}

/* Through record's path into a file: the reader hands boot exits to their visitor, not as hypercalls. */
struct seen {
	struct ht_boot_exit be[8];
	unsigned int n;
};

static void see_boot_exit(void *ctx, const struct ht_boot_exit *be)
{
	struct seen *s = ctx;

	if (s->n < 8)
		s->be[s->n] = *be;
	s->n++;
}

static void the_trace_file_keeps_boot_exits_and_their_vms(void)
{
	char path[] = "/tmp/ht-boot-XXXXXX";
	struct ht_tracer *t = NULL;
	struct ht_writer *w = NULL;
	struct ht_reader *r = NULL;
	struct ht_recording rec;
	struct ht_boot_sampler bs;
	struct ht_file_header hdr;
	struct ht_trailer trailer;
	struct ht_record hc;
	struct seen seen = { .n = 0 };
	char err[256];
	int fd = mkstemp(path);
	bool recording = false, sampler = false;
	size_t nvms = 0;
	const struct ht_boot_vm_rec *vms;

	LOAD(t, boot_tracer(1000000000ull, 100));
	if (!ASSERT_GE(fd, 0, "scratch file"))
		goto cleanup;
	close(fd);
	ht_header_init(&hdr);
	if (!ASSERT_OK(ht_writer_open(path, true, &hdr, &w, err, sizeof(err)), "writer") ||
	    !ASSERT_OK(ht_recording_init(&rec, t, w), "recording"))
		goto cleanup;
	w = NULL;
	recording = true;
	ht_boot_sampler_init(&bs, t, rec.writer);
	sampler = true;
	if (!ASSERT_OK(play_boot(t), "events") || !ASSERT_OK(ht_boot_sampler_sample(&bs), "boot sample"))
		goto cleanup;
	recording = false;
	if (!ASSERT_OK(ht_recording_finish(&rec, &trailer), "finish"))
		goto cleanup;
	ASSERT_EQ(rec.boot_exits, 3, "boot exits written");
	ASSERT_EQ(trailer.records, 3, "trailer");
	if (!ASSERT_OK(ht_reader_open(path, &r, err, sizeof(err)), "reader"))
		goto cleanup;
	ht_reader_set_boot_exit_visitor(r, see_boot_exit, &seen);
	ASSERT_EQ(ht_reader_next(r, &hc), 0, "no hypercall");
	ASSERT_EQ(seen.n, 3, "boot exits read");
	ASSERT_EQ(seen.be[1].guest_rip, 0xfff0, "the I/O exit's RIP");
	ASSERT_EQ(ht_reader_status(r)->boot_exits, 3, "counted");
	ASSERT_MSG(!ht_reader_status(r)->damaged, "read whole: %s", ht_reader_status(r)->reason);
	vms = ht_reader_boot_vms(r, &nvms);
	if (ASSERT_EQ(nvms, 1, "one booting VM"))
		ASSERT_EQ(vms[0].pid == (__u32)getpid() && vms[0].vm.recorded == 3 && vms[0].vm.first_ns == 10000, 1,
			  "its numbers");
cleanup:
	if (recording)
		ht_recording_abandon(&rec);
	if (sampler)
		ht_boot_sampler_free(&bs);
	ht_writer_abandon(w);
	ht_reader_close(r);
	unlink(path);
	ht_tracer_destroy(t);
}

int main(void)
{
	ht_kernel_test_begin("boot", &layout, NULL);
	ht_kernel_test_pin_here(); /* and the tracers see only the tests' own switches */
	RUN(a_vm_that_starts_gets_a_record_per_exit);
	RUN(a_vm_that_ran_before_the_recording_gets_none);
	RUN(a_vm_past_its_bound_is_counted_not_recorded);
	RUN(nothing_is_recorded_after_the_window);
	RUN(an_exits_parts_add_up_to_its_time_in_the_host);
	RUN(the_trace_file_keeps_boot_exits_and_their_vms);
	return ht_test_exit_status();
}
