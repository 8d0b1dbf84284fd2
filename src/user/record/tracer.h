/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The BPF side as user space sees it: open the skeleton, fix the filters in
 * rodata, size the ring buffer, load (with a useful error), attach the kvm
 * tracepoint programs (and, with --exits, the sched ones that follow vCPU
 * threads), read the maps, detach so that nothing is in flight.
 */
#ifndef HT_TRACER_H
#define HT_TRACER_H

#include <stdbool.h>
#include <stddef.h>
#include "hypertrace/record.h"
#include "hypertrace/trace_file.h"
#include "hypertrace/synthetic_events.h"
#include "record/bpf_log.h"

struct ht_filters {
	__u32 nr[HT_MAX_SELECTED_NR];
	unsigned int nr_count;  /* 1..HT_MAX_SELECTED_NR */
	bool exit_reason_on;
	__u32 exit_reason;
	bool tgid_on;
	__u32 tgid;
	bool vcpu_on;
	__u32 vcpu;
};

/*
 * Ring buffer memory (all rings together) and wake-up threshold (per ring)
 * used unless told otherwise, chosen by `make bench` (docs/performance.md):
 * 64 MiB absorbs the consumer's write stalls at 10 M records/s (about 70 ms of
 * records), and a wake-up every 1 MiB keeps its latency low while costing the
 * producers one wake-up per ~12,000 records. A ring holds what its own CPUs
 * emit, so a host with fewer CPUs than that takes 4 MiB a ring (44,000
 * records: 40 ms of one CPU's hypercalls at a million a second), not 64 MiB
 * split over fewer rings: the kernel zeroes every page of a ring at its
 * creation, which was a fifth of record --exits' start-up in the emulated
 * machine of make bench (section 6), and a 6.18 kernel counts its pages,
 * mapped twice, in record's RSS.
 */
#define HT_DEFAULT_RINGBUF_BYTES (64u << 20)
#define HT_DEFAULT_RING_BYTES (4u << 20)
#define HT_DEFAULT_WAKEUP_BYTES (1u << 20)

/*
 * The ring buffer memory is split into one ring per CPU (producers on
 * different CPUs then never contend for a ring), the number of rings rounded
 * up to a power of two and at most HT_MAX_RINGS: on bigger hosts CPUs share
 * rings (CPU c uses ring c % rings). Each ring is at least a page.
 */

static inline unsigned int ht_rings_for(unsigned int cpus)
{
	unsigned int n = 1;

	while (n < cpus && n < HT_MAX_RINGS)
		n <<= 1;
	return n;
}

/* The default memory of all rings on a host with cpus possible CPUs (see HT_DEFAULT_RING_BYTES). */
static inline unsigned long ht_default_ringbuf_bytes(unsigned int cpus)
{
	unsigned long all = (unsigned long)ht_rings_for(cpus) * HT_DEFAULT_RING_BYTES;

	return all < HT_DEFAULT_RINGBUF_BYTES ? all : HT_DEFAULT_RINGBUF_BYTES;
}

static inline unsigned long ht_ring_bytes_for(unsigned long ringbuf_bytes, unsigned int rings)
{
	unsigned long each = ringbuf_bytes / rings;

	return each < 4096 ? 4096 : each;
}

/*
 * record --exits: the vCPU threads the programs keep (their account, halts,
 * interrupts), by default 64 a possible CPU: room for a host overcommitted
 * 16 vCPU threads to a CPU with the table a quarter full, where a new
 * thread's 8 probes all find taken entries about once in 65,000 (0.25^8;
 * more with linear probing's clusters). At least
 * HT_MIN_VCPU_THREADS, at most HT_MAX_VCPU_THREADS, a power of two (the
 * programs mask a thread's hash with it). Each entry is about 2.8 KB of
 * kernel memory, zeroed when record starts (docs/performance.md, 6).
 */
#define HT_MIN_VCPU_THREADS 256
#define HT_VCPU_THREADS_PER_CPU 64

static inline unsigned int ht_vcpu_threads_round(unsigned long want)
{
	unsigned int n = HT_MIN_VCPU_THREADS;

	while (n < want && n < HT_MAX_VCPU_THREADS)
		n <<= 1;
	return n;
}

static inline unsigned int ht_vcpu_threads_for(unsigned int cpus)
{
	return ht_vcpu_threads_round((unsigned long)cpus * HT_VCPU_THREADS_PER_CPU);
}

