/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Command line of minivm. */
#ifndef GUEST_MINIVM_OPTIONS_H
#define GUEST_MINIVM_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpuid_info.h"
#include "minivm_payload.h"

#define MINIVM_DEFAULT_COUNT 1000u
#define MINIVM_DEFAULT_OTHER_NR 1001u
#define MINIVM_DEFAULT_TIMEOUT 30u
#define MINIVM_MAX_TIMEOUT 86400u

struct minivm_options {
	uint32_t vcpus;
	uint32_t count;
	uint32_t nr;
	uint32_t other_nr;
	enum minivm_mix_kind mix[MINIVM_MIX_KINDS];
	size_t mix_len;
	uint32_t mix_per_call;
	enum hypercall_insn insn; /* UNKNOWN: choose from the CPU vendor */
	uint32_t timeout;         /* seconds */
	const char *kvm_path;
	bool help;
};

/*
 * Parses argv into *o (defaults first). Returns 0 on success (check o->help),
 * -1 on a usage error with a one-line message, without program name or
 * newline, in err.
 */
int minivm_options_parse(int argc, char **argv, struct minivm_options *o, char *err,
			 size_t err_size);

/* The --help text. */
extern const char minivm_usage[];

#endif
