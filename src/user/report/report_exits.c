// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `report --exits`: the exit statistics of a trace file (EXITS blocks,
 * record --exits) per VM, per vCPU and per exit reason, as text, CSV or
 * JSON lines, for the shared selection. Each EXITS block holds the
 * cumulative numbers of what changed, so the state at any block is every
 * block up to it; a time window is the state at its end minus the state at
 * its start, at the recording's interval granularity.
 */
#include "report/report_exits.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "exits/exit_causes.h"
#include "exits/exit_reasons.h"
#include "exits/exit_view.h"
#include "reading/read_outcome.h"
#include "report/thread_label.h"
#include "report/report_halts.h"
#include "report/report_irqs.h"
#include "common/escape.h"
#include "common/hashmap.h"
#include "common/grow.h"
#include "common/util.h"
#include "common/vcpu_states.h"
#include "tracefile/trace_reader.h"

struct exits_reading {
	const struct ht_selection *sel;
	struct ht_exit_table state;      /* cumulative, as of the last block read */
	struct ht_exit_table at_since;   /* state at the last block at or before --since */
	struct ht_exit_table at_until;   /* state at the last block at or before --until */
	unsigned long long state_ns, since_ns, until_ns;
	bool have_since, have_until;
	int err;
	const struct ht_reader *reader;
	char why[256];                   /* err -EBADMSG: what the file got wrong */
	/* Threads new since the last merge into state (see apply_threads), and tid -> index in them. */
	struct ht_vcpu_thread_row *pending;
	size_t npending, pending_cap;
	struct ht_hashmap pending_index;
};

/* pending_index: keys point to pending rows (or to a probe), named by (tid, start) as in the table. */
static size_t hash_row(long key, void *ctx)
{
	const struct ht_vcpu_thread_row *t = (const struct ht_vcpu_thread_row *)key;

	(void)ctx;
	return (size_t)ht_hash_mix(ht_hash_u64(t->w.tid), t->a.start_ns);
}

static bool equal_row(long a, long b, void *ctx)
{
	const struct ht_vcpu_thread_row *x = (const struct ht_vcpu_thread_row *)a, *y = (const struct ht_vcpu_thread_row *)b;

	(void)ctx;
	return x->w.tid == y->w.tid && x->a.start_ns == y->a.start_ns;
}

/* The pending threads into the state: one sort and one merge (ht_exit_table_threads). */
static int merge_pending(struct exits_reading *r)
{
	if (!r->npending)
		return 0;
	struct ht_vcpu_thread_key *keys = malloc(r->npending * sizeof(*keys));
	struct ht_vcpu_thread_row **rows = malloc(r->npending * sizeof(*rows));
	int ret = keys && rows ? 0 : -ENOMEM;

	for (size_t i = 0; !ret && i < r->npending; i++)
		keys[i] = (struct ht_vcpu_thread_key){ .tid = r->pending[i].w.tid, .start_ns = r->pending[i].a.start_ns };
	if (!ret)
		ret = ht_exit_table_threads(&r->state, keys, r->npending, rows);
	for (size_t i = 0; !ret && i < r->npending; i++)
		*rows[i] = r->pending[i];
	free(keys);
	free(rows);
	r->npending = 0;
	ht_hashmap_clear(&r->pending_index);
	return ret;
}

/* Room for one more pending thread; the index follows the rows if they moved. */
static int grow_pending(struct exits_reading *r)
{
	if (r->npending < r->pending_cap)
		return 0;
	if (HT_GROW(r->pending, r->pending_cap, r->npending + 1, 64))
		return -ENOMEM;
	ht_hashmap_clear(&r->pending_index);
	for (size_t i = 0; i < r->npending; i++)
		if (ht_hashmap_insert(&r->pending_index, (long)&r->pending[i], (long)i, HT_HASHMAP_ADD, NULL, NULL))
			return -ENOMEM;
	return 0;
}

/*
 * A thread's account (and its waiting) that goes down is not a recording's:
 * (tid, start) names one thread, whose numbers only grow. Files before
 * version 5 have no start, so a thread id that came back is the same row
 * there: not checked.
 */
