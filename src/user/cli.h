/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The commands' command-line output: exit statuses, usage and runtime errors
 * on stderr, --version. Library code reports through common/errf.h instead;
 * the verdict on a trace file read to its end is reading/read_outcome.h's.
 */
#ifndef HT_CLI_H
#define HT_CLI_H

#include <stddef.h>

#define HT_VERSION "0.1.0"

#define HT_EXIT_OK 0
#define HT_EXIT_RUNTIME 1 /* the environment or an input file is wrong */
#define HT_EXIT_USAGE 2   /* the command line is wrong */

/* "hypertrace-bpf CMD: MESSAGE: see 'hypertrace-bpf CMD --help'"; returns HT_EXIT_USAGE. */
__attribute__((format(printf, 2, 3))) int ht_usage_error(const char *cmd, const char *fmt, ...);
/* "hypertrace-bpf: MESSAGE"; returns HT_EXIT_RUNTIME. */
__attribute__((format(printf, 1, 2))) int ht_runtime_error(const char *fmt, ...);
/*
 * getopt_long's '?' or ':' (with ':' first in optstring) as a usage error that
 * names the option as typed: "-Z" of "-Zq", "--xml", "--force=1".
 */
int ht_option_error(const char *cmd, int opt, char **argv);
/* "hypertrace-bpf VERSION" on stdout; returns HT_EXIT_OK. */
int ht_print_version(void);

int ht_cmd_record(int argc, char **argv);
int ht_cmd_report(int argc, char **argv);
int ht_cmd_convert(int argc, char **argv);
int ht_cmd_top(int argc, char **argv);

#endif
