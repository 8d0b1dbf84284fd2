// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "decode/decoder.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "common/escape.h"
#include "hypertrace/guest.h"
#include "tracefile/trace_reader.h"

/*
 * The KASLR offset from the first hypertrace_module event: the module sends
 * the run-time address of a symbol and its name. Returns 1 found, 0 none, -1
 * when the anchor's name is not in the symbols (message in err).
 */
static int offset_from_anchor(struct ht_decoder *d, const char *trace_path, char *err, size_t errlen)
{
	struct ht_guest_origin origin;
	struct ht_reader *rd;
	struct ht_record rec;
	struct ht_gev ev;
	int found = 0;

	if (ht_reader_open(trace_path, &rd, err, errlen))
		return 0;
	if (ht_guest_origin_init(&origin)) {
		found = -1;
		snprintf(err, errlen, "out of memory");
	}
	while (!found && ht_reader_next(rd, &rec) == 1) {
		uint64_t file_addr;

		/* A module event from guest user space would move every symbol: only the module's own counts. */
		if (ht_guest_origin_note(&origin, &rec)) {
			found = -1;
			snprintf(err, errlen, "out of memory");
			break;
		}
		if (rec.nr != HT_GUEST_NR_MODULE || ht_guest_origin_forged(&origin, &rec))
			continue;
		ht_gev_decode(&origin.gev, &rec, &ev);
		if (!ht_symtab_addr_of(&d->syms, ev.u.mod.anchor_name, &file_addr)) {
			char shown[HT_ESC_SIZE(sizeof(ev.u.mod.anchor_name))];

			/* The name is the guest's: escaped. */
			snprintf(err, errlen, "the guest symbols have no '%s', the module's KASLR anchor: give the guest kernel's own System.map or kallsyms, or --kaslr-offset",
				 ht_escape(shown, sizeof(shown), ev.u.mod.anchor_name, HT_ESC_TEXT));
			found = -1;
			break;
		}
		d->syms.offset = ev.u.mod.anchor_addr - file_addr;
		found = 1;
	}
	ht_guest_origin_free(&origin);
	ht_reader_close(rd);
	return found;
}

int ht_decoder_open(struct ht_decoder *d, const struct ht_decode_config *cfg, const char *trace_path,
		    const struct ht_file_header *h, char *err, size_t errlen)
{
	memset(d, 0, sizeof(*d));
	if (ht_guest_origin_init(&d->origin)) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (ht_catalog_init(&d->cat, err, errlen))
		goto fail;
	for (unsigned int i = 0; i < cfg->ncatalogs; i++)
		if (ht_catalog_load_file(&d->cat, cfg->catalogs[i], err, errlen))
			goto fail;
	if (cfg->symbols) {
		if (ht_symtab_load(&d->syms, cfg->symbols, err, errlen))
			goto fail;
		d->have_syms = true;
		if (cfg->offset_given) {
			d->syms.offset = cfg->offset;
		} else {
			int r = offset_from_anchor(d, trace_path, err, errlen);

			if (r < 0)
				goto fail;
			if (r == 0)
				fprintf(stderr, "hypertrace-bpf: note: no hypertrace_module event in %s to find the guest's KASLR offset: assuming 0 (give --kaslr-offset if the guest randomizes its kernel base)\n",
					trace_path);
		}
	}
	d->columns = d->have_syms || ht_decoder_file_has_events(d, h);
	return 0;
fail:
	ht_decoder_close(d);
	return -1;
}

bool ht_decoder_file_has_events(const struct ht_decoder *d, const struct ht_file_header *h)
{
	for (__u32 i = 0; i < h->filter_nr_count && i < HT_MAX_SELECTED_NR; i++)
		if (ht_catalog_find(&d->cat, h->filter_nr[i]))
			return true;
	return false;
}

int ht_decoder_note(struct ht_decoder *d, const struct ht_record *r)
{
	return ht_guest_origin_note(&d->origin, r);
}

bool ht_decoder_forged(const struct ht_decoder *d, const struct ht_record *r)
{
	return ht_guest_origin_forged(&d->origin, r);
}

void ht_decoder_close(struct ht_decoder *d)
{
	ht_guest_origin_free(&d->origin);
	ht_catalog_free(&d->cat);
	if (d->have_syms)
		ht_symtab_free(&d->syms);
	d->have_syms = false;
}