static bool thread_goes_down(struct exits_reading *r, const struct ht_vcpu_thread_row *was,
			     const struct ht_vcpu_wait_rec *now)
{
	static const char *const names[] = { "as_of_ns", "wait_ns", "preempt_count", "preempt_ns",
					      "voluntary_count", "voluntary_ns" };
	const __u64 before[] = { was->a.as_of_ns, was->w.wait_ns, was->w.preempt_count, was->w.preempt_ns,
				 was->w.voluntary_count, was->w.voluntary_ns };
	const __u64 after[] = { now->a.as_of_ns, now->w.wait_ns, now->w.preempt_count, now->w.preempt_ns,
				now->w.voluntary_count, now->w.voluntary_ns };

	if (ht_reader_header(r->reader)->version < 5)
		return false;
	/* The numbers of the wait, then each state's. */
	for (size_t i = 0; i < ARRAY_SIZE(before) + HT_VCPU_NSTATES; i++) {
		size_t k = i - ARRAY_SIZE(before);
		__u64 b = i < ARRAY_SIZE(before) ? before[i] : was->a.state_ns[k];
		__u64 a = i < ARRAY_SIZE(after) ? after[i] : now->a.state_ns[k];

		if (a >= b)
			continue;
		snprintf(r->why, sizeof(r->why),
			 "exits block at byte %llu: the account of vCPU thread %u (pid %u) goes down: %s from %llu to %llu: the file is corrupt",
			 ht_reader_block_at(r->reader), now->w.tid, now->w.pid,
			 i < ARRAY_SIZE(before) ? names[i] : ht_vcpu_state_names[k], (unsigned long long)b,
			 (unsigned long long)a);
		r->err = -EBADMSG;
		return true;
	}
	return false;
}

/*
 * A block's threads: those the state has are set in place (bisection);
 * new ones wait in pending, found by (tid, start), until they are as many
 * as the state's threads, and are merged then. A merge moves every thread
 * of the state, so merging each block's new threads would cost a hostile
 * file of many small blocks the square of its size; this way a thread
 * moves a logarithmic number of times in all.
 */
static int apply_threads(struct exits_reading *r, const struct ht_vcpu_wait_rec *threads, __u32 n)
{
	for (__u32 i = 0; i < n; i++) {
		const struct ht_vcpu_wait_rec *rec = &threads[i];
		struct ht_vcpu_thread_row *row = ht_exit_table_thread(&r->state, rec->w.tid, rec->a.start_ns, false);
		struct ht_vcpu_thread_row probe = { .w.tid = rec->w.tid, .a.start_ns = rec->a.start_ns };
		long k;

		if (!row && ht_hashmap_find(&r->pending_index, (long)&probe, &k))
			row = &r->pending[k];
		if (row && thread_goes_down(r, row, rec))
			return r->err;
		if (!row) {
			if (grow_pending(r))
				return -ENOMEM;
			row = &r->pending[r->npending];
			*row = probe;
			if (ht_hashmap_insert(&r->pending_index, (long)row, (long)r->npending, HT_HASHMAP_ADD, NULL, NULL))
				return -ENOMEM;
			r->npending++;
		}
		/* As ht_exit_table_set_thread sets a row. */
		row->w = rec->w;
		row->w.pad0 = 0;
		row->w.pad1 = 0;
		row->a = rec->a;
		row->h = rec->h;
		row->from_ns = rec->a.start_ns;
		row->gone = rec->w.pad1 & HT_VCPU_WAIT_F_GONE;
		row->no_slept_poll = rec->w.pad1 & HT_VCPU_WAIT_F_NO_SLEPT_POLL;
		row->irqs = rec->i;
		row->no_irqs = rec->w.pad1 & HT_VCPU_WAIT_F_NO_IRQS;
		row->due = rec->due;
		row->no_due = rec->w.pad1 & HT_VCPU_WAIT_F_NO_TIMER_DUE;
	}
	return r->npending > r->state.nthreads ? merge_pending(r) : 0;
}

/* A cumulative series that goes down is not a recording's: say which and where. */
static bool series_goes_down(struct exits_reading *r, const struct ht_exit_series *was,
			     const struct ht_exit_series_rec *now)
{
	bool down = now->h.count < was->h.count || now->h.total_ns < was->h.total_ns;

	for (int k = 0; k < HT_EXIT_SLOTS && !down; k++)
		down = now->h.slots[k] < was->h.slots[k];
	if (!down)
		return false;
	snprintf(r->why, sizeof(r->why),
		 "exits block at byte %llu: the series of pid %u, vCPU %u, reason %u goes down from %llu exits (%llu ns) to %llu (%llu ns): the file is corrupt",
		 ht_reader_block_at(r->reader), now->key.pid, (unsigned int)now->key.vcpu, now->key.reason,
		 (unsigned long long)was->h.count, (unsigned long long)was->h.total_ns,
		 (unsigned long long)now->h.count, (unsigned long long)now->h.total_ns);
	r->err = -EBADMSG;
	return true;
}

