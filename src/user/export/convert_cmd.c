// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `hypertrace-bpf convert`: streams the selected records of a trace file,
 * through the trace file reader, into a CTF trace, an LTTng-kernel-shaped
 * experiment, a Perfetto trace or a Chrome trace JSON file.
 * The output gets its name only once complete; SIGINT, SIGTERM or SIGHUP
 * (unless ignored) stop the conversion and leave nothing behind.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "decode/decoder.h"
#include "decode/guest_trace.h"
#include "export/convert_options.h"
#include "export/exporter.h"
#include "reading/read_outcome.h"
#include "reading/selection.h"
#include "tracefile/trace_reader.h"
#include "common/util.h"

/* The output's writer behind its format's interface, so the read loop is written once. */
struct exporter {
	const struct ht_exporter *ops;
	void *w;
	struct ht_reader *reader; /* the names of VMs and threads, for the exports that show them */
	struct ht_decoder dec;    /* decodes guest events */
	bool have_dec;
};

static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP };
/* The signal that asked convert to stop, 0 while none. */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

struct signal_handlers {
	struct sigaction old[ARRAY_SIZE(stop_signals)];
	bool caught[ARRAY_SIZE(stop_signals)];
};

/*
 * The read loop checks stop_signal after every record. A signal ignored on
 * entry (nohup, a background job of a script) stays ignored: the caller chose so.
 */
static void catch_stop_signals(struct signal_handlers *h)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };

	stop_signal = 0;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < ARRAY_SIZE(stop_signals); i++) {
		h->caught[i] = sigaction(stop_signals[i], NULL, &h->old[i]) == 0 && h->old[i].sa_handler != SIG_IGN &&
			       sigaction(stop_signals[i], &sa, NULL) == 0;
	}
}

static void restore_signals(struct signal_handlers *h)
{
	for (size_t i = 0; i < ARRAY_SIZE(stop_signals); i++)
		if (h->caught[i])
			sigaction(stop_signals[i], &h->old[i], NULL);
}

static int exporter_open(struct exporter *x, const struct ht_convert_config *cfg,
			 const struct ht_file_header *h, char *err, size_t errlen)
{
	/* Before the output exists: a wrong catalog or symbol file leaves nothing behind. */
	if (ht_decoder_open(&x->dec, &cfg->decode, cfg->path, h, err, errlen))
		return -EINVAL;
	x->have_dec = true;
	x->ops = ht_exporter_of(cfg->format);
	return x->ops->open(cfg, h, &x->dec, &x->w, err, errlen);
}

/* A switch of a vCPU thread (record --vcpu-sched), where the format shows them: 0 written, 1 not. */
static int exporter_add_switch(struct exporter *x, const struct ht_vcpu_switch *sw, char *err, size_t errlen)
{
	return x->ops->add_switch ? x->ops->add_switch(x->w, sw, x->reader, err, errlen) : 1;
}

/*
 * The reader's switch, EXITS and boot exit visitors: the selected switches,
 * vCPU accounts and boot exits into the export; the first failure stops them.
 */
struct switch_sink {
	struct exporter *x;
	const struct ht_selection *selection;
	int ret;
	char err[512];
	unsigned long long converted;         /* switches */
	unsigned long long wakeups_converted;
	unsigned long long irqs_converted;
};

static void on_switch(void *ctx, const struct ht_vcpu_switch *sw)
{
	struct switch_sink *s = ctx;
	int ret;

	if (s->ret || stop_signal || !ht_selection_match_switch(s->selection, sw, s->x->reader))
		return;
	ret = exporter_add_switch(s->x, sw, s->err, sizeof(s->err));
	if (ret < 0)
		s->ret = ret;
	else
		s->converted += ret == 0;
}

/* A wake-up of a halted vCPU thread (record --wakeups), selected by its end, where the format shows them. */
static void on_wakeup(void *ctx, const struct ht_vcpu_wakeup *w)
{
	struct switch_sink *s = ctx;
	int ret;

	if (s->ret || stop_signal || !s->x->ops->add_wakeup || !ht_selection_match_wakeup(s->selection, w, s->x->reader))
		return;
	ret = s->x->ops->add_wakeup(s->x->w, w, s->x->reader, s->err, sizeof(s->err));
	if (ret < 0)
		s->ret = ret;
	else
		s->wakeups_converted += ret == 0;
}

