// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "cli.h"

#include <stdarg.h>
#include <stdio.h>

int ht_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "hypertrace-bpf %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": see 'hypertrace-bpf %s --help'\n", cmd);
	return HT_EXIT_USAGE;
}

int ht_runtime_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "hypertrace-bpf: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return HT_EXIT_RUNTIME;
}
