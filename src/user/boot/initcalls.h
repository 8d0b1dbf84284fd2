/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A guest kernel's initcalls, from its own boot-time trace events (the
 * lines guest/boottrace sent: decode/guest_trace.h):
 *
 *   initcall_level: level=NAME            the kernel enters a level
 *   initcall_start: func=SYMBOL           an initcall starts
 *   initcall_finish: func=SYMBOL ret=N    it returns
 *
 * SYMBOL is the kernel's %pS: "name+0x0/0x40", with " [module]" for a
 * module's init. The levels run in one task, one after the other (console
 * from the boot CPU's idle task, the others from kernel_init); an initcall
 * of that task between two level lines is the first level's. A module's
 * init (its SYMBOL names the module, or another task runs it) belongs to no
 * level: to "modules". A level lasts until the next one starts; the last
 * until its last initcall returns. Times are the trace's; the VM's clock
 * fit puts them on the host's.
 */
#ifndef HT_BOOT_INITCALLS_H
#define HT_BOOT_INITCALLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "decode/guest_trace.h"

#define HT_INITCALL_MODULES (-1) /* level of a module's init */

struct ht_initcall {
	const char *name;      /* the function (inside the trace's line text) */
	size_t name_len;
	const char *module;    /* its module, or NULL if built in */
	size_t module_len;
	int level;             /* index in levels, or HT_INITCALL_MODULES */
	uint32_t tid, cpu;
	uint64_t start_ns, end_ns; /* the trace's clock; end_ns valid if finished */
	bool finished;
	long long ret;
};

struct ht_initcall_level {
	const char *name;
	size_t name_len;
	uint32_t tid;
	uint64_t start_ns, end_ns;
	size_t initcalls;
	uint64_t in_initcalls_ns; /* the sum of its finished initcalls' lengths */
	bool went_back;           /* the next level began before it: it ends where it began */
};

struct ht_initcalls {
	struct ht_initcall_level *levels;
	size_t nlevels, levels_cap;
	struct ht_initcall *calls;     /* in their start's order */
	size_t ncalls, calls_cap;
	uint64_t unfinished;           /* started, no finish seen (a crash, or lost) */
	uint64_t finish_unmatched;     /* a finish with no start of its task */
	uint64_t levels_back;          /* levels that began before the one before them (it ends where it began) */
	uint64_t module_calls;
	uint64_t module_ns;            /* modules' finished initcalls' lengths */
};

/* From the lines of g (which must outlive out: names point into them). 0 or -ENOMEM. */
int ht_initcalls_build(const struct ht_guest_trace *g, struct ht_initcalls *out);
void ht_initcalls_free(struct ht_initcalls *c);

#endif
