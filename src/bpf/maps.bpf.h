/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The BPF object's filters (rodata), maps and globals: the lowest layer of
 * the programs' headers (maps.bpf.h, helpers.bpf.h, exit_series.bpf.h,
 * vcpu_account.bpf.h, exit_causes.bpf.h, boot.bpf.h, exits.bpf.h, fuse.bpf.h, each
 * including the one below). One definition each: hypertrace.bpf.c and
 * the benchmarks' objects, which include hypertrace.bpf.c whole, get them
 * from here.
 */
#ifndef HYPERTRACE_MAPS_BPF_H
#define HYPERTRACE_MAPS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "hypertrace/record.h"
#include "vcpu_state.h"

/*
 * Filters, fixed before load (rodata): the verifier sees constants and prunes
 * the code of every filter that is not in use, so an unused filter costs nothing.
 */
const volatile __u32 filter_nr[HT_MAX_SELECTED_NR] = { HT_DEFAULT_HYPERCALL_NR };
const volatile __u32 filter_nr_count = 1;
const volatile bool filter_exit_reason_on = false;
const volatile __u32 filter_exit_reason = 0; /* VMX: compared with the low 16 bits */
/*
 * The hot-path pre-filter: (exit_reason & mask) == value. A host runs one KVM
 * flavour, so the kvm_exit program is built from one handler for VMX
 * (0xffff/18: basic reason, flag bits ignored) and SVM (~0/0x81, from the
 * classic record or, raw, from the vCPU) with the pair as immediates, and a
 * generic one reading it from here, loaded only for an explicit
 * --exit-reason. User space loads exactly one. One AND and one compare
 * reject almost every exit.
 */
const volatile __u32 prefilter_mask = HT_VMX_EXIT_REASON_MASK;
const volatile __u32 prefilter_value = HT_VMX_EXIT_REASON_VMCALL;
/* VM processes: every one, or (filter_tgid_on) those in traced_tgids below. */
const volatile bool filter_tgid_on = false;
const volatile bool filter_vcpu_on = false;
const volatile __u32 filter_vcpu = 0;
/* Aggregate-only mode: histograms in BPF instead of records (enum ht_agg_group_by). */
const volatile bool aggregate_only = false;
const volatile __u32 aggregate_group_by = HT_AGG_BY_NONE;
/* Aggregate-only, per vCPU: also key by the nr's index in filter_nr (record --metrics). */
const volatile bool aggregate_by_nr = false;
/* The consumer is woken each time the ring's fill level crosses a multiple of 1 << wakeup_shift; 0: kernel default. */
const volatile __u32 wakeup_shift = 0;
/*
 * record --exits: every exit's time in the host and the vCPU threads'
 * waiting (exits.bpf.h). Off, the verifier removes all of it: the hot path
 * is what it is without it.
 */
const volatile bool exits_on = false;
/*
 * record --vcpu-sched (needs exits_on: its vCPU thread table): each switch of
 * a vCPU thread out of its CPU and back in, as a struct ht_vcpu_switch in the
 * rings. Off, the verifier removes it.
 */
const volatile bool vcpu_sched_on = false;
/*
 * record --wakeups (needs exits_on: the wake-ups are its halts'): each
 * wake-up of a halted vCPU thread, as a struct ht_vcpu_wakeup in the rings.
 * Off, the verifier removes it.
 */
const volatile bool wakeups_on = false;
/*
 * record --boot (needs exits_on: the vCPU account gives each boot exit its
 * parts): the exits of VM processes that start at or after boot_since_ns,
 * one record each, for boot_window_ns from a VM's first entry and at most
 * boot_max_exits of them per VM (boot.bpf.h). Off, the verifier removes it.
 */
const volatile bool boot_on = false;
const volatile __u64 boot_since_ns = 0;
const volatile __u64 boot_window_ns = 0;
const volatile __u64 boot_max_exits = 0;
/*
 * record --exits: the vCPU thread table's entries less one, a power of two
 * (vcpu_thread_table and what is kept per thread are made that size). The
 * host decides it: every entry is kernel memory zeroed when record starts.
 */
const volatile __u32 vcpu_thread_mask = HT_MAX_VCPU_THREADS - 1;
/* For the synthetic programs, which have no task or vCPU to read: a thread's process start and its mode. */
__u64 synthetic_process_start_ns = 0;
__u8 synthetic_boot_mode = 0;

/* A record as it sits in the ring buffer: 8-byte sample header + the record. */
#define HT_RINGBUF_SAMPLE_BYTES (8 + sizeof(struct ht_record))

