/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A guest's own trace, as guest/boottrace sent it (nr 1150..1152,
 * include/hypertrace/guest.h): per VM process the lines of its last replay,
 * rebuilt from their trace_line and trace_text events, and the clock pairs
 * that put the trace's clock on the host's (each sync's marker line, with
 * the guest's time, and its hypercall's exit, with the host's), fitted.
 *
 * Everything here is the guest's word: any guest process can send these nr.
 * A line's text keeps its bytes as sent (escape it at output); a piece that
 * continues no line is counted, not placed; memory grows with the bytes
 * received, never with a length the guest announces. The records are taken
 * in the host's time order (their exits), whatever order they were read in.
 */
#ifndef HT_DECODE_GUEST_TRACE_H
#define HT_DECODE_GUEST_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "common/hashmap.h"
#include "decode/clock_fit.h"
#include "hypertrace/record.h"

struct ht_trace_line {
	uint64_t guest_ns; /* on the trace's own clock */
	uint64_t sent_ns;  /* the host's time of its trace_line: when it was sent, not when it happened */
	uint32_t seq, cpu, tid;
	uint32_t len;      /* announced, at most HT_GUEST_TRACE_TEXT_MAX */
	uint32_t have;     /* received: text[0..have), NUL after */
	bool cut;          /* the guest cut a longer line at len */
	char *text;
};

/* A record as read, with its place in the reading (ties of equal exit times keep it). */
struct ht_guest_trace_rec {
	struct ht_record rec;
	size_t order;
};

struct ht_guest_trace {
	uint32_t host_pid;
	uint32_t run;                  /* of the replay kept: the last one begun */
	uint64_t runs;                 /* replays begun */
	uint64_t since_ns;             /* the host's time (exit) of the kept replay's begin, or of its first record if none began */
	bool ended;                    /* its end came */
	uint64_t said_lines, said_unparsed, said_cut, said_lost; /* its end's counts */
	struct ht_trace_line *lines;
	size_t nlines, lines_cap;
	uint64_t stray;                /* trace_text that continues no line */
	uint64_t syncs;                /* sync hypercalls of the kept replay */
	struct ht_clock_pair *pairs;   /* marker line's time, sync's exit */
	size_t npairs;
	struct ht_clock_fit fit;       /* of the pairs (fit.used 0: none) */
	/* The records as read, until ht_guest_traces_finish. */
	struct ht_guest_trace_rec *recs;
	size_t nrecs, recs_cap;
};

struct ht_guest_traces {
	struct ht_hashmap by_pid; /* host_pid -> index in vms */
	struct ht_guest_trace *vms;
	size_t n, cap;
};

void ht_guest_traces_init(struct ht_guest_traces *t);
void ht_guest_traces_free(struct ht_guest_traces *t);
/* Takes r if it is one of the trace's nr (else does nothing). 0 or -ENOMEM. */
int ht_guest_traces_add(struct ht_guest_traces *t, const struct ht_record *r);
/* Rebuilds the lines and fits the pairs of every VM. 0 or -ENOMEM. */
int ht_guest_traces_finish(struct ht_guest_traces *t);
/* The VMs in their process order. */
const struct ht_guest_trace *ht_guest_traces_get(const struct ht_guest_traces *t, size_t i);
/* The VM's trace, by its process id (after ht_guest_traces_finish), or NULL. */
const struct ht_guest_trace *ht_guest_traces_find(const struct ht_guest_traces *t, uint32_t host_pid);
/* Is nr one of the trace's? */
bool ht_guest_trace_nr(uint32_t nr);

#endif
