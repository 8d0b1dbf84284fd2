// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Writes trace files for the export tests.
 *
 *   trace_gen synth FILE [--calls N] [--drops] [--exits [--vcpu-sched]]   N (default 300) hypercalls
 *       on each of 3 vCPU threads (2 nr values, 64-bit arguments above 2^53)
 *       run through the real BPF handlers as synthetic events, drained by the
 *       real recording into FILE. --drops: 100 calls each into a one-page ring
 *       buffer that overflows, so the trailer counts drops. --exits: as
 *       record --exits writes it, the hypercalls' exits counted too: an EXITS
 *       block between the records of the first and the second half of the
 *       calls, and the final one before the trailer; the threads run one
 *       after the other (see run_round). Needs root.
 *   trace_gen bulk FILE N [--wide] [--compress] [--switches]   N records of 4
 *       vCPU threads written with the trace file writer (no BPF): a large
 *       input for memory tests. --wide: latencies spread over 4 us .. 1 ms,
 *       higher on higher vCPUs, so percentiles fall in wide histogram
 *       buckets. --compress: delta + zlib blocks (about 10 bytes a record).
 *       --switches: after each record its thread is switched out or, the
 *       next time, back in (record --vcpu-sched): N switches more.
 *   trace_gen guest FILE [--rounds N] [--impossible]   hypertracing as the guest module
 *       sends it (no BPF): two VMs ("web1", and one whose name holds a
 *       quote, a backslash and an escape byte, whose vcpu_ids are 0 and 2)
 *       of two vCPU threads each, each thread on a host CPU of its own; in
 *       each of N rounds (default 50) each vCPU switches tasks (named with an
 *       escape byte in the second VM), wakes one,
 *       takes an IRQ and calls __x64_sys_sync -> iterate_supers; the module
 *       loads first and unloads last. Once, a vCPU thread is switched out in
 *       the middle of a hypercall and enters on another host CPU while the
 *       other vCPU exits and enters on the first one. Writes FILE.kallsyms,
 *       the guest's symbols (this boot's: offset 0), beside it. The host's
 *       switches of vCPU threads are in the file (record --vcpu-sched): the
 *       other vCPU blocks on the second host CPU (a host thread named with an
 *       escape byte runs instead), is switched in on the first one when the
 *       switched-out vCPU is preempted there (one switch, a record for each
 *       thread), the switched-out one comes back on the second CPU; at the
 *       end a vCPU of the second VM blocks and is never switched back in.
 *       The guest's tasks leave their CPU in every state the guest module
 *       reports (TASK_REPORT as kernels since 4.14 encode it, 0x100 for a
 *       preempted task), one after the other. --impossible: the second VM's
 *       vCPU threads on the first one's host CPUs, their records interleaved
 *       with no switch between them (what no host can run: a checker must
 *       reject it).
 *   trace_gen guests FILE N [--vcpus M [--vcpu-ids ID,...]] [--inside-calls] [--lost-exit] [--lost-switch]   N
 *       VMs of M vCPU threads each (default 1; vCPU k is guest CPU k, its
 *       vcpu_id k or the k-th of --vcpu-ids, e.g. 0,1,2,4 as QEMU's APIC IDs
 *       for sockets of 3 cores), one
 *       vCPU after the other on two host CPUs (no two overlap), each
 *       sending the guest module's events: its load (from vCPU 0), a switch
 *       to a task, that task's call __x64_sys_sync -> iterate_supers, and
 *       the switch back (in each of the module's states in turn).
 *       --inside-calls: the recording starts inside two calls: each VM's
 *       task first returns from iterate_supers and __x64_sys_sync it entered
 *       before. --lost-exit: the exit of iterate_supers is lost (the module
 *       counts it), so __x64_sys_sync's exit comes with iterate_supers open.
 *       --lost-switch: two switches of each vCPU are lost, its task's out
 *       and task + 1's in, so its last switch is task + 1's out (a prev_tid
 *       its CPU never switched in): the guest's buffer drops them, except
 *       on vCPU 0 of odd VMs, where the module is unloaded and loaded again
 *       in between.
 *       Writes FILE.kallsyms as guest does.
 *   trace_gen synth ... --vcpu-sched   (with --exits) as record --vcpu-sched:
 *       between rounds of calls, each vCPU thread is switched out (preempted,
 *       or blocked) and back in, as synthetic events.
 *   trace_gen account FILE [--rounds N] [--contradict]   the vCPU account
 *       (EXITS blocks of record --exits) and the switches of vCPU threads
 *       (record --vcpu-sched) of a host that runs 3 vCPU threads of one VM
 *       on 2 CPUs (no BPF), one thread per CPU at a time, N rounds of 1 ms
 *       (default 20, at most 512): vCPU 0 is preempted on CPU 0 by vCPU 2 and gets the
 *       CPU back after a host worker; vCPU 2 halts, is woken, waits and is
 *       switched in on CPU 1 (it migrated), then is preempted there; vCPU 1
 *       blocks in the VMM (not halted), is woken and waits. vCPU 2 is first
 *       seen at its first switch-in and ends in the last round. An EXITS
 *       block every 730 us (so intervals end inside every state) holds each
 *       thread's account, its states from the same timeline as the
 *       switches. --contradict: in round 3 vCPU 0's account says kvm where
 *       its switches say it waited off its CPU (the sums still add up).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common/parse_number.h"
#include "common/util.h"
#include "hypertrace/guest.h"
#include "record/exit_sampler.h"
#include "record/recording.h"
#include "record/tracer.h"
#include "synth.h"
#include "tracefile/trace_writer.h"

#define THREADS 3
#define CALLS_PER_THREAD 300
#define KERNEL_ADDRESS 0xffffffff81234000ull /* above 2^53: exact only as a string in JSON */

static struct ht_synth_layout layout;
static struct ht_tracer *tracer;
static __u32 vcpu_tids[THREADS]; /* the threads' tids, once they ran */
static unsigned int calls_per_thread = CALLS_PER_THREAD;
static unsigned int calls_from, calls_to; /* the calls of the current round: [from, to) */
static int thread_errors;

static void *vcpu_thread(void *arg)
{
	__u32 vcpu = (__u32)(unsigned long)arg;
	int err = 0;

	vcpu_tids[vcpu] = (__u32)gettid();
	for (__u64 i = calls_from; i < calls_to; i++) {
		__u64 rip = 0x7f0000001000ull + vcpu * 0x100 + (i % 4);
		err |= ht_synth_exit(&layout, tracer, HT_ISA_SVM, HT_SVM_EXIT_CODE_VMMCALL, rip, vcpu);
		err |= ht_synth_hypercall(&layout, tracer, i % 5 ? 1000 : 1001, KERNEL_ADDRESS + i,
					  i, (__u64)vcpu << 32 | i, ~i);
		err |= ht_synth_entry(&layout, tracer, vcpu, rip + 3);
	}
	if (err)
		__atomic_fetch_add(&thread_errors, 1, __ATOMIC_RELAXED);
	return NULL;
}

/*
 * One round of calls [from, to) on every vCPU thread: at once, or one thread
 * after the other. A synthetic event's program can be preempted half-way
 * (BPF_PROG_TEST_RUN only disables migration; a tracepoint's program runs
 * with preemption off), and --exits keeps its open exit in the CPU's slot:
 * another of these threads running in that gap would find it half-written,
 * which no real kvm_exit can cause. One thread at a time keeps every event
 * whole as far as the programs can tell.
 */
static void run_round(unsigned int from, unsigned int to, bool one_at_a_time)
{
	pthread_t th[THREADS];

	calls_from = from;
	calls_to = to;
	for (unsigned long i = 0; i < THREADS; i++) {
		pthread_create(&th[i], NULL, vcpu_thread, (void *)i);
		if (one_at_a_time)
			pthread_join(th[i], NULL);
	}
	for (int i = 0; i < THREADS && !one_at_a_time; i++)
		pthread_join(th[i], NULL);
}

/* --exits: the final EXITS block, as record writes it (programs detached, before the trailer). */
static void final_exits(void *ctx, struct ht_writer *writer)
{
	struct ht_exit_sampler *s = ctx;

	(void)writer;
	if (ht_exit_sampler_sample(s, ht_monotonic_ns(), true))
		__atomic_fetch_add(&thread_errors, 1, __ATOMIC_RELAXED);
}

/*
 * --vcpu-sched: each vCPU thread (they all ran, and are vCPU threads to the
 * programs) is switched out for a host thread, thread 0 and 2 preempted,
 * thread 1 blocked, and back in, one after the other, at the clock's time.
 */
static int switch_rounds(void)
{
	const __u32 other = 1, tgid = (__u32)getpid();
	int err = 0;

	/* Each thread is known to the programs since its first exit (its entry in vcpu_thread_table). */
	for (unsigned int i = 0; i < THREADS; i++)
		err |= ht_synth_switch(tracer, vcpu_tids[i], tgid, other + i, other + i, i != 1, 0);
	for (unsigned int i = 0; i < THREADS; i++)
		err |= ht_synth_switch(tracer, other + i, other + i, vcpu_tids[i], tgid, true, 0);
	return err;
}

static int synth(const char *path, bool drops, bool exits, bool vcpu_sched)
{
	/*
	 * --vcpu-sched: only the synthetic switches move the threads' states (no
	 * real sched_switch or thread exit): the vCPU threads stay known after
	 * they ended, for the switches between rounds, and the file holds
	 * exactly those.
	 */
	struct ht_tracer_opts o = { .isa = HT_ISA_SVM, .synthetic = true, .synthetic_switches_only = vcpu_sched,
				    .exits = exits, .vcpu_sched = vcpu_sched,
				    .ringbuf_bytes = drops ? 4096 : HT_DEFAULT_RINGBUF_BYTES };
	struct ht_exit_sampler sampler;
	struct ht_file_header hdr;
	struct ht_recording rec;
	struct ht_trailer trailer;
	struct ht_writer *w;
	char err[512];
	int ret;

	ht_filters_default(&o.filters);
	o.filters.nr[1] = 1001;
	o.filters.nr_count = 2;
	/*
	 * --vcpu-sched: no real switch is seen, so a thread that migrated
	 * between two of its events (its exit on one CPU, its entry on another)
	 * would give records no real vCPU thread can, and the exports would
	 * infer switches from them (a busy host made lttng's check fail so).
	 * Every thread of the run stays on the CPU it starts on.
	 */
	if (vcpu_sched) {
		cpu_set_t one;
		int cpu = sched_getcpu();

		CPU_ZERO(&one);
		if (cpu >= 0)
			CPU_SET(cpu, &one);
		if (cpu < 0 || sched_setaffinity(0, sizeof(one), &one)) {
			fprintf(stderr, "trace_gen: cannot stay on one CPU: %s\n", strerror(errno));
			return 1;
		}
	}
	if ((ret = ht_synth_layout_load(&layout, err, sizeof(err))) ||
	    (ret = ht_tracer_load(&tracer, &o, err, sizeof(err)))) {
		fprintf(stderr, "trace_gen: %s\n", err);
		return 1;
	}
	ht_header_init(&hdr);
	hdr.filter_nr_count = 2;
	hdr.filter_nr[0] = 1000;
	hdr.filter_nr[1] = 1001;
	hdr.ringbuf_bytes = (__u32)o.ringbuf_bytes;
	if (vcpu_sched)
		hdr.filter_flags |= HT_FILTER_F_VCPU_SCHED;
	if (ht_writer_open(path, true, &hdr, &w, err, sizeof(err)) || ht_recording_init(&rec, tracer, w)) {
		fprintf(stderr, "trace_gen: %s\n", err);
		return 1;
	}
	if (exits) {
		if (ht_exit_sampler_init(&sampler, tracer, w, ht_monotonic_ns())) {
			fprintf(stderr, "trace_gen: out of memory\n");
			return 1;
		}
		rec.before_close = final_exits;
		rec.before_close_ctx = &sampler;
	}
	if (drops)
		calls_per_thread = 100; /* 46 records fit in one page: the rest is dropped */
	if (exits) {
		/* The first half's records drained, then an EXITS block, then the second half. */
		run_round(0, calls_per_thread / 2, true);
		if (vcpu_sched && switch_rounds())
			thread_errors++;
		while ((ret = ht_recording_pump(&rec, 0)) > 0)
			;
		if (ret < 0 || ht_exit_sampler_sample(&sampler, ht_monotonic_ns(), false))
			thread_errors++;
		run_round(calls_per_thread / 2, calls_per_thread, true);
		if (vcpu_sched && switch_rounds())
			thread_errors++;
	} else {
		run_round(0, calls_per_thread, false);
	}
	ret = ht_recording_finish(&rec, &trailer);
	if (exits)
		ht_exit_sampler_free(&sampler);
	ht_tracer_destroy(tracer);
	if (ret || thread_errors) {
		fprintf(stderr, "trace_gen: recording failed: %s\n", ret ? strerror(-ret) : "a synthetic event or an exit sample failed");
		return 1;
	}
	printf("%llu records, %llu dropped\n", (unsigned long long)trailer.records,
	       (unsigned long long)ht_trailer_lost(&trailer));
	return 0;
}

static int bulk(const char *path, uint64_t n, bool wide, bool compress, bool switches)
{
	struct ht_file_header hdr;
	struct ht_trailer t = { 0 };
	struct ht_writer *w;
	char err[512];

	ht_header_init(&hdr);
	if (switches)
		hdr.filter_flags |= HT_FILTER_F_VCPU_SCHED;
	if (ht_writer_open(path, true, &hdr, &w, err, sizeof(err))) {
		fprintf(stderr, "trace_gen: %s\n", err);
		return 1;
	}
	if (compress)
		ht_writer_set_encoding(w, HT_ENCODING_DELTA_ZLIB);
	for (uint64_t i = 0; i < n; i++) {
		struct ht_record r = {
			.exit_ns = hdr.start_monotonic_ns + 1000 + i * 250,
			.guest_rip = 0x7f0000001000ull + i % 4,
			.a0 = KERNEL_ADDRESS + i, .a1 = i, .a2 = i * 3, .a3 = ~i,
			.nr = 1000, .exit_reason = HT_SVM_EXIT_CODE_VMMCALL,
			.exit_to_hcall_ns = 100 + i % 50, .hcall_to_entry_ns = 80 + i % 30,
			.host_pid = 4242, .host_tid = 4243 + (__u32)(i % 4), .vcpu_id = (__u16)(i % 4),
			.exit_cpu = (__u16)(i % 2), .entry_cpu = (__u16)(i % 2), .isa = HT_ISA_SVM,
		};
		if (wide) {
			/* A scrambled spread per vCPU, the ranges of the vCPUs overlapping. */
			uint64_t spread = (i * 2654435761u) % 250000;
			r.exit_to_hcall_ns = (__u32)(4096 + r.vcpu_id * 100000 + spread);
			r.hcall_to_entry_ns = (__u32)(4096 + (spread * 7) % 500000);
		}
		ht_writer_add(w, &r);
		if (switches) {
			/* Before the next record's entry and its thread's next exit (a record takes at most 258 ns). */
			struct ht_vcpu_switch sw = {
				.time_ns = r.exit_ns + r.exit_to_hcall_ns + r.hcall_to_entry_ns + 10,
				.kind = (i / 4) % 2 ? HT_SWITCH_IN : HT_SWITCH_OUT, .involuntary = (i / 8) % 2,
				.prev_state = !((i / 8) % 2), .other_tid = 77, .other_pid = 77, .other_comm = "kworker/0:1",
				.host_pid = r.host_pid, .host_tid = r.host_tid, .vcpu_id = r.vcpu_id, .cpu = r.exit_cpu,
				.flags = HT_REC_F_VCPU_SWITCH,
			};
			memcpy(&r, &sw, sizeof(r));
			ht_writer_add(w, &r);
		}
	}
	t.records = switches ? 2 * n : n;
	t.end_monotonic_ns = hdr.start_monotonic_ns + 1000 + n * 250;
	t.end_realtime_ns = hdr.start_realtime_ns + 1000 + n * 250;
	if (ht_writer_close(w, &t)) {
		fprintf(stderr, "trace_gen: cannot write %s\n", path);
		return 1;
	}
	return 0;
}

/* ---- trace_gen guest ---- */

#define GUEST_PRINTK 0xffffffff9a0c1230ull
#define GUEST_SYS_SYNC 0xffffffff9a3ac050ull     /* __x64_sys_sync, also __ia32_sys_sync */
#define GUEST_ITERATE 0xffffffff9a3b1000ull      /* iterate_supers */
#define GUEST_DO_SYSCALL 0xffffffff9aa01000ull   /* do_syscall_64 */
#define GUEST_MODULE_RIP 0xffffffffc0a01040ull   /* emit_module_event in [hypertrace_guest] */

static const char guest_kallsyms[] =
	"ffffffff9a0c1230 T _printk\n"
	"ffffffff9a3ac050 T __ia32_sys_sync\n"
	"ffffffff9a3ac050 T __x64_sys_sync\n"
	"ffffffff9a3b1000 T iterate_supers\n"
	"ffffffff9a3b1400 T ksys_sync\n"
	"ffffffff9aa01000 T do_syscall_64\n"
	"ffffffffc0a01000 t emit_module_event\t[hypertrace_guest]\n";

struct gen_vcpu {
	uint32_t pid, tid;
	uint32_t vcpu;                /* KVM's vcpu_id (the APIC ID QEMU gave it) */
	uint32_t gcpu;                /* the guest's number of the CPU, smp_processor_id() */
	uint32_t cpu;                 /* the host CPU it runs on */
	uint64_t t;                   /* its next exit time */
	struct ht_record recs[64];    /* one round's records */
	unsigned int n, next;
};

/* Adds one hypercall record to v: exit at v->t, then 1.0 + 0.5 us, then 3 us until the next. */
static void gen_call(struct gen_vcpu *v, uint32_t nr, struct ht_guest_args a)
{
	struct ht_record *r = &v->recs[v->n++];

	memset(r, 0, sizeof(*r));
	r->exit_ns = v->t;
	r->guest_rip = GUEST_MODULE_RIP + v->n;
	r->nr = nr;
	r->a0 = a.a[0];
	r->a1 = a.a[1];
	r->a2 = a.a[2];
	r->a3 = a.a[3];
	r->exit_reason = HT_SVM_EXIT_CODE_VMMCALL;
	r->exit_to_hcall_ns = 1000 + v->vcpu * 7 + v->n;
	r->hcall_to_entry_ns = 500 + v->n;
	r->host_pid = v->pid;
	r->host_tid = v->tid;
	r->vcpu_id = (__u16)v->vcpu;
	r->exit_cpu = r->entry_cpu = (__u16)v->cpu;
	r->isa = HT_ISA_SVM;
	v->t += r->exit_to_hcall_ns + r->hcall_to_entry_ns + 3000;
}

/*
 * Every prev_state the guest module sends: 0 (runnable), TASK_REPORT's bits
 * as __trace_sched_switch_state() gives them on kernels since 4.14 (S D T t
 * X Z P I), and TASK_REPORT_MAX (0x100) for a preempted task.
 */
static const uint32_t guest_states[] = { 0x1, 0x2, 0x4, 0x8, 0x10, 0x20, 0x40, 0x80, 0x100, 0x0 };

static uint64_t entry_of(const struct ht_record *r)
{
	return r->exit_ns + r->exit_to_hcall_ns + r->hcall_to_entry_ns;
}

/* The switch records of one round, written among its records in time order (as the drain merges them). */
static struct ht_record round_switches[8];
static unsigned int nswitches;

/* A switch of vCPU thread v at time ns on host CPU cpu; other: the thread on the other side. */
static void gen_switch(const struct gen_vcpu *v, uint32_t kind, uint64_t ns, uint32_t cpu, bool involuntary,
		       uint64_t state, uint32_t other_tid, uint32_t other_pid, const char *other_comm)
{
	struct ht_vcpu_switch sw = { .time_ns = ns, .kind = kind, .involuntary = involuntary, .prev_state = state,
				     .other_tid = other_tid, .other_pid = other_pid, .host_pid = v->pid,
				     .host_tid = v->tid, .vcpu_id = (__u16)v->vcpu, .cpu = (__u16)cpu,
				     .flags = HT_REC_F_VCPU_SWITCH };

	/* The kernel's comm: NUL-padded, all 16 bytes when full. */
	memcpy(sw.other_comm, other_comm, strnlen(other_comm, sizeof(sw.other_comm)));
	memcpy(&round_switches[nswitches++], &sw, sizeof(sw));
}

/* Where a record or a switch goes in the file: a record at its entry, a switch at its time. */
static uint64_t file_time(const struct ht_record *r)
{
	return r->flags & HT_REC_F_VCPU_SWITCH ? r->exit_ns : entry_of(r);
}

/* One round of vCPU v: a switch to a worker, its wakeup of the next, an IRQ, a sync() call, back to idle. */
static void gen_round(struct gen_vcpu *v, unsigned int round)
{
	uint32_t c = v->gcpu, worker = 100 + c * 10 + round % 3, next = 100 + c * 10 + (round + 1) % 3;
	char comm[16];

	/* The second VM's tasks are named with an escape byte: a guest chooses its task names. */
	const char *fmt = v->pid == 4242 ? "worker-%u" : "\x1bw-%u";

	snprintf(comm, sizeof(comm), fmt, worker);
	gen_call(v, HT_GUEST_NR_SCHED_SWITCH, ht_guest_pack_sched_switch(0, 120, 0, worker, 120, comm, c));
	snprintf(comm, sizeof(comm), fmt, next);
	gen_call(v, HT_GUEST_NR_SCHED_WAKEUP, ht_guest_pack_sched_wakeup(next, 120, c, comm, c));
	gen_call(v, HT_GUEST_NR_IRQ_ENTRY, ht_guest_pack_irq_entry(4, "ttyS0", c));
	gen_call(v, HT_GUEST_NR_IRQ_EXIT, ht_guest_pack_irq_exit(4, 1, c));
	gen_call(v, HT_GUEST_NR_FUNC_ENTRY, ht_guest_pack_func(GUEST_SYS_SYNC, GUEST_DO_SYSCALL + 0x4c, worker, c));
	gen_call(v, HT_GUEST_NR_FUNC_ENTRY, ht_guest_pack_func(GUEST_ITERATE, GUEST_SYS_SYNC + 0x2a, worker, c));
	gen_call(v, HT_GUEST_NR_FUNC_EXIT, ht_guest_pack_func(GUEST_ITERATE, 0, worker, c));
	gen_call(v, HT_GUEST_NR_FUNC_EXIT, ht_guest_pack_func(GUEST_SYS_SYNC, 0, worker, c));
	gen_call(v, HT_GUEST_NR_SCHED_SWITCH,
		 ht_guest_pack_sched_switch(worker, 120, guest_states[round % ARRAY_SIZE(guest_states)], 0, 120, "swapper", c));
}

static int write_kallsyms(const char *path)
{
	char sympath[4096];
	FILE *f;

	snprintf(sympath, sizeof(sympath), "%s.kallsyms", path);
	f = fopen(sympath, "w");
	if (!f || fputs(guest_kallsyms, f) < 0 || fclose(f)) {
		fprintf(stderr, "trace_gen: cannot write %s\n", sympath);
		return 1;
	}
	return 0;
}

static int guest(const char *path, unsigned int rounds, bool impossible)
{
	static const char *names[2] = { "web1", "vm\"\\\x1b[31mx" };
	struct gen_vcpu v[4];
	struct ht_file_header hdr;
	struct ht_trailer t = { 0 };
	struct ht_writer *w;
	char err[512];
	uint64_t last = 0;

	ht_header_init(&hdr);
	for (int i = 0; i < 7; i++)
		hdr.filter_nr[i] = HT_GUEST_NR_MODULE + (unsigned int)i;
	hdr.filter_nr_count = 7;
	hdr.filter_flags |= HT_FILTER_F_VCPU_SCHED;
	if (ht_writer_open(path, true, &hdr, &w, err, sizeof(err))) {
		fprintf(stderr, "trace_gen: %s\n", err);
		return 1;
	}
	for (unsigned int i = 0; i < 4; i++) {
		struct ht_identity id = { .first_seen_ns = hdr.start_monotonic_ns };

		/*
		 * Each vCPU thread on a host CPU of its own (one thread per CPU at a
		 * time, as a host runs them); the second VM's vcpu_ids have a gap
		 * (0 and 2, as QEMU's APIC IDs for sockets of 2 cores with one CPU
		 * each) while its guest numbers its CPUs 0 and 1.
		 */
		v[i] = (struct gen_vcpu){ .pid = 4242 + 100 * (i / 2), .tid = 4243 + 100 * (i / 2) + i % 2,
					  .vcpu = i < 2 ? i : 2 * (i % 2), .gcpu = i % 2, .cpu = impossible ? i % 2 : i,
					  .t = hdr.start_monotonic_ns + 10000 + i * 1700 };
		id.pid = v[i].pid;
		id.tid = v[i].tid;
		snprintf(id.process_name, sizeof(id.process_name), "qemu-system-x86");
		snprintf(id.thread_name, sizeof(id.thread_name), "CPU %u/KVM", v[i].gcpu);
		snprintf(id.vm_name, sizeof(id.vm_name), "%s", names[i / 2]);
		ht_writer_add_identity(w, &id);
	}
	for (unsigned int round = 0; round <= rounds + 1; round++) {
		unsigned int swnext = 0;

		nswitches = 0;
		for (unsigned int i = 0; i < 4; i++) {
			v[i].n = v[i].next = 0;
			if (round == 0 && i % 2 == 0)
				gen_call(&v[i], HT_GUEST_NR_MODULE,
					 ht_guest_pack_module(1, 0xf, 2, 0, GUEST_PRINTK, "_printk"));
			else if (round == rounds + 1 && i % 2 == 0)
				gen_call(&v[i], HT_GUEST_NR_MODULE, ht_guest_pack_module(0, 0xf, 2, 0, GUEST_PRINTK, "_printk"));
			else if (round > 0 && round <= rounds)
				gen_round(&v[i], round);
		}
		if (round == rounds / 2 + 1) {
			/*
			 * vCPU 0 of the first VM is switched out of host CPU 0 in the middle
			 * of its last hypercall of the round and enters on host CPU 1, 60 us
			 * later, while vCPU 1 (on CPU 0 from here on) exits and enters there.
			 */
			struct ht_record *r = &v[0].recs[v[0].n - 1];
			uint64_t preempted = r->exit_ns + r->exit_to_hcall_ns + 1000;

			r->hcall_to_entry_ns += 60000;
			r->entry_cpu = 1;
			/*
			 * vCPU 1 blocks on host CPU 1 before its round (a host thread named
			 * with an escape byte runs instead), vCPU 0 is preempted on CPU 0 for
			 * vCPU 1 after its hypercall (one switch, a record for each), and
			 * comes back on CPU 1 in place of the host thread before its entry.
			 */
			gen_switch(&v[1], HT_SWITCH_OUT, v[1].recs[0].exit_ns - 500, 1, false, 1, 77, 77, "kw\x1b[31m\xff/1:2-evt");
			gen_switch(&v[0], HT_SWITCH_OUT, preempted, 0, true, 0, v[1].tid, v[1].pid, "CPU 1/KVM");
			gen_switch(&v[1], HT_SWITCH_IN, preempted, 0, false, 0, v[0].tid, v[0].pid, "CPU 0/KVM");
			gen_switch(&v[0], HT_SWITCH_IN, entry_of(r) - 2000, 1, false, 0, 77, 77, "kw\x1b[31m\xff/1:2-evt");
			v[0].cpu = 1;
			v[1].cpu = 0;
			for (unsigned int j = 0; j < v[1].n; j++) {
				v[1].recs[j].exit_ns = r->exit_ns + 5000 + j * 4000;
				v[1].recs[j].exit_cpu = v[1].recs[j].entry_cpu = 0;
			}
			v[0].t = entry_of(r) + 3000;
			v[1].t = entry_of(&v[1].recs[v[1].n - 1]) + 3000;
		}
		/* Into the file in entry order, as record drains them. */
		for (;;) {
			int best = -1;
			for (int i = 0; i < 4; i++)
				if (v[i].next < v[i].n &&
				    (best < 0 || entry_of(&v[i].recs[v[i].next]) < entry_of(&v[best].recs[v[best].next])))
					best = i;
			if (swnext < nswitches &&
			    (best < 0 || file_time(&round_switches[swnext]) <= entry_of(&v[best].recs[v[best].next]))) {
				ht_writer_add(w, &round_switches[swnext++]);
				t.records++;
				continue;
			}
			if (best < 0)
				break;
			ht_writer_add(w, &v[best].recs[v[best].next]);
			if (entry_of(&v[best].recs[v[best].next]) > last)
				last = entry_of(&v[best].recs[v[best].next]);
			v[best].next++;
			t.records++;
		}
		/* The next round starts after every vCPU's last call of this one. */
		for (int i = 0; i < 4; i++)
			if (v[i].t < last + 1000)
				v[i].t = last + 1000 + (uint64_t)i * 1700;
	}
	/* The second VM's vCPU 0 blocks (a halted vCPU) and is still off its CPU when the recording ends. */
	nswitches = 0;
	gen_switch(&v[2], HT_SWITCH_OUT, last + 500, v[2].cpu, false, 1, 0, 0, "swapper/0");
	ht_writer_add(w, &round_switches[0]);
	t.records++;
	t.end_monotonic_ns = last + 1000000;
	t.end_realtime_ns = hdr.start_realtime_ns + (t.end_monotonic_ns - hdr.start_monotonic_ns);
	if (ht_writer_close(w, &t)) {
		fprintf(stderr, "trace_gen: cannot write %s\n", path);
		return 1;
	}
	printf("%llu records\n", (unsigned long long)t.records);
	return write_kallsyms(path);
}

/* ---- trace_gen guests ---- */

static int guests(const char *path, unsigned int nvms, unsigned int nvcpus, const uint32_t *vcpu_ids,
		  bool inside_calls, bool lost_exit, bool lost_switch)
{
	struct ht_file_header hdr;
	struct ht_trailer t = { 0 };
	struct ht_writer *w;
	char err[512];
	uint64_t last = 0;

	ht_header_init(&hdr);
	for (int i = 0; i < 7; i++)
		hdr.filter_nr[i] = HT_GUEST_NR_MODULE + (unsigned int)i;
	hdr.filter_nr_count = 7;
	if (ht_writer_open(path, true, &hdr, &w, err, sizeof(err))) {
		fprintf(stderr, "trace_gen: %s\n", err);
		return 1;
	}
	for (unsigned int n = 0; n < nvms * nvcpus; n++) {
		/* Each vCPU's calls after the previous one's: two host CPUs, never two vCPUs at once on one. */
		unsigned int i = n / nvcpus, k = n % nvcpus;
		struct gen_vcpu v = { .pid = 20000 + (nvcpus + 1) * i, .tid = 20001 + (nvcpus + 1) * i + k,
				      .vcpu = vcpu_ids ? vcpu_ids[k] : k, .gcpu = k, .cpu = n % 2,
				      .t = hdr.start_monotonic_ns + 10000 + (uint64_t)n * 40000 };
		struct ht_identity id = { .pid = v.pid, .tid = v.tid, .first_seen_ns = hdr.start_monotonic_ns };
		uint32_t task = 100 + k * 10 + i % 7, state = guest_states[n % ARRAY_SIZE(guest_states)];

		snprintf(id.process_name, sizeof(id.process_name), "qemu-system-x86");
		snprintf(id.thread_name, sizeof(id.thread_name), "CPU %u/KVM", k & 127);
		snprintf(id.vm_name, sizeof(id.vm_name), "vm%u", i);
		ht_writer_add_identity(w, &id);
		if (k == 0)
			gen_call(&v, HT_GUEST_NR_MODULE, ht_guest_pack_module(1, 0xf, 2, 0, GUEST_PRINTK, "_printk"));
		if (inside_calls) {
			gen_call(&v, HT_GUEST_NR_FUNC_EXIT, ht_guest_pack_func(GUEST_ITERATE, 0, task, k));
			gen_call(&v, HT_GUEST_NR_FUNC_EXIT, ht_guest_pack_func(GUEST_SYS_SYNC, 0, task, k));
		}
		gen_call(&v, HT_GUEST_NR_SCHED_SWITCH, ht_guest_pack_sched_switch(0, 120, 0, task, 120, "worker", k));
		gen_call(&v, HT_GUEST_NR_FUNC_ENTRY, ht_guest_pack_func(GUEST_SYS_SYNC, GUEST_DO_SYSCALL + 0x4c, task, k));
		gen_call(&v, HT_GUEST_NR_FUNC_ENTRY, ht_guest_pack_func(GUEST_ITERATE, GUEST_SYS_SYNC + 0x2a, task, k));
		if (!lost_exit)
			gen_call(&v, HT_GUEST_NR_FUNC_EXIT, ht_guest_pack_func(GUEST_ITERATE, 0, task, k));
		gen_call(&v, HT_GUEST_NR_FUNC_EXIT, ht_guest_pack_func(GUEST_SYS_SYNC, 0, task, k));
		if (lost_switch && i % 2 && k == 0) {
			gen_call(&v, HT_GUEST_NR_MODULE, ht_guest_pack_module(0, 0xf, 2, 0, GUEST_PRINTK, "_printk"));
			gen_call(&v, HT_GUEST_NR_MODULE, ht_guest_pack_module(1, 0xf, 2, 0, GUEST_PRINTK, "_printk"));
		}
		gen_call(&v, HT_GUEST_NR_SCHED_SWITCH,
			 ht_guest_pack_sched_switch(lost_switch ? task + 1 : task, 120, state, 0, 120, "swapper", k));
		for (unsigned int j = 0; j < v.n; j++) {
			ht_writer_add(w, &v.recs[j]);
			t.records++;
		}
		last = entry_of(&v.recs[v.n - 1]);
	}
	t.end_monotonic_ns = last + 1000000;
	t.end_realtime_ns = hdr.start_realtime_ns + (t.end_monotonic_ns - hdr.start_monotonic_ns);
	if (ht_writer_close(w, &t)) {
		fprintf(stderr, "trace_gen: cannot write %s\n", path);
		return 1;
	}
	printf("%llu records\n", (unsigned long long)t.records);
	return write_kallsyms(path);
}

/* ---- trace_gen account: the vCPU account beside the switches it must agree with ---- */

#define ACC_THREADS 3
#define ACC_ROUND_NS 1000000ull
#define ACC_BLOCK_NS 730000ull
#define ACC_MAX_SEGS 4096
#define ACC_PID 5000u

/* One stretch of a vCPU thread's timeline in one state of the account. */
struct acc_seg {
	uint64_t from, to;
	int state;
};

struct acc_thread {
	uint32_t tid;
	uint16_t vcpu;
	uint64_t start_ns, end_ns; /* end_ns: UINT64_MAX while it runs */
	struct acc_seg seg[ACC_MAX_SEGS];
	unsigned int nseg;
	bool gone_written;
};

static struct acc_thread acc[ACC_THREADS];
static struct ht_record *acc_sw;
static unsigned int acc_nsw;

/* us: microseconds into the round that starts at base. */
static void acc_state(struct acc_thread *t, uint64_t base, unsigned int from_us, unsigned int to_us, int state)
{
	if (t->nseg < ACC_MAX_SEGS)
		t->seg[t->nseg++] = (struct acc_seg){ base + from_us * 1000ull, base + to_us * 1000ull, state };
}

static void acc_switch(const struct acc_thread *t, uint32_t kind, uint64_t ns, uint32_t cpu, bool involuntary,
		       uint64_t state, uint32_t other_tid, uint32_t other_pid, const char *other_comm)
{
	struct ht_vcpu_switch sw = { .time_ns = ns, .kind = kind, .involuntary = involuntary, .prev_state = state,
				     .other_tid = other_tid, .other_pid = other_pid, .host_pid = ACC_PID,
				     .host_tid = t->tid, .vcpu_id = t->vcpu, .cpu = (__u16)cpu,
				     .flags = HT_REC_F_VCPU_SWITCH };

	memcpy(sw.other_comm, other_comm, strnlen(other_comm, sizeof(sw.other_comm)));
	memcpy(&acc_sw[acc_nsw++], &sw, sizeof(sw));
}

/*
 * One round at base (us into it), each CPU running one thread at a time:
 *   CPU 0: vCPU 0 [0,300) | vCPU 2 [300,500) | worker [500,600) | vCPU 0 [600,1000)
 *   CPU 1: vCPU 1 [0,400) | idle [400,750) | vCPU 2 [750,900) | softirq [900,950) | vCPU 1 [950,1000)
 * vCPU 2 waits from 900 into the next round's 300; round 0 first sees it at 300,
 * the last round ends it at 850 (on CPU 1, no switch after).
 */
static void acc_round(uint64_t base, unsigned int round, unsigned int rounds, bool contradict)
{
	struct acc_thread *p = &acc[0], *q = &acc[1], *r = &acc[2];
	bool first = round == 0, last = round == rounds - 1;
	const uint64_t us = 1000;

	/* vCPU 0 on CPU 0: preempted at 300 by vCPU 2, back at 600 after the worker. */
	acc_state(p, base, 0, 200, HT_VCPU_GUEST);
	acc_state(p, base, 200, 260, HT_VCPU_KVM);
	acc_state(p, base, 260, 300, HT_VCPU_VMM);
	acc_state(p, base, 300, 600, contradict && round == 3 ? HT_VCPU_KVM : HT_VCPU_WAIT);
	acc_state(p, base, 600, 620, HT_VCPU_KVM);
	acc_state(p, base, 620, 1000, HT_VCPU_GUEST);
	acc_switch(p, HT_SWITCH_OUT, base + 300 * us, 0, true, 0, r->tid, ACC_PID, "CPU 2/KVM");
	if (first)
		r->start_ns = base + 300 * us;
	else
		acc_state(r, base, 0, 300, HT_VCPU_WAIT);
	acc_switch(r, HT_SWITCH_IN, base + 300 * us, 0, false, 0, p->tid, ACC_PID, "CPU 0/KVM");
	acc_state(r, base, 300, 320, HT_VCPU_KVM);
	acc_state(r, base, 320, 450, HT_VCPU_GUEST);
	acc_state(r, base, 450, 500, HT_VCPU_KVM);
	/* vCPU 2 halts at 500 (TASK_INTERRUPTIBLE in a HLT exit), woken at 700. */
	acc_switch(r, HT_SWITCH_OUT, base + 500 * us, 0, false, 1, 100, 100, "kworker/0:1");
	acc_state(r, base, 500, 700, HT_VCPU_HALTED);
	acc_state(r, base, 700, 750, HT_VCPU_WAIT);
	acc_switch(p, HT_SWITCH_IN, base + 600 * us, 0, false, 0, 100, 100, "kworker/0:1");
	/* vCPU 1 on CPU 1: blocked in the VMM at 400 (TASK_UNINTERRUPTIBLE), woken at 850, back at 950. */
	acc_state(q, base, 0, 100, HT_VCPU_GUEST);
	acc_state(q, base, 100, 150, HT_VCPU_KVM);
	acc_state(q, base, 150, 400, HT_VCPU_VMM);
	acc_switch(q, HT_SWITCH_OUT, base + 400 * us, 1, false, 2, 0, 0, "swapper/1");
	acc_state(q, base, 400, 850, HT_VCPU_BLOCKED);
	acc_state(q, base, 850, 950, HT_VCPU_WAIT);
	/* vCPU 2 comes back on CPU 1 (migrated) at 750. */
	acc_switch(r, HT_SWITCH_IN, base + 750 * us, 1, false, 0, 0, 0, "swapper/1");
	acc_state(r, base, 750, 800, HT_VCPU_KVM);
	if (last) {
		acc_state(r, base, 800, 850, HT_VCPU_GUEST);
		r->end_ns = base + 850 * us;
	} else {
		acc_state(r, base, 800, 900, HT_VCPU_GUEST);
		acc_switch(r, HT_SWITCH_OUT, base + 900 * us, 1, true, 0, 101, 101, "ksoftirqd/1");
		acc_state(r, base, 900, 1000, HT_VCPU_WAIT);
	}
	acc_switch(q, HT_SWITCH_IN, base + 950 * us, 1, false, 0, 101, 101, "ksoftirqd/1");
	acc_state(q, base, 950, 1000, HT_VCPU_KVM);
}

/* Thread t's account up to now (its end, if before): each state's time since its start. */
static void acc_row(const struct acc_thread *t, uint64_t now, struct ht_vcpu_wait_rec *row)
{
	uint64_t until = now < t->end_ns ? now : t->end_ns;

	memset(row, 0, sizeof(*row));
	row->w.pid = ACC_PID;
	row->w.tid = t->tid;
	row->w.vcpu = t->vcpu;
	row->w.pad1 = t->end_ns <= now ? HT_VCPU_WAIT_F_GONE : 0;
	row->a.start_ns = t->start_ns;
	row->a.as_of_ns = until;
	for (unsigned int i = 0; i < t->nseg; i++) {
		const struct acc_seg *g = &t->seg[i];
		if (g->from < until)
			row->a.state_ns[g->state] += (g->to < until ? g->to : until) - g->from;
	}
	row->w.wait_ns = row->a.state_ns[HT_VCPU_WAIT];
}

/* An EXITS block at now: every thread started by then and not yet written as ended. */
static int acc_block(struct ht_writer *w, uint64_t now, bool final)
{
	unsigned char payload[sizeof(struct ht_exits_header) + ACC_THREADS * sizeof(struct ht_vcpu_wait_rec)];
	struct ht_exits_header h = { .time_ns = now, .flags = final ? HT_EXITS_F_FINAL : 0 };
	struct ht_vcpu_wait_rec row;

	for (unsigned int i = 0; i < ACC_THREADS; i++) {
		struct acc_thread *t = &acc[i];
		if (t->start_ns > now || t->gone_written)
			continue;
		acc_row(t, now, &row);
		t->gone_written = row.w.pad1 & HT_VCPU_WAIT_F_GONE;
		memcpy(payload + sizeof(h) + h.nthreads++ * sizeof(row), &row, sizeof(row));
	}
	memcpy(payload, &h, sizeof(h));
	ht_writer_flush(w);
	return ht_writer_add_block(w, HT_BLOCK_EXITS, payload,
				   (__u32)(sizeof(h) + h.nthreads * sizeof(struct ht_vcpu_wait_rec)), h.nthreads);
}

static int account(const char *path, unsigned int rounds, bool contradict)
{
	struct ht_file_header hdr;
	struct ht_trailer trailer;
	struct ht_writer *w;
	char err[512];
	uint64_t t0, end, next_block;
	unsigned int n = 0;
	int ret = 0;

	ht_header_init(&hdr);
	hdr.filter_flags |= HT_FILTER_F_VCPU_SCHED;
	t0 = hdr.start_monotonic_ns + ACC_ROUND_NS;
	end = t0 + rounds * ACC_ROUND_NS;
	acc_sw = calloc((size_t)rounds * 16, sizeof(*acc_sw));
	if (!acc_sw || ht_writer_open(path, true, &hdr, &w, err, sizeof(err))) {
		fprintf(stderr, "trace_gen: %s\n", acc_sw ? err : "out of memory");
		return 1;
	}
	for (unsigned int i = 0; i < ACC_THREADS; i++) {
		struct ht_identity id = { .first_seen_ns = t0, .pid = ACC_PID };

		acc[i] = (struct acc_thread){ .tid = ACC_PID + 1 + i, .vcpu = (uint16_t)i, .start_ns = t0,
					      .end_ns = UINT64_MAX };
		id.tid = acc[i].tid;
		snprintf(id.process_name, sizeof(id.process_name), "qemu-system-x86");
		snprintf(id.thread_name, sizeof(id.thread_name), "CPU %u/KVM", i);
		snprintf(id.vm_name, sizeof(id.vm_name), "acct");
		ht_writer_add_identity(w, &id);
	}
	for (unsigned int r = 0; r < rounds; r++)
		acc_round(t0 + r * ACC_ROUND_NS, r, rounds, contradict);
	/* The switches in time order (a round's are written in the order of their times), a block every 730 us. */
	for (unsigned int i = 1; i < acc_nsw; i++)
		for (unsigned int j = i; j > 0 && acc_sw[j].exit_ns < acc_sw[j - 1].exit_ns; j--) {
			struct ht_record tmp = acc_sw[j];
			acc_sw[j] = acc_sw[j - 1];
			acc_sw[j - 1] = tmp;
		}
	for (next_block = t0 + ACC_BLOCK_NS; next_block < end && !ret; next_block += ACC_BLOCK_NS) {
		while (n < acc_nsw && acc_sw[n].exit_ns <= next_block)
			ht_writer_add(w, &acc_sw[n++]);
		ret = acc_block(w, next_block, false);
	}
	while (n < acc_nsw)
		ht_writer_add(w, &acc_sw[n++]);
	if (ret || acc_block(w, end, true) || ht_writer_close(w, &trailer)) {
		fprintf(stderr, "trace_gen: cannot write %s\n", path);
		return 1;
	}
	printf("%u switches, %llu ns\n", acc_nsw, (unsigned long long)(end - t0));
	free(acc_sw);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t n;

	if (argc >= 3 && !strcmp(argv[1], "synth")) {
		bool drops = false, exits = false, vcpu_sched = false;
		for (int i = 3; i < argc; i++) {
			if (!strcmp(argv[i], "--drops"))
				drops = true;
			else if (!strcmp(argv[i], "--exits"))
				exits = true;
			else if (!strcmp(argv[i], "--vcpu-sched"))
				vcpu_sched = true;
			else if (!strcmp(argv[i], "--calls") && i + 1 < argc && ht_parse_u64(argv[i + 1], 1, 100000, &n))
				calls_per_thread = (unsigned int)n, i++;
			else
				goto usage;
		}
		if (vcpu_sched && !exits)
			goto usage; /* as record: --vcpu-sched needs the vCPU threads --exits knows */
		return synth(argv[2], drops, exits, vcpu_sched);
	}
	if (argc >= 3 && !strcmp(argv[1], "guest")) {
		unsigned int rounds = 50;
		bool impossible = false;
		for (int i = 3; i < argc; i++) {
			if (!strcmp(argv[i], "--rounds") && i + 1 < argc && ht_parse_u64(argv[i + 1], 2, 100000, &n))
				rounds = (unsigned int)n, i++;
			else if (!strcmp(argv[i], "--impossible"))
				impossible = true;
			else
				goto usage;
		}
		return guest(argv[2], rounds, impossible);
	}
	if (argc >= 4 && !strcmp(argv[1], "guests") && ht_parse_u64(argv[3], 1, 1000000, &n)) {
		bool inside_calls = false, lost_exit = false, lost_switch = false;
		uint64_t nvcpus = 1;
		uint32_t ids[64];
		unsigned int nids = 0;
		for (int i = 4; i < argc; i++) {
			if (!strcmp(argv[i], "--vcpus") && i + 1 < argc && ht_parse_u64(argv[i + 1], 1, 64, &nvcpus))
				i++;
			else if (!strcmp(argv[i], "--vcpu-ids") && i + 1 < argc) {
				char *list = argv[++i], *tok, *save = NULL;
				uint64_t id;
				for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
					if (nids == 64 || !ht_parse_u64(tok, 0, 4095, &id))
						goto usage;
					ids[nids++] = (uint32_t)id;
				}
			}
			else if (!strcmp(argv[i], "--inside-calls"))
				inside_calls = true;
			else if (!strcmp(argv[i], "--lost-exit"))
				lost_exit = true;
			else if (!strcmp(argv[i], "--lost-switch"))
				lost_switch = true;
			else
				goto usage;
		}
		if (nids && nids != nvcpus)
			goto usage; /* a vcpu_id for each vCPU */
		return guests(argv[2], (unsigned int)n, (unsigned int)nvcpus, nids ? ids : NULL, inside_calls, lost_exit, lost_switch);
	}
	if (argc >= 4 && !strcmp(argv[1], "bulk") && ht_parse_u64(argv[3], 1, UINT64_MAX, &n)) {
		bool wide = false, compress = false, switches = false;
		for (int i = 4; i < argc; i++) {
			if (!strcmp(argv[i], "--wide"))
				wide = true;
			else if (!strcmp(argv[i], "--compress"))
				compress = true;
			else if (!strcmp(argv[i], "--switches"))
				switches = true;
			else
				goto usage;
		}
		if (wide && switches)
			goto usage; /* wide latencies overlap the switches */
		return bulk(argv[2], n, wide, compress, switches);
	}
	if (argc >= 3 && !strcmp(argv[1], "account")) {
		unsigned int rounds = 20;
		bool contradict = false;
		for (int i = 3; i < argc; i++) {
			if (!strcmp(argv[i], "--rounds") && i + 1 < argc && ht_parse_u64(argv[i + 1], 5, ACC_MAX_SEGS / 8, &n))
				rounds = (unsigned int)n, i++;
			else if (!strcmp(argv[i], "--contradict"))
				contradict = true;
			else
				goto usage;
		}
		return account(argv[2], rounds, contradict);
	}
usage:
	fprintf(stderr, "usage: trace_gen synth FILE [--calls N] [--drops] [--exits [--vcpu-sched]] | trace_gen bulk FILE N [--wide | --switches] [--compress]"
			" | trace_gen guest FILE [--rounds N] [--impossible] | trace_gen guests FILE N [--vcpus M [--vcpu-ids ID,...]] [--inside-calls] [--lost-exit] [--lost-switch]"
			" | trace_gen account FILE [--rounds N] [--contradict]\n");
	return 2;
}
