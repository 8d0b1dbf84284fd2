// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Feeds the metrics registry from the recording and hands snapshots to the HTTP thread. */
#include "record/metrics_exporter.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include "metrics/metrics_registry.h"
#include "metrics/process_metrics.h"
#include "record/vm_identity.h"
#include "common/util.h"

/*
 * Which VM a process is, for the labels: every process of one VM (a QEMU
 * that restarts) gets the same key, so its series go on. At most VM_PIDS
 * processes and VM_KEYS VMs are known at once; past that a process is
 * labelled by its pid without being remembered.
 */
#define VM_PIDS 512
#define VM_KEYS 512
/* How often the processes are checked for having ended. */
#define VM_CHECK_NS 1000000000ull
/*
 * Processes whose VM was dropped, remembered so that the exit metrics (read
 * from a table that keeps every process's numbers) leave them out too.
 */
#define VM_DROPPED 1024

struct vm_pid {
	uint32_t pid, key; /* key: index in vms + 1; 0: a free entry */
	bool ended;
};

struct vm_entry {
	char label[HT_METRICS_VM_LABEL]; /* "" : a free entry */
	char guest[64];                   /* the guest name as read (the exit metrics make their label of it); "" if none */
	unsigned long long last_alive_ns; /* a process of it was seen running then */
};

struct ht_metrics {
	struct ht_metrics_registry live;   /* the drain thread's, fed per record */
	struct ht_metrics_registry spare;  /* the drain thread's, filled then published */
	struct ht_metrics_registry shared; /* the latest published: behind lock */
	struct ht_metrics_registry front;  /* the HTTP thread's, rendered */
	pthread_mutex_t lock;
	unsigned long long published, served; /* generations of shared and front */
	unsigned long long last_publish_ns;
	struct ht_filters filters;
	bool aggregate;
	struct ht_metrics_http *http;
	/* The drain thread's: processes and VMs labelled so far. */
	struct vm_pid pids[VM_PIDS];
	struct vm_entry vms[VM_KEYS];
	size_t last_pid;
	uint32_t dropped[VM_DROPPED]; /* a ring; 0: empty */
	size_t next_dropped;
	unsigned long long grace_ns, last_check_ns;
};

static bool pid_ended(uint32_t pid)
{
	return kill((pid_t)pid, 0) && errno == ESRCH;
}

/*
 * The key and label of process pid's VM (and the guest name the label was
 * made of, "" if none); a process seen for the first time is read from
 * /proc, once: the names stay those of the running process.
 */
static uint32_t vm_of(struct ht_metrics *m, uint32_t pid, const char **label, const char **guest)
{
	static char unremembered[HT_METRICS_VM_LABEL], unremembered_guest[64];
	struct ht_identity id;
	char name[HT_METRICS_VM_LABEL];
	size_t free_pid = VM_PIDS, free_vm = VM_KEYS;

	if (m->pids[m->last_pid].key && m->pids[m->last_pid].pid == pid) {
		*label = m->vms[m->pids[m->last_pid].key - 1].label;
		*guest = m->vms[m->pids[m->last_pid].key - 1].guest;
		return m->pids[m->last_pid].key;
	}
	for (size_t i = 0; i < VM_PIDS; i++) {
		if (m->pids[i].key && m->pids[i].pid == pid) {
			m->last_pid = i;
			*label = m->vms[m->pids[i].key - 1].label;
			*guest = m->vms[m->pids[i].key - 1].guest;
			return m->pids[i].key;
		}
		if (!m->pids[i].key && free_pid == VM_PIDS)
			free_pid = i;
	}
	ht_identity_read("/proc", pid, pid, 0, &id);
	ht_metrics_vm_label(id.vm_name, pid, name);
	for (size_t k = 0; k < VM_KEYS; k++) {
		if (m->vms[k].label[0] && !strcmp(m->vms[k].label, name)) {
			free_vm = k;
			break;
		}
		if (!m->vms[k].label[0] && free_vm == VM_KEYS)
			free_vm = k;
	}
	if (free_pid == VM_PIDS || free_vm == VM_KEYS) {
		/* Keys past VM_KEYS: never a remembered VM's. */
		snprintf(unremembered, sizeof(unremembered), "%s", name);
		snprintf(unremembered_guest, sizeof(unremembered_guest), "%s", id.vm_name);
		*label = unremembered;
		*guest = unremembered_guest;
		return VM_KEYS + 1 + pid;
	}
	if (!m->vms[free_vm].label[0]) {
		snprintf(m->vms[free_vm].label, sizeof(m->vms[free_vm].label), "%s", name);
		snprintf(m->vms[free_vm].guest, sizeof(m->vms[free_vm].guest), "%s", id.vm_name);
	}
	m->vms[free_vm].last_alive_ns = ht_monotonic_ns();
	m->pids[free_pid] = (struct vm_pid){ .pid = pid, .key = (uint32_t)free_vm + 1 };
	m->last_pid = free_pid;
	*label = m->vms[free_vm].label;
	*guest = m->vms[free_vm].guest;
	return (uint32_t)free_vm + 1;
}

