// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `hypertrace-bpf report`: reads a trace file and prints a summary (default),
 * one line per record (--dump), CSV (--csv) or JSON lines (--json).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "record/live_view.h"
#include "report/report_summary.h"
#include "tracefile/trace_reader.h"
#include "tracefile/wallclock.h"

enum report_mode { MODE_SUMMARY, MODE_DUMP, MODE_CSV, MODE_JSON, MODE_HIST };

static const char report_help[] =
	"Usage: hypertrace-bpf report [--dump | --csv | --json | --hist[=SERIES]]\n"
	"                             [--per-vcpu | --per-vm] FILE\n"
	"\n"
	"Read a trace file written by 'hypertrace-bpf record'. Without an option, print\n"
	"a summary: records and drops, counts per vCPU and per hypercall nr, and\n"
	"min/avg/p50/p99/max of each latency (exit->hypercall, hypercall->entry, and\n"
	"the whole exit->entry round trip). A damaged or truncated file is read up to\n"
	"its last whole block, and the report says where it stopped.\n"
	"\n"
	"Options:\n"
	"  -D, --dump   one line per record, with wall-clock time\n"
	"  -C, --csv    CSV with a header line\n"
	"  -J, --json   one JSON object per record per line\n"
	"  -H, --hist[=SERIES]  log2 latency histograms of the whole file, as record\n"
	"               draws them live; SERIES: total, exit-hcall, hcall-entry, all\n"
	"               or a comma list (default all)\n"
	"      --per-vcpu, --per-vm  with --hist: one histogram per vCPU / VM process\n"
	"  -h, --help   show this help\n"
	"\n"
	"EXAMPLES:\n"
	"    hypertrace-bpf report hypertrace.htr\n"
	"    hypertrace-bpf report --csv t.htr > t.csv\n"
	"    hypertrace-bpf report --hist=total --per-vcpu t.htr\n";

static const char *isa_name(__u8 isa)
{
	return isa == HT_ISA_VMX ? "VMX" : isa == HT_ISA_SVM ? "SVM" : "?";
}

static const char csv_header[] =
	"exit_ns,wallclock,host_pid,host_tid,vcpu_id,exit_cpu,entry_cpu,isa,exit_reason,nr,"
	"a0,a1,a2,a3,guest_rip,exit_to_hcall_ns,hcall_to_entry_ns,total_ns,flags\n";

static void print_record(enum report_mode mode, const struct ht_file_header *h,
			 const struct ht_record *r)
{
	char when[64];
	unsigned long long total = (unsigned long long)r->exit_to_hcall_ns + r->hcall_to_entry_ns;

	ht_format_wallclock(when, sizeof(when), h, r->exit_ns, HT_TIME_ISO);
	switch (mode) {
	case MODE_DUMP:
		printf("%s pid %u tid %u vcpu %u cpu %u->%u %s reason 0x%x nr %u a0 0x%llx a1 0x%llx a2 0x%llx a3 0x%llx rip 0x%llx exit->hcall %u ns hcall->entry %u ns total %llu ns%s\n",
		       when, r->host_pid, r->host_tid, r->vcpu_id, r->exit_cpu, r->entry_cpu,
		       isa_name(r->isa), r->exit_reason, r->nr, (unsigned long long)r->a0,
		       (unsigned long long)r->a1, (unsigned long long)r->a2, (unsigned long long)r->a3,
		       (unsigned long long)r->guest_rip, r->exit_to_hcall_ns, r->hcall_to_entry_ns, total,
		       (r->flags & (HT_REC_F_EXIT_TO_HCALL_SATURATED | HT_REC_F_HCALL_TO_ENTRY_SATURATED)) ?
			       " (saturated)" : "");
		break;
	case MODE_CSV:
		printf("%llu,%s,%u,%u,%u,%u,%u,%s,0x%x,%u,0x%llx,0x%llx,0x%llx,0x%llx,0x%llx,%u,%u,%llu,0x%x\n",
		       (unsigned long long)r->exit_ns, when, r->host_pid, r->host_tid, r->vcpu_id,
		       r->exit_cpu, r->entry_cpu, isa_name(r->isa), r->exit_reason, r->nr,
		       (unsigned long long)r->a0, (unsigned long long)r->a1, (unsigned long long)r->a2,
		       (unsigned long long)r->a3, (unsigned long long)r->guest_rip, r->exit_to_hcall_ns,
		       r->hcall_to_entry_ns, total, r->flags);
		break;
	case MODE_JSON:
		printf("{\"exit_ns\":%llu,\"wallclock\":\"%s\",\"host_pid\":%u,\"host_tid\":%u,\"vcpu_id\":%u,"
		       "\"exit_cpu\":%u,\"entry_cpu\":%u,\"isa\":\"%s\",\"exit_reason\":%u,\"nr\":%u,"
		       "\"a0\":%llu,\"a1\":%llu,\"a2\":%llu,\"a3\":%llu,\"guest_rip\":%llu,"
		       "\"exit_to_hcall_ns\":%u,\"hcall_to_entry_ns\":%u,\"total_ns\":%llu,\"flags\":%u}\n",
		       (unsigned long long)r->exit_ns, when, r->host_pid, r->host_tid, r->vcpu_id,
		       r->exit_cpu, r->entry_cpu, isa_name(r->isa), r->exit_reason, r->nr,
		       (unsigned long long)r->a0, (unsigned long long)r->a1, (unsigned long long)r->a2,
		       (unsigned long long)r->a3, (unsigned long long)r->guest_rip, r->exit_to_hcall_ns,
		       r->hcall_to_entry_ns, total, r->flags);
		break;
	case MODE_SUMMARY:
	case MODE_HIST:
		break;
	}
}

