// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "decode/guest_origin.h"

#include <stdint.h>
#include <stdlib.h>
#include "hypertrace/guest.h"

/*
 * Guest kernel addresses have bit 63 set: x86-64's upper canonical half
 * (0xffff800000000000 with 4-level paging, 0xff00000000000000 with 5), and
 * user space never has it.
 */
/* The module's text is in the top 2 GiB (kernel code model): its start's high 32 bits are all ones. */
#define TOP_HALF_OF_64 0xffffffff00000000ull

struct text_range {
	uint64_t start, end; /* [start, end) */
};

int ht_guest_origin_init(struct ht_guest_origin *o)
{
	ht_hashmap_init(&o->text, ht_hash_long, ht_equal_long, NULL);
	return ht_gev_decoder_init(&o->gev);
}

void ht_guest_origin_free(struct ht_guest_origin *o)
{
	struct ht_hashmap_entry *cur;
	size_t bkt;

	ht_hashmap_for_each(&o->text, cur, bkt)
		free(cur->pvalue);
	ht_hashmap_clear(&o->text);
}

/* The guest kernel's events; the project's user-space ones (1150..) come from anywhere. */
static bool project_nr(uint32_t nr)
{
	return nr >= HT_GUEST_NR_PROJECT_FIRST && nr <= HT_GUEST_NR_KERNEL_LAST;
}

static bool from_kernel(const struct ht_record *r)
{
	return r->guest_rip >> HT_GUEST_KERNEL_HALF_BIT;
}

/* The module's event, decoded into *ev, saying it is loaded. */
static bool is_load_event(const struct ht_guest_origin *o, const struct ht_record *r, struct ht_gev *ev)
{
	if (r->nr != HT_GUEST_NR_MODULE)
		return false;
	ht_gev_decode(&o->gev, r, ev);
	return ev->u.mod.state == 1;
}

bool ht_guest_origin_forged(const struct ht_guest_origin *o, const struct ht_record *r)
{
	struct text_range *t;
	struct ht_gev ev;

	if (!project_nr(r->nr))
		return false;
	if (!from_kernel(r))
		return true;
	/* A load announces the (new) range itself: kernel code is all it needs. */
	if (is_load_event(o, r, &ev) || !ht_hashmap_find(&o->text, r->host_pid, (long *)&t))
		return false;
	return r->guest_rip < t->start || r->guest_rip >= t->end;
}

int ht_guest_origin_note(struct ht_guest_origin *o, const struct ht_record *r)
{
	uint64_t start, size;
	struct text_range *t;
	struct ht_gev ev;
	long old = 0;

	if (!is_load_event(o, r, &ev) || !from_kernel(r))
		return 0;
	/* text_start is the low 32 bits of the start. */
	start = TOP_HALF_OF_64 | ev.u.mod.text_start;
	size = ev.u.mod.text_size;
	if (size == 0 || r->guest_rip < start || r->guest_rip - start >= size) {
		/* No range (an older module), or one that does not hold its own event: the kernel half alone. */
		if (ht_hashmap_delete(&o->text, r->host_pid, NULL, &old))
			free((void *)old);
		return 0;
	}
	if (!ht_hashmap_find(&o->text, r->host_pid, (long *)&t)) {
		t = malloc(sizeof(*t));
		if (!t || ht_hashmap_insert(&o->text, r->host_pid, (long)t, HT_HASHMAP_ADD, NULL, NULL)) {
			free(t);
			return -1;
		}
	}
	t->start = start;
	t->end = size > UINT64_MAX - start ? UINT64_MAX : start + size;
	return 0;
}
