// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "decode/sched_summary.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "common/escape.h"
#include "common/hashmap.h"
#include "common/grow.h"
#include "decode/guest_event.h"
#include "hypertrace/guest.h"

#define ALL_VCPUS 0xffffu /* key of a task's total over every vCPU */

/*
 * One (VM, vCPU, task) -- or (VM, task) with vcpu ALL_VCPUS -- and its run
 * time; the key of its own entry in the table.
 */
struct run_stat {
	uint32_t host_pid, tid;
	uint16_t vcpu;
	uint64_t runs, run_ns;
	uint64_t vcpu_mask; /* totals: the vCPUs (below 64) the task ran on */
	char comm[HT_GEV_COMM_LEN + 1]; /* its name when last switched in (per vCPU: tid 0 is swapper/N on each) */
};

struct vcpu_state {
	uint32_t host_pid;
	uint16_t vcpu;
	bool have_cur;
	bool running_listed; /* in its VM's list of vCPUs with a current task */
	uint32_t cur_tid;
	uint64_t since_ns, first_ns, last_ns, switches, gaps;
	uint64_t stopped_ns; /* the module's unload, if after the last switch */
};

/* A VM's vCPUs that have a current task: what an unload of its module stops, without a walk of all. */
struct vm_state {
	struct vcpu_state **running;
	size_t n, cap;
};

/*
 * Everything is found by hash: tids, vCPU ids and VMs come from the guest
 * and the file, and a summary must stay linear in the records.
 */
struct ht_sched {
	struct ht_hashmap stats; /* struct run_stat * -> itself */
	struct ht_hashmap vcpus; /* host_pid << 16 | vcpu -> struct vcpu_state * */
	struct ht_hashmap vms;   /* host_pid -> struct vm_state * */
	uint64_t switches, gaps;
	struct ht_gev_decoder gev;
};

static size_t hash_stat(long key, void *ctx)
{
	const struct run_stat *r = (const struct run_stat *)key;

	(void)ctx;
	return (size_t)ht_hash_mix(ht_hash_u64((uint64_t)r->host_pid << 32 | r->tid), r->vcpu);
}

static bool equal_stat(long a, long b, void *ctx)
{
	const struct run_stat *x = (const struct run_stat *)a, *y = (const struct run_stat *)b;

	(void)ctx;
	return x->host_pid == y->host_pid && x->tid == y->tid && x->vcpu == y->vcpu;
}

struct ht_sched *ht_sched_new(void)
{
	struct ht_sched *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (ht_gev_decoder_init(&s->gev)) {
		free(s);
		return NULL;
	}
	ht_hashmap_init(&s->stats, hash_stat, equal_stat, NULL);
	ht_hashmap_init(&s->vcpus, ht_hash_long, ht_equal_long, NULL);
	ht_hashmap_init(&s->vms, ht_hash_long, ht_equal_long, NULL);
	return s;
}

/* Frees every value of m, then m's entries. */
static void free_values(struct ht_hashmap *m, void (*free_value)(void *))
{
	struct ht_hashmap_entry *cur;
	size_t bkt;

	ht_hashmap_for_each(m, cur, bkt)
		free_value(cur->pvalue);
	ht_hashmap_clear(m);
}

static void free_vm(void *p)
{
	struct vm_state *vm = p;

	free(vm->running);
	free(vm);
}

void ht_sched_free(struct ht_sched *s)
{
	if (!s)
		return;
	free_values(&s->stats, free);
	free_values(&s->vcpus, free);
	free_values(&s->vms, free_vm);
	free(s);
}

static struct run_stat *find(struct ht_sched *s, uint32_t host_pid, uint16_t vcpu, uint32_t tid)
{
	struct run_stat probe = { .host_pid = host_pid, .tid = tid, .vcpu = vcpu }, *r;

	return ht_hashmap_find(&s->stats, (long)&probe, (long *)&r) ? r : NULL;
}

/* The entry of a key, created if new; NULL when out of memory. */
static struct run_stat *slot(struct ht_sched *s, uint32_t host_pid, uint16_t vcpu, uint32_t tid)
{
	struct run_stat *r = find(s, host_pid, vcpu, tid);

