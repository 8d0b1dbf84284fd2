/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One line of ftrace's text output (tracefs's `trace` file), as the kernel
 * prints it with its default options:
 *
 *     "           <...>-1       [000] .....     0.612345: initcall_start: func=..."
 *      COMM-PID, right-aligned  [CPU] FLAGS     SECS.FRACTION: TEXT
 *
 * The flags column is there with the irq-info option (the default) and may
 * be absent; the time has 6 digits after the point (microseconds) for the
 * nanosecond clocks and none for a counter clock (then it is the counter).
 * The comm can hold any character, brackets and spaces included, so the
 * line is read from its "[CPU]" column, the first one followed by a time.
 * Pure, for the guest program and its tests.
 */
#ifndef HT_GUEST_TRACE_TEXT_H
#define HT_GUEST_TRACE_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ht_trace_text_line {
	uint64_t ns;      /* the time, ns (microseconds times 1000 as printed) */
	uint32_t pid;     /* 0 if the line shows none */
	uint32_t cpu;
	const char *text; /* "event: fields", inside the line */
	size_t text_len;  /* without the line's end */
};

/* Parses line (len bytes, with or without its '\n'). False for a comment, a "[LOST" line or anything else. */
bool ht_trace_text_parse(const char *line, size_t len, struct ht_trace_text_line *out);

/* The events a "CPU:N [LOST M EVENTS]" line says were lost, or 0 if it is not one. */
uint64_t ht_trace_text_lost(const char *line, size_t len);

#endif
