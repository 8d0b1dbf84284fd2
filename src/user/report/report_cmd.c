// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `hypertrace-bpf report`: reads a trace file and prints a summary (default),
 * one line per record (--dump), CSV (--csv), JSON lines (--json) or latency
 * histograms (--hist) of the selected records.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "common/escape.h"
#include "decode/report_guest.h"
#include "hist/live_view.h"
#include "reading/read_outcome.h"
#include "report/report_boot.h"
#include "report/report_clock.h"
#include "report/report_initcalls.h"
#include "report/report_latency.h"
#include "report/report_exits.h"
#include "report/report_options.h"
#include "report/report_summary.h"
#include "report/report_switches.h"
#include "report/thread_label.h"
#include "tracefile/trace_reader.h"
#include "tracefile/wallclock.h"

static const char *isa_name(__u8 isa)
{
	return isa == HT_ISA_VMX ? "VMX" : isa == HT_ISA_SVM ? "SVM" : "?";
}

static const char csv_header[] =
	"exit_ns,wallclock,host_pid,host_tid,vcpu_id,exit_cpu,entry_cpu,isa,exit_reason,nr,"
	"a0,a1,a2,a3,guest_rip,exit_to_hcall_ns,hcall_to_entry_ns,total_ns,flags,"
	"vm_name,process_name,thread_name";

/* A CSV text field: always quoted, escaped, a leading formula character neutralised (docs/exports.md). */
static void csv_field(const char *v)
{
	ht_csv_fputs(stdout, v);
}

/* A JSON string: valid JSON whatever v holds (names are the VM owner's, docs/exports.md). */
static void json_string(const char *v)
{
	ht_json_fputs(stdout, v);
}

static void print_record(enum ht_report_mode mode, const struct ht_file_header *h,
			 const struct ht_record *r, const struct ht_identity *id, const struct ht_decoder *dec)
{
	static const struct ht_identity unknown; /* files without IDENTITY blocks */
	char when[64];
	unsigned long long total = (unsigned long long)r->exit_to_hcall_ns + r->hcall_to_entry_ns;

	ht_format_wallclock(when, sizeof(when), h, r->exit_ns, HT_TIME_ISO);
	if (!id)
		id = &unknown;
	switch (mode) {
	case HT_REPORT_DUMP:
		printf("%s ", when);
		ht_print_thread_label(stdout, r->host_pid, r->host_tid, id);
		printf(" vcpu %u cpu %u->%u %s reason 0x%x nr %u a0 0x%llx a1 0x%llx a2 0x%llx a3 0x%llx rip 0x%llx exit->hcall %u ns hcall->entry %u ns total %llu ns%s",
		       r->vcpu_id, r->exit_cpu, r->entry_cpu,
		       isa_name(r->isa), r->exit_reason, r->nr, (unsigned long long)r->a0,
		       (unsigned long long)r->a1, (unsigned long long)r->a2, (unsigned long long)r->a3,
		       (unsigned long long)r->guest_rip, r->exit_to_hcall_ns, r->hcall_to_entry_ns, total,
		       (r->flags & (HT_REC_F_EXIT_TO_HCALL_SATURATED | HT_REC_F_HCALL_TO_ENTRY_SATURATED)) ?
			       " (saturated)" : "");
		ht_decode_print_text(dec, r, stdout);
		putchar('\n');
		break;
	case HT_REPORT_CSV:
		printf("%llu,%s,%u,%u,%u,%u,%u,%s,0x%x,%u,0x%llx,0x%llx,0x%llx,0x%llx,0x%llx,%u,%u,%llu,0x%x,",
		       (unsigned long long)r->exit_ns, when, r->host_pid, r->host_tid, r->vcpu_id,
		       r->exit_cpu, r->entry_cpu, isa_name(r->isa), r->exit_reason, r->nr,
		       (unsigned long long)r->a0, (unsigned long long)r->a1, (unsigned long long)r->a2,
		       (unsigned long long)r->a3, (unsigned long long)r->guest_rip, r->exit_to_hcall_ns,
		       r->hcall_to_entry_ns, total, r->flags);
		csv_field(id->vm_name);
		putchar(',');
		csv_field(id->process_name);
		putchar(',');
		csv_field(id->thread_name);
		ht_decode_print_csv(dec, r, stdout);
		putchar('\n');
		break;
	case HT_REPORT_JSON:
		/*
		 * 64-bit values are strings: JSON readers hold numbers in doubles,
		 * exact only below 2^53, and guest addresses and arguments (kernel
		 * addresses) or exit_ns after 104 days of uptime are above it.
		 */
		printf("{\"exit_ns\":\"%llu\",\"wallclock\":\"%s\",\"host_pid\":%u,\"host_tid\":%u,\"vcpu_id\":%u,"
		       "\"exit_cpu\":%u,\"entry_cpu\":%u,\"isa\":\"%s\",\"exit_reason\":%u,\"nr\":%u,"
		       "\"a0\":\"0x%llx\",\"a1\":\"0x%llx\",\"a2\":\"0x%llx\",\"a3\":\"0x%llx\",\"guest_rip\":\"0x%llx\","
		       "\"exit_to_hcall_ns\":%u,\"hcall_to_entry_ns\":%u,\"total_ns\":%llu,\"flags\":%u,",
		       (unsigned long long)r->exit_ns, when, r->host_pid, r->host_tid, r->vcpu_id,
		       r->exit_cpu, r->entry_cpu, isa_name(r->isa), r->exit_reason, r->nr,
		       (unsigned long long)r->a0, (unsigned long long)r->a1, (unsigned long long)r->a2,
		       (unsigned long long)r->a3, (unsigned long long)r->guest_rip, r->exit_to_hcall_ns,
		       r->hcall_to_entry_ns, total, r->flags);
		fputs("\"vm_name\":", stdout);
		json_string(id->vm_name);
		fputs(",\"process_name\":", stdout);
		json_string(id->process_name);
		fputs(",\"thread_name\":", stdout);
		json_string(id->thread_name);
		ht_decode_print_json(dec, r, stdout);
		fputs("}\n", stdout);
		break;
	case HT_REPORT_SUMMARY:
	case HT_REPORT_HIST:
		break;
	}
}

