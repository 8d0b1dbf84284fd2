/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One recording: the loaded tracer's ring buffer drained into a trace file.
 * The record command and the in-kernel tests both go through it, so the tests
 * exercise the same drain, write and shutdown sequence as production.
 */
#ifndef HT_RECORDING_H
#define HT_RECORDING_H

#include "record/drain.h"
#include "record/tracer.h"
#include "record/vm_identity.h"
#include "tracefile/trace_writer.h"

/* Called for every record drained, after it is written (e.g. live histograms). */
typedef void (*ht_record_observer)(void *ctx, const struct ht_record *rec);

struct ht_recording {
	struct ht_tracer *tracer;  /* not owned */
	struct ht_writer *writer;  /* owned until ht_recording_finish */
	struct ht_drain *drain;
	ht_record_observer observer;
	void *observer_ctx;
	/*
	 * If set, the threads whose identity is in the file: the first record of
	 * a new thread is preceded by its IDENTITY block (names from /proc).
	 * Owned; freed by finish/abandon.
	 */
	struct ht_thread_set *identities;
	/*
	 * If set, called by finish after the last drain and before the trailer,
	 * with the programs detached: the last blocks of other kinds go in here.
	 */
	void (*before_close)(void *ctx, struct ht_writer *writer);
	void *before_close_ctx;
	int write_error;           /* set by finish: -errno of the first failed write, or 0 */
	unsigned long long vcpu_switches; /* switch records of vCPU threads drained (record --vcpu-sched) */
	unsigned long long vcpu_wakeups;  /* wake-up records of halted vCPU threads drained (record --wakeups) */
	unsigned long long vcpu_irqs;     /* interrupt delivery records drained (record --wakeups) */
	unsigned long long boot_exits;    /* exits of booting VMs written (record --boot) */
	/*
	 * record --boot with -p or --vm: BPF follows every VM that starts (a VM
	 * --vm finds is in the process filter only after its first exits);
	 * the boot exits of the VMs this says no to are left out here, counted
	 * in boot_unselected. NULL: every VM's.
	 */
	bool (*boot_selects)(void *ctx, __u32 pid);
	void *boot_select_ctx;
	unsigned long long boot_unselected;
	unsigned long long malformed; /* ring samples that were not a whole record (set by finish) */
};

/* Takes ownership of writer. 0 or -errno. */
int ht_recording_init(struct ht_recording *r, struct ht_tracer *tracer, struct ht_writer *writer);
/*
 * Waits up to timeout_ms for the producers' wake-up (none if the last batch
 * was full), then drains a bounded batch (HT_DRAIN_BATCH), so the caller's
 * loop runs often even under full load (see ht_drain_poll). Records
 * drained, or -errno.
 */
int ht_recording_pump(struct ht_recording *r, int timeout_ms);
/*
 * Every few seconds: the threads that ended (seen gone twice) leave
 * identities, so the set follows the threads alive and a thread id that
 * comes back as a new thread has its IDENTITY written again. How many went.
 */
size_t ht_recording_forget_ended_threads(struct ht_recording *r);
/*
 * Ends the recording: detaches the programs, drains everything left, reads
 * the drop counters into the trailer, writes it, fsyncs and closes the file.
 * 0 once everything is drained and counted, or -errno (the drain failed: no
 * trailer). A failed write does not fail the recording: trailer->not_written
 * counts the records it cost and write_error says why (the file still ends
 * at a whole block, with the trailer if there was room for it).
 */
int ht_recording_finish(struct ht_recording *r, struct ht_trailer *trailer);
/* Frees what is left after a failure, without a trailer. */
void ht_recording_abandon(struct ht_recording *r);

#endif
