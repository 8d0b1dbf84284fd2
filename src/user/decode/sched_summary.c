// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "decode/sched_summary.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "common/escape.h"
#include "hypertrace/guest.h"

#define ALL_VCPUS 0xffffu /* key of a task's total over every vCPU */

/* One (VM, vCPU, task) -- or (VM, task) with vcpu ALL_VCPUS -- and its run time. */
struct run_stat {
	uint32_t host_pid, tid;
	uint16_t vcpu;
	bool used;
	uint64_t runs, run_ns;
	uint64_t vcpu_mask; /* totals: the vCPUs (below 64) the task ran on */
	char comm[17];      /* its name when last switched in (per vCPU: tid 0 is swapper/N on each) */
};

struct vcpu_state {
	uint32_t host_pid;
	uint16_t vcpu;
	bool have_cur;
	uint32_t cur_tid;
	uint64_t since_ns, first_ns, last_ns, switches, gaps;
	uint64_t stopped_ns; /* the module's unload, if after the last switch */
};

struct ht_sched {
	struct run_stat *tab; /* open addressing, power-of-two size */
	size_t cap, used;
	struct vcpu_state *vcpus;
	size_t nvcpus;
	uint64_t switches, gaps;
};

struct ht_sched *ht_sched_new(void)
{
	struct ht_sched *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->cap = 256;
	s->tab = calloc(s->cap, sizeof(*s->tab));
	if (!s->tab) {
		free(s);
		return NULL;
	}
	return s;
}

void ht_sched_free(struct ht_sched *s)
{
	if (!s)
		return;
	free(s->tab);
	free(s->vcpus);
	free(s);
}

static size_t hash(uint32_t host_pid, uint16_t vcpu, uint32_t tid)
{
	uint64_t k = ((uint64_t)host_pid << 32 | tid) * 0x9e3779b97f4a7c15ull ^ vcpu * 0xff51afd7ed558ccdull;

	return (size_t)(k ^ (k >> 29));
}

static struct run_stat *find(struct ht_sched *s, uint32_t host_pid, uint16_t vcpu, uint32_t tid)
{
	for (size_t i = hash(host_pid, vcpu, tid) & (s->cap - 1); s->tab[i].used; i = (i + 1) & (s->cap - 1))
		if (s->tab[i].host_pid == host_pid && s->tab[i].vcpu == vcpu && s->tab[i].tid == tid)
			return &s->tab[i];
	return NULL;
}

/* The entry of a key, created if new. Creating one may move the table: earlier pointers go stale. */
static struct run_stat *slot(struct ht_sched *s, uint32_t host_pid, uint16_t vcpu, uint32_t tid)
{
	struct run_stat *r = find(s, host_pid, vcpu, tid);
	size_t i;

	if (r)
		return r;
	if (2 * (s->used + 1) > s->cap) {
		struct run_stat *old = s->tab;
		size_t oldcap = s->cap;

		s->tab = calloc(2 * oldcap, sizeof(*s->tab));
		if (!s->tab) {
			s->tab = old;
			return NULL;
		}
		s->cap = 2 * oldcap;
		for (size_t k = 0; k < oldcap; k++) {
			if (!old[k].used)
				continue;
			for (i = hash(old[k].host_pid, old[k].vcpu, old[k].tid) & (s->cap - 1); s->tab[i].used;
			     i = (i + 1) & (s->cap - 1))
				;
			s->tab[i] = old[k];
		}
		free(old);
	}
	for (i = hash(host_pid, vcpu, tid) & (s->cap - 1); s->tab[i].used; i = (i + 1) & (s->cap - 1))
		;
	s->tab[i] = (struct run_stat){ .host_pid = host_pid, .vcpu = vcpu, .tid = tid, .used = true };
	s->used++;
	return &s->tab[i];
}

