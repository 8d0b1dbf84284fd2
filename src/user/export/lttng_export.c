// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert --lttng (lttng_private.h): the export opened with its host trace,
 * each record's host events (and its guest's) queued, the export abandoned.
 */
#include "export/lttng_export.h"
#include "export/lttng_private.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "common/errf.h"
#include "common/util.h"
#include "export/guest_state.h"
#include "export/lttng_trace.h"
#include "export/id_pair_table.h"
#include "export/switch_chain.h"
#include "hypertrace/guest.h"
#include "hypertrace/limits.h"
#include "tracefile/output_file.h"

/* ---- the host trace ---- */

/*
 * Whether RELEASE ("6.1.0-...") is MAJOR.MINOR or later; an unreadable one
 * counts as current. lttng-modules picks kvm_x86_exit's fields by the
 * kernel's version (vcpu_id and two more since 5.10): so does the host trace.
 */
static bool kernel_at_least(const char *release, unsigned int major, unsigned int minor)
{
	unsigned int a = 0, b = 0;

	if (sscanf(release, "%u.%u", &a, &b) != 2)
		return true; /* unknown: the current layout */
	return a > major || (a == major && b >= minor);
}

static int host_classes(struct ht_lttng_export *x)
{
	struct host_classes *c = &x->hcls;
	static const char sync_fields[] = "\t\t" HT_TSDL_U32 " _cnt;\n\t\t" HT_TSDL_U64 " _vm_uid;\n";
	const char *exit_fields =
		x->exit_has_vcpu ?
			"\t\t" HT_TSDL_U32 " _exit_reason;\n\t\t" HT_TSDL_U64 " _guest_rip;\n\t\t" HT_TSDL_U32 " _isa;\n"
			"\t\t" HT_TSDL_U64 " _info1;\n\t\t" HT_TSDL_U64 " _info2;\n\t\t" HT_TSDL_U32 " _intr_info;\n"
			"\t\t" HT_TSDL_U32 " _error_code;\n\t\t" HT_TSDL_U32 " _vcpu_id;\n" :
			"\t\t" HT_TSDL_U32 " _exit_reason;\n\t\t" HT_TSDL_U64 " _guest_rip;\n\t\t" HT_TSDL_U32 " _isa;\n"
			"\t\t" HT_TSDL_U64 " _info1;\n\t\t" HT_TSDL_U64 " _info2;\n";

	c->exit = ht_lttng_trace_add_class(x->host, "kvm_x86_exit", exit_fields);
	c->hypercall = ht_lttng_trace_add_class(x->host, "kvm_x86_hypercall",
						"\t\t" HT_TSDL_U64 " _nr;\n\t\t" HT_TSDL_U64 " _a0;\n\t\t" HT_TSDL_U64
						" _a1;\n\t\t" HT_TSDL_U64 " _a2;\n\t\t" HT_TSDL_U64 " _a3;\n");
	c->entry = ht_lttng_trace_add_class(x->host, "kvm_x86_entry", "\t\t" HT_TSDL_U32 " _vcpu_id;\n");
	c->gh_host = ht_lttng_trace_add_class(x->host, "vmsync_gh_host", sync_fields);
	c->hg_host = ht_lttng_trace_add_class(x->host, "vmsync_hg_host", sync_fields);
	c->sched_switch = -1; /* declared at the first switch */
	c->statedump = -1;
	c->wakeup = -1; /* declared at the first wake-up (lttng_wakeup.c) */
	c->irq = -1;    /* declared at the first interrupt delivery (lttng_wakeup.c) */
	return c->exit < 0 || c->hypercall < 0 || c->entry < 0 || c->gh_host < 0 || c->hg_host < 0 ? -ENOMEM : 0;
}

int lt_common_env(struct ht_lttng_trace *t, const char *hostname)
{
	int ret = ht_lttng_trace_env_str(t, "hostname", hostname);

	ret = ret ? ret : ht_lttng_trace_env_str(t, "domain", "kernel");
	ret = ret ? ret : ht_lttng_trace_env_str(t, "sysname", "Linux");
	ret = ret ? ret : ht_lttng_trace_env_str(t, "tracer_name", "lttng-modules");
	ret = ret ? ret : ht_lttng_trace_env_int(t, "tracer_major", 2);
	ret = ret ? ret : ht_lttng_trace_env_int(t, "tracer_minor", 13);
	ret = ret ? ret : ht_lttng_trace_env_int(t, "tracer_patchlevel", 0);
	ret = ret ? ret : ht_lttng_trace_env_str(t, "trace_buffering_scheme", "global");
	ret = ret ? ret : ht_lttng_trace_env_str(t, "trace_name", hostname);
	ret = ret ? ret : ht_lttng_trace_env_str(t, "hypertrace_tracer", "hypertrace-bpf " HT_VERSION);
	return ret;
}

