// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Text frames of latency histograms (see hist_view.h). */
#include "hist/hist_view.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "common/escape.h"
#include "common/grow.h"

/*
 * A frame is first built as a list of lines, each already cut to the width,
 * so the height can be fitted before anything is written.
 */
struct lines {
	char **v;
	size_t len, cap;
	unsigned int width;
	int err;
};

static void __attribute__((format(printf, 2, 3))) emit(struct lines *l, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (l->err)
		return;
	if (HT_GROW(l->v, l->cap, l->len + 1, 64)) {
		l->err = -ENOMEM;
		return;
	}
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0) {
		va_end(ap);
		l->err = -ENOMEM;
		return;
	}
	va_end(ap);
	/* Cut at a character: a name in another script must not end in half a character. */
	if (strlen(s) > l->width)
		s[ht_utf8_prefix(s, l->width)] = '\0';
	l->v[l->len++] = s;
}

static void lines_free(struct lines *l)
{
	for (size_t i = 0; i < l->len; i++)
		free(l->v[i]);
	free(l->v);
}

static bool use_usecs(const struct ht_hist *h)
{
	return ht_hist_max(h).ns >= HT_HV_NSECS_BELOW;
}

/* Integer formatting: doubles would round bounds near UINT64_MAX. */
static void fmt_ns(char *buf, size_t size, uint64_t ns, bool usecs)
{
	if (usecs)
		snprintf(buf, size, "%llu.%03llu", (unsigned long long)(ns / 1000),
			 (unsigned long long)(ns % 1000));
	else
		snprintf(buf, size, "%llu", (unsigned long long)ns);
}

