// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * BPF cost per event at native speed (make bench, item 1). Runs the real
 * handlers over synthetic events in a bpf_loop (bench/hotpath.bpf.c), next to
 * an empty handler and the hash-map reference designs, interleaving the cases
 * over many rounds. The table shows each case's fastest round and its median;
 * the targets compare the paired medians (see verdict).
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "hypertrace/record.h"
#include "bpf/vcpu_state.h" /* before the skeleton, whose .bss holds the CPU slots */
#include "hotpath.skel.h"
#include "synth.h"
#include "exits/vcpu_wakeups.h"
#include "record/tracer.h"
#include "bench_util.h"

enum { EMPTY, EXIT_NOMATCH, ENTRY_NOMATCH, FUSED, HASH_EXIT_NOMATCH, HASH_ENTRY_NOMATCH, HASH_FUSED,
       ANCHOR_EXIT_NOMATCH, ANCHOR_ENTRY_NOMATCH, ANCHOR_HYPERCALL,
       PART_CLOCK3, PART_STORAGE3, PART_RESERVE_SUBMIT, PART_RESERVE_COPY_SUBMIT, PART_WAKEUP_TEST, PART_WAKEUP_QUERY, SWITCH_OUT,
       /* Not programs of their own: EXIT_NOMATCH, ENTRY_NOMATCH or SWITCH_OUT with a slot armed or a state moved (see the rounds). */
       EXIT_ARMED_ELSEWHERE, SWITCH_WHILE_MOVED, ENTRY_ARMED_ELSEWHERE, SWITCH_OUT_ARMED_ELSEWHERE,
       /* --exits: programs of the second instance, loaded with exits_on. */
       FLOOR_PAIR, EXITS_PAIR, SWITCH_EXITS, SWITCH_VCPUS, WAKEUP_EXITS,
       /*
        * The whole sched_switch handler on two real threads (this one and its
        * parent), in two more instances: exits_on, and exits_on with
        * vcpu_sched_on. Neither thread a vCPU thread, then both.
        */
       PAIR_PLAIN_EXITS, PAIR_PLAIN_VSCHED, PAIR_VCPU_EXITS, PAIR_VCPU_VSCHED,
       /*
        * --boot: the --exits pair in two more instances with boot_on, this
        * thread's process taken for one that started before the recording
        * (not followed), then after it (followed: a record per exit).
        */
       BOOT_PAIR_IDLE, BOOT_PAIR_BOOTING,
       /*
        * A halted vCPU's wake-up path (this thread as the vCPU thread): its
        * floor, then the path with --exits, then with --exits --wakeups (a
        * record per wake-up, in an instance of its own), then with --exits
        * woken by an interrupt that is timed from its acceptance, then that
        * with --wakeups (the wake-up's record and the delivery's), then the
        * path with --exits and its timer's expiry noted while it sleeps.
        */
       HALT_FLOOR, HALT_CYCLE, HALT_CYCLE_WAKEUPS, HALT_IRQ_CYCLE, HALT_IRQ_CYCLE_WAKEUPS, HALT_DUE_CYCLE, NCASES };
/* hotpath.bpf.c's BENCH_SWITCH_PAIR and BENCH_REGISTER_PAIR: after the --exits cases' programs. */
#define PROG_SWITCH_PAIR (SWITCH_OUT + 5)
#define PROG_REGISTER_PAIR (SWITCH_OUT + 6)
#define PROG_FLOOR_HALT (SWITCH_OUT + 7)
#define PROG_HALT_CYCLE (SWITCH_OUT + 8)
#define PROG_HALT_IRQ_CYCLE (SWITCH_OUT + 9)
#define PROG_HALT_DUE_CYCLE (SWITCH_OUT + 10)
/* The BENCH_* case of hotpath.bpf.c each --exits case runs (its enum goes on after BENCH_SWITCH_OUT). */
static const int exits_case_prog[] = { [FLOOR_PAIR - FLOOR_PAIR] = SWITCH_OUT + 1, [EXITS_PAIR - FLOOR_PAIR] = SWITCH_OUT + 2,
				       [SWITCH_EXITS - FLOOR_PAIR] = SWITCH_OUT, [SWITCH_VCPUS - FLOOR_PAIR] = SWITCH_OUT + 3,
				       [WAKEUP_EXITS - FLOOR_PAIR] = SWITCH_OUT + 4 };
