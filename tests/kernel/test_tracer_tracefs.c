// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Loading the tracer on a machine where tracefs is not mounted, as on a
 * freshly booted host: libbpf finds a classic tracepoint's id under tracefs,
 * so every caller of the tracer (record, the in-kernel tests, the
 * benchmarks) must get tracefs mounted, not only `record` through its
 * preflight. The test unmounts tracefs in a mount namespace of its own, so
 * the host's mount is never touched. Needs root.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include "record/tracer.h"
#include "kernel_test.h"
#include "test.h"

#define TRACEFS "/sys/kernel/tracing"

static int tracefs_mounted(void)
{
	struct stat sb;

	return stat(TRACEFS "/events", &sb) == 0;
}

static void a_synthetic_tracer_loads_where_tracefs_is_not_mounted(void)
{
	struct ht_tracer_opts o = { .isa = HT_ISA_SVM, .synthetic = true, .ringbuf_bytes = 1 << 20 };
	struct ht_tracer *tracer;
	char err[512] = "";

	/* A namespace of our own whose mounts do not propagate back to the host. */
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		SKIP("cannot make a private mount namespace: %s", strerror(errno));
	/* debugfs offers tracefs again under /sys/kernel/debug/tracing: take both away. */
	umount2("/sys/kernel/debug", MNT_DETACH);
	while (tracefs_mounted())
		CHECK(umount2(TRACEFS, MNT_DETACH) == 0, "umount %s: %s", TRACEFS, strerror(errno));
	CHECK(ht_tracer_load(&tracer, &o, err, sizeof(err)) == 0, "%s", err);
	ASSERT_TRUE(tracefs_mounted(), "the tracer loaded but " TRACEFS "/events is not there");
	ht_tracer_destroy(tracer);
}

int main(void)
{
	ht_kernel_test_begin("tracer_tracefs", NULL, NULL);
	RUN(a_synthetic_tracer_loads_where_tracefs_is_not_mounted);
	return ht_test_exit_status();
}
