// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `report --vcpu-switches`: the switches of vCPU threads out of their host
 * CPU and back in (record --vcpu-sched), one line (--dump), CSV row (--csv)
 * or JSON object (--json) each, in file order (time order).
 */
#include "report/report_switches.h"

#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "common/escape.h"
#include "reading/read_outcome.h"
#include "report/thread_label.h"
#include "tracefile/trace_reader.h"
#include "tracefile/wallclock.h"

static const char csv_header[] =
	"time_ns,wallclock,host_pid,host_tid,vcpu_id,cpu,switch,prev_state,involuntary,other_tid,other_pid,"
	"other_comm,vm_name,process_name,thread_name\n";

struct switch_printing {
	enum ht_report_mode mode;
	const struct ht_selection *selection;
	struct ht_reader *reader;
	const struct ht_file_header *h;
	unsigned long long shown;
};

/* The kernel's task state as ps and ftrace letter it; 0 is runnable (preempted). */
static const char *state_name(__u64 state)
{
	switch (state) {
	case 0: return "R";
	case 1: return "S";
	case 2: return "D";
	case 0x402: return "I"; /* TASK_IDLE: uninterruptible, not counted as load */
	case 4: return "T";
	case 8: return "t";
	default: return "?";
	}
}

static void print_switch(void *ctx, const struct ht_vcpu_switch *sw)
{
	static const struct ht_identity unknown; /* files without IDENTITY blocks */
	struct switch_printing *p = ctx;
	bool out = sw->kind == HT_SWITCH_OUT;
	const char *kind = out ? "out" : sw->kind == HT_SWITCH_IN ? "in" : "?";
	char when[64], comm[sizeof(sw->other_comm) + 1];

	if (!ht_selection_match_switch(p->selection, sw, p->reader))
		return;
	const struct ht_identity *id = ht_reader_identity(p->reader, sw->host_pid, sw->host_tid);
	if (!id)
		id = &unknown;
	/* The kernel's comm: NUL-padded, not terminated when 16 long. */
	memcpy(comm, sw->other_comm, sizeof(sw->other_comm));
	comm[sizeof(sw->other_comm)] = '\0';
	ht_format_wallclock(when, sizeof(when), p->h, sw->time_ns, HT_TIME_ISO);
	p->shown++;
	switch (p->mode) {
	case HT_REPORT_DUMP:
		printf("%s ", when);
		ht_print_thread_label(stdout, sw->host_pid, sw->host_tid, id);
		/* Any thread's name is its owner's choice too: escaped. */
		printf(" vcpu %u cpu %u switch-%s", sw->vcpu_id, sw->cpu, kind);
		if (out)
			printf(" state %s (%s)", state_name(sw->prev_state), sw->involuntary ? "preempted" : "blocked");
		printf(" %s tid %u pid %u \"", out ? "next" : "prev", sw->other_tid, sw->other_pid);
		ht_escape_fputs(stdout, comm, HT_ESC_QUOTED);
		fputs("\"\n", stdout);
		break;
	case HT_REPORT_CSV:
		printf("%llu,%s,%u,%u,%u,%u,%s,%llu,%u,%u,%u,", (unsigned long long)sw->time_ns, when, sw->host_pid,
		       sw->host_tid, sw->vcpu_id, sw->cpu, kind, (unsigned long long)sw->prev_state, sw->involuntary,
		       sw->other_tid, sw->other_pid);
		ht_csv_fputs(stdout, comm);
		putchar(',');
		ht_csv_fputs(stdout, id->vm_name);
		putchar(',');
		ht_csv_fputs(stdout, id->process_name);
		putchar(',');
		ht_csv_fputs(stdout, id->thread_name);
		putchar('\n');
		break;
	case HT_REPORT_JSON:
		/* time_ns as a string, as report --json writes exit_ns: exact past 2^53. */
		printf("{\"time_ns\":\"%llu\",\"wallclock\":\"%s\",\"host_pid\":%u,\"host_tid\":%u,\"vcpu_id\":%u,"
		       "\"cpu\":%u,\"switch\":\"%s\",\"prev_state\":%llu,\"involuntary\":%u,\"other_tid\":%u,"
		       "\"other_pid\":%u,\"other_comm\":\"",
		       (unsigned long long)sw->time_ns, when, sw->host_pid, sw->host_tid, sw->vcpu_id, sw->cpu, kind,
		       (unsigned long long)sw->prev_state, sw->involuntary, sw->other_tid, sw->other_pid);
		ht_escape_fputs(stdout, comm, HT_ESC_JSON);
		fputs("\",\"vm_name\":\"", stdout);
		ht_escape_fputs(stdout, id->vm_name, HT_ESC_JSON);
		fputs("\",\"process_name\":\"", stdout);
		ht_escape_fputs(stdout, id->process_name, HT_ESC_JSON);
		fputs("\",\"thread_name\":\"", stdout);
		ht_escape_fputs(stdout, id->thread_name, HT_ESC_JSON);
		fputs("\"}\n", stdout);
		break;
	case HT_REPORT_SUMMARY:
	case HT_REPORT_HIST:
		break;
	}
}

int ht_report_switches(struct ht_report_config *cfg)
{
	struct switch_printing p = { .mode = cfg->mode, .selection = &cfg->selection };
	struct ht_record rec;
	char err[512];
	int status;

	if (ht_reader_open(cfg->path, &p.reader, err, sizeof(err)))
		return ht_runtime_error("%s", err);
	p.h = ht_reader_header(p.reader);
	if (ht_selection_resolve(&cfg->selection, p.h, err, sizeof(err))) {
		ht_reader_close(p.reader);
		return ht_usage_error("report", "%s", err);
	}
	if (cfg->mode == HT_REPORT_CSV)
		fputs(csv_header, stdout);
	ht_reader_set_switch_visitor(p.reader, print_switch, &p);
	while (ht_reader_next(p.reader, &rec) == 1)
		; /* the hypercalls are not this report's; the visitor takes the switches as they pass */
	fflush(stdout);
	const struct ht_read_status *st = ht_reader_status(p.reader);
	if (!st->vcpu_switches && !st->damaged && !(p.h->filter_flags & HT_FILTER_F_VCPU_SCHED))
		status = ht_runtime_error("%s has no switches of vCPU threads: it was recorded without --vcpu-sched (record --vcpu-sched -o FILE)",
					  cfg->path);
	else
		status = ht_report_read_outcome(cfg->path, st);
	ht_reader_close(p.reader);
	return status;
}
