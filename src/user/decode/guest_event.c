// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "decode/guest_event.h"

#include <stdio.h>
#include <string.h>
#include "hypertrace/guest.h"

/* Every field name of the project's events, one index each, whatever kind has it. */
enum field_name {
	F_STATE, F_EVENTS, F_FUNCTIONS, F_TEXT_START, F_MISSED, F_TEXT_SIZE, F_ANCHOR_ADDR, F_ANCHOR_NAME,
	F_PREV_TID, F_NEXT_TID, F_PREV_PRIO, F_NEXT_PRIO, F_PREV_STATE, F_NEXT_COMM,
	F_TID, F_PRIO, F_TARGET_CPU, F_COMM,
	F_IRQ, F_NAME, F_RET,
	F_ADDR, F_CALL_SITE,
	F_CPU_ID,
	F_COUNT
};

_Static_assert(F_COUNT == HT_GEV_FIELD_NAMES, "HT_GEV_FIELD_NAMES counts the names below");

/* As the built-in catalog spells them. */
static const char *const field_names[F_COUNT] = {
	[F_STATE] = "state", [F_EVENTS] = "events", [F_FUNCTIONS] = "functions",
	[F_TEXT_START] = "text_start", [F_MISSED] = "missed", [F_TEXT_SIZE] = "text_size",
	[F_ANCHOR_ADDR] = "anchor_addr", [F_ANCHOR_NAME] = "anchor_name",
	[F_PREV_TID] = "prev_tid", [F_NEXT_TID] = "next_tid", [F_PREV_PRIO] = "prev_prio",
	[F_NEXT_PRIO] = "next_prio", [F_PREV_STATE] = "prev_state", [F_NEXT_COMM] = "next_comm",
	[F_TID] = "tid", [F_PRIO] = "prio", [F_TARGET_CPU] = "target_cpu", [F_COMM] = "comm",
	[F_IRQ] = "irq", [F_NAME] = "name", [F_RET] = "ret",
	[F_ADDR] = "addr", [F_CALL_SITE] = "call_site",
	[F_CPU_ID] = "cpu_id",
};

enum ht_gev_kind ht_gev_kind_of(uint32_t nr)
{
	switch (nr) {
	case HT_GUEST_NR_MODULE: return HT_GEV_MODULE;
	case HT_GUEST_NR_SCHED_SWITCH: return HT_GEV_SCHED_SWITCH;
	case HT_GUEST_NR_SCHED_WAKEUP: return HT_GEV_SCHED_WAKEUP;
	case HT_GUEST_NR_IRQ_ENTRY: return HT_GEV_IRQ_ENTRY;
	case HT_GUEST_NR_IRQ_EXIT: return HT_GEV_IRQ_EXIT;
	case HT_GUEST_NR_FUNC_ENTRY: return HT_GEV_FUNC_ENTRY;
	case HT_GUEST_NR_FUNC_EXIT: return HT_GEV_FUNC_EXIT;
	default: return HT_GEV_NONE;
	}
}

int ht_gev_decoder_init(struct ht_gev_decoder *g)
{
	struct ht_catalog cat;
	char err[128];

	memset(g, 0, sizeof(*g));
	memset(g->field, -1, sizeof(g->field));
	if (ht_catalog_init(&cat, err, sizeof(err)))
		return -1;
	for (size_t i = 0; i < cat.n; i++) {
		enum ht_gev_kind k = ht_gev_kind_of(cat.events[i].nr);

		if (k == HT_GEV_NONE)
			continue;
		g->desc[k] = cat.events[i];
		for (unsigned int f = 0; f < g->desc[k].nfields; f++)
			for (int n = 0; n < F_COUNT; n++)
				if (!strcmp(g->desc[k].fields[f].name, field_names[n]))
					g->field[k][n] = (int8_t)f;
	}
	ht_catalog_free(&cat);
	return 0;
}

/* Field n of r's kind k, or NULL when that kind has none. */
static const struct ht_field *field(const struct ht_gev_decoder *g, enum ht_gev_kind k, enum field_name n)
{
	int i = g->field[k][n];

	return i < 0 ? NULL : &g->desc[k].fields[i];
}