const struct ht_event_desc *ht_decoder_event(const struct ht_decoder *d, const struct ht_record *r)
{
	return ht_decoder_forged(d, r) ? NULL : ht_catalog_find(&d->cat, r->nr);
}

bool ht_decoder_symbol(const struct ht_decoder *d, uint64_t addr, char *buf, size_t len)
{
	return d->have_syms && ht_symtab_format(&d->syms, addr, buf, len);
}

bool ht_decoder_symbol_parts(const struct ht_decoder *d, uint64_t addr, char *buf, size_t len, const char **mod)
{
	return d->have_syms && ht_symtab_format_parts(&d->syms, addr, buf, len, mod);
}

bool ht_decoder_function(const struct ht_decoder *d, uint64_t addr, char *buf, size_t len)
{
	return d->have_syms && ht_symtab_function(&d->syms, addr, buf, len);
}

/* What a forged record shows instead of its decoding: its CSV event column, its --dump text. */
#define HT_FORGED_EVENT "(forged)"
#define HT_FORGED_TEXT "(forged: not from the guest kernel's module, not decoded)"

void ht_decoder_visit_fields(const struct ht_decoder *d, const struct ht_event_desc *ev,
			     const struct ht_record *r, ht_field_visit_fn visit, void *ctx)
{
	struct ht_field_value v;

	for (unsigned int i = 0; i < ev->nfields; i++) {
		const struct ht_field *f = &ev->fields[i];

		v.field = f;
		v.bits = 0;
		v.sval = 0;
		v.text[0] = v.sym[0] = v.place[0] = '\0';
		v.has_sym = false;
		v.module = NULL;
		switch (f->type) {
		case HT_FT_STR:
			ht_field_text(f, r, v.text);
			break;
		case HT_FT_S:
			v.sval = ht_field_signed(f, r);
			v.bits = (uint64_t)v.sval;
			break;
		case HT_FT_SYM:
			v.bits = ht_field_bits(f, r);
			/* Both forms come from the same lookup: both or neither. */
			v.has_sym = ht_decoder_symbol(d, v.bits, v.sym, sizeof(v.sym)) &&
				    ht_decoder_symbol_parts(d, v.bits, v.place, sizeof(v.place), &v.module);
			break;
		case HT_FT_U:
		case HT_FT_X:
			v.bits = ht_field_bits(f, r);
			break;
		}
		visit(ctx, i, &v);
	}
}

struct field_printer {
	FILE *out;
	bool json;
};

/*
 * One field, as text ("name=value", json false) or as JSON members
 * ("name":value, json true), written whole to out: however long a symbol
 * name and its escaped form, nothing is cut. Strings are the guest's and
 * symbol names the symbol file's: escaped (common/escape.h).
 */
static void print_field(void *ctx, unsigned int i, const struct ht_field_value *v)
{
	const struct field_printer *p = ctx;
	const struct ht_field *f = v->field;
	unsigned int width = f->hi - f->lo + 1u;
	bool json = p->json;
	FILE *out = p->out;

	if (i)
		fputc(json ? ',' : ' ', out);
	fprintf(out, json ? "\"%s\":" : "%s=", f->name);
	switch (f->type) {
	case HT_FT_STR:
		fputc('"', out);
		ht_escape_fputs(out, v->text, json ? HT_ESC_JSON : HT_ESC_QUOTED);
		fputc('"', out);
		break;
	case HT_FT_S:
		/* JSON numbers are doubles: exact below 2^53. */
		fprintf(out, json && width > 53 ? "\"%" PRId64 "\"" : "%" PRId64, v->sval);
		break;
	case HT_FT_U:
		fprintf(out, json && width > 53 ? "\"%" PRIu64 "\"" : "%" PRIu64, v->bits);
		break;
	case HT_FT_X:
		fprintf(out, json ? "\"0x%" PRIx64 "\"" : "0x%" PRIx64, v->bits);
		break;
	case HT_FT_SYM:
		if (json) {
			fprintf(out, "\"0x%" PRIx64 "\"", v->bits);
			if (v->has_sym) {
				fprintf(out, ",\"%s_sym\":\"", f->name);
				ht_escape_fputs(out, v->place, HT_ESC_JSON);
				fputc('"', out);
				if (v->module) {
					fprintf(out, ",\"%s_module\":\"", f->name);
					ht_escape_fputs(out, v->module, HT_ESC_JSON);
					fputc('"', out);
				}
			}
		} else if (v->has_sym) {
			ht_escape_fputs(out, v->sym, HT_ESC_TEXT);
		} else {
			fprintf(out, "0x%" PRIx64, v->bits);
		}
		break;
	}
}