int ht_lttng_open(const char *dir, mode_t mode, const struct ht_file_header *h, const struct ht_decoder *dec,
		  struct ht_lttng_export **out, char *err, size_t errlen)
{
	const struct ht_output_spec spec = { .cmd = "convert", .opt = "--lttng", .what = "an LTTng experiment" };
	struct ht_lttng_export *x = calloc(1, sizeof(*x));
	char path[4200];
	int ret;

	if (!x)
		return ht_errf(err, errlen, "out of memory");
	/* ht_lttng_abandon frees what is made of x so far, and removes what was written. */
	x->out.fd = x->out.dirfd = -1;
	if (!(x->guests = ht_id_pair_table_new()) || !(x->threads = ht_id_pair_table_new()) ||
	    !(x->cpus = ht_id_pair_table_new()) || !(x->running = ht_id_pair_table_new()) ||
	    !(x->gstate = ht_guest_state_new(dec)) || !(x->chain = ht_switch_chain_new())) {
		ret = ht_errf(err, errlen, "out of memory");
		goto fail;
	}
	ret = ht_output_create_dir(&x->out, dir, &spec, err, errlen);
	if (!ret)
		ret = ht_output_set_access(&x->out, mode, (uid_t)-1, (gid_t)-1, err, errlen);
	if (ret)
		goto fail;
	snprintf(x->dir, sizeof(x->dir), "%s", dir);
	x->hdr = *h;
	x->dec = dec;
	x->first_ns = UINT64_MAX;
	x->exit_has_vcpu = kernel_at_least(h->kernel_release, 5, 10);
	snprintf(path, sizeof(path), "%s/host", dir);
	ret = ht_lttng_trace_open(x->out.fd, "host", path, true, HT_MAX_CPUS, h->start_realtime_ns, &x->host, err,
				  errlen);
	if (!ret && (host_classes(x) || lt_common_env(x->host, "host") ||
		     ht_lttng_trace_env_str(x->host, "kernel_release", h->kernel_release) ||
		     ht_lttng_trace_env_str(x->host, "cpu_vendor", h->cpu_vendor)))
		ret = ht_errf(err, errlen, "out of memory");
	if (ret)
		goto fail;
	*out = x;
	return 0;
fail:
	ht_lttng_abandon(x);
	return ret;
}

/* ---- each record ---- */

