/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The event catalog: which hypercall nr is which guest event, and where its
 * fields sit in a0..a3. The project's own events (include/hypertrace/guest.h)
 * are built in, written in the same text format a user's catalog file uses
 * (docs/hypertracing.md):
 *
 *   # comment
 *   NR NAME FIELD...
 *   FIELD := NAME=aN[LO-HI][:TYPE] | NAME=aN-aM:str
 *   TYPE  := u (unsigned decimal, default) | s (signed) | x (hex)
 *            | str (text) | sym (guest address, symbolized)
 */
#ifndef HT_DECODE_CATALOG_H
#define HT_DECODE_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "hypertrace/record.h"

#define HT_CAT_NAME_MAX 48   /* event and field names, NUL included */
#define HT_CAT_MAX_FIELDS 16

enum ht_field_type { HT_FT_U, HT_FT_S, HT_FT_X, HT_FT_STR, HT_FT_SYM };

struct ht_field {
	char name[HT_CAT_NAME_MAX];
	uint8_t arg_first, arg_last; /* a0..a3; a range only for str */
	uint8_t lo, hi;              /* bit range within arg_first, inclusive */
	enum ht_field_type type;
};

struct ht_event_desc {
	uint32_t nr;
	bool builtin;
	char name[HT_CAT_NAME_MAX];
	unsigned int nfields;
	struct ht_field fields[HT_CAT_MAX_FIELDS];
};

struct ht_catalog {
	struct ht_event_desc *events; /* sorted by nr once complete */
	size_t n, cap;
};

/* The text of the built-in catalog (for `--help`-like listings and tests). */
extern const char ht_builtin_catalog[];

/* Empty catalog + the built-in events. Returns 0, or -1 with a message in err. */
int ht_catalog_init(struct ht_catalog *c, char *err, size_t errlen);
void ht_catalog_free(struct ht_catalog *c);
/*
 * Adds the events of a catalog text; origin names it in messages
 * ("FILE:LINE: ... "). A user's text may not redefine a built-in or an
 * already defined nr. Returns 0, or -1 with a one-line message in err.
 */
int ht_catalog_parse(struct ht_catalog *c, const char *text, const char *origin, bool builtin,
		     char *err, size_t errlen);
/* Reads a catalog file and adds its events. */
int ht_catalog_load_file(struct ht_catalog *c, const char *path, char *err, size_t errlen);
const struct ht_event_desc *ht_catalog_find(const struct ht_catalog *c, uint32_t nr);

/* A field's raw bits (numeric types), zero-extended. */
uint64_t ht_field_bits(const struct ht_field *f, const struct ht_record *r);
/* A numeric field's value as signed (type s): sign-extended from its width. */
int64_t ht_field_signed(const struct ht_field *f, const struct ht_record *r);
/* A str field's text: its bytes up to the first NUL, at most 32, NUL-terminated in out[33]. */
void ht_field_text(const struct ht_field *f, const struct ht_record *r, char out[33]);
/* The field of ev named name, or NULL. */
const struct ht_field *ht_event_field(const struct ht_event_desc *ev, const char *name);

#endif