static const char *const names[NCASES] = {
	"empty handler (floor)", "kvm_exit, not a hypercall", "kvm_entry, nothing armed",
	"fused hypercall (exit+hcall+entry+ringbuf)",
	"hash + fused record: kvm_exit, not a hypercall", "hash + fused record: kvm_entry, nothing armed",
	"hash + fused record: hypercall", "anchor (BCC port): kvm_exit, not a hypercall",
	"anchor (BCC port): kvm_entry, nothing armed", "anchor (BCC port): hypercall, 3 records",
	"  fused part: 3 clock reads", "  fused part: 3 task-storage lookups", "  fused part: ring reserve + submit",
	"  fused part: reserve + 80-byte copy + submit", "  fused part: the wake-up test (emitted-bytes count)",
	"  (before: the wake-up test by bpf_ringbuf_query)",
	"sched_switch, nothing armed",
	"kvm_exit, not a hypercall, a thread armed on another CPU",
	"sched_switch while an armed thread is off-CPU",
	"kvm_entry, not armed, a thread armed on another CPU",
	"sched_switch, a thread armed on another CPU",
	"--exits floor: 2 empty handlers + 2 clock reads",
	"--exits: kvm_exit (not a hypercall) + kvm_entry",
	"--exits: sched_switch, not a vCPU thread",
	"--exits: sched_switch between two vCPU threads",
	"--exits: sched_wakeup, not a vCPU thread",
	"--exits: sched_switch handler, no vCPU thread",
	"--vcpu-sched: sched_switch handler, no vCPU thread",
	"--exits: sched_switch handler, two vCPU threads",
	"--vcpu-sched: sched_switch handler, two vCPU threads",
	"--boot: exit + entry of a VM not booting",
	"--boot: exit + entry of a booting VM (a record each)",
	"halt floor: 6 empty handlers + 5 clock reads",
	"--exits: halt, wake-up, switch-in, inj, entry",
	"--wakeups: the same, a record each",
	"--exits: the same, woken by a timed interrupt",
	"--wakeups: the same, two records each",
	"--exits: halt path, its timer's due time noted",
};
#define ROUNDS 41

struct bench_args {
	__u32 which;
	__u32 iterations;
};

static double run_case(struct hotpath_bpf *skel, struct ring_buffer *rb, int which, __u32 n)
{
	struct bench_args args = { .which = (__u32)which, .iterations = n };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &args, .ctx_size_in = sizeof(args));

	if (bpf_prog_test_run_opts(bpf_program__fd(skel->progs.bench_run), &opts) || opts.retval) {
		fprintf(stderr, "bench_hotpath: run failed: %s\n", strerror(errno));
		exit(1);
	}
	ring_buffer__consume(rb); /* keep the ring empty: every reservation succeeds */
	return (double)skel->bss->bench_elapsed_ns / n;
}

/* Arms (or disarms) a CPU's state slot as a vCPU thread running there would. */
static void set_slot_phase(struct hotpath_bpf *skel, __u32 cpu, __u32 phase)
{
	skel->bss->cpu_states[cpu].phase = phase;
}

/*
 * The ratio of two cases, paired by round: both ran back to back in the same
 * round, so a disturbance of the machine (steal time, frequency) hits both;
 * the median over rounds then drops the rounds where it hit only one.
 */
struct ratio {
	double median, q1, q3; /* quartiles show how much the machine disturbed the run */
};

static struct ratio paired_ratio(double a[ROUNDS], double b[ROUNDS])
{
	double r[ROUNDS];

	for (int i = 0; i < ROUNDS; i++)
		r[i] = a[i] / b[i];
	qsort(r, ROUNDS, sizeof(double), cmp_double);
	return (struct ratio){ r[ROUNDS / 2], r[ROUNDS / 4], r[3 * ROUNDS / 4] };
}

/*
 * The verdict is the paired median: each round's ratio of two cases run back
 * to back, so a disturbance of the machine hits both, and the median drops
 * the rounds where it hit only one. The ratio of the fastest rounds, shown
 * next to it, agrees on a quiet machine; on a busy one it rests on two
 * extremes (one lucky round of either case moves it by several percent).
 */
static void verdict(const char *what, double fastest_ratio, struct ratio r, double limit)
{
	printf("TARGET %-52s %6.2fx  (limit %.2fx; quartiles %.2f-%.2f; fastest rounds %.2fx)  %s\n", what,
	       r.median, limit, r.q1, r.q3, fastest_ratio, r.median <= limit ? "met" : "NOT MET");
}

static double getppid_ns(unsigned int n)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (unsigned int i = 0; i < n; i++)
		syscall(SYS_getppid);
	clock_gettime(CLOCK_MONOTONIC, &b);
	return ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / n;
}

/* getppid's time with prog attached to its syscall-entry tracepoint (none: NULL); <0 if it cannot attach. */
static double getppid_ns_with(struct bpf_program *prog)
{
	struct bpf_link *link = NULL;
	double ns;

	if (prog && !(link = bpf_program__attach_tracepoint(prog, "syscalls", "sys_enter_getppid")))
		return -1;
	ns = getppid_ns(100000);
	bpf_link__destroy(link);
	return ns;
}

/*
 * Passing tracepoint events on to perf (return 1) against dropping them
 * (return 0), as a same-run ratio of a whole traced event (getppid + its
 * tracepoint + the program), on each CPU: libbpf attaches through a perf
 * event opened on CPU 0 only, and only there does the kernel then do perf
 * work for the event (perf_tp_event on that event). Information, not a
 * target: returning 0 would hide the events from every perf user.
 */
