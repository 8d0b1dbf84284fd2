/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A stream that escapes what is written through it for a terminal, for the
 * outputs that copy someone else's text whole (a guest's trace, mapped onto
 * the host's clock): where that text goes to a file or a pipe its bytes are
 * kept, where it goes to a terminal nothing in it may drive the terminal.
 * Each line is escaped as HT_ESC_TEXT (common/escape.h), its newline kept.
 * A UTF-8 character split across two writes is escaped whole. Memory is
 * bounded (64 KiB of a line at a time), whatever the input.
 */
#ifndef HT_COMMON_ESCAPE_STREAM_H
#define HT_COMMON_ESCAPE_STREAM_H

#include <stdio.h>

/*
 * A stream writing the escaped form of its input to to, or NULL (errno set).
 * fclose() on it writes what is pending and flushes to (not closing it); its
 * status is non-zero if a write to to failed.
 */
FILE *ht_escape_stream(FILE *to);

#endif
