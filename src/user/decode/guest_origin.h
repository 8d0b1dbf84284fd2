/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which records of the project's event nr (1100-1149) the guest kernel's
 * module sent. KVM traces a hypercall before its privilege check, so any
 * process in the guest can issue these nr: a forged sched_switch would
 * invent tasks in --sched, a forged hypertrace_module move every symbol
 * through a bogus KASLR anchor. The module's events come from kernel code:
 *
 *   - a record from a user-space address (the lower half) is forged;
 *   - the module's load event (hypertrace_module, state 1) carries the
 *     range of its text, where each of its hypercalls is: from then on, for
 *     that VM, a record from anywhere else is forged too. A load event
 *     without a range (an older module), or whose range does not hold the
 *     load event itself, leaves the first rule alone.
 *
 * Fed every record in file order (whatever a report selects: the load
 * event may be outside the selection); then asked about any record.
 * Other nr (user markers, 1000) are never forged: user space may send them.
 */
#ifndef HT_DECODE_GUEST_ORIGIN_H
#define HT_DECODE_GUEST_ORIGIN_H

#include <stdbool.h>
#include "common/hashmap.h"
#include "decode/guest_event.h"
#include "hypertrace/record.h"

struct ht_guest_origin {
	struct ht_hashmap text; /* host_pid -> struct text_range *: the module's text in that VM */
	struct ht_gev_decoder gev;
};

/* 0, or -1 when out of memory (o is then empty, and may be freed). */
int ht_guest_origin_init(struct ht_guest_origin *o);
void ht_guest_origin_free(struct ht_guest_origin *o);
/* Learns from r (the next record of the file). 0, or -1 when out of memory. */
int ht_guest_origin_note(struct ht_guest_origin *o, const struct ht_record *r);
/* True if r has one of the project's nr but was not sent by the guest kernel's module. */
bool ht_guest_origin_forged(const struct ht_guest_origin *o, const struct ht_record *r);

#endif