static void return_value_cost(struct hotpath_bpf *skel)
{
	double none[ROUNDS], drop[ROUNDS], pass[ROUNDS];
	int ncpus = libbpf_num_possible_cpus();
	int cpus[2] = { 0, ncpus > 1 ? ncpus - 1 : 0 };

	printf("Tracepoint program return value (getppid with a program on its syscall-entry tracepoint)\n");
	printf("  %-52s %8s %8s %8s\n", "case", "min ns", "median", "ratio");
	for (int c = 0; c < (cpus[1] != cpus[0] ? 2 : 1); c++) {
		cpu_set_t one;

		CPU_ZERO(&one);
		CPU_SET(cpus[c], &one);
		if (sched_setaffinity(0, sizeof(one), &one))
			continue;
		for (int r = 0; r < ROUNDS; r++) {
			none[r] = getppid_ns_with(NULL);
			drop[r] = getppid_ns_with(skel->progs.tp_returns_0);
			pass[r] = getppid_ns_with(skel->progs.tp_returns_1);
			if (drop[r] < 0 || pass[r] < 0) {
				printf("  not measured: syscalls:sys_enter_getppid cannot be attached: %s\n", strerror(errno));
				return;
			}
		}
		struct ratio ratio = paired_ratio(pass, drop);
		qsort(none, ROUNDS, sizeof(double), cmp_double);
		qsort(drop, ROUNDS, sizeof(double), cmp_double);
		qsort(pass, ROUNDS, sizeof(double), cmp_double);
		printf("  CPU %d%s\n", cpus[c], cpus[c] == 0 ? " (holds libbpf's attachment perf event)" : "");
		printf("    %-50s %8.1f %8.1f\n", "no program", none[0], none[ROUNDS / 2]);
		printf("    %-50s %8.1f %8.1f\n", "program returns 0 (event dropped for perf)", drop[0], drop[ROUNDS / 2]);
		printf("    %-50s %8.1f %8.1f %7.2fx  (paired median %.2f, quartiles %.2f-%.2f)\n",
		       "program returns 1 (passed on, as record does)", pass[0], pass[ROUNDS / 2], pass[0] / drop[0],
		       ratio.median, ratio.q1, ratio.q3);
	}
}

/* One instance of the benchmark object, as record would load it (exits_on, vcpu_sched_on as asked), with its rings drained by rb. */
/* boot: 0 off; 1 on, this process taken as started before the recording; 2 on, after it. */
static struct hotpath_bpf *load_instance(const struct ht_synth_layout *l, bool exits, bool vcpu_sched, int boot,
					 bool wakeups, struct ring_buffer **out_rb)
{
	struct hotpath_bpf *skel;
	struct ring_buffer *rb;

	skel = hotpath_bpf__open();
	if (!skel)
		return NULL;
	/* The anchor's one shared ring, and the rings per CPU of record's defaults. */
	int cpus = libbpf_num_possible_cpus();
	unsigned int nrings = ht_rings_for(cpus > 0 ? (unsigned int)cpus : 1);
	unsigned long ring_bytes = ht_ring_bytes_for(HT_DEFAULT_RINGBUF_BYTES, nrings);
	bpf_map__set_max_entries(skel->maps.records, HT_DEFAULT_RINGBUF_BYTES);
	int ring_fds[HT_MAX_RINGS];
	if (ht_rings_prepare(skel->maps.rings, nrings, ring_bytes, ring_fds)) {
		fprintf(stderr, "bench_hotpath: cannot create the rings\n");
		return NULL;
	}
	skel->rodata->ring_mask = nrings - 1;
	/* The production wake-up policy for these rings: see ht_wakeup_bytes_for. */
	skel->rodata->wakeup_shift = ht_wakeup_shift_for(ht_wakeup_bytes_for(ring_bytes));
	skel->rodata->exits_on = exits;
	skel->rodata->vcpu_sched_on = vcpu_sched;
	skel->rodata->wakeups_on = wakeups;
	skel->rodata->boot_on = boot != 0;
	/* No window or bound ends the followed thread's records in the rounds. */
	skel->rodata->boot_since_ns = 1000;
	skel->rodata->boot_window_ns = UINT64_MAX / 4;
	skel->rodata->boot_max_exits = UINT64_MAX;
	skel->bss->synthetic_process_start_ns = boot == 2 ? 2000 : 10;
	/* It relocates against kvm_amd's BTF, which a host without AMD's KVM lacks; the cases call the handlers. */
	bpf_program__set_autoload(skel->progs.on_kvm_exit_svm_raw, false);
	if (hotpath_bpf__load(skel)) {
		fprintf(stderr, "bench_hotpath: cannot load the benchmark programs\n");
		return NULL;
	}
	rb = ring_buffer__new(bpf_map__fd(skel->maps.records), discard, NULL, NULL);
	if (!rb)
		return NULL;
	if (ht_rings_install(skel->maps.rings, nrings, ring_fds))
		return NULL;
	for (__u32 i = 0; i < nrings; i++) {
		if (ring_buffer__add(rb, ring_fds[i], discard, NULL)) {
			fprintf(stderr, "bench_hotpath: cannot create the rings: %s\n", strerror(errno));
			return NULL;
		}
	}
	ht_synth_build_exit(l, skel->bss->ev_exit_hypercall, HT_ISA_VMX, HT_VMX_EXIT_REASON_VMCALL, 0x1000, 0);
	ht_synth_build_exit(l, skel->bss->ev_exit_other, HT_ISA_VMX, 1 /* external interrupt */, 0x1000, 0);
	ht_synth_build_hypercall(l, skel->bss->ev_hypercall, 1000, 1, 2, 3, 4);
	ht_synth_build_entry(l, skel->bss->ev_entry, 0, 0x1003);
	ht_synth_build_exit(l, skel->bss->ev_exit_hlt, HT_ISA_VMX, 12 /* HLT */, 0x1000, 0);
	*out_rb = rb;
	return skel;
}

