/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The VMs' boots (record --boot) in the Chrome trace JSON: fed the boot
 * exits as they come, it writes at the end, per VM, each phase it reached
 * (boot/boot_timeline.h) as a complete event ("ph":"X") on a track "boot
 * phases" of the VM's process, named by the phase, its args how much
 * earlier it may have begun, its exits and its vCPUs' time per state; and,
 * if the VM's vCPU threads ended (the VM stopped, or its guest crashed), an
 * instant event "boot ended" there. The phases follow each other: each
 * ends, in the doubles the viewers compare, no later than the next starts.
 */
#ifndef HT_CHROME_BOOT_H
#define HT_CHROME_BOOT_H

#include <stdint.h>
#include <stdio.h>
#include "export/chrome_guest.h"
#include "hypertrace/record.h"

/* The track's tid: no thread has it (Linux's tids are below PID_MAX_LIMIT, 2^22). */
#define HT_CHROME_BOOT_TID 0x400000u

struct ht_chrome_boot;

/* Names the VM process pid (a "process_name" event) if not named yet: 0 or -ENOMEM. */
typedef int (*ht_chrome_name_vm_fn)(void *arg, uint32_t pid);

struct ht_chrome_boot *ht_chrome_boot_new(void);
/* One boot exit, in file order. 0 or -ENOMEM. */
int ht_chrome_boot_add(struct ht_chrome_boot *b, const struct ht_boot_exit *be);
/* Writes every VM's phases; t0 is ts 0 (the recording's start). 0 or -ENOMEM. */
int ht_chrome_boot_write(const struct ht_chrome_boot *b, FILE *f, ht_chrome_sep_fn sep, ht_chrome_name_vm_fn name_vm,
			 void *arg, uint64_t t0);
void ht_chrome_boot_free(struct ht_chrome_boot *b);

#endif
