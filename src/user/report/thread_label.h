/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * How report names VM threads: every --dump line "pid P (vm NAME) tid T
 * (THREAD)", the vCPU threads' text views "vCPU 0 (CPU 0/KVM, tid 572)".
 */
#ifndef HT_REPORT_THREAD_LABEL_H
#define HT_REPORT_THREAD_LABEL_H

#include <stdbool.h>
#include <stdio.h>
#include "hypertrace/trace_file.h"

/* Names a VM owner chose are escaped, never raw on the terminal; id may be NULL (no IDENTITY block). */
void ht_print_thread_label(FILE *out, __u32 pid, __u32 tid, const struct ht_identity *id);

struct ht_vcpu_thread_row;
struct ht_reader;
/*
 * A vCPU thread's label for the text views: "vCPU 0 (CPU 0/KVM, tid 572,
 * ended)", with its start if its vCPU had vcpu_threads > 1 threads; its
 * length, as snprintf's.
 */
int ht_report_vcpu_label(char *buf, size_t len, const struct ht_vcpu_thread_row *r, size_t vcpu_threads,
			 struct ht_reader *reader);

/*
 * The text views of the vCPU threads (--vcpu-time, --halts): per VM in pid
 * order, a line "VM NAME (pid P)", then columns(ctx, width) (the column
 * heads, the labels' column width wide: the VM's longest label), then
 * thread(ctx, label, width, row) per thread in thread order, then
 * vm_end(ctx, width, n) after its n threads (a sum row, say).
 */
struct ht_exit_table;
struct ht_vcpu_view_ops {
	void (*columns)(void *ctx, int width);
	void (*thread)(void *ctx, const char *label, int width, const struct ht_vcpu_thread_row *r);
	void (*vm_end)(void *ctx, int width, size_t nthreads);
};
/* 0 or -ENOMEM. */
int ht_report_vcpu_view(const struct ht_exit_table *t, struct ht_reader *reader, const struct ht_vcpu_view_ops *ops,
			void *ctx);

/*
 * The columns that start each vCPU thread's row of --vcpu-time's and
 * --halts' CSV and JSON: who the thread is and the interval its numbers
 * cover. ht_report_vcpu_row_start writes them (CSV: up to "ended", no comma
 * after; JSON: "{" up to "ended":..., no comma after); the caller adds its
 * own columns and ends the row. Names escaped, times exact.
 */
#define HT_REPORT_VCPU_ROW_CSV_HEAD "vm_pid,vm_name,vcpu,tid,thread_name,thread_start_ns,from_ns,to_ns,ended"
void ht_report_vcpu_row_start(FILE *out, bool json, const struct ht_vcpu_thread_row *r, struct ht_reader *reader);

#endif