/* Two made-up vCPU threads in the --exits instance, for the switch between them. */
static int register_vcpu_threads(struct hotpath_bpf *skel)
{
	for (__u32 i = 0; i < 2; i++) {
		struct ht_synth_register a = { .tid = 3900000 + i, .tgid = 3900000, .vcpu = i, .running = !i };
		LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &a, .ctx_size_in = sizeof(a));

		if (bpf_prog_test_run_opts(bpf_program__fd(skel->progs.synthetic_vcpu_register), &opts) || opts.retval)
			return -1;
		skel->bss->bench_vcpu_tid[i] = a.tid;
	}
	skel->bss->bench_vcpu_tgid = 3900000;
	return 0;
}

/*
 * This thread and its parent as vCPU threads of an instance (their entries
 * in vcpu_thread_table, made by the real registration); tids[] gets their ids.
 */
static int register_pair(struct hotpath_bpf *skel, __u32 tids[2])
{
	struct bench_args args = { .which = PROG_REGISTER_PAIR, .iterations = 1 };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &args, .ctx_size_in = sizeof(args));

	if (bpf_prog_test_run_opts(bpf_program__fd(skel->progs.bench_run), &opts) || opts.retval)
		return -1;
	tids[0] = skel->bss->bench_pair_tid[0];
	tids[1] = skel->bss->bench_pair_tid[1];
	/* Each thread's own bit: one thread must not make the other look like a vCPU thread. */
	return (tids[0] & (HT_TID_BITS - 1)) == (tids[1] & (HT_TID_BITS - 1)) ? -1 : 0;
}

/* Marks (or unmarks) the pair as vCPU threads, as their bits in vcpu_tid_bits say to the switch handler. */
static void mark_pair(struct hotpath_bpf *skel, const __u32 tids[2], bool vcpu)
{
	for (int i = 0; i < 2; i++) {
		__u32 bit = tids[i] & (HT_TID_BITS - 1);

		if (vcpu)
			skel->bss->vcpu_tid_bits[bit / 64] |= 1ull << (bit % 64);
		else
			skel->bss->vcpu_tid_bits[bit / 64] &= ~(1ull << (bit % 64));
	}
}

/* This thread's value in a map indexed by its vcpu_thread_table index: 0, or -1 if it has none. */
static int my_thread_value(struct hotpath_bpf *skel, const struct bpf_map *map, void *value)
{
	__u32 tid = (__u32)gettid(), idx;

	if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.vcpu_thread_ids), &tid, &idx) ||
	    bpf_map_lookup_elem(bpf_map__fd(map), &idx, value))
		return -1;
	return 0;
}

/* The interrupts of the devices' class delivered to this thread, in an instance's vcpu_irqs. */
static __u64 device_irqs_of_me(struct hotpath_bpf *skel)
{
	struct vcpu_irq_state s;

	return my_thread_value(skel, skel->maps.vcpu_irqs, &s) ? ~0ull : ht_wake_count(&s.counts.c[HT_IRQ_DEVICE]);
}

static __u64 timer_wakeups_of_me(struct hotpath_bpf *skel)
{
	struct ht_vcpu_halts h;

	return my_thread_value(skel, skel->maps.vcpu_halts, &h) ? ~0ull : ht_wake_count(&h.wake.c[HT_WAKE_TIMER]);
}

/* Of them, those counted from their timer's due time too, or ~0 if it has none. */
static __u64 timer_dues_of_me(struct hotpath_bpf *skel)
{
	struct ht_vcpu_timer_due d;

	return my_thread_value(skel, skel->maps.vcpu_timer_dues, &d) ? ~0ull : ht_wake_count(&d.h);
}

/* A counter of an instance, over all CPUs (the counters map is per CPU). */
static __u64 counter(struct hotpath_bpf *skel, __u32 which)
{
	int ncpus = libbpf_num_possible_cpus();
	__u64 vals[ncpus > 0 ? ncpus : 1], sum = 0;

	if (ncpus <= 0 || bpf_map_lookup_elem(bpf_map__fd(skel->maps.counters), &which, vals))
		return ~0ull;
	for (int c = 0; c < ncpus; c++)
		sum += vals[c];
	return sum;
}

static void free_instances(struct hotpath_bpf *skel, struct ring_buffer *rb, struct hotpath_bpf *exits_skel,
			   struct ring_buffer *exits_rb, struct hotpath_bpf *pair_skel[2], struct ring_buffer *pair_rb[2],
			   struct hotpath_bpf *boot_skel[2], struct ring_buffer *boot_rb[2], struct hotpath_bpf *wake_skel,
			   struct ring_buffer *wake_rb)
{
	ring_buffer__free(wake_rb);
	hotpath_bpf__destroy(wake_skel);
	for (int i = 0; i < 2; i++) {
		ring_buffer__free(boot_rb[i]);
		hotpath_bpf__destroy(boot_skel[i]);
	}
	ring_buffer__free(rb);
	ring_buffer__free(exits_rb);
	hotpath_bpf__destroy(skel);
	hotpath_bpf__destroy(exits_skel);
	for (int i = 0; i < 2; i++) {
		ring_buffer__free(pair_rb[i]);
		hotpath_bpf__destroy(pair_skel[i]);
	}
}

