/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The guest-event options of `report` (catalogs, guest symbols, KASLR
 * offset, the function-graph and scheduling analyses), kept here so the
 * command's own option parser only forwards them.
 */
#ifndef HT_DECODE_OPTIONS_H
#define HT_DECODE_OPTIONS_H

#include "decode/decoder.h"

enum {
	HT_OPT_CATALOG = 0x400, /* clear of the selection options (0x300...) */
	HT_OPT_GUEST_SYMBOLS,
	HT_OPT_KASLR_OFFSET,
	HT_OPT_GRAPH,
	HT_OPT_SCHED,
};

/* struct option entries, to put in the command's longopts array. */
#define HT_DECODE_LONGOPTS                                                   \
	{ "catalog", required_argument, NULL, HT_OPT_CATALOG },              \
	{ "guest-symbols", required_argument, NULL, HT_OPT_GUEST_SYMBOLS },  \
	{ "kaslr-offset", required_argument, NULL, HT_OPT_KASLR_OFFSET },    \
	{ "graph", no_argument, NULL, HT_OPT_GRAPH },                        \
	{ "sched", no_argument, NULL, HT_OPT_SCHED }

/* Their lines of --help. */
extern const char ht_decode_help[];

/*
 * Applies option opt (a getopt_long result) with its argument. Returns 1 if
 * it was one of these, 0 if not, or HT_EXIT_USAGE after printing the
 * one-line usage error of command cmd ("report", "convert").
 */
int ht_decode_option(const char *cmd, int opt, const char *arg, struct ht_decode_config *cfg);

#endif
