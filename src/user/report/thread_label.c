// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "report/thread_label.h"

#include "common/escape.h"

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
