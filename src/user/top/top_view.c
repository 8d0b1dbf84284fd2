// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "top/top_view.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "exits/exit_reasons.h"
#include "exits/exit_view.h"
#include "common/escape.h"
#include "hypertrace/record.h"

static const char *const sort_names[HT_TOP_NSORTS] = {
	[HT_TOP_SORT_EXITS] = "exits", [HT_TOP_SORT_WAIT] = "wait", [HT_TOP_SORT_HCALLS] = "hcalls",
	[HT_TOP_SORT_P99] = "p99",     [HT_TOP_SORT_NAME] = "name", [HT_TOP_SORT_PID] = "pid",
};

const char *ht_top_sort_name(enum ht_top_sort s)
{
	return s < HT_TOP_NSORTS ? sort_names[s] : "?";
}

bool ht_top_sort_parse(const char *arg, enum ht_top_sort *out)
{
	for (int i = 0; i < HT_TOP_NSORTS; i++) {
		if (!strcmp(arg, sort_names[i])) {
			*out = (enum ht_top_sort)i;
			return true;
		}
	}
	return false;
}

struct vm_row {
	uint32_t pid;
	char name[HT_ESC_SIZE(64)]; /* escaped */
	uint64_t hcalls;
	struct ht_exit_series sum; /* every exit of the VM in the interval */
	__u64 state_ns[HT_VCPU_NSTATES]; /* its vCPU threads' accounts in the interval, summed */
	unsigned int threads;      /* vCPU threads known */
};

/*
 * The columns after PID and VM, in the order shown. A screen too narrow for
 * all of them drops them in the order of drop_rank, highest first: the
 * hypercall rate, then p50, then p99, then the rarer states; the exit rate
 * and where the vCPUs' time went stay (docs: top(1), "COLUMNS").
 */
enum column { COL_EXITS, COL_P50, COL_P99, COL_GUEST, COL_KVM, COL_VMM, COL_WAIT, COL_HALT, COL_BLK, COL_HCALLS, NCOLS };
static const struct {
	const char *title;
	int width;
	int drop_rank;
} column_info[NCOLS] = {
	[COL_EXITS] = { "EXITS/S", 8, 0 }, [COL_P50] = { "P50", 6, 8 },    [COL_P99] = { "P99", 6, 7 },
	[COL_GUEST] = { "GUEST%", 6, 1 },  [COL_KVM] = { "KVM%", 6, 2 },   [COL_VMM] = { "VMM%", 6, 3 },
	[COL_WAIT] = { "WAIT%", 6, 4 },    [COL_HALT] = { "HALT%", 6, 5 }, [COL_BLK] = { "BLK%", 6, 6 },
	[COL_HCALLS] = { "HCALL/S", 8, 9 },
};
/* The state of each account column. */
static const enum ht_vcpu_state column_state[NCOLS] = {
	[COL_GUEST] = HT_VCPU_GUEST, [COL_KVM] = HT_VCPU_KVM,       [COL_VMM] = HT_VCPU_VMM,
	[COL_WAIT] = HT_VCPU_WAIT,   [COL_HALT] = HT_VCPU_HALTED,   [COL_BLK] = HT_VCPU_BLOCKED,
};
#define NAME_COLS 28 /* "%7u %-20s" */

/* Which columns fit in width: all, less the highest drop ranks until they do. */
static void columns_that_fit(unsigned int width, bool show[NCOLS])
{
	unsigned int used = NAME_COLS;

	for (int c = 0; c < NCOLS; c++) {
		show[c] = true;
		used += 1 + (unsigned int)column_info[c].width;
	}
	for (int rank = NCOLS - 1; rank > 0 && used > width; rank--)
		for (int c = 0; c < NCOLS; c++)
			if (column_info[c].drop_rank == rank && show[c]) {
				show[c] = false;
				used -= 1 + (unsigned int)column_info[c].width;
			}
}

