/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What is wrong with an option getopt_long refused, in one wording for the
 * host's commands and the guest programs alike: the option as the user typed
 * it, never the whole cluster it sits in ("-Z" of "-hZ").
 */
#ifndef HT_COMMON_OPTION_ERROR_H
#define HT_COMMON_OPTION_ERROR_H

#include <stdbool.h>
#include <stddef.h>

/*
 * getopt_long's '?' or ':' (with ':' first in optstring and opterr 0), right
 * after it returned: "unknown option '-Z'", "option '-o' needs a value",
 * "unknown option '--xml'", "option '--force' takes no value" into buf.
 */
void ht_option_problem(int opt, char **argv, char *buf, size_t len);

struct option;

/*
 * What one option does, with its value arg (NULL if it has none): false
 * with one line in err.
 */
typedef bool (*ht_option_fn)(int opt, const char *arg, void *ctx, char *err, size_t err_size);

/*
 * The guest programs' option loop: every option of argv through one, with
 * getopt_long's own messages replaced by one line in err ("unknown option
 * '-Z'; see --help"), and no argument left over. 0 if all were taken, else
 * -1 with err set. optind is reset first: argv is scanned from its start.
 */
int ht_parse_options(int argc, char **argv, const char *shortopts, const struct option *longopts,
		     ht_option_fn one, void *ctx, char *err, size_t err_size);

#endif
