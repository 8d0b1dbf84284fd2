/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * convert --lttng DIR: the trace file as an experiment of LTTng-kernel-shaped
 * CTF traces that Trace Compass's virtual machine analysis opens
 * (docs/exports.md): DIR/host/, the host's view of each hypercall
 * (kvm_x86_exit, kvm_x86_hypercall, kvm_x86_entry), the sched_switch
 * events that say which thread runs on each host CPU (record --vcpu-sched's,
 * and those the records prove), the wake-ups of halted vCPU threads
 * (record --wakeups), and lttng-modules' statedump of the threads
 * it shows; and one DIR/guest-<vm>/
 * per VM that sent the project's guest events, holding them under LTTng's
 * names (sched_switch, sched_wakeup, irq_handler_entry/exit, function
 * entry/exit as LTTng's kretprobes name them). Each hypertraced hypercall
 * also gives the vmsync_gh_* and vmsync_hg_* pairs the VM analysis matches
 * host and guest with: both sides are on the host's clock, so they match
 * exactly. A guest trace's CPUs are KVM's vcpu_ids, as the VM analysis keys
 * them on the host's side. The VMs' boot phases (record --boot) and their
 * guests' initcalls (guest/boottrace) are begin and end events of the host
 * trace's boot stream, written at close (docs/exports.md; the Trace Compass
 * analysis that draws them: docs/tracecompass/).
 *
 * Records come in kvm_entry order, switches by their own time among them; a
 * hypercall's events span exit to entry, so events wait in a bounded
 * time-ordered queue before they reach their per-CPU streams. Memory grows with the CPUs, VMs and guest tasks of the
 * trace, not with its records.
 */
#ifndef HT_EXPORT_LTTNG_EXPORT_H
#define HT_EXPORT_LTTNG_EXPORT_H

#include <stddef.h>
#include <sys/types.h>
#include "decode/decoder.h"
#include "export/initcall_spans.h"
#include "tracefile/trace_reader.h"

/* The CPUs of one guest trace: a hostile guest names any 16-bit CPU. */
#define HT_LTTNG_MAX_GUEST_CPUS 256u

struct ht_lttng_export;

struct ht_lttng_counts {
	unsigned long long reordered;   /* events whose time was raised to keep a stream in order */
	unsigned long long not_written; /* events of CPUs beyond what one trace holds */
	unsigned long long lost_switches; /* guest sched_switch chains broken: each gap shown as unknown */
	struct ht_initcall_counts initcalls; /* guests' initcalls not written: no clock pair, or no lane */
};

/*
 * Prepares DIR (new, or an existing empty directory): built in a private
 * directory next to it, named when complete. dec decodes the guest events
 * and outlives x. 0, or a negative value with a one-line err.
 */
int ht_lttng_open(const char *dir, mode_t mode, const struct ht_file_header *h, const struct ht_decoder *dec,
		  struct ht_lttng_export **out, char *err, size_t errlen);
/* Adds one record; reader gives the names of VMs and threads. 0, or a negative value with err. */
int ht_lttng_add(struct ht_lttng_export *x, const struct ht_record *r, struct ht_reader *reader, char *err,
		 size_t errlen);
/*
 * Adds one exit of a booting VM (record --boot): its phases go into the host
 * trace's boot stream at close. 0, or a negative value with err.
 */
int ht_lttng_add_boot_exit(struct ht_lttng_export *x, const struct ht_boot_exit *be, struct ht_reader *reader,
			   char *err, size_t errlen);
/*
 * Adds one record of a guest's boot-time trace (nr 1150..1152, whatever the
 * selection cuts of its VM's records): its initcall levels and initcalls go
 * into the host trace's boot stream at close. 0, or a negative value with err.
 */
int ht_lttng_add_guest_trace(struct ht_lttng_export *x, const struct ht_record *r, struct ht_reader *reader,
			     char *err, size_t errlen);
/*
 * Adds one switch of a vCPU thread (record --vcpu-sched) as the host's
 * sched_switch. 0 (written, or the second record of one switch), 1 (a kind
 * of switch this version does not show), or a negative value with err.
 */
int ht_lttng_add_switch(struct ht_lttng_export *x, const struct ht_vcpu_switch *sw, struct ht_reader *reader,
			char *err, size_t errlen);
/*
 * Adds one wake-up of a halted vCPU thread (record --wakeups) as the host's
 * hypertrace_vcpu_wakeup event at its entry. 0, or a negative value with err.
 */
int ht_lttng_add_wakeup(struct ht_lttng_export *x, const struct ht_vcpu_wakeup *w, struct ht_reader *reader,
			char *err, size_t errlen);
/*
 * Adds one interrupt delivery to a vCPU thread (record --wakeups, format
 * 14) as the host's hypertrace_vcpu_irq event at its entry. 0, or a
 * negative value with err.
 */
int ht_lttng_add_irq(struct ht_lttng_export *x, const struct ht_vcpu_irq *d, struct ht_reader *reader, char *err,
		     size_t errlen);
/* Writes everything out and names DIR. Frees x. 0, or a negative value with err (then DIR is as it was). */
int ht_lttng_close(struct ht_lttng_export *x, const struct ht_read_status *st, const char *source,
		   const char *selection, struct ht_lttng_counts *counts, char *err, size_t errlen);
/* Frees x and removes the unfinished experiment. NULL is fine. */
void ht_lttng_abandon(struct ht_lttng_export *x);

#endif
