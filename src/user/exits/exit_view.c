// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "exits/exit_view.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "exits/exit_reasons.h"
#include "common/escape.h"
#include "common/util.h"

void ht_exit_fmt_ns(char *buf, size_t len, uint64_t ns)
{
	/* Three significant digits at most: a column stays narrow whatever the unit. */
	static const struct { uint64_t below; double div; const char *unit; } units[] = {
		{ 1000, 1, "ns" }, { 1000000, 1e3, "us" }, { 1000000000, 1e6, "ms" }, { 1000000000000ull, 1e9, "s" },
	};

	if (ns == UINT64_MAX) {
		snprintf(buf, len, "inf");
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(units); i++) {
		if (ns >= units[i].below)
			continue;
		double v = (double)ns / units[i].div;
		snprintf(buf, len, v < 9.995 && i ? "%.2f%s" : v < 99.95 && i ? "%.1f%s" : "%.0f%s", v, units[i].unit);
		return;
	}
	snprintf(buf, len, "%.0fs", (double)ns / 1e9);
}

struct view {
	FILE *out;
	unsigned int width;
	int err;
	const struct ht_exit_cause_row **causes; /* t->causes sorted (ht_exit_causes_sorted); NULL: none */
	size_t ncauses;
};

/* One line, cut to the width at a character boundary. */
static void __attribute__((format(printf, 2, 3))) line(struct view *v, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	n = strlen(buf);
	if (n > v->width) {
		n = v->width;
		while (n > 0 && ((unsigned char)buf[n] & 0xc0) == 0x80)
			n--;
		buf[n] = '\0';
	}
	if (fprintf(v->out, "%s\n", buf) < 0)
		v->err = -EIO;
}

static void fmt_rate(char *buf, size_t len, uint64_t count, uint64_t elapsed_ns)
{
	if (elapsed_ns)
		snprintf(buf, len, "%.1f", (double)count * 1e9 / (double)elapsed_ns);
	else
		snprintf(buf, len, "-");
}

static void reason_header(struct view *v, const char *indent)
{
	line(v, "%s%-20s %9s %9s %8s %9s %9s %8s", indent, "reason", "count", "rate/s", "min", "p50", "p99", "max");
}

static void reason_row(struct view *v, const char *indent, const struct ht_exit_series *s, uint64_t elapsed_ns)
{
	char name[48], rate[24], mn[16], p50[16], p99[16], mx[16], le50[20], le99[20];

	ht_exit_reason_format(name, sizeof(name), s->key.isa, s->key.reason);
	fmt_rate(rate, sizeof(rate), s->h.count, elapsed_ns);
	ht_exit_fmt_ns(mn, sizeof(mn), ht_exit_min(s));
	ht_exit_fmt_ns(p50, sizeof(p50), ht_exit_percentile(s, 50));
	ht_exit_fmt_ns(p99, sizeof(p99), ht_exit_percentile(s, 99));
	ht_exit_fmt_ns(mx, sizeof(mx), ht_exit_max(s));
	snprintf(le50, sizeof(le50), "<=%s", p50);
	snprintf(le99, sizeof(le99), "<=%s", p99);
	line(v, "%s%-20s %9llu %9s %s%7s %9s %9s %s%7s", indent, name, (unsigned long long)s->h.count, rate,
	     s->minmax_exact ? " " : ">", mn, le50, le99, s->minmax_exact ? " " : "<", mx);
}

static int by_count_desc(const void *a, const void *b)
{
	const struct ht_exit_series *x = a, *y = b;

	if (x->h.count != y->h.count)
		return x->h.count < y->h.count ? 1 : -1;
	if (x->key.isa != y->key.isa)
		return x->key.isa < y->key.isa ? -1 : 1;
	return (x->key.reason > y->key.reason) - (x->key.reason < y->key.reason);
}

static int by_reason(const void *a, const void *b)
{
	const struct ht_exit_series *x = *(const struct ht_exit_series *const *)a;
	const struct ht_exit_series *y = *(const struct ht_exit_series *const *)b;

	if (x->key.isa != y->key.isa)
		return x->key.isa < y->key.isa ? -1 : 1;
	return (x->key.reason > y->key.reason) - (x->key.reason < y->key.reason);
}