static bool selected(const void *selection, const struct ht_record *r, void *reader)
{
	return ht_selection_match(selection, r, reader);
}

/* A report of records while it runs: what it reads, and what it prints with. */
struct report_run {
	const struct ht_report_config *cfg;
	struct ht_reader *reader;
	const struct ht_file_header *h;
	struct ht_report_guest *guest; /* guest decoding, or NULL */
	struct ht_summary *summary;    /* the summary mode's, or NULL */
	struct ht_live *live;          /* the histograms' mode, or NULL */
	bool analysis;                 /* --graph or --sched */
	__u64 last_ns;                 /* the latest record's time, for a file without a trailer */
};

/* What the mode prints before the records, and what it prints with. 0 or -ENOMEM. */
static int report_begin(struct report_run *run)
{
	const struct ht_report_config *cfg = run->cfg;
	char what[512];

	if (run->analysis) {
		/* --graph or --sched: fed by the records, printed at the end. */
	} else if (cfg->mode == HT_REPORT_SUMMARY) {
		run->summary = ht_summary_new();
		if (!run->summary)
			return -ENOMEM;
		/* Its percentiles may read the file again: the same records. */
		ht_summary_set_filter(run->summary, selected, &cfg->selection);
		if (ht_selection_active(&cfg->selection)) {
			ht_selection_describe(&cfg->selection, what, sizeof(what));
			printf("selection: %s (counts and latencies below are of these records; drops are the whole recording's)\n", what);
		}
	} else if (cfg->mode == HT_REPORT_CSV) {
		fputs(csv_header, stdout);
		ht_decode_print_csv_header(ht_report_guest_decoder(run->guest), stdout);
		putchar('\n');
	} else if (cfg->mode == HT_REPORT_HIST) {
		struct ht_live_opts lo = { .interval_ns = ~0ull, .series = cfg->series, .group_by = cfg->group_by,
					   .vm_name = ht_reader_vm_name,
					   .thread_name = ht_reader_thread_name, .vm_name_ctx = run->reader };
		run->live = ht_live_new(&lo, stdout, run->h->start_monotonic_ns);
		if (!run->live)
			return -ENOMEM;
	}
	return 0;
}

