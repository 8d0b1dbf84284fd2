/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Checks that tracing can work here, before anything is loaded, so that each
 * failure a user can cause gets one line naming the cause and the fix.
 */
#ifndef HT_PREFLIGHT_H
#define HT_PREFLIGHT_H

#include <stddef.h>

/* Paths are parameters so the checks can be tested on fake trees. */
struct ht_preflight_paths {
	const char *btf_vmlinux; /* /sys/kernel/btf/vmlinux */
	const char *tracefs;     /* /sys/kernel/tracing */
	const char *debugfs_tracing; /* /sys/kernel/debug/tracing */
};

extern const struct ht_preflight_paths ht_preflight_system_paths;

/* 0 if the process may load and attach tracing BPF programs, else -EPERM and a message. */
int ht_check_privileges(char *err, size_t errlen);
/* 0 if the kernel has BTF, else -ENOENT and a message. */
int ht_check_btf(const struct ht_preflight_paths *p, char *err, size_t errlen);
/*
 * Finds the tracefs events directory, mounting tracefs if it is not mounted
 * and mount_if_missing is set. 0, or -errno and a message.
 */
int ht_check_tracefs(const struct ht_preflight_paths *p, int mount_if_missing, char *err,
		     size_t errlen);
/* 0 if the kvm:kvm_exit/hypercall/entry tracepoints exist, else -ENOENT and which module to load. */
int ht_check_kvm_tracepoints(const struct ht_preflight_paths *p, char *err, size_t errlen);

/* All of the above, in the order a user would fix them. */
int ht_preflight(char *err, size_t errlen);

#endif
