// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/chrome_guest.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "common/escape.h"
#include "common/hashmap.h"
#include "common/grow.h"
#include "decode/guest_event.h"
#include "export/id_pair_table.h"

/* A guest CPU track: is a task's slice open on it. */
struct cpu_track {
	uint32_t pid, cpu;
	bool open;
};

/* Indexes of tracks, in the order they were added. */
struct track_list {
	size_t *v;
	size_t n, cap;
};

/*
 * Guest CPU ids come from the guest: tracks are found by hash, and an
 * unload closes the slices of its VM from that VM's list of open tracks,
 * never by a walk of every track.
 */
struct ht_chrome_guest {
	const struct ht_decoder *dec;
	struct ht_gev_decoder gev;
	struct ht_id_pair_table *named; /* guest tracks whose name event is written */
	struct cpu_track *cpus;        /* in the order they appeared */
	size_t ncpus, cap;
	struct ht_hashmap by_key;      /* pid << 32 | cpu -> index in cpus */
	struct ht_hashmap open_by_vm;  /* pid -> struct track_list * of tracks opened since its last unload */
};

static char on;

static int list_add(struct track_list *l, size_t i)
{
	if (HT_GROW(l->v, l->cap, l->n + 1, 8))
		return -1;
	l->v[l->n++] = i;
	return 0;
}

static struct cpu_track *cpu_track(struct ht_chrome_guest *g, uint32_t pid, uint32_t cpu)
{
	long key = (long)((uint64_t)pid << 32 | cpu), i;

	if (ht_hashmap_find(&g->by_key, key, &i))
		return &g->cpus[i];
	if (HT_GROW(g->cpus, g->cap, g->ncpus + 1, 16))
		return NULL;
	if (ht_hashmap_insert(&g->by_key, key, (long)g->ncpus, HT_HASHMAP_ADD, NULL, NULL))
		return NULL;
	g->cpus[g->ncpus] = (struct cpu_track){ .pid = pid, .cpu = cpu };
	return &g->cpus[g->ncpus++];
}

/* Marks track t (of guest CPU pid) open, listed under its VM. */
static int open_track(struct ht_chrome_guest *g, struct cpu_track *t)
{
	struct track_list *l;

	if (t->open)
		return 0;
	if (!ht_hashmap_find(&g->open_by_vm, t->pid, (long *)&l)) {
		l = calloc(1, sizeof(*l));
		if (!l || ht_hashmap_insert(&g->open_by_vm, t->pid, (long)l, HT_HASHMAP_ADD, NULL, NULL)) {
			free(l);
			return -1;
		}
	}
	if (list_add(l, (size_t)(t - g->cpus)))
		return -1;
	t->open = true;
	return 0;
}

struct ht_chrome_guest *ht_chrome_guest_new(const struct ht_decoder *dec)
{
	struct ht_chrome_guest *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->dec = dec;
	if (ht_gev_decoder_init(&g->gev)) {
		free(g);
		return NULL;
	}
	ht_hashmap_init(&g->by_key, ht_hash_long, ht_equal_long, NULL);
	ht_hashmap_init(&g->open_by_vm, ht_hash_long, ht_equal_long, NULL);
	g->named = ht_id_pair_table_new();
	if (!g->named) {
		ht_chrome_guest_free(g);
		return NULL;
	}
	return g;
}

void ht_chrome_guest_free(struct ht_chrome_guest *g)
{
	struct ht_hashmap_entry *cur;
	size_t bkt;

	if (!g)
		return;
	ht_id_pair_table_free(g->named);
	ht_hashmap_for_each(&g->open_by_vm, cur, bkt) {
		struct track_list *l = cur->pvalue;

		free(l->v);
		free(l);
	}
	ht_hashmap_clear(&g->open_by_vm);
	ht_hashmap_clear(&g->by_key);
	free(g->cpus);
	free(g);
}

/* Process and thread name events of a guest track, the first time it is used. */
static int name_track(struct ht_chrome_guest *g, FILE *f, ht_chrome_sep_fn sep, void *arg, uint32_t pid,
		      uint32_t tid, uint32_t host_pid, const char *kind, uint32_t id)
{
	if (ht_id_pair_table_get(g->named, pid, tid))
		return 0;
	if (!ht_id_pair_table_get(g->named, pid, UINT32_MAX)) {
		if (ht_id_pair_table_put(g->named, pid, UINT32_MAX, &on))
			return -ENOMEM;
		sep(arg);
		fprintf(f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,\"tid\":0,\"args\":{\"name\":\"guest %ss of VM %u\"}}",
			pid, kind, host_pid);
	}
	if (ht_id_pair_table_put(g->named, pid, tid, &on))
		return -ENOMEM;
	sep(arg);
	fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%u,\"tid\":%u,\"args\":{\"name\":\"guest %s %u\"}}",
		pid, tid, kind, id);
	return 0;
}

