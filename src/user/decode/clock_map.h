/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A trace the guest wrote by itself, put on the host's clock: its ftrace
 * text (`cat trace`, trace clock "local") or its dmesg, each line's time
 * replaced by where a fit of that clock (decode/clock_fit.h: ftrace's
 * local trace clock, printk's local_clock, which differ by an offset) puts
 * it on the host's monotonic clock. Lines are copied byte for byte but that
 * time; a line without one is copied as it is. Any text: time and memory
 * grow with its length alone.
 */
#ifndef HT_DECODE_CLOCK_MAP_H
#define HT_DECODE_CLOCK_MAP_H

#include <stdio.h>
#include "decode/clock_fit.h"

/*
 * in to out, each guest time (ftrace's "SECONDS:" after the line's "[CPU]",
 * by ftrace_fit, or dmesg's "[SECONDS]" that starts it, by printk_fit) as
 * the host's time in seconds with 9 decimals. The lines whose time was
 * mapped, or -1 if in or out failed.
 */
long long ht_clock_map_text(FILE *in, FILE *out, const struct ht_clock_fit *ftrace_fit,
			    const struct ht_clock_fit *printk_fit);

#endif