/* An interrupt delivery to a vCPU thread (record --wakeups), selected by its end, where the format shows them. */
static void on_irq(void *ctx, const struct ht_vcpu_irq *d)
{
	struct switch_sink *s = ctx;
	int ret;

	if (s->ret || stop_signal || !s->x->ops->add_irq || !ht_selection_match_irq(s->selection, d, s->x->reader))
		return;
	ret = s->x->ops->add_irq(s->x->w, d, s->x->reader, s->err, sizeof(s->err));
	if (ret < 0)
		s->ret = ret;
	else
		s->irqs_converted += ret == 0;
}

/*
 * The vCPU threads' accounts of an EXITS block, where the format shows them:
 * a thread's is selected as its switches are (VM process, VM, vCPU), at the
 * time it was read.
 */
static void on_exits(void *ctx, const struct ht_exits_header *h, const struct ht_exit_series_rec *series,
		     const struct ht_vcpu_wait_rec *threads)
{
	struct switch_sink *s = ctx;

	(void)series;
	if (!s->x->ops->add_account)
		return;
	for (__u32 i = 0; i < h->nthreads && !s->ret && !stop_signal; i++) {
		const struct ht_vcpu_wait_rec *row = &threads[i];
		struct ht_vcpu_switch where = { .time_ns = row->a.as_of_ns, .host_pid = row->w.pid,
						.host_tid = row->w.tid, .vcpu_id = row->w.vcpu };
		int ret;

		if (!ht_selection_match_switch(s->selection, &where, s->x->reader))
			continue;
		ret = s->x->ops->add_account(s->x->w, row, s->x->reader, s->err, sizeof(s->err));
		if (ret < 0)
			s->ret = ret;
	}
}

/*
 * The exits of booting VMs (record --boot), where the format shows boots: a
 * boot is its whole VM's (its phases are told from its boot vCPU), so a VM
 * selected (-p, --vm) gives all its exits, whatever --vcpu, --nr and the
 * time window select of its records.
 */
static void on_boot_exit(void *ctx, const struct ht_boot_exit *be)
{
	struct switch_sink *s = ctx;
	int ret;

	if (s->ret || stop_signal || !s->x->ops->add_boot_exit ||
	    !ht_selection_match_vm(s->selection, be->host_pid, s->x->reader))
		return;
	ret = s->x->ops->add_boot_exit(s->x->w, be, s->x->reader, s->err, sizeof(s->err));
	if (ret < 0)
		s->ret = ret;
}

/* Names the output; the writer is gone after it, whatever the result. */
static int exporter_close(struct exporter *x, const struct ht_read_status *st, const char *source,
			  const char *selection, char *err, size_t errlen)
{
	int ret = x->ops->close(x->w, st, source, selection, err, errlen);

	x->w = NULL;
	return ret;
}

/* Drops the unfinished output: nothing of it stays. */
static void exporter_abandon(struct exporter *x)
{
	if (x->ops)
		x->ops->abandon(x->w);
	x->w = NULL;
}

static void exporter_free(struct exporter *x)
{
	if (x->have_dec)
		ht_decoder_close(&x->dec);
	x->have_dec = false;
}

/*
 * Every record of the input into the export, the selected ones added (and
 * the switches, through the sink, as the reader meets them), until the end,
 * an error or a stop signal. 0 or -errno with err set.
 */
static int convert_records(struct exporter *x, const struct ht_selection *selection, struct switch_sink *sink,
			   unsigned long long *converted, char *err, size_t errlen)
{
	struct ht_record rec;
	int ret = 0;

	while (!ret && !stop_signal) {
		int got = ht_reader_next(x->reader, &rec);

		/* The switches before this record went through the visitor. */
		if (sink->ret) {
			snprintf(err, errlen, "%s", sink->err);
			return sink->ret;
		}
		if (got != 1)
			break;
		/* Every record, selected or not: the guest module's load event says which are its own. */
		if (ht_decoder_note(&x->dec, &rec)) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		/*
		 * A guest's own trace is its whole VM's, as a boot is: its lines
		 * span records that --nr, --vcpu and the time window would cut.
		 */
		if (x->ops->add_guest_trace && ht_guest_trace_nr(rec.nr) &&
		    ht_selection_match_vm(selection, rec.host_pid, x->reader) &&
		    (ret = x->ops->add_guest_trace(x->w, &rec, x->reader, err, errlen)))
			return ret;
		if (!ht_selection_match(selection, &rec, x->reader))
			continue;
		ret = x->ops->add(x->w, &rec, x->reader, err, errlen);
		*converted += !ret;
	}
	return ret;
}

