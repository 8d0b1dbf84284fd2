// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `report --initcalls`: a guest kernel's boot, as its own trace tells it
 * (guest/boottrace replays it: decode/guest_trace.c), on the host's clock.
 * Per VM its initcall levels with their lengths, the time inside initcalls
 * and between them, and the slowest initcalls; as CSV every level and every
 * initcall. The guest's times go through the VM's fit of the replay's clock
 * pairs; without pairs they stay the guest's, and the report says so.
 */
#include "report/report_initcalls.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "common/escape.h"
#include "hypertrace/guest.h"
#include "reading/read_outcome.h"
#include "report/report_clock.h"
#include "tracefile/trace_reader.h"

/* How many initcalls the text shows, the slowest first. */
#define SLOWEST_SHOWN 15

static double secs(int64_t ns)
{
	return (double)ns / 1e9;
}

static bool on_host(const struct ht_guest_trace *g)
{
	return g->fit.used > 0;
}

/* A guest time on the host's clock (the guest's own without a fit). */
static uint64_t host_ns(const struct ht_guest_trace *g, uint64_t guest_ns)
{
	return on_host(g) ? ht_clock_fit_map(&g->fit, guest_ns) : guest_ns;
}

static int64_t host_len(const struct ht_guest_trace *g, uint64_t start, uint64_t end)
{
	return (int64_t)(host_ns(g, end) - host_ns(g, start));
}

static void put_text(FILE *out, const char *s, size_t len)
{
	char buf[HT_ESC_SIZE(HT_GUEST_TRACE_TEXT_MAX)];

	ht_escape_mem(buf, sizeof(buf), s, len, HT_ESC_TEXT);
	fputs(buf, out);
}

static void put_csv(FILE *out, const char *s, size_t len)
{
	char buf[HT_ESC_SIZE(HT_GUEST_TRACE_TEXT_MAX)];

	ht_escape_mem(buf, sizeof(buf), s ? s : "", s ? len : 0, HT_ESC_TEXT);
	ht_csv_quote(out, buf);
}

static void print_clock(FILE *out, const struct ht_guest_trace *g, const char *indent)
{
	const struct ht_clock_fit *f = &g->fit;

	if (!on_host(g)) {
		fprintf(out, "%sclock: no clock pair (%" PRIu64 " syncs, none of whose marker lines is in the trace): times are the guest trace's own clock\n",
			indent, g->syncs);
		return;
	}
	fprintf(out, "%sclock: %zu pairs, %zu used, %zu refused (%zu out of order, %zu off the line); rate %+.3f ppm%s; residual p50 %.3f us, p99 %.3f us, max %.3f us\n",
		indent, f->pairs, f->used, f->refused_order + f->refused_outlier + f->refused_segments, f->refused_order,
		f->refused_outlier,
		ht_clock_fit_ppm(f), f->has_rate ? "" : " (one guest time: taken as 1)", f->residual_p50 / 1e3,
		f->residual_p99 / 1e3, f->residual_max / 1e3);
	ht_print_clock_steps(out, f, indent);
}

