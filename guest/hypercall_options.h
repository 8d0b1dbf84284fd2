/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Command line of the `hypercall` guest program. */
#ifndef GUEST_HYPERCALL_OPTIONS_H
#define GUEST_HYPERCALL_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpuid_info.h"

/* Samples are kept in memory (8 bytes each) for the median and p99: cap at 80 MB. */
#define HYPERCALL_MAX_COUNT 10000000ull
#define HYPERCALL_MAX_RATE 1000000000ull

struct hypercall_options {
	uint64_t nr;
	uint64_t count;
	bool a0_fixed;      /* false: a0 is the sequence number 0, 1, 2, ... */
	uint64_t a0, a1, a2, a3;
	uint64_t rate;      /* calls per second; 0: as fast as possible */
	enum hypercall_insn insn; /* UNKNOWN: choose from the CPU vendor */
	const char *snapshot; /* --snapshot FILE: read it between the calls and one more, printed after */
	bool timer_lateness;  /* --timer-lateness: each call reports how late its sleep ended (a1) and its deadline (a2) */
	bool help;
};

/*
 * Parses argv into *o (defaults first). Returns 0 on success (check o->help),
 * -1 on a usage error with a one-line message, without program name or
 * newline, in err.
 */
int hypercall_options_parse(int argc, char **argv, struct hypercall_options *o, char *err,
			    size_t err_size);

/* The --help text. */
extern const char hypercall_usage[];

#endif
