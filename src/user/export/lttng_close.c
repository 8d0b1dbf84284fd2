// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert --lttng, the end (lttng_private.h): each trace's env of the
 * recording's identity, the host trace's statedump and boot stream, the
 * traces closed and the experiment published.
 */
#include "export/lttng_private.h"

#include <stdint.h>
#include "common/errf.h"
#include "tracefile/wallclock.h"

static int identity_env(struct ht_lttng_export *x, struct ht_lttng_trace *t, const struct ht_read_status *st,
			const char *source, const char *selection)
{
	const struct ht_file_header *h = &x->hdr;
	char when[64];
	int ret = ht_lttng_trace_env_str(t, "trace_file", source);

	ret = ret ? ret : ht_lttng_trace_env_int(t, "trace_file_format", h->version);
	ht_format_wallclock(when, sizeof(when), h, h->start_monotonic_ns, HT_TIME_ISO);
	ret = ret ? ret : ht_lttng_trace_env_str(t, "recording_start", when);
	ret = ret ? ret : ht_lttng_trace_env_str(t, "trace_creation_datetime", when);
	if (st->has_trailer) {
		ht_format_wallclock(when, sizeof(when), h, st->trailer.end_monotonic_ns, HT_TIME_ISO);
		ret = ret ? ret : ht_lttng_trace_env_str(t, "recording_end", when);
		ret = ret ? ret : ht_lttng_trace_env_int(t, "recording_end_monotonic_ns",
							 (long long)st->trailer.end_monotonic_ns);
		ret = ret ? ret : ht_lttng_trace_env_int(t, "dropped", (long long)ht_trailer_lost(&st->trailer));
	} else {
		ret = ret ? ret : ht_lttng_trace_env_str(t, "recording_end", "unknown: the trace file has no trailer");
	}
	ret = ret ? ret : ht_lttng_trace_env_str(t, "selection", selection);
	ret = ret ? ret : ht_lttng_trace_env_str(t, "read_status",
						 st->damaged ? st->reason : st->has_trailer ? "complete" : st->reason);
	return ret;
}

/*
 * lttng-modules' statedump at the start of the host trace: a
 * lttng_statedump_process_state for each thread the host trace shows, so
 * that Trace Compass's kernel analysis knows each thread's process
 * (KernelPidAspect answers with it, before the pid context). The trace file
 * keeps neither a thread's parent nor its state at the start: a VM's
 * threads are written as children of its process (the VM model maps a
 * thread's ppid to its VM), a process as a child of 0, every status as
 * LTTNG_UNNAMED (unknown), the mode unknown. Written on the lowest CPU the
 * trace shows, at the recording's start.
 */