/* "N of M records, ... and N of M NOUN converted to OUTPUT": the kinds of which some were converted, the records always. */
static void print_converted(unsigned long long records, const struct ht_read_status *st, const struct switch_sink *sink,
			    const char *output)
{
	const struct {
		unsigned long long converted, in_file;
		const char *noun;
	} kinds[] = {
		{ records, st->records, "records" },
		{ sink->converted, st->vcpu_switches, "switches of vCPU threads" },
		{ sink->wakeups_converted, st->vcpu_wakeups, "wake-ups of halted vCPUs" },
		{ sink->irqs_converted, st->vcpu_irqs, "interrupt deliveries" },
	};
	size_t shown[ARRAY_SIZE(kinds)], n = 0;

	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if (!i || kinds[i].converted)
			shown[n++] = i;
	fprintf(stderr, "hypertrace-bpf: ");
	for (size_t j = 0; j < n; j++)
		fprintf(stderr, "%s%llu of %llu %s", !j ? "" : j == n - 1 ? " and " : ", ", kinds[shown[j]].converted,
			kinds[shown[j]].in_file, kinds[shown[j]].noun);
	fprintf(stderr, " converted to %s\n", output);
}

int ht_cmd_convert(int argc, char **argv)
{
	struct ht_convert_config cfg;
	struct exporter x = { 0 };
	struct switch_sink sink = { .x = &x };
	struct signal_handlers handlers;
	struct ht_reader *reader;
	const struct ht_read_status *st;
	char err[512], selection[256];
	unsigned long long converted = 0;
	bool damaged;
	int ret, stopped_by = 0;

	if ((ret = ht_convert_parse(argc, argv, &cfg)) >= 0)
		return ret;
	if (ht_reader_open(cfg.path, &reader, err, sizeof(err)))
		return ht_runtime_error("%s", err);
	if (ht_selection_resolve(&cfg.selection, ht_reader_header(reader), err, sizeof(err))) {
		ret = ht_usage_error("convert", "%s", err);
		goto out;
	}
	ht_selection_describe(&cfg.selection, selection, sizeof(selection));
	x.reader = reader;
	sink.selection = &cfg.selection;
	ht_reader_set_switch_visitor(reader, on_switch, &sink);
	ht_reader_set_exits_visitor(reader, on_exits, &sink);
	ht_reader_set_boot_exit_visitor(reader, on_boot_exit, &sink);
	ht_reader_set_wakeup_visitor(reader, on_wakeup, &sink);
	ht_reader_set_irq_visitor(reader, on_irq, &sink);
	catch_stop_signals(&handlers);
	ret = exporter_open(&x, &cfg, ht_reader_header(reader), err, sizeof(err));
	if (!ret)
		ret = convert_records(&x, &cfg.selection, &sink, &converted, err, sizeof(err));
	st = ht_reader_status(reader);
	/* A damaged input fails the conversion: as any failed one, it leaves nothing under the output's name. */
	damaged = !ret && !stop_signal && st->damaged;
	if (!ret && !stop_signal && !damaged)
		ret = exporter_close(&x, st, cfg.path, selection, err, sizeof(err));
	/* A failed or interrupted conversion: the output never got its name, and now goes. */
	exporter_abandon(&x);
	exporter_free(&x);
	restore_signals(&handlers);
	if (stop_signal && !ret) {
		stopped_by = stop_signal;
		fprintf(stderr, "hypertrace-bpf: convert stopped by SIG%s: nothing written to %s\n",
			stopped_by == SIGINT ? "INT" : stopped_by == SIGTERM ? "TERM" : "HUP", cfg.output);
	} else if (ret) {
		ret = ht_runtime_error("%s", err);
	} else if (damaged) {
		ret = ht_report_read_outcome(cfg.path, st);
		fprintf(stderr, "hypertrace-bpf: nothing written to %s: the input is damaged (report --dump shows the records before the damage)\n",
			cfg.output);
	} else {
		print_converted(converted, st, &sink, cfg.output);
		ret = ht_report_read_outcome(cfg.path, st);
	}
out:
	ht_reader_close(reader);
	if (stopped_by) {
		fflush(stderr);
		/* Die of the signal, as without a handler: the caller sees 128+N. */
		signal(stopped_by, SIG_DFL);
		raise(stopped_by);
		return 128 + stopped_by;
	}
	return ret;
}
