/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * How library code reports a failure: it formats one line into the caller's
 * buffer and returns -1; the command that called it decides how to show it
 * (cli.h) and with which exit status.
 */
#ifndef HT_COMMON_ERRF_H
#define HT_COMMON_ERRF_H

#include <stddef.h>

/* Formats a one-line message into err (for a caller to print) and returns -1. */
__attribute__((format(printf, 3, 4))) int ht_errf(char *err, size_t errlen, const char *fmt, ...);
/* The same, returning status (an -errno the caller passes on) instead of -1. */
__attribute__((format(printf, 4, 5))) int ht_errf_status(char *err, size_t errlen, int status, const char *fmt, ...);

#endif