static int write_statedump(struct ht_lttng_export *x, uint64_t ts, char *err, size_t errlen)
{
	uint32_t cpu = UINT32_MAX;
	struct ht_lttng_ctx ctx;

	for (size_t i = 0; i < ht_id_pair_table_len(x->running); i++) {
		const struct cpu_thread *c = ht_id_pair_table_at(x->running, i);
		if (c->cpu < cpu)
			cpu = c->cpu;
	}
	if (cpu == UINT32_MAX)
		return 0;
	if (x->hcls.statedump < 0 &&
	    (x->hcls.statedump = ht_lttng_trace_add_class(x->host, "lttng_statedump_process_state", statedump_fields)) < 0)
		return ht_errf(err, errlen, "out of memory");
	lt_idle_ctx(cpu, &ctx);
	for (size_t i = 0; i < ht_id_pair_table_len(x->threads); i++) {
		const struct host_thread *t = ht_id_pair_table_at(x->threads, i);
		struct payload p = { .len = 0 };
		int ret;

		if (!t->written)
			continue;
		lt_put_u32(&p, t->tid);
		lt_put_u32(&p, t->pid);
		lt_put_u32(&p, t->tid == t->pid ? 0 : t->pid);
		lt_put_comm(&p, t->procname);
		lt_put_u32(&p, LTTNG_USER_THREAD);
		lt_put_u32(&p, LTTNG_MODE_UNKNOWN);
		lt_put_u32(&p, LTTNG_NONE);
		lt_put_u32(&p, LTTNG_UNNAMED);
		lt_put_u32(&p, t->first_cpu);
		lt_put_u64(&p, 0); /* file_table_address: not known */
		ret = ht_lttng_trace_statedump_event(x->host, cpu, ts, x->hcls.statedump, &ctx, p.buf, p.len, err, errlen);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* Realtime minus monotonic, modulo 2^64: a crafted header's anchors must not overflow it. */
static int64_t clock_offset(const struct ht_file_header *h)
{
	return (int64_t)(h->start_realtime_ns - h->start_monotonic_ns);
}

int ht_lttng_close(struct ht_lttng_export *x, const struct ht_read_status *st, const char *source,
		   const char *selection, struct ht_lttng_counts *counts, char *err, size_t errlen)
{
	uint64_t start = x->hdr.start_monotonic_ns;
	uint64_t end = st->has_trailer ? st->trailer.end_monotonic_ns : x->last_ns;
	uint64_t lost = st->has_trailer ? ht_trailer_lost(&st->trailer) : 0;
	int ret = lt_release(x, true, err, errlen);

	if (end < start)
		end = start;
	for (size_t i = 0; !ret && i < ht_id_pair_table_len(x->guests); i++) {
		struct guest *g = ht_id_pair_table_at(x->guests, i);
		if (identity_env(x, g->trace, st, source, selection)) {
			ret = ht_errf(err, errlen, "out of memory");
			break;
		}
		x->counts.reordered += ht_lttng_trace_reordered(g->trace);
		x->counts.not_written += ht_lttng_trace_dropped(g->trace);
		/*
		 * The recording's drops are the host's to report. A guest trace's
		 * own are the sched_switch events its chains prove lost: its env
		 * says how many, and so does events_discarded, which babeltrace2
		 * warns of and Trace Compass shows as lost events.
		 */
		unsigned long long lost_switches = ht_switch_chain_breaks(x->chain, g->pid);
		if (lost_switches &&
		    ht_lttng_trace_env_int(g->trace, "lost_sched_switches", (long long)lost_switches)) {
			ret = ht_errf(err, errlen, "out of memory");
			break;
		}
		ret = ht_lttng_trace_close(g->trace, clock_offset(&x->hdr), start, end, lost_switches, err, errlen);
		g->trace = NULL;
	}
	if (!ret && (identity_env(x, x->host, st, source, selection) ||
		     ht_lttng_trace_env_int(x->host, "inferred_sched_switches", (long long)x->inferred) ||
		     ht_lttng_trace_env_int(x->host, "restated_sched_switches", (long long)x->restated) ||
		     (x->forged && ht_lttng_trace_env_int(x->host, "forged_guest_events", (long long)x->forged))))
		ret = ht_errf(err, errlen, "out of memory");
	if (!ret)
		ret = write_statedump(x, start, err, errlen);
	if (!ret)
		ret = lt_write_boots(x, err, errlen);
	/* Counted only where some were not written: a trace without them keeps the env it had. */
	if (!ret && ((x->counts.initcalls.vms_without_clock &&
		      ht_lttng_trace_env_int(x->host, "initcall_vms_without_clock",
					     (long long)x->counts.initcalls.vms_without_clock)) ||
		     (x->counts.initcalls.not_drawn &&
		      ht_lttng_trace_env_int(x->host, "initcalls_not_drawn", (long long)x->counts.initcalls.not_drawn))))
		ret = ht_errf(err, errlen, "out of memory");
	if (!ret) {
		x->counts.reordered += ht_lttng_trace_reordered(x->host);
		x->counts.not_written += ht_lttng_trace_dropped(x->host);
		ret = ht_lttng_trace_close(x->host, clock_offset(&x->hdr), start, end, lost, err, errlen);
		x->host = NULL;
	}
	if (!ret)
		ret = ht_output_publish(&x->out, err, errlen);
	x->counts.lost_switches = ht_switch_chain_total(x->chain);
	if (counts)
		*counts = x->counts;
	ht_lttng_abandon(x);
	return ret;
}