static void apply_block(void *ctx, const struct ht_exits_header *h, const struct ht_exit_series_rec *series,
			const struct ht_vcpu_wait_rec *threads)
{
	struct exits_reading *r = ctx;

	if (r->err)
		return;
	/* Before applying: the state up to the block before this one may be the window's start. */
	if (h->time_ns > r->sel->from_ns && !r->have_since && r->sel->since.on) {
		r->have_since = true;
		r->since_ns = r->state_ns;
		r->err = merge_pending(r);
		r->err = r->err ? r->err : ht_exit_table_copy(&r->at_since, &r->state);
	}
	if (h->time_ns > r->sel->to_ns && !r->have_until) {
		r->have_until = true;
		r->until_ns = r->state_ns;
		r->err = r->err ? r->err : merge_pending(r);
		r->err = r->err ? r->err : ht_exit_table_copy(&r->at_until, &r->state);
	}
	/* Any order, whatever the block holds: the state is sorted once, when it is shown. */
	for (__u32 i = 0; i < h->nseries && !r->err; i++) {
		size_t had = r->state.nseries;
		struct ht_exit_series *s = ht_exit_table_series_any_order(&r->state, &series[i].key);
		if (!s) {
			r->err = -ENOMEM;
			break;
		}
		if (r->state.nseries == had && series_goes_down(r, s, &series[i]))
			break;
		s->h = series[i].h;
		s->in_host_at_end = series[i].in_host_at_end;
		s->minmax_exact = true;
	}
	if (!r->err)
		r->err = apply_threads(r, threads, h->nthreads);
	if (!r->err && (h->lost_series_full < r->state.lost_series_full || h->lost_no_thread < r->state.lost_no_thread ||
			h->lost_vcpu_switches < r->state.lost_vcpu_switches || h->lost_causes < r->state.causes.lost)) {
		snprintf(r->why, sizeof(r->why), "exits block at byte %llu: its counts of what was lost go down: the file is corrupt",
			 ht_reader_block_at(r->reader));
		r->err = -EBADMSG;
	}
	r->state.lost_series_full = h->lost_series_full;
	r->state.lost_no_thread = h->lost_no_thread;
	r->state.lost_vcpu_switches = h->lost_vcpu_switches;
	r->state.causes.lost = h->lost_causes;
	r->state.causes.not_theirs = h->causes_not_theirs;
	r->state_ns = h->time_ns;
}

/* A block's causes (after its series and threads: apply_block took the window's states before it). */
static void apply_causes(void *ctx, const struct ht_exits_header *h, const struct ht_exit_cause_rec *causes)
{
	struct exits_reading *r = ctx;

	for (__u32 i = 0; i < h->ncauses && !r->err; i++) {
		const struct ht_exit_cause_rec *c = &causes[i];
		struct ht_exit_cause_row *row = ht_exit_causes_row(&r->state.causes, &c->key, true);

		if (!row) {
			r->err = -ENOMEM;
			break;
		}
		bool down = c->h.count < row->h.count || c->h.kvm_ns < row->h.kvm_ns || c->h.vmm_count < row->h.vmm_count ||
			    c->h.vmm_ns < row->h.vmm_ns;

		for (int k = 0; k < HT_EXIT_SLOTS && !down; k++)
			down = c->h.kvm_slots[k] < row->h.kvm_slots[k] || c->h.vmm_slots[k] < row->h.vmm_slots[k];
		if (down) {
			snprintf(r->why, sizeof(r->why),
				 "exits block at byte %llu: a cause of pid %u, reason %u goes down from %llu exits to %llu: the file is corrupt",
				 ht_reader_block_at(r->reader), c->key.pid, c->key.reason,
				 (unsigned long long)row->h.count, (unsigned long long)c->h.count);
			r->err = -EBADMSG;
			break;
		}
		row->h = c->h;
	}
}

