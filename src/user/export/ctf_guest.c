// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/ctf_guest.h"

#include <string.h>

/* The record's part of every guest event: vcpu_id, guest_rip, exit_to_hcall_ns, hcall_to_entry_ns. */
#define RECORD_PART_BYTES (2 + 8 + 4 + 4)

uint16_t ht_ctf_guest_event_id(const struct ht_decoder *dec, const struct ht_event_desc *ev)
{
	return (uint16_t)(1 + (ev - dec->cat.events));
}

static void sym_text(const struct ht_decoder *dec, uint64_t addr, char out[HT_CTF_GUEST_SYM_MAX])
{
	char buf[512];

	if (!ht_decoder_symbol(dec, addr, buf, sizeof(buf)))
		buf[0] = '\0';
	snprintf(out, HT_CTF_GUEST_SYM_MAX, "%s", buf);
}

size_t ht_ctf_guest_size(const struct ht_decoder *dec, const struct ht_event_desc *ev,
			 const struct ht_record *r)
{
	size_t n = RECORD_PART_BYTES;
	char text[HT_CTF_GUEST_SYM_MAX];

	for (unsigned int i = 0; i < ev->nfields; i++) {
		const struct ht_field *f = &ev->fields[i];

		if (f->type == HT_FT_STR) {
			ht_field_text(f, r, text);
			n += strlen(text) + 1;
		} else if (f->type == HT_FT_SYM) {
			sym_text(dec, ht_field_bits(f, r), text);
			n += 8 + strlen(text) + 1;
		} else {
			n += 8;
		}
	}
	return n;
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

unsigned char *ht_ctf_guest_put(const struct ht_decoder *dec, const struct ht_event_desc *ev,
				const struct ht_record *r, unsigned char *p)
{
	char text[HT_CTF_GUEST_SYM_MAX];

	p = put_le(p, r->vcpu_id, 2);
	p = put_le(p, r->guest_rip, 8);
	p = put_le(p, r->exit_to_hcall_ns, 4);
	p = put_le(p, r->hcall_to_entry_ns, 4);
	for (unsigned int i = 0; i < ev->nfields; i++) {
		const struct ht_field *f = &ev->fields[i];

		switch (f->type) {
		case HT_FT_STR:
			ht_field_text(f, r, text);
			p = put_text(p, text);
			break;
		case HT_FT_SYM:
			p = put_le(p, ht_field_bits(f, r), 8);
			sym_text(dec, ht_field_bits(f, r), text);
			p = put_text(p, text);
			break;
		case HT_FT_S:
			p = put_le(p, (uint64_t)ht_field_signed(f, r), 8);
			break;
		default:
			p = put_le(p, ht_field_bits(f, r), 8);
			break;
		}
	}
	return p;
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