int ht_lttng_add(struct ht_lttng_export *x, const struct ht_record *r, struct ht_reader *reader, char *err,
		 size_t errlen)
{
	uint64_t hcall_ns = r->exit_ns + r->exit_to_hcall_ns, entry_ns = hcall_ns + r->hcall_to_entry_ns;
	struct ht_lttng_ctx hctx = { .pid = (int32_t)r->host_pid, .tid = (int32_t)r->host_tid };
	struct guest *g = NULL;
	struct payload p = { .len = 0 };
	struct ht_gev ev;
	const char *procname = lt_host_procname(x, r->host_pid, r->host_tid, reader);
	int ret = 0;

	if (!procname)
		return ht_errf(err, errlen, "out of memory");
	snprintf(hctx.procname, sizeof(hctx.procname), "%s", procname);
	/* A forged one decodes to nothing (ht_decoder_event): no guest trace, no vmsync, only the host's events. */
	x->forged += ht_decoder_forged(x->dec, r);
	/* The task on the event's guest CPU before it: a sched_switch changes it. */
	int64_t task_before = -1;
	if (ht_guest_state_feed(x->gstate, r, &ev))
		return ht_errf(err, errlen, "out of memory");
	if (ev.kind != HT_GEV_NONE) {
		task_before = ev.kind == HT_GEV_SCHED_SWITCH ? (int64_t)ev.u.sw.prev_tid :
							      ht_guest_cpu_task(x->gstate, r->host_pid, ev.cpu);
		g = lt_guest_of(x, r, reader, err, errlen, &ret);
		if (!g)
			return ret;
	}

	lt_put_u32(&p, r->exit_reason);
	lt_put_u64(&p, r->guest_rip);
	lt_put_u32(&p, r->isa);
	lt_put_u64(&p, 0); /* info1, info2: a hypercall exit has none (VMCALL and VMMCALL exits qualify nothing) */
	lt_put_u64(&p, 0);
	if (x->exit_has_vcpu) {
		lt_put_u32(&p, 0); /* intr_info, error_code: no event was being delivered */
		lt_put_u32(&p, 0);
		lt_put_u32(&p, r->vcpu_id);
	}
	ret = lt_push(x, x->host, r->exit_cpu, r->exit_ns, x->hcls.exit, &hctx, &p);
	p.len = 0;
	lt_put_u64(&p, r->nr);
	lt_put_u64(&p, r->a0);
	lt_put_u64(&p, r->a1);
	lt_put_u64(&p, r->a2);
	lt_put_u64(&p, r->a3);
	/* The record knows the CPUs at exit and entry; the hypercall event is put on the exit's. */
	ret = ret ? ret : lt_push(x, x->host, r->exit_cpu, hcall_ns, x->hcls.hypercall, &hctx, &p);
	if (!ret && g) {
		p.len = 0;
		lt_put_u32(&p, g->cnt);
		lt_put_u64(&p, g->pid);
		ret = lt_push(x, x->host, r->exit_cpu, hcall_ns, x->hcls.gh_host, &hctx, &p);
		if (!ret && g->cnt == 0)
			lt_mark_last_pushed(x, MARK_FIRST_LINK);
		p.len = 0;
		lt_put_u32(&p, g->cnt + 1);
		lt_put_u64(&p, g->pid);
		ret = ret ? ret : lt_push(x, x->host, r->entry_cpu, entry_ns, x->hcls.hg_host, &hctx, &p);
		ret = ret ? ret : lt_guest_events(x, g, r, &ev, task_before, entry_ns);
		g->cnt += 2;
	}
	p.len = 0;
	lt_put_u32(&p, r->vcpu_id);
	ret = ret ? ret : lt_push(x, x->host, r->entry_cpu, entry_ns, x->hcls.entry, &hctx, &p);
	if (ret)
		return ht_errf(err, errlen, "out of memory");
	if (r->exit_ns < x->first_ns)
		x->first_ns = r->exit_ns;
	if (entry_ns > x->last_ns)
		x->last_ns = entry_ns;
	if (entry_ns > x->last_entry_ns)
		x->last_entry_ns = entry_ns;
	x->records++;
	return lt_release(x, false, err, errlen);
}

void ht_lttng_abandon(struct ht_lttng_export *x)
{
	if (!x)
		return;
	for (size_t i = 0; x->guests && i < ht_id_pair_table_len(x->guests); i++) {
		struct guest *g = ht_id_pair_table_at(x->guests, i);
		ht_lttng_trace_free(g->trace);
		for (size_t j = 0; j < ht_id_pair_table_len(g->functions); j++)
			free(ht_id_pair_table_at(g->functions, j));
		ht_id_pair_table_free(g->functions);
		for (size_t j = 0; g->vcpus && j < ht_id_pair_table_len(g->vcpus); j++)
			free(ht_id_pair_table_at(g->vcpus, j));
		ht_id_pair_table_free(g->vcpus);
		free(g);
	}
	ht_id_pair_table_free(x->guests);
	for (size_t i = 0; x->threads && i < ht_id_pair_table_len(x->threads); i++)
		free(ht_id_pair_table_at(x->threads, i));
	ht_id_pair_table_free(x->threads);
	for (size_t i = 0; x->cpus && i < ht_id_pair_table_len(x->cpus); i++)
		free(ht_id_pair_table_at(x->cpus, i));
	ht_id_pair_table_free(x->cpus);
	for (size_t i = 0; x->running && i < ht_id_pair_table_len(x->running); i++)
		free(ht_id_pair_table_at(x->running, i));
	ht_id_pair_table_free(x->running);
	ht_lttng_trace_free(x->host);
	lt_free_boots(x);
	ht_guest_state_free(x->gstate);
	ht_switch_chain_free(x->chain);
	free(x->heap);
	/* Unpublished: the temporary directory and everything in it go. */
	ht_output_release(&x->out);
	free(x);
}
