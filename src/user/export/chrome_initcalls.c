// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/chrome_initcalls.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include "common/escape.h"
#include "export/chrome_time.h"

/* A span's name (or its level's), escaped whole for a JSON string. */
#define JSON_LABEL_SIZE HT_ESC_SIZE(HT_INITCALL_LABEL_MAX)

static void json_label(char *out, const struct ht_initcall_span *s, bool level_of)
{
	char raw[HT_INITCALL_LABEL_MAX];
	size_t n = level_of ? ht_initcall_level_label(raw, sizeof(raw), s) : ht_initcall_label(raw, sizeof(raw), s);

	ht_escape_mem(out, JSON_LABEL_SIZE, raw, n, HT_ESC_JSON);
}

static void name_track(FILE *f, ht_chrome_sep_fn sep, void *arg, uint32_t pid, uint32_t tid, const char *name, int rank)
{
	sep(arg);
	fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%u,\"tid\":%u,\"args\":{\"name\":\"%s\"}}", pid, tid,
		name);
	sep(arg);
	fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%u,\"tid\":%u,\"args\":{\"sort_index\":%d}}",
		pid, tid, rank);
}

/*
 * The double of the next span's ts on the same lane (+inf for the last),
 * which each span's end must not pass: from the last span back.
 */
static double *next_starts(const struct ht_initcall_span *s, size_t n, uint64_t t0)
{
	double *next = malloc((n + 1) * sizeof(*next)), after[HT_INITCALL_LANES];

	if (!next)
		return NULL;
	for (unsigned int l = 0; l < HT_INITCALL_LANES; l++)
		after[l] = INFINITY;
	for (size_t i = n; i-- > 0;) {
		next[i] = after[s[i].lane];
		after[s[i].lane] = ht_chrome_us_value((__s64)(s[i].start_ns - t0));
	}
	return next;
}

static void write_span(FILE *f, ht_chrome_sep_fn sep, void *arg, uint32_t pid, uint32_t tid,
		       const struct ht_initcall_span *s, double next, uint64_t t0)
{
	/* Modulo 2^64 as the records' ts: a guest's times must not overflow. */
	__s64 ts = (__s64)(s->start_ns - t0);
	char name[JSON_LABEL_SIZE], level[JSON_LABEL_SIZE], ts_text[40], dur[40];
	const struct ht_initcall *c = s->call;

	json_label(name, s, false);
	ht_chrome_us_text(ts_text, sizeof(ts_text), ts);
	sep(arg);
	if (!c) {
		ht_chrome_dur_text_before(dur, sizeof(dur), ht_chrome_us_value(ts), s->end_ns - s->start_ns, next);
		fprintf(f, "{\"ph\":\"X\",\"cat\":\"initcall\",\"name\":\"%s\",\"pid\":%u,\"tid\":%u,\"ts\":%s,\"dur\":%s,"
			"\"args\":{\"initcalls\":%zu,\"guest_tid\":%u}}",
			name, pid, tid, ts_text, dur, s->level->initcalls, s->level->tid);
		return;
	}
	json_label(level, s, true);
	if (!c->finished) {
		fprintf(f, "{\"ph\":\"I\",\"s\":\"t\",\"cat\":\"initcall\",\"name\":\"%s\",\"pid\":%u,\"tid\":%u,\"ts\":%s,"
			"\"args\":{\"level\":\"%s\",\"guest_tid\":%u,\"cpu\":%u}}",
			name, pid, tid, ts_text, level, c->tid, c->cpu);
		return;
	}
	ht_chrome_dur_text_before(dur, sizeof(dur), ht_chrome_us_value(ts), s->end_ns - s->start_ns, next);
	fprintf(f, "{\"ph\":\"X\",\"cat\":\"initcall\",\"name\":\"%s\",\"pid\":%u,\"tid\":%u,\"ts\":%s,\"dur\":%s,"
		"\"args\":{\"level\":\"%s\",\"ret\":%lld,\"guest_tid\":%u,\"cpu\":%u}}",
		name, pid, tid, ts_text, dur, level, c->ret, c->tid, c->cpu);
}

static int write_vm(const struct ht_initcall_view *v, FILE *f, ht_chrome_sep_fn sep, ht_chrome_name_vm_fn name_vm,
		    void *arg, uint64_t t0)
{
	double *level_next = next_starts(v->levels, v->nlevels, t0), *call_next = next_starts(v->calls, v->ncalls, t0);
	uint32_t pid = v->host_pid;
	int ret = -ENOMEM;

	if (!level_next || !call_next || name_vm(arg, pid))
		goto out;
	if (v->nlevels)
		name_track(f, sep, arg, pid, HT_CHROME_INITCALL_LEVELS_TID, "initcall levels", HT_INITCALL_RANK_LEVELS);
	for (unsigned int l = 0; l < v->lanes; l++) {
		char name[32];

		if (l)
			snprintf(name, sizeof(name), "initcalls %u", l + 1);
		else
			snprintf(name, sizeof(name), "initcalls");
		name_track(f, sep, arg, pid, HT_CHROME_INITCALLS_TID(l), name, HT_INITCALL_RANK_LANE(l));
	}
	for (size_t i = 0; i < v->nlevels; i++)
		write_span(f, sep, arg, pid, HT_CHROME_INITCALL_LEVELS_TID, &v->levels[i], level_next[i], t0);
	for (size_t i = 0; i < v->ncalls; i++)
		write_span(f, sep, arg, pid, HT_CHROME_INITCALLS_TID(v->calls[i].lane), &v->calls[i], call_next[i], t0);
	ret = 0;
out:
	free(level_next);
	free(call_next);
	return ret;
}

int ht_chrome_initcalls_write(struct ht_guest_traces *t, FILE *f, ht_chrome_sep_fn sep, ht_chrome_name_vm_fn name_vm,
			      void *arg, uint64_t t0, struct ht_initcall_counts *counts)
{
	int ret = ht_guest_traces_finish(t) ? -ENOMEM : 0;

	for (size_t i = 0; i < t->n && !ret; i++) {
		struct ht_initcall_view v;
		int got = ht_initcall_view_build(ht_guest_traces_get(t, i), &v, counts);

		if (got < 0)
			return got;
		if (got) {
			ret = write_vm(&v, f, sep, name_vm, arg, t0);
			ht_initcall_view_free(&v);
		}
	}
	return ret;
}
