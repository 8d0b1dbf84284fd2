/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the kernel test programs (tests/kernel) share: the start of main()
 * (root, the synthetic events' layout, a scratch file) and the load of a
 * tracer with its error shown.
 */
#ifndef HT_TEST_KERNEL_TEST_H
#define HT_TEST_KERNEL_TEST_H

#include <stdbool.h>
#include "record/tracer.h"
#include "synth.h"

/*
 * The start of main() of the program whose checks are named after suite:
 * without root, one "SKIP: suite: ..." line and exit 0. layout (may be NULL)
 * is loaded from the kernel's BTF; path (may be NULL) is a mkstemp template,
 * made an empty file. Either failing prints "FAIL: suite_setup: reason" and
 * exits 1. Returns only when the tests can run.
 */
void ht_kernel_test_begin(const char *suite, struct ht_synth_layout *layout, char *path);

/* ht_tracer_load of o: the tracer, or NULL with the reason printed under the test's name. */
struct ht_tracer *ht_kernel_test_tracer(const struct ht_tracer_opts *o);

/* What a test drains from a tracer's rings: the few records of the events it plays. */
#define HT_KERNEL_TEST_MAX_DRAINED 64
struct ht_kernel_test_drained {
	struct ht_record recs[HT_KERNEL_TEST_MAX_DRAINED];
	unsigned int n;
};

/* Everything in t's rings into out, merged as record's drain merges it; false with the failure reported. */
bool ht_kernel_test_drain(const struct ht_tracer *t, struct ht_kernel_test_drained *out);

#endif
