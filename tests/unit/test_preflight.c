// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Host checks on fake sysfs/tracefs trees: each failure names its cause and fix. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/bpf.h>
#include "record/preflight.h"
#include "test.h"

static char root[] = "/tmp/ht-preflight-XXXXXX";
static char btf[256], tracefs[256], debugfs[256];
static struct ht_preflight_paths paths;

static void mkdirs(const char *fmt, const char *a)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), fmt, a);
	if (system(cmd) != 0)
		printf("    setup command failed: %s\n", cmd);
}

static void missing_btf_says_which_kernel_option_is_needed(void)
{
	char err[512];

	CHECK(ht_check_btf(&paths, err, sizeof(err)) == -ENOENT, "found BTF in an empty tree");
	CHECK(strstr(err, "CONFIG_DEBUG_INFO_BTF") != NULL, "err: %s", err);
	mkdirs("touch %s", btf);
	CHECK(ht_check_btf(&paths, err, sizeof(err)) == 0, "err: %s", err);
}

/* Fake kernels: everything there but one map type or one helper. */
static int missing_map_type, missing_helper, bpf_refused;
static int fake_bpf_syscall(void) { return bpf_refused ? -EPERM : 0; }
/* A refused bpf() fails every probe, as libbpf's do. */
static int fake_map_type(int type) { return !bpf_refused && type != missing_map_type; }
static int fake_helper(int func) { return !bpf_refused && func != missing_helper; }
static const struct ht_bpf_feature_probes fake_probes = { fake_bpf_syscall, fake_map_type, fake_helper };

static void missing_bpf_features_are_named_with_the_kernel_needed(void)
{
	char err[512];

	missing_map_type = -1, missing_helper = -1;
	CHECK(ht_check_bpf_features(&fake_probes, err, sizeof(err)) == 0, "err: %s", err);
	missing_map_type = BPF_MAP_TYPE_ARRAY_OF_MAPS;
	CHECK(ht_check_bpf_features(&fake_probes, err, sizeof(err)) == -EOPNOTSUPP, "array of maps missing");
	CHECK(strstr(err, "arrays of BPF maps") && strstr(err, "Linux 6.1 or newer"), "err: %s", err);
	missing_map_type = BPF_MAP_TYPE_RINGBUF;
	CHECK(ht_check_bpf_features(&fake_probes, err, sizeof(err)) == -EOPNOTSUPP, "ring buffer missing");
	CHECK(strstr(err, "ring buffer") && strstr(err, "Linux 6.1 or newer"), "err: %s", err);
	missing_map_type = -1, missing_helper = BPF_FUNC_ringbuf_reserve;
	CHECK(ht_check_bpf_features(&fake_probes, err, sizeof(err)) == -EOPNOTSUPP, "helper missing");
	CHECK(strstr(err, "bpf_ringbuf_reserve") != NULL, "err: %s", err);
}

/* A seccomp filter (a container's, a service's) refusing bpf() is no old kernel. */
static void refused_bpf_syscall_is_not_a_missing_feature(void)
{
	char err[512];

	missing_map_type = -1, missing_helper = -1, bpf_refused = 1;
	CHECK(ht_check_bpf_features(&fake_probes, err, sizeof(err)) == -EPERM, "bpf() refused");
	CHECK(strstr(err, "not permitted") && strstr(err, "seccomp") && !strstr(err, "Linux 6.1"),
	      "err: %s", err);
	bpf_refused = 0;
}

static void kvm_module_without_btf_is_named(void)
{
	char err[512], mod[300], btfdir[300];

	snprintf(mod, sizeof(mod), "%s/module/kvm", root);
	snprintf(btfdir, sizeof(btfdir), "%s/btf", root);
	mkdirs("mkdir -p %s", mod);
	mkdirs("mkdir -p %s", btfdir);
	/* Built-in KVM (no initstate): its types are in vmlinux. */
	CHECK(ht_check_kvm_btf(mod, btfdir, err, sizeof(err)) == 0, "err: %s", err);
	mkdirs("touch %s/initstate", mod);
	CHECK(ht_check_kvm_btf(mod, btfdir, err, sizeof(err)) == -ENOENT, "module without BTF");
	CHECK(strstr(err, "CONFIG_DEBUG_INFO_BTF_MODULES") != NULL, "err: %s", err);
	mkdirs("touch %s/kvm", btfdir);
	CHECK(ht_check_kvm_btf(mod, btfdir, err, sizeof(err)) == 0, "err: %s", err);
}