/* Keeps the series and threads the selection takes: VM process, VM name, vCPU. 0 or -ENOMEM. */
static int select_rows(struct ht_exit_table *t, const struct ht_selection *sel, struct ht_reader *reader)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nseries; i++) {
		const struct ht_exit_series *s = &t->series[i];
		const char *vm = sel->vm_name ? ht_reader_vm_name(reader, s->key.pid) : NULL;

		if ((sel->pid_on && s->key.pid != sel->pid) || (sel->vm_name && (!vm || strcmp(vm, sel->vm_name))) ||
		    (sel->vcpu_on && s->key.vcpu != sel->vcpu))
			continue;
		t->series[n++] = *s;
	}
	t->nseries = n;
	n = 0;
	for (size_t i = 0; i < t->nthreads; i++) {
		const struct ht_vcpu_wait *w = &t->threads[i].w;
		const char *vm = sel->vm_name ? ht_reader_vm_name(reader, w->pid) : NULL;

		if ((sel->pid_on && w->pid != sel->pid) || (sel->vm_name && (!vm || strcmp(vm, sel->vm_name))) ||
		    (sel->vcpu_on && w->vcpu != sel->vcpu))
			continue;
		t->threads[n++] = t->threads[i];
	}
	t->nthreads = n;
	/* Causes are per VM: the VM selections apply, --vcpu does not. */
	struct ht_exit_cause_table *c = &t->causes;
	n = 0;
	for (size_t i = 0; i < c->n; i++) {
		const struct ht_exit_cause_key *k = &c->rows[i].key;
		const char *vm = sel->vm_name ? ht_reader_vm_name(reader, k->pid) : NULL;

		if ((sel->pid_on && k->pid != sel->pid) || (sel->vm_name && (!vm || strcmp(vm, sel->vm_name))))
			continue;
		c->rows[n++] = c->rows[i];
	}
	if (n != c->n) {
		/* Rebuilt through a copy: the index points into the rows that moved. */
		struct ht_exit_cause_table kept;

		ht_exit_causes_init(&kept);
		c->n = n;
		if (ht_exit_causes_copy(&kept, c)) {
			ht_exit_causes_free(&kept);
			return -ENOMEM;
		}
		ht_exit_causes_free(c);
		*c = kept;
	}
	return ht_exit_table_series_moved(t);
}

/* A JSON string: valid JSON whatever v holds (names are the VM owner's, docs/exports.md). */
static void json_string(const char *v)
{
	ht_json_fputs(stdout, v);
}

static void print_rows(enum ht_report_mode mode, const struct ht_exit_table *t, struct ht_reader *reader)
{
	if (mode == HT_REPORT_CSV) {
		fputs("vm_pid,vm_name,vcpu,isa,exit_reason,reason,count,total_ns,min_ns,p50_ns,p99_ns,max_ns", stdout);
		for (int k = 0; k < HT_EXIT_SLOTS; k++)
			printf(",bucket_%d", k);
		putchar('\n');
	}
	for (size_t i = 0; i < t->nseries; i++) {
		const struct ht_exit_series *s = &t->series[i];
		const char *vm = ht_reader_vm_name(reader, s->key.pid);
		const char *name = vm ? vm : "";
		char reason[48];

		ht_exit_reason_format(reason, sizeof(reason), s->key.isa, s->key.reason);
		if (mode == HT_REPORT_CSV) {
			/* Text fields as every CSV of report writes them: quoted, escaped, formulas neutralised. */
			printf("%u,", s->key.pid);
			ht_csv_fputs(stdout, name);
			printf(",%u,%s,%u,", (unsigned int)s->key.vcpu, ht_isa_name(s->key.isa), s->key.reason);
			ht_csv_fputs(stdout, reason);
			printf(",%llu,%llu,%llu,%llu,%llu,%llu", (unsigned long long)s->h.count,
			       (unsigned long long)s->h.total_ns, (unsigned long long)ht_exit_min(s),
			       (unsigned long long)ht_exit_percentile(s, 50), (unsigned long long)ht_exit_percentile(s, 99),
			       (unsigned long long)ht_exit_max(s));
			for (int k = 0; k < HT_EXIT_SLOTS; k++)
				printf(",%llu", (unsigned long long)s->h.slots[k]);
			putchar('\n');
			continue;
		}
		printf("{\"vm_pid\":%u,\"vm_name\":", s->key.pid);
		json_string(name);
		printf(",\"vcpu\":%u,\"isa\":\"%s\",\"exit_reason\":%u,\"reason\":", (unsigned int)s->key.vcpu,
		       ht_isa_name(s->key.isa), s->key.reason);
		json_string(reason);
		/* Counts and times stay below 2^53 in any recording a machine can make: plain numbers. */
		printf(",\"count\":%llu,\"total_ns\":%llu,\"min_ns\":%llu,\"p50_ns\":%llu,\"p99_ns\":%llu,\"max_ns\":%llu,\"buckets\":[",
		       (unsigned long long)s->h.count, (unsigned long long)s->h.total_ns,
		       (unsigned long long)ht_exit_min(s), (unsigned long long)ht_exit_percentile(s, 50),
		       (unsigned long long)ht_exit_percentile(s, 99), (unsigned long long)ht_exit_max(s));
		for (int k = 0; k < HT_EXIT_SLOTS; k++)
			printf("%s%llu", k ? "," : "", (unsigned long long)s->h.slots[k]);
		fputs("]}\n", stdout);
	}
}

