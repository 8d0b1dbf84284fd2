/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Reading a small text file (/proc entries) whole, into a caller's buffer. */
#ifndef HT_COMMON_SMALL_FILE_H
#define HT_COMMON_SMALL_FILE_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Reads at most cap - 1 bytes of path into buf and NUL-terminates them
 * (retrying reads EINTR cut short). The number of bytes read, or -1 if the
 * file cannot be opened. cap must be at least 1.
 */
ssize_t ht_read_small_file(const char *path, char *buf, size_t cap);

#endif