static void unmounted_tracefs_says_how_to_mount_it(void)
{
	char err[512];

	CHECK(ht_check_tracefs(&paths, 0, err, sizeof(err)) == -ENOENT, "found tracefs");
	CHECK(strstr(err, "mount -t tracefs nodev") != NULL, "err: %s", err);
	CHECK(ht_check_kvm_tracepoints(&paths, err, sizeof(err)) == -ENOENT, "found tracepoints");
	CHECK(strstr(err, "tracefs is not mounted") != NULL, "err: %s", err);
}

static void missing_kvm_tracepoints_say_which_module_to_load(void)
{
	char err[512];

	mkdirs("mkdir -p %s/events/sched", tracefs);
	CHECK(ht_check_tracefs(&paths, 0, err, sizeof(err)) == 0, "err: %s", err);
	CHECK(ht_check_kvm_tracepoints(&paths, err, sizeof(err)) == -ENOENT, "found kvm tracepoints");
	CHECK(strstr(err, "modprobe kvm_") != NULL && strstr(err, "KVM is not loaded"), "err: %s", err);
	mkdirs("mkdir -p %s/events/kvm/kvm_exit", tracefs);
	mkdirs("mkdir -p %s/events/kvm/kvm_hypercall", tracefs);
	CHECK(ht_check_kvm_tracepoints(&paths, err, sizeof(err)) == -ENOENT, "kvm_entry is missing");
	CHECK(strstr(err, "kvm:kvm_entry") != NULL, "err: %s", err);
	mkdirs("mkdir -p %s/events/kvm/kvm_entry", tracefs);
	CHECK(ht_check_kvm_tracepoints(&paths, err, sizeof(err)) == 0, "err: %s", err);
}

static void tracefs_under_debugfs_is_found_too(void)
{
	char err[512];
	struct ht_preflight_paths p = paths;

	p.tracefs = "/nonexistent";
	mkdirs("mkdir -p %s/events/kvm/kvm_exit", debugfs);
	CHECK(ht_check_tracefs(&p, 0, err, sizeof(err)) == 0, "err: %s", err);
}

static void privileges_of_root_are_enough(void)
{
	char err[512];

	if (geteuid() != 0)
		SKIP("runs as root only; the CLI test checks the message for an unprivileged user");
	CHECK(ht_check_privileges(err, sizeof(err)) == 0, "err: %s", err);
}

int main(void)
{
	if (!mkdtemp(root)) {
		printf("FAIL: preflight_setup: %s\n", strerror(errno));
		return 1;
	}
	snprintf(btf, sizeof(btf), "%s/btf-vmlinux", root);
	snprintf(tracefs, sizeof(tracefs), "%s/tracing", root);
	snprintf(debugfs, sizeof(debugfs), "%s/debug-tracing", root);
	paths = (struct ht_preflight_paths){ btf, tracefs, debugfs };
	RUN(missing_btf_says_which_kernel_option_is_needed);
	RUN(missing_bpf_features_are_named_with_the_kernel_needed);
	RUN(refused_bpf_syscall_is_not_a_missing_feature);
	RUN(kvm_module_without_btf_is_named);
	RUN(unmounted_tracefs_says_how_to_mount_it);
	RUN(missing_kvm_tracepoints_say_which_module_to_load);
	RUN(tracefs_under_debugfs_is_found_too);
	RUN(privileges_of_root_are_enough);
	mkdirs("rm -rf %s", root);
	return ht_test_exit_status();
}
