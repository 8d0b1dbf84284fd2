// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "common/option_error.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

void ht_option_problem(int opt, char **argv, char *buf, size_t len)
{
	const char *arg = argv[optind - 1];
	const char *eq = strchr(arg, '=');

	/*
	 * A long option is always the last argument getopt looked at. A short one
	 * may sit inside a cluster that getopt has not finished ("-Zq"), or has
	 * just finished ("-hZ"), so only optopt names it.
	 */
	if (strncmp(arg, "--", 2) != 0)
		snprintf(buf, len, opt == ':' ? "option '-%c' needs a value" : "unknown option '-%c'", optopt);
	else if (opt == ':')
		snprintf(buf, len, "option '%s' needs a value", arg);
	else if (eq && optopt)
		snprintf(buf, len, "option '%.*s' takes no value", (int)(eq - arg), arg);
	else
		snprintf(buf, len, "unknown option '%s'", arg);
}
