/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `hypertrace-bpf convert`: its configuration, parsed from the command line. */
#ifndef HT_CONVERT_OPTIONS_H
#define HT_CONVERT_OPTIONS_H

#include <stdbool.h>
#include "decode/decoder.h"
#include "reading/selection.h"

/* Mode of the exports unless --mode says otherwise: guest arguments are not for every user. */
#define HT_EXPORT_DEFAULT_MODE 0600

enum ht_convert_format { HT_CONVERT_CTF, HT_CONVERT_CHROME, HT_CONVERT_LTTNG, HT_CONVERT_PERFETTO };

struct ht_convert_config {
	enum ht_convert_format format;
	const char *output; /* CTF, LTTng: a directory; Chrome, Perfetto: a file */
	bool force;         /* Chrome, Perfetto: replace the file */
	unsigned int mode;  /* of the files written (a CTF directory: plus x where r) */
	struct ht_selection selection;
	struct ht_decode_config decode; /* Chrome: user catalogs and guest symbols */
	const char *path;   /* the trace file */
};

/* Parses argv (argv[0] is "convert"). Returns -1 to go on, else the exit status. */
int ht_convert_parse(int argc, char **argv, struct ht_convert_config *cfg);

#endif
