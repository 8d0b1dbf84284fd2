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

int ht_parse_options(int argc, char **argv, const char *shortopts, const struct option *longopts,
		     ht_option_fn one, void *ctx, char *err, size_t err_size)
{
	int c;

	/* Our own one-line messages instead of getopt's; optind 0 rescans from scratch. */
	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		if (c == '?' || c == ':') {
			/* The option as typed, in the host commands' words. */
			char problem[128];

			ht_option_problem(c, argv, problem, sizeof(problem));
			snprintf(err, err_size, "%s; see --help", problem);
			return -1;
		}
		if (!one(c, optarg, ctx, err, err_size))
			return -1;
	}
	if (optind < argc) {
		snprintf(err, err_size, "unexpected argument '%s'; see --help", argv[optind]);
		return -1;
	}
	return 0;
}
