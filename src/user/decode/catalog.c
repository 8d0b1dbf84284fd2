// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "decode/catalog.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/errf.h"
#include "common/escape.h"
#include "common/hashmap.h"
#include "common/parse_number.h"
#include "common/grow.h"
#include "hypertrace/guest.h"
#include "common/util.h"

/* The events of include/hypertrace/guest.h; tests/unit/test_guest_decode.c packs with the header and decodes with this. */
const char ht_builtin_catalog[] =
	"# The project's own guest events (include/hypertrace/guest.h).\n"
	"1100 hypertrace_module state=a0[0-7] events=a0[8-15]:x functions=a0[16-31] text_start=a0[32-63]:x"
	" missed=a1[0-31] text_size=a1[32-63] anchor_addr=a2:x anchor_name=a3:str\n"
	"1101 sched_switch prev_tid=a0[0-31] next_tid=a0[32-63] prev_prio=a1[0-7] next_prio=a1[8-15]"
	" prev_state=a1[16-31]:x cpu_id=a1[32-47] next_comm=a2-a3:str\n"
	"1102 sched_wakeup tid=a0[0-31] prio=a0[32-39] target_cpu=a0[40-55] comm=a1-a2:str"
	" cpu_id=a3[0-15]\n"
	"1103 irq_handler_entry irq=a0[0-31] cpu_id=a0[32-47] name=a1-a3:str\n"
	"1104 irq_handler_exit irq=a0[0-31] cpu_id=a0[32-47] ret=a1:s\n"
	"1105 func_entry addr=a0:sym call_site=a1:sym tid=a2[0-31] cpu_id=a2[32-47]\n"
	"1106 func_exit addr=a0:sym ret=a1:x tid=a2[0-31] cpu_id=a2[32-47]\n"
	"1107 clock_pair guest_ns=a0 mono_ns=a1 seq=a2[0-31] cpu_id=a2[32-47] trace_ns=a3\n"
	"1150 trace_line guest_ns=a0 seq=a1[0-31] cpu_id=a1[32-47] length=a1[48-63] tid=a2[0-31] cut=a2[32-39]"
	" text=a3:str\n"
	"1151 trace_text seq=a0[0-31] offset=a0[32-47] text=a1-a3:str\n"
	"1152 trace_replay run=a0[0-31] what=a0[32-39] seq=a1[0-31] lines=a2[0-31] unparsed=a2[32-63]"
	" cut=a3[0-31] lost=a3[32-63]\n";

