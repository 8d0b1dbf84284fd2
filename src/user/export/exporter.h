/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The output formats of `convert` behind one interface, so its read loop is
 * written once: each format's writer adapted to the same calls.
 */
#ifndef HT_EXPORTER_H
#define HT_EXPORTER_H

#include <stddef.h>
#include "decode/decoder.h"
#include "export/convert_options.h"
#include "tracefile/trace_reader.h"

struct ht_exporter {
	/*
	 * Creates the output, not yet under its name, into *out. dec (opened on
	 * the same file) outlives the writer. 0, or < 0 with err; on failure the
	 * caller abandons *out.
	 */
	int (*open)(const struct ht_convert_config *cfg, const struct ht_file_header *h, struct ht_decoder *dec,
		    void **out, char *err, size_t errlen);
	/* One selected record; reader names VMs and threads. 0, or < 0 with err. */
	int (*add)(void *w, const struct ht_record *r, struct ht_reader *reader, char *err, size_t errlen);
	/*
	 * One switch of a vCPU thread (record --vcpu-sched): 0 written, 1 not
	 * shown, < 0 with err. NULL for a format that holds hypercalls only.
	 */
	int (*add_switch)(void *w, const struct ht_vcpu_switch *sw, struct ht_reader *reader, char *err,
			  size_t errlen);
	/*
	 * One wake-up of a halted vCPU thread (record --wakeups): 0 written, <
	 * 0 with err. NULL for a format that does not show wake-ups.
	 */
	int (*add_wakeup)(void *w, const struct ht_vcpu_wakeup *wk, struct ht_reader *reader, char *err,
			  size_t errlen);
	/*
	 * One interrupt delivery to a vCPU thread (record --wakeups, format 14):
	 * 0 written, 1 not shown (counted by the format), < 0 with err. NULL
	 * for a format that does not show them.
	 */
	int (*add_irq)(void *w, const struct ht_vcpu_irq *d, struct ht_reader *reader, char *err, size_t errlen);
	/*
	 * One vCPU thread's account from an EXITS block (record --exits): 0
	 * written, 1 not shown, < 0 with err. NULL for a format that does not
	 * show the account.
	 */
	int (*add_account)(void *w, const struct ht_vcpu_wait_rec *row, struct ht_reader *reader, char *err,
			   size_t errlen);
	/*
	 * One exit of a booting VM (record --boot), selected by its VM, in file
	 * order: the format keeps its VM's boot phases and writes them at close.
	 * 0, or < 0 with err. NULL for a format that does not show boots.
	 */
	int (*add_boot_exit)(void *w, const struct ht_boot_exit *be, struct ht_reader *reader, char *err,
			     size_t errlen);
	/*
	 * One record of a guest's own trace (nr 1150..1152, guest/boottrace)
	 * of a selected VM, in file order, selected as its boot is (the VM's
	 * whole trace, whatever --vcpu, --nr and the time window select): the
	 * format keeps the traces and draws their initcalls at close. The
	 * record also goes to add if selected. 0, or < 0 with err. NULL for a
	 * format that does not show initcalls.
	 */
	int (*add_guest_trace)(void *w, const struct ht_record *r, struct ht_reader *reader, char *err, size_t errlen);
	/*
	 * Completes the output and gives it its name; frees w whatever the result.
	 * What the output could not hold as recorded goes to stderr as warnings.
	 * 0, or < 0 with err (then the name is as it was).
	 */
	int (*close)(void *w, const struct ht_read_status *st, const char *source, const char *selection, char *err,
		     size_t errlen);
	/* Frees w and what it wrote: the output's name stays as it was. NULL is fine. */
	void (*abandon)(void *w);
};

/* The interface of FORMAT. */
const struct ht_exporter *ht_exporter_of(enum ht_convert_format format);

#endif