/*
 * Series [from, to) summed per (isa, reason) over vCPUs into sums (n of
 * them), busiest first. One sort puts a reason's series next to each other
 * (order is scratch space the size of the group): n log n however many
 * reasons a VM has.
 */
static size_t sum_reasons(const struct ht_exit_series *const *from, const struct ht_exit_series *const *to,
			  struct ht_exit_series *sums, const struct ht_exit_series **order)
{
	size_t n = 0, k = (size_t)(to - from);

	if (!k)
		return 0;
	memcpy(order, from, k * sizeof(*order));
	qsort(order, k, sizeof(*order), by_reason);
	for (size_t i = 0; i < k; i++) {
		const struct ht_exit_series *s = order[i];

		if (!n || by_reason(&order[i - 1], &order[i])) {
			memset(&sums[n], 0, sizeof(sums[n]));
			sums[n].key = s->key;
			sums[n].key.vcpu = 0;
			sums[n].minmax_exact = true;
			n++;
		}
		ht_exit_series_add(&sums[n - 1], s);
	}
	qsort(sums, n, sizeof(*sums), by_count_desc);
	return n;
}

void ht_exit_cause_summary(char *buf, size_t len, const struct ht_exit_cause_row *c, uint64_t elapsed_ns)
{
	char name[96], rate[24], kvm[16], vmm[16], vmm_part[40] = "";

	ht_exit_cause_format(name, sizeof(name), &c->key);
	fmt_rate(rate, sizeof(rate), c->h.count, elapsed_ns);
	ht_exit_fmt_ns(kvm, sizeof(kvm), ht_exit_cause_percentile(c->h.kvm_slots, c->h.count, 50));
	if (c->h.vmm_count) {
		ht_exit_fmt_ns(vmm, sizeof(vmm), ht_exit_cause_percentile(c->h.vmm_slots, c->h.vmm_count, 50));
		snprintf(vmm_part, sizeof(vmm_part), ", vmm p50 <=%s", vmm);
	}
	if (elapsed_ns)
		snprintf(buf, len, "%s: %s/s, kvm p50 <=%s%s", name, rate, kvm, vmm_part);
	else
		snprintf(buf, len, "%s: %llu, kvm p50 <=%s%s", name, (unsigned long long)c->h.count, kvm, vmm_part);
}

/* Under a VM's reason (key: its VM, ISA and reason): its busiest causes, one line each. */
static void reason_causes(struct view *v, const char *indent, const struct ht_exit_key *key,
			  const struct ht_exit_view_opts *o)
{
	size_t first, n, shown;
	char buf[200];

	if (!o->causes_per_reason || !v->causes)
		return;
	n = ht_exit_causes_of_reason(v->causes, v->ncauses, key->pid, key->isa, key->reason, &first);
	shown = n > o->causes_per_reason ? o->causes_per_reason : n;
	for (size_t i = 0; i < shown; i++) {
		ht_exit_cause_summary(buf, sizeof(buf), v->causes[first + i], o->elapsed_ns);
		line(v, "%s    %s", indent, buf);
	}
	if (shown < n)
		line(v, "%s    ... %zu more causes", indent, n - shown);
}

static void reason_table(struct view *v, const char *indent, struct ht_exit_series *sums, size_t n,
			 const struct ht_exit_view_opts *o)
{
	size_t shown = o->max_reasons && n > o->max_reasons ? o->max_reasons : n;
	uint64_t rest = 0;

	reason_header(v, indent);
	for (size_t i = 0; i < n; i++) {
		if (i < shown) {
			reason_row(v, indent, &sums[i], o->elapsed_ns);
			reason_causes(v, indent, &sums[i].key, o);
		} else {
			rest = ht_sat_add(rest, sums[i].h.count);
		}
	}
	if (shown < n)
		line(v, "%s... %zu more reasons, %llu exits", indent, n - shown, (unsigned long long)rest);
}