/* Experiment: the --exits pair against its floor in n fresh loads of the --exits instance, one line each. */
static int exits_pair_loads(const struct ht_synth_layout *l, int n)
{
	for (int i = 0; i < n; i++) {
		struct ring_buffer *rb;
		struct hotpath_bpf *s = load_instance(l, true, false, 0, false, &rb);
		double floor_ns[ROUNDS], pair_ns[ROUNDS];

		if (!s || register_vcpu_threads(s))
			return 1;
		for (int r = 0; r < ROUNDS; r++) {
			floor_ns[r] = run_case(s, rb, exits_case_prog[FLOOR_PAIR - FLOOR_PAIR], 500000);
			pair_ns[r] = run_case(s, rb, exits_case_prog[EXITS_PAIR - FLOOR_PAIR], 500000);
		}
		struct ratio q = paired_ratio(pair_ns, floor_ns);
		qsort(floor_ns, ROUNDS, sizeof(double), cmp_double);
		qsort(pair_ns, ROUNDS, sizeof(double), cmp_double);
		printf("load %d: pair %.2fx its floor (quartiles %.2f-%.2f; fastest %.1f / %.1f ns = %.2fx)\n", i, q.median,
		       q.q1, q.q3, pair_ns[0], floor_ns[0], pair_ns[0] / floor_ns[0]);
		fflush(stdout);
		ring_buffer__free(rb);
		hotpath_bpf__destroy(s);
	}
	return 0;
}