/* The BPF side's wakeup_shift for a threshold: log2, rounded down (a shift, not a division, per record). */
static inline unsigned int ht_wakeup_shift_for(unsigned long wakeup_bytes)
{
	return wakeup_bytes ? 63u - (unsigned int)__builtin_clzl(wakeup_bytes) : 0;
}

/* The wake-up threshold for a ring of the given size. */
static inline unsigned long ht_wakeup_bytes_for(unsigned long ringbuf_bytes)
{
	return ringbuf_bytes / 8 < HT_DEFAULT_WAKEUP_BYTES ? ringbuf_bytes / 8 : HT_DEFAULT_WAKEUP_BYTES;
}

/*
 * The rings of a BPF object's `rings` map (maps.bpf.h: record's object, or
 * a benchmark object that includes hypertrace.bpf.c). Before load, ht_rings_prepare creates n rings
 * of `bytes` each into fds and sizes the map for them; after load,
 * ht_rings_install puts them in. 0 or -errno. The caller closes the fds.
 */
struct bpf_map;
int ht_rings_prepare(struct bpf_map *rings, unsigned int n, unsigned long bytes, int *fds);
int ht_rings_install(const struct bpf_map *rings, unsigned int n, const int *fds);

struct ht_tracer_opts {
	struct ht_filters filters;
	unsigned long ringbuf_bytes; /* all rings together: power of two, >= page size */
	unsigned long wakeup_bytes;  /* per ring, rounded down to a power of two; 0: the kernel's default */
	int isa;                     /* HT_ISA_VMX/SVM; 0: the host CPU's (what KVM here uses) */
	bool classic_kvm_exit;       /* SVM: the classic kvm_exit program even where the raw one loads (tests) */
	/*
	 * Tests: load the chosen kvm_exit program and nothing else. The load
	 * matrix verifies the other programs once per configuration, not once
	 * more per kvm_exit program: what tells those apart is read by the
	 * kvm_exit programs alone (tests/kernel/test_load_matrix.c checks it).
	 */
	bool exit_program_only;
	const char *btf_dir;         /* the kernel's BTF files; NULL: HT_SYSFS_BTF_DIR (tests: a fake tree) */
	bool aggregate_only;         /* histograms in BPF, no records (record --no-file) */
	enum ht_agg_group_by group_by; /* aggregate_only: how histograms are keyed */
	bool aggregate_by_nr;        /* aggregate_only, HT_AGG_BY_VCPU: nr index in the key too */
	bool exits;                  /* every exit's time in the host and the vCPU threads' waiting (record --exits) */
	bool vcpu_sched;             /* with exits: each switch of a vCPU thread as a record (record --vcpu-sched) */
	bool wakeups;                /* with exits: each wake-up of a halted vCPU thread as a record (record --wakeups) */
	/*
	 * With exits: the exits of VMs whose processes start at or after
	 * boot_since_ns, one record each, for boot_window_ns from their first
	 * entry and at most boot_max_exits per VM (record --boot).
	 */
	bool boot;
	unsigned long long boot_since_ns, boot_window_ns, boot_max_exits;
	unsigned int vcpu_threads;   /* with exits: the vCPU thread entries (record --vcpu-threads); 0: by the host's CPUs */
	bool synthetic;              /* also load the synthetic-event programs, and attach the sched programs */
	/*
	 * synthetic: leave the sched programs detached (ht_tracer_attach attaches
	 * them): only synthetic switches move states, for tests that play every
	 * switch themselves on one CPU, where a real one would only add noise.
	 */
	bool synthetic_switches_only;
	bool verbose;                /* libbpf debug output and verifier log on stderr */
};

enum ht_synthetic_prog {
	HT_SYNTH_KVM_EXIT,
	HT_SYNTH_KVM_HYPERCALL,
	HT_SYNTH_KVM_ENTRY,
	HT_SYNTH_FILL, /* submits N records straight into the ring buffer (drain tests, benchmarks) */
	/* --exits tests: the real handlers at a time the caller gives, and made-up threads. */
	HT_SYNTH_KVM_EXIT_AT,   /* ctx: struct ht_synth_timed_event */
	HT_SYNTH_KVM_ENTRY_AT,  /* ctx: struct ht_synth_timed_event */
	HT_SYNTH_SCHED_SWITCH,  /* ctx: struct ht_synth_switch */
	HT_SYNTH_SCHED_WAKEUP,  /* ctx: struct ht_synth_wakeup */
	HT_SYNTH_VCPU_REGISTER, /* ctx: struct ht_synth_register */
	HT_SYNTH_KVM_HALT,      /* ctx: struct ht_synth_halt */
	HT_SYNTH_KVM_USERSPACE_EXIT_AT, /* ctx: struct ht_synth_timed_event (the event part unused) */
	/* --exits: the causes of exits, the event as ctx in the kernel's layout. */
	HT_SYNTH_KVM_PIO,
	HT_SYNTH_KVM_MMIO,
	HT_SYNTH_KVM_MSR,
	HT_SYNTH_KVM_CPUID,
	HT_SYNTH_KVM_INJ_VIRQ,  /* ctx: struct ht_synth_inj_virq */
	HT_SYNTH_KVM_APIC_ACCEPT_IRQ, /* ctx: struct ht_synth_accept_irq */
	HT_SYNTH_TIMER_EXPIRES, /* ctx: struct ht_synth_wakeup (now_ns: the timer's due time) */
};

