// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "report/thread_label.h"

#include <errno.h>
#include <stdlib.h>
#include "common/escape.h"
#include "exits/exit_table.h"
#include "exits/exit_view.h"
#include "tracefile/trace_reader.h"

void ht_print_thread_label(FILE *out, __u32 pid, __u32 tid, const struct ht_identity *id)
{
	fprintf(out, "pid %u", pid);
	if (id && (id->vm_name[0] || id->process_name[0])) {
		fputs(id->vm_name[0] ? " (vm " : " (", out);
		ht_escape_fputs(out, id->vm_name[0] ? id->vm_name : id->process_name, HT_ESC_TEXT);
		fputc(')', out);
	}
	fprintf(out, " tid %u", tid);
	if (id && id->thread_name[0]) {
		fputs(" (", out);
		ht_escape_fputs(out, id->thread_name, HT_ESC_TEXT);
		fputc(')', out);
	}
}

int ht_report_vcpu_label(char *buf, size_t len, const struct ht_vcpu_thread_row *r, size_t vcpu_threads,
			 struct ht_reader *reader)
{
	const char *tn = ht_reader_thread_name(reader, r->w.pid, r->w.tid);
	char tesc[HT_ESC_SIZE(16)], from[40] = "";

	if (vcpu_threads > 1)
		ht_exit_view_thread_start(from, sizeof(from), r, ht_reader_header(reader)->start_monotonic_ns);
	return snprintf(buf, len, "vCPU %u (%s%stid %u%s%s)", (unsigned int)r->w.vcpu,
			tn ? ht_escape(tesc, sizeof(tesc), tn, HT_ESC_TEXT) : "", tn ? ", " : "", r->w.tid,
			r->gone ? ", ended" : "", from);
}

int ht_report_vcpu_view(const struct ht_exit_table *t, struct ht_reader *reader, const struct ht_vcpu_view_ops *ops,
			void *ctx)
{
	const struct ht_vcpu_thread_row **rows = calloc(t->nthreads + 1, sizeof(*rows));
	size_t *per_vcpu = calloc(t->nthreads + 1, sizeof(*per_vcpu));
	char label[HT_ESC_SIZE(16) + 96];
	int ret = 0;

	if (!rows || !per_vcpu) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < t->nthreads; i++)
		rows[i] = &t->threads[i];
	qsort(rows, t->nthreads, sizeof(*rows), ht_vcpu_thread_ptr_cmp_by_vm);
	for (size_t i = 0; i < t->nthreads;) {
		uint32_t pid = rows[i]->w.pid;
		const char *vm = ht_reader_vm_name(reader, pid);
		size_t first = i, end = i;
		char esc[HT_ESC_SIZE(64)];
		int width = 36;

		while (end < t->nthreads && rows[end]->w.pid == pid)
			end++;
		if (ht_exit_view_threads_per_vcpu(rows + i, end - i, per_vcpu + i)) {
			ret = -ENOMEM;
			goto out;
		}
		for (size_t j = i; j < end; j++) {
			int n = ht_report_vcpu_label(label, sizeof(label), rows[j], per_vcpu[j], reader);

			width = n > width ? n : width;
		}
		printf("\nVM %s%s(pid %u)\n", vm ? ht_escape(esc, sizeof(esc), vm, HT_ESC_TEXT) : "", vm ? " " : "", pid);
		ops->columns(ctx, width);
		for (; i < end; i++) {
			ht_report_vcpu_label(label, sizeof(label), rows[i], per_vcpu[i], reader);
			ops->thread(ctx, label, width, rows[i]);
		}
		ops->vm_end(ctx, width, i - first);
	}
out:
	free(rows);
	free(per_vcpu);
	return ret;
}

void ht_report_vcpu_row_start(FILE *out, bool json, const struct ht_vcpu_thread_row *r, struct ht_reader *reader)
{
	const char *vm = ht_reader_vm_name(reader, r->w.pid), *tn = ht_reader_thread_name(reader, r->w.pid, r->w.tid);

	if (!json) {
		fprintf(out, "%u,", r->w.pid);
		ht_csv_fputs(out, vm ? vm : "");
		fprintf(out, ",%u,%u,", (unsigned int)r->w.vcpu, r->w.tid);
		ht_csv_fputs(out, tn ? tn : "");
		fprintf(out, ",%llu,%llu,%llu,%d", (unsigned long long)r->a.start_ns, (unsigned long long)r->from_ns,
			(unsigned long long)r->a.as_of_ns, r->gone);
		return;
	}
	fprintf(out, "{\"vm_pid\":%u,\"vm_name\":", r->w.pid);
	ht_json_fputs(out, vm ? vm : "");
	fprintf(out, ",\"vcpu\":%u,\"tid\":%u,\"thread_name\":", (unsigned int)r->w.vcpu, r->w.tid);
	ht_json_fputs(out, tn ? tn : "");
	/* Times as decimal strings, as report --json writes exit_ns: exact past 2^53 (104 days of uptime). */
	fprintf(out, ",\"thread_start_ns\":\"%llu\",\"from_ns\":\"%llu\",\"to_ns\":\"%llu\",\"ended\":%s",
		(unsigned long long)r->a.start_ns, (unsigned long long)r->from_ns, (unsigned long long)r->a.as_of_ns,
		r->gone ? "true" : "false");
}
