// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "boot/initcalls.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "common/grow.h"
#include "common/hashmap.h"

/* The line's text after "EVENT: " if its event is name, else NULL. */
static const char *event_fields(const struct ht_trace_line *l, const char *name)
{
	size_t n = strlen(name);

	if (l->have < n + 2 || memcmp(l->text, name, n) || l->text[n] != ':' || l->text[n + 1] != ' ')
		return NULL;
	return l->text + n + 2;
}

/* "KEY=" in fields (at its start or after a space): the value's start and length (to a space or the end). */
static const char *field(const char *fields, const char *end, const char *key, size_t *len)
{
	size_t k = strlen(key);

	for (const char *p = fields; p + k < end; p++) {
		if ((p == fields || p[-1] == ' ') && !memcmp(p, key, k) && p[k] == '=') {
			const char *v = p + k + 1, *e = v;

			while (e < end && *e != ' ')
				e++;
			*len = (size_t)(e - v);
			return v;
		}
	}
	return NULL;
}

/* "name+0x0/0x40 [module]" (or a bare address) at func: the name and the module. */
static void split_symbol(const char *func, size_t len, const char *end, struct ht_initcall *c)
{
	const char *plus = memchr(func, '+', len);

	c->name = func;
	c->name_len = plus ? (size_t)(plus - func) : len;
	c->module = NULL;
	c->module_len = 0;
	/* " [module]" right after the symbol. */
	const char *p = func + len;
	if (p + 2 < end && p[0] == ' ' && p[1] == '[') {
		const char *close = memchr(p + 2, ']', (size_t)(end - p - 2));

		if (close) {
			c->module = p + 2;
			c->module_len = (size_t)(close - p - 2);
		}
	}
}

struct building {
	struct ht_initcalls *out;
	struct ht_hashmap open; /* tid -> index of its open initcall + 1 */
	int level;              /* the current level, or -1 before any */
};

static int start_call(struct building *b, const struct ht_trace_line *l, const char *fields)
{
	const char *end = l->text + l->have, *func;
	struct ht_initcalls *o = b->out;
	struct ht_initcall *c;
	size_t len;
	long prev;

	if (!(func = field(fields, end, "func", &len)))
		return 0;
	if (HT_GROW(o->calls, o->calls_cap, o->ncalls + 1, 256))
		return -ENOMEM;
	c = &o->calls[o->ncalls];
	memset(c, 0, sizeof(*c));
	split_symbol(func, len, end, c);
	c->tid = l->tid;
	c->cpu = l->cpu;
	c->start_ns = l->guest_ns;
	c->level = HT_INITCALL_MODULES;
	if (b->level >= 0 && !c->module && o->levels[b->level].tid == l->tid)
		c->level = b->level;
	/* A task runs one initcall at a time: one still open there never finished. */
	if (ht_hashmap_find(&b->open, l->tid, &prev))
		o->unfinished++;
	if (ht_hashmap_insert(&b->open, l->tid, (long)o->ncalls + 1, HT_HASHMAP_SET, NULL, NULL))
		return -ENOMEM;
	o->ncalls++;
	return 0;
}

static void finish_call(struct building *b, const struct ht_trace_line *l, const char *fields)
{
	const char *end = l->text + l->have, *func, *ret;
	struct ht_initcalls *o = b->out;
	struct ht_initcall *c;
	size_t len, rlen;
	long idx;

	func = field(fields, end, "func", &len);
	if (!func || !ht_hashmap_find(&b->open, l->tid, &idx)) {
		o->finish_unmatched++;
		return;
	}
	c = &o->calls[idx - 1];
	/* The same function: the name before '+' (the symbol's text is the same in both lines). */
	const char *plus = memchr(func, '+', len);
	size_t nlen = plus ? (size_t)(plus - func) : len;
	if (nlen != c->name_len || memcmp(func, c->name, nlen) || l->guest_ns < c->start_ns) {
		o->finish_unmatched++;
		return;
	}
	ht_hashmap_delete(&b->open, l->tid, NULL, NULL);
	c->finished = true;
	c->end_ns = l->guest_ns;
	if ((ret = field(fields, end, "ret", &rlen)))
		c->ret = strtoll(ret, NULL, 10);
	if (c->level >= 0)
		o->levels[c->level].in_initcalls_ns += c->end_ns - c->start_ns;
	else
		o->module_ns += c->end_ns - c->start_ns;
}

static int start_level(struct building *b, const struct ht_trace_line *l, const char *fields)
{
	const char *end = l->text + l->have, *name;
	struct ht_initcalls *o = b->out;
	size_t len;

	if (!(name = field(fields, end, "level", &len)))
		return 0;
	if (HT_GROW(o->levels, o->levels_cap, o->nlevels + 1, 16))
		return -ENOMEM;
	if (b->level >= 0) {
		struct ht_initcall_level *prev = &o->levels[b->level];

		/* A trace out of time order (a guest's own, hostile or broken) never makes a level end before it began. */
		if (l->guest_ns < prev->start_ns) {
			prev->end_ns = prev->start_ns;
			prev->went_back = true;
			o->levels_back++;
		} else {
			prev->end_ns = l->guest_ns;
		}
	}
	o->levels[o->nlevels] = (struct ht_initcall_level){
		.name = name, .name_len = len, .tid = l->tid, .start_ns = l->guest_ns, .end_ns = l->guest_ns,
	};
	b->level = (int)o->nlevels++;
	return 0;
}

int ht_initcalls_build(const struct ht_guest_trace *g, struct ht_initcalls *out)
{
	struct building b = { .out = out, .level = -1 };
	int err = 0;

	memset(out, 0, sizeof(*out));
	ht_hashmap_init(&b.open, ht_hash_long, ht_equal_long, NULL);
	for (size_t i = 0; i < g->nlines && !err; i++) {
		const struct ht_trace_line *l = &g->lines[i];
		const char *f;

		if ((f = event_fields(l, "initcall_level")))
			err = start_level(&b, l, f);
		else if ((f = event_fields(l, "initcall_start")))
			err = start_call(&b, l, f);
		else if ((f = event_fields(l, "initcall_finish")))
			finish_call(&b, l, f);
	}
	out->unfinished += ht_hashmap_size(&b.open);
	ht_hashmap_clear(&b.open);
	if (err) {
		ht_initcalls_free(out);
		return err;
	}
	/* Counts, and the last level's end: its last initcall's return. */
	for (size_t i = 0; i < out->ncalls; i++) {
		const struct ht_initcall *c = &out->calls[i];

		if (c->level < 0) {
			out->module_calls++;
			continue;
		}
		struct ht_initcall_level *lv = &out->levels[c->level];
		lv->initcalls++;
		if ((size_t)c->level == out->nlevels - 1 && c->finished && c->end_ns > lv->end_ns)
			lv->end_ns = c->end_ns;
	}
	return 0;
}

void ht_initcalls_free(struct ht_initcalls *c)
{
	free(c->levels);
	free(c->calls);
	memset(c, 0, sizeof(*c));
}
