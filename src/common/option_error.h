/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What is wrong with an option getopt_long refused, in one wording for the
 * host's commands and the guest programs alike: the option as the user typed
 * it, never the whole cluster it sits in ("-Z" of "-hZ").
 */
#ifndef HT_COMMON_OPTION_ERROR_H
#define HT_COMMON_OPTION_ERROR_H

#include <stddef.h>

/*
 * getopt_long's '?' or ':' (with ':' first in optstring and opterr 0), right
 * after it returned: "unknown option '-Z'", "option '-o' needs a value",
 * "unknown option '--xml'", "option '--force' takes no value" into buf.
 */
void ht_option_problem(int opt, char **argv, char *buf, size_t len);

#endif