/*
 * Records go to the ring of the CPU that emits them: a ring buffer's
 * reservation takes a spinlock, and producers on two CPUs sharing one ring
 * paid 6x per record (docs/performance.md). User space sizes the array to a
 * power of two, at most HT_MAX_RINGS, creates the rings and puts them in; CPU
 * c uses ring c & ring_mask, so beyond HT_MAX_RINGS CPUs share rings in pairs,
 * fours, ... The one consumer merges the rings in time order.
 */
struct ht_ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096); /* each ring's size, set by user space before load */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1); /* the number of rings, set by user space before load */
	__type(key, __u32);
	__array(values, struct ht_ring);
} rings SEC(".maps");

const volatile __u32 ring_mask = 0;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HT_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, HT_AGG_MAX_GROUPS);
	__type(key, __u64);
	__type(value, struct ht_agg_hist);
} latency_hists SEC(".maps");

/*
 * With filter_tgid_on: the VM processes traced (-p PID; the processes of
 * --vm NAME, which user space adds and removes while VMs come and go). Read
 * on a hypercall exit and, with exits_on, where an exit is counted; never
 * on the path of other exits otherwise.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HT_MAX_TRACED_TGIDS);
	__type(key, __u32);
	__type(value, __u8);
} traced_tgids SEC(".maps");

/*
 * With filter_tgid_on: processes that exited for a hypercall (with exits_on:
 * that exited at all) but are not traced, so user space can tell whether a
 * new one is the VM it follows
 * (value 0: new; user space sets 1 once it has looked). A kvm_exit comes
 * only from a thread running a vCPU of a KVM VM: the kernel vouches that
 * each is a VM. LRU: a host with more untraced VMs forgets the oldest.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, HT_MAX_TRACED_TGIDS);
	__type(key, __u32);
	__type(value, __u8);
} vm_candidates SEC(".maps");

/*
 * --exits: per-CPU histograms of the time in the host, per (VM process, vCPU,
 * ISA, exit reason), of the series that found no entry in their CPU's
 * exit_cache.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, HT_EXIT_MAX_SERIES);
	/* Memory only for the series that occur: a host may run few VMs on many CPUs. */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct ht_exit_key);
	__type(value, struct ht_exit_hist);
} exit_hists SEC(".maps");

/* --exits: each CPU's table of series (see exit_cache_entry); CPUs x HT_EXIT_CACHE_WAYS entries, set by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HT_EXIT_CACHE_WAYS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct exit_cache_entry);
} exit_cache SEC(".maps");

/*
 * --exits: the causes of exits (struct ht_exit_cause_hist), per CPU, and how
 * many causes each (VM process, ISA, reason) has named (key: kind, detail
 * and value 0), for the bound (see enum ht_cause_kind).
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, HT_EXIT_MAX_CAUSES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct ht_exit_cause_key);
	__type(value, struct ht_exit_cause_hist);
} exit_causes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HT_EXIT_MAX_CAUSES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct ht_exit_cause_key);
	__type(value, __u32);
} exit_cause_names SEC(".maps");

/*
 * --exits: each VM process's share of exit_hists, exit_causes and
 * exit_cause_names (struct ht_vm_share, bounds in limits.h), looked at only
 * where a VM makes a new entry there; user space deletes an ended VM's
 * entries and its share together. Preallocated (it is small): a share the
 * allocator failed to make would leave its VM no new series or cause at all.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HT_MAX_VM_SHARES);
	__type(key, __u32); /* the VM process's tgid */
	__type(value, struct ht_vm_share);
} vm_shares SEC(".maps");

/* --exits: each CPU's note of its open exit's cause, a cache line each (see exit_cause_note). */
struct cpu_exit_cause cpu_exit_causes[HT_MAX_CPUS] = {};