/* Every record of the file, each selected one to the mode. 0 or -ENOMEM. */
static int report_records(struct report_run *run)
{
	struct ht_record rec;

	run->last_ns = run->h->start_monotonic_ns;
	while (ht_reader_next(run->reader, &rec) == 1) {
		if (rec.exit_ns > run->last_ns)
			run->last_ns = rec.exit_ns;
		/* Every record, selected or not: the guest module's load event says which are its own. */
		if (run->guest && ht_report_guest_note(run->guest, &rec))
			return -ENOMEM;
		if (!ht_selection_match(&run->cfg->selection, &rec, run->reader))
			continue;
		if (run->guest && (run->analysis || run->summary) && ht_report_guest_observe(run->guest, &rec))
			return -ENOMEM;
		if (run->analysis) {
			/* Fed above. */
		} else if (run->live) {
			ht_live_observe(run->live, &rec);
		} else if (run->summary) {
			if (ht_summary_add(run->summary, &rec))
				return -ENOMEM;
		} else {
			print_record(run->cfg->mode, run->h, &rec,
				     ht_reader_identity(run->reader, rec.host_pid, rec.host_tid),
				     ht_report_guest_decoder(run->guest));
		}
	}
	return 0;
}

/* What the mode prints after the records: the analysis, the summary, the histograms. */
static void report_end(struct report_run *run, const struct ht_read_status *st)
{
	/* The file's own clock: rates are over the recording, not over reading it. */
	__u64 end_ns = st->has_trailer ? st->trailer.end_monotonic_ns : run->last_ns;

	if (run->analysis)
		ht_report_guest_finish(run->guest, stdout, run->h->start_monotonic_ns, end_ns);
	if (run->summary) {
		ht_summary_set_forged(run->summary, ht_report_guest_forged(run->guest));
		ht_summary_print(run->summary, stdout, run->cfg->path, run->h, st, run->reader);
	}
	if (run->live)
		ht_live_final(run->live, end_ns, st->has_trailer ? ht_trailer_lost(&st->trailer) : 0);
}

/*
 * Every resource is released at `out`, whatever the outcome: the reader, the
 * guest decoding, the summary and the histograms (each NULL until made).
 */
int ht_cmd_report(int argc, char **argv)
{
	struct ht_report_config cfg;
	struct report_run run = { .cfg = &cfg };
	const struct ht_read_status *st;
	char err[512];
	int status;

	if ((status = ht_report_parse(argc, argv, &cfg)) >= 0)
		return status;
	if (cfg.boot)
		return ht_report_boot(&cfg);
	if (cfg.clock)
		return ht_report_clock(&cfg);
	if (cfg.initcalls)
		return ht_report_initcalls(&cfg);
	if (cfg.exits || cfg.vcpu_time)
		return ht_report_exits(&cfg);
	if (cfg.vcpu_switches)
		return ht_report_switches(&cfg);
	if (cfg.latency)
		return ht_report_latency(&cfg);
	if (ht_reader_open(cfg.path, &run.reader, err, sizeof(err))) {
		status = ht_runtime_error("%s", err);
		goto out;
	}
	run.h = ht_reader_header(run.reader);
	if (ht_selection_resolve(&cfg.selection, run.h, err, sizeof(err))) {
		status = ht_usage_error("report", "%s", err);
		goto out;
	}
	run.analysis = cfg.decode.analysis != HT_ANALYSIS_NONE;
	/* The summary too: it counts the guest module's events that guest user space forged. */
	if ((run.analysis || cfg.mode != HT_REPORT_HIST) &&
	    ht_report_guest_open(&run.guest, &cfg.decode, cfg.path, run.h, err, sizeof(err))) {
		status = ht_runtime_error("%s", err);
		goto out;
	}
	if (report_begin(&run) || report_records(&run)) {
		status = ht_runtime_error("out of memory");
		goto out;
	}
	st = ht_reader_status(run.reader);
	report_end(&run, st);
	fflush(stdout);
	status = ht_report_read_outcome(cfg.path, st);
out:
	ht_live_free(run.live);
	ht_summary_free(run.summary);
	ht_report_guest_close(run.guest);
	ht_reader_close(run.reader);
	return status;
}
