/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Strict parsing of option values beyond plain integers (those: common/parse_number.h). */
#ifndef HT_PARSE_H
#define HT_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "common/parse_number.h"

/* Non-negative decimal seconds, e.g. "1", "0.5"; max bounds it. */
bool ht_parse_seconds(const char *s, double max, double *out);
/* Byte size with an optional K, M or G suffix (powers of 1024). */
bool ht_parse_size(const char *s, uint64_t *out);

/*
 * --mode of record and convert: an octal file mode, 0 to 0777, as chmod
 * takes it, that lets no other user write the file (0002) and marks it
 * executable for nobody (0111). False with the one-line reason in err.
 */
bool ht_parse_mode(const char *s, unsigned int *out, char *err, size_t errlen);

/*
 * --vm-user of record and top: a numeric uid, or a user name in
 * /etc/passwd (read directly, not through NSS, which a static binary cannot
 * load). False if neither.
 */
bool ht_parse_user(const char *s, uid_t *uid);

#endif
