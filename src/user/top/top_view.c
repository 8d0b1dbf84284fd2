// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "top/top_view.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "exits/exit_reasons.h"
#include "exits/exit_view.h"
#include "exits/vcpu_wakeups.h"
#include "common/escape.h"
#include "hypertrace/record.h"
#include "common/util.h"

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
	struct ht_vcpu_halts halts; /* its vCPU threads' halts in the interval: polled, caught, polling lost, their wake-ups */
	struct ht_vcpu_irqs irqs;   /* its vCPU threads' interrupts in the interval, acceptance to guest */
	struct ht_vcpu_timer_due due; /* its vCPU threads' timer wake-ups in the interval, due time to guest */
	unsigned int threads;      /* vCPU threads known */
};

/*
 * The columns after PID and VM, in the order shown. A screen too narrow for
 * all of them drops them in the order of drop_rank, highest first: the
 * p99 of the timer wake-ups from their timer's due time to guest, the
 * p99 of the interrupts from acceptance to guest, the
 * p99 of the wake-ups from a halt, the CPU polling burned without catching
 * one, the share of polled halts that polling caught, then the hypercall
 * rate, then
 * p50, then p99, then the rarer states; the exit rate and where the vCPUs'
 * time went stay (docs: top(1), "COLUMNS").
 */
enum column { COL_EXITS, COL_P50, COL_P99, COL_GUEST, COL_KVM, COL_VMM, COL_WAIT, COL_HALT, COL_BLK, COL_POLL, COL_PBURN,
	      COL_WAKE99, COL_IRQ99, COL_DUE99, COL_HCALLS, NCOLS };
