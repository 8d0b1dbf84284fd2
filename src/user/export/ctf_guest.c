// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/ctf_guest.h"

#include <string.h>

/* The record's part of every guest event: vcpu_id, guest_rip, exit_to_hcall_ns, hcall_to_entry_ns. */
#define RECORD_PART_BYTES (2 + 8 + 4 + 4)

uint16_t ht_ctf_guest_event_id(const struct ht_decoder *dec, const struct ht_event_desc *ev)
{
	return (uint16_t)(1 + (ev - dec->cat.events));
}

static unsigned char *put_le(unsigned char *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		*p++ = (unsigned char)(v >> (8 * i));
	return p;
}

static unsigned char *put_text(unsigned char *p, const char *s)
{
	size_t n = strlen(s) + 1;

	memcpy(p, s, n);
	return p + n;
}

/* Where the next field goes; with p NULL, only how many bytes the fields take. */
struct field_cursor {
	unsigned char *p;
	size_t n;
};

/* One decoded field as its event class declares it (ht_ctf_guest_metadata). */
static void put_field(void *ctx, unsigned int i, const struct ht_field_value *v)
{
	struct field_cursor *c = ctx;
	char sym[HT_CTF_GUEST_SYM_MAX];
	const char *text = NULL;
	bool number = true;

	(void)i;
	switch (v->field->type) {
	case HT_FT_STR:
		text = v->text;
		number = false;
		break;
	case HT_FT_SYM: {
		/* The address, then its symbol cut to HT_CTF_GUEST_SYM_MAX bytes ("" when unknown). */
		size_t len = v->has_sym ? strnlen(v->sym, sizeof(sym) - 1) : 0;

		memcpy(sym, v->sym, len);
		sym[len] = '\0';
		text = sym;
		break;
	}
	case HT_FT_S:
	case HT_FT_U:
	case HT_FT_X:
		break;
	}
	if (number) {
		c->n += 8;
		if (c->p)
			c->p = put_le(c->p, v->bits, 8);
	}
	if (text) {
		c->n += strlen(text) + 1;
		if (c->p)
			c->p = put_text(c->p, text);
	}
}

size_t ht_ctf_guest_size(const struct ht_decoder *dec, const struct ht_event_desc *ev,
			 const struct ht_record *r)
{
	struct field_cursor c = { NULL, RECORD_PART_BYTES };

	ht_decoder_visit_fields(dec, ev, r, put_field, &c);
	return c.n;
}

unsigned char *ht_ctf_guest_put(const struct ht_decoder *dec, const struct ht_event_desc *ev,
				const struct ht_record *r, unsigned char *p)
{
	struct field_cursor c;

	p = put_le(p, r->vcpu_id, 2);
	p = put_le(p, r->guest_rip, 8);
	p = put_le(p, r->exit_to_hcall_ns, 4);
	p = put_le(p, r->hcall_to_entry_ns, 4);
	c = (struct field_cursor){ p, 0 };
	ht_decoder_visit_fields(dec, ev, r, put_field, &c);
	return c.p;
}

void ht_ctf_guest_metadata(const struct ht_decoder *dec, FILE *f)
{
	fputs("\ntypealias integer { size = 64; align = 8; signed = true; } := ht_guest_int64_t;\n", f);
	for (size_t e = 0; e < dec->cat.n; e++) {
		const struct ht_event_desc *ev = &dec->cat.events[e];

		fprintf(f, "\nevent {\n\tname = \"%s\";\n\tid = %u;\n\tstream_id = 0;\n\tfields := struct {\n"
			   "\t\tuint16_t vcpu_id;\n\t\thex64_t guest_rip;\n\t\tuint32_t exit_to_hcall_ns;\n"
			   "\t\tuint32_t hcall_to_entry_ns;\n",
			ev->name, ht_ctf_guest_event_id(dec, ev));
		/* A leading underscore: readers drop it, and no field name can clash with a TSDL keyword. */
		for (unsigned int i = 0; i < ev->nfields; i++) {
			const struct ht_field *fd = &ev->fields[i];

			switch (fd->type) {
			case HT_FT_STR:
				fprintf(f, "\t\tstring _%s;\n", fd->name);
				break;
			case HT_FT_SYM:
				fprintf(f, "\t\thex64_t _%s;\n\t\tstring _%s_sym;\n", fd->name, fd->name);
				break;
			case HT_FT_S:
				fprintf(f, "\t\tht_guest_int64_t _%s;\n", fd->name);
				break;
			case HT_FT_X:
				fprintf(f, "\t\thex64_t _%s;\n", fd->name);
				break;
			default:
				fprintf(f, "\t\tuint64_t _%s;\n", fd->name);
				break;
			}
		}
		fputs("\t};\n};\n", f);
	}
}