static uint64_t bits(const struct ht_gev_decoder *g, enum ht_gev_kind k, enum field_name n,
		     const struct ht_record *r)
{
	const struct ht_field *f = field(g, k, n);

	return f ? ht_field_bits(f, r) : 0;
}

static void text(const struct ht_gev_decoder *g, enum ht_gev_kind k, enum field_name n,
		 const struct ht_record *r, char *out, size_t len)
{
	const struct ht_field *f = field(g, k, n);
	char buf[33] = "";

	if (f)
		ht_field_text(f, r, buf);
	snprintf(out, len, "%s", buf);
}

/* ftrace's prio from the 8 bits sent: a deadline task's -1 travels as 255. */
static int32_t prio_of(uint64_t v)
{
	return v == HT_GUEST_PRIO_DEADLINE ? -1 : (int32_t)v;
}

void ht_gev_decode(const struct ht_gev_decoder *g, const struct ht_record *r, struct ht_gev *ev)
{
	enum ht_gev_kind k = ht_gev_kind_of(r->nr);
	const struct ht_field *ret;

	memset(ev, 0, sizeof(*ev));
	ev->kind = k;
	if (k == HT_GEV_NONE)
		return;
	if (k != HT_GEV_MODULE)
		ev->cpu = (uint32_t)bits(g, k, F_CPU_ID, r);
	switch (k) {
	case HT_GEV_MODULE:
		ev->u.mod.state = (uint32_t)bits(g, k, F_STATE, r);
		ev->u.mod.events = (uint32_t)bits(g, k, F_EVENTS, r);
		ev->u.mod.functions = (uint32_t)bits(g, k, F_FUNCTIONS, r);
		ev->u.mod.text_start = bits(g, k, F_TEXT_START, r);
		ev->u.mod.text_size = bits(g, k, F_TEXT_SIZE, r);
		ev->u.mod.missed = bits(g, k, F_MISSED, r);
		ev->u.mod.anchor_addr = bits(g, k, F_ANCHOR_ADDR, r);
		text(g, k, F_ANCHOR_NAME, r, ev->u.mod.anchor_name, sizeof(ev->u.mod.anchor_name));
		break;
	case HT_GEV_SCHED_SWITCH:
		ev->u.sw.prev_tid = (uint32_t)bits(g, k, F_PREV_TID, r);
		ev->u.sw.next_tid = (uint32_t)bits(g, k, F_NEXT_TID, r);
		ev->u.sw.prev_prio = prio_of(bits(g, k, F_PREV_PRIO, r));
		ev->u.sw.next_prio = prio_of(bits(g, k, F_NEXT_PRIO, r));
		ev->u.sw.prev_state = (uint32_t)bits(g, k, F_PREV_STATE, r);
		text(g, k, F_NEXT_COMM, r, ev->u.sw.next_comm, sizeof(ev->u.sw.next_comm));
		break;
	case HT_GEV_SCHED_WAKEUP:
		ev->u.wake.tid = (uint32_t)bits(g, k, F_TID, r);
		ev->u.wake.prio = prio_of(bits(g, k, F_PRIO, r));
		ev->u.wake.target_cpu = (uint32_t)bits(g, k, F_TARGET_CPU, r);
		text(g, k, F_COMM, r, ev->u.wake.comm, sizeof(ev->u.wake.comm));
		break;
	case HT_GEV_IRQ_ENTRY:
		ev->u.irq.irq = (uint32_t)bits(g, k, F_IRQ, r);
		text(g, k, F_NAME, r, ev->u.irq.name, sizeof(ev->u.irq.name));
		break;
	case HT_GEV_IRQ_EXIT:
		ev->u.irq.irq = (uint32_t)bits(g, k, F_IRQ, r);
		ret = field(g, k, F_RET);
		ev->u.irq.ret = ret ? ht_field_signed(ret, r) : 0;
		break;
	case HT_GEV_FUNC_ENTRY:
	case HT_GEV_FUNC_EXIT:
		ev->u.func.addr = bits(g, k, F_ADDR, r);
		ev->u.func.tid = (uint32_t)bits(g, k, F_TID, r);
		if (k == HT_GEV_FUNC_ENTRY)
			ev->u.func.call_site = bits(g, k, F_CALL_SITE, r);
		else
			ev->u.func.ret = bits(g, k, F_RET, r);
		break;
	default:
		break;
	}
}