static bool valid_name(const char *s, size_t len)
{
	if (len == 0 || len >= HT_CAT_NAME_MAX || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 1; i < len; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
			return false;
	return true;
}

/* "aN" at s: the argument index, or -1. */
static int parse_arg(const char *s)
{
	return s[0] == 'a' && s[1] >= '0' && s[1] <= '3' ? s[1] - '0' : -1;
}

static bool parse_bits(const char *s, size_t len, unsigned int *lo, unsigned int *hi)
{
	char buf[16], *dash;
	uint64_t a, b;

	if (len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	dash = strchr(buf, '-');
	if (!dash)
		return false;
	*dash = '\0';
	if (!ht_parse_u64(buf, 0, 63, &a) || !ht_parse_u64(dash + 1, 0, 63, &b) || a > b)
		return false;
	*lo = (unsigned int)a;
	*hi = (unsigned int)b;
	return true;
}

static const char field_syntax[] =
	"expected NAME=aN, NAME=aN[LO-HI], NAME=aN-aM:str, with an optional :u, :s, :x, :str or :sym";

/* One FIELD token (tok, len) into f. Returns 0, or -1 with the reason in why. */
static int parse_field(const char *tok, size_t len, struct ht_field *f, const char **why)
{
	const char *eq = memchr(tok, '=', len), *p, *end = tok + len, *colon;
	int a;

	memset(f, 0, sizeof(*f));
	*why = field_syntax;
	if (!eq || !valid_name(tok, (size_t)(eq - tok))) {
		*why = "a field needs a NAME (letters, digits, _) before '='";
		return -1;
	}
	memcpy(f->name, tok, (size_t)(eq - tok));
	p = eq + 1;
	colon = memchr(p, ':', (size_t)(end - p));
	if (colon) {
		size_t tl = (size_t)(end - colon - 1);
		static const struct { const char *s; enum ht_field_type t; } types[] = {
			{ "u", HT_FT_U }, { "s", HT_FT_S }, { "x", HT_FT_X }, { "str", HT_FT_STR }, { "sym", HT_FT_SYM },
		};
		bool found = false;

		for (size_t i = 0; i < ARRAY_SIZE(types); i++)
			if (strlen(types[i].s) == tl && !memcmp(colon + 1, types[i].s, tl)) {
				f->type = types[i].t;
				found = true;
			}
		if (!found) {
			*why = "unknown type: use u, s, x, str or sym";
			return -1;
		}
		end = colon;
	}
	if (end - p < 2 || (a = parse_arg(p)) < 0)
		return -1;
	f->arg_first = f->arg_last = (uint8_t)a;
	f->lo = 0;
	f->hi = 63;
	p += 2;
	if (p == end)
		return 0;
	if (*p == '-') {
		if (end - p != 3 || (a = parse_arg(p + 1)) < 0 || a < f->arg_first)
			return -1;
		if (f->type != HT_FT_STR) {
			*why = "a range of arguments (aN-aM) is only for :str";
			return -1;
		}
		f->arg_last = (uint8_t)a;
		return 0;
	}
	if (*p == '[' && end[-1] == ']') {
		unsigned int lo, hi;

		if (!parse_bits(p + 1, (size_t)(end - p - 2), &lo, &hi)) {
			*why = "bits are [LO-HI] with 0 <= LO <= HI <= 63";
			return -1;
		}
		if (f->type == HT_FT_STR && (lo % 8 || (hi + 1) % 8)) {
			*why = "a :str bit range must cover whole bytes ([0-7], [8-31], ...)";
			return -1;
		}
		f->lo = (uint8_t)lo;
		f->hi = (uint8_t)hi;
		return 0;
	}
	return -1;
}

static int add_event(struct ht_catalog *c, const struct ht_event_desc *ev)
{
	if (HT_GROW(c->events, c->cap, c->n + 1, 16))
		return -1;
	c->events[c->n++] = *ev;
	return 0;
}

static int cmp_event(const void *a, const void *b)
{
	const struct ht_event_desc *x = a, *y = b;

	return x->nr < y->nr ? -1 : x->nr > y->nr;
}

/*
 * Names a field may not have: the exports put every decoded event's fields
 * beside these (CTF: one event class, docs/exports.md), and a sym field
 * NAME beside its symbol NAME_sym (CTF and JSON). babeltrace2 refuses a
 * trace whose event has two fields of one name. Returns 0, or -1 with the
 * message in err.
 */
static const char *const export_fields[] = { "vcpu_id", "guest_rip", "exit_to_hcall_ns", "hcall_to_entry_ns" };

static int check_export_names(const struct ht_event_desc *ev, const char *where, char *err, size_t errlen)
{
	for (unsigned int i = 0; i < ev->nfields; i++) {
		const struct ht_field *f = &ev->fields[i];
		char twin[HT_CAT_NAME_MAX + 8];

		for (size_t k = 0; k < ARRAY_SIZE(export_fields); k++)
			if (!strcmp(f->name, export_fields[k]))
				return ht_errf(err, errlen, "%s: field '%s' of %s: every guest event has a field of that name in the exports (vcpu_id, guest_rip, exit_to_hcall_ns, hcall_to_entry_ns): choose another name",
					       where, f->name, ev->name);
		if (f->type != HT_FT_SYM)
			continue;
		snprintf(twin, sizeof(twin), "%s_sym", f->name);
		if (ht_event_field(ev, twin))
			return ht_errf(err, errlen, "%s: field '%s' of %s is the name of the symbol of field '%s' (a :sym field): choose another name",
				       where, twin, ev->name, f->name);
	}
	return 0;
}

/*
 * Scans one line into ev. by_nr: nr -> index in c->events of every event so
 * far (the array is sorted once, at the end of a text). Returns 1 (an
 * event), 0 (blank/comment) or -1 with the message in err.
 */
static int parse_line(const struct ht_catalog *c, const struct ht_hashmap *by_nr, char *line, bool builtin,
		      const char *where, struct ht_event_desc *ev, char *err, size_t errlen)
{
	long dup;
	char *hash = strchr(line, '#'), *save = NULL, *tok;
	char shown[64]; /* a token quoted in a message: the file's text, escaped */
	uint64_t nr;
	const char *why;

	if (hash)
		*hash = '\0';
	tok = strtok_r(line, " \t\r", &save);
	if (!tok)
		return 0;
	memset(ev, 0, sizeof(*ev));
	ev->builtin = builtin;
	if (!ht_parse_u64(tok, 0, UINT32_MAX, &nr))
		return ht_errf(err, errlen, "%s: '%s' is not a hypercall nr: lines are 'NR NAME FIELD...', NR from 0 to 4294967295",
			       where, ht_escape(shown, sizeof(shown), tok, HT_ESC_TEXT));
	ev->nr = (uint32_t)nr;
	if (!builtin && nr >= HT_GUEST_NR_PROJECT_FIRST && nr <= HT_GUEST_NR_PROJECT_LAST)
		return ht_errf(err, errlen, "%s: nr %llu belongs to the project's own events (%u-%u): choose another nr",
			    where, (unsigned long long)nr, HT_GUEST_NR_PROJECT_FIRST, HT_GUEST_NR_PROJECT_LAST);
	if (ht_hashmap_find(by_nr, (long)ev->nr, &dup))
		return ht_errf(err, errlen, "%s: nr %llu is already defined (as %s): each nr once", where,
			    (unsigned long long)nr, c->events[dup].name);
	tok = strtok_r(NULL, " \t\r", &save);
	if (!tok || !valid_name(tok, strlen(tok)))
		return ht_errf(err, errlen, "%s: expected an event NAME after nr %llu (letters, digits, _; at most %d)",
			    where, (unsigned long long)nr, HT_CAT_NAME_MAX - 1);
	strcpy(ev->name, tok);
	while ((tok = strtok_r(NULL, " \t\r", &save))) {
		struct ht_field *f = &ev->fields[ev->nfields];

		if (ev->nfields == HT_CAT_MAX_FIELDS)
			return ht_errf(err, errlen, "%s: %s has more than %d fields", where, ev->name, HT_CAT_MAX_FIELDS);
		if (parse_field(tok, strlen(tok), f, &why) < 0)
			return ht_errf(err, errlen, "%s: field '%s': %s", where,
				       ht_escape(shown, sizeof(shown), tok, HT_ESC_TEXT), why);
		if (ht_event_field(ev, f->name))
			return ht_errf(err, errlen, "%s: field '%s' appears twice in %s", where, f->name, ev->name);
		ev->nfields++;
	}
	return check_export_names(ev, where, err, errlen) ? -1 : 1;
}

/*
 * Linear in the text (and one sort): duplicates are found by hash, the
 * events sorted once at the end, however many lines the file has.
 */
int ht_catalog_parse(struct ht_catalog *c, const char *text, const char *origin, bool builtin,
		     char *err, size_t errlen)
{
	struct ht_hashmap by_nr = HT_HASHMAP_INIT(ht_hash_long, ht_equal_long, NULL);
	char *copy = strdup(text), *line, *next, where[320];
	unsigned int lineno = 0;
	int ret = 0;

	if (!copy)
		return ht_errf(err, errlen, "out of memory");
	for (size_t i = 0; i < c->n && !ret; i++)
		if (ht_hashmap_insert(&by_nr, (long)c->events[i].nr, (long)i, HT_HASHMAP_ADD, NULL, NULL))
			ret = ht_errf(err, errlen, "out of memory");
	for (line = copy; line && ret == 0; line = next) {
		struct ht_event_desc ev;
		int r;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		snprintf(where, sizeof(where), "%s:%u", origin, lineno);
		r = parse_line(c, &by_nr, line, builtin, where, &ev, err, errlen);
		if (r < 0)
			ret = -1;
		else if (r == 1 && (add_event(c, &ev) ||
				    ht_hashmap_insert(&by_nr, (long)ev.nr, (long)(c->n - 1), HT_HASHMAP_ADD, NULL, NULL)))
			ret = ht_errf(err, errlen, "out of memory");
	}
	/* Sorted whatever happened: the catalog stays searchable with what was added. */
	qsort(c->events, c->n, sizeof(*c->events), cmp_event);
	ht_hashmap_clear(&by_nr);
	free(copy);
	return ret;
}

int ht_catalog_init(struct ht_catalog *c, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	return ht_catalog_parse(c, ht_builtin_catalog, "built-in catalog", true, err, errlen);
}

void ht_catalog_free(struct ht_catalog *c)
{
	free(c->events);
	memset(c, 0, sizeof(*c));
}

int ht_catalog_load_file(struct ht_catalog *c, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char *text = NULL;
	size_t len = 0;
	int ret;

	if (!f)
		return ht_errf(err, errlen, "cannot open catalog %s: %s", path, strerror(errno));
	/* A catalog is a few lines; a huge file is a wrong argument. */
	text = malloc(1u << 20);
	if (!text) {
		fclose(f);
		return ht_errf(err, errlen, "out of memory");
	}
	len = fread(text, 1, (1u << 20) - 1, f);
	if (ferror(f) || !feof(f)) {
		ret = ht_errf(err, errlen, "cannot read catalog %s: %s", path,
			   ferror(f) ? strerror(errno) : "larger than 1 MiB: is it a catalog?");
	} else if (memchr(text, '\0', len)) {
		ret = ht_errf(err, errlen, "%s is not a text catalog (it holds NUL bytes)", path);
	} else {
		text[len] = '\0';
		ret = ht_catalog_parse(c, text, path, false, err, errlen);
	}
	free(text);
	fclose(f);
	return ret;
}

const struct ht_event_desc *ht_catalog_find(const struct ht_catalog *c, uint32_t nr)
{
	size_t lo = 0, hi = c->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->events[mid].nr == nr)
			return &c->events[mid];
		if (c->events[mid].nr < nr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static uint64_t arg_of(const struct ht_record *r, unsigned int i)
{
	const uint64_t args[4] = { r->a0, r->a1, r->a2, r->a3 };

	return args[i & 3];
}

uint64_t ht_field_bits(const struct ht_field *f, const struct ht_record *r)
{
	unsigned int width = f->hi - f->lo + 1u;
	uint64_t v = arg_of(r, f->arg_first) >> f->lo;

	return width == 64 ? v : v & ((1ull << width) - 1);
}

int64_t ht_field_signed(const struct ht_field *f, const struct ht_record *r)
{
	unsigned int width = f->hi - f->lo + 1u;
	uint64_t v = ht_field_bits(f, r);

	if (width < 64 && (v >> (width - 1)) & 1)
		v |= ~0ull << width;
	return (int64_t)v;
}

void ht_field_text(const struct ht_field *f, const struct ht_record *r, char out[33])
{
	size_t n = 0;

	for (unsigned int a = f->arg_first; a <= f->arg_last; a++) {
		uint64_t v = arg_of(r, a);
		unsigned int lo = a == f->arg_first ? f->lo / 8 : 0;
		unsigned int hi = a == f->arg_first && f->arg_first == f->arg_last ? f->hi / 8 : 7;

		for (unsigned int b = lo; b <= hi && n < 32; b++) {
			char ch = (char)((v >> (8 * b)) & 0xff);

			if (!ch)
				goto done;
			out[n++] = ch;
		}
	}
done:
	out[n] = '\0';
}

const struct ht_field *ht_event_field(const struct ht_event_desc *ev, const char *name)
{
	for (unsigned int i = 0; i < ev->nfields; i++)
		if (!strcmp(ev->fields[i].name, name))
			return &ev->fields[i];
	return NULL;
}
