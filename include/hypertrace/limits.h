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

#endif
