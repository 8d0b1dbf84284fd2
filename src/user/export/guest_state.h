/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the kernel-shaped exports need of the project's guest events
 * (decoded by decode/guest_event.h) that no single event carries: the task
 * running on each guest CPU, the name of each guest task, the guest CPU a
 * vCPU thread ran last, the call sites of the calls still open per task.
 * Each record is decoded here, and its event completed with what they tell
 * (the module event's CPU, a function exit's call site and pairing).
 *
 * Memory grows with the guest tasks, CPUs and open calls the trace names,
 * never with its records.
 */
#ifndef HT_EXPORT_GUEST_STATE_H
#define HT_EXPORT_GUEST_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include "decode/decoder.h"
#include "decode/guest_event.h"

/* Calls deeper than this in one guest task are not remembered (their exits get call site 0). */
#define HT_GEV_MAX_DEPTH 256

struct ht_guest_state;

struct ht_guest_state *ht_guest_state_new(const struct ht_decoder *dec);
void ht_guest_state_free(struct ht_guest_state *s);
/*
 * Decodes r into ev (ev->kind HT_GEV_NONE when it is no project event) and
 * updates the state with it: run this once per record, in file order. A
 * sched_switch's view of the CPU before it (ht_guest_cpu_task) must be read
 * before. 0, or -ENOMEM.
 */
int ht_guest_state_feed(struct ht_guest_state *s, const struct ht_record *r, struct ht_gev *ev);
/* The guest task last switched in on guest CPU cpu of VM pid, or -1 when unknown. */
int64_t ht_guest_cpu_task(struct ht_guest_state *s, uint32_t pid, uint32_t cpu);
/* The name of guest task tid of VM pid ("" when unknown; tid 0 is swapper/CPU). */
void ht_guest_task_comm(struct ht_guest_state *s, uint32_t pid, uint32_t tid, uint32_t cpu,
			char out[HT_GEV_COMM_LEN + 1]);

#endif
