// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert --perfetto, what a decoded event carries (perfetto_private.h): its
 * fields as debug annotations in a dict "fields", their names interned
 * before the event's packet starts, and a function's name for a slice.
 */
#include "export/perfetto_private.h"

#include <stdio.h>

/* One decoded field as a debug annotation of the "fields" dict (a sym adds NAME_sym). */
static void decoded_field(void *ctx, unsigned int i, const struct ht_field_value *v)
{
	struct ht_perfetto_export *x = ctx;
	const struct ht_field *f = v->field;
	ht_pb_msg a = ht_pb_begin(&x->raw, DA_DICT);
	char esc[FUNCTION_NAME_SIZE];

	(void)i;
	pf_arg_name(x, f->name);
	switch (f->type) {
	case HT_FT_STR:
		ht_pb_string(&x->raw, DA_STRING, shown(esc, sizeof(esc), v->text));
		break;
	case HT_FT_S:
		ht_pb_varint(&x->raw, DA_INT, (uint64_t)v->sval);
		break;
	case HT_FT_X:
	case HT_FT_SYM:
		ht_pb_varint(&x->raw, DA_POINTER, v->bits);
		break;
	case HT_FT_U:
		ht_pb_varint(&x->raw, DA_UINT, v->bits);
		break;
	}
	ht_pb_end(&x->raw, a);
	if (f->type == HT_FT_SYM && v->has_sym) {
		char key[HT_CAT_NAME_MAX + 8];

		snprintf(key, sizeof(key), "%s_sym", f->name);
		a = ht_pb_begin(&x->raw, DA_DICT);
		pf_arg_name(x, key);
		ht_pb_string(&x->raw, DA_STRING, shown(esc, sizeof(esc), v->sym));
		ht_pb_end(&x->raw, a);
	}
}

/* A decoded event's fields, as report decodes them, in a dict "fields". */
void pf_decoded_fields(struct ht_perfetto_export *x, const struct ht_event_desc *ev, const struct ht_record *r)
{
	ht_pb_msg d = ht_pb_begin(&x->raw, TE_DEBUG);

	ht_pb_varint(&x->raw, DA_NAME_IID, x->arg_iid[ARG_FIELDS]);
	ht_decoder_visit_fields(x->dec, ev, r, decoded_field, x);
	ht_pb_end(&x->raw, d);
}

/* The function's name for a slice (FUNCTION_NAME_SIZE bytes): its symbol, escaped, else its address. */
void pf_function_name(struct ht_perfetto_export *x, uint64_t addr, char *out)
{
	char sym[HT_SYM_TEXT_MAX];

	if (!ht_decoder_function(x->dec, addr, sym, sizeof(sym)))
		snprintf(sym, sizeof(sym), "0x%llx", (unsigned long long)addr);
	shown(out, FUNCTION_NAME_SIZE, sym);
}

void pf_prepare_field_names(struct ht_perfetto_export *x, const struct ht_event_desc *ev)
{
	for (unsigned int i = 0; ev && i < ev->nfields; i++) {
		pf_intern(x, false, ev->fields[i].name);
		if (ev->fields[i].type == HT_FT_SYM) {
			char key[HT_CAT_NAME_MAX + 8];
			snprintf(key, sizeof(key), "%s_sym", ev->fields[i].name);
			pf_intern(x, false, key);
		}
	}
}
