// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "cli.h"

#include <stdarg.h>
#include <stdio.h>
#include "common/option_error.h"

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

int ht_option_error(const char *cmd, int opt, char **argv)
{
	char problem[256];

	ht_option_problem(opt, argv, problem, sizeof(problem));
	return ht_usage_error(cmd, "%s", problem);
}

int ht_print_version(void)
{
	printf("hypertrace-bpf %s\n", HT_VERSION);
	return HT_EXIT_OK;
}
