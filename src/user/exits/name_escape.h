/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Names chosen by whoever starts a VM (QEMU's -name, thread names) are
 * hostile input: a terminal would obey the control bytes in them, and a
 * reader of JSON or of Prometheus' text needs valid UTF-8. Every name the
 * exits views, report --exits, top and the exit metrics print goes through
 * this one function first. It keeps printable ASCII and valid UTF-8 (but
 * the C1 controls) as they are, and writes every other byte visibly:
 * "\\" for a backslash, "\xNN" for a control byte or a byte that is not
 * part of valid UTF-8, "\u00NN" for a C1 control character.
 */
#ifndef HT_NAME_ESCAPE_H
#define HT_NAME_ESCAPE_H

#include <stddef.h>

/*
 * Escapes the NUL-terminated name into out (outlen > 0), always terminated;
 * a name that does not fit is cut at a whole escape and ends with "...".
 * Returns out.
 */
char *ht_escape_name(const char *name, char *out, size_t outlen);

#endif