static const struct {
	const char *title;
	int width;
	int drop_rank;
} column_info[NCOLS] = {
	[COL_EXITS] = { "EXITS/S", 8, 0 }, [COL_P50] = { "P50", 6, 8 },    [COL_P99] = { "P99", 6, 7 },
	[COL_GUEST] = { "GUEST%", 6, 1 },  [COL_KVM] = { "KVM%", 6, 2 },   [COL_VMM] = { "VMM%", 6, 3 },
	[COL_WAIT] = { "WAIT%", 6, 4 },    [COL_HALT] = { "HALT%", 6, 5 }, [COL_BLK] = { "BLK%", 6, 6 },
	[COL_POLL] = { "POLL%", 6, 10 },   [COL_PBURN] = { "PBURN%", 6, 11 }, [COL_WAKE99] = { "WAKE99", 6, 12 },
	[COL_IRQ99] = { "IRQ99", 6, 13 },  [COL_DUE99] = { "DUE99", 6, 14 }, [COL_HCALLS] = { "HCALL/S", 8, 9 },
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
/* part in % of the threads' time, the sum of their states; -1: no time. */
static double ns_pct(const __u64 ns[HT_VCPU_NSTATES], uint64_t part)
{
	uint64_t span = 0;

	for (int i = 0; i < HT_VCPU_NSTATES; i++)
		span = ht_sat_add(span, ns[i]);
	return span ? 100.0 * (double)part / (double)span : -1.0;
}

static double state_pct(const __u64 ns[HT_VCPU_NSTATES], enum ht_vcpu_state k)
{
	return ns_pct(ns, ns[k]);
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

/*
 * The columns after the name that fit (show): exits/s, p50, p99, each
 * state's %, the polled halts polling caught in % (of polled; "-" for none),
 * the CPU that polling burned in halts that slept in % of the threads' time
 * (as the states; "-" for no account), the p99 of the halts' wake-ups to the guest running, of the interrupts
 * from acceptance to guest and of the timer wake-ups from their due time to guest (bucket bounds; "-" for
 * none), hypercalls/s. h, irqs, due: the interval's halts, interrupts and timer wake-ups, NULL for none.
 */
static void columns(char *buf, size_t len, const bool show[NCOLS], const struct ht_exit_series *s, uint64_t hcalls,
		    const __u64 *state_ns, const struct ht_vcpu_halts *h, const struct ht_vcpu_irqs *irqs,
		    const struct ht_vcpu_timer_due *due, uint64_t interval_ns)
{
	struct ht_vcpu_wake_hist wake, irq;

	ht_wakeups_all(&wake, h ? &h->wake : &(struct ht_vcpu_wakeups){ 0 });
	ht_irqs_all(&irq, irqs ? irqs : &(struct ht_vcpu_irqs){ 0 });
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
		case COL_POLL:
			if (h && h->polled)
				snprintf(v, sizeof(v), "%.1f", 100.0 * (double)h->caught / (double)h->polled);
			else
				snprintf(v, sizeof(v), "-");
			break;
		case COL_PBURN:
			pct = state_ns && h ? ns_pct(state_ns, h->slept_poll_ns) : -1.0;
			if (pct < 0)
				snprintf(v, sizeof(v), "-");
			else
				snprintf(v, sizeof(v), "%.1f", pct);
			break;
		case COL_WAKE99:
			fmt_le(v, sizeof(v), ht_wake_percentile(&wake, 99), ht_wake_count(&wake));
			break;
		case COL_IRQ99:
			fmt_le(v, sizeof(v), ht_wake_percentile(&irq, 99), ht_wake_count(&irq));
			break;
		case COL_DUE99:
			fmt_le(v, sizeof(v), due ? ht_wake_percentile(&due->h, 99) : 0, due ? ht_wake_count(&due->h) : 0);
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

/*
 * The interval's tables, grouped once: series by key (a VM's, then a
 * vCPU's, are runs), the run's threads by VM. Every lookup below is a
 * bisection: a frame costs n log n whatever the host or BPF holds, where
 * scanning every series or thread for each VM or vCPU cost their product.
 */
struct groups {
	const struct ht_exit_table *interval, *total;
	const struct ht_exit_series **series;     /* interval's, by key */
	const struct ht_vcpu_thread_row **threads; /* total's, by (pid, tid, start) */
	const struct ht_exit_cause_row **causes;  /* interval's, by reason, busiest first (ht_exit_causes_sorted) */
	size_t ncauses;
};

/* Causes shown under each exit reason: the busiest of the interval. */
#define TOP_CAUSES_PER_REASON 2
/* Exit reasons summed for a VM's lines: the first met, the rest left out. */
#define VM_REASONS 64


/* [*from, *to) of the interval's series of pid, and of vcpu too if vcpu >= 0. */
static void series_run(const struct groups *g, uint32_t pid, int vcpu, size_t *from, size_t *to)
{
	size_t lo = 0, hi = g->interval->nseries;

	for (int end = 0; end < 2; end++) { /* the first not below (pid, vcpu), then the first above */
		size_t a = 0, b = g->interval->nseries;

		while (a < b) {
			size_t mid = a + (b - a) / 2;
			const struct ht_exit_key *k = &g->series[mid]->key;
			bool below = k->pid < pid || (k->pid == pid && vcpu >= 0 && k->vcpu < vcpu);
			bool at = k->pid == pid && (vcpu < 0 || k->vcpu == vcpu);

			if (below || (end && at))
				a = mid + 1;
			else
				b = mid;
		}
		*(end ? &hi : &lo) = a;
	}
	*from = lo;
	*to = hi;
}

/* [*from, *to) of the run's threads of pid. */
static void thread_run(const struct groups *g, uint32_t pid, size_t *from, size_t *to)
{
	size_t a = 0, b = g->total->nthreads;

	while (a < b) {
		size_t mid = a + (b - a) / 2;

		if (g->threads[mid]->w.pid < pid)
			a = mid + 1;
		else
			b = mid;
	}
	*from = a;
	for (b = a; b < g->total->nthreads && g->threads[b]->w.pid == pid;)
		b++;
	*to = b;
}

/* A thread's row in the interval (its account, its halts), or NULL: the interval's threads are in (tid, start) order (exit_table.h). */
static const struct ht_vcpu_thread_row *interval_row(const struct groups *g, const struct ht_vcpu_thread_row *t)
{
	size_t a = 0, b = g->interval->nthreads;

	while (a < b) {
		size_t mid = a + (b - a) / 2;
		const struct ht_vcpu_thread_row *m = &g->interval->threads[mid];
		int c = m->w.tid != t->w.tid ? (m->w.tid < t->w.tid ? -1 : 1) :
					      (m->a.start_ns > t->a.start_ns) - (m->a.start_ns < t->a.start_ns);

		if (c == 0)
			return m;
		if (c < 0)
			a = mid + 1;
		else
			b = mid;
	}
	return NULL;
}

/* A vCPU's exits in the interval, summed over its reasons. */
struct vcpu_sum {
	uint16_t vcpu;
	struct ht_exit_series s;
	uint64_t hcalls;
};

/* The sums of the vCPUs of the VM's series [sa, sb) (a run, in vcpu order), one per vCPU; how many. */
static size_t sum_vcpus(struct vcpu_sum *sums, const struct groups *g, size_t sa, size_t sb)
{
	size_t nv = 0;

	for (size_t k = sa; k < sb; k++) {
		const struct ht_exit_series *e = g->series[k];

		if (!nv || sums[nv - 1].vcpu != e->key.vcpu)
			sums[nv++] = (struct vcpu_sum){ .vcpu = e->key.vcpu, .s = { .minmax_exact = true } };
		ht_exit_series_add(&sums[nv - 1].s, e);
		sums[nv - 1].hcalls = ht_sat_add(sums[nv - 1].hcalls, is_hypercall(&e->key) ? e->h.count : 0);
	}
	return nv;
}

/* The sum of vcpu among the nv of sums, or an empty one: a vCPU without exits in the interval. */
static const struct vcpu_sum *vcpu_sum_of(const struct vcpu_sum *sums, size_t nv, uint16_t vcpu)
{
	static const struct vcpu_sum none = { .s = { .minmax_exact = true } };
	size_t a = 0, b = nv;

	while (a < b) {
		size_t mid = a + (b - a) / 2;

		if (sums[mid].vcpu == vcpu)
			return &sums[mid];
		if (sums[mid].vcpu < vcpu)
			a = mid + 1;
		else
			b = mid;
	}
	return &none;
}

/* A line for each live vCPU thread of the VM; false if out of memory. */
static bool vcpu_rows(struct frame *f, const bool show[NCOLS], const struct vm_row *r, const struct groups *g,
		      const struct ht_top_view_opts *o)
{
	char cols[160], name[HT_ESC_SIZE(16) + 16], esc[HT_ESC_SIZE(16)];
	size_t from, to, sa, sb, nv;

	/* Each vCPU's sums once: threads of one vCPU share them. */
	series_run(g, r->pid, -1, &sa, &sb);
	struct vcpu_sum *sums = calloc(sb - sa + 1, sizeof(*sums));
	if (!sums)
		return false;
	nv = sum_vcpus(sums, g, sa, sb);
	thread_run(g, r->pid, &from, &to);
	for (size_t i = from; i < to; i++) {
		const struct ht_vcpu_thread_row *t = g->threads[i];

		if (t->gone)
			continue;
		const struct vcpu_sum *vs = vcpu_sum_of(sums, nv, t->w.vcpu);
		const char *tn = o->thread_name ? o->thread_name(o->ctx, t->w.pid, t->w.tid) : NULL;
		snprintf(name, sizeof(name), "vCPU %u %s", (unsigned int)t->w.vcpu,
			 ht_escape(esc, sizeof(esc), tn ? tn : "", HT_ESC_TEXT));
		const struct ht_vcpu_thread_row *in = interval_row(g, t);

		columns(cols, sizeof(cols), show, &vs->s, vs->hcalls, in ? in->a.state_ns : NULL, in ? &in->h : NULL,
			in ? &in->irqs : NULL, in ? &in->due : NULL, o->interval_ns);
		row(f, "%7u   %-18.18s %s", t->w.tid, name, cols);
	}
	free(sums);
	return true;
}

/* The VM's reasons (the first VM_REASONS met), each summed over its vCPUs, busiest first, into sums; how many. */
static size_t sum_reasons(struct ht_exit_series sums[VM_REASONS], const struct vm_row *r, const struct groups *g)
{
	size_t from, to, n = 0;

	series_run(g, r->pid, -1, &from, &to);
	for (size_t k = from; k < to; k++) {
		const struct ht_exit_series *e = g->series[k];
		size_t j;

		for (j = 0; j < n; j++)
			if (sums[j].key.isa == e->key.isa && sums[j].key.reason == e->key.reason)
				break;
		if (j == n) {
			if (n == VM_REASONS)
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
	return n;
}

/* A line for each of the VM's reasons, each followed by its busiest causes. */
static void reason_rows(struct frame *f, const bool show[NCOLS], const struct vm_row *r, const struct groups *g,
			const struct ht_top_view_opts *o)
{
	char cols[160], name[HT_ESC_SIZE(16) + 16];
	struct ht_exit_series sums[VM_REASONS];
	size_t n = sum_reasons(sums, r, g);

	for (size_t j = 0; j < n; j++) {
		char reason[40];

		ht_exit_reason_format(reason, sizeof(reason), sums[j].key.isa, sums[j].key.reason);
		snprintf(name, sizeof(name), "  %s", reason);
		columns(cols, sizeof(cols), show, &sums[j], is_hypercall(&sums[j].key) ? sums[j].h.count : 0, NULL, NULL,
			NULL, NULL, o->interval_ns);
		row(f, "%7s   %-18.18s %s", "", name, cols);
		/* Its causes: one line each, cut to the screen ("io 0x3f8 out 1: 1200/s, kvm p50 <=4.1us, ..."). */
		size_t first, nc = ht_exit_causes_of_reason(g->causes, g->ncauses, r->pid, sums[j].key.isa,
							   sums[j].key.reason, &first);
		for (size_t c = 0; c < nc && c < TOP_CAUSES_PER_REASON; c++) {
			char cause[200];

			ht_exit_cause_summary(cause, sizeof(cause), g->causes[first + c], o->interval_ns);
			row(f, "%7s       %s", "", cause);
		}
	}
}

/* The lines under a VM's: its vCPU threads, then its reasons, as asked; none of its reasons if out of memory. */
static void vm_details(struct frame *f, const bool show[NCOLS], const struct vm_row *r, const struct groups *g,
		       const struct ht_top_view_opts *o)
{
	if (o->vcpus && !vcpu_rows(f, show, r, g, o))
		return;
	if (o->reasons)
		reason_rows(f, show, r, g, o);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static struct vm_row *find_row(struct vm_row *rows, size_t n, uint32_t pid)
{
	size_t a = 0, b = n;

	while (a < b) { /* rows are in pid order until they are sorted for the screen */
		size_t mid = a + (b - a) / 2;

		if (rows[mid].pid == pid)
			return &rows[mid];
		if (rows[mid].pid < pid)
			a = mid + 1;
		else
			b = mid;
	}
	return NULL;
}

/* The rows: every live VM process with vCPU threads or exits, in pid order. */
static size_t make_rows(struct vm_row *rows, uint32_t *pids, const struct ht_exit_table *interval,
			const struct ht_exit_table *total, const struct ht_top_view_opts *o)
{
	size_t np = 0, n = 0;

	for (size_t i = 0; i < total->nthreads; i++)
		if (!total->threads[i].gone)
			pids[np++] = total->threads[i].w.pid;
	for (size_t i = 0; i < interval->nseries; i++)
		pids[np++] = interval->series[i].key.pid;
	qsort(pids, np, sizeof(*pids), cmp_u32);
	for (size_t i = 0; i < np; i++) {
		if ((i && pids[i] == pids[i - 1]) || (o->alive && !o->alive(o->ctx, pids[i])))
			continue;
		struct vm_row *r = &rows[n++];
		memset(r, 0, sizeof(*r));
		r->pid = pids[i];
		r->sum.minmax_exact = true;
		const char *name = o->vm_name ? o->vm_name(o->ctx, pids[i]) : NULL;
		ht_escape(r->name, sizeof(r->name), name ? name : "", HT_ESC_TEXT);
	}
	return n;
}

/* g's series and threads in the order its lookups bisect, and the interval's causes if shown; -ENOMEM or 0. */
static int group_tables(struct groups *g, const struct ht_top_view_opts *o)
{
	for (size_t i = 0; i < g->interval->nseries; i++)
		g->series[i] = &g->interval->series[i];
	for (size_t i = 0; i < g->total->nthreads; i++)
		g->threads[i] = &g->total->threads[i];
	qsort(g->series, g->interval->nseries, sizeof(*g->series), ht_exit_series_ptr_cmp);
	qsort(g->threads, g->total->nthreads, sizeof(*g->threads), ht_vcpu_thread_ptr_cmp_by_vm);
	if (o->reasons) {
		g->causes = ht_exit_causes_sorted(&g->interval->causes, &g->ncauses);
		if (g->ncauses == SIZE_MAX)
			return -ENOMEM;
	}
	return 0;
}

/* Each of the n rows' exits, hypercalls, vCPU threads and accounts; the exits of them all. */
static uint64_t sum_rows(struct vm_row *rows, size_t n, const struct ht_exit_table *interval,
			 const struct ht_exit_table *total)
{
	uint64_t exits = 0;

	for (size_t i = 0; i < interval->nseries; i++) {
		const struct ht_exit_series *s = &interval->series[i];
		struct vm_row *r = find_row(rows, n, s->key.pid);
		if (!r)
			continue;
		ht_exit_series_add(&r->sum, s);
		r->hcalls = ht_sat_add(r->hcalls, is_hypercall(&s->key) ? s->h.count : 0);
		exits = ht_sat_add(exits, s->h.count);
	}
	for (size_t i = 0; i < total->nthreads; i++) {
		struct vm_row *r = find_row(rows, n, total->threads[i].w.pid);
		if (r && !total->threads[i].gone)
			r->threads++;
	}
	for (size_t i = 0; i < interval->nthreads; i++) {
		struct vm_row *r = find_row(rows, n, interval->threads[i].w.pid);
		for (int k = 0; r && k < HT_VCPU_NSTATES; k++)
			r->state_ns[k] = ht_sat_add(r->state_ns[k], interval->threads[i].a.state_ns[k]);
		if (r) {
			r->halts.polled = ht_sat_add(r->halts.polled, interval->threads[i].h.polled);
			r->halts.caught = ht_sat_add(r->halts.caught, interval->threads[i].h.caught);
			r->halts.slept_poll_ns = ht_sat_add(r->halts.slept_poll_ns, interval->threads[i].h.slept_poll_ns);
			ht_wakeups_add(&r->halts.wake, &interval->threads[i].h.wake);
			ht_irqs_add(&r->irqs, &interval->threads[i].irqs);
			ht_timer_due_add(&r->due, &interval->threads[i].due);
		}
	}
	return exits;
}

/* The lines above the rows: the frame's totals, lost exits and causes, the keys, and the titles of the columns shown. */
static void write_header(struct frame *f, const struct ht_exit_table *interval, const struct ht_top_view_opts *o,
			 size_t nvms, uint64_t exits, bool show[NCOLS])
{
	char when[16] = "", head[160];
	size_t hn = 0;
	uint64_t lost;
	struct tm tm;

	if (localtime_r(&o->now, &tm))
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
	row(f, "hypertrace-bpf top - %s, every %.1fs: %zu VMs, %.0f exits/s, sort %s", when,
	    (double)o->interval_ns / 1e9, nvms, rate(exits, o->interval_ns), ht_top_sort_name(o->sort));
	/* Exits BPF could not count are not in EXITS/S: say how many, and why, while it happens. */
	lost = ht_sat_add(interval->lost_series_full, interval->lost_no_thread);
	if (lost)
		row(f, "lost %.0f exits/s: %.0f/s series table full, %.0f/s no vCPU thread slot", rate(lost, o->interval_ns),
		    rate(interval->lost_series_full, o->interval_ns), rate(interval->lost_no_thread, o->interval_ns));
	/* Exits counted whose cause was not (the BPF cause table full): the causes shown miss them. */
	if (interval->causes.lost)
		row(f, "lost the causes of %.0f exits/s: cause table full (the exits are counted)",
		    rate(interval->causes.lost, o->interval_ns));
	if (o->terminal)
		row(f, "keys: q quit, v vCPUs %s, r reasons %s, s sort (%s)", o->vcpus ? "on" : "off",
		    o->reasons ? "on" : "off", ht_top_sort_name((o->sort + 1) % HT_TOP_NSORTS));
	columns_that_fit(f->width, show);
	for (int c = 0; c < NCOLS; c++)
		if (show[c])
			hn += (size_t)snprintf(head + hn, sizeof(head) - hn, " %*s", column_info[c].width,
					       column_info[c].title);
	row(f, "%7s %-20s%s", "PID", "VM", head);
}

int ht_top_view_write(FILE *out, const struct ht_exit_table *interval, const struct ht_exit_table *total,
		      const struct ht_top_view_opts *o)
{
	struct frame f = { .out = out, .width = o->width ? o->width : 80, .height = o->height };
	size_t cap = interval->nseries + total->nthreads + 1, n;
	struct vm_row *rows = calloc(cap, sizeof(*rows));
	uint32_t *pids = calloc(cap, sizeof(*pids));
	struct groups g = { .interval = interval, .total = total,
			    .series = calloc(interval->nseries + 1, sizeof(*g.series)),
			    .threads = calloc(total->nthreads + 1, sizeof(*g.threads)) };
	uint64_t exits;
	char cols[160];
	bool show[NCOLS];
	int ret;

	if (!rows || !pids || !g.series || !g.threads) {
		ret = -ENOMEM;
		goto out;
	}
	ret = group_tables(&g, o);
	if (ret)
		goto out;
	n = make_rows(rows, pids, interval, total, o);
	exits = sum_rows(rows, n, interval, total);
	sort_key = o->sort;
	qsort(rows, n, sizeof(*rows), cmp_rows);

	write_header(&f, interval, o, n, exits, show);
	for (size_t i = 0; i < n; i++) {
		const struct vm_row *r = &rows[i];

		columns(cols, sizeof(cols), show, &r->sum, r->hcalls, r->threads ? r->state_ns : NULL, &r->halts, &r->irqs,
			&r->due, o->interval_ns);
		/* The name cut to its column between two characters, never inside one. */
		const char *nm = r->name[0] ? r->name : "?";
		int cut = (int)ht_utf8_prefix(nm, 20);
		row(&f, "%7u %.*s%*s %s", r->pid, cut, nm, 20 - cut, "", cols);
		vm_details(&f, show, r, &g, o);
	}
	if (f.dropped) {
		f.height = 0;
		row(&f, "... %zu more rows", f.dropped);
	}
	ret = ferror(out) ? -EIO : (int)f.lines;
out:
	free(rows);
	free(pids);
	free(g.series);
	free(g.threads);
	free(g.causes);
	return ret;
}
