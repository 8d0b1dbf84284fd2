// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `report --clock`: each VM's guest clocks on the host's clock. The guest
 * module's clock_pair events (nr 1107) carry the guest's local_clock
 * (printk's), ftrace's local trace clock and CLOCK_MONOTONIC; the host's time of each one's exit pairs with them
 * (decode/clock_fit.c fits the line). Only the module's own events count:
 * a forged one (not from its text, see decode/guest_origin.c) is left out,
 * as every other view leaves it out.
 */
#include "report/report_clock.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "cli.h"
#include "common/escape.h"
#include "common/escape_stream.h"
#include "common/grow.h"
#include "common/hashmap.h"
#include "decode/clock_fit.h"
#include "decode/clock_map.h"
#include "decode/ctf_clock_map.h"
#include "decode/guest_origin.h"
#include "decode/guest_trace.h"
#include "hypertrace/guest.h"
#include "reading/read_outcome.h"
#include "tracefile/trace_reader.h"

/* The guest clocks a clock pair carries: a0 local_clock (printk), a3 ftrace's "local" trace clock, a1 CLOCK_MONOTONIC. */
enum guest_clock { CLOCK_LOCAL, CLOCK_TRACE, CLOCK_MONO, NCLOCKS };
static const char *const clock_names[NCLOCKS] = { "printk", "ftrace", "monotonic" };

struct vm_pairs {
	uint32_t pid;
	struct ht_clock_pair *pairs[NCLOCKS];
	size_t n, cap;
	const struct ht_guest_trace *markers; /* the guest's own trace replayed by boottrace, if any */
};

struct clock_reading {
	struct ht_hashmap vms; /* pid -> struct vm_pairs * */
	unsigned long long forged;
	/* boottrace's replays: their marker pairs fit the guest trace's own clock, whichever it is */
	struct ht_guest_traces traces;
};

/* The row of a guest trace's marker pairs (guest/boottrace), beside the module's three clocks. */
static const char markers_name[] = "trace-markers";

static struct vm_pairs *vm_of(struct clock_reading *c, uint32_t pid)
{
	struct vm_pairs *v;

	if (ht_hashmap_find(&c->vms, pid, (long *)&v))
		return v;
	v = calloc(1, sizeof(*v));
	if (!v || ht_hashmap_insert(&c->vms, pid, (long)v, HT_HASHMAP_ADD, NULL, NULL)) {
		free(v);
		return NULL;
	}
	v->pid = pid;
	return v;
}

static int take_pair(struct clock_reading *c, const struct ht_record *r)
{
	struct vm_pairs *v = vm_of(c, r->host_pid);
	size_t cap;

	if (!v)
		return -1;
	for (int k = 0; k < NCLOCKS; k++) {
		cap = v->cap;
		if (HT_GROW(v->pairs[k], cap, v->n + 1, 64))
			return -1;
	}
	v->cap = cap;
	v->pairs[CLOCK_LOCAL][v->n] = (struct ht_clock_pair){ .guest_ns = r->a0, .host_ns = r->exit_ns };
	v->pairs[CLOCK_TRACE][v->n] = (struct ht_clock_pair){ .guest_ns = r->a3, .host_ns = r->exit_ns };
	v->pairs[CLOCK_MONO][v->n] = (struct ht_clock_pair){ .guest_ns = r->a1, .host_ns = r->exit_ns };
	v->n++;
	return 0;
}

static int by_pid(const void *a, const void *b)
{
	const struct vm_pairs *x = *(const struct vm_pairs *const *)a, *y = *(const struct vm_pairs *const *)b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static void print_vm_name(FILE *out, const char *name, bool csv)
{
	if (csv)
		ht_csv_fputs(out, name ? name : "");
	else if (name) {
		fputc('\'', out);
		ht_escape_fputs(out, name, HT_ESC_TEXT);
		fputs("' ", out);
	}
}

void ht_print_clock_steps(FILE *out, const struct ht_clock_fit *f, const char *indent)
{
	if (f->nsegments < 2)
		return;
	fprintf(out, "%sthe guest's clock stepped %zu time%s against the host's (a VM paused, or its clock set): largest step %.6f s; each side fitted on a line of its own",
		indent, f->nsegments - 1, f->nsegments == 2 ? "" : "s", f->max_step_ns / 1e9);
	if (f->refused_segments)
		fprintf(out, " (%zu pairs after the first %d sides refused)", f->refused_segments, HT_CLOCK_FIT_MAX_SEGMENTS);
	fputc('\n', out);
	for (size_t i = 0; i < f->nsegments; i++) {
		const struct ht_clock_segment *g = &f->segments[i];

		fprintf(out, "%s  from host %.9f s: %zu pairs, host ns = %.0Lf + guest ns x %.12Lf", indent,
			g->host_first / 1e9, g->used, g->intercept, g->rate);
		if (i)
			fprintf(out, ", step %+.6f s", g->step_ns / 1e9);
		fputc('\n', out);
	}
}

static void print_fit_text(FILE *out, const char *clock, const struct ht_clock_fit *f)
{
	fprintf(out, "  guest %-9s host ns = %.0Lf + guest ns", clock, f->intercept);
	if (f->has_rate)
		fprintf(out, " x %.12Lf (%+.3f ppm)", f->rate, ht_clock_fit_ppm(f));
	else
		fputs(" (one guest time: the rate is not known, taken as 1)", out);
	fprintf(out, "\n    %zu pairs used, %zu refused (%zu out of order, %zu off the others' line);"
		" residual p50 %.3f us, p99 %.3f us, max %.3f us\n",
		f->used, f->refused_order + f->refused_outlier + f->refused_segments, f->refused_order,
		f->refused_outlier, f->residual_p50 / 1e3, f->residual_p99 / 1e3, f->residual_max / 1e3);
	ht_print_clock_steps(out, f, "    ");
}

static void print_text(FILE *out, const struct vm_pairs *v, const struct ht_clock_fit *fits, const char *name)
{
	fputs("VM ", out);
	print_vm_name(out, name, false);
	fprintf(out, "(process %u): %zu clock pair%s", (unsigned int)v->pid, v->n, v->n == 1 ? "" : "s");
	if (v->markers)
		fprintf(out, " from the module, %zu from boottrace's markers", v->markers->npairs);
	fputc('\n', out);
	if (v->n)
		for (int k = 0; k < NCLOCKS; k++)
			print_fit_text(out, clock_names[k], &fits[k]);
	if (v->markers)
		print_fit_text(out, markers_name, &v->markers->fit);
}

static void print_fit_csv(FILE *out, const struct vm_pairs *v, const char *name, const char *clock,
			  const struct ht_clock_fit *f)
{
	fprintf(out, "%u,", (unsigned int)v->pid);
	print_vm_name(out, name, true);
	fprintf(out, ",%s,%zu,%zu,%zu,%zu,%d,%.15Lg,%.0Lf,%.3f,%.0f,%.0f,%.0f,%zu,%.0f,%zu\n", clock, f->pairs, f->used,
		f->refused_order, f->refused_outlier, f->has_rate, f->rate, f->intercept, ht_clock_fit_ppm(f),
		f->residual_p50, f->residual_p99, f->residual_max, f->nsegments, f->max_step_ns, f->refused_segments);
}

static void print_csv(FILE *out, const struct vm_pairs *v, const struct ht_clock_fit *fits, const char *name)
{
	if (v->n)
		for (int k = 0; k < NCLOCKS; k++)
			print_fit_csv(out, v, name, clock_names[k], &fits[k]);
	if (v->markers)
		print_fit_csv(out, v, name, markers_name, &v->markers->fit);
}

static int print_fits(const struct ht_report_config *cfg, struct clock_reading *c, struct ht_reader *reader)
{
	size_t n = ht_hashmap_size(&c->vms), i = 0, bkt;
	struct vm_pairs **all = calloc(n ? n : 1, sizeof(*all));
	struct ht_hashmap_entry *cur;
	bool csv = cfg->mode == HT_REPORT_CSV;

	if (!all)
		return -1;
	ht_hashmap_for_each(&c->vms, cur, bkt)
		all[i++] = (struct vm_pairs *)cur->pvalue;
	qsort(all, n, sizeof(*all), by_pid);
	if (csv)
		puts("pid,vm_name,clock,pairs,used,refused_order,refused_outlier,has_rate,rate,intercept_ns,rate_ppm,"
		     "residual_p50_ns,residual_p99_ns,residual_max_ns,sides,max_step_ns,refused_sides");
	for (i = 0; i < n; i++) {
		struct ht_clock_fit fits[NCLOCKS];
		const char *name = ht_reader_vm_name(reader, all[i]->pid);

		for (int k = 0; k < NCLOCKS; k++)
			if (ht_clock_fit(all[i]->pairs[k], all[i]->n, &fits[k])) {
				free(all);
				return -1;
			}
		if (csv)
			print_csv(stdout, all[i], fits, name);
		else
			print_text(stdout, all[i], fits, name);
	}
	free(all);
	return 0;
}

/*
 * The one VM whose clocks map what --map or --map-ctf names (what): *out,
 * or the exit status that says why there is none.
 */
static int the_vm(const struct ht_report_config *cfg, struct clock_reading *c, const char *what, struct vm_pairs **out)
{
	struct ht_hashmap_entry *cur;
	struct vm_pairs *v = NULL;
	size_t bkt;

	if (ht_hashmap_size(&c->vms) > 1)
		return ht_usage_error("report", "%s holds the clock pairs of %zu VMs: choose the one that wrote %s with -p or --vm",
				      cfg->path, ht_hashmap_size(&c->vms), what);
	ht_hashmap_for_each(&c->vms, cur, bkt)
		v = (struct vm_pairs *)cur->pvalue;
	if (!v)
		return ht_runtime_error("%s holds no clock pair to map %s with: load the guest module (hypertrace_guest, clock_ms) while recording, with nr %u selected, or run guest/boottrace (nr %u-%u)",
					cfg->path, what, HT_GUEST_NR_CLOCK_PAIR, HT_GUEST_NR_TRACE_LINE,
					HT_GUEST_NR_TRACE_REPLAY);
	*out = v;
	return -1;
}

/*
 * Where a guest's own text is copied: to a file or a pipe, stdout itself,
 * byte for byte; to a terminal, a stream that escapes it (common/
 * escape_stream.h), as the guest's bytes must not drive the terminal. NULL
 * if that stream cannot be made.
 */
static FILE *guest_text_out(void)
{
	return isatty(STDOUT_FILENO) ? ht_escape_stream(stdout) : stdout;
}

/* Writes out what guest_text_out holds: 0, or -1 if a write failed. */
static int guest_text_end(FILE *out)
{
	int failed = out != stdout && fclose(out);

	return fflush(stdout) || failed ? -1 : 0;
}

/*
 * --map FILE: the guest's text with its times on the host's clock, by the
 * local clock's fit of the one VM selected. The exit status.
 */
static int map_text(const struct ht_report_config *cfg, struct clock_reading *c)
{
	struct vm_pairs *v = NULL;
	struct ht_clock_fit fit, trace_fit;
	long long mapped;
	FILE *in;
	int status = the_vm(cfg, c, cfg->clock_map, &v);

	if (status >= 0)
		return status;
	bool mono = cfg->map_clock == HT_MAP_CLOCK_MONO, from_stdin = !strcmp(cfg->clock_map, "-");
	const char *ftrace_by = mono ? "the monotonic clock's" : "ftrace's";

	if (ht_clock_fit(v->pairs[CLOCK_LOCAL], v->n, &fit) ||
	    ht_clock_fit(v->pairs[mono ? CLOCK_MONO : CLOCK_TRACE], v->n, &trace_fit))
		return ht_runtime_error("out of memory for the clock pairs of %s", cfg->path);
	/* boottrace's markers fit the trace's own clock, whichever trace_clock it was: the better fit for ftrace's text, unless --map-clock names the clock. */
	if (cfg->map_clock == HT_MAP_CLOCK_AUTO && v->markers && v->markers->fit.used) {
		trace_fit = v->markers->fit;
		ftrace_by = "boottrace's markers'";
	} else if (!v->n) {
		return ht_runtime_error("%s has no clock pair of VM process %u's module to map %s with%s", cfg->path,
					(unsigned int)v->pid, cfg->clock_map,
					cfg->map_clock != HT_MAP_CLOCK_AUTO ? ": its boottrace markers fit the trace's own clock; drop --map-clock" : "");
	}
	if (!(in = from_stdin ? stdin : fopen(cfg->clock_map, "r")))
		return ht_runtime_error("cannot read %s: %s", cfg->clock_map, strerror(errno));
	FILE *out = guest_text_out();
	if (!out) {
		if (!from_stdin)
			fclose(in);
		return ht_runtime_error("cannot map %s: out of memory", cfg->clock_map);
	}
	mapped = ht_clock_map_text(in, out, &trace_fit, &fit);
	int ended = guest_text_end(out);
	if (!from_stdin)
		fclose(in);
	if (mapped < 0 || ended)
		return ht_runtime_error("cannot map %s: a read or write failed", cfg->clock_map);
	fprintf(stderr, "hypertrace-bpf: %lld guest times of %s put on the host's monotonic clock by VM process %u's clocks (ftrace's text by %s: %zu pairs, residual max %.3f us; printk's: %zu, %.3f us%s)\n",
		mapped, cfg->clock_map, (unsigned int)v->pid, ftrace_by, trace_fit.used, trace_fit.residual_max / 1e3, fit.used,
		fit.residual_max / 1e3, fit.used == 1 || trace_fit.used == 1 ? "; one guest time: the rates are taken as 1" : "");
	if (trace_fit.nsegments > 1 || fit.nsegments > 1)
		fprintf(stderr, "hypertrace-bpf: the guest's clocks stepped against the host's (a VM paused, or a clock set; steps: ftrace's clock %zu, printk's %zu, the largest %.6f s): each time mapped by the line of its side (a time between two sides' pairs by the nearer side: where the step happened is not known)\n",
			trace_fit.nsegments ? trace_fit.nsegments - 1 : 0, fit.nsegments ? fit.nsegments - 1 : 0,
			fmax(trace_fit.max_step_ns, fit.max_step_ns) / 1e9);
	return HT_EXIT_OK;
}

/* Most bytes of CTF metadata read: LTTng's kernel metadata is some hundred KiB. */
#define CTF_METADATA_MAX (64u << 20)

/*
 * --map-ctf FILE: a guest CTF trace's metadata with its clocks on the
 * host's, by the monotonic clock's fit (LTTng's clock) of the one VM
 * selected, offset to UTC as the recording's start has it. The exit status.
 */
static int map_ctf(const struct ht_report_config *cfg, struct clock_reading *c, struct ht_reader *reader)
{
	const struct ht_file_header *h = ht_reader_header(reader);
	bool from_stdin = !strcmp(cfg->clock_map_ctf, "-"), local = cfg->map_clock == HT_MAP_CLOCK_LOCAL;
	struct vm_pairs *v = NULL;
	struct ht_clock_fit fit;
	unsigned char *data = NULL;
	size_t len = 0, cap = 0;
	char err[256];
	FILE *in, *meta_out;
	int n, ended, status = the_vm(cfg, c, cfg->clock_map_ctf, &v);

	if (status >= 0)
		return status;
	if (!v->n)
		return ht_runtime_error("%s has no clock pair of VM process %u's module to map %s with: load the guest module while recording",
					cfg->path, (unsigned int)v->pid, cfg->clock_map_ctf);
	if (ht_clock_fit(v->pairs[local ? CLOCK_TRACE : CLOCK_MONO], v->n, &fit))
		return ht_runtime_error("out of memory for the clock pairs of %s", cfg->path);
	if (!fit.used)
		return ht_runtime_error("%s: none of VM process %u's %zu clock pairs could be fitted (all refused)", cfg->path,
					(unsigned int)v->pid, v->n);
	/* The middle of the pairs (of the line's side), where the rounding of a CTF clock's integer freq costs nothing. */
	uint64_t lo = UINT64_MAX, hi = 0;
	for (size_t i = 0; i < v->n; i++) {
		uint64_t g = v->pairs[local ? CLOCK_TRACE : CLOCK_MONO][i].guest_ns;

		lo = g < lo ? g : lo;
		hi = g > hi ? g : hi;
	}
	if (fit.nsegments > 1) {
		lo = fit.segments[fit.main_segment].guest_first;
		hi = fit.segments[fit.main_segment].guest_last;
	}
	if (!(in = from_stdin ? stdin : fopen(cfg->clock_map_ctf, "rb")))
		return ht_runtime_error("cannot read %s: %s", cfg->clock_map_ctf, strerror(errno));
	for (;;) {
		if (HT_GROW(data, cap, len + 65536, 65536)) {
			status = ht_runtime_error("out of memory for %s", cfg->clock_map_ctf);
			goto out;
		}
		size_t got = fread(data + len, 1, cap - len, in);
		len += got;
		if (len > CTF_METADATA_MAX) {
			status = ht_runtime_error("%s is more than %u MiB: not a trace's metadata (give the file named metadata in the trace's directory)",
						  cfg->clock_map_ctf, CTF_METADATA_MAX >> 20);
			goto out;
		}
		if (!got)
			break;
	}
	if (ferror(in)) {
		status = ht_runtime_error("cannot read %s: a read failed", cfg->clock_map_ctf);
		goto out;
	}
	meta_out = guest_text_out();
	if (!meta_out) {
		status = ht_runtime_error("out of memory for %s", cfg->clock_map_ctf);
		goto out;
	}
	n = ht_ctf_clock_map(data, len, meta_out, &fit, (int64_t)(h->start_realtime_ns - h->start_monotonic_ns),
			     lo + (hi - lo) / 2, err, sizeof(err));
	ended = guest_text_end(meta_out);
	if (n < 0) {
		status = ht_runtime_error("%s: %s", cfg->clock_map_ctf, err);
		goto out;
	}
	if (ended) {
		status = ht_runtime_error("cannot write the metadata: %s", strerror(errno));
		goto out;
	}
	fprintf(stderr, "hypertrace-bpf: %d clock%s of %s put on the host's monotonic clock, offset to UTC, by VM process %u's %s clock (%zu pairs, rate %+.3f ppm, residual max %.3f us%s)\n",
		n, n == 1 ? "" : "s", cfg->clock_map_ctf, (unsigned int)v->pid, local ? "ftrace" : "monotonic", fit.used,
		ht_clock_fit_ppm(&fit), fit.residual_max / 1e3, fit.used == 1 ? "; one guest time: the rate is taken as 1" : "");
	/* A CTF clock class is one line: a clock that stepped has more. */
	if (fit.nsegments > 1)
		fprintf(stderr, "hypertrace-bpf: warning: VM process %u's clock stepped %zu time(s) against the host's (a VM paused, or its clock set; largest step %.6f s): a CTF clock holds one line, that of its side with the most pairs; events on the other sides are off by their steps (report --clock shows them; --map maps a text trace side by side)\n",
			(unsigned int)v->pid, fit.nsegments - 1, fit.max_step_ns / 1e9);
	status = HT_EXIT_OK;
out:
	if (!from_stdin)
		fclose(in);
	free(data);
	return status;
}

/* Each VM with a replayed trace gets its markers' fit beside the module's clocks (a VM of its own if it has no module). */
static int attach_markers(struct clock_reading *c)
{
	for (size_t i = 0; i < c->traces.n; i++) {
		const struct ht_guest_trace *g = ht_guest_traces_get(&c->traces, i);
		struct vm_pairs *v = vm_of(c, g->host_pid);

		if (!v)
			return -1;
		v->markers = g;
	}
	return 0;
}

static void free_reading(struct clock_reading *c)
{
	struct ht_hashmap_entry *cur;
	size_t bkt;

	ht_hashmap_for_each(&c->vms, cur, bkt) {
		struct vm_pairs *v = (struct vm_pairs *)cur->pvalue;

		for (int k = 0; k < NCLOCKS; k++)
			free(v->pairs[k]);
		free(v);
	}
	ht_hashmap_clear(&c->vms);
	ht_guest_traces_free(&c->traces);
}

int ht_report_clock(struct ht_report_config *cfg)
{
	struct clock_reading c = { .forged = 0 };
	struct ht_guest_origin origin;
	struct ht_reader *reader = NULL;
	struct ht_record rec;
	char err[512];
	int status, oom = 0;

	ht_hashmap_init(&c.vms, ht_hash_long, ht_equal_long, NULL);
	ht_guest_traces_init(&c.traces);
	if (ht_guest_origin_init(&origin)) {
		ht_hashmap_clear(&c.vms);
		return ht_runtime_error("out of memory");
	}
	if (ht_reader_open(cfg->path, &reader, err, sizeof(err))) {
		status = ht_runtime_error("%s", err);
		goto out;
	}
	if (ht_selection_resolve(&cfg->selection, ht_reader_header(reader), err, sizeof(err))) {
		status = ht_usage_error("report", "%s", err);
		goto out;
	}
	while (!oom && ht_reader_next(reader, &rec) == 1) {
		if (ht_guest_origin_note(&origin, &rec)) {
			oom = 1;
			break;
		}
		if (!ht_selection_match_vm(&cfg->selection, rec.host_pid, reader))
			continue;
		if (ht_guest_trace_nr(rec.nr)) {
			oom = ht_guest_traces_add(&c.traces, &rec) != 0;
			continue;
		}
		if (rec.nr != HT_GUEST_NR_CLOCK_PAIR)
			continue;
		if (ht_guest_origin_forged(&origin, &rec))
			c.forged++;
		else if (take_pair(&c, &rec))
			oom = 1;
	}
	if (!oom && (ht_guest_traces_finish(&c.traces) || attach_markers(&c)))
		oom = 1;
	if (!oom && (cfg->clock_map || cfg->clock_map_ctf)) {
		status = cfg->clock_map ? map_text(cfg, &c) : map_ctf(cfg, &c, reader);
		if (status == HT_EXIT_OK)
			status = ht_report_read_outcome(cfg->path, ht_reader_status(reader));
		goto out;
	}
	if (oom || print_fits(cfg, &c, reader)) {
		status = ht_runtime_error("out of memory for the clock pairs of %s", cfg->path);
		goto out;
	}
	fflush(stdout);
	if (!ht_hashmap_size(&c.vms))
		fprintf(stderr, "hypertrace-bpf: %s holds no clock pair: load the guest module (hypertrace_guest, clock_ms) while recording, with nr %u selected (record --nr %u, or no --nr filter)\n",
			cfg->path, HT_GUEST_NR_CLOCK_PAIR, HT_GUEST_NR_CLOCK_PAIR);
	if (c.forged)
		fprintf(stderr, "hypertrace-bpf: %llu clock pairs not from the guest kernel's module (forged): left out\n", c.forged);
	status = ht_report_read_outcome(cfg->path, ht_reader_status(reader));
out:
	ht_reader_close(reader);
	ht_guest_origin_free(&origin);
	free_reading(&c);
	return status;
}