static int func_event(struct ht_chrome_guest *g, FILE *f, ht_chrome_sep_fn sep, void *arg,
		      const struct ht_record *r, const struct ht_gev *ev, const char *ts)
{
	uint32_t pid = HT_CHROME_GUEST_TASKS_PID + r->host_pid, tid = ev->u.func.tid;
	char name[HT_SYM_TEXT_MAX];

	if (name_track(g, f, sep, arg, pid, tid, r->host_pid, "task", tid))
		return -ENOMEM;
	if (!ht_decoder_function(g->dec, ev->u.func.addr, name, sizeof(name)))
		snprintf(name, sizeof(name), "0x%llx", (unsigned long long)ev->u.func.addr);
	sep(arg);
	/* The symbol file's name: escaped, whole. */
	fprintf(f, "{\"ph\":\"%s\",\"cat\":\"guest_call\",\"name\":\"", ev->kind == HT_GEV_FUNC_ENTRY ? "B" : "E");
	ht_escape_fputs(f, name, HT_ESC_JSON);
	fprintf(f, "\",\"pid\":%u,\"tid\":%u,\"ts\":%s}", pid, tid, ts);
	return 0;
}

static int switch_event(struct ht_chrome_guest *g, FILE *f, ht_chrome_sep_fn sep, void *arg,
			const struct ht_record *r, const struct ht_gev *ev, const char *ts)
{
	uint32_t pid = HT_CHROME_GUEST_CPUS_PID + r->host_pid, cpu = ev->cpu;
	uint32_t next = ev->u.sw.next_tid;
	struct cpu_track *t = cpu_track(g, pid, cpu);

	if (!t || name_track(g, f, sep, arg, pid, cpu, r->host_pid, "CPU", cpu))
		return -ENOMEM;
	if (t->open) {
		sep(arg);
		fprintf(f, "{\"ph\":\"E\",\"cat\":\"guest_sched\",\"pid\":%u,\"tid\":%u,\"ts\":%s}", pid, cpu, ts);
	} else if (open_track(g, t)) {
		return -ENOMEM;
	}
	sep(arg);
	/* The guest's task name: escaped, whole. */
	fputs("{\"ph\":\"B\",\"cat\":\"guest_sched\",\"name\":\"", f);
	ht_escape_fputs(f, ev->u.sw.next_comm, HT_ESC_JSON);
	fprintf(f, " (%u)\",\"pid\":%u,\"tid\":%u,\"ts\":%s,\"args\":{\"tid\":%u}}", next, pid, cpu, ts, next);
	return 0;
}

int ht_chrome_guest_add(struct ht_chrome_guest *g, FILE *f, ht_chrome_sep_fn sep, void *arg,
			const struct ht_record *r, const char *ts)
{
	const struct ht_event_desc *desc = ht_decoder_event(g->dec, r);
	struct ht_gev ev;

	if (!desc)
		return 0;
	sep(arg);
	fprintf(f, "{\"ph\":\"I\",\"s\":\"t\",\"cat\":\"guest\",\"name\":\"%s\",\"pid\":%u,\"tid\":%u,\"ts\":%s,\"args\":",
		desc->name, r->host_pid, r->host_tid, ts);
	ht_decode_print_json_fields(g->dec, desc, r, f);
	fputc('}', f);
	ht_gev_decode(&g->gev, r, &ev);
	if (ev.kind == HT_GEV_FUNC_ENTRY || ev.kind == HT_GEV_FUNC_EXIT)
		return func_event(g, f, sep, arg, r, &ev, ts);
	if (ev.kind == HT_GEV_SCHED_SWITCH)
		return switch_event(g, f, sep, arg, r, &ev, ts);
	if (ev.kind == HT_GEV_MODULE && ev.u.mod.state == 0) {
		/* Unloading: nothing is known about what runs on that VM's CPUs from here on. */
		struct track_list *l;

		if (!ht_hashmap_find(&g->open_by_vm, HT_CHROME_GUEST_CPUS_PID + r->host_pid, (long *)&l))
			return 0;
		for (size_t i = 0; i < l->n; i++) {
			struct cpu_track *t = &g->cpus[l->v[i]];

			if (!t->open)
				continue;
			sep(arg);
			fprintf(f, "{\"ph\":\"E\",\"cat\":\"guest_sched\",\"pid\":%u,\"tid\":%u,\"ts\":%s}",
				t->pid, t->cpu, ts);
			t->open = false;
		}
		l->n = 0;
	}
	return 0;
}

void ht_chrome_guest_finish(struct ht_chrome_guest *g, FILE *f, ht_chrome_sep_fn sep, void *arg,
			    const char *ts)
{
	struct ht_hashmap_entry *cur;
	size_t bkt;

	for (size_t i = 0; i < g->ncpus; i++)
		if (g->cpus[i].open) {
			sep(arg);
			fprintf(f, "{\"ph\":\"E\",\"cat\":\"guest_sched\",\"pid\":%u,\"tid\":%u,\"ts\":%s}",
				g->cpus[i].pid, g->cpus[i].cpu, ts);
			g->cpus[i].open = false;
		}
	ht_hashmap_for_each(&g->open_by_vm, cur, bkt)
		((struct track_list *)cur->pvalue)->n = 0;
}
