// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "record/exit_sampler.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "common/grow.h"
#include "common/sorted_u32.h"
#include "hypertrace/trace_file.h"

int ht_exit_sampler_init(struct ht_exit_sampler *s, struct ht_tracer *t, struct ht_writer *writer,
			 unsigned long long now_ns)
{
	memset(s, 0, sizeof(*s));
	s->tracer = t;
	s->writer = writer;
	s->proc = "/proc";
	s->start_ns = s->last_ns = now_ns;
	s->keep_ended_ns = ULLONG_MAX;
	ht_exit_table_init(&s->total);
	ht_exit_table_init(&s->last);
	ht_exit_table_init(&s->interval);
	ht_vm_ends_init(&s->ends);
	if (writer && !(s->named = ht_thread_set_new()))
		return -ENOMEM;
	return 0;
}

void ht_exit_sampler_free(struct ht_exit_sampler *s)
{
	ht_exit_table_free(&s->total);
	ht_exit_table_free(&s->last);
	ht_exit_table_free(&s->interval);
	ht_vm_ends_free(&s->ends);
	free(s->excess);
	s->excess = NULL;
	free(s->ended);
	s->ended = NULL;
	ht_thread_set_free(s->named);
	s->named = NULL;
}

struct reading {
	struct ht_exit_table *t;
	struct ht_vm_ends *ends;
	const struct ht_filters *filters;
	const struct ht_tracer *tracer;
	int err;
};

/* A series as BPF has it, on top of what an ended process of its pid left (see ht_vm_ends_base). */
static void keep_series(void *ctx, const struct ht_exit_key *key, const struct ht_exit_hist *h)
{
	struct reading *r = ctx;
	struct ht_exit_table *base;
	const struct ht_exit_series *b;

	if (r->err || (r->err = ht_vm_ends_base(r->ends, r->t, key->pid, &base)))
		return;
	if (base && (b = ht_exit_table_series(base, key, false))) {
		struct ht_exit_series sum = *b, part = { .key = *key, .minmax_exact = true, .h = *h };

		ht_exit_series_add(&sum, &part);
		r->err = ht_exit_table_set_series(r->t, key, &sum.h);
		return;
	}
	r->err = ht_exit_table_set_series(r->t, key, h);
}

static void keep_cause(void *ctx, const struct ht_exit_cause_key *key, const struct ht_exit_cause_hist *h)
{
	struct reading *r = ctx;
	struct ht_exit_table *base;
	const struct ht_exit_cause_row *b;

	if (r->err || (r->err = ht_vm_ends_base(r->ends, r->t, key->pid, &base)))
		return;
	if (base && (b = ht_exit_causes_row(&base->causes, key, false))) {
		struct ht_exit_cause_hist sum = b->h;

		ht_exit_cause_hist_add(&sum, h);
		r->err = ht_exit_causes_set(&r->t->causes, key, &sum);
		return;
	}
	r->err = ht_exit_causes_set(&r->t->causes, key, h);
}

static void keep_thread(void *ctx, const struct ht_vcpu_wait_rec *rec, bool gone)
{
	const struct ht_vcpu_wait *w = &rec->w;
	const struct ht_vcpu_account *a = &rec->a;
	struct reading *r = ctx;
	const struct ht_filters *f = r->filters;
	struct ht_vcpu_thread_row *row;

	/* The process filter: -p PID, or the processes --vm NAME follows now (the tracer's set). */
	if (r->err || (f && ((f->tgid_on && w->pid != f->tgid && !ht_tracer_tgid_traced(r->tracer, w->pid)) ||
			     (f->vcpu_on && w->vcpu != f->vcpu))))
		return;
	r->err = ht_exit_table_set_thread(r->t, w, a, &rec->h, gone);
	/* Seen again in BPF (see read_bpf); its interrupts with it. */
	if (!r->err && (row = ht_exit_table_thread(r->t, w->tid, a->start_ns, false))) {
		row->seen = true;
		if (memcmp(&row->irqs, &rec->i, sizeof(rec->i)) || memcmp(&row->due, &rec->due, sizeof(rec->due)))
			row->changed = true;
		row->irqs = rec->i;
		row->due = rec->due;
	}
}

