/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A guest kernel's initcalls (its own boot-time trace, replayed by
 * guest/boottrace: boot/initcalls.h) in the Chrome trace JSON, on the
 * host's clock (export/initcall_spans.h): per VM whose trace has clock
 * pairs, a complete event ("ph":"X") per initcall level on a track
 * "initcall levels" of the VM's process, and one per initcall that returned
 * on a track "initcalls" (then "initcalls 2" and on where they overlap),
 * named by its function (" [module]" for a module's), with its level, ret,
 * guest tid and CPU as args; an initcall without its return is an instant
 * event ("ph":"I") "NAME (no return)" at its start. The guest's bytes are
 * escaped for JSON; on each track an event ends, in the doubles the viewers
 * compare, no later than the next starts.
 */
#ifndef HT_CHROME_INITCALLS_H
#define HT_CHROME_INITCALLS_H

#include <stdint.h>
#include <stdio.h>
#include "decode/guest_trace.h"
#include "export/chrome_boot.h"
#include "export/chrome_guest.h"
#include "export/initcall_spans.h"

/* The tracks' tids, after the boot's (HT_CHROME_BOOT_TID): no Linux thread has them. */
#define HT_CHROME_INITCALL_LEVELS_TID (HT_CHROME_BOOT_TID + 1)
#define HT_CHROME_INITCALLS_TID(lane) (HT_CHROME_BOOT_TID + 2 + (lane))

/*
 * Finishes t (the records of nr 1150..1152 of the selected VMs, in file
 * order) and writes every VM's initcalls; t0 is ts 0 (the recording's
 * start). What is not drawn is added to counts. 0 or -ENOMEM.
 */
int ht_chrome_initcalls_write(struct ht_guest_traces *t, FILE *f, ht_chrome_sep_fn sep, ht_chrome_name_vm_fn name_vm,
			      void *arg, uint64_t t0, struct ht_initcall_counts *counts);

#endif
