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

/*
 * Pins the calling thread to the CPU it runs on, for the whole program. The
 * tests whose tracers see no real switch (synthetic_switches_only) need it: a
 * synthetic event's program can be preempted half-way (BPF_PROG_TEST_RUN
 * only disables migration), which no tracepoint's can, and a real switch in
 * that gap would see a half-written state. On one CPU, with no real switch
 * seen, each test's events alone move the states, exactly as it plays them.
 */
void ht_kernel_test_pin_here(void);

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

/* The filters of -p tgid (if tgid_on) and --vcpu vcpu (if vcpu_on), the rest default. */
struct ht_filters ht_kernel_test_filters(bool tgid_on, __u32 tgid, bool vcpu_on, __u32 vcpu);

/*
 * How many records t's rings hold after play(t) ran: ~0u with the failure
 * reported (t NULL included). Destroys t.
 */
unsigned int ht_kernel_test_records_played(struct ht_tracer *t, int (*play)(const struct ht_tracer *t));

/*
 * recs written into a new trace file (raw, or delta-zlib if compressed)
 * whose header has filter_flags, closed, its trailer counting all n, and
 * opened again: the reader, NULL with the failure reported. The file is
 * gone once the reader has it.
 */
struct ht_reader *ht_kernel_test_file_of(const struct ht_record *recs, unsigned int n, bool compressed,
					 __u32 filter_flags);

/* Fills t's ring (a two-page one) with the synthetic producer's records; false with the failure reported. */
bool ht_kernel_test_fill_ring(const struct ht_tracer *t);

#endif
