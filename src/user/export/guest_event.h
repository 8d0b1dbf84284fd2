/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The project's guest kernel events (nr 1100-1106, include/hypertrace/guest.h)
 * as the kernel-shaped exports need them: one decoded struct per record,
 * read through the catalog (the one definition of where each field sits),
 * and what a viewer needs that no single event carries -- the task running
 * on each guest CPU, the name of each guest task, the guest CPU a vCPU
 * thread ran last, the call sites of the calls still open per task.
 *
 * Memory grows with the guest tasks, CPUs and open calls the trace names,
 * never with its records.
 */
#ifndef HT_EXPORT_GUEST_EVENT_H
#define HT_EXPORT_GUEST_EVENT_H

#include <stdbool.h>
#include <stdint.h>
#include "decode/decoder.h"

enum ht_gev_kind {
	HT_GEV_NONE = 0, /* not one of the project's guest events */
	HT_GEV_MODULE,
	HT_GEV_SCHED_SWITCH,
	HT_GEV_SCHED_WAKEUP,
	HT_GEV_IRQ_ENTRY,
	HT_GEV_IRQ_EXIT,
	HT_GEV_FUNC_ENTRY,
	HT_GEV_FUNC_EXIT,
};

/* Calls deeper than this in one guest task are not remembered (their exits get call site 0). */
#define HT_GEV_MAX_DEPTH 256

/* A guest function call still open in its task: the function and where it was called from. */
struct ht_gev_call {
	uint64_t addr, site;
};

/* Task names as the kernel keeps them: TASK_COMM_LEN bytes, NUL-terminated here. */
#define HT_GEV_COMM_LEN 16

struct ht_gev {
	enum ht_gev_kind kind;
	const struct ht_event_desc *desc; /* the catalog's description */
	uint32_t cpu;                     /* guest CPU that sent it (module: the vCPU's last known) */
	union {
		struct {
			uint32_t prev_tid, next_tid, prev_state;
			int32_t prev_prio, next_prio; /* as ftrace prints them: 0..139, -1 deadline */
			char next_comm[HT_GEV_COMM_LEN + 1];
		} sw;
		struct {
			uint32_t tid, target_cpu;
			int32_t prio;
			char comm[HT_GEV_COMM_LEN + 1];
		} wake;
		struct {
			uint32_t irq;
			int64_t ret;
			char name[33];
		} irq;
		struct {
			uint64_t addr, call_site; /* exit: call_site of the matching entry, 0 if unknown */
			uint64_t ret;
			uint32_t tid;
			/*
			 * Entry: the call is remembered as open (not beyond the depth
			 * kept). Exit: it closes a call open in its task (else it was
			 * entered before the recording, or beyond that depth).
			 */
			bool matched;
			/*
			 * Exit: the calls opened after the one it closes, whose exits
			 * were lost (they close with it), innermost last; valid until
			 * the next record is fed.
			 */
			uint32_t nlost;
			const struct ht_gev_call *lost;
		} func;
		struct {
			uint32_t state; /* 1 loaded, 0 unloading */
		} mod;
	} u;
};

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
