/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * convert --perfetto FILE: Perfetto's native protobuf trace, written without
 * Perfetto's SDK (export/protobuf.c; the messages are Perfetto's own, a
 * subset vendored in third_party/perfetto/): a process track per VM, a
 * thread track per vCPU thread, each hypercall a slice with its two phases
 * nested; the guests' scheduling and IRQs as ftrace events on CPU tracks,
 * their function calls as slices on a thread track per guest task, their
 * other events as instants on a track per guest CPU, each with a flow to the
 * host slice of the hypercall that carried it; with record --vcpu-sched, each
 * vCPU thread's time off its host CPU as slices on a track of its own; with
 * record --exits, each vCPU thread's account (guest, kvm, vmm, wait, halted,
 * blocked) as counter tracks of the thread; with record --boot, each VM's
 * boot phases as slices on a track of its own; where a guest replayed its
 * boot-time trace (guest/boottrace), its initcall levels and initcalls as
 * slices on tracks of their own. Names are interned; packets
 * are deflated in bundles, as Perfetto's tracing service writes them.
 * docs/exports.md describes it.
 *
 * Streaming: memory grows with the threads, guest tasks and CPUs of the
 * trace (and the names it interns, capped), never with its records but
 * those of the guests' own traces (nr 1150..1152).
 */
#ifndef HT_EXPORT_PERFETTO_EXPORT_H
#define HT_EXPORT_PERFETTO_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "decode/decoder.h"
#include "export/initcall_spans.h"
#include "tracefile/trace_reader.h"

struct ht_perfetto_export;

/*
 * What one trace holds of the guests' scheduling: a guest CPU is an ftrace
 * CPU of its VM's block of HT_PERFETTO_GUEST_CPUS (Perfetto takes CPUs below
 * 1024, so HT_PERFETTO_CPU_VMS VMs have CPU tracks), a guest task a thread
 * of its VM's block of 2^HT_PERFETTO_GUEST_TID_BITS tids (Linux's
 * PID_MAX_LIMIT on x86-64), for HT_PERFETTO_TASK_VMS VMs; events beyond
 * stay on their vCPU's track (counted: not_scheduled).
 */
#define HT_PERFETTO_GUEST_CPUS 128u
#define HT_PERFETTO_CPU_VMS 8u
#define HT_PERFETTO_GUEST_TID_BITS 22
#define HT_PERFETTO_TASK_VMS 511u
/*
 * The interrupt tracks of a vCPU thread: twice the deliveries a recording
 * times at once per thread (four), as the lanes are taken first-fit in
 * the order of the entries; a delivery that overlaps one in each is left
 * out (counted: irqs_not_shown).
 */
#define HT_PERFETTO_IRQ_LANES 8u

struct ht_perfetto_counts {
	unsigned long long reordered;     /* events raised to keep their track in time order */
	unsigned long long not_scheduled; /* guest CPU events beyond the CPU tracks one trace holds */
	unsigned long long lost_switches; /* guest sched_switch chains broken: each gap shown as unknown */
	unsigned long long irqs_not_shown; /* interrupt deliveries overlapping HT_PERFETTO_IRQ_LANES others of their thread */
	struct ht_initcall_counts initcalls; /* the guests' initcalls not drawn */
};

/* Creates FILE unnamed (an existing one only with force). 0, or < 0 with a one-line err. */
int ht_perfetto_open(const char *path, bool force, mode_t mode, const struct ht_file_header *h,
		     const struct ht_decoder *dec, struct ht_perfetto_export **out, char *err, size_t errlen);
/* Adds one record; reader names VMs and threads. 0, or < 0 with err. */
int ht_perfetto_add(struct ht_perfetto_export *x, const struct ht_record *r, struct ht_reader *reader, char *err,
		    size_t errlen);
/*
 * Adds one switch of a vCPU thread (record --vcpu-sched): a switch-out opens
 * a "preempted" or "blocked" slice on the thread's off-CPU track, its
 * switch-in ends it. 0, 1 (a kind of switch this version does not show), or
 * < 0 with err.
 */
int ht_perfetto_add_switch(struct ht_perfetto_export *x, const struct ht_vcpu_switch *sw, struct ht_reader *reader,
			   char *err, size_t errlen);
/*
 * Adds one wake-up of a halted vCPU thread (record --wakeups): a slice named
 * by its class ("timer", "vector", "none") from the wake-up to the guest
 * running, on the thread's track "vCPU N wake-ups from halts", with its
 * wait, the rest and its vectors in the arguments. 0, or < 0 with err.
 */
int ht_perfetto_add_wakeup(struct ht_perfetto_export *x, const struct ht_vcpu_wakeup *w, struct ht_reader *reader,
			   char *err, size_t errlen);
/*
 * Adds one interrupt delivery to a vCPU thread (record --wakeups, format
 * 14): a slice named by its class ("timer", "ipi", "device") from its
 * acceptance to the guest running with it, on the thread's track "vCPU N
 * interrupts" (deliveries overlap: one accepted while another waited goes
 * to "interrupts 2" and on, HT_PERFETTO_IRQ_LANES of them), with its parts
 * (woken_ns, wait_ns, rest_ns), vector, vCPU and CPU in the arguments. 0, 1
 * (overlapping all the lanes: counted), or < 0 with err.
 */
int ht_perfetto_add_irq(struct ht_perfetto_export *x, const struct ht_vcpu_irq *d, struct ht_reader *reader,
			char *err, size_t errlen);
/*
 * Adds one vCPU thread's account as an EXITS block holds it (record
 * --exits, file version 5 on): a sample of each state's seconds since the
 * thread started on its counter track (and 0 at its start, the first time).
 * 0, 1 (no account in this row), or < 0 with err.
 */
int ht_perfetto_add_account(struct ht_perfetto_export *x, const struct ht_vcpu_wait_rec *row,
			    struct ht_reader *reader, char *err, size_t errlen);
/*
 * Adds one exit of a booting VM (record --boot); its VM's track is described
 * at the first. At close, each VM's boot phases are slices on a track "boot
 * phases" under its process track. 0, or < 0 with err.
 */
int ht_perfetto_add_boot_exit(struct ht_perfetto_export *x, const struct ht_boot_exit *be, struct ht_reader *reader,
			      char *err, size_t errlen);
/*
 * Adds one record of a guest's own trace (nr 1150..1152) of a selected VM;
 * its VM's track is described at the first. At close, each VM's initcall
 * levels and initcalls are slices on tracks "initcall levels" and
 * "initcalls" under its process track. 0, or < 0 with err.
 */
int ht_perfetto_add_guest_trace(struct ht_perfetto_export *x, const struct ht_record *r, struct ht_reader *reader,
				char *err, size_t errlen);
/* Writes the rest and the trace's identity, then names FILE. Frees x. 0, or < 0 with err. */
int ht_perfetto_close(struct ht_perfetto_export *x, const struct ht_read_status *st, const char *source,
		      const char *selection, struct ht_perfetto_counts *counts, char *err, size_t errlen);
/* Frees x and the unnamed file. NULL is fine. */
void ht_perfetto_abandon(struct ht_perfetto_export *x);

#endif