static void keep_open_exit(void *ctx, const struct ht_exit_key *key)
{
	struct reading *r = ctx;
	struct ht_exit_series *s;

	if (r->err)
		return;
	s = ht_exit_table_series(r->t, key, true);
	if (!s) {
		r->err = -ENOMEM;
		return;
	}
	s->in_host_at_end++;
	s->changed = true;
}

static struct ht_vm_excess *excess_of(struct ht_exit_sampler *s, __u32 pid)
{
	for (size_t i = 0; i < s->nexcess; i++)
		if (s->excess[i].pid == pid)
			return &s->excess[i];
	return NULL;
}

/* A VM's share as BPF has it now: its excess, on top of its pid's ended processes'. */
static void keep_share(void *ctx, __u32 tgid, const struct ht_vm_share *share)
{
	struct ht_exit_sampler *s = ctx;
	struct ht_vm_excess *e = excess_of(s, tgid);

	if (!e) {
		if (!share->series_over && !share->causes_over && !share->threads_over)
			return;
		if (HT_GROW(s->excess, s->excess_cap, s->nexcess + 1, 16))
			return; /* out of memory: its excess is still in the totals' losses */
		e = &s->excess[s->nexcess++];
		memset(e, 0, sizeof(*e));
		e->pid = tgid;
	}
	e->series_over = e->base_series + share->series_over;
	e->causes_over = e->base_causes + share->causes_over;
	e->threads_over = e->base_threads + share->threads_over;
}

/* The VMs just freed: their shares went with their entries, their excess stays; their rows go later (forget_ended). */
static int vms_freed(struct ht_exit_sampler *s, unsigned long long now_ns)
{
	for (size_t i = 0; i < s->ends.nending; i++) {
		if (s->keep_ended_ns != ULLONG_MAX) {
			if (HT_GROW(s->ended, s->ended_cap, s->nended + 1, 16))
				return -ENOMEM;
			s->ended[s->nended++] = (struct ht_ended_vm){ .pid = s->ends.ending[i], .freed_ns = now_ns };
		}
		struct ht_vm_excess *e = excess_of(s, s->ends.ending[i]);

		if (e) {
			e->base_series = e->series_over;
			e->base_causes = e->causes_over;
			e->base_threads = e->threads_over;
		}
	}
	return 0;
}

