// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/initcall_spans.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "decode/clock_fit.h"

/* In start order; a shorter one (an instant) before a longer one at the same time; else in the guest's order. */
static int by_start(const void *a, const void *b)
{
	const struct ht_initcall_span *x = a, *y = b;
	const void *px = x->call ? (const void *)x->call : (const void *)x->level;
	const void *py = y->call ? (const void *)y->call : (const void *)y->level;

	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	if (x->end_ns != y->end_ns)
		return x->end_ns < y->end_ns ? -1 : 1;
	/* Both point into one array (the levels', or the calls'), in the order the guest sent them. */
	return (px > py) - (px < py);
}

/*
 * Each span (in start order) on the first lane whose last span has ended by
 * its start; one that finds none among max_lanes is dropped and counted.
 * The spans kept, compacted in place.
 */
static size_t lay_out(struct ht_initcall_span *s, size_t n, unsigned int max_lanes, unsigned int *lanes_used,
		      uint64_t *not_drawn)
{
	uint64_t lane_end[HT_INITCALL_LANES];
	unsigned int used = 0;
	size_t kept = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned int l = 0;

		while (l < used && lane_end[l] > s[i].start_ns)
			l++;
		if (l == used) {
			if (used == max_lanes) {
				(*not_drawn)++;
				continue;
			}
			used++;
		}
		lane_end[l] = s[i].end_ns;
		s[i].lane = l;
		s[kept++] = s[i];
	}
	*lanes_used = used;
	return kept;
}

int ht_initcall_view_build(const struct ht_guest_trace *g, struct ht_initcall_view *v,
			   struct ht_initcall_counts *counts)
{
	const struct ht_initcalls *c = &v->built;
	unsigned int level_lanes;

	memset(v, 0, sizeof(*v));
	v->host_pid = g->host_pid;
	if (ht_initcalls_build(g, &v->built))
		return -ENOMEM;
	if (!c->nlevels && !c->ncalls) {
		ht_initcall_view_free(v);
		return 0;
	}
	/* Without a clock pair the guest's times are on no clock of the trace's: nothing to put them beside. */
	if (!g->fit.used) {
		counts->vms_without_clock++;
		ht_initcall_view_free(v);
		return 0;
	}
	v->levels = calloc(c->nlevels + 1, sizeof(*v->levels));
	v->calls = calloc(c->ncalls + 1, sizeof(*v->calls));
	if (!v->levels || !v->calls) {
		ht_initcall_view_free(v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < c->nlevels; i++) {
		const struct ht_initcall_level *lv = &c->levels[i];
		uint64_t start = ht_clock_fit_map(&g->fit, lv->start_ns), end = ht_clock_fit_map(&g->fit, lv->end_ns);

		/* The next level's line came with an earlier time: no length to draw. */
		if (lv->went_back || end < start) {
			v->not_drawn++;
			continue;
		}
		v->levels[v->nlevels++] = (struct ht_initcall_span){ .start_ns = start, .end_ns = end, .level = lv };
	}
	for (size_t i = 0; i < c->ncalls; i++) {
		const struct ht_initcall *ic = &c->calls[i];
		uint64_t start = ht_clock_fit_map(&g->fit, ic->start_ns);

		v->calls[v->ncalls++] = (struct ht_initcall_span){
			.start_ns = start,
			.end_ns = ic->finished ? ht_clock_fit_map(&g->fit, ic->end_ns) : start,
			.call = ic,
			.level = ic->level >= 0 ? &c->levels[ic->level] : NULL,
		};
	}
	qsort(v->levels, v->nlevels, sizeof(*v->levels), by_start);
	qsort(v->calls, v->ncalls, sizeof(*v->calls), by_start);
	v->nlevels = lay_out(v->levels, v->nlevels, 1, &level_lanes, &v->not_drawn);
	v->ncalls = lay_out(v->calls, v->ncalls, HT_INITCALL_LANES, &v->lanes, &v->not_drawn);
	counts->not_drawn += v->not_drawn;
	return 1;
}

void ht_initcall_view_free(struct ht_initcall_view *v)
{
	ht_initcalls_free(&v->built);
	free(v->levels);
	free(v->calls);
	v->levels = v->calls = NULL;
	v->nlevels = v->ncalls = 0;
}

/* Appends len bytes of s at out[at], as many as fit before the NUL; the new length. */
static size_t append(char *out, size_t size, size_t at, const char *s, size_t len)
{
	size_t room = size - 1 - at;

	if (len > room)
		len = room;
	memcpy(out + at, s, len);
	return at + len;
}

size_t ht_initcall_label(char *out, size_t size, const struct ht_initcall_span *s)
{
	const struct ht_initcall *c = s->call;
	size_t n;

	if (!c) {
		n = append(out, size, 0, s->level->name, s->level->name_len);
	} else {
		n = append(out, size, 0, c->name, c->name_len);
		if (c->module) {
			n = append(out, size, n, " [", 2);
			n = append(out, size, n, c->module, c->module_len);
			n = append(out, size, n, "]", 1);
		}
		if (!c->finished)
			n = append(out, size, n, " (no return)", strlen(" (no return)"));
	}
	out[n] = '\0';
	return n;
}

size_t ht_initcall_level_label(char *out, size_t size, const struct ht_initcall_span *s)
{
	size_t n = s->level ? append(out, size, 0, s->level->name, s->level->name_len) :
			      append(out, size, 0, "modules", strlen("modules"));

	out[n] = '\0';
	return n;
}