struct ht_tracer;

void ht_filters_default(struct ht_filters *f);
/* Unused filters take no code in BPF: rodata constants are pruned at load. */
int ht_tracer_load(struct ht_tracer **out, const struct ht_tracer_opts *opts, char *err,
		   size_t errlen);
/*
 * Why SVM's raw kvm_exit program did not load where it was expected to (the
 * kvm_amd module's structs not as CO-RE or the verifier need them), so the
 * classic one was loaded instead; NULL if nothing gave way.
 */
const char *ht_tracer_exit_fallback(const struct ht_tracer *t);
int ht_tracer_attach(struct ht_tracer *t, char *err, size_t errlen);
/* --exits: the vCPU threads the programs can keep (ht_vcpu_threads_for, or as asked); 1 without --exits. */
unsigned int ht_tracer_vcpu_threads(const struct ht_tracer *t);
/*
 * Detaches the tracepoint programs and waits until no program that started
 * before can still be running, so a drain after it sees every record.
 */
void ht_tracer_detach(struct ht_tracer *t);
/* The ring buffers the records come through, one per CPU or group of CPUs; *n of them. */
const int *ht_tracer_ring_fds(const struct ht_tracer *t, unsigned int *n);
int ht_tracer_synthetic_fd(const struct ht_tracer *t, enum ht_synthetic_prog which);
/* Sums the per-CPU counters (enum ht_counter). */
int ht_tracer_counters(const struct ht_tracer *t, __u64 out[HT_CNT_MAX]);
/*
 * Aggregate-only mode: calls fn once per group with the group's histograms
 * summed over CPUs, cumulative since load. 0 or -errno.
 */
typedef void (*ht_agg_fn)(void *ctx, __u64 key, const struct ht_agg_hist *h);
int ht_tracer_read_aggregates(const struct ht_tracer *t, ht_agg_fn fn, void *ctx);
/*
 * --exits: calls fn once per series (VM process, vCPU, ISA, reason) with its
 * histogram summed over CPUs (min and max over them), cumulative since load.
 * Cost: series x CPUs, whatever the exit rate. 0 or -errno.
 */
typedef void (*ht_exit_fn)(void *ctx, const struct ht_exit_key *key, const struct ht_exit_hist *h);
int ht_tracer_read_exits(struct ht_tracer *t, ht_exit_fn fn, void *ctx);
/*
 * --exits: calls fn once per cause of exits (VM process, ISA, reason, cause;
 * see enum ht_cause_kind) with its histograms summed over CPUs, cumulative
 * since load. 0 or -errno.
 */
typedef void (*ht_exit_cause_fn)(void *ctx, const struct ht_exit_cause_key *key, const struct ht_exit_cause_hist *h);
int ht_tracer_read_exit_causes(struct ht_tracer *t, ht_exit_cause_fn fn, void *ctx);
/*
 * --exits: calls fn once per vCPU thread known to BPF, with its counters
 * since load and its account (where its time went) up to the time of the
 * read: a thread that ended is passed once more, with its last numbers
 * (its as_of_ns the time it ended), and then forgotten: rec as a trace
 * file holds it (rec->w.wait_ns is the account's wait, rec->h its halts in
 * KVM, rec->i its interrupts; rec->w.pad1 0). 0 or -errno.
 */
typedef void (*ht_vcpu_wait_fn)(void *ctx, const struct ht_vcpu_wait_rec *rec, bool gone);
int ht_tracer_read_vcpu_waits(const struct ht_tracer *t, ht_vcpu_wait_fn fn, void *ctx);
/*
 * --exits, after ht_tracer_detach: calls fn for every exit seen whose
 * kvm_entry had not come (a vCPU halted, or its VMM stopped); key->pid is 0
 * if the thread could not be told. 0 or -errno.
 */