void ht_decode_print_fields(const struct ht_decoder *d, const struct ht_event_desc *ev,
			    const struct ht_record *r, FILE *out)
{
	struct field_printer p = { out, false };

	ht_decoder_visit_fields(d, ev, r, print_field, &p);
}

void ht_decode_print_json_fields(const struct ht_decoder *d, const struct ht_event_desc *ev,
				 const struct ht_record *r, FILE *out)
{
	struct field_printer p = { out, true };

	fputc('{', out);
	ht_decoder_visit_fields(d, ev, r, print_field, &p);
	fputc('}', out);
}

void ht_decode_print_text(const struct ht_decoder *d, const struct ht_record *r, FILE *out)
{
	const struct ht_event_desc *ev = ht_decoder_event(d, r);
	char sym[HT_SYM_TEXT_MAX];

	if (ev) {
		fprintf(out, " => %s:%s", ev->name, ev->nfields ? " " : "");
		ht_decode_print_fields(d, ev, r, out);
	} else if (ht_decoder_forged(d, r)) {
		fputs(" => " HT_FORGED_TEXT, out);
	}
	if (ht_decoder_symbol(d, r->guest_rip, sym, sizeof(sym))) {
		fputs(" rip_sym=", out);
		ht_escape_fputs(out, sym, HT_ESC_TEXT);
	}
}

void ht_decode_print_csv_header(const struct ht_decoder *d, FILE *out)
{
	if (d->columns)
		fputs(",event,fields,rip_sym,rip_module", out);
}

void ht_decode_print_csv(const struct ht_decoder *d, const struct ht_record *r, FILE *out)
{
	const struct ht_event_desc *ev = ht_decoder_event(d, r);
	char sym[HT_SYM_TEXT_MAX];

	if (!d->columns)
		return;
	/* Every text column quoted, formulas neutralised (common/escape.h): nothing shifts, nothing runs. */
	fputc(',', out);
	ht_csv_fputs(out, ev ? ev->name : ht_decoder_forged(d, r) ? HT_FORGED_EVENT : "");
	fputc(',', out);
	if (ev) {
		/* The fields' text (escaped for display), whole, then quoted as one CSV field. */
		char *text = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&text, &len);

		if (m) {
			ht_decode_print_fields(d, ev, r, m);
			fclose(m);
		}
		ht_csv_quote(out, text ? text : "");
		free(text);
	} else {
		ht_csv_fputs(out, "");
	}
	fputc(',', out);
	const char *mod = NULL;
	ht_csv_fputs(out, ht_decoder_symbol_parts(d, r->guest_rip, sym, sizeof(sym), &mod) ? sym : "");
	fputc(',', out);
	ht_csv_fputs(out, mod ? mod : "");
}

void ht_decode_print_json(const struct ht_decoder *d, const struct ht_record *r, FILE *out)
{
	const struct ht_event_desc *ev = ht_decoder_event(d, r);
	char sym[HT_SYM_TEXT_MAX];

	if (ev) {
		fprintf(out, ",\"event\":\"%s\",\"fields\":", ev->name);
		ht_decode_print_json_fields(d, ev, r, out);
	} else if (ht_decoder_forged(d, r)) {
		fputs(",\"forged\":true", out);
	}
	const char *mod;
	if (ht_decoder_symbol_parts(d, r->guest_rip, sym, sizeof(sym), &mod)) {
		fputs(",\"rip_sym\":\"", out);
		ht_escape_fputs(out, sym, HT_ESC_JSON);
		fputc('"', out);
		if (mod) {
			fputs(",\"rip_module\":\"", out);
			ht_escape_fputs(out, mod, HT_ESC_JSON);
			fputc('"', out);
		}
	}
}