/*
 * --causes --csv/--json: one row per (VM, exit reason, cause), with the
 * cause's parts as fields, its count and times, and its log2 buckets of the
 * time in KVM and in the VMM.
 */
static int print_causes(enum ht_report_mode mode, const struct ht_exit_table *t, struct ht_reader *reader)
{
	size_t n;
	const struct ht_exit_cause_row **rows = ht_exit_causes_sorted(&t->causes, &n);

	if (n == SIZE_MAX)
		return -ENOMEM;
	if (mode == HT_REPORT_CSV) {
		fputs("vm_pid,vm_name,isa,exit_reason,reason,cause_kind,cause_value,cause_detail,direction,size,cause,"
		      "count,kvm_ns,kvm_p50_ns,kvm_p99_ns,vmm_count,vmm_ns,vmm_p50_ns,vmm_p99_ns", stdout);
		for (int k = 0; k < HT_EXIT_SLOTS; k++)
			printf(",kvm_bucket_%d", k);
		for (int k = 0; k < HT_EXIT_SLOTS; k++)
			printf(",vmm_bucket_%d", k);
		putchar('\n');
	}
	for (size_t i = 0; i < n; i++) {
		const struct ht_exit_cause_row *c = rows[i];
		const struct ht_exit_cause_key *k = &c->key;
		const char *vm = ht_reader_vm_name(reader, k->pid);
		char reason[48], cause[96];
		/* Size: the bytes of an I/O or MMIO access; none for the other kinds. */
		unsigned int size = k->kind == HT_CAUSE_PIO || k->kind == HT_CAUSE_MMIO ? k->detail >> 8 : 0;
		unsigned long long k50 = ht_exit_cause_percentile(c->h.kvm_slots, c->h.count, 50),
				   k99 = ht_exit_cause_percentile(c->h.kvm_slots, c->h.count, 99),
				   v50 = ht_exit_cause_percentile(c->h.vmm_slots, c->h.vmm_count, 50),
				   v99 = ht_exit_cause_percentile(c->h.vmm_slots, c->h.vmm_count, 99);

		ht_exit_reason_format(reason, sizeof(reason), k->isa, k->reason);
		ht_exit_cause_format(cause, sizeof(cause), k);
		if (mode == HT_REPORT_CSV) {
			printf("%u,", k->pid);
			ht_csv_fputs(stdout, vm ? vm : "");
			printf(",%s,%u,", ht_isa_name(k->isa), k->reason);
			ht_csv_fputs(stdout, reason);
			printf(",%s,%llu,%u,%s,%u,", ht_exit_cause_kind_name(k->kind), (unsigned long long)k->value, k->detail,
			       ht_exit_cause_direction(k), size);
			ht_csv_fputs(stdout, cause);
			printf(",%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu", (unsigned long long)c->h.count,
			       (unsigned long long)c->h.kvm_ns, k50, k99, (unsigned long long)c->h.vmm_count,
			       (unsigned long long)c->h.vmm_ns, v50, v99);
			for (int s = 0; s < HT_EXIT_SLOTS; s++)
				printf(",%llu", (unsigned long long)c->h.kvm_slots[s]);
			for (int s = 0; s < HT_EXIT_SLOTS; s++)
				printf(",%llu", (unsigned long long)c->h.vmm_slots[s]);
			putchar('\n');
			continue;
		}
		printf("{\"vm_pid\":%u,\"vm_name\":", k->pid);
		json_string(vm ? vm : "");
		printf(",\"isa\":\"%s\",\"exit_reason\":%u,\"reason\":", ht_isa_name(k->isa), k->reason);
		json_string(reason);
		/*
		 * The value as a decimal string, as report --json writes exit_ns:
		 * JSON readers hold numbers in doubles, exact only below 2^53, and a
		 * hypercall nr or a guest-physical address is any 64-bit number.
		 */
		printf(",\"cause_kind\":\"%s\",\"cause_value\":\"%llu\",\"cause_detail\":%u,\"direction\":\"%s\",\"size\":%u,\"cause\":",
		       ht_exit_cause_kind_name(k->kind), (unsigned long long)k->value, k->detail, ht_exit_cause_direction(k),
		       size);
		json_string(cause);
		printf(",\"count\":%llu,\"kvm_ns\":%llu,\"kvm_p50_ns\":%llu,\"kvm_p99_ns\":%llu,\"vmm_count\":%llu,\"vmm_ns\":%llu,\"vmm_p50_ns\":%llu,\"vmm_p99_ns\":%llu,\"kvm_buckets\":[",
		       (unsigned long long)c->h.count, (unsigned long long)c->h.kvm_ns, k50, k99,
		       (unsigned long long)c->h.vmm_count, (unsigned long long)c->h.vmm_ns, v50, v99);
		for (int s = 0; s < HT_EXIT_SLOTS; s++)
			printf("%s%llu", s ? "," : "", (unsigned long long)c->h.kvm_slots[s]);
		fputs("],\"vmm_buckets\":[", stdout);
		for (int s = 0; s < HT_EXIT_SLOTS; s++)
			printf("%s%llu", s ? "," : "", (unsigned long long)c->h.vmm_slots[s]);
		fputs("]}\n", stdout);
	}
	free(rows);
	return 0;
}