static bool is_hypercall(const struct ht_exit_key *k)
{
	return (k->isa == HT_ISA_VMX && k->reason == HT_VMX_EXIT_REASON_VMCALL) ||
	       (k->isa == HT_ISA_SVM && k->reason == HT_SVM_EXIT_CODE_VMMCALL);
}

static double rate(uint64_t n, uint64_t ns)
{
	return ns ? (double)n * 1e9 / (double)ns : 0.0;
}

/* A state's share of an account's time, in %; negative if there is no time (shown "-"). */
static double state_pct(const __u64 ns[HT_VCPU_NSTATES], enum ht_vcpu_state k)
{
	uint64_t span = 0;

	for (int i = 0; i < HT_VCPU_NSTATES; i++)
		span += ns[i];
	return span ? 100.0 * (double)ns[k] / (double)span : -1.0;
}

static enum ht_top_sort sort_key;

static int cmp_rows(const void *a, const void *b)
{
	const struct vm_row *x = a, *y = b;
	double dx = 0, dy = 0;

	switch (sort_key) {
	case HT_TOP_SORT_EXITS:
		dx = (double)x->sum.h.count, dy = (double)y->sum.h.count;
		break;
	case HT_TOP_SORT_WAIT:
		dx = state_pct(x->state_ns, HT_VCPU_WAIT), dy = state_pct(y->state_ns, HT_VCPU_WAIT);
		break;
	case HT_TOP_SORT_HCALLS:
		dx = (double)x->hcalls, dy = (double)y->hcalls;
		break;
	case HT_TOP_SORT_P99:
		dx = (double)ht_exit_percentile(&x->sum, 99), dy = (double)ht_exit_percentile(&y->sum, 99);
		break;
	case HT_TOP_SORT_NAME: {
		int c = strcmp(x->name, y->name);
		if (c)
			return c;
		break;
	}
	case HT_TOP_SORT_PID:
	case HT_TOP_NSORTS:
		break;
	}
	if (dx != dy)
		return dx < dy ? 1 : -1; /* most first */
	return (x->pid > y->pid) - (x->pid < y->pid);
}

struct frame {
	FILE *out;
	unsigned int width, height, lines;
	size_t dropped; /* lines past the height */
};

static void __attribute__((format(printf, 2, 3))) row(struct frame *f, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	size_t n;

	/* The last row for "... N more rows"; the caller leaves out the newline of the last line (no scroll). */
	if (f->height && f->lines + 2 > f->height) {
		f->dropped++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	n = strlen(buf);
	if (n > f->width) {
		n = f->width;
		while (n > 0 && ((unsigned char)buf[n] & 0xc0) == 0x80)
			n--;
		buf[n] = '\0';
	}
	fprintf(f->out, "%s\n", buf);
	f->lines++;
}

static void fmt_le(char *buf, size_t len, uint64_t ns, uint64_t count)
{
	char v[16];

	if (!count) {
		snprintf(buf, len, "-");
		return;
	}
	ht_exit_fmt_ns(v, sizeof(v), ns);
	snprintf(buf, len, "%s", v);
}

/* The columns after the name that fit (show): exits/s, p50, p99, each state's %, hypercalls/s. */
static void columns(char *buf, size_t len, const bool show[NCOLS], const struct ht_exit_series *s, uint64_t hcalls,
		    const __u64 *state_ns, uint64_t interval_ns)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int c = 0; c < NCOLS && n < len; c++) {
		char v[16];
		double pct;

		if (!show[c])
			continue;
		switch (c) {
		case COL_EXITS:
			snprintf(v, sizeof(v), "%.0f", rate(s->h.count, interval_ns));
			break;
		case COL_P50:
		case COL_P99:
			fmt_le(v, sizeof(v), ht_exit_percentile(s, c == COL_P50 ? 50 : 99), s->h.count);
			break;
		case COL_HCALLS:
			snprintf(v, sizeof(v), "%.0f", rate(hcalls, interval_ns));
			break;
		default:
			pct = state_ns ? state_pct(state_ns, column_state[c]) : -1.0;
			if (pct < 0)
				snprintf(v, sizeof(v), "-");
			else
				snprintf(v, sizeof(v), "%.1f", pct);
		}
		n += (size_t)snprintf(buf + n, len - n, "%s%*s", n ? " " : "", column_info[c].width, v);
	}
}

