// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "decode/func_graph.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "common/escape.h"
#include "common/hashmap.h"
#include "common/grow.h"
#include "decode/guest_event.h"
#include "hypertrace/guest.h"

#define NO_MATCH SIZE_MAX

struct fg_event {
	uint64_t t;        /* exit_ns of the hypercall */
	uint64_t addr;
	uint32_t host_pid; /* the VM */
	uint32_t tid;      /* guest task */
	uint16_t vcpu;
	uint16_t cpu_id;   /* guest CPU as the guest saw it */
	bool exit;
	/* Filled by pairing: */
	unsigned int depth;
	size_t match;      /* index of the other half, or NO_MATCH */
	bool leaf;         /* entry whose exit is the next event on its vCPU: one line */
};

struct ht_fgraph {
	const struct ht_symtab *syms;
	struct ht_gev_decoder gev;
	struct fg_event *ev;
	size_t n, cap;
};

struct ht_fgraph *ht_fgraph_new(const struct ht_symtab *syms)
{
	struct ht_fgraph *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	if (ht_gev_decoder_init(&g->gev)) {
		free(g);
		return NULL;
	}
	g->syms = syms;
	return g;
}

void ht_fgraph_free(struct ht_fgraph *g)
{
	if (!g)
		return;
	free(g->ev);
	free(g);
}

int ht_fgraph_observe(struct ht_fgraph *g, const struct ht_record *r)
{
	struct ht_gev ev;

	ht_gev_decode(&g->gev, r, &ev);
	if (ev.kind != HT_GEV_FUNC_ENTRY && ev.kind != HT_GEV_FUNC_EXIT)
		return 0;
	if (HT_GROW(g->ev, g->cap, g->n + 1, 1024))
		return -1;
	g->ev[g->n++] = (struct fg_event){
		.t = r->exit_ns,
		.addr = ev.u.func.addr,
		.host_pid = r->host_pid,
		.tid = ev.u.func.tid,
		.vcpu = r->vcpu_id,
		.cpu_id = (uint16_t)ev.cpu,
		.exit = ev.kind == HT_GEV_FUNC_EXIT,
		.match = NO_MATCH,
	};
	return 0;
}

