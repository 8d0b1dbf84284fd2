// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Each format's writer adapted to struct ht_exporter (export/exporter.h). */
#include "export/exporter.h"

#include <errno.h>
#include <stdio.h>
#include "export/chrome_json.h"
#include "export/ctf_writer.h"
#include "export/initcall_spans.h"
#include "export/lttng_export.h"
#include "export/perfetto_export.h"
#include "export/switch_chain.h"
#include "common/util.h"
#include "hypertrace/limits.h"

#define WARNING "hypertrace-bpf: warning: "

/* Guest switches proven lost: where each export shows the gaps and the count (docs/exports.md). */
static void lost_switches(unsigned long long n, const char *shown)
{
	fprintf(stderr, WARNING "%llu guest sched_switch events were lost (a switch whose previous task is not the one its guest CPU last switched in): each gap is the thread \"" HT_CHAIN_UNKNOWN_COMM "\" on its CPU, the task before it %s\n",
		n, shown);
}

/* A guest's initcalls not drawn: its trace has no clock pair, or they overlap more than the tracks hold. */
static void undrawn_initcalls(const struct ht_initcall_counts *c, const char *counted)
{
	if (c->vms_without_clock)
		fprintf(stderr, WARNING "the guest trace of %llu VMs has initcalls but no clock pair (guest/boottrace's sync markers): they are not drawn, as they have no place on the host's clock (report --initcalls shows them on the guest's); %s\n",
			c->vms_without_clock, counted);
	if (c->not_drawn)
		fprintf(stderr, WARNING "%llu initcall levels and initcalls were not drawn: a level that ends before it starts, or initcalls overlapping more than %u tracks; %s\n",
			c->not_drawn, HT_INITCALL_LANES, counted);
}

/* CTF: hypercalls, a stream per vCPU thread; guest events as classes of their own. */
static int ctf_open(const struct ht_convert_config *cfg, const struct ht_file_header *h, struct ht_decoder *dec,
		    void **out, char *err, size_t errlen)
{
	struct ht_ctf_writer *w = NULL;
	int ret = ht_ctf_open(cfg->output, cfg->mode, h, &w, err, errlen);

	*out = w;
	/* The guest event classes only where there can be guest events: other traces stay as they were. */
	if (!ret && ht_decoder_file_has_events(dec, h))
		ht_ctf_decode(w, dec);
	return ret;
}

static int ctf_add(void *w, const struct ht_record *r, struct ht_reader *reader, char *err, size_t errlen)
{
	(void)reader;
	return ht_ctf_add(w, r, err, errlen);
}

static int ctf_close(void *w, const struct ht_read_status *st, const char *source, const char *selection, char *err,
		     size_t errlen)
{
	unsigned long long reordered = ht_ctf_reordered(w);

	if (reordered)
		fprintf(stderr, WARNING "%llu records were out of time order in their vCPU thread: their CTF timestamps were raised to the previous one's (the trace file itself is unusual)\n",
			reordered);
	return ht_ctf_close(w, st, source, selection, err, errlen);
}

static void ctf_abandon(void *w)
{
	ht_ctf_abandon(w);
}

/* Chrome's JSON: hypercalls, the decoded guest events, the VMs' boot phases and their guests' initcalls. */
static int chrome_open(const struct ht_convert_config *cfg, const struct ht_file_header *h, struct ht_decoder *dec,
		       void **out, char *err, size_t errlen)
{
	struct ht_chrome_writer *w = NULL;
	int ret = ht_chrome_open(cfg->output, cfg->force, cfg->mode, h, &w, err, errlen);

	*out = w;
	if (!ret && ht_chrome_decode(w, dec)) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return ret;
}

static int chrome_add(void *w, const struct ht_record *r, struct ht_reader *reader, char *err, size_t errlen)
{
	(void)reader;
	return ht_chrome_add(w, r, err, errlen);
}

static int chrome_add_boot_exit(void *w, const struct ht_boot_exit *be, struct ht_reader *reader, char *err,
				size_t errlen)
{
	(void)reader;
	return ht_chrome_add_boot_exit(w, be, err, errlen);
}

static int chrome_add_guest_trace(void *w, const struct ht_record *r, struct ht_reader *reader, char *err,
				  size_t errlen)
{
	(void)reader;
	return ht_chrome_add_guest_trace(w, r, err, errlen);
}

