/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Checks that tracing can work here, before anything is loaded, so that each
 * failure a user can cause gets one line naming the cause and the fix.
 */
#ifndef HT_PREFLIGHT_H
#define HT_PREFLIGHT_H

#include <stdbool.h>
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
/* The same, telling whether it mounted tracefs (*mounted), for callers that say so. */
int ht_mount_tracefs(const struct ht_preflight_paths *p, int mount_if_missing, bool *mounted,
		     char *err, size_t errlen);
/* 0 if the kvm:kvm_exit/hypercall/entry tracepoints exist, else -ENOENT and which module to load. */
int ht_check_kvm_tracepoints(const struct ht_preflight_paths *p, char *err, size_t errlen);

/*
 * The running kernel's BPF features, asked through probes so that tests can
 * pretend a feature is missing: each returns 1 if supported, 0 if not, <0 if
 * it could not tell (then the load reports the kernel's own reason).
 */
struct ht_bpf_feature_probes {
	/* 0 if bpf() may be called at all, else -errno (EPERM: a seccomp filter or an LSM says no). */
	int (*bpf_syscall)(void);
	int (*map_type)(int bpf_map_type);
	int (*tracepoint_helper)(int bpf_func_id);
};
extern const struct ht_bpf_feature_probes ht_bpf_kernel_probes; /* libbpf's probes */
/* 0 if every BPF feature record needs is there, else -EOPNOTSUPP and what is missing. */
int ht_check_bpf_features(const struct ht_bpf_feature_probes *p, char *err, size_t errlen);
/*
 * 0 unless kvm is a loaded module without BTF of its own (the kvm tracepoint
 * types then exist nowhere for CO-RE); paths: /sys/module/kvm, /sys/kernel/btf.
 */
int ht_check_kvm_btf(const char *sys_module_kvm, const char *btf_dir, char *err, size_t errlen);
#define HT_SYSFS_BTF_DIR "/sys/kernel/btf"
/*
 * Whether SVM's raw kvm_exit program can load here: the kvm_amd module's BTF
 * (in btf_dir), where CO-RE finds struct vcpu_svm and the VMCB's. With
 * kvm_amd built in or without BTF of its own, record loads a classic one.
 */
bool ht_svm_raw_exit_loadable(const char *btf_dir);

/* All of the above, in the order a user would fix them. */
int ht_preflight(char *err, size_t errlen);

#endif
