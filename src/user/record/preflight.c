// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "record/preflight.h"
#include "record/privileges.h"
#include "common/cpu_vendor.h"
#include "common/util.h"
#include "hypertrace/record.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/capability.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

const struct ht_preflight_paths ht_preflight_system_paths = {
	.btf_vmlinux = "/sys/kernel/btf/vmlinux",
	.tracefs = "/sys/kernel/tracing",
	.debugfs_tracing = "/sys/kernel/debug/tracing",
};

static bool has_cap(unsigned long long effective, int cap)
{
	return effective & 1ull << cap;
}

/*
 * Root in a user namespace (a rootless container) has every capability there
 * but none for bpf() and perf_event_open(), which want them in the initial
 * namespace. Its uid_map is not the initial namespace's identity map.
 */
static int in_user_namespace(const char *uid_map)
{
	unsigned long inside, outside, count;
	FILE *f = fopen(uid_map, "r");
	int n;

	if (!f)
		return 0;
	n = fscanf(f, "%lu %lu %lu", &inside, &outside, &count);
	fclose(f);
	return n == 3 && !(inside == 0 && outside == 0 && count == 4294967295ul);
}

int ht_check_privileges(char *err, size_t errlen)
{
	if (in_user_namespace("/proc/self/uid_map")) {
		snprintf(err, errlen, "running in a user namespace (a rootless container?): BPF tracing needs CAP_BPF and CAP_PERFMON on the host: run it as root on the host");
		return -EPERM;
	}
	unsigned long long caps = ht_effective_caps(); /* 0 if it cannot be read: refused below */

	if (has_cap(caps, CAP_SYS_ADMIN) || (has_cap(caps, CAP_BPF) && has_cap(caps, CAP_PERFMON)))
		return 0;
	snprintf(err, errlen, "tracing needs root (or CAP_BPF and CAP_PERFMON): run it with sudo");
	return -EPERM;
}

int ht_check_btf(const struct ht_preflight_paths *p, char *err, size_t errlen)
{
	if (access(p->btf_vmlinux, R_OK) == 0)
		return 0;
	snprintf(err, errlen, "this kernel has no BTF (%s is missing): hypertrace-bpf needs a kernel built with CONFIG_DEBUG_INFO_BTF=y",
		 p->btf_vmlinux);
	return -ENOENT;
}

static int dir_exists(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* 0, -EACCES if a tracefs is there but this user may not look into it, else -ENOENT. */
static int events_dir(const struct ht_preflight_paths *p, char *out, size_t len)
{
	const char *roots[] = { p->tracefs, p->debugfs_tracing };
	int ret = -ENOENT;

	for (size_t i = 0; i < 2; i++) {
		snprintf(out, len, "%s/events", roots[i]);
		if (dir_exists(out))
			return 0;
		if (errno == EACCES)
			ret = -EACCES;
	}
	return ret;
}

int ht_mount_tracefs(const struct ht_preflight_paths *p, int mount_if_missing, bool *mounted,
		     char *err, size_t errlen)
{
	char dir[512];
	int ret = events_dir(p, dir, sizeof(dir));

	if (mounted)
		*mounted = false;
	if (ret == 0)
		return 0;
	/*
	 * tracefs is mode 0700 root: CAP_BPF and CAP_PERFMON do not open it, and
	 * libbpf reads each tracepoint's id there before perf_event_open().
	 */
	if (ret == -EACCES) {
		snprintf(err, errlen, "tracefs (%s) is not readable by uid %u: libbpf reads the tracepoint ids there: add CAP_DAC_READ_SEARCH to CAP_BPF and CAP_PERFMON, or run as root",
			 p->tracefs, (unsigned int)getuid());
		return -EACCES;
	}
	/* libbpf resolves tracepoint ids through tracefs: mount it where the kernel expects it. */
	if (mount_if_missing && dir_exists(p->tracefs) &&
	    mount("nodev", p->tracefs, "tracefs", 0, NULL) == 0 && events_dir(p, dir, sizeof(dir)) == 0) {
		if (mounted)
			*mounted = true;
		return 0;
	}
	snprintf(err, errlen, "tracefs is not mounted and could not be mounted: run 'mount -t tracefs nodev %s'",
		 p->tracefs);
	return -ENOENT;
}

int ht_check_tracefs(const struct ht_preflight_paths *p, int mount_if_missing, char *err,
		     size_t errlen)
{
	return ht_mount_tracefs(p, mount_if_missing, NULL, err, errlen);
}

static const char *kvm_module_for_cpu(void)
{
	char vendor[13];

	ht_cpu_vendor(vendor);
	if (!vendor[0])
		return "kvm_intel or kvm_amd";
	return ht_host_isa() == HT_ISA_SVM ? "kvm_amd" : "kvm_intel";
}

int ht_check_kvm_tracepoints(const struct ht_preflight_paths *p, char *err, size_t errlen)
{
	static const char *const names[] = { "kvm_exit", "kvm_hypercall", "kvm_entry" };
	char dir[512], tp[600];

	if (events_dir(p, dir, sizeof(dir)) != 0) {
		snprintf(err, errlen, "tracefs is not mounted: run 'mount -t tracefs nodev %s'", p->tracefs);
		return -ENOENT;
	}
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		snprintf(tp, sizeof(tp), "%s/kvm/%s", dir, names[i]);
		if (!dir_exists(tp)) {
			snprintf(err, errlen, "the kvm:%s tracepoint is missing: KVM is not loaded: run 'modprobe %s'",
				 names[i], kvm_module_for_cpu());
			return -ENOENT;
		}
	}
	return 0;
}