/*
 * --exits: the vCPU threads (struct vcpu_thread), one entry each, read by
 * user space through a mapping (no system call per thread, no copy); an
 * entry of a thread that ended stays until user space has read its last
 * numbers and frees it. vcpu_thread_ids finds a thread's entry by its id.
 * Preallocated: sched_switch creates entries with the runqueue lock held
 * (see moved_states).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HT_MAX_VCPU_THREADS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct vcpu_thread);
} vcpu_thread_table SEC(".maps");

/*
 * --exits: each vCPU thread's halts and their wake-ups, at its index in
 * vcpu_thread_table (reset when the index is given to a thread). Not
 * mapped: user space copies a thread's when it reads the thread, and a
 * mapping of every entry (a kilobyte each, mostly histograms) would be
 * resident in the recorder for the threads a host never has.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HT_MAX_VCPU_THREADS);
	__type(key, __u32);
	__type(value, struct ht_vcpu_halts);
} vcpu_halts SEC(".maps");

/* --exits: each vCPU thread's interrupts (struct vcpu_irq_state), at its vcpu_thread_table index, copied as vcpu_halts. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HT_MAX_VCPU_THREADS);
	__type(key, __u32);
	__type(value, struct vcpu_irq_state);
} vcpu_irqs SEC(".maps");

/* --exits: each vCPU thread's timer wake-ups from their due time, at its vcpu_thread_table index, copied as vcpu_halts. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HT_MAX_VCPU_THREADS);
	__type(key, __u32);
	__type(value, struct ht_vcpu_timer_due);
} vcpu_timer_dues SEC(".maps");

/*
 * --exits: a vCPU thread's index in vcpu_thread_table by its VM process and
 * vCPU id (tgid << 32 | vcpu_id), which is all an interrupt's acceptance
 * names of its target (vcpu_irqs.bpf.h). Made when the thread registers,
 * gone when it ends; bounded as vcpu_thread_ids. Preallocated, as that one.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HT_MAX_VCPU_THREADS);
	__type(key, __u64);
	__type(value, __u32);
} vcpu_apic_ids SEC(".maps");

/* The entries of vcpu_thread_table a thread has (struct vcpu_thread_used), mapped by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct vcpu_thread_used);
} vcpu_thread_used SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HT_MAX_VCPU_THREADS);
	__type(key, __u32);   /* the thread's id */
	__type(value, __u32); /* its index in vcpu_thread_table */
} vcpu_thread_ids SEC(".maps");

/* --boot: each vCPU thread's boot state, at its vcpu_thread_table index (one entry if --boot is off). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HT_MAX_VCPU_THREADS);
	__type(key, __u32);
	__type(value, struct boot_thread);
} boot_threads SEC(".maps");

/*
 * --boot: the booting VM processes (struct ht_boot_vm, by tgid); user space
 * reads them every interval and deletes an ended VM's. Preallocated: an
 * entry is made at a vCPU thread's first entry, which may run with
 * interrupts off.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HT_MAX_BOOT_VMS);
	__type(key, __u32);
	__type(value, struct ht_boot_vm);
} boot_vms SEC(".maps");

/* --boot: each CPU's exit that just ended, for the boot handler (see boot_exit_view). */
struct boot_exit_view boot_pending[HT_MAX_CPUS] = {};

/* --exits: bit tid set while vcpu_thread_ids has an entry for tid (512 KiB: one bit per possible thread id). */
__u64 vcpu_tid_bits[HT_TID_BITS / 64] = {};

/*
 * Where an armed thread's state lives. A vCPU thread runs its kvm_exit,
 * kvm_hypercall and kvm_entry on one CPU unless it is switched out in
 * between, and a thread leaves its CPU only by being switched out. So a
 * running thread's armed state is kept in the slot of the CPU it runs on
 * (cpu_states: a global array, one load, no helper call), and the
 * sched_switch program moves it into moved_states when the thread is
 * switched out armed, and back into the slot of whatever CPU it is switched
 * in on. While a CPU's slot is armed, the thread running there is the one
 * that armed it, as far as the kernel reports switches (take_own_state in
 * fuse.bpf.h puts right a switch it did not report). armed_moved counts the
 * states in moved_states (armed threads off-CPU, rare: a hypercall's window
 * is microseconds): while it is 0, no handler looks into moved_states.
 *
 * This needs the sched_switch program attached before the kvm_exit program
 * (ht_tracer_attach does; a tracer loaded for synthetic events attaches it at
 * load), or a vCPU thread that never leaves its CPU (the hot-path benchmark).
 *
 * No line is written by more than one CPU per hypercall: the slots are per CPU
 * (128 bytes each), and armed_moved changes only when an armed thread is
 * switched out or in. At most HT_MAX_CPUS possible CPUs (user space checks).
 */
struct vcpu_state cpu_states[HT_MAX_CPUS] = {};

/*
 * The states of armed threads that are off-CPU, by thread id. A hash map
 * with preallocated elements, not task storage: sched_switch runs with the
 * runqueue lock held, where allocating memory (task storage's create, on 6.1
 * a GFP_ATOMIC kmalloc that may wake kswapd) can deadlock the scheduler; a
 * preallocated element comes off a free list. Full: the hypercall is lost
 * and counted (HT_CNT_STATE_ALLOC_FAIL). A thread is switched in again
 * before it can exit, which takes its entry out.
 */
#define HT_MAX_MOVED_STATES 4096
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HT_MAX_MOVED_STATES);
	__type(key, __u32); /* the thread's id (task->pid) */
	__type(value, struct vcpu_state);
} moved_states SEC(".maps");

__u64 armed_moved = 0;

/*
 * Bytes of records emitted into each ring ([ring][0]; 64 bytes a ring, so CPUs
 * do not write each other's line), for the wake-up test.
 */
__u64 ring_emitted[HT_MAX_RINGS][8] = {};

#endif /* HYPERTRACE_MAPS_BPF_H */