/* Order of the pairing walk: per VM, by time (file order breaks ties). */
static const struct fg_event *sort_base;
static int cmp_by_vm_time(const void *a, const void *b)
{
	const struct fg_event *x = &sort_base[*(const size_t *)a], *y = &sort_base[*(const size_t *)b];

	if (x->host_pid != y->host_pid)
		return x->host_pid < y->host_pid ? -1 : 1;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/* Order of printing: per VM, per vCPU, by time. */
static int cmp_by_vcpu_time(const void *a, const void *b)
{
	const struct fg_event *x = &sort_base[*(const size_t *)a], *y = &sort_base[*(const size_t *)b];

	if (x->host_pid != y->host_pid)
		return x->host_pid < y->host_pid ? -1 : 1;
	if (x->vcpu != y->vcpu)
		return x->vcpu < y->vcpu ? -1 : 1;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/*
 * One task's stack of open entries (indexes into ev), and how many of them
 * each function has: an exit of a function with none open is told at once,
 * without a walk down the stack (a guest could send many such exits).
 */
struct fg_task {
	size_t *stack;
	size_t depth, cap;
	struct ht_hashmap open; /* addr -> entries of it on the stack */
};

static void task_free(struct fg_task *t)
{
	free(t->stack);
	ht_hashmap_clear(&t->open);
	free(t);
}

/* The task (host_pid, tid), created if new; NULL when out of memory. */
static struct fg_task *task_of(struct ht_hashmap *tasks, uint32_t host_pid, uint32_t tid)
{
	long key = (long)((uint64_t)host_pid << 32 | tid);
	struct fg_task *t;

	if (ht_hashmap_find(tasks, key, (long *)&t))
		return t;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	ht_hashmap_init(&t->open, ht_hash_long, ht_equal_long, NULL);
	if (ht_hashmap_insert(tasks, key, (long)t, HT_HASHMAP_ADD, NULL, NULL)) {
		task_free(t);
		return NULL;
	}
	return t;
}

/* Adds delta to the open entries of addr in t. */
static int count_open(struct fg_task *t, uint64_t addr, long delta)
{
	long n = 0;

	ht_hashmap_find(&t->open, (long)addr, &n);
	if (n + delta == 0)
		return ht_hashmap_delete(&t->open, (long)addr, NULL, NULL) ? 0 : -1;
	return ht_hashmap_insert(&t->open, (long)addr, n + delta, HT_HASHMAP_SET, NULL, NULL);
}

static int push_entry(struct ht_fgraph *g, struct fg_task *t, size_t i, struct ht_fgraph_stats *st)
{
	struct fg_event *e = &g->ev[i];

	if (HT_GROW(t->stack, t->cap, t->depth + 1, 16))
		return -1;
	st->entries++;
	e->depth = (unsigned int)t->depth;
	if (e->depth > st->max_depth)
		st->max_depth = e->depth;
	t->stack[t->depth++] = i;
	return count_open(t, e->addr, 1);
}

/*
 * Pairs exit i with the innermost open call of its function; calls above
 * that one lost their exits and are popped. Each entry is popped once, so
 * pairing is linear in the events.
 */
static int pop_exit(struct ht_fgraph *g, struct fg_task *t, size_t i, struct ht_fgraph_stats *st)
{
	struct fg_event *e = &g->ev[i];

	st->exits++;
	if (!ht_hashmap_find(&t->open, (long)e->addr, NULL)) {
		st->unpaired_exits++;
		e->depth = (unsigned int)t->depth;
		return 0;
	}
	for (;;) {
		size_t top = t->stack[--t->depth];

		if (count_open(t, g->ev[top].addr, -1))
			return -1;
		if (g->ev[top].addr == e->addr) {
			e->depth = (unsigned int)t->depth;
			e->match = top;
			g->ev[top].match = i;
			st->paired++;
			return 0;
		}
		st->open_entries++;
	}
}

static int pair(struct ht_fgraph *g, const size_t *order, struct ht_fgraph_stats *st)
{
	struct ht_hashmap tasks = HT_HASHMAP_INIT(ht_hash_long, ht_equal_long, NULL);
	struct ht_hashmap_entry *cur;
	size_t bkt;
	int ret = 0;

	for (size_t k = 0; k < g->n && !ret; k++) {
		size_t i = order[k];
		struct fg_task *t = task_of(&tasks, g->ev[i].host_pid, g->ev[i].tid);

		if (!t)
			ret = -1;
		else
			ret = g->ev[i].exit ? pop_exit(g, t, i, st) : push_entry(g, t, i, st);
	}
	ht_hashmap_for_each(&tasks, cur, bkt) {
		struct fg_task *t = cur->pvalue;

		st->open_entries += t->depth;
		task_free(t);
	}
	ht_hashmap_clear(&tasks);
	return ret;
}

/* The function's name, escaped (a guest's kallsyms chooses it), or its address. */
static void name_of(const struct ht_fgraph *g, uint64_t addr, char *buf, size_t len)
{
	char sym[HT_SYM_TEXT_MAX];

	if (!g->syms || !ht_symtab_function(g->syms, addr, sym, sizeof(sym))) {
		snprintf(buf, len, "0x%" PRIx64, addr);
		return;
	}
	ht_escape(buf, len, sym, HT_ESC_TEXT);
}

/*
 * The indentation of a call at depth: two spaces a level, as ftrace draws
 * it, up to HT_FGRAPH_DRAWN_DEPTH levels; deeper calls are drawn there with
 * their depth as a number. A guest can nest calls as deep as it likes: each
 * line stays short, and the output linear in the events.
 */
#define INDENT_SIZE (2 * HT_FGRAPH_DRAWN_DEPTH + 24)

static const char *indent(char pad[INDENT_SIZE], unsigned int depth)
{
	unsigned int drawn = depth < HT_FGRAPH_DRAWN_DEPTH ? depth : HT_FGRAPH_DRAWN_DEPTH;

	memset(pad, ' ', 2 * drawn);
	if (depth < HT_FGRAPH_DRAWN_DEPTH)
		pad[2 * drawn] = '\0';
	else
		snprintf(pad + 2 * drawn, INDENT_SIZE - 2 * drawn, "[depth %u] ", depth);
	return pad;
}

/* ftrace's duration column: a mark for long calls, then microseconds. */
static void format_duration(char *buf, size_t len, const struct fg_event *e, const struct ht_fgraph *g)
{
	uint64_t ns;
	char mark = ' ';

	if (e->match == NO_MATCH) {
		snprintf(buf, len, "%14s", "");
		return;
	}
	ns = g->ev[e->match].t;
	ns = e->exit ? e->t - ns : ns - e->t;
	if (ns > 1000000000ull)
		mark = '$';
	else if (ns > 100000000ull)
		mark = '@';
	else if (ns > 10000000ull)
		mark = '*';
	else if (ns > 1000000ull)
		mark = '#';
	else if (ns > 100000ull)
		mark = '!';
	else if (ns > 10000ull)
		mark = '+';
	snprintf(buf, len, "%c %9.3f us", mark, (double)ns / 1000.0);
}

/* Paired calls of one function of one VM; the key of its own entry in the function table. */
struct fn_stat {
	uint32_t host_pid;
	uint64_t addr, calls, total_ns, max_ns;
};

static size_t hash_fn(long key, void *ctx)
{
	const struct fn_stat *f = (const struct fn_stat *)key;

	(void)ctx;
	return (size_t)ht_hash_mix(ht_hash_u64(f->addr), f->host_pid);
}

static bool equal_fn(long a, long b, void *ctx)
{
	const struct fn_stat *x = (const struct fn_stat *)a, *y = (const struct fn_stat *)b;

	(void)ctx;
	return x->host_pid == y->host_pid && x->addr == y->addr;
}

static int cmp_fn(const void *a, const void *b)
{
	const struct fn_stat *x = *(const struct fn_stat *const *)a, *y = *(const struct fn_stat *const *)b;

	if (x->host_pid != y->host_pid)
		return x->host_pid < y->host_pid ? -1 : 1;
	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The paired calls of every function, found by hash (a guest may call many functions). */
static int count_calls(const struct ht_fgraph *g, struct ht_hashmap *fns)
{
	for (size_t i = 0; i < g->n; i++) {
		const struct fg_event *e = &g->ev[i];
		struct fn_stat probe = { .host_pid = e->host_pid, .addr = e->addr }, *f;

		if (e->exit || e->match == NO_MATCH)
			continue;
		if (!ht_hashmap_find(fns, (long)&probe, (long *)&f)) {
			f = malloc(sizeof(*f));
			if (!f)
				return -1;
			*f = probe;
			if (ht_hashmap_insert(fns, (long)f, (long)f, HT_HASHMAP_ADD, NULL, NULL)) {
				free(f);
				return -1;
			}
		}
		uint64_t ns = g->ev[e->match].t - e->t;
		f->calls++;
		f->total_ns += ns;
		if (ns > f->max_ns)
			f->max_ns = ns;
	}
	return 0;
}

static void print_function_table(const struct ht_fgraph *g, FILE *out)
{
	struct ht_hashmap fns = HT_HASHMAP_INIT(hash_fn, equal_fn, NULL);
	struct ht_hashmap_entry *cur;
	struct fn_stat **fs;
	size_t nfs = 0, bkt;
	char name[HT_ESC_SIZE(HT_SYM_TEXT_MAX)];
	int err = count_calls(g, &fns);

	fs = malloc((ht_hashmap_size(&fns) ? ht_hashmap_size(&fns) : 1) * sizeof(*fs));
	if (err || !fs)
		fprintf(out, "\n# paired calls per function: out of memory\n");
	ht_hashmap_for_each(&fns, cur, bkt)
		if (fs)
			fs[nfs++] = cur->pvalue;
	if (!err && fs) {
		qsort(fs, nfs, sizeof(*fs), cmp_fn);
		for (size_t k = 0; k < nfs; k++) {
			if (k == 0 || fs[k]->host_pid != fs[k - 1]->host_pid)
				fprintf(out, "\n# paired calls per function (VM pid %u)\n#%10s %14s %12s %12s  %s\n",
					fs[k]->host_pid, "calls", "total_us", "avg_us", "max_us", "function");
			name_of(g, fs[k]->addr, name, sizeof(name));
			fprintf(out, " %10" PRIu64 " %14.3f %12.3f %12.3f  %s\n", fs[k]->calls,
				(double)fs[k]->total_ns / 1000.0,
				(double)fs[k]->total_ns / 1000.0 / (double)fs[k]->calls,
				(double)fs[k]->max_ns / 1000.0, name);
		}
	}
	ht_hashmap_for_each(&fns, cur, bkt)
		free(cur->pvalue);
	ht_hashmap_clear(&fns);
	free(fs);
}

void ht_fgraph_print(struct ht_fgraph *g, FILE *out, uint64_t start_ns, struct ht_fgraph_stats *stats)
{
	struct ht_fgraph_stats st = { 0 };
	size_t *order = malloc((g->n ? g->n : 1) * sizeof(*order));
	char name[HT_ESC_SIZE(HT_SYM_TEXT_MAX)], dur[32], pad[INDENT_SIZE];

	if (!order) {
		fprintf(out, "# function graph: out of memory\n");
		return;
	}
	for (size_t i = 0; i < g->n; i++)
		order[i] = i;
	sort_base = g->ev;
	qsort(order, g->n, sizeof(*order), cmp_by_vm_time);
	if (pair(g, order, &st)) {
		fprintf(out, "# function graph: out of memory\n");
		free(order);
		return;
	}
	qsort(order, g->n, sizeof(*order), cmp_by_vcpu_time);
	if (g->n == 0)
		fprintf(out, "# function graph: no func_entry/func_exit events (nr %u/%u) in the trace\n",
			HT_GUEST_NR_FUNC_ENTRY, HT_GUEST_NR_FUNC_EXIT);
	for (size_t k = 0; k < g->n; k++) {
		const struct fg_event *e = &g->ev[order[k]];
		const struct fg_event *prev = k ? &g->ev[order[k - 1]] : NULL;
		bool new_vcpu = !prev || prev->host_pid != e->host_pid || prev->vcpu != e->vcpu;

		if (new_vcpu) {
			fprintf(out, "%s# vCPU %u of VM pid %u\n#     TIME(s)  CPU  DURATION        FUNCTION CALLS\n",
				k ? "\n" : "", e->vcpu, e->host_pid);
			/* Whose calls these are, from the first: later changes say so too. */
			fprintf(out, " ------------------------------------------ tid %u\n", e->tid);
		} else if (prev->tid != e->tid) {
			fprintf(out, " ------------------------------------------ tid %u => tid %u\n", prev->tid, e->tid);
		}
		/* A leaf: the entry whose exit is the very next event of its vCPU. */
		if (!e->exit && e->match != NO_MATCH && k + 1 < g->n && order[k + 1] == e->match) {
			name_of(g, e->addr, name, sizeof(name));
			format_duration(dur, sizeof(dur), e, g);
			fprintf(out, "%13.6f %3u) %s |  %s%s();\n", (double)(e->t - start_ns) / 1e9, e->cpu_id,
				dur, indent(pad, e->depth), name);
			k++;
			continue;
		}
		name_of(g, e->addr, name, sizeof(name));
		if (!e->exit) {
			fprintf(out, "%13.6f %3u) %14s |  %s%s() {\n", (double)(e->t - start_ns) / 1e9, e->cpu_id,
				"", indent(pad, e->depth), name);
		} else {
			format_duration(dur, sizeof(dur), e, g);
			fprintf(out, "%13.6f %3u) %s |  %s} /* %s */%s\n", (double)(e->t - start_ns) / 1e9,
				e->cpu_id, dur, indent(pad, e->depth), name,
				e->match == NO_MATCH ? " (entry not in the trace)" : "");
		}
	}
	fprintf(out, "\n# %" PRIu64 " entries, %" PRIu64 " exits: %" PRIu64 " paired calls, %" PRIu64
		     " exits without entry, %" PRIu64 " entries without exit; max depth %u\n",
		st.entries, st.exits, st.paired, st.unpaired_exits, st.open_entries, st.max_depth);
	print_function_table(g, out);
	free(order);
	if (stats)
		*stats = st;
}
