/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Guest events in the CTF export (convert --ctf with a decoder): each event
 * of the catalog is an event class of its own, id 1 + its place in the
 * catalog, named by the event (sched_switch, func_entry, ...). Its fields:
 * the record's vcpu_id, guest_rip and two latencies, then the decoded fields
 * in catalog order (u: 64-bit unsigned, s: signed, x: hex, str: string, sym:
 * hex address plus a NAME_sym string). A record of another nr stays a
 * `hypercall` event.
 */
#ifndef HT_CTF_GUEST_H
#define HT_CTF_GUEST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "decode/decoder.h"

/* A symbol name is cut to this in an event (NUL included). */
#define HT_CTF_GUEST_SYM_MAX 128

/* The event class id of ev. */
uint16_t ht_ctf_guest_event_id(const struct ht_decoder *dec, const struct ht_event_desc *ev);
/* Bytes of ev's fields for r (what ht_ctf_guest_put writes). */
size_t ht_ctf_guest_size(const struct ht_decoder *dec, const struct ht_event_desc *ev,
			 const struct ht_record *r);
/* Writes the fields at p; returns the end. */
unsigned char *ht_ctf_guest_put(const struct ht_decoder *dec, const struct ht_event_desc *ev,
				const struct ht_record *r, unsigned char *p);
/* The TSDL event classes of every catalogued event. */
void ht_ctf_guest_metadata(const struct ht_decoder *dec, FILE *f);

#endif