/*
 * --vcpu-time: where each vCPU thread's time went in the window, its states
 * adding up to the thread's time in it; text (shares per thread and per VM),
 * or one CSV/JSON row per (VM, thread, state) in ns.
 */
static void print_vcpu_time(enum ht_report_mode mode, const struct ht_exit_table *t, struct ht_reader *reader)
{
	const bool json = mode == HT_REPORT_JSON;

	if (!json)
		puts(HT_REPORT_VCPU_ROW_CSV_HEAD ",state,ns");
	for (size_t i = 0; i < t->nthreads; i++) {
		const struct ht_vcpu_thread_row *r = &t->threads[i];

		for (int k = 0; k < HT_VCPU_NSTATES; k++) {
			ht_report_vcpu_row_start(stdout, json, r, reader);
			printf(json ? ",\"state\":\"%s\",\"ns\":%llu}\n" : ",%s,%llu\n", ht_vcpu_state_names[k],
			       (unsigned long long)r->a.state_ns[k]);
		}
	}
}

/* One text row: a thread's (or a VM's summed) states as shares of their sum; the label in width columns. */
static void vcpu_time_row(const char *label, int width, const __u64 ns[HT_VCPU_NSTATES])
{
	uint64_t span = 0;
	char total[16];

	for (int k = 0; k < HT_VCPU_NSTATES; k++)
		span = ht_sat_add(span, ns[k]);
	ht_exit_fmt_ns(total, sizeof(total), span);
	printf("  %-*s %8s", width, label, total);
	for (int k = 0; k < HT_VCPU_NSTATES; k++)
		printf(" %7.1f%%", span ? 100.0 * (double)ns[k] / (double)span : 0.0);
	putchar('\n');
}


/* --vcpu-time's text view: a VM's vCPU threads' states summed for its last row. */
struct vcpu_time_view {
	__u64 sum[HT_VCPU_NSTATES];
};

static void vcpu_time_columns(void *ctx, int width)
{
	struct vcpu_time_view *v = ctx;

	memset(v->sum, 0, sizeof(v->sum));
	printf("  %-*s %8s", width, "vCPU thread", "time");
	for (int k = 0; k < HT_VCPU_NSTATES; k++)
		printf(" %8s", ht_vcpu_state_names[k]);
	putchar('\n');
}

static void vcpu_time_thread(void *ctx, const char *label, int width, const struct ht_vcpu_thread_row *r)
{
	struct vcpu_time_view *v = ctx;

	vcpu_time_row(label, width, r->a.state_ns);
	for (int k = 0; k < HT_VCPU_NSTATES; k++)
		v->sum[k] = ht_sat_add(v->sum[k], r->a.state_ns[k]);
}

