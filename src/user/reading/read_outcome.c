// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "reading/read_outcome.h"

#include <stdio.h>
#include "cli.h"

int ht_report_read_outcome(const char *path, const struct ht_read_status *st)
{
	if (st->damaged) {
		fprintf(stderr, "hypertrace-bpf: %s is damaged: read %llu records, stopped at byte %llu of %llu: %s\n",
			path, st->records, st->good_bytes, st->file_bytes, st->reason);
		return HT_EXIT_RUNTIME;
	}
	if (!st->has_trailer)
		fprintf(stderr, "hypertrace-bpf: warning: %s: read %llu records: %s\n", path, st->records,
			st->reason);
	return HT_EXIT_OK;
}