typedef void (*ht_open_exit_fn)(void *ctx, const struct ht_exit_key *key);
int ht_tracer_read_open_exits(const struct ht_tracer *t, ht_open_exit_fn fn, void *ctx);
/* At most this many tracepoint programs are loaded at once (ht_tracer_prog_stats). */
#define HT_MAX_TRACEPOINT_PROGS 16
/* Statistics of one tracepoint program: its runs (kernel.bpf_stats_enabled) and its load's verification. */
struct ht_prog_stats {
	const char *tracepoint; /* its tracepoint's name, e.g. "kvm_exit" */
	unsigned long long run_cnt, run_time_ns;
	unsigned int verified_insns; /* instructions the verifier processed to load it */
};
/*
 * The VM process filter (filters.tgid_on): traces tgid, or stops tracing it.
 * -p PID is in from the load on; record --vm NAME adds each process of the
 * VM as it appears. 0 or -errno (-E2BIG: HT_MAX_TRACED_TGIDS, include/hypertrace/limits.h, are traced).
 */
int ht_tracer_trace_tgid(struct ht_tracer *t, __u32 tgid, bool on);
/* With the filter on: is tgid traced now? */
bool ht_tracer_tgid_traced(const struct ht_tracer *t, __u32 tgid);
/*
 * With the filter on, VM processes that exited but are not traced (from a
 * hypercall exit; with --exits, from any exit): fn(ctx, tgid, fresh) for
 * each, fresh the first time it is reported. Returns the number of fresh ones.
 */
typedef void (*ht_tgid_fn)(void *ctx, __u32 tgid, bool fresh);
int ht_tracer_vm_candidates(const struct ht_tracer *t, ht_tgid_fn fn, void *ctx);
/* A candidate that has ended: forgotten, so that a new process with its pid is fresh again. */
void ht_tracer_forget_candidate(const struct ht_tracer *t, __u32 tgid);
/* Aggregate-only: deletes the histograms of VM process tgid (it ended). The number deleted. */
int ht_tracer_forget_vm(const struct ht_tracer *t, __u32 tgid);
/*
 * --exits: deletes every entry of the n VM processes pids (sorted here) in
 * the host-wide tables, series, causes, cause names, and their shares. Only
 * for processes that have ended and whose last numbers were read: a VM's
 * entries are its numbers. The number of entries deleted, or -errno.
 */
long ht_tracer_free_vms(struct ht_tracer *t, __u32 *pids, size_t n);
/* --exits: VM process pid's entries in those tables, and its share (1 if it has one). */
long ht_tracer_vm_entries(const struct ht_tracer *t, __u32 pid);
/* --exits: fn with each VM process's share of the host-wide tables (limits.h). 0 or -errno. */
typedef void (*ht_vm_share_fn)(void *ctx, __u32 tgid, const struct ht_vm_share *share);
int ht_tracer_read_vm_shares(struct ht_tracer *t, ht_vm_share_fn fn, void *ctx);
/* Turns on the kernel's BPF run-time statistics while the tracer lives. 0 or -errno. */
/*
 * --boot: each booting VM process's numbers (boot_vms), and freeing an
 * ended one's entry after its last read. 0 or -errno.
 */
typedef void (*ht_boot_vm_fn)(void *ctx, __u32 pid, const struct ht_boot_vm *vm);
int ht_tracer_read_boot_vms(const struct ht_tracer *t, ht_boot_vm_fn fn, void *ctx);
int ht_tracer_free_boot_vm(const struct ht_tracer *t, __u32 pid);
int ht_tracer_enable_stats(struct ht_tracer *t);
/* Fills out[] for kvm_exit, kvm_hypercall, kvm_entry. 0 or -errno. */
/*
 * Each loaded tracepoint program's statistics, in the object's order (the
 * hypercall's three first): their number, or -errno.
 */
int ht_tracer_prog_stats(const struct ht_tracer *t, struct ht_prog_stats out[HT_MAX_TRACEPOINT_PROGS]);
/* Threads armed right now (a hypercall exit seen, entry not yet): CPU slots armed + states moved. */
__u64 ht_tracer_armed_threads(const struct ht_tracer *t);
/* Of those, the ones switched out (their states parked in moved_states). */
__u64 ht_tracer_parked_states(const struct ht_tracer *t);
void ht_tracer_destroy(struct ht_tracer *t);


#endif
