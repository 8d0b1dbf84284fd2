// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `hypertrace-bpf convert`: streams the selected records of a trace file,
 * through the trace file reader, into a CTF trace or a Chrome trace JSON file.
 */
#include <errno.h>
#include <stdio.h>
#include "cli.h"
#include "decode/decoder.h"
#include "export/chrome_json.h"
#include "export/convert_options.h"
#include "export/ctf_writer.h"
#include "tracefile/trace_reader.h"

/* The two writers behind one shape, so the read loop is written once. */
struct exporter {
	struct ht_ctf_writer *ctf;
	struct ht_chrome_writer *chrome;
	struct ht_decoder dec; /* Chrome: decodes guest events */
	bool have_dec;
};

static int exporter_open(struct exporter *x, const struct ht_convert_config *cfg,
			 const struct ht_file_header *h, char *err, size_t errlen)
{
	int ret;

	/* Before the output exists: a wrong catalog or symbol file leaves nothing behind. */
	if (ht_decoder_open(&x->dec, &cfg->decode, cfg->path, h, err, errlen))
		return -EINVAL;
	x->have_dec = true;
	if (cfg->format == HT_CONVERT_CTF) {
		ret = ht_ctf_open(cfg->output, h, &x->ctf, err, errlen);
		/* The guest event classes only where there can be guest events: other traces stay as they were. */
		if (!ret && ht_decoder_file_has_events(&x->dec, h))
			ht_ctf_decode(x->ctf, &x->dec);
		return ret;
	}
	ret = ht_chrome_open(cfg->output, cfg->force, h, &x->chrome, err, errlen);
	if (ret)
		return ret;
	if (ht_chrome_decode(x->chrome, &x->dec)) {
		/* The caller closes the writer. */
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

static int exporter_add(struct exporter *x, const struct ht_record *r, char *err, size_t errlen)
{
	return x->ctf ? ht_ctf_add(x->ctf, r, err, errlen) : ht_chrome_add(x->chrome, r, err, errlen);
}

static int exporter_close(struct exporter *x, const struct ht_read_status *st, const char *source,
			  const char *selection, char *err, size_t errlen)
{
	if (x->ctf) {
		unsigned long long reordered = ht_ctf_reordered(x->ctf);
		if (reordered)
			fprintf(stderr, "hypertrace-bpf: warning: %llu records were out of time order in their vCPU thread: their CTF timestamps were raised to the previous one's (the trace file itself is unusual)\n",
				reordered);
		return ht_ctf_close(x->ctf, st, source, selection, err, errlen);
	}
	if (!x->chrome)
		return 0;
	int ret = ht_chrome_close(x->chrome, st, source, selection, err, errlen);
	x->chrome = NULL;
	return ret;
}

static void exporter_free(struct exporter *x)
{
	if (x->have_dec)
		ht_decoder_close(&x->dec);
	x->have_dec = false;
}

int ht_cmd_convert(int argc, char **argv)
{
	struct ht_convert_config cfg;
	struct exporter x = { 0 };
	struct ht_reader *reader;
	struct ht_record rec;
	char err[512], selection[256];
	unsigned long long converted = 0;
	int ret;

	if ((ret = ht_convert_parse(argc, argv, &cfg)) >= 0)
		return ret;
	if (ht_reader_open(cfg.path, &reader, err, sizeof(err)))
		return ht_runtime_error("%s", err);
	if (ht_selection_resolve(&cfg.selection, ht_reader_header(reader), err, sizeof(err))) {
		ht_reader_close(reader);
		return ht_usage_error("convert", "%s", err);
	}
	ht_selection_describe(&cfg.selection, selection, sizeof(selection));
	if (exporter_open(&x, &cfg, ht_reader_header(reader), err, sizeof(err))) {
		char ignored[64];
		exporter_close(&x, ht_reader_status(reader), cfg.path, selection, ignored, sizeof(ignored));
		exporter_free(&x);
		ht_reader_close(reader);
		return ht_runtime_error("%s", err);
	}
	while (ht_reader_next(reader, &rec) == 1) {
		if (!ht_selection_match(&cfg.selection, &rec, reader))
			continue;
		if (exporter_add(&x, &rec, err, sizeof(err))) {
			/* Still close: what was converted so far stays a readable trace. */
			char ignored[64];
			exporter_close(&x, ht_reader_status(reader), cfg.path, selection, ignored, sizeof(ignored));
			exporter_free(&x);
			ht_reader_close(reader);
			return ht_runtime_error("%s", err);
		}
		converted++;
	}
	const struct ht_read_status *st = ht_reader_status(reader);
	ret = exporter_close(&x, st, cfg.path, selection, err, sizeof(err));
	exporter_free(&x);
	if (ret) {
		ht_reader_close(reader);
		return ht_runtime_error("%s", err);
	}
	fprintf(stderr, "hypertrace-bpf: %llu of %llu records converted to %s\n", converted, st->records,
		cfg.output);
	ret = ht_report_read_outcome(cfg.path, st);
	ht_reader_close(reader);
	return ret;
}
