/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A VM's initcall levels and initcalls (boot/initcalls.h) as the viewers
 * draw them: on the host's clock through the VM's fit of its guest trace's
 * clock pairs, each on a lane where it overlaps nothing. A viewer's track
 * holds slices one after the other (Perfetto's ends close the slice last
 * begun; Chrome's viewers refuse a slice that starts inside another and ends
 * after it), and a guest's tasks may run initcalls at the same time (modules
 * loaded in parallel): the levels have one lane, the track "initcall levels";
 * the initcalls HT_INITCALL_LANES, the track "initcalls" then "initcalls 2"
 * and on. An initcall that never returned is an instant at its start (its
 * slice to the end of the trace would be a length it never had). What fits
 * no lane, and a level whose end comes before its start (the guest's times
 * went back), is not drawn: counted.
 *
 * Everything here is the guest's word: the names are its bytes (escape them
 * at output), and the memory grows with the initcalls received, never with
 * a number the guest announces.
 */
#ifndef HT_EXPORT_INITCALL_SPANS_H
#define HT_EXPORT_INITCALL_SPANS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "boot/initcalls.h"
#include "decode/guest_trace.h"
#include "hypertrace/guest.h"

/* The initcalls' lanes: tracks a viewer shows per VM, whatever the guest sends. */
#define HT_INITCALL_LANES 8u
/*
 * The tracks' places among the VM's (the boot phases first, then the levels,
 * the initcalls' lanes, the vCPU threads' own by vCPU id from 0).
 */
#define HT_INITCALL_RANK_BOOT (-(int)HT_INITCALL_LANES - 2)
#define HT_INITCALL_RANK_LEVELS (-(int)HT_INITCALL_LANES - 1)
#define HT_INITCALL_RANK_LANE(lane) (-(int)HT_INITCALL_LANES + (int)(lane))

/* A slice's name: the function and " [module]", or a level's name; " (no return)" after. */
#define HT_INITCALL_LABEL_MAX (HT_GUEST_TRACE_TEXT_MAX + 32)

struct ht_initcall_span {
	uint64_t start_ns, end_ns;              /* the host's CLOCK_MONOTONIC; equal for an instant */
	const struct ht_initcall *call;         /* NULL for a level */
	const struct ht_initcall_level *level;  /* a level, or a call's level (NULL: a module's) */
	unsigned int lane;
};

struct ht_initcall_view {
	uint32_t host_pid;
	struct ht_initcalls built;
	struct ht_initcall_span *levels, *calls; /* the drawn ones, each in its start's order */
	size_t nlevels, ncalls;
	unsigned int lanes;                       /* of calls used */
	uint64_t not_drawn;
};

/* What the viewers could not draw, for their metadata and convert's warnings. */
struct ht_initcall_counts {
	unsigned long long vms_without_clock; /* VMs with initcalls but no clock pair: none drawn */
	unsigned long long not_drawn;         /* levels and initcalls of the others that fit no lane */
};

/*
 * The view of g's initcalls (g must outlive it: names point into its lines).
 * 1 with *v filled (free it), 0 when nothing is to be drawn (no initcall, or
 * no clock pair: then counted in counts), -ENOMEM.
 */
int ht_initcall_view_build(const struct ht_guest_trace *g, struct ht_initcall_view *v,
			   struct ht_initcall_counts *counts);
void ht_initcall_view_free(struct ht_initcall_view *v);

/*
 * The raw bytes of a span's name into out (size > 0, NUL-terminated, cut to
 * fit): a level's name; a call's function with " [module]", and " (no
 * return)" for an instant. Its length (it may hold NUL bytes: escape it by length).
 */
size_t ht_initcall_label(char *out, size_t size, const struct ht_initcall_span *s);
/* The raw bytes of the level a span's call belongs to ("modules" for a module's init). */
size_t ht_initcall_level_label(char *out, size_t size, const struct ht_initcall_span *s);

#endif
