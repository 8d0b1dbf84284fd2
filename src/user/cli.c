// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "cli.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
	const char *arg = argv[optind - 1];
	const char *eq = strchr(arg, '=');

	/*
	 * A long option is always the last argument getopt looked at. A short one
	 * may sit inside a cluster that getopt has not finished ("-Zq"), so only
	 * optopt names it.
	 */
	if (strncmp(arg, "--", 2) != 0)
		return opt == ':' ? ht_usage_error(cmd, "option '-%c' needs a value", optopt) :
				    ht_usage_error(cmd, "unknown option '-%c'", optopt);
	if (opt == ':')
		return ht_usage_error(cmd, "option '%s' needs a value", arg);
	if (eq && optopt)
		return ht_usage_error(cmd, "option '%.*s' takes no value", (int)(eq - arg), arg);
	return ht_usage_error(cmd, "unknown option '%s'", arg);
}

int ht_print_version(void)
{
	printf("hypertrace-bpf %s\n", HT_VERSION);
	return HT_EXIT_OK;
}