static void vm_details(struct frame *f, const bool show[NCOLS], const struct vm_row *r,
		       const struct ht_exit_table *interval, const struct ht_exit_table *total,
		       const struct ht_top_view_opts *o)
{
	char cols[160], name[HT_ESC_SIZE(16) + 16], esc[HT_ESC_SIZE(16)];

	if (o->vcpus) {
		for (size_t i = 0; i < total->nthreads; i++) {
			const struct ht_vcpu_thread_row *t = &total->threads[i];
			struct ht_exit_series s = { .minmax_exact = true };
			const __u64 *state_ns = NULL;
			uint64_t hc = 0;

			if (t->w.pid != r->pid || t->gone)
				continue;
			for (size_t k = 0; k < interval->nseries; k++) {
				const struct ht_exit_series *e = &interval->series[k];
				if (e->key.pid == r->pid && e->key.vcpu == t->w.vcpu) {
					ht_exit_series_add(&s, e);
					hc += is_hypercall(&e->key) ? e->h.count : 0;
				}
			}
			for (size_t k = 0; k < interval->nthreads; k++)
				if (interval->threads[k].w.tid == t->w.tid && interval->threads[k].a.start_ns == t->a.start_ns)
					state_ns = interval->threads[k].a.state_ns;
			const char *tn = o->thread_name ? o->thread_name(o->ctx, t->w.pid, t->w.tid) : NULL;
			snprintf(name, sizeof(name), "vCPU %u %s", (unsigned int)t->w.vcpu,
				 ht_escape(esc, sizeof(esc), tn ? tn : "", HT_ESC_TEXT));
			columns(cols, sizeof(cols), show, &s, hc, state_ns, o->interval_ns);
			row(f, "%7u   %-18.18s %s", t->w.tid, name, cols);
		}
	}
	if (!o->reasons)
		return;
	/* The VM's reasons, busiest first, summed over its vCPUs. */
	struct ht_exit_series sums[64];
	size_t n = 0;
	for (size_t k = 0; k < interval->nseries; k++) {
		const struct ht_exit_series *e = &interval->series[k];
		size_t j;

		if (e->key.pid != r->pid)
			continue;
		for (j = 0; j < n; j++)
			if (sums[j].key.isa == e->key.isa && sums[j].key.reason == e->key.reason)
				break;
		if (j == n) {
			if (n == sizeof(sums) / sizeof(sums[0]))
				continue;
			memset(&sums[n], 0, sizeof(sums[n]));
			sums[n].key = e->key;
			sums[n].minmax_exact = true;
			n++;
		}
		ht_exit_series_add(&sums[j], e);
	}
	for (size_t a = 1; a < n; a++)
		for (size_t b = a; b > 0 && sums[b].h.count > sums[b - 1].h.count; b--) {
			struct ht_exit_series t = sums[b];
			sums[b] = sums[b - 1];
			sums[b - 1] = t;
		}
	for (size_t j = 0; j < n; j++) {
		char reason[40];

		ht_exit_reason_format(reason, sizeof(reason), sums[j].key.isa, sums[j].key.reason);
		snprintf(name, sizeof(name), "  %s", reason);
		columns(cols, sizeof(cols), show, &sums[j], is_hypercall(&sums[j].key) ? sums[j].h.count : 0, NULL,
			o->interval_ns);
		row(f, "%7s   %-18.18s %s", "", name, cols);
	}
}

static bool row_for(struct vm_row *rows, size_t *n, uint32_t pid, const struct ht_top_view_opts *o)
{
	for (size_t i = 0; i < *n; i++)
		if (rows[i].pid == pid)
			return true;
	if (o->alive && !o->alive(o->ctx, pid))
		return false;
	struct vm_row *r = &rows[(*n)++];
	memset(r, 0, sizeof(*r));
	r->pid = pid;
	r->sum.minmax_exact = true;
	const char *name = o->vm_name ? o->vm_name(o->ctx, pid) : NULL;
	ht_escape(r->name, sizeof(r->name), name ? name : "", HT_ESC_TEXT);
	return true;
}

