/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The argument of the synthetic_fill program (src/bpf/hypertrace.bpf.c), which
 * submits `count` fused records numbered seq, seq + 1, ... (in a1) through the
 * real ring buffers: what the drain tests, the drain benchmark and
 * tests/tools/inject_records pass to BPF_PROG_TEST_RUN as its context. One
 * definition for the BPF program and its callers; the asserts pin the layout
 * both sides read.
 */
#ifndef HYPERTRACE_SYNTHETIC_FILL_H
#define HYPERTRACE_SYNTHETIC_FILL_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

struct ht_synthetic_fill_args {
	__u64 seq;   /* a1 of the first record */
	__u32 count; /* records to submit */
	__u32 pad;
};

_Static_assert(sizeof(struct ht_synthetic_fill_args) == 16, "synthetic_fill args layout changed");
_Static_assert(__builtin_offsetof(struct ht_synthetic_fill_args, count) == 8,
	       "synthetic_fill args layout changed");

#endif
