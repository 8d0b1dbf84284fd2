/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Exit statuses and one-line error reporting shared by the commands. */
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
/* Formats a one-line message into err (for a caller to print) and returns -1. */
__attribute__((format(printf, 3, 4))) int ht_errf(char *err, size_t errlen, const char *fmt, ...);
/* "hypertrace-bpf VERSION" on stdout; returns HT_EXIT_OK. */
int ht_print_version(void);

struct ht_read_status;
/*
 * After reading PATH to its end: a damaged file is an error (exit 1, one line
 * with where reading stopped), a file without trailer a warning. The status.
 */
int ht_report_read_outcome(const char *path, const struct ht_read_status *st);

int ht_cmd_record(int argc, char **argv);
int ht_cmd_report(int argc, char **argv);
int ht_cmd_convert(int argc, char **argv);
int ht_cmd_top(int argc, char **argv);

#endif