static void vcpu_time_vm_end(void *ctx, int width, size_t nthreads)
{
	struct vcpu_time_view *v = ctx;

	if (nthreads > 1)
		vcpu_time_row("all its vCPU threads", width, v->sum);
}

/*
 * The text view: per VM (in pid order) its vCPU threads (in thread order)
 * and their sum; a vCPU's threads named by their start when it had
 * several, the labels' column as wide as the VM's longest. 0 or -ENOMEM.
 */
static int write_vcpu_time(const struct ht_exit_table *t, struct ht_reader *reader)
{
	static const struct ht_vcpu_view_ops ops = { vcpu_time_columns, vcpu_time_thread, vcpu_time_vm_end };
	struct vcpu_time_view v;

	return ht_report_vcpu_view(t, reader, &ops, &v);
}

static const char *vm_name_of(void *ctx, uint32_t pid)
{
	return ht_reader_vm_name(ctx, pid);
}

static const char *thread_name_of(void *ctx, uint32_t pid, uint32_t tid)
{
	return ht_reader_thread_name(ctx, pid, tid);
}

/* The window's numbers: the state at its end minus the state at its start. */
static int window_of(struct exits_reading *r, struct ht_exit_table *out, unsigned long long start_ns,
		     unsigned long long *from_ns, unsigned long long *to_ns)
{
	static const struct ht_exit_table empty;
	const struct ht_exit_table *end = r->have_until ? &r->at_until : &r->state;
	const struct ht_exit_table *begin = r->have_since ? &r->at_since : &empty;

	*from_ns = r->have_since ? r->since_ns : start_ns;
	*to_ns = r->have_until ? r->until_ns : r->state_ns;
	if (r->sel->since.on && !r->have_since) {
		begin = &r->state; /* --since after the last block: nothing in the window */
		*from_ns = r->state_ns;
	}
	return ht_exit_table_delta(out, end, begin);
}

/* The file of cfg open in *reader, its selection resolved against its header: -1 to go on, else the exit status. */
static int open_selected(struct ht_report_config *cfg, struct ht_reader **reader)
{
	char err[512];

	if (ht_reader_open(cfg->path, reader, err, sizeof(err)))
		return ht_runtime_error("%s", err);
	if (ht_selection_resolve(&cfg->selection, ht_reader_header(*reader), err, sizeof(err))) {
		ht_reader_close(*reader);
		return ht_usage_error("report", "%s", err);
	}
	return -1;
}

/* The file's EXITS blocks into r, read to the end; a fault in r->err. */
static void read_exits(struct exits_reading *r, struct ht_reader *reader)
{
	struct ht_record rec;

	r->state_ns = ht_reader_header(reader)->start_monotonic_ns;
	r->reader = reader;
	ht_reader_set_exits_visitor(reader, apply_block, r);
	ht_reader_set_exit_causes_visitor(reader, apply_causes, r);
	ht_hashmap_init(&r->pending_index, hash_row, equal_row, NULL);
	while (ht_reader_next(reader, &rec) == 1)
		; /* the records are not this report's; the visitor takes the EXITS blocks as they pass */
	if (!r->err)
		r->err = merge_pending(r);
}

/* The text view of window, [from_ns, to_ns): its heading, the exits unless --causes, then the causes. */
static int write_exits_text(const struct ht_report_config *cfg, const struct ht_exit_table *window,
			    struct ht_reader *reader, unsigned long long from_ns, unsigned long long to_ns)
{
	unsigned long long start_ns = ht_reader_header(reader)->start_monotonic_ns;
	struct ht_exit_view_opts o = {
		.elapsed_ns = to_ns > from_ns ? to_ns - from_ns : 0,
		.width = 200,
		.per_vcpu_reasons = true,
		.start_ns = start_ns,
		.vm_name = vm_name_of,
		.thread_name = thread_name_of,
		.name_ctx = reader,
	};
	char desc[512];

	if (ht_selection_active(&cfg->selection)) {
		ht_selection_describe(&cfg->selection, desc, sizeof(desc));
		printf("selection: %s (time windows at the recording's intervals: +%.3f s to +%.3f s)\n", desc,
		       (double)(from_ns - start_ns) / 1e9, (double)(to_ns - start_ns) / 1e9);
	}
	printf("%s: %.3f s of exits; times in the host: min and max %s, p50 and p99 as log2 bucket bounds\n",
	       cfg->path, (double)(to_ns - from_ns) / 1e9,
	       cfg->selection.since.on ? "as bucket bounds where an interval cuts a series (>, <)" : "exact");
	if (!cfg->causes)
		ht_exit_view_write(stdout, window, &o);
	if (ht_exit_causes_view_write(stdout, window, &o) == -ENOMEM)
		return -ENOMEM;
	if (cfg->causes && !window->causes.n)
		printf("no causes of exits: the recording was made before record --exits counted them, or the selection has none\n");
	return 0;
}