/*
 * Series of VMs that ended go after the grace period: a VM none of whose
 * processes ran for grace_ns loses its label sets (and, with --no-file, its
 * processes' BPF histograms). A VM restarted within the grace period keeps
 * its series going.
 */
static void forget_ended_vms(struct ht_metrics *m, const struct ht_tracer *t, unsigned long long now)
{
	if (now - m->last_check_ns < VM_CHECK_NS)
		return;
	m->last_check_ns = now;
	for (size_t i = 0; i < VM_PIDS; i++) {
		struct vm_pid *p = &m->pids[i];

		if (!p->key)
			continue;
		if (!p->ended && pid_ended(p->pid))
			p->ended = true;
		if (!p->ended)
			m->vms[p->key - 1].last_alive_ns = now;
	}
	for (size_t k = 0; k < VM_KEYS; k++) {
		struct vm_entry *v = &m->vms[k];

		if (!v->label[0] || now - v->last_alive_ns < m->grace_ns)
			continue;
		for (size_t i = 0; i < VM_PIDS; i++) {
			if (m->pids[i].key != k + 1)
				continue;
			if (m->aggregate)
				ht_tracer_forget_vm(t, m->pids[i].pid);
			m->dropped[m->next_dropped++ % VM_DROPPED] = m->pids[i].pid;
			m->pids[i].key = 0;
		}
		ht_metrics_drop_vm(&m->live, (uint32_t)k + 1);
		v->label[0] = '\0';
	}
}

/* Was process pid's VM dropped? A pid that runs again is a new process: no longer. */
static bool vm_dropped(struct ht_metrics *m, uint32_t pid)
{
	for (size_t i = 0; i < VM_DROPPED; i++) {
		if (!pid || m->dropped[i] != pid)
			continue;
		if (!pid_ended(pid)) {
			m->dropped[i] = 0;
			return false;
		}
		return true;
	}
	return false;
}

/*
 * The exit metrics' name of VM process pid: the guest name the hypercall
 * metrics label it by (read once, maybe while the process ran and the exit
 * table had not been read yet), and known to the grace period alike; a VM
 * gone past it is left out.
 */
static const char *exit_vm_name(void *ctx, uint32_t pid)
{
	struct ht_metrics *m = ctx;
	const char *label, *guest;

	if (vm_dropped(m, pid))
		return ht_metrics_vm_skip;
	vm_of(m, pid, &label, &guest);
	return guest[0] ? guest : NULL;
}

static void swap_registries(struct ht_metrics_registry *a, struct ht_metrics_registry *b)
{
	struct ht_metrics_registry t = *a;

	*a = *b;
	*b = t;
}

/* The HTTP thread: take the latest snapshot if there is a newer one, then render it. */
static int render_body(void *ctx, FILE *out)
{
	struct ht_metrics *m = ctx;

	pthread_mutex_lock(&m->lock);
	if (m->published != m->served) {
		swap_registries(&m->front, &m->shared);
		m->served = m->published;
	}
	pthread_mutex_unlock(&m->lock);
	/* The recorder's own process_* metrics, read now: the HTTP thread's /proc/self is the process's. */
	int ret = ht_metrics_render(&m->front, out);
	return ret ? ret : ht_process_metrics_render(&ht_process_paths_live, out);
}

int ht_metrics_start(struct ht_metrics **out, const struct ht_metrics_opts *o, char *err,
		     size_t errlen)
{
	struct ht_metrics *m = calloc(1, sizeof(*m));
	struct ht_metrics_http_opts ho = { .timeout_ms = o->timeout_ms, .log = o->log };
	int ret;

	if (!m) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	pthread_mutex_init(&m->lock, NULL);
	m->filters = *o->filters;
	m->aggregate = o->aggregate;
	m->grace_ns = (unsigned long long)((o->grace_s > 0 ? o->grace_s : HT_METRICS_DEFAULT_GRACE_S) * 1e9);
	if ((ret = ht_metrics_registry_init(&m->live, o->max_sets)) ||
	    (ret = ht_metrics_registry_init(&m->spare, o->max_sets)) ||
	    (ret = ht_metrics_registry_init(&m->shared, o->max_sets)) ||
	    (ret = ht_metrics_registry_init(&m->front, o->max_sets))) {
		snprintf(err, errlen, "out of memory");
		ht_metrics_stop(m);
		return ret;
	}
	if (o->exits && ((ret = ht_metrics_registry_enable_exits(&m->live, o->exits_per_vcpu)) ||
			 (ret = ht_metrics_registry_enable_exits(&m->spare, o->exits_per_vcpu)) ||
			 (ret = ht_metrics_registry_enable_exits(&m->shared, o->exits_per_vcpu)) ||
			 (ret = ht_metrics_registry_enable_exits(&m->front, o->exits_per_vcpu)))) {
		snprintf(err, errlen, "out of memory");
		ht_metrics_stop(m);
		return ret;
	}
	m->live.version = o->version ? o->version : "";
	m->live.mode = o->aggregate ? "no_file" : "file";
	m->live.exact_sums = !o->aggregate;
	m->live.log = o->log;
	/* Until the first publish, scrapes see the build info and zeros. */
	ht_metrics_registry_copy(&m->shared, &m->live);
	m->published = 1;
	ret = ht_metrics_http_start(&m->http, &o->addr, &ho, render_body, m, err, errlen);
	if (ret) {
		ht_metrics_stop(m);
		return ret;
	}
	*out = m;
	return 0;
}

