/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The guest's trace text as the project's trace events (include/hypertrace/
 * guest.h, nr 1150..1152): each line a trace_line and as many trace_text as
 * its text needs, between a replay's begin and end, each through emit (the
 * hypercall in boottrace, a list in the tests).
 */
#ifndef HT_GUEST_TRACE_REPLAY_H
#define HT_GUEST_TRACE_REPLAY_H

#include <stddef.h>
#include <stdint.h>
#include "hypertrace/guest.h"

typedef void (*ht_replay_emit_fn)(void *ctx, uint32_t nr, struct ht_guest_args a);

struct ht_trace_replay {
	ht_replay_emit_fn emit;
	void *ctx;
	uint32_t run;       /* this replay's number: its sync markers carry it */
	const char *match;  /* if set, only lines whose text holds it are sent (and every sync marker) */
	uint32_t seq;       /* the next line's */
	uint64_t lines;     /* sent */
	uint64_t unparsed;  /* not a trace line (comments and "[LOST" lines aside) */
	uint64_t cut;       /* longer than HT_GUEST_TRACE_TEXT_MAX */
	uint64_t lost;      /* events the trace says it lost ("[LOST N EVENTS]" lines) */
	uint64_t unmatched; /* lines left out by match */
	uint64_t hypercalls;
};

void ht_trace_replay_begin(struct ht_trace_replay *r);
/* One line of the trace file (with or without its '\n'). */
void ht_trace_replay_line(struct ht_trace_replay *r, const char *line, size_t len);
/* The sync whose marker "hypertrace-sync RUN SEQ" was just written. */
void ht_trace_replay_sync(struct ht_trace_replay *r, uint32_t seq);
/* overruns: the trace buffer's own count (per_cpu/cpuN/stats); lost is the larger of it and the "[LOST" lines'. */
void ht_trace_replay_end(struct ht_trace_replay *r, uint64_t overruns);

#endif