static struct vcpu_state *vcpu_of(struct ht_sched *s, uint32_t host_pid, uint16_t vcpu)
{
	for (size_t i = 0; i < s->nvcpus; i++)
		if (s->vcpus[i].host_pid == host_pid && s->vcpus[i].vcpu == vcpu)
			return &s->vcpus[i];
	struct vcpu_state *v = realloc(s->vcpus, (s->nvcpus + 1) * sizeof(*v));
	if (!v)
		return NULL;
	s->vcpus = v;
	v[s->nvcpus] = (struct vcpu_state){ .host_pid = host_pid, .vcpu = vcpu };
	return &v[s->nvcpus++];
}

/* Text packed as guest.h packs it: bytes in memory order, NUL-padded. */
static void unpack_comm(uint64_t w0, uint64_t w1, char out[17])
{
	for (int i = 0; i < 8; i++) {
		out[i] = (char)(w0 >> (8 * i));
		out[8 + i] = (char)(w1 >> (8 * i));
	}
	out[16] = '\0';
}

/* Adds now - since to the task that ran on v. */
static int account(struct ht_sched *s, struct vcpu_state *v, uint64_t now)
{
	struct run_stat *per_vcpu = slot(s, v->host_pid, v->vcpu, v->cur_tid);
	struct run_stat *total = per_vcpu ? slot(s, v->host_pid, ALL_VCPUS, v->cur_tid) : NULL;
	uint64_t ns = now > v->since_ns ? now - v->since_ns : 0;

	if (!total)
		return -1;
	/* Creating total may have moved the table: look the first one up again. */
	per_vcpu = find(s, v->host_pid, v->vcpu, v->cur_tid);
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

int ht_sched_observe(struct ht_sched *s, const struct ht_record *r)
{
	char comm[17];

	if (r->nr == HT_GUEST_NR_MODULE && (r->a0 & 0xff) == 0) {
		/* The module stops offloading: what runs from here on is not known. */
		for (size_t i = 0; i < s->nvcpus; i++) {
			struct vcpu_state *v = &s->vcpus[i];

			if (v->host_pid != r->host_pid || !v->have_cur)
				continue;
			if (account(s, v, r->exit_ns))
				return -1;
			v->have_cur = false;
			v->stopped_ns = r->exit_ns;
		}
		return 0;
	}
	if (r->nr == HT_GUEST_NR_SCHED_WAKEUP) {
		unpack_comm(r->a1, r->a2, comm);
		return name_task(s, r->host_pid, (uint32_t)r->a0, comm);
	}
	if (r->nr != HT_GUEST_NR_SCHED_SWITCH)
		return 0;

	uint32_t prev = (uint32_t)r->a0, next = (uint32_t)(r->a0 >> 32);
	struct vcpu_state *v = vcpu_of(s, r->host_pid, r->vcpu_id);

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
	unpack_comm(r->a2, r->a3, comm);
	if (name_task(s, r->host_pid, next, comm))
		return -1;
	struct run_stat *per_vcpu = slot(s, r->host_pid, r->vcpu_id, next);
	struct run_stat *total = per_vcpu ? slot(s, r->host_pid, ALL_VCPUS, next) : NULL;
	if (!total)
		return -1;
	total->runs++;
	if (r->vcpu_id < 64)
		total->vcpu_mask |= 1ull << r->vcpu_id;
	per_vcpu = find(s, r->host_pid, r->vcpu_id, next);
	per_vcpu->runs++;
	memcpy(per_vcpu->comm, comm, sizeof(per_vcpu->comm));
	v->have_cur = true;
	v->stopped_ns = 0;
	v->cur_tid = next;
	v->since_ns = r->exit_ns;
	return 0;
}

static int cmp_stat(const void *a, const void *b)
{
	const struct run_stat *x = a, *y = b;

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

void ht_sched_print(struct ht_sched *s, FILE *out, uint64_t start_ns, uint64_t end_ns,
		    struct ht_sched_stats *stats)
{
	char comm[HT_ESC_SIZE(16)];
	struct run_stat *rows;
	size_t n = 0;
	struct ht_sched_stats st = { .switches = s->switches, .gaps = s->gaps, .vcpus = (unsigned int)s->nvcpus };

	/* The task on each vCPU at the end ran until the end. */
	for (size_t i = 0; i < s->nvcpus; i++)
		if (s->vcpus[i].have_cur && end_ns > s->vcpus[i].since_ns)
			account(s, &s->vcpus[i], end_ns);
	rows = malloc((s->used ? s->used : 1) * sizeof(*rows));
	if (!rows) {
		fprintf(out, "# guest scheduling: out of memory\n");
		return;
	}
	for (size_t i = 0; i < s->cap; i++)
		if (s->tab[i].used && s->tab[i].runs)
			rows[n++] = s->tab[i];
	qsort(rows, n, sizeof(*rows), cmp_stat);

	fprintf(out, "guest scheduling: %" PRIu64 " sched_switch events on %zu vCPU(s), %" PRIu64
		     " gap(s) (switches missing from the trace)\n",
		s->switches, s->nvcpus, s->gaps);
	if (!s->switches)
		fprintf(out, "  no sched_switch events (nr %u) in the trace: load the guest module with sched_switch=1 and record --nr %u\n",
			HT_GUEST_NR_SCHED_SWITCH, HT_GUEST_NR_SCHED_SWITCH);
	for (size_t i = 0; i < n; i++) {
		const struct run_stat *r = &rows[i];
		bool head = i == 0 || rows[i - 1].host_pid != r->host_pid || rows[i - 1].vcpu != r->vcpu;

		if (r->vcpu == ALL_VCPUS) {
			st.tasks++;
			if (head)
				fprintf(out, "\nVM pid %u, every vCPU:\n  %8s  %-16s %8s %14s  %s\n", r->host_pid, "tid",
					"comm", "runs", "run_ms", "vcpus");
			fprintf(out, "  %8u  %-16s %8" PRIu64 " %14.3f  ", r->tid, comm_text(comm, r->comm[0] ? r->comm : "?"),
				r->runs, (double)r->run_ns / 1e6);
			for (unsigned int c = 0, first = 1; c < 64; c++)
				if (r->vcpu_mask >> c & 1) {
					fprintf(out, "%s%u", first ? "" : ",", c);
					first = 0;
				}
			fputc('\n', out);
			continue;
		}
		if (head) {
			const struct vcpu_state *v = NULL;

			for (size_t k = 0; k < s->nvcpus; k++)
				if (s->vcpus[k].host_pid == r->host_pid && s->vcpus[k].vcpu == r->vcpu)
					v = &s->vcpus[k];
			fprintf(out, "\nvCPU %u of VM pid %u: %" PRIu64 " switches from %.6f s to %.6f s, %" PRIu64 " gap(s)\n",
				r->vcpu, r->host_pid, v ? v->switches : 0,
				v ? (double)(v->first_ns - start_ns) / 1e9 : 0.0,
				v ? (double)(v->last_ns - start_ns) / 1e9 : 0.0, v ? v->gaps : 0);
			fprintf(out, "  %8s  %-16s %8s %14s %7s\n", "tid", "comm", "runs", "run_ms", "share");
		}
		uint64_t span = 0;
		for (size_t k = 0; k < s->nvcpus; k++)
			if (s->vcpus[k].host_pid == r->host_pid && s->vcpus[k].vcpu == r->vcpu)
			{
				uint64_t stop = s->vcpus[k].stopped_ns ? s->vcpus[k].stopped_ns : end_ns;

				span = stop > s->vcpus[k].first_ns ? stop - s->vcpus[k].first_ns : 0;
			}
		fprintf(out, "  %8u  %-16s %8" PRIu64 " %14.3f %6.1f%%\n", r->tid,
			comm_text(comm, r->comm[0] ? r->comm : comm_of(s, r->host_pid, r->tid)),
			r->runs, (double)r->run_ns / 1e6, span ? 100.0 * (double)r->run_ns / (double)span : 0.0);
	}
	free(rows);
	if (stats)
		*stats = st;
}