	if (r)
		return r;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	*r = (struct run_stat){ .host_pid = host_pid, .vcpu = vcpu, .tid = tid };
	if (ht_hashmap_insert(&s->stats, (long)r, (long)r, HT_HASHMAP_ADD, NULL, NULL)) {
		free(r);
		return NULL;
	}
	return r;
}

/* The state of (VM, vCPU): found, created if asked, else NULL. */
static struct vcpu_state *vcpu_of(struct ht_sched *s, uint32_t host_pid, uint16_t vcpu, bool create)
{
	long key = (long)((uint64_t)host_pid << 16 | vcpu);
	struct vcpu_state *v;

	if (ht_hashmap_find(&s->vcpus, key, (long *)&v))
		return v;
	if (!create)
		return NULL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	*v = (struct vcpu_state){ .host_pid = host_pid, .vcpu = vcpu };
	if (ht_hashmap_insert(&s->vcpus, key, (long)v, HT_HASHMAP_ADD, NULL, NULL)) {
		free(v);
		return NULL;
	}
	return v;
}

static struct vm_state *vm_of(struct ht_sched *s, uint32_t host_pid)
{
	struct vm_state *vm;

	if (ht_hashmap_find(&s->vms, host_pid, (long *)&vm))
		return vm;
	vm = calloc(1, sizeof(*vm));
	if (!vm)
		return NULL;
	if (ht_hashmap_insert(&s->vms, host_pid, (long)vm, HT_HASHMAP_ADD, NULL, NULL)) {
		free(vm);
		return NULL;
	}
	return vm;
}

/* Puts v in its VM's list of vCPUs with a current task (once: the unload empties the list). */
static int list_running(struct ht_sched *s, struct vcpu_state *v)
{
	struct vm_state *vm;

	if (v->running_listed)
		return 0;
	vm = vm_of(s, v->host_pid);
	if (!vm)
		return -1;
	if (HT_GROW(vm->running, vm->cap, vm->n + 1, 8))
		return -1;
	vm->running[vm->n++] = v;
	v->running_listed = true;
	return 0;
}

/* Adds now - since to the task that ran on v. */
static int account(struct ht_sched *s, struct vcpu_state *v, uint64_t now)
{
	struct run_stat *per_vcpu = slot(s, v->host_pid, v->vcpu, v->cur_tid);
	struct run_stat *total = per_vcpu ? slot(s, v->host_pid, ALL_VCPUS, v->cur_tid) : NULL;
	uint64_t ns = now > v->since_ns ? now - v->since_ns : 0;

	if (!total)
		return -1;
	per_vcpu->run_ns += ns;
	total->run_ns += ns;
	return 0;
}

static int name_task(struct ht_sched *s, uint32_t host_pid, uint32_t tid, const char *comm)
{
	struct run_stat *total = slot(s, host_pid, ALL_VCPUS, tid);

	if (!total)
		return -1;
	memcpy(total->comm, comm, sizeof(total->comm));
	return 0;
}

/* The module stops offloading: what runs on the VM's vCPUs from here on is not known. */
static int module_unloaded(struct ht_sched *s, const struct ht_record *r)
{
	struct vm_state *vm;

	if (!ht_hashmap_find(&s->vms, r->host_pid, (long *)&vm))
		return 0;
	for (size_t i = 0; i < vm->n; i++) {
		struct vcpu_state *v = vm->running[i];

		v->running_listed = false;
		if (!v->have_cur)
			continue;
		if (account(s, v, r->exit_ns))
			return -1;
		v->have_cur = false;
		v->stopped_ns = r->exit_ns;
	}
	vm->n = 0;
	return 0;
}

