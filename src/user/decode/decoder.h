/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Decoding for `report`: the event catalog (built-in + user files), the guest
 * symbols with their KASLR offset, and the text/CSV/JSON forms of a decoded
 * record. A record whose nr is in no catalog is left as it is.
 */
#ifndef HT_DECODE_DECODER_H
#define HT_DECODE_DECODER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "decode/catalog.h"
#include "decode/guest_origin.h"
#include "decode/guest_symbols.h"
#include "hypertrace/trace_file.h"

#define HT_DECODE_MAX_CATALOGS 8

enum ht_analysis { HT_ANALYSIS_NONE, HT_ANALYSIS_GRAPH, HT_ANALYSIS_SCHED };

/* What the command line asked for. */
struct ht_decode_config {
	const char *catalogs[HT_DECODE_MAX_CATALOGS];
	unsigned int ncatalogs;
	const char *symbols;     /* --guest-symbols FILE */
	bool offset_given;       /* --kaslr-offset */
	uint64_t offset;
	enum ht_analysis analysis;
};

struct ht_decoder {
	struct ht_catalog cat;
	struct ht_symtab syms;
	bool have_syms;
	bool columns;            /* CSV: the file may hold decodable records, or RIPs to symbolize */
	struct ht_guest_origin origin; /* which of the project's events the guest module sent */
};

/*
 * Loads catalogs and symbols. Without --kaslr-offset the offset comes from the
 * first hypertrace_module event in trace_path (its anchor symbol), found by a
 * first read of the file; a note on stderr says when there is none.
 * Returns 0, or -1 with a one-line message in err.
 */
int ht_decoder_open(struct ht_decoder *d, const struct ht_decode_config *cfg, const char *trace_path,
		    const struct ht_file_header *h, char *err, size_t errlen);
void ht_decoder_close(struct ht_decoder *d);

/*
 * Call with every record of the file, in file order, before any other
 * question about it (whatever is selected): the guest module's load event
 * tells which records are its own. -1 when out of memory.
 */
int ht_decoder_note(struct ht_decoder *d, const struct ht_record *r);
/* True if r has one of the project's nr (1100-1149, the guest kernel's) but is not the guest module's: never decoded. */
bool ht_decoder_forged(const struct ht_decoder *d, const struct ht_record *r);

/* True if the file selected a catalogued nr: it may hold decodable records. */
bool ht_decoder_file_has_events(const struct ht_decoder *d, const struct ht_file_header *h);
/* The event a record is, or NULL (undecoded, or forged). */
const struct ht_event_desc *ht_decoder_event(const struct ht_decoder *d, const struct ht_record *r);
/* Symbolizes a guest address: "name+0xoff" ("name+0xoff [module]" in a module), or false. */
bool ht_decoder_symbol(const struct ht_decoder *d, uint64_t addr, char *buf, size_t len);
/* The same with the module apart (*mod, NULL for the kernel), for CSV and JSON. */
bool ht_decoder_symbol_parts(const struct ht_decoder *d, uint64_t addr, char *buf, size_t len, const char **mod);
/* The name of the function at addr for a call (ht_symtab_function), or false. */
bool ht_decoder_function(const struct ht_decoder *d, uint64_t addr, char *buf, size_t len);

/*
 * One decoded field of a record, as every output reads it: the value for its
 * type, read once here, so a new field type is taught to the outputs in one
 * place. Text is the guest's and symbols the symbol file's: raw bytes, for
 * the output to escape as its format needs.
 */
struct ht_field_value {
	const struct ht_field *field;
	uint64_t bits;           /* u, x, sym: the raw bits, zero-extended; s: the signed value's bits */
	int64_t sval;            /* s: sign-extended from the field's width */
	char text[33];           /* str: the bytes up to the first NUL, at most 32 */
	bool has_sym;            /* sym: the address is in the guest symbols */
	char sym[HT_SYM_TEXT_MAX]; /* sym: "name+0xoff [module]" (ht_decoder_symbol) */
	char place[HT_SYM_TEXT_MAX]; /* sym: "name+0xoff" alone, with ... */
	const char *module;      /* ... its module (NULL: the kernel) (ht_decoder_symbol_parts) */
};

/* Called with each field of a record in catalog order; i is the field's index. */
typedef void (*ht_field_visit_fn)(void *ctx, unsigned int i, const struct ht_field_value *v);
void ht_decoder_visit_fields(const struct ht_decoder *d, const struct ht_event_desc *ev,
			     const struct ht_record *r, ht_field_visit_fn visit, void *ctx);

/*
 * " => NAME: field=value ..." and " rip_sym=..." for a dump line (nothing if
 * undecoded; " => (forged: ...)" for a forged one).
 */
void ht_decode_print_text(const struct ht_decoder *d, const struct ht_record *r, FILE *out);
/* The fields alone, "field=value ...", whole (strings and symbols escaped for a terminal). */
void ht_decode_print_fields(const struct ht_decoder *d, const struct ht_event_desc *ev,
			    const struct ht_record *r, FILE *out);
/*
 * The fields as one JSON object, {"field":value,...} (sym fields add
 * "FIELD_sym", and "FIELD_module" for a module's address), whole and valid JSON whatever the strings and symbols hold.
 */
void ht_decode_print_json_fields(const struct ht_decoder *d, const struct ht_event_desc *ev,
				 const struct ht_record *r, FILE *out);
/* CSV: extra header columns ",event,fields,rip_sym,rip_module" and their values, when d->columns. */
void ht_decode_print_csv_header(const struct ht_decoder *d, FILE *out);
void ht_decode_print_csv(const struct ht_decoder *d, const struct ht_record *r, FILE *out);
/*
 * JSON: ',"event":"NAME","fields":{...}' and ',"rip_sym":"..."' members
 * (nothing if undecoded; ',"forged":true' for a forged one); a module's
 * address adds ',"rip_module":"..."'.
 */
void ht_decode_print_json(const struct ht_decoder *d, const struct ht_record *r, FILE *out);

#endif