/* Where a vCPU thread's time went: each state's share of its span, and the span. Nothing for an empty one. */
static void account_line(struct view *v, const char *indent, const struct ht_vcpu_thread_row *r)
{
	uint64_t span = ht_vcpu_account_span(r);
	char buf[256], total[16];
	size_t n = 0;

	if (!span)
		return;
	for (int k = 0; k < HT_VCPU_NSTATES && n < sizeof(buf); k++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s %s %.1f%%", k ? "," : "", ht_vcpu_state_names[k],
				      100.0 * (double)r->a.state_ns[k] / (double)span);
	ht_exit_fmt_ns(total, sizeof(total), span);
	line(v, "%s%s of %s", indent, buf + 1, total);
}

static int cmp_u16(const void *a, const void *b)
{
	uint16_t x = *(const uint16_t *)a, y = *(const uint16_t *)b;

	return (x > y) - (x < y);
}

int ht_exit_view_threads_per_vcpu(const struct ht_vcpu_thread_row *const *rows, size_t n, size_t *counts)
{
	uint16_t *vcpus = malloc((n + 1) * sizeof(*vcpus));

	if (!vcpus)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		vcpus[i] = rows[i]->w.vcpu;
	qsort(vcpus, n, sizeof(*vcpus), cmp_u16);
	for (size_t i = 0; i < n; i++) {
		size_t lo = 0, hi = n, end;

		while (lo < hi) { /* the first of the vCPU */
			size_t mid = lo + (hi - lo) / 2;

			if (vcpus[mid] < rows[i]->w.vcpu)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (end = lo, hi = n; end < hi;) { /* past its last */
			size_t mid = end + (hi - end) / 2;

			if (vcpus[mid] <= rows[i]->w.vcpu)
				end = mid + 1;
			else
				hi = mid;
		}
		counts[i] = end - lo;
	}
	free(vcpus);
	return 0;
}

void ht_exit_view_thread_start(char *buf, size_t len, const struct ht_vcpu_thread_row *r, uint64_t start_ns)
{
	uint64_t t = r->a.start_ns;

	/* Files before version 5 have no start (0). */
	if (!t)
		snprintf(buf, len, "%s", "");
	else if (t >= start_ns)
		snprintf(buf, len, ", from +%.3f s", (double)(t - start_ns) / 1e9);
	else
		snprintf(buf, len, ", from -%.3f s", (double)(start_ns - t) / 1e9);
}

/*
 * A vCPU thread's line. exits are its vCPU's: when the vCPU has had other
 * threads (vcpu_threads > 1), each line names its thread by its start and
 * says whose exits they are, or the rows would look the same.
 */
static void vcpu_line(struct view *v, const struct ht_vcpu_thread_row *r, uint64_t exits, size_t vcpu_threads,
		      const struct ht_exit_view_opts *o)
{
	char thread[HT_ESC_SIZE(16) + 4] = "", wait[16], pre[16], vol[16], share[24] = "", from[40] = "",
	     whose[64] = "";
	const char *tn = o->thread_name ? o->thread_name(o->name_ctx, r->w.pid, r->w.tid) : NULL;

	if (tn && tn[0]) {
		char esc[HT_ESC_SIZE(16)];

		snprintf(thread, sizeof(thread), "%s, ", ht_escape(esc, sizeof(esc), tn, HT_ESC_TEXT));
	}
	ht_exit_fmt_ns(wait, sizeof(wait), r->w.wait_ns);
	ht_exit_fmt_ns(pre, sizeof(pre), r->w.preempt_ns);
	ht_exit_fmt_ns(vol, sizeof(vol), r->w.voluntary_ns);
	if (o->elapsed_ns)
		snprintf(share, sizeof(share), " (%.1f%%)", 100.0 * (double)r->w.wait_ns / (double)o->elapsed_ns);
	if (vcpu_threads > 1) {
		ht_exit_view_thread_start(from, sizeof(from), r, o->start_ns);
		snprintf(whose, sizeof(whose), " (vCPU %u's, of its %zu threads)", (unsigned int)r->w.vcpu, vcpu_threads);
	}
	line(v, "  vCPU %u (%stid %u%s%s): %llu exits%s, wait %s%s, preempted %llu (%s), voluntary %llu (%s)",
	     (unsigned int)r->w.vcpu, thread, r->w.tid, r->gone ? ", ended" : "", from, (unsigned long long)exits,
	     whose, wait, share, (unsigned long long)r->w.preempt_count, pre, (unsigned long long)r->w.voluntary_count,
	     vol);
	account_line(v, "    time: ", r);
}

/* A vCPU's exits: the sum of its run of series. */
struct vcpu_total {
	uint16_t vcpu;
	uint64_t exits;
};

/* The exits of vcpu among a VM's totals (in vCPU order), by bisection; 0 if it has none. */
static uint64_t vcpu_exits(const struct vcpu_total *totals, size_t n, uint16_t vcpu)
{
	size_t a = 0, b = n;

	while (a < b) {
		size_t mid = a + (b - a) / 2;

		if (totals[mid].vcpu == vcpu)
			return totals[mid].exits;
		if (totals[mid].vcpu < vcpu)
			a = mid + 1;
		else
			b = mid;
	}
	return 0;
}

/* Scratch of a view: as large as the table, allocated once. */
struct scratch {
	struct ht_exit_series *sums;
	const struct ht_exit_series **order;
	struct vcpu_total *totals;
	size_t *per_vcpu; /* of a VM's threads: how many of its vCPU's each is */
};

/* One VM: its series are [from, to) (key order), its threads [tfrom, tto) (tid order). */
static void vm_block(struct view *v, uint32_t pid, const struct ht_exit_series *const *from,
		     const struct ht_exit_series *const *to, const struct ht_vcpu_thread_row *const *tfrom,
		     const struct ht_vcpu_thread_row *const *tto, const struct ht_exit_view_opts *o, struct scratch *sc)
{
	char name[HT_ESC_SIZE(64) + 2] = "", rate[24], esc[HT_ESC_SIZE(64)];
	const char *vm = o->vm_name ? o->vm_name(o->name_ctx, pid) : NULL;
	uint64_t total = 0, in_host = 0;

	for (const struct ht_exit_series *const *s = from; s < to; s++) {
		total = ht_sat_add(total, (*s)->h.count);
		in_host = ht_sat_add(in_host, (*s)->in_host_at_end);
	}
	if (vm && vm[0])
		snprintf(name, sizeof(name), "%s ", ht_escape(esc, sizeof(esc), vm, HT_ESC_TEXT));
	fmt_rate(rate, sizeof(rate), total, o->elapsed_ns);
	line(v, "%s", "");
	if (in_host)
		line(v, "VM %s(pid %u): %llu exits, %s/s; %llu still in the host at the end", name, pid,
		     (unsigned long long)total, rate, (unsigned long long)in_host);
	else
		line(v, "VM %s(pid %u): %llu exits, %s/s", name, pid, (unsigned long long)total, rate);
	size_t n = sum_reasons(from, to, sc->sums, sc->order), nvcpus = 0;
	if (n)
		reason_table(v, "  ", sc->sums, n, o);
	/* Each vCPU's exits once (its series are a run), for its threads and its own table. */
	for (const struct ht_exit_series *const *s = from; s < to; s++) {
		if (!nvcpus || sc->totals[nvcpus - 1].vcpu != (*s)->key.vcpu)
			sc->totals[nvcpus++] = (struct vcpu_total){ .vcpu = (*s)->key.vcpu };
		sc->totals[nvcpus - 1].exits = ht_sat_add(sc->totals[nvcpus - 1].exits, (*s)->h.count);
	}
	/* vCPU threads, then (report) each vCPU's own reasons. */
	if (ht_exit_view_threads_per_vcpu(tfrom, (size_t)(tto - tfrom), sc->per_vcpu)) {
		v->err = -ENOMEM;
		return;
	}
	for (const struct ht_vcpu_thread_row *const *r = tfrom; r < tto; r++)
		vcpu_line(v, *r, vcpu_exits(sc->totals, nvcpus, (*r)->w.vcpu), sc->per_vcpu[r - tfrom], o);
	if (!o->per_vcpu_reasons)
		return;
	/* Causes are per VM: a vCPU's reasons have none of their own. */
	struct ht_exit_view_opts per_vcpu = *o;
	per_vcpu.causes_per_reason = 0;
	size_t k = 0;
	for (const struct ht_exit_series *const *s = from; s < to; k++) {
		const struct ht_exit_series *const *end = s;

		while (end < to && (*end)->key.vcpu == (*s)->key.vcpu)
			end++;
		n = sum_reasons(s, end, sc->sums, sc->order);
		line(v, "  vCPU %u: %llu exits", (unsigned int)(*s)->key.vcpu, (unsigned long long)sc->totals[k].exits);
		reason_table(v, "    ", sc->sums, n, &per_vcpu);
		s = end;
	}
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}


/*
 * Every grouping comes from sorting once (series by key, threads by VM and
 * tid, VMs by pid) and walking: n log n whatever a file holds, where a VM's
 * threads or reasons looked up one by one would cost their product.
 */
int ht_exit_view_write(FILE *out, const struct ht_exit_table *t, const struct ht_exit_view_opts *o)
{
	struct view v = { .out = out, .width = o->width ? o->width : 80 };
	struct scratch sc = { .sums = calloc(t->nseries + 1, sizeof(*sc.sums)),
			      .order = calloc(t->nseries + 1, sizeof(*sc.order)),
			      .totals = calloc(t->nseries + 1, sizeof(*sc.totals)),
			      .per_vcpu = calloc(t->nthreads + 1, sizeof(*sc.per_vcpu)) };
	const struct ht_exit_series **series = calloc(t->nseries + 1, sizeof(*series));
	const struct ht_vcpu_thread_row **threads = calloc(t->nthreads + 1, sizeof(*threads));
	uint32_t *pids = calloc(t->nseries + t->nthreads + 1, sizeof(*pids));
	uint64_t total = 0, lost;
	size_t npids = 0, s = 0, th = 0;
	char rate[24];

	if (o->causes_per_reason) {
		v.causes = ht_exit_causes_sorted(&t->causes, &v.ncauses);
		if (v.ncauses == SIZE_MAX) {
			v.err = -ENOMEM;
			goto out;
		}
	}
	if (!sc.sums || !sc.order || !sc.totals || !sc.per_vcpu || !series || !threads || !pids) {
		v.err = -ENOMEM;
		goto out;
	}
	/* Indexes, never t->series + i: a table with threads but no series has no array at all. */
	for (size_t i = 0; i < t->nseries; i++) {
		series[i] = &t->series[i];
		total = ht_sat_add(total, t->series[i].h.count);
		pids[npids++] = t->series[i].key.pid;
	}
	for (size_t i = 0; i < t->nthreads; i++) {
		threads[i] = &t->threads[i];
		pids[npids++] = t->threads[i].w.pid;
	}
	qsort(series, t->nseries, sizeof(*series), ht_exit_series_ptr_cmp);
	qsort(threads, t->nthreads, sizeof(*threads), ht_vcpu_thread_ptr_cmp_by_vm);
	qsort(pids, npids, sizeof(*pids), cmp_u32);
	fmt_rate(rate, sizeof(rate), total, o->elapsed_ns);
	lost = ht_sat_add(t->lost_series_full, t->lost_no_thread);
	if (lost)
		line(&v, "exits: %llu, %s/s; lost %llu (series full %llu, no vCPU thread slot %llu)",
		     (unsigned long long)total, rate, (unsigned long long)lost,
		     (unsigned long long)t->lost_series_full, (unsigned long long)t->lost_no_thread);
	else
		line(&v, "exits: %llu, %s/s", (unsigned long long)total, rate);
	/*
	 * An interval whose numbers went down (ht_exit_table_delta) shows them
	 * as no change: said, so that a zero is not taken for an idle VM. A
	 * file's numbers never get here: its reader refuses them.
	 */
	if (t->went_down)
		line(&v, "numbers that went down since the read before, shown as no change: %llu",
		     (unsigned long long)t->went_down);
	/* --vcpu-sched: its losses are counted with the exits' (one BPF read, one block). */
	if (t->lost_vcpu_switches)
		line(&v, "switches of vCPU threads not recorded (ring buffer full): %llu",
		     (unsigned long long)t->lost_vcpu_switches);
	for (size_t i = 0; i < npids; i++) {
		if (i && pids[i] == pids[i - 1])
			continue;
		size_t e = s, te = th;
		while (e < t->nseries && series[e]->key.pid == pids[i])
			e++;
		while (te < t->nthreads && threads[te]->w.pid == pids[i])
			te++;
		vm_block(&v, pids[i], series + s, series + e, threads + th, threads + te, o, &sc);
		s = e;
		th = te;
	}
out:
	free(v.causes);
	free(sc.sums);
	free(sc.order);
	free(sc.totals);
	free(sc.per_vcpu);
	free(series);
	free(threads);
	free(pids);
	if (!v.err && (fflush(out) == EOF || ferror(out)))
		v.err = -EIO;
	return v.err;
}

int ht_exit_causes_view_write(FILE *out, const struct ht_exit_table *t, const struct ht_exit_view_opts *o)
{
	struct view v = { .out = out, .width = o->width ? o->width : 80 };
	const struct ht_exit_cause_row **rows = ht_exit_causes_sorted(&t->causes, &v.ncauses);
	size_t n = v.ncauses;

	if (n == SIZE_MAX)
		return -ENOMEM;
	if (!n && !t->causes.lost)
		return 0;
	line(&v, "%s", "");
	if (t->causes.lost)
		line(&v, "causes of exits (%llu exits' causes lost: the cause table was full)",
		     (unsigned long long)t->causes.lost);
	else
		line(&v, "causes of exits (at most %d named per VM and reason, the rest 'other'):", HT_EXIT_CAUSES_PER_REASON);
	for (size_t i = 0; i < n; i++) {
		const struct ht_exit_cause_row *c = rows[i];
		char name[96], reason[48], rate[24], k50[16], k99[16], v50[16] = "-", v99[16] = "-";

		if (!i || c->key.pid != rows[i - 1]->key.pid) {
			const char *vm = o->vm_name ? o->vm_name(o->name_ctx, c->key.pid) : NULL;
			char esc[HT_ESC_SIZE(64)];

			line(&v, "%s", "");
			line(&v, "VM %s%s(pid %u)", vm && vm[0] ? ht_escape(esc, sizeof(esc), vm, HT_ESC_TEXT) : "",
			     vm && vm[0] ? " " : "", c->key.pid);
		}
		if (!i || c->key.pid != rows[i - 1]->key.pid || c->key.isa != rows[i - 1]->key.isa ||
		    c->key.reason != rows[i - 1]->key.reason) {
			ht_exit_reason_format(reason, sizeof(reason), c->key.isa, c->key.reason);
			line(&v, "  %s", reason);
			line(&v, "    %-40s %9s %9s %9s %9s %9s %9s %9s", "cause", "count", "rate/s", "kvm p50", "kvm p99",
			     "to vmm", "vmm p50", "vmm p99");
		}
		ht_exit_cause_format(name, sizeof(name), &c->key);
		fmt_rate(rate, sizeof(rate), c->h.count, o->elapsed_ns);
		ht_exit_fmt_ns(k50, sizeof(k50), ht_exit_cause_percentile(c->h.kvm_slots, c->h.count, 50));
		ht_exit_fmt_ns(k99, sizeof(k99), ht_exit_cause_percentile(c->h.kvm_slots, c->h.count, 99));
		if (c->h.vmm_count) {
			ht_exit_fmt_ns(v50, sizeof(v50), ht_exit_cause_percentile(c->h.vmm_slots, c->h.vmm_count, 50));
			ht_exit_fmt_ns(v99, sizeof(v99), ht_exit_cause_percentile(c->h.vmm_slots, c->h.vmm_count, 99));
		}
		line(&v, "    %-40s %9llu %9s %9s %9s %9llu %9s %9s", name, (unsigned long long)c->h.count, rate, k50, k99,
		     (unsigned long long)c->h.vmm_count, v50, v99);
	}
	free(rows);
	if (!v.err && (fflush(out) == EOF || ferror(out)))
		v.err = -EIO;
	return v.err;
}