int ht_sched_observe(struct ht_sched *s, const struct ht_record *r)
{
	struct ht_gev ev;

	ht_gev_decode(&s->gev, r, &ev);
	if (ev.kind == HT_GEV_MODULE && ev.u.mod.state == 0)
		return module_unloaded(s, r);
	if (ev.kind == HT_GEV_SCHED_WAKEUP)
		return name_task(s, r->host_pid, ev.u.wake.tid, ev.u.wake.comm);
	if (ev.kind != HT_GEV_SCHED_SWITCH)
		return 0;

	uint32_t prev = ev.u.sw.prev_tid, next = ev.u.sw.next_tid;
	struct vcpu_state *v = vcpu_of(s, r->host_pid, r->vcpu_id, true);

	if (!v)
		return -1;
	s->switches++;
	v->switches++;
	if (!v->first_ns)
		v->first_ns = r->exit_ns;
	v->last_ns = r->exit_ns;
	if (v->have_cur && v->cur_tid != prev) {
		/* Switches are missing: neither task's time in between is known. */
		v->gaps++;
		s->gaps++;
	} else if (v->have_cur && account(s, v, r->exit_ns)) {
		return -1;
	}
	if (name_task(s, r->host_pid, next, ev.u.sw.next_comm))
		return -1;
	struct run_stat *per_vcpu = slot(s, r->host_pid, r->vcpu_id, next);
	struct run_stat *total = per_vcpu ? slot(s, r->host_pid, ALL_VCPUS, next) : NULL;
	if (!total || list_running(s, v))
		return -1;
	total->runs++;
	if (r->vcpu_id < 64)
		total->vcpu_mask |= 1ull << r->vcpu_id;
	per_vcpu->runs++;
	memcpy(per_vcpu->comm, ev.u.sw.next_comm, sizeof(per_vcpu->comm));
	v->have_cur = true;
	v->stopped_ns = 0;
	v->cur_tid = next;
	v->since_ns = r->exit_ns;
	return 0;
}