static struct vm_row *find_row(struct vm_row *rows, size_t n, uint32_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (rows[i].pid == pid)
			return &rows[i];
	return NULL;
}

int ht_top_view_write(FILE *out, const struct ht_exit_table *interval, const struct ht_exit_table *total,
		      const struct ht_top_view_opts *o)
{
	struct frame f = { .out = out, .width = o->width ? o->width : 80, .height = o->height };
	size_t cap = interval->nseries + total->nthreads + 1, n = 0;
	struct vm_row *rows = calloc(cap, sizeof(*rows));
	uint64_t exits = 0;
	char when[16] = "", cols[160];
	bool show[NCOLS];
	struct tm tm;

	if (!rows)
		return -ENOMEM;
	/* VMs: every live process with vCPU threads or exits. */
	for (size_t i = 0; i < total->nthreads; i++)
		if (!total->threads[i].gone)
			row_for(rows, &n, total->threads[i].w.pid, o);
	for (size_t i = 0; i < interval->nseries; i++)
		row_for(rows, &n, interval->series[i].key.pid, o);
	for (size_t i = 0; i < interval->nseries; i++) {
		const struct ht_exit_series *s = &interval->series[i];
		struct vm_row *r = find_row(rows, n, s->key.pid);
		if (!r)
			continue;
		ht_exit_series_add(&r->sum, s);
		r->hcalls += is_hypercall(&s->key) ? s->h.count : 0;
		exits += s->h.count;
	}
	for (size_t i = 0; i < total->nthreads; i++) {
		struct vm_row *r = find_row(rows, n, total->threads[i].w.pid);
		if (r && !total->threads[i].gone)
			r->threads++;
	}
	for (size_t i = 0; i < interval->nthreads; i++) {
		struct vm_row *r = find_row(rows, n, interval->threads[i].w.pid);
		for (int k = 0; r && k < HT_VCPU_NSTATES; k++)
			r->state_ns[k] += interval->threads[i].a.state_ns[k];
	}
	sort_key = o->sort;
	qsort(rows, n, sizeof(*rows), cmp_rows);

	if (localtime_r(&o->now, &tm))
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
	row(&f, "hypertrace-bpf top - %s, every %.1fs: %zu VMs, %.0f exits/s, sort %s", when,
	    (double)o->interval_ns / 1e9, n, rate(exits, o->interval_ns), ht_top_sort_name(o->sort));
	if (o->terminal)
		row(&f, "keys: q quit, v vCPUs %s, r reasons %s, s sort (%s)", o->vcpus ? "on" : "off",
		    o->reasons ? "on" : "off", ht_top_sort_name((o->sort + 1) % HT_TOP_NSORTS));
	columns_that_fit(f.width, show);
	{
		char head[160];
		size_t hn = 0;

		for (int c = 0; c < NCOLS; c++)
			if (show[c])
				hn += (size_t)snprintf(head + hn, sizeof(head) - hn, " %*s", column_info[c].width,
						       column_info[c].title);
		row(&f, "%7s %-20s%s", "PID", "VM", head);
	}
	for (size_t i = 0; i < n; i++) {
		const struct vm_row *r = &rows[i];

		columns(cols, sizeof(cols), show, &r->sum, r->hcalls, r->threads ? r->state_ns : NULL, o->interval_ns);
		/* The name cut to its column between two characters, never inside one. */
		const char *nm = r->name[0] ? r->name : "?";
		int cut = (int)ht_utf8_prefix(nm, 20);
		row(&f, "%7u %.*s%*s %s", r->pid, cut, nm, 20 - cut, "", cols);
		vm_details(&f, show, r, interval, total, o);
	}
	if (f.dropped) {
		f.height = 0;
		row(&f, "... %zu more rows", f.dropped);
	}
	free(rows);
	return ferror(out) ? -EIO : (int)f.lines;
}
