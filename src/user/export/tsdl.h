/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Text in a CTF trace's TSDL metadata, shared by the CTF and the LTTng
 * exports: the inside of a string literal (an env value, an event class
 * name). Its bytes are kept, as the data streams keep a guest's strings:
 * quotes and backslashes are escaped, control characters (0x00-0x1f), which
 * would break the metadata's lines, are dropped. babeltrace2 reads any other
 * byte as it is (docs/exports.md).
 */
#ifndef HT_EXPORT_TSDL_H
#define HT_EXPORT_TSDL_H

#include <stdio.h>

/* Writes s as the inside of a TSDL string literal. */
void ht_tsdl_string(FILE *f, const char *s);

#endif