static int cmp_stat(const void *a, const void *b)
{
	const struct run_stat *x = *(const struct run_stat *const *)a, *y = *(const struct run_stat *const *)b;

	if (x->host_pid != y->host_pid)
		return x->host_pid < y->host_pid ? -1 : 1;
	if (x->vcpu != y->vcpu)
		return x->vcpu < y->vcpu ? -1 : 1;
	if (x->run_ns != y->run_ns)
		return x->run_ns > y->run_ns ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static const char *comm_of(struct ht_sched *s, uint32_t host_pid, uint32_t tid)
{
	struct run_stat *t = find(s, host_pid, ALL_VCPUS, tid);

	return t && t->comm[0] ? t->comm : "?";
}

/* A task name is the guest's: escaped, never raw on the terminal. */
static const char *comm_text(char buf[HT_ESC_SIZE(16)], const char *comm)
{
	return ht_escape(buf, HT_ESC_SIZE(16), comm, HT_ESC_TEXT);
}

static void print_total_head(FILE *out, uint32_t host_pid, bool head)
{
	if (head)
		fprintf(out, "\nVM pid %u, every vCPU:\n  %8s  %-16s %8s %14s  %s\n", host_pid, "tid", "comm", "runs",
			"run_ms", "vcpus");
}

static void print_total_row(FILE *out, const struct run_stat *r, bool head)
{
	char comm[HT_ESC_SIZE(16)];

	print_total_head(out, r->host_pid, head);
	fprintf(out, "  %8u  %-16s %8" PRIu64 " %14.3f  ", r->tid, comm_text(comm, r->comm[0] ? r->comm : "?"),
		r->runs, (double)r->run_ns / 1e6);
	for (unsigned int c = 0, first = 1; c < 64; c++)
		if (r->vcpu_mask >> c & 1) {
			fprintf(out, "%s%u", first ? "" : ",", c);
			first = 0;
		}
	fputc('\n', out);
}

/*
 * The idle tasks of a VM's CPUs in its every-vCPU table: tid 0 on each, one
 * row per vCPU from its per-vCPU rows (the n rows at rows, sorted before
 * the VM's totals). Returns the rows printed.
 */
static unsigned int print_idle_rows(FILE *out, struct run_stat *const *rows, size_t n, bool head)
{
	char comm[HT_ESC_SIZE(16)];
	unsigned int printed = 0;

	for (size_t k = 0; k < n; k++) {
		const struct run_stat *r = rows[k];

		if (r->tid != 0 || r->vcpu == ALL_VCPUS)
			continue;
		print_total_head(out, r->host_pid, head && !printed);
		fprintf(out, "  %8u  %-16s %8" PRIu64 " %14.3f  %u\n", 0u,
			comm_text(comm, r->comm[0] ? r->comm : "swapper"), r->runs, (double)r->run_ns / 1e6, r->vcpu);
		printed++;
	}
	return printed;
}

static void print_vcpu_row(struct ht_sched *s, FILE *out, const struct run_stat *r, bool head, uint64_t start_ns,
			   uint64_t end_ns)
{
	const struct vcpu_state *v = vcpu_of(s, r->host_pid, r->vcpu, false);
	char comm[HT_ESC_SIZE(16)];
	uint64_t span = 0;

	if (head) {
		fprintf(out, "\nvCPU %u of VM pid %u: %" PRIu64 " switches from %.6f s to %.6f s, %" PRIu64 " gap(s)\n",
			r->vcpu, r->host_pid, v ? v->switches : 0, v ? (double)(v->first_ns - start_ns) / 1e9 : 0.0,
			v ? (double)(v->last_ns - start_ns) / 1e9 : 0.0, v ? v->gaps : 0);
		fprintf(out, "  %8s  %-16s %8s %14s %7s\n", "tid", "comm", "runs", "run_ms", "share");
	}
	if (v) {
		uint64_t stop = v->stopped_ns ? v->stopped_ns : end_ns;

		span = stop > v->first_ns ? stop - v->first_ns : 0;
	}
	fprintf(out, "  %8u  %-16s %8" PRIu64 " %14.3f %6.1f%%\n", r->tid,
		comm_text(comm, r->comm[0] ? r->comm : comm_of(s, r->host_pid, r->tid)), r->runs,
		(double)r->run_ns / 1e6, span ? 100.0 * (double)r->run_ns / (double)span : 0.0);
}

void ht_sched_print(struct ht_sched *s, FILE *out, uint64_t start_ns, uint64_t end_ns,
		    struct ht_sched_stats *stats)
{
	struct ht_sched_stats st = { .switches = s->switches, .gaps = s->gaps,
				     .vcpus = (unsigned int)ht_hashmap_size(&s->vcpus) };
	struct ht_hashmap_entry *cur;
	struct run_stat **rows;
	size_t n = 0, bkt;

	/* The task on each vCPU at the end ran until the end. */
	ht_hashmap_for_each(&s->vcpus, cur, bkt) {
		struct vcpu_state *v = cur->pvalue;

		if (v->have_cur && end_ns > v->since_ns && account(s, v, end_ns)) {
			fprintf(out, "# guest scheduling: out of memory\n");
			return;
		}
	}
	rows = malloc((ht_hashmap_size(&s->stats) ? ht_hashmap_size(&s->stats) : 1) * sizeof(*rows));
	if (!rows) {
		fprintf(out, "# guest scheduling: out of memory\n");
		return;
	}
	ht_hashmap_for_each(&s->stats, cur, bkt)
		if (((struct run_stat *)cur->pvalue)->runs)
			rows[n++] = cur->pvalue;
	qsort(rows, n, sizeof(*rows), cmp_stat);

	fprintf(out, "guest scheduling: %" PRIu64 " sched_switch events on %u vCPU(s), %" PRIu64
		     " gap(s) (switches missing from the trace)\n",
		s->switches, st.vcpus, s->gaps);
	if (!s->switches)
		fprintf(out, "  no sched_switch events (nr %u) in the trace: load the guest module with sched_switch=1 and record --nr %u\n",
			HT_GUEST_NR_SCHED_SWITCH, HT_GUEST_NR_SCHED_SWITCH);
	for (size_t i = 0, vm_first = 0; i < n; i++) {
		const struct run_stat *r = rows[i];
		bool head = i == 0 || rows[i - 1]->host_pid != r->host_pid || rows[i - 1]->vcpu != r->vcpu;

		if (i && rows[i - 1]->host_pid != r->host_pid)
			vm_first = i;
		if (r->vcpu == ALL_VCPUS) {
			if (r->tid == 0) {
				/* Each CPU has an idle task of its own (swapper/N), all tid 0: one row each. */
				st.tasks += print_idle_rows(out, rows + vm_first, i - vm_first, head);
				continue;
			}
			st.tasks++;
			print_total_row(out, r, head);
		} else {
			print_vcpu_row(s, out, r, head, start_ns, end_ns);
		}
	}
	free(rows);
	if (stats)
		*stats = st;
}