static int digits(uint64_t v)
{
	int n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

static int imax(int a, int b)
{
	return a > b ? a : b;
}

static void emit_hist(struct lines *l, const struct ht_hist *h)
{
	bool usecs = use_usecs(h);
	int lo = -1, hi = -1, bw = 0, cw, left, indent, bar, fixed;
	uint64_t cmax = 0;
	char a[32], b[32], stars[HT_HV_MAX_BAR + 1];

	for (int i = 0; i < HT_HIST_SLOTS; i++) {
		if (!h->slots[i])
			continue;
		if (lo < 0)
			lo = i;
		hi = i;
		if (h->slots[i] > cmax)
			cmax = h->slots[i];
	}
	if (lo < 0)
		return;
	for (int i = lo; i <= hi; i++) {
		fmt_ns(a, sizeof(a), ht_hist_slot_high(i), usecs);
		bw = imax(bw, (int)strlen(a));
	}
	/*
	 * print_log2_hist's columns (bounds 10 wide, count 8) while at least
	 * HT_HV_MIN_BAR stars still fit; else columns as narrow as the values allow.
	 */
	cw = digits(cmax);
	fixed = 2 * imax(bw, 10) + 4 + 3 + imax(cw, 8) + 1;
	if ((int)l->width - fixed - 2 >= HT_HV_MIN_BAR) {
		bw = imax(bw, 10);
		cw = imax(cw, 8);
	} else {
		cw = imax(cw, 5); /* "count" */
		fixed = 2 * bw + 4 + 3 + cw + 1;
	}
	bar = (int)l->width - fixed - 2;
	if (bar > HT_HV_MAX_BAR)
		bar = HT_HV_MAX_BAR;
	left = 2 * bw + 4; /* "low -> high" */
	indent = left - 5 < 5 ? left - 5 : 5;
	if (bar >= 1)
		emit(l, "%*s%-*s : %-*s distribution", indent, "", left - indent,
		     usecs ? "usecs" : "nsecs", cw, "count");
	else
		emit(l, "%*s%-*s : count", indent, "", left - indent, usecs ? "usecs" : "nsecs");
	for (int i = lo; i <= hi; i++) {
		uint64_t c = h->slots[i];

		fmt_ns(a, sizeof(a), ht_hist_slot_low(i), usecs);
		fmt_ns(b, sizeof(b), ht_hist_slot_high(i), usecs);
		if (bar < 1) {
			emit(l, "%*s -> %-*s : %llu", bw, a, bw, b, (unsigned long long)c);
			continue;
		}
		/* Rounded down like print_log2_hist; 128 bits: c * bar can pass 2^64. */
		int n = (int)((unsigned __int128)c * (unsigned int)bar / cmax);

		memset(stars, '*', (size_t)n);
		memset(stars + n, ' ', (size_t)(bar - n));
		stars[bar] = '\0';
		emit(l, "%*s -> %-*s : %-*llu |%s|", bw, a, bw, b, cw, (unsigned long long)c, stars);
	}
}

static const char *const series_label[HT_LAT_NSERIES] = {
	[HT_LAT_TOTAL] = "exit->entry",
	[HT_LAT_EXIT_HCALL] = "exit->hcall",
	[HT_LAT_HCALL_ENTRY] = "hcall->entry",
};

static const char *const series_arg[HT_LAT_NSERIES] = {
	[HT_LAT_TOTAL] = "total",
	[HT_LAT_EXIT_HCALL] = "exit-hcall",
	[HT_LAT_HCALL_ENTRY] = "hcall-entry",
};

/* One item of a wrapped line, e.g. "p99 <= 18446744073709551.615 us". */
#define ITEM_SIZE 160

/*
 * Joins items with ", ", wrapping before an item that would pass the width;
 * continuation lines are indented. Keeps the numbers readable when narrow.
 */
static void emit_items(struct lines *l, char items[][ITEM_SIZE], int n)
{
	char line[512];
	size_t len = 0;

	for (int i = 0; i < n; i++) {
		size_t add = strlen(items[i]);

		if (len && len + 2 + add > l->width) {
			emit(l, "%s", line);
			len = 0;
		}
		if (len)
			len += (size_t)snprintf(line + len, sizeof(line) - len, ", %s", items[i]);
		else
			len = (size_t)snprintf(line, sizeof(line), "%s%s", i ? "  " : "", items[i]);
		if (len >= sizeof(line))
			len = sizeof(line) - 1;
	}
	if (len)
		emit(l, "%s", line);
}

static void fmt_value(char *buf, size_t size, const char *prefix, const char *name,
		      struct ht_lat_value v, bool usecs)
{
	char num[32];

	fmt_ns(num, sizeof(num), v.ns, usecs);
	snprintf(buf, size, "%s%s %s%s %s", prefix, name, v.exact ? "" : "<= ", num,
		 usecs ? "us" : "ns");
}

static void emit_stats(struct lines *l, struct ht_lat_series *s, enum ht_lat_series_id id,
		       enum ht_lat_view view)
{
	const struct ht_hist *h = ht_lat_series_hist(s, view);
	struct ht_lat_stats st;
	bool usecs = use_usecs(h);
	char items[4][ITEM_SIZE], prefix[32];

	ht_lat_series_stats(s, view, &st);
	if (st.count == 0) {
		emit(l, "%s: none", series_label[id]);
		return;
	}
	snprintf(prefix, sizeof(prefix), "%s: ", series_label[id]);
	fmt_value(items[0], sizeof(items[0]), prefix, "p50", st.p50, usecs);
	fmt_value(items[1], sizeof(items[1]), "", "p90", st.p90, usecs);
	fmt_value(items[2], sizeof(items[2]), "", "p99", st.p99, usecs);
	fmt_value(items[3], sizeof(items[3]), "", "max", st.max, usecs);
	emit_items(l, items, 4);
}

/* Hypercalls of a group: the largest series count (raw slots may feed one series only). */
static uint64_t group_count(const struct ht_lat_group *g, enum ht_lat_view view)
{
	uint64_t n = 0;

	for (int s = 0; s < HT_LAT_NSERIES; s++) {
		uint64_t c = ht_lat_series_hist(&g->series[s], view)->count;

		if (c > n)
			n = c;
	}
	return n;
}

/* "" without an elapsed time: then there is no rate to show. */
static void fmt_rate(char *buf, size_t size, uint64_t count, uint64_t elapsed_ns)
{
	if (elapsed_ns)
		snprintf(buf, size, "%.1f/s", (double)count * 1e9 / (double)elapsed_ns);
	else
		buf[0] = '\0';
}

static void emit_frame(struct lines *l, struct ht_latset *set, unsigned int mask,
		       const struct ht_hv_opts *o, const struct ht_hv_frame *f)
{
	struct ht_lat_group *all = ht_latset_group(set, 0);
	bool grouped = ht_latset_group_by(set) != HT_LAT_BY_NONE;
	uint64_t n = group_count(all, f->view);
	char ts[32] = "", when[32], items[3][ITEM_SIZE];
	int n_items = 0;

	if (o->timestamp) {
		struct tm tm;

		if (localtime_r(&f->now, &tm))
			strftime(ts, sizeof(ts), "%H:%M:%S ", &tm);
	}
	if (f->view == HT_LAT_CUMULATIVE)
		snprintf(when, sizeof(when), "since start");
	else
		snprintf(when, sizeof(when), "interval %u", f->interval);
	snprintf(items[n_items++], sizeof(items[0]), "%s%s: %llu hypercalls", ts, when,
		 (unsigned long long)n);
	fmt_rate(items[n_items], sizeof(items[0]), n, f->elapsed_ns);
	if (items[n_items][0])
		n_items++;
	snprintf(items[n_items++], sizeof(items[0]), "%llu drops", (unsigned long long)f->drops);
	emit_items(l, items, n_items);

	if (!grouped) {
		for (int s = 0; s < HT_LAT_NSERIES; s++) {
			if (!(mask & HT_HV_SERIES(s)))
				continue;
			emit(l, "%s", "");
			emit_stats(l, &all->series[s], s, f->view);
			emit_hist(l, ht_lat_series_hist(&all->series[s], f->view));
		}
		return;
	}
	/* Grouped: the overall numbers in the header, histograms per group. */
	for (int s = 0; s < HT_LAT_NSERIES; s++)
		if (mask & HT_HV_SERIES(s))
			emit_stats(l, &all->series[s], s, f->view);
	for (size_t i = 1; i < ht_latset_ngroups(set); i++) {
		struct ht_lat_group *g = ht_latset_group(set, i);
		uint64_t gn = group_count(g, f->view);
		const char *vm_raw = o->vm_name ? o->vm_name(o->vm_name_ctx, g->host_pid) : NULL;
		const char *thread_raw = o->thread_name && g->host_tid ?
			o->thread_name(o->vm_name_ctx, g->host_pid, g->host_tid) : NULL;
		/*
		 * Names a VM owner chose (QEMU -name, comm): escaped, never raw on
		 * the terminal, and cut (at a character) so the label fits its item.
		 */
		char vm[56], thread[32], name[ITEM_SIZE - 40];

		ht_escape(vm, sizeof(vm), vm_raw ? vm_raw : "", HT_ESC_TEXT);
		ht_escape(thread, sizeof(thread), thread_raw ? thread_raw : "", HT_ESC_TEXT);

		if (gn == 0) /* a vCPU idle in this interval */
			continue;
		if (g->kind == HT_LAT_GROUP_OTHER)
			snprintf(name, sizeof(name), "other (after %d groups)", HT_LAT_MAX_GROUPS);
		else if (ht_latset_group_by(set) == HT_LAT_BY_VCPU)
			snprintf(name, sizeof(name), "vcpu %u (pid %u%s%s%s%s)", (unsigned int)g->vcpu_id,
				 (unsigned int)g->host_pid, vm[0] ? ", vm " : "", vm, thread[0] ? ", " : "", thread);
		else
			snprintf(name, sizeof(name), "pid %u%s%s%s", (unsigned int)g->host_pid,
				 vm[0] ? " (vm " : "", vm, vm[0] ? ")" : "");
		snprintf(items[0], sizeof(items[0]), "%s: %llu hypercalls", name,
			 (unsigned long long)gn);
		fmt_rate(items[1], sizeof(items[1]), gn, f->elapsed_ns);
		emit(l, "%s", "");
		emit_items(l, items, items[1][0] ? 2 : 1);
		for (int s = 0; s < HT_LAT_NSERIES; s++) {
			if (!(mask & HT_HV_SERIES(s)))
				continue;
			emit_stats(l, &g->series[s], s, f->view);
			emit_hist(l, ht_lat_series_hist(&g->series[s], f->view));
		}
	}
}

static int write_lines(FILE *out, const struct lines *l, enum ht_hv_mode mode, unsigned int height)
{
	size_t shown = l->len;

	errno = 0; /* so that a failed write's errno is told apart from an old one */
	if (mode == HT_HV_TERMINAL) {
		/* One row stays free: a newline on the last row would scroll the screen. */
		size_t rows = height > 1 ? height - 1 : 1;

		if (height && l->len > rows)
			shown = rows - 1;
		fputs("\033[H", out);
		for (size_t i = 0; i < shown; i++)
			fprintf(out, "\033[K%s\n", l->v[i]);
		if (shown < l->len) {
			char more[48];

			snprintf(more, sizeof(more), "... %zu more lines", l->len - shown);
			if (strlen(more) > l->width)
				more[l->width] = '\0';
			fprintf(out, "\033[K%s\n", more);
		}
		fputs("\033[J", out);
	} else {
		for (size_t i = 0; i < l->len; i++)
			fprintf(out, "%s\n", l->v[i]);
		fputc('\n', out);
	}
	if (fflush(out) == EOF || ferror(out))
		return errno ? -errno : -EIO;
	return 0;
}

/* 0 means the default; the cap keeps the column arithmetic in int range. */
static unsigned int fit_width(unsigned int width)
{
	if (width == 0)
		return HT_HV_DEFAULT_WIDTH;
	return width > 65535 ? 65535 : width;
}

int ht_hv_render(FILE *out, struct ht_latset *set, const struct ht_hv_opts *opts,
		 const struct ht_hv_frame *frame)
{
	struct lines l = { .width = fit_width(opts->width) };
	unsigned int mask = opts->series & HT_HV_SERIES_ALL;
	int err;

	emit_frame(&l, set, mask ? mask : HT_HV_SERIES(HT_LAT_TOTAL), opts, frame);
	for (const char *p = frame->extra; p && *p;) {
		size_t n = strcspn(p, "\n");

		emit(&l, "%.*s", (int)n, p);
		p += n + (p[n] == '\n');
	}
	err = l.err ? l.err : write_lines(out, &l, opts->mode, opts->height);
	lines_free(&l);
	return err;
}

int ht_hv_render_hist(FILE *out, const struct ht_hist *h, unsigned int width)
{
	struct lines l = { .width = fit_width(width) };
	int err = 0;

	emit_hist(&l, h);
	if (l.err)
		err = l.err;
	for (size_t i = 0; !err && i < l.len; i++)
		if (fprintf(out, "%s\n", l.v[i]) < 0)
			err = -EIO;
	lines_free(&l);
	return err;
}

bool ht_hv_parse_series(const char *arg, unsigned int *mask)
{
	unsigned int m = 0;
	const char *p = arg;

	for (;;) {
		size_t n = strcspn(p, ",");
		bool known = false;

		if (n == 3 && !strncmp(p, "all", 3)) {
			m |= HT_HV_SERIES_ALL;
			known = true;
		}
		for (int s = 0; s < HT_LAT_NSERIES && !known; s++) {
			if (strlen(series_arg[s]) == n && !strncmp(p, series_arg[s], n)) {
				m |= HT_HV_SERIES(s);
				known = true;
			}
		}
		if (!known)
			return false;
		if (p[n] == '\0')
			break;
		p += n + 1;
	}
	*mask = m;
	return true;
}