static int probe_bpf_syscall(void)
{
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, NULL, 4, 4, 1, NULL);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

static int probe_map_type(int type)
{
	return libbpf_probe_bpf_map_type((enum bpf_map_type)type, NULL);
}

static int probe_tracepoint_helper(int func)
{
	return libbpf_probe_bpf_helper(BPF_PROG_TYPE_TRACEPOINT, (enum bpf_func_id)func, NULL);
}

const struct ht_bpf_feature_probes ht_bpf_kernel_probes = {
	.bpf_syscall = probe_bpf_syscall,
	.map_type = probe_map_type,
	.tracepoint_helper = probe_tracepoint_helper,
};

/* The oldest kernel the load matrix proves every configuration on (see README). */
#define HT_OLDEST_PROVEN_KERNEL "Linux 6.1"

int ht_check_bpf_features(const struct ht_bpf_feature_probes *p, char *err, size_t errlen)
{
	static const struct {
		int map_type;
		const char *what;
	} maps[] = {
		{ BPF_MAP_TYPE_RINGBUF, "the BPF ring buffer (BPF_MAP_TYPE_RINGBUF, Linux 5.8)" },
		{ BPF_MAP_TYPE_ARRAY_OF_MAPS, "arrays of BPF maps (BPF_MAP_TYPE_ARRAY_OF_MAPS, Linux 4.12)" },
	};
	static const struct {
		int func;
		const char *what;
	} helpers[] = {
		{ BPF_FUNC_ringbuf_reserve, "bpf_ringbuf_reserve() in tracepoint programs (Linux 5.8)" },
		{ BPF_FUNC_ringbuf_submit, "bpf_ringbuf_submit() in tracepoint programs (Linux 5.8)" },
	};

	/*
	 * Every probe below fails alike when bpf() itself is refused: a
	 * container's or a service's seccomp filter must not read as an old kernel.
	 */
	if (p->bpf_syscall && p->bpf_syscall() == -EPERM) {
		snprintf(err, errlen, "the bpf() system call is not permitted here: a seccomp filter or a security module refuses it (a container or a service's SystemCallFilter=): allow the bpf and perf_event_open system calls");
		return -EPERM;
	}
	for (size_t i = 0; i < ARRAY_SIZE(maps); i++) {
		if (p->map_type(maps[i].map_type) == 0) {
			snprintf(err, errlen, "this kernel lacks %s: hypertrace-bpf needs %s or newer",
				 maps[i].what, HT_OLDEST_PROVEN_KERNEL);
			return -EOPNOTSUPP;
		}
	}
	for (size_t i = 0; i < ARRAY_SIZE(helpers); i++) {
		if (p->tracepoint_helper(helpers[i].func) == 0) {
			snprintf(err, errlen, "this kernel lacks %s: hypertrace-bpf needs %s or newer",
				 helpers[i].what, HT_OLDEST_PROVEN_KERNEL);
			return -EOPNOTSUPP;
		}
	}
	return 0;
}

int ht_check_kvm_btf(const char *sys_module_kvm, const char *btf_dir, char *err, size_t errlen)
{
	char path[512];

	/* initstate exists only for a loadable module; built-in KVM's types are in vmlinux. */
	snprintf(path, sizeof(path), "%s/initstate", sys_module_kvm);
	if (access(path, F_OK) != 0)
		return 0;
	snprintf(path, sizeof(path), "%s/kvm", btf_dir);
	if (access(path, R_OK) == 0)
		return 0;
	snprintf(err, errlen, "the kvm module has no BTF (%s is missing): hypertrace-bpf needs a kernel built with CONFIG_DEBUG_INFO_BTF_MODULES=y",
		 path);
	return -ENOENT;
}

int ht_preflight(char *err, size_t errlen)
{
	const struct ht_preflight_paths *p = &ht_preflight_system_paths;
	int ret;

	if ((ret = ht_check_privileges(err, errlen)))
		return ret;
	if ((ret = ht_check_btf(p, err, errlen)))
		return ret;
	if ((ret = ht_check_bpf_features(&ht_bpf_kernel_probes, err, errlen)))
		return ret;
	if ((ret = ht_check_tracefs(p, 1, err, errlen)))
		return ret;
	if ((ret = ht_check_kvm_tracepoints(p, err, errlen)))
		return ret;
	return ht_check_kvm_btf("/sys/module/kvm", HT_SYSFS_BTF_DIR, err, errlen);
}

bool ht_svm_raw_exit_loadable(const char *btf_dir)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/kvm_amd", btf_dir);
	return access(path, R_OK) == 0;
}