/* argv[1] "--setup-only": load and set up every instance, measure nothing (the tests' check that make bench can run). */
int main(int argc, char **argv)
{
	struct ht_synth_layout l;
	struct hotpath_bpf *skel, *exits_skel, *pair_skel[2] = { NULL, NULL }, *boot_skel[2] = { NULL, NULL };
	struct ring_buffer *rb, *exits_rb, *pair_rb[2], *boot_rb[2] = { NULL, NULL }, *wake_rb = NULL;
	struct hotpath_bpf *wake_skel;
	__u32 pair_tids[2][2];
	char err[256];
	double ns[NCASES][ROUNDS], med[NCASES];
	cpu_set_t one;

	if (bench_mount_tracefs("bench_hotpath"))
		return 1;
	/* One core: the measurement is about instructions, not scheduling. */
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	sched_setaffinity(0, sizeof(one), &one);
	if (ht_synth_layout_load(&l, err, sizeof(err))) {
		fprintf(stderr, "bench_hotpath: %s\n", err);
		return 1;
	}
	if (argc > 2 && !strcmp(argv[1], "--exits-pair-loads"))
		return exits_pair_loads(&l, atoi(argv[2]));
	int cpus = libbpf_num_possible_cpus();
	/* Another CPU, whose slot a thread armed there fills (the benchmark runs on CPU 0). */
	__u32 other_cpu = cpus > 1 ? 1 : 0;
	skel = load_instance(&l, false, false, 0, false, &rb);
	exits_skel = skel ? load_instance(&l, true, false, 0, false, &exits_rb) : NULL;
	if (!exits_skel || register_vcpu_threads(exits_skel)) {
		fprintf(stderr, "bench_hotpath: cannot set up the --exits instance\n");
		return 1;
	}
	/* The pair's instances: --exits, and --exits --vcpu-sched; the same threads registered in both. */
	for (int i = 0; i < 2; i++) {
		pair_skel[i] = load_instance(&l, true, i == 1, 0, false, &pair_rb[i]);
		if (!pair_skel[i] || register_pair(pair_skel[i], pair_tids[i])) {
			fprintf(stderr, "bench_hotpath: cannot set up the --exits%s instance of the switch pair\n",
				i ? " --vcpu-sched" : "");
			return 1;
		}
	}
	for (int i = 0; i < 2; i++)
		if (!(boot_skel[i] = load_instance(&l, true, false, 1 + i, false, &boot_rb[i]))) {
			fprintf(stderr, "bench_hotpath: cannot set up the --boot instances\n");
			return 1;
		}
	/* --exits --wakeups: the wake-up path with its record. */
	if (!(wake_skel = load_instance(&l, true, false, 0, true, &wake_rb))) {
		fprintf(stderr, "bench_hotpath: cannot set up the --wakeups instance\n");
		return 1;
	}
	if (argc > 1 && !strcmp(argv[1], "--setup-only")) {
		printf("bench_hotpath: every instance is loaded and set up\n");
		free_instances(skel, rb, exits_skel, exits_rb, pair_skel, pair_rb, boot_skel, boot_rb, wake_skel, wake_rb);
		return 0;
	}
	/* This thread, when it plays a thread that is no vCPU thread (see the rounds). */
	__u32 me = (__u32)gettid() & (HT_TID_BITS - 1);

	for (int r = 0; r < ROUNDS; r++)
		for (int c = 0; c < NCASES; c++) {
			/* Fused cases emit a record per iteration: fewer, so the ring never fills. */
			__u32 n = (c == FUSED || c == HASH_FUSED || c == ANCHOR_HYPERCALL || c == PART_RESERVE_SUBMIT ||
				   c == PART_RESERVE_COPY_SUBMIT) ? 50000 : 500000;
			if (c >= HALT_FLOOR) {
				bool wk = c == HALT_CYCLE_WAKEUPS || c == HALT_IRQ_CYCLE_WAKEUPS;
				bool irq = c == HALT_IRQ_CYCLE || c == HALT_IRQ_CYCLE_WAKEUPS;

				/* With --wakeups a record per wake-up and one per delivery: fewer, so the ring never fills. */
				ns[c][r] = run_case(wk ? wake_skel : exits_skel, wk ? wake_rb : exits_rb,
						    c == HALT_FLOOR ? PROG_FLOOR_HALT : irq ? PROG_HALT_IRQ_CYCLE :
						    c == HALT_DUE_CYCLE ? PROG_HALT_DUE_CYCLE : PROG_HALT_CYCLE,
						    !wk ? 500000 : irq ? 25000 : 50000);
				continue;
			}
			if (c >= BOOT_PAIR_IDLE) {
				bool followed = c == BOOT_PAIR_BOOTING;

				/* A record per exit when followed: fewer, so the ring never fills. */
				ns[c][r] = run_case(boot_skel[followed], boot_rb[followed], exits_case_prog[EXITS_PAIR - FLOOR_PAIR],
						    followed ? 50000 : 500000);
				continue;
			}
			if (c >= PAIR_PLAIN_EXITS) {
				bool vsched = c == PAIR_PLAIN_VSCHED || c == PAIR_VCPU_VSCHED;
				bool vcpu = c >= PAIR_VCPU_EXITS;

				mark_pair(pair_skel[vsched], pair_tids[vsched], vcpu);
				/* With --vcpu-sched four records per iteration: fewer, so the ring never fills. */
				n = vcpu ? 50000 : 500000;
				ns[c][r] = run_case(pair_skel[vsched], pair_rb[vsched], PROG_SWITCH_PAIR, n) / 2; /* per switch */
				continue;
			}
			if (c < EXIT_ARMED_ELSEWHERE) {
				ns[c][r] = run_case(skel, rb, c, n);
				continue;
			}
			if (c >= FLOOR_PAIR) {
				/*
				 * An entry whose slot another thread's switch named (the
				 * vCPU-switch case) takes this thread for a vCPU thread:
				 * it is none for the switch of "not a vCPU thread".
				 */
				__u64 bits = exits_skel->bss->vcpu_tid_bits[me / 64];

				if (c == SWITCH_EXITS)
					exits_skel->bss->vcpu_tid_bits[me / 64] &= ~(1ull << (me % 64));
				ns[c][r] = run_case(exits_skel, exits_rb, exits_case_prog[c - FLOOR_PAIR], n);
				/*
				 * And a vCPU thread again after it: the exit pair of a vCPU
				 * thread finds its entry through its bit, as in record (an
				 * entry without its bit would be registered anew at every
				 * exit, and fail).
				 */
				if (c == SWITCH_EXITS)
					exits_skel->bss->vcpu_tid_bits[me / 64] = bits;
				if (c == SWITCH_VCPUS)
					ns[c][r] /= 2; /* per switch */
				continue;
			}
			/*
			 * Another vCPU thread is between its hypercall exit and its
			 * entry: on another CPU (CPU 1's slot is armed), or switched
			 * out mid-hypercall (its state moved to moved_states:
			 * armed_moved says so, and a switch looks up the thread it
			 * switches in).
			 */
			set_slot_phase(skel, other_cpu, c == SWITCH_WHILE_MOVED ? PHASE_IDLE : PHASE_EXITED);
			skel->bss->armed_moved = c == SWITCH_WHILE_MOVED;
			ns[c][r] = run_case(skel, rb, c == ENTRY_ARMED_ELSEWHERE ? ENTRY_NOMATCH :
						      c == SWITCH_OUT_ARMED_ELSEWHERE || c == SWITCH_WHILE_MOVED ?
						      SWITCH_OUT : EXIT_NOMATCH, n);
			set_slot_phase(skel, other_cpu, PHASE_IDLE);
			skel->bss->armed_moved = 0;
		}

	/* A switch record lost to a full ring would have made the --vcpu-sched case cheaper than it is. */
	__u64 lost = counter(pair_skel[1], HT_CNT_SWITCH_DROPS);
	if (lost) {
		fprintf(stderr, "bench_hotpath: %llu switch records found the ring full: the --vcpu-sched case is void\n",
			(unsigned long long)lost);
		return 1;
	}
	/* Every halt cycle a timer wake-up, and every one of --wakeups a record: else those cases measure something else. */
	/* The --exits instance runs two halt cycles, without and with the timer's expiry: the second's due times counted too. */
	__u64 woken[2] = { timer_wakeups_of_me(exits_skel), timer_wakeups_of_me(wake_skel) }, due = timer_dues_of_me(exits_skel);
	if (woken[0] != 2 * ROUNDS * 500000ull || woken[1] != ROUNDS * 50000ull || due != ROUNDS * 500000ull ||
	    counter(wake_skel, HT_CNT_WAKEUP_DROPS)) {
		fprintf(stderr, "bench_hotpath: the halt cycles made %llu and %llu timer wake-ups (want %u and %u), %llu from their due time (want %u), %llu records lost: void\n",
			(unsigned long long)woken[0], (unsigned long long)woken[1], 2 * ROUNDS * 500000, ROUNDS * 50000,
			(unsigned long long)due, ROUNDS * 500000, (unsigned long long)counter(wake_skel, HT_CNT_WAKEUP_DROPS));
		return 1;
	}
	/*
	 * Every interrupt cycle an interrupt delivered, timed from its
	 * acceptance, and with --wakeups its record: else those cases measure
	 * something else.
	 */
	__u64 delivered[2] = { device_irqs_of_me(exits_skel), device_irqs_of_me(wake_skel) };
	if (delivered[0] != ROUNDS * 500000ull || delivered[1] != ROUNDS * 25000ull) {
		fprintf(stderr, "bench_hotpath: the interrupt cycles delivered %llu and %llu interrupts (want %u and %u): void\n",
			(unsigned long long)delivered[0], (unsigned long long)delivered[1], ROUNDS * 500000, ROUNDS * 25000);
		return 1;
	}
	/* The followed thread's every exit a record, the other's none: else the --boot cases measure something else. */
	__u32 tgid = (__u32)getpid();
	struct ht_boot_vm vms[2] = { { 0 }, { 0 } };

	for (int i = 0; i < 2; i++)
		bpf_map_lookup_elem(bpf_map__fd(boot_skel[i]->maps.boot_vms), &tgid, &vms[i]);
	if (vms[0].recorded || vms[1].recorded != ROUNDS * 50000ull || counter(boot_skel[1], HT_CNT_BOOT_DROPS)) {
		fprintf(stderr, "bench_hotpath: the --boot cases recorded %llu and %llu exits (want 0 and %u), %llu lost: void\n",
			(unsigned long long)vms[0].recorded, (unsigned long long)vms[1].recorded, ROUNDS * 50000,
			(unsigned long long)counter(boot_skel[1], HT_CNT_BOOT_DROPS));
		return 1;
	}
	struct ratio exit_ratio = paired_ratio(ns[EXIT_NOMATCH], ns[EMPTY]);
	struct ratio entry_ratio = paired_ratio(ns[ENTRY_NOMATCH], ns[EMPTY]);
	struct ratio fused_ratio = paired_ratio(ns[FUSED], ns[ANCHOR_HYPERCALL]);
	struct ratio armed_ratio = paired_ratio(ns[EXIT_ARMED_ELSEWHERE], ns[EMPTY]);
	struct ratio state_ratio = paired_ratio(ns[FUSED], ns[HASH_FUSED]);
	struct ratio exits_ratio = paired_ratio(ns[EXITS_PAIR], ns[FLOOR_PAIR]);
	struct ratio sw_ratio = paired_ratio(ns[SWITCH_EXITS], ns[SWITCH_OUT]);
	struct ratio swv_ratio = paired_ratio(ns[SWITCH_VCPUS], ns[SWITCH_OUT]);
	/* Without --exits there is no sched_wakeup program: the whole program is its cost, against the floor. */
	struct ratio wk_ratio = paired_ratio(ns[WAKEUP_EXITS], ns[EMPTY]);
	struct ratio vs_plain = paired_ratio(ns[PAIR_PLAIN_VSCHED], ns[PAIR_PLAIN_EXITS]);
	struct ratio vs_vcpu = paired_ratio(ns[PAIR_VCPU_VSCHED], ns[PAIR_VCPU_EXITS]);

	printf("BPF cost per event, native speed (bpf_loop over the real handlers, %d rounds)\n", ROUNDS);
	printf("  %-52s %8s %8s %8s\n", "case", "min ns", "median", "x floor");
	for (int c = 0; c < NCASES; c++) {
		qsort(ns[c], ROUNDS, sizeof(double), cmp_double);
		med[c] = ns[c][0];
		printf("  %-52s %8.2f %8.2f %8.2f\n", names[c], med[c], ns[c][ROUNDS / 2], med[c] / med[EMPTY]);
	}
	printf("  state: CPU slots (kept) %.2f ns vs a hash keyed by tid %.2f ns per fused hypercall (%.2fx)\n",
	       med[FUSED], med[HASH_FUSED], state_ratio.median);
	verdict("non-matching kvm_exit vs empty handler", med[EXIT_NOMATCH] / med[EMPTY], exit_ratio, 1.1);
	verdict("non-matching kvm_entry vs empty handler", med[ENTRY_NOMATCH] / med[EMPTY], entry_ratio, 1.1);
	verdict("kvm_exit, not a hypercall, another thread armed", med[EXIT_ARMED_ELSEWHERE] / med[EMPTY],
		armed_ratio, 1.3);
	verdict("fused hypercall vs anchor design (hash, a record per event)",
		med[FUSED] / med[ANCHOR_HYPERCALL], fused_ratio, 0.4);
	verdict("--exits: exit + entry (not a hypercall) vs its floor", med[EXITS_PAIR] / med[FLOOR_PAIR], exits_ratio,
		1.3);
	printf("INFO   %-52s %6.2fx  (quartiles %.2f-%.2f; fastest rounds %.2fx)\n",
	       "--exits: sched_switch, not a vCPU thread, vs without", sw_ratio.median, sw_ratio.q1, sw_ratio.q3,
	       med[SWITCH_EXITS] / med[SWITCH_OUT]);
	printf("INFO   %-52s %6.2fx  (quartiles %.2f-%.2f; fastest rounds %.2fx)\n",
	       "--exits: sched_switch between vCPU threads, vs without", swv_ratio.median, swv_ratio.q1, swv_ratio.q3,
	       med[SWITCH_VCPUS] / med[SWITCH_OUT]);
	printf("INFO   %-52s %6.2fx  (quartiles %.2f-%.2f; fastest rounds %.2fx)\n",
	       "--exits: sched_wakeup, not a vCPU thread, vs empty", wk_ratio.median, wk_ratio.q1, wk_ratio.q3,
	       med[WAKEUP_EXITS] / med[EMPTY]);
	/*
	 * A switch of threads that are no vCPU threads must cost what it costs
	 * with --exits alone: the handler builds the switch's event, names
	 * included, only for a vCPU thread's switch. A switch of vCPU threads
	 * pays for its two records (names read, reserved, filled, submitted):
	 * reported, as those are the events the option is for.
	 */
	verdict("--vcpu-sched: switch, no vCPU thread, vs --exits", med[PAIR_PLAIN_VSCHED] / med[PAIR_PLAIN_EXITS],
		vs_plain, 1.05);
	printf("INFO   %-52s %6.2fx  (quartiles %.2f-%.2f; fastest rounds %.2fx; +%.1f ns per switch)\n",
	       "--vcpu-sched: switch of two vCPU threads, vs --exits", vs_vcpu.median, vs_vcpu.q1, vs_vcpu.q3,
	       med[PAIR_VCPU_VSCHED] / med[PAIR_VCPU_EXITS], med[PAIR_VCPU_VSCHED] - med[PAIR_VCPU_EXITS]);
	/*
	 * --boot taxes no VM that is not booting (its exits pay the decision's
	 * one lookup: within 15% of --exits alone); a booting VM's exits pay
	 * for their records, reported.
	 */
	struct ratio boot_off = paired_ratio(ns[BOOT_PAIR_IDLE], ns[EXITS_PAIR]);
	struct ratio boot_on = paired_ratio(ns[BOOT_PAIR_BOOTING], ns[EXITS_PAIR]);

	verdict("--boot: exit + entry of a VM not booting vs --exits", med[BOOT_PAIR_IDLE] / med[EXITS_PAIR], boot_off,
		1.15);
	printf("INFO   %-52s %6.2fx  (quartiles %.2f-%.2f; fastest rounds %.2fx; +%.1f ns per exit)\n",
	       "--boot: exit + entry of a booting VM vs --exits", boot_on.median, boot_on.q1, boot_on.q3,
	       med[BOOT_PAIR_BOOTING] / med[EXITS_PAIR], med[BOOT_PAIR_BOOTING] - med[EXITS_PAIR]);
	/*
	 * A halted vCPU's wake-up path: what the account, the halts and the
	 * wake-up's histogram cost over the five events' floor, and what its
	 * record adds with --wakeups. Reported, not targets.
	 */
	struct ratio halt = paired_ratio(ns[HALT_CYCLE], ns[HALT_FLOOR]);
	struct ratio halt_rec = paired_ratio(ns[HALT_CYCLE_WAKEUPS], ns[HALT_CYCLE]);

	printf("INFO   %-52s %6.2fx  (quartiles %.2f-%.2f; fastest rounds %.2fx; +%.1f ns per wake-up)\n",
	       "--exits: a halted vCPU's wake-up path vs its floor", halt.median, halt.q1, halt.q3,
	       med[HALT_CYCLE] / med[HALT_FLOOR], med[HALT_CYCLE] - med[HALT_FLOOR]);
	printf("INFO   %-52s %6.2fx  (quartiles %.2f-%.2f; fastest rounds %.2fx; +%.1f ns per wake-up)\n",
	       "--wakeups: wake-up path with its record vs without", halt_rec.median, halt_rec.q1, halt_rec.q3,
	       med[HALT_CYCLE_WAKEUPS] / med[HALT_CYCLE], med[HALT_CYCLE_WAKEUPS] - med[HALT_CYCLE]);
	/* The same path woken by an interrupt: its acceptance (on the sender's CPU) and its delivery at the entry. */
	struct ratio halt_irq = paired_ratio(ns[HALT_IRQ_CYCLE], ns[HALT_CYCLE]);

	printf("INFO   %-52s %6.2fx  (quartiles %.2f-%.2f; fastest rounds %.2fx; +%.1f ns per interrupt)\n",
	       "--exits: wake-up by a timed interrupt vs without", halt_irq.median, halt_irq.q1, halt_irq.q3,
	       med[HALT_IRQ_CYCLE] / med[HALT_CYCLE], med[HALT_IRQ_CYCLE] - med[HALT_CYCLE]);
	/* And its two records with --wakeups: the wake-up's and the delivery's. */
	struct ratio irq_rec = paired_ratio(ns[HALT_IRQ_CYCLE_WAKEUPS], ns[HALT_IRQ_CYCLE]);

	printf("INFO   %-52s %6.2fx  (quartiles %.2f-%.2f; fastest rounds %.2fx; +%.1f ns per interrupt)\n",
	       "--wakeups: that path with its two records vs without", irq_rec.median, irq_rec.q1, irq_rec.q3,
	       med[HALT_IRQ_CYCLE_WAKEUPS] / med[HALT_IRQ_CYCLE], med[HALT_IRQ_CYCLE_WAKEUPS] - med[HALT_IRQ_CYCLE]);
	/* And the same path with its timer's due time noted: the expiry's thread lookup, and the wake-up's due histogram. */
	struct ratio halt_due = paired_ratio(ns[HALT_DUE_CYCLE], ns[HALT_CYCLE]);

	printf("INFO   %-52s %6.2fx  (quartiles %.2f-%.2f; fastest rounds %.2fx; +%.1f ns per wake-up)\n",
	       "--exits: wake-up path with its timer's due time vs without", halt_due.median, halt_due.q1, halt_due.q3,
	       med[HALT_DUE_CYCLE] / med[HALT_CYCLE], med[HALT_DUE_CYCLE] - med[HALT_CYCLE]);
	return_value_cost(skel);
	free_instances(skel, rb, exits_skel, exits_rb, pair_skel, pair_rb, boot_skel, boot_rb, wake_skel, wake_rb);
	return 0;
}
