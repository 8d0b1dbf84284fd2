// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "report/thread_label.h"

#include "common/escape.h"
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
