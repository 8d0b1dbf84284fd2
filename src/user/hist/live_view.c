// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "hist/live_view.h"

#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include "common/grow.h"

/* Aggregate mode: last cumulative counts seen per group, to derive each interval's share. */
struct agg_prev {
	__u64 key;
	__u64 slots[HT_AGG_NSERIES][HT_AGG_SLOTS];
};

struct ht_live {
	struct ht_live_opts opts;
	FILE *out;
	bool terminal;
	struct ht_latset *set;
	unsigned long long interval_start_ns, start_ns;
	unsigned long long lost_at_interval_start;
	unsigned long long total;
	unsigned int frames;
	struct agg_prev *prev;
	size_t nprev, cap_prev;
};

struct ht_live *ht_live_new(const struct ht_live_opts *opts, FILE *out, unsigned long long now_ns)
{
	struct ht_live *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->opts = *opts;
	if (!l->opts.series)
		l->opts.series = HT_HV_SERIES_ALL;
	l->out = out;
	l->terminal = opts->terminal < 0 ? isatty(fileno(out)) : opts->terminal;
	l->set = ht_latset_new(opts->group_by, 0);
	if (!l->set) {
		free(l);
		return NULL;
	}
	l->start_ns = l->interval_start_ns = now_ns;
	return l;
}

void ht_live_observe(void *live, const struct ht_record *rec)
{
	struct ht_live *l = live;

	ht_latset_add_record(l->set, rec);
	l->total++;
}

static struct agg_prev *prev_for(struct ht_live *l, __u64 key)
{
	for (size_t i = 0; i < l->nprev; i++)
		if (l->prev[i].key == key)
			return &l->prev[i];
	if (HT_GROW(l->prev, l->cap_prev, l->nprev + 1, 8))
		return NULL;
	memset(&l->prev[l->nprev], 0, sizeof(l->prev[0]));
	l->prev[l->nprev].key = key;
	return &l->prev[l->nprev++];
}

void ht_live_add_aggregate(void *live, __u64 key, const struct ht_agg_hist *cumulative)
{
	static const enum ht_lat_series_id series_of[HT_AGG_NSERIES] = {
		[HT_AGG_TOTAL] = HT_LAT_TOTAL,
		[HT_AGG_EXIT_HCALL] = HT_LAT_EXIT_HCALL,
		[HT_AGG_HCALL_ENTRY] = HT_LAT_HCALL_ENTRY,
	};
	struct ht_live *l = live;
	struct agg_prev *prev = prev_for(l, key);
	uint64_t delta[HT_HIST_SLOTS];

	if (!prev)
		return;
	/* Counts below the last read: the group was deleted (a VM gone, see --metrics-grace) and is a new one. */
	bool deleted = false;
	for (int s = 0; s < HT_AGG_NSERIES && !deleted; s++)
		for (int i = 0; i < HT_AGG_SLOTS && !deleted; i++)
			deleted = cumulative->slots[s][i] < prev->slots[s][i];
	if (deleted)
		memset(prev->slots, 0, sizeof(prev->slots));
	for (int s = 0; s < HT_AGG_NSERIES; s++) {
		bool any = false;
		for (int i = 0; i < HT_AGG_SLOTS; i++) {
			delta[i] = cumulative->slots[s][i] - prev->slots[s][i];
			any |= delta[i] != 0;
			if (s == HT_AGG_TOTAL)
				l->total += delta[i];
		}
		if (any)
			ht_latset_add_slots(l->set, series_of[s], (uint32_t)(key >> 32),
					    (uint16_t)(key & 0xffff), delta);
	}
	memcpy(prev->slots, cumulative->slots, sizeof(prev->slots));
}

unsigned long long ht_live_until_due(const struct ht_live *l, unsigned long long now_ns)
{
	unsigned long long due = l->interval_start_ns + l->opts.interval_ns;

	return now_ns >= due ? 0 : due - now_ns;
}

static void render(struct ht_live *l, enum ht_lat_view view, unsigned long long elapsed_ns,
		   unsigned long long lost)
{
	struct ht_hv_opts o = {
		.mode = l->terminal ? HT_HV_TERMINAL : HT_HV_PLAIN,
		.series = l->opts.series,
		.timestamp = l->opts.timestamp,
		.vm_name = l->opts.vm_name,
		.thread_name = l->opts.thread_name,
		.vm_name_ctx = l->opts.vm_name_ctx,
	};
	struct ht_hv_frame f = {
		.view = view,
		.interval = l->frames + 1,
		.elapsed_ns = elapsed_ns,
		.drops = lost,
		.now = time(NULL),
	};
	struct winsize ws;

	/* Measured at every frame, so a resized terminal is fitted at once. */
	if (l->terminal && ioctl(fileno(l->out), TIOCGWINSZ, &ws) == 0 && ws.ws_col) {
		o.width = ws.ws_col;
		o.height = ws.ws_row;
	}
	char *extra = NULL;
	size_t extra_len = 0;
	FILE *mem = l->opts.extra ? open_memstream(&extra, &extra_len) : NULL;
	if (mem) {
		l->opts.extra(l->opts.extra_ctx, view, o.width ? o.width : HT_HV_DEFAULT_WIDTH, mem);
		if (fclose(mem) == 0)
			f.extra = extra;
	}
	ht_hv_render(l->out, l->set, &o, &f);
	free(extra);
	fflush(l->out);
}

unsigned int ht_live_tick(struct ht_live *l, unsigned long long now_ns, unsigned long long lost_total)
{
	if (ht_live_until_due(l, now_ns))
		return l->frames;
	render(l, HT_LAT_INTERVAL, now_ns - l->interval_start_ns, lost_total - l->lost_at_interval_start);
	l->frames++;
	ht_latset_next_interval(l->set);
	l->interval_start_ns = now_ns;
	l->lost_at_interval_start = lost_total;
	return l->frames;
}

void ht_live_end_interval(struct ht_live *l, unsigned long long now_ns, unsigned long long lost_total)
{
	struct ht_lat_group *all = ht_latset_ngroups(l->set) ? ht_latset_group(l->set, 0) : NULL;

	if (!all || !ht_hist_count(ht_lat_series_hist(&all->series[HT_LAT_TOTAL], HT_LAT_INTERVAL)))
		return;
	/* Drawn although not due: every hypercall of a logged run appears in some interval. */
	render(l, HT_LAT_INTERVAL, now_ns - l->interval_start_ns, lost_total - l->lost_at_interval_start);
	l->frames++;
	ht_latset_next_interval(l->set);
	l->interval_start_ns = now_ns;
	l->lost_at_interval_start = lost_total;
}

void ht_live_final(struct ht_live *l, unsigned long long now_ns, unsigned long long lost_total)
{
	render(l, HT_LAT_CUMULATIVE, now_ns - l->start_ns, lost_total);
}

unsigned long long ht_live_total(const struct ht_live *l)
{
	return l->total;
}

void ht_live_free(struct ht_live *l)
{
	if (!l)
		return;
	ht_latset_free(l->set);
	free(l->prev);
	free(l);
}