static int cmp_pid(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

/* The forgotten VMs' excess, summed: out of the list (the totals keep it). */
static void forget_excess(struct ht_exit_sampler *s, const __u32 *pids, size_t n)
{
	size_t kept = 0;

	for (size_t i = 0; i < s->nexcess; i++) {
		const struct ht_vm_excess *e = &s->excess[i];

		if (ht_u32_listed(pids, n, e->pid)) {
			s->excess_forgotten.series_over += e->series_over;
			s->excess_forgotten.causes_over += e->causes_over;
			s->excess_forgotten.threads_over += e->threads_over;
			s->nexcess_forgotten++;
			continue;
		}
		s->excess[kept++] = *e;
	}
	s->nexcess = kept;
}

/*
 * The ended VMs freed keep_ended_ns ago or more, not back since, that
 * may_forget lets go: their rows out of total and last, their names out
 * of the named set (a pid or tid that comes back is named again), their
 * excess into the totals'. One that came back is a live process again:
 * out of the queue (its next end queues it anew).
 */
static int forget_ended(struct ht_exit_sampler *s, unsigned long long now_ns)
{
	size_t kept = 0, n = 0;
	__u32 *pids;
	int ret;

	if (!s->nended)
		return 0;
	pids = malloc(s->nended * sizeof(*pids));
	if (!pids)
		return -ENOMEM;
	for (size_t i = 0; i < s->nended; i++) {
		const struct ht_ended_vm *v = &s->ended[i];

		if (!ht_vm_ends_freed(&s->ends, v->pid))
			continue;
		if (now_ns - v->freed_ns < s->keep_ended_ns ||
		    (s->may_forget && !s->may_forget(s->may_forget_ctx, v->pid))) {
			s->ended[kept++] = *v;
			continue;
		}
		pids[n++] = v->pid;
	}
	s->nended = kept;
	qsort(pids, n, sizeof(*pids), cmp_pid);
	for (size_t i = 0; s->named && i < s->total.nthreads; i++) {
		const struct ht_vcpu_wait *w = &s->total.threads[i].w;

		if (ht_u32_listed(pids, n, w->pid))
			ht_thread_set_remove(s->named, w->pid, w->tid);
	}
	for (size_t i = 0; s->named && i < n; i++)
		ht_thread_set_remove(s->named, pids[i], pids[i]);
	forget_excess(s, pids, n);
	ret = ht_exit_table_forget(&s->total, pids, n, &s->forgotten);
	ret = ret ?: ht_exit_table_forget(&s->last, pids, n, NULL);
	ret = ret ?: ht_vm_ends_forget(&s->ends, pids, n);
	free(pids);
	return ret;
}

/*
 * Everything BPF has now. A thread that ended is read once more with its
 * last numbers, marked gone; one BPF no longer has (read as gone before) keeps
 * them, so the totals never go down.
 */
static int read_bpf(struct ht_exit_sampler *s, bool final)
{
	struct reading r = { .t = &s->total, .ends = &s->ends, .filters = s->filters, .tracer = s->tracer };
	__u64 c[HT_CNT_MAX];

	for (size_t i = 0; i < s->total.nthreads; i++)
		s->total.threads[i].seen = false;
	int ret = ht_tracer_read_exits(s->tracer, keep_series, &r);
	if (!ret)
		ret = ht_tracer_read_exit_causes(s->tracer, keep_cause, &r);
	if (!ret)
		ret = ht_tracer_read_vcpu_waits(s->tracer, keep_thread, &r);
	if (!ret && final)
		ret = ht_tracer_read_open_exits(s->tracer, keep_open_exit, &r);
	if (!ret)
		ret = ht_tracer_read_vm_shares(s->tracer, keep_share, s);
	s->total.share_series_over = s->excess_forgotten.series_over;
	s->total.share_causes_over = s->excess_forgotten.causes_over;
	s->total.share_threads_over = s->excess_forgotten.threads_over;
	for (size_t i = 0; i < s->nexcess; i++) {
		s->total.share_series_over += s->excess[i].series_over;
		s->total.share_causes_over += s->excess[i].causes_over;
		s->total.share_threads_over += s->excess[i].threads_over;
	}
	if (!ret)
		ret = r.err;
	for (size_t i = 0; i < s->total.nthreads; i++) {
		struct ht_vcpu_thread_row *row = &s->total.threads[i];

		if (!row->seen && !row->gone) {
			row->gone = true;
			row->changed = true;
		}
	}
	if (!ret && ht_tracer_counters(s->tracer, c) == 0) {
		s->total.lost_series_full = c[HT_CNT_EXIT_SERIES_FULL];
		s->total.lost_no_thread = c[HT_CNT_EXIT_NO_THREAD];
		s->total.lost_vcpu_switches = c[HT_CNT_SWITCH_DROPS];
		s->total.causes.lost = c[HT_CNT_EXIT_CAUSE_LOST];
		s->total.causes.not_theirs = c[HT_CNT_EXIT_CAUSE_NOT_ITS];
	}
	return ret;
}

/* The identities of VM processes and threads the file does not name yet, queued before the block. */
static void name_new(struct ht_exit_sampler *s, unsigned long long now_ns)
{
	struct ht_identity id;

	for (size_t i = 0; i < s->total.nthreads; i++) {
		const struct ht_vcpu_wait *w = &s->total.threads[i].w;

		if (ht_thread_set_add(s->named, w->pid, w->tid) > 0) {
			ht_identity_read(s->proc, w->pid, w->tid, now_ns, &id);
			ht_writer_add_identity(s->writer, &id);
		}
	}
	/* A VM process with exits but no vCPU thread known (yet): named by its main thread. */
	for (size_t i = 0; i < s->total.nseries; i++) {
		__u32 pid = s->total.series[i].key.pid;

		if (pid && ht_thread_set_add(s->named, pid, pid) > 0) {
			ht_identity_read(s->proc, pid, pid, now_ns, &id);
			ht_writer_add_identity(s->writer, &id);
		}
	}
}

/* What changed since the last block, as one EXITS block. */
static int write_block(struct ht_exit_sampler *s, unsigned long long now_ns, bool final)
{
	struct ht_exits_header h = { .time_ns = now_ns, .flags = final ? HT_EXITS_F_FINAL : 0,
				     .lost_series_full = s->total.lost_series_full,
				     .lost_no_thread = s->total.lost_no_thread,
				     .lost_vcpu_switches = s->total.lost_vcpu_switches,
				     .lost_causes = s->total.causes.lost,
				     .causes_not_theirs = s->total.causes.not_theirs };
	struct ht_exit_cause_table *causes = &s->total.causes;

	for (size_t i = 0; i < s->total.nseries; i++)
		h.nseries += s->total.series[i].changed;
	for (size_t i = 0; i < s->total.nthreads; i++)
		h.nthreads += s->total.threads[i].changed;
	for (size_t i = 0; i < causes->n; i++)
		h.ncauses += causes->rows[i].changed;
	if (!final && !h.nseries && !h.nthreads && !h.ncauses && h.lost_series_full == s->last.lost_series_full &&
	    h.lost_no_thread == s->last.lost_no_thread && h.lost_vcpu_switches == s->last.lost_vcpu_switches &&
	    h.lost_causes == s->last.causes.lost && h.causes_not_theirs == s->last.causes.not_theirs)
		return 0;
	size_t len = sizeof(h) + h.nseries * sizeof(struct ht_exit_series_rec) +
		     h.nthreads * sizeof(struct ht_vcpu_wait_rec) + h.ncauses * sizeof(struct ht_exit_cause_rec);
	unsigned char *buf = calloc(1, len), *p = buf + sizeof(h);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, &h, sizeof(h));
	/* A row's first says it counts from zero: a pid that comes back after its rows were forgotten starts again. */
	for (size_t i = 0; i < s->total.nseries; i++) {
		struct ht_exit_series *e = &s->total.series[i];
		struct ht_exit_series_rec rec = { .key = e->key, .flags = e->written ? 0 : HT_EXIT_ROW_F_FROM_ZERO,
						  .in_host_at_end = e->in_host_at_end, .h = e->h };

		if (!e->changed)
			continue;
		e->written = true;
		memcpy(p, &rec, sizeof(rec));
		p += sizeof(rec);
	}
	for (size_t i = 0; i < s->total.nthreads; i++) {
		const struct ht_vcpu_thread_row *r = &s->total.threads[i];
		struct ht_vcpu_wait_rec rec = { .w = r->w, .a = r->a, .h = r->h, .i = r->irqs, .due = r->due };

		if (!r->changed)
			continue;
		rec.w.pad0 = 0;
		rec.w.pad1 = r->gone ? HT_VCPU_WAIT_F_GONE : 0;
		memcpy(p, &rec, sizeof(rec));
		p += sizeof(rec);
	}
	for (size_t i = 0; i < causes->n; i++) {
		struct ht_exit_cause_row *c = &causes->rows[i];
		struct ht_exit_cause_rec rec = { .key = c->key, .h = c->h };

		if (!c->changed)
			continue;
		rec.key.pad = c->written ? 0 : HT_EXIT_ROW_F_FROM_ZERO;
		c->written = true;
		memcpy(p, &rec, sizeof(rec));
		p += sizeof(rec);
	}
	name_new(s, now_ns);
	int ret = ht_writer_add_block(s->writer, HT_BLOCK_EXITS, buf, (__u32)len, h.nseries + h.nthreads + h.ncauses);
	free(buf);
	return ret;
}

int ht_exit_sampler_sample(struct ht_exit_sampler *s, unsigned long long now_ns, bool final)
{
	/* The VM processes gone before the read: it has their last numbers. */
	int ret = ht_vm_ends_find(&s->ends, &s->total);

	if (!ret)
		ret = read_bpf(s, final);
	if (!ret && s->writer) {
		ret = write_block(s, now_ns, final);
		if (ret && !s->write_error)
			s->write_error = ret;
	}
	/* Their numbers are in total (and queued for the file): their BPF entries are free for other VMs. */
	if (!ret && !final) {
		long freed = ht_vm_ends_release(&s->ends, s->tracer);

		ret = freed < 0 ? (int)freed : vms_freed(s, now_ns);
	}
	if (!ret)
		ret = ht_exit_table_delta(&s->interval, &s->total, &s->last);
	if (!ret)
		ret = ht_exit_table_copy(&s->last, &s->total);
	/* After the interval: the live view shows an ended VM's last one. */
	if (!ret && !final)
		ret = forget_ended(s, now_ns);
	ht_exit_table_clear_changed(&s->total);
	s->interval_ns = now_ns - s->last_ns;
	s->last_ns = now_ns;
	return ret;
}