static int chrome_close(void *w, const struct ht_read_status *st, const char *source, const char *selection,
			char *err, size_t errlen)
{
	struct ht_initcall_counts initcalls;
	int ret = ht_chrome_close(w, st, source, selection, &initcalls, err, errlen);

	if (!ret)
		undrawn_initcalls(&initcalls, "the metadata counts them (initcall_vms_without_clock, initcalls_not_drawn)");
	return ret;
}

static void chrome_abandon(void *w)
{
	ht_chrome_abandon(w);
}

/*
 * LTTng: a host trace and a trace per guest, for Trace Compass's VM analyses;
 * the VMs' boot phases and their guests' initcalls in the host trace.
 */
static int lttng_open(const struct ht_convert_config *cfg, const struct ht_file_header *h, struct ht_decoder *dec,
		      void **out, char *err, size_t errlen)
{
	struct ht_lttng_export *x = NULL;
	int ret = ht_lttng_open(cfg->output, cfg->mode, h, dec, &x, err, errlen);

	*out = x;
	return ret;
}

static int lttng_add(void *w, const struct ht_record *r, struct ht_reader *reader, char *err, size_t errlen)
{
	return ht_lttng_add(w, r, reader, err, errlen);
}

static int lttng_add_switch(void *w, const struct ht_vcpu_switch *sw, struct ht_reader *reader, char *err,
			    size_t errlen)
{
	return ht_lttng_add_switch(w, sw, reader, err, errlen);
}

static int lttng_add_wakeup(void *w, const struct ht_vcpu_wakeup *wk, struct ht_reader *reader, char *err,
			    size_t errlen)
{
	return ht_lttng_add_wakeup(w, wk, reader, err, errlen);
}

static int lttng_add_irq(void *w, const struct ht_vcpu_irq *d, struct ht_reader *reader, char *err, size_t errlen)
{
	return ht_lttng_add_irq(w, d, reader, err, errlen);
}

static int lttng_add_boot_exit(void *w, const struct ht_boot_exit *be, struct ht_reader *reader, char *err,
			       size_t errlen)
{
	return ht_lttng_add_boot_exit(w, be, reader, err, errlen);
}

static int lttng_add_guest_trace(void *w, const struct ht_record *r, struct ht_reader *reader, char *err,
				 size_t errlen)
{
	return ht_lttng_add_guest_trace(w, r, reader, err, errlen);
}

static int lttng_close(void *w, const struct ht_read_status *st, const char *source, const char *selection,
		       char *err, size_t errlen)
{
	struct ht_lttng_counts counts;
	int ret = ht_lttng_close(w, st, source, selection, &counts, err, errlen);

	if (!ret && counts.reordered)
		fprintf(stderr, WARNING "%llu events came out of time order on their CPU: their timestamps were raised to the previous one's (a hypercall longer than the export's reorder window, or an unusual trace file)\n",
			counts.reordered);
	if (!ret && counts.not_written)
		fprintf(stderr, WARNING "%llu events of CPUs beyond what one trace holds (%d host, %u guest CPUs) were not written\n",
			counts.not_written, HT_MAX_CPUS, HT_LTTNG_MAX_GUEST_CPUS);
	if (!ret && counts.lost_switches)
		lost_switches(counts.lost_switches,
			      "in state WAIT_UNKNOWN; each guest trace counts them in its env (lost_sched_switches) and as discarded events");
	if (!ret)
		undrawn_initcalls(&counts.initcalls,
				  "the host trace's env counts them (initcall_vms_without_clock, initcalls_not_drawn)");
	return ret;
}

static void lttng_abandon(void *w)
{
	ht_lttng_abandon(w);
}

/*
 * Perfetto: tracks per VM, vCPU and guest CPU; the guest's scheduling as thread
 * states; the vCPU account as counters; the VMs' boot phases and their
 * guests' initcalls as slices.
 */
static int perfetto_open(const struct ht_convert_config *cfg, const struct ht_file_header *h,
			 struct ht_decoder *dec, void **out, char *err, size_t errlen)
{
	struct ht_perfetto_export *x = NULL;
	int ret = ht_perfetto_open(cfg->output, cfg->force, cfg->mode, h, dec, &x, err, errlen);

	*out = x;
	return ret;
}

static int perfetto_add(void *w, const struct ht_record *r, struct ht_reader *reader, char *err, size_t errlen)
{
	return ht_perfetto_add(w, r, reader, err, errlen);
}

static int perfetto_add_switch(void *w, const struct ht_vcpu_switch *sw, struct ht_reader *reader, char *err,
			       size_t errlen)
{
	return ht_perfetto_add_switch(w, sw, reader, err, errlen);
}

