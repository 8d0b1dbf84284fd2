// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "record/recording.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include "common/util.h"

static struct ht_record *recording_slots(void *ctx, unsigned int *room)
{
	struct ht_recording *r = ctx;

	return ht_writer_slots(r->writer, room);
}

static int recording_commit(void *ctx, unsigned int n)
{
	struct ht_recording *r = ctx;
	unsigned int room, kept = 0;
	struct ht_record *rec = ht_writer_slots(r->writer, &room);

	for (unsigned int i = 0; i < n; i++) {
		const struct ht_record *in = &rec[i];

		if ((in->flags & HT_REC_F_BOOT_EXIT) && r->boot_selects && !r->boot_selects(r->boot_select_ctx, in->host_pid)) {
			r->boot_unselected++;
			continue;
		}
		/*
		 * Off the hot path: once per thread, in the drain. Out of memory, a
		 * thread stays unnamed; its records are written all the same.
		 */
		if (r->identities && ht_thread_set_add(r->identities, in->host_pid, in->host_tid) > 0) {
			struct ht_identity id;

			ht_identity_read("/proc", in->host_pid, in->host_tid, in->exit_ns, &id);
			(void)ht_writer_add_identity(r->writer, &id);
		}
		/* The live view and metrics count hypercalls: a switch, a wake-up, an interrupt delivery or a boot exit is none. */
		if (in->flags & HT_REC_F_VCPU_SWITCH)
			r->vcpu_switches++;
		else if (in->flags & HT_REC_F_VCPU_WAKEUP)
			r->vcpu_wakeups++;
		else if (in->flags & HT_REC_F_VCPU_IRQ)
			r->vcpu_irqs++;
		else if (in->flags & HT_REC_F_BOOT_EXIT)
			r->boot_exits++;
		else if (r->observer)
			r->observer(r->observer_ctx, in);
		if (kept != i)
			rec[kept] = *in;
		kept++;
	}
	/* A block the file system refuses is counted by the writer; draining goes on. */
	ht_writer_commit(r->writer, kept);
	return 0;
}

int ht_recording_init(struct ht_recording *r, struct ht_tracer *tracer, struct ht_writer *writer)
{
	struct ht_record_sink sink = { .slots = recording_slots, .commit = recording_commit, .ctx = r };
	unsigned int nrings;
	const int *fds = ht_tracer_ring_fds(tracer, &nrings);

	memset(r, 0, sizeof(*r));
	r->tracer = tracer;
	r->writer = writer;
	return ht_drain_new(fds, nrings, &sink, &r->drain);
}

int ht_recording_pump(struct ht_recording *r, int timeout_ms)
{
	return ht_drain_poll(r->drain, timeout_ms);
}

/* EPERM: it exists, it is only another user's. */
static bool thread_alive(__u32 tid)
{
	return !kill((pid_t)tid, 0) || errno == EPERM;
}

size_t ht_recording_forget_ended_threads(struct ht_recording *r)
{
	return r->identities ? ht_thread_set_prune(r->identities, thread_alive) : 0;
}

int ht_recording_finish(struct ht_recording *r, struct ht_trailer *trailer)
{
	__u64 counters[HT_CNT_MAX] = { 0 };
	int ret;

	/* Stop the producers first, then take everything they left in the ring buffer. */
	ht_tracer_detach(r->tracer);
	ret = ht_drain_all(r->drain);
	if (ret < 0) {
		ht_recording_abandon(r);
		return ret;
	}
	memset(trailer, 0, sizeof(*trailer));
	ret = ht_tracer_counters(r->tracer, counters);
	if (ret) {
		ht_recording_abandon(r);
		return ret;
	}
	if (r->before_close)
		r->before_close(r->before_close_ctx, r->writer);
	trailer->ringbuf_drops = counters[HT_CNT_RINGBUF_DROPS];
	trailer->state_alloc_fail = counters[HT_CNT_STATE_ALLOC_FAIL];
	trailer->superseded = counters[HT_CNT_SUPERSEDED];
	trailer->unselected_nr = counters[HT_CNT_HCALL_UNSELECTED_NR];
	trailer->end_monotonic_ns = ht_clock_ns(CLOCK_MONOTONIC);
	trailer->end_realtime_ns = ht_clock_ns(CLOCK_REALTIME);
	/* Fills in records and not_written: what is in the file, and what the file system refused. */
	r->write_error = ht_writer_close(r->writer, trailer);
	r->writer = NULL;
	r->malformed = ht_drain_malformed(r->drain);
	ht_drain_free(r->drain);
	r->drain = NULL;
	ht_thread_set_free(r->identities);
	r->identities = NULL;
	return 0;
}

void ht_recording_abandon(struct ht_recording *r)
{
	ht_writer_abandon(r->writer);
	r->writer = NULL;
	ht_drain_free(r->drain);
	r->drain = NULL;
	ht_thread_set_free(r->identities);
	r->identities = NULL;
}
