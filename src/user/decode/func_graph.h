/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Guest function graph from func_entry/func_exit events (nr 1105/1106), as
 * ftrace's function_graph tracer draws it: per vCPU, in time order, calls
 * nested by depth, a leaf call on one line with its duration, a call with
 * children opened with "{" and closed with "}" and its duration. Durations
 * are host time between the two hypercalls (kvm_exit to kvm_exit).
 *
 * Entries and exits are paired per guest task (tid) of a VM, across vCPUs: a
 * task may sleep in a call and return on another vCPU. An exit whose
 * function is not on its task's stack (the entry came before the recording)
 * is shown unpaired; entries left open at the end are counted.
 *
 * Whatever the guest sends, time and output are linear in the events (plus
 * a sort): tasks and functions are found by hash, an exit that matches no
 * open call is told in one lookup, and the indentation stops growing at
 * HT_FGRAPH_DRAWN_DEPTH.
 */
#ifndef HT_DECODE_FUNC_GRAPH_H
#define HT_DECODE_FUNC_GRAPH_H

#include <stdint.h>
#include <stdio.h>
#include "decode/guest_symbols.h"
#include "hypertrace/record.h"

/* Deeper calls are drawn at this indentation, with "[depth N] " before them. */
#define HT_FGRAPH_DRAWN_DEPTH 32

struct ht_fgraph;

/* syms may be NULL: addresses are then printed in hex. */
struct ht_fgraph *ht_fgraph_new(const struct ht_symtab *syms);
/* Takes func_entry/func_exit records, ignores others. Returns -1 when out of memory. */
int ht_fgraph_observe(struct ht_fgraph *g, const struct ht_record *r);

/* Counts of the whole graph, for tests and the summary line. */
struct ht_fgraph_stats {
	uint64_t entries, exits;
	uint64_t paired;           /* entry and exit matched */
	uint64_t unpaired_exits;   /* exit with no entry on its task's stack */
	uint64_t open_entries;     /* entry never exited (still running at the end, or an exit lost) */
	unsigned int max_depth;    /* deepest nesting seen (0 = top level) */
};

/* Pairs the calls and prints the graph and a per-function table. start_ns: time 0 of the TIME column. */
void ht_fgraph_print(struct ht_fgraph *g, FILE *out, uint64_t start_ns, struct ht_fgraph_stats *stats);
void ht_fgraph_free(struct ht_fgraph *g);

#endif