static int perfetto_add_wakeup(void *w, const struct ht_vcpu_wakeup *wk, struct ht_reader *reader, char *err,
			       size_t errlen)
{
	return ht_perfetto_add_wakeup(w, wk, reader, err, errlen);
}

static int perfetto_add_irq(void *w, const struct ht_vcpu_irq *d, struct ht_reader *reader, char *err, size_t errlen)
{
	return ht_perfetto_add_irq(w, d, reader, err, errlen);
}

static int perfetto_add_account(void *w, const struct ht_vcpu_wait_rec *row, struct ht_reader *reader, char *err,
				size_t errlen)
{
	return ht_perfetto_add_account(w, row, reader, err, errlen);
}

static int perfetto_add_boot_exit(void *w, const struct ht_boot_exit *be, struct ht_reader *reader, char *err,
				  size_t errlen)
{
	return ht_perfetto_add_boot_exit(w, be, reader, err, errlen);
}

static int perfetto_add_guest_trace(void *w, const struct ht_record *r, struct ht_reader *reader, char *err,
				    size_t errlen)
{
	return ht_perfetto_add_guest_trace(w, r, reader, err, errlen);
}

static int perfetto_close(void *w, const struct ht_read_status *st, const char *source, const char *selection,
			  char *err, size_t errlen)
{
	struct ht_perfetto_counts counts;
	int ret = ht_perfetto_close(w, st, source, selection, &counts, err, errlen);

	if (!ret && counts.reordered)
		fprintf(stderr, WARNING "%llu events came out of time order on their track: their timestamps were raised to the previous one's (the trace file itself is unusual)\n",
			counts.reordered);
	if (!ret && counts.not_scheduled)
		fprintf(stderr, WARNING "%llu guest events name a guest CPU or task beyond what one Perfetto trace holds (the CPUs of %u VMs, %u each; the tasks of %u VMs, tids below 2^%d): they are on their vCPU's track only\n",
			counts.not_scheduled, HT_PERFETTO_CPU_VMS, HT_PERFETTO_GUEST_CPUS, HT_PERFETTO_TASK_VMS,
			HT_PERFETTO_GUEST_TID_BITS);
	if (!ret && counts.lost_switches)
		lost_switches(counts.lost_switches,
			      "in state Unknown; the trace counts them (attribute dev.hypertrace.lost_guest_switches)");
	if (!ret && counts.irqs_not_shown)
		fprintf(stderr, WARNING "%llu interrupt deliveries overlap one on each of their vCPU thread's %u interrupt tracks: they are not in the trace (report --latency lists them)\n",
			counts.irqs_not_shown, HT_PERFETTO_IRQ_LANES);
	if (!ret)
		undrawn_initcalls(&counts.initcalls,
				  "the trace counts them (attributes dev.hypertrace.initcall_vms_without_clock, dev.hypertrace.initcalls_not_drawn)");
	return ret;
}

static void perfetto_abandon(void *w)
{
	ht_perfetto_abandon(w);
}

static const struct ht_exporter exporters[] = {
	[HT_CONVERT_CTF] = { .open = ctf_open, .add = ctf_add, .close = ctf_close, .abandon = ctf_abandon },
	[HT_CONVERT_CHROME] = { .open = chrome_open, .add = chrome_add, .add_boot_exit = chrome_add_boot_exit,
				.add_guest_trace = chrome_add_guest_trace, .close = chrome_close,
				.abandon = chrome_abandon },
	[HT_CONVERT_LTTNG] = { .open = lttng_open, .add = lttng_add, .add_switch = lttng_add_switch, .add_wakeup = lttng_add_wakeup,
			       .add_irq = lttng_add_irq,
			       .add_boot_exit = lttng_add_boot_exit, .add_guest_trace = lttng_add_guest_trace,
			       .close = lttng_close, .abandon = lttng_abandon },
	[HT_CONVERT_PERFETTO] = { .open = perfetto_open, .add = perfetto_add, .add_switch = perfetto_add_switch,
				  .add_wakeup = perfetto_add_wakeup, .add_irq = perfetto_add_irq, .add_account = perfetto_add_account, .add_boot_exit = perfetto_add_boot_exit,
				  .add_guest_trace = perfetto_add_guest_trace, .close = perfetto_close,
				  .abandon = perfetto_abandon },
};

const struct ht_exporter *ht_exporter_of(enum ht_convert_format format)
{
	return (size_t)format < ARRAY_SIZE(exporters) ? &exporters[format] : NULL;
}