void ht_metrics_observe(void *metrics, const struct ht_record *rec)
{
	struct ht_metrics *m = metrics;
	const char *label, *guest;
	uint32_t key = vm_of(m, rec->host_pid, &label, &guest);

	ht_metrics_add_record(&m->live, key, label, rec);
}

static void add_aggregate(void *ctx, __u64 key, const struct ht_agg_hist *h)
{
	struct ht_metrics *m = ctx;
	unsigned int idx = (unsigned int)(key >> HT_AGG_KEY_NR_SHIFT) & 0xff;
	uint32_t nr = idx < m->filters.nr_count ? m->filters.nr[idx] : m->filters.nr[0];
	const char *label, *guest;
	uint32_t vm = vm_of(m, (uint32_t)(key >> 32), &label, &guest);

	ht_metrics_set_aggregate(&m->live, vm, label, (uint16_t)(key & 0xffff), nr, h);
}

void ht_metrics_update(struct ht_metrics *m, const struct ht_tracer *t,
		       const struct ht_recording *rec, unsigned long long now_ns, bool force)
{
	__u64 c[HT_CNT_MAX];

	if (!m || (!force && now_ns - m->last_publish_ns < HT_METRICS_PUBLISH_NS))
		return;
	m->last_publish_ns = now_ns;
	if (ht_tracer_counters(t, c) == 0) {
		m->live.drops[HT_METRICS_DROP_RINGBUF_FULL] = c[HT_CNT_RINGBUF_DROPS];
		m->live.drops[HT_METRICS_DROP_NO_THREAD_STATE] = c[HT_CNT_STATE_ALLOC_FAIL];
		m->live.drops[HT_METRICS_DROP_SUPERSEDED] = c[HT_CNT_SUPERSEDED];
		m->live.drops[HT_METRICS_DROP_AGG_GROUPS_FULL] = c[HT_CNT_AGG_GROUPS_FULL];
		m->live.unselected_nr = c[HT_CNT_HCALL_UNSELECTED_NR];
	}
	if (rec)
		m->live.drops[HT_METRICS_DROP_MALFORMED_SAMPLE] =
			rec->drain ? ht_drain_malformed(rec->drain) : rec->malformed;
	forget_ended_vms(m, t, now_ns);
	if (m->aggregate) {
		ht_metrics_begin_aggregates(&m->live);
		ht_tracer_read_aggregates(t, add_aggregate, m);
	}
	ht_metrics_registry_copy(&m->spare, &m->live);
	pthread_mutex_lock(&m->lock);
	swap_registries(&m->spare, &m->shared);
	m->published++;
	pthread_mutex_unlock(&m->lock);
}

void ht_metrics_observe_exits(struct ht_metrics *m, const struct ht_exit_table *t)
{
	if (m)
		ht_metrics_set_exits(&m->live, t, exit_vm_name, m);
}

bool ht_metrics_shows_vm(const struct ht_metrics *m, uint32_t pid)
{
	for (size_t i = 0; i < VM_PIDS; i++)
		if (m->pids[i].key && m->pids[i].pid == pid)
			return true;
	return false;
}

uint16_t ht_metrics_port(const struct ht_metrics *m)
{
	return ht_metrics_http_port(m->http);
}

void ht_metrics_server_stats(struct ht_metrics *m, struct ht_metrics_http_stats *out)
{
	ht_metrics_http_stats(m->http, out);
}

unsigned long long ht_metrics_hypercalls(const struct ht_metrics *m)
{
	unsigned long long n;

	if (!m)
		return 0;
	n = m->live.other.hypercalls + m->live.dropped_vm_hypercalls;
	for (size_t i = 0; i < m->live.nsets; i++)
		n += m->live.sets[i].hypercalls;
	return n;
}

void ht_metrics_stop(struct ht_metrics *m)
{
	if (!m)
		return;
	ht_metrics_http_stop(m->http);
	ht_metrics_registry_free(&m->live);
	ht_metrics_registry_free(&m->spare);
	ht_metrics_registry_free(&m->shared);
	ht_metrics_registry_free(&m->front);
	pthread_mutex_destroy(&m->lock);
	free(m);
}