/* window, [from_ns, to_ns), in the view cfg asks for; -ENOMEM or 0. */
static int write_window(const struct ht_report_config *cfg, const struct ht_exit_table *window,
			struct ht_reader *reader, unsigned long long from_ns, unsigned long long to_ns)
{
	unsigned long long start_ns = ht_reader_header(reader)->start_monotonic_ns;
	bool rows = cfg->mode == HT_REPORT_CSV || cfg->mode == HT_REPORT_JSON;

	if (cfg->halts) {
		if (!rows)
			printf("%s: each vCPU thread's halts in KVM and its halt polling, +%.3f s to +%.3f s\n", cfg->path,
			       (double)(from_ns - start_ns) / 1e9, (double)(to_ns - start_ns) / 1e9);
		return ht_report_halts(cfg->mode, window, reader);
	} else if (cfg->irqs) {
		if (!rows)
			printf("%s: the interrupts KVM delivered to each vCPU thread, acceptance to guest running, +%.3f s to +%.3f s\n",
			       cfg->path, (double)(from_ns - start_ns) / 1e9, (double)(to_ns - start_ns) / 1e9);
		return ht_report_irqs(cfg->mode, window, reader);
	} else if (cfg->vcpu_time && rows) {
		print_vcpu_time(cfg->mode, window, reader);
	} else if (cfg->vcpu_time) {
		printf("%s: where each vCPU thread's time went, +%.3f s to +%.3f s (its states add up to its time)\n",
		       cfg->path, (double)(from_ns - start_ns) / 1e9, (double)(to_ns - start_ns) / 1e9);
		return write_vcpu_time(window, reader);
	} else if (cfg->causes && rows) {
		return print_causes(cfg->mode, window, reader);
	} else if (rows) {
		print_rows(cfg->mode, window, reader);
	} else {
		return write_exits_text(cfg, window, reader, from_ns, to_ns);
	}
	return 0;
}

int ht_report_exits(struct ht_report_config *cfg)
{
	struct exits_reading r = { .sel = &cfg->selection };
	struct ht_exit_table window;
	struct ht_reader *reader;
	unsigned long long from_ns, to_ns;
	int status;

	status = open_selected(cfg, &reader);
	if (status != -1)
		return status;
	const struct ht_file_header *h = ht_reader_header(reader);
	ht_exit_table_init(&r.state);
	ht_exit_table_init(&r.at_since);
	ht_exit_table_init(&r.at_until);
	ht_exit_table_init(&window);
	read_exits(&r, reader);
	const struct ht_read_status *st = ht_reader_status(reader);
	if (r.err == -EBADMSG) {
		status = ht_runtime_error("%s: %s", cfg->path, r.why);
	} else if (r.err) {
		status = ht_runtime_error("out of memory");
	} else if (!ht_reader_exits_blocks(reader) && st->damaged) {
		status = ht_report_read_outcome(cfg->path, st); /* its first EXITS block may be what is damaged */
	} else if (!ht_reader_exits_blocks(reader)) {
		status = ht_runtime_error("%s has no exit statistics: it was recorded without --exits (record --exits -o FILE)",
					  cfg->path);
		if (st->damaged)
			ht_report_read_outcome(cfg->path, st);
	} else if (window_of(&r, &window, h->start_monotonic_ns, &from_ns, &to_ns) || ht_exit_table_sort(&window) ||
		   select_rows(&window, &cfg->selection, reader)) {
		status = ht_runtime_error("out of memory");
	} else {
		r.err = write_window(cfg, &window, reader, from_ns, to_ns);
		fflush(stdout);
		status = r.err ? ht_runtime_error("out of memory") : ht_report_read_outcome(cfg->path, st);
	}
	free(r.pending);
	ht_hashmap_clear(&r.pending_index);
	ht_exit_table_free(&r.state);
	ht_exit_table_free(&r.at_since);
	ht_exit_table_free(&r.at_until);
	ht_exit_table_free(&window);
	ht_reader_close(reader);
	return status;
}
