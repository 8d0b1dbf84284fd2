/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Limits that the BPF programs size their maps by and that user space checks
 * and reports: one definition for both sides.
 */
#ifndef HYPERTRACE_LIMITS_H
#define HYPERTRACE_LIMITS_H

/* CPUs a host may have for record to run (user space checks): one state slot each. */
#define HT_MAX_CPUS 1024
/* --exits: entries of each CPU's table of series (src/bpf/vcpu_state.h, exit_cache). */
#define HT_EXIT_CACHE_WAYS 256

/* VM processes -p and --vm can trace at once (traced_tgids): one more is -E2BIG. */
#define HT_MAX_TRACED_TGIDS 1024

/*
 * --exits: each VM process's share of the host-wide tables (record.h sizes
 * them), so that neither churn nor a few VMs with many series or causes
 * take every later VM's. A share is taken only where a VM makes a new
 * entry (never on an exit of an entry it has) and given back when user
 * space frees an ended VM's entries; a new entry beyond it is refused and
 * counted in the VM's excess (struct ht_vm_share).
 *
 * Series in exit_hists (HT_EXIT_MAX_SERIES, 16384): 16 VMs at their full
 * share fill it, so up to 15 VMs cannot take a 16th's. A VM's series in its
 * CPUs' own tables (exit_cache) are not counted: those are per CPU, and a
 * series that finds no room there comes here. 1024 holds 64 vCPUs with 16
 * reasons each beyond the per-CPU tables.
 */
#define HT_EXIT_SERIES_PER_VM 1024
/*
 * Entries in exit_causes plus exit_cause_names (HT_EXIT_MAX_CAUSES, 4096,
 * each): 32 VMs at their full share fill either, so up to 31 VMs cannot
 * take a 32nd's. 128 holds 7 reasons with causes, each with its name entry,
 * HT_EXIT_CAUSES_PER_REASON (16) named causes and its "other" (7 x 18 = 126).
 */
#define HT_EXIT_CAUSES_PER_VM 128
/*
 * vCPU threads in vcpu_thread_table (record --vcpu-threads, by default 64
 * a possible CPU): a VM's share is the table's size shifted right by this,
 * a quarter, so a VM of more vCPUs than that (a 100-vCPU VM on a 4-CPU host)
 * cannot take every other VM's room. A thread's share is taken when it gets
 * its entry and given back when it ends; the exits of a thread beyond it
 * are lost, counted (HT_CNT_EXIT_NO_THREAD and the VM's threads_over).
 */
#define HT_VCPU_THREADS_PER_VM_SHIFT 2
/*
 * VM processes with a share at once (vm_shares): as many as exit_causes
 * could hold one entry each. A VM beyond them makes no new entry (counted
 * as lost) until an ended VM's share is freed.
 */
#define HT_MAX_VM_SHARES 4096

/*
 * --boot: VMs whose boots are followed at once (boot_vms; an ended VM's
 * entry is freed), and each VM's bound: a boot window of
 * HT_BOOT_WINDOW_DEFAULT_S seconds (--boot SECONDS) and at most
 * HT_BOOT_MAX_EXITS_PER_VM exits recorded in it (80 bytes each in the
 * rings; a Linux boot to its shell takes about 130,000), the rest counted
 * in its ht_boot_vm.over.
 */
#define HT_MAX_BOOT_VMS 256
#define HT_BOOT_WINDOW_DEFAULT_S 60
#define HT_BOOT_MAX_EXITS_PER_VM 2000000

#endif