static const struct option report_longopts[] = {
	{ "dump", no_argument, NULL, 'D' },
	{ "csv", no_argument, NULL, 'C' },
	{ "json", no_argument, NULL, 'J' },
	{ "hist", optional_argument, NULL, 'H' },
	{ "per-vcpu", no_argument, NULL, 'P' },
	{ "per-vm", no_argument, NULL, 'M' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

int ht_cmd_report(int argc, char **argv)
{
	enum report_mode mode = MODE_SUMMARY;
	struct ht_summary *summary = NULL;
	struct ht_live *live = NULL;
	unsigned int series = HT_HV_SERIES_ALL;
	enum ht_lat_group_by group_by = HT_LAT_BY_NONE;
	struct ht_reader *reader;
	struct ht_record rec;
	char err[512];
	int opt, modes = 0;

	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, ":DCJHh", report_longopts, NULL)) != -1) {
		switch (opt) {
		case 'H':
			mode = MODE_HIST;
			modes++;
			if (optarg && !ht_hv_parse_series(optarg, &series))
				return ht_usage_error("report", "invalid --hist '%s': expected total, exit-hcall, hcall-entry, all or a comma list", optarg);
			break;
		case 'P':
		case 'M':
			if (group_by != HT_LAT_BY_NONE)
				return ht_usage_error("report", "--per-vcpu and --per-vm exclude each other");
			group_by = opt == 'P' ? HT_LAT_BY_VCPU : HT_LAT_BY_VM;
			break;
		case 'D': mode = MODE_DUMP; modes++; break;
		case 'C': mode = MODE_CSV; modes++; break;
		case 'J': mode = MODE_JSON; modes++; break;
		case 'h':
			fputs(report_help, stdout);
			return HT_EXIT_OK;
		default:
			return ht_usage_error("report", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (modes > 1)
		return ht_usage_error("report", "--dump, --csv, --json and --hist exclude each other");
	if (group_by != HT_LAT_BY_NONE && mode != MODE_HIST)
		return ht_usage_error("report", "--per-vcpu and --per-vm go with --hist");
	if (optind == argc)
		return ht_usage_error("report", "no trace file given");
	if (optind + 1 < argc)
		return ht_usage_error("report", "one trace file at a time, got '%s' and '%s'", argv[optind], argv[optind + 1]);

	const char *path = argv[optind];
	if (ht_reader_open(path, &reader, err, sizeof(err)))
		return ht_runtime_error("%s", err);
	const struct ht_file_header *h = ht_reader_header(reader);

	if (mode == MODE_SUMMARY) {
		summary = ht_summary_new();
		if (!summary) {
			ht_reader_close(reader);
			return ht_runtime_error("out of memory");
		}
	} else if (mode == MODE_CSV) {
		fputs(csv_header, stdout);
	} else if (mode == MODE_HIST) {
		struct ht_live_opts lo = { .interval_ns = ~0ull, .series = series, .group_by = group_by };
		live = ht_live_new(&lo, stdout, h->start_monotonic_ns);
		if (!live) {
			ht_reader_close(reader);
			return ht_runtime_error("out of memory");
		}
	}
	__u64 last_ns = h->start_monotonic_ns;
	while (ht_reader_next(reader, &rec) == 1) {
		if (rec.exit_ns > last_ns)
			last_ns = rec.exit_ns;
		if (live) {
			ht_live_observe(live, &rec);
		} else if (summary) {
			if (ht_summary_add(summary, &rec)) {
				ht_summary_free(summary);
				ht_reader_close(reader);
				return ht_runtime_error("out of memory");
			}
		} else {
			print_record(mode, h, &rec);
		}
	}
	const struct ht_read_status *st = ht_reader_status(reader);
	if (summary) {
		ht_summary_print(summary, stdout, path, h, st);
		ht_summary_free(summary);
	}
	if (live) {
		/* The file's own clock: rates are over the recording, not over reading it. */
		ht_live_final(live, st->has_trailer ? st->trailer.end_monotonic_ns : last_ns,
			      st->has_trailer ? ht_trailer_lost(&st->trailer) : 0);
		ht_live_free(live);
	}
	fflush(stdout);

	int status = HT_EXIT_OK;
	if (st->damaged) {
		fprintf(stderr, "hypertrace-bpf: %s is damaged: read %llu records, stopped at byte %llu of %llu: %s\n",
			path, st->records, st->good_bytes, st->file_bytes, st->reason);
		status = HT_EXIT_RUNTIME;
	} else if (!st->has_trailer) {
		fprintf(stderr, "hypertrace-bpf: warning: %s: read %llu records: %s\n", path, st->records,
			st->reason);
	}
	ht_reader_close(reader);
	return status;
}