static int by_length_desc(const void *a, const void *b)
{
	const struct ht_initcall *x = *(const struct ht_initcall *const *)a, *y = *(const struct ht_initcall *const *)b;
	uint64_t lx = x->end_ns - x->start_ns, ly = y->end_ns - y->start_ns;

	if (lx != ly)
		return lx < ly ? 1 : -1;
	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

static void print_name(FILE *out, const struct ht_initcall *c)
{
	put_text(out, c->name, c->name_len);
	if (c->module) {
		fputs(" [", out);
		put_text(out, c->module, c->module_len);
		fputc(']', out);
	}
}

static void print_level_name(FILE *out, const struct ht_initcalls *c, int level)
{
	if (level < 0)
		fputs("modules", out);
	else
		put_text(out, c->levels[level].name, c->levels[level].name_len);
}

static void print_slowest(FILE *out, const struct ht_guest_trace *g, const struct ht_initcalls *c, uint64_t origin,
			  const char *indent)
{
	const struct ht_initcall **all = malloc((c->ncalls + 1) * sizeof(*all));
	size_t n = 0;

	if (!all)
		return;
	for (size_t i = 0; i < c->ncalls; i++)
		if (c->calls[i].finished)
			all[n++] = &c->calls[i];
	qsort(all, n, sizeof(*all), by_length_desc);
	if (n)
		fprintf(out, "%sthe slowest initcalls:\n", indent);
	for (size_t i = 0; i < n && i < SLOWEST_SHOWN; i++) {
		fprintf(out, "%s  %10.6f s  ", indent, secs(host_len(g, all[i]->start_ns, all[i]->end_ns)));
		print_name(out, all[i]);
		fputs(" (", out);
		print_level_name(out, c, all[i]->level);
		fprintf(out, ", ret %lld, from %.6f s)\n", all[i]->ret, secs((int64_t)(host_ns(g, all[i]->start_ns) - origin)));
	}
	free(all);
}

void ht_print_initcalls(FILE *out, const struct ht_guest_trace *g, const struct ht_initcalls *c, uint64_t origin_ns,
			const char *origin_name, const char *indent)
{
	fprintf(out, "%sthe guest's own trace (boottrace): %zu lines", indent, g->nlines);
	if (g->ended)
		fprintf(out, " (it sent %" PRIu64 "; %" PRIu64 " not parsed, %" PRIu64 " cut, %" PRIu64 " lost in the guest's buffer)",
			g->said_lines, g->said_unparsed, g->said_cut, g->said_lost);
	else
		fputs(" (its end never came: the guest crashed or stopped, boottrace was killed, or the recording ended first)", out);
	if (g->stray)
		fprintf(out, ", %" PRIu64 " pieces of text that continue no line", g->stray);
	fputc('\n', out);
	print_clock(out, g, indent);
	fprintf(out, "%sinitcalls: %zu, in %zu levels and %" PRIu64 " of modules; %" PRIu64 " without their return, %" PRIu64 " returns without their start\n",
		indent, c->ncalls, c->nlevels, c->module_calls, c->unfinished, c->finish_unmatched);
	if (c->levels_back)
		fprintf(out, "%s%" PRIu64 " level%s began before the level before %s (the trace's times go back): each such earlier level is shown ending where it began\n",
			indent, c->levels_back, c->levels_back == 1 ? "" : "s", c->levels_back == 1 ? "it" : "them");
	if (!c->ncalls && !c->nlevels) {
		fprintf(out, "%s(no initcall events: boot the guest with trace_event=initcall:initcall_level,initcall:initcall_start,initcall:initcall_finish)\n",
			indent);
		return;
	}
	fprintf(out, "%s%-12s %12s %12s %9s %14s %12s\n", indent, "level", "start s", "length s", "initcalls", "in initcalls s",
		"between s");
	for (size_t i = 0; i < c->nlevels; i++) {
		const struct ht_initcall_level *lv = &c->levels[i];
		int64_t len = host_len(g, lv->start_ns, lv->end_ns);
		int64_t in = on_host(g) ? (int64_t)((long double)lv->in_initcalls_ns * g->fit.rate) : (int64_t)lv->in_initcalls_ns;

		fputs(indent, out);
		char name[HT_ESC_SIZE(32)];
		ht_escape_mem(name, sizeof(name), lv->name, lv->name_len < 32 ? lv->name_len : 32, HT_ESC_TEXT);
		fprintf(out, "%-12s %12.6f %12.6f %9zu %14.6f %12.6f\n", name,
			secs((int64_t)(host_ns(g, lv->start_ns) - origin_ns)), secs(len), lv->initcalls, secs(in), secs(len - in));
	}
	if (c->module_calls)
		fprintf(out, "%s%-12s %12s %12s %9" PRIu64 " %14.6f\n", indent, "modules", "-", "-", c->module_calls,
			secs((int64_t)c->module_ns));
	fprintf(out, "%s(start: seconds from %s%s; between: the level's time outside its initcalls)\n", indent, origin_name,
		on_host(g) ? ", on the host's clock" : ", on the guest trace's clock");
	print_slowest(out, g, c, origin_ns, indent);
}

static void print_csv_rows(FILE *out, const struct ht_guest_trace *g, const struct ht_initcalls *c, const char *vm)
{
	for (size_t i = 0; i < c->nlevels; i++) {
		const struct ht_initcall_level *lv = &c->levels[i];

		fprintf(out, "%u,", (unsigned int)g->host_pid);
		ht_csv_fputs(out, vm ? vm : "");
		fprintf(out, ",level,%zu,", i);
		put_csv(out, lv->name, lv->name_len);
		fputc(',', out);
		put_csv(out, lv->name, lv->name_len);
		fprintf(out, ",,%u,,%" PRIu64 ",%" PRIu64 ",", lv->tid, lv->start_ns, lv->end_ns - lv->start_ns);
		if (on_host(g))
			fprintf(out, "%" PRIu64 ",%" PRId64, host_ns(g, lv->start_ns), host_len(g, lv->start_ns, lv->end_ns));
		else
			fputc(',', out);
		fprintf(out, ",1,,%zu\n", lv->initcalls);
	}
	for (size_t i = 0; i < c->ncalls; i++) {
		const struct ht_initcall *ic = &c->calls[i];

		fprintf(out, "%u,", (unsigned int)g->host_pid);
		ht_csv_fputs(out, vm ? vm : "");
		fprintf(out, ",initcall,%zu,", i);
		if (ic->level < 0)
			fputs("modules", out);
		else
			put_csv(out, c->levels[ic->level].name, c->levels[ic->level].name_len);
		fputc(',', out);
		put_csv(out, ic->name, ic->name_len);
		fputc(',', out);
		put_csv(out, ic->module, ic->module_len);
		fprintf(out, ",%u,%u,%" PRIu64 ",", ic->tid, ic->cpu, ic->start_ns);
		if (ic->finished)
			fprintf(out, "%" PRIu64, ic->end_ns - ic->start_ns);
		fputc(',', out);
		if (on_host(g))
			fprintf(out, "%" PRIu64, host_ns(g, ic->start_ns));
		fputc(',', out);
		if (on_host(g) && ic->finished)
			fprintf(out, "%" PRId64, host_len(g, ic->start_ns, ic->end_ns));
		fprintf(out, ",%d,", ic->finished);
		if (ic->finished)
			fprintf(out, "%lld", ic->ret);
		fputs(",\n", out);
	}
}

/* The host time the text counts from: the first level's start (else the first line's). */
static uint64_t origin_of(const struct ht_guest_trace *g, const struct ht_initcalls *c)
{
	if (c->nlevels)
		return host_ns(g, c->levels[0].start_ns);
	return g->nlines ? host_ns(g, g->lines[0].guest_ns) : 0;
}

static int print_all(const struct ht_report_config *cfg, const struct ht_guest_traces *t, struct ht_reader *reader)
{
	if (cfg->mode == HT_REPORT_CSV)
		fputs("pid,vm_name,kind,index,level,name,module,tid,cpu,guest_start_ns,guest_length_ns,start_ns,length_ns,"
		      "finished,ret,initcalls\n",
		      stdout);
	for (size_t i = 0; i < t->n; i++) {
		const struct ht_guest_trace *g = ht_guest_traces_get(t, i);
		const char *vm = ht_reader_vm_name(reader, g->host_pid);
		struct ht_initcalls c;

		if (ht_initcalls_build(g, &c))
			return -1;
		if (cfg->mode == HT_REPORT_CSV) {
			print_csv_rows(stdout, g, &c, vm);
		} else {
			uint64_t origin = origin_of(g, &c);

			printf("VM ");
			if (vm) {
				putchar('\'');
				ht_escape_fputs(stdout, vm, HT_ESC_TEXT);
				fputs("' ", stdout);
			}
			printf("(process %u): host time of its first level %.9f s (CLOCK_MONOTONIC)\n", (unsigned int)g->host_pid,
			       secs((int64_t)origin));
			ht_print_initcalls(stdout, g, &c, origin, "the first level's start", "  ");
		}
		ht_initcalls_free(&c);
	}
	return 0;
}

int ht_report_initcalls(struct ht_report_config *cfg)
{
	struct ht_guest_traces t;
	struct ht_reader *reader = NULL;
	struct ht_record rec;
	char err[512];
	int status, oom = 0;

	ht_guest_traces_init(&t);
	if (ht_reader_open(cfg->path, &reader, err, sizeof(err))) {
		status = ht_runtime_error("%s", err);
		goto out;
	}
	if (ht_selection_resolve(&cfg->selection, ht_reader_header(reader), err, sizeof(err))) {
		status = ht_usage_error("report", "%s", err);
		goto out;
	}
	while (!oom && ht_reader_next(reader, &rec) == 1)
		if (ht_guest_trace_nr(rec.nr) && ht_selection_match_vm(&cfg->selection, rec.host_pid, reader))
			oom = ht_guest_traces_add(&t, &rec) != 0;
	if (oom || ht_guest_traces_finish(&t) || print_all(cfg, &t, reader)) {
		status = ht_runtime_error("out of memory for the guest traces of %s", cfg->path);
		goto out;
	}
	fflush(stdout);
	if (!t.n)
		fprintf(stderr, "hypertrace-bpf: %s holds no guest trace: run guest/boottrace in the guest while recording with nr %u to %u selected (record --nr %u-%u)\n",
			cfg->path, HT_GUEST_NR_TRACE_LINE, HT_GUEST_NR_TRACE_REPLAY, HT_GUEST_NR_TRACE_LINE,
			HT_GUEST_NR_TRACE_REPLAY);
	status = ht_report_read_outcome(cfg->path, ht_reader_status(reader));
out:
	ht_reader_close(reader);
	ht_guest_traces_free(&t);
	return status;
}
