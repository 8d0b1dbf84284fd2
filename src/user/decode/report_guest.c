// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "decode/report_guest.h"

#include <stdlib.h>
#include "decode/func_graph.h"
#include "decode/sched_summary.h"

struct ht_report_guest {
	struct ht_decoder dec;
	enum ht_analysis analysis;
	struct ht_fgraph *graph;
	struct ht_sched *sched;
	unsigned long long forged;
};

/* Decodes nothing: no catalog entries, no symbols, no extra columns. */
static const struct ht_decoder empty_decoder;

int ht_report_guest_open(struct ht_report_guest **out, const struct ht_decode_config *cfg,
			 const char *trace_path, const struct ht_file_header *h, char *err,
			 size_t errlen)
{
	struct ht_report_guest *g = calloc(1, sizeof(*g));

	*out = NULL;
	if (!g) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (ht_decoder_open(&g->dec, cfg, trace_path, h, err, errlen)) {
		free(g);
		return -1;
	}
	g->analysis = cfg->analysis;
	if (g->analysis == HT_ANALYSIS_GRAPH)
		g->graph = ht_fgraph_new(g->dec.have_syms ? &g->dec.syms : NULL);
	else if (g->analysis == HT_ANALYSIS_SCHED)
		g->sched = ht_sched_new();
	if ((g->analysis == HT_ANALYSIS_GRAPH && !g->graph) ||
	    (g->analysis == HT_ANALYSIS_SCHED && !g->sched)) {
		ht_report_guest_close(g);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	*out = g;
	return 0;
}

const struct ht_decoder *ht_report_guest_decoder(const struct ht_report_guest *g)
{
	return g ? &g->dec : &empty_decoder;
}

int ht_report_guest_note(struct ht_report_guest *g, const struct ht_record *r)
{
	return ht_decoder_note(&g->dec, r);
}

int ht_report_guest_observe(struct ht_report_guest *g, const struct ht_record *r)
{
	if (ht_decoder_forged(&g->dec, r)) {
		g->forged++;
		return 0;
	}
	if (g->graph)
		return ht_fgraph_observe(g->graph, r);
	if (g->sched)
		return ht_sched_observe(g->sched, r);
	return 0;
}

unsigned long long ht_report_guest_forged(const struct ht_report_guest *g)
{
	return g ? g->forged : 0;
}

void ht_report_guest_finish(struct ht_report_guest *g, FILE *out, uint64_t start_ns, uint64_t end_ns)
{
	if (g->graph)
		ht_fgraph_print(g->graph, out, start_ns, NULL);
	if (g->sched)
		ht_sched_print(g->sched, out, start_ns, end_ns, NULL);
	if (g->forged)
		fprintf(out, "%s# %llu guest module event(s) not from the guest kernel's module (forged): ignored\n",
			g->sched ? "\n" : "", g->forged);
}

void ht_report_guest_close(struct ht_report_guest *g)
{
	if (!g)
		return;
	ht_fgraph_free(g->graph);
	ht_sched_free(g->sched);
	ht_decoder_close(&g->dec);
	free(g);
}
