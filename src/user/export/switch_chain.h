/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The chain of a guest CPU's sched_switch events as an export writes them:
 * each switch's prev_tid must be the task the CPU's last switch put there.
 * A switch lost in between (the guest's buffer dropped it, or the module
 * was reloaded) breaks the chain: the next switch's prev_tid is another
 * task. A viewer that follows the chain then never ends the task it last
 * saw switched in: Perfetto's trace processor counts
 * mismatched_sched_switch_tids and leaves that task's sched slice open to
 * the end of the trace (ftrace_sched_event_tracker.cc, PushSchedSwitch),
 * Trace Compass keeps it running (SchedSwitchHandler sets the states of
 * prev_tid and next_tid and never looks at the CPU's current thread).
 *
 * An export closes a broken chain with two switches of its own
 * (docs/exports.md, "A lost guest switch"):
 *   - at the time the chain was last known (the switch that put the task
 *     there, or the guest module's unload after it: report --sched counts
 *     the task's run until then), from that task, in state
 *     HT_CHAIN_UNKNOWN_STATE, to the stand-in HT_CHAIN_UNKNOWN_COMM: the
 *     gap is the stand-in's on the CPU;
 *   - at the breaking switch's time, from the stand-in to its prev_tid, so
 *     that the breaking switch follows the chain.
 * Memory grows with the guest CPUs the trace names, never with its records.
 */
#ifndef HT_EXPORT_SWITCH_CHAIN_H
#define HT_EXPORT_SWITCH_CHAIN_H

#include <stdint.h>

/*
 * The prev_state of a task whose switch-out was lost: no kernel reports it
 * (above TASK_REPORT_MAX, 0x100, and any TASK_REPORT bit). Perfetto's
 * trace processor decodes it, on the kernels since 4.14 every export
 * declares, as invalid (task_state.cc: raw & 0xfe00), a thread state
 * without a name, which the UI shows as "Unknown"; Trace Compass as
 * neither running, waiting nor dead (ProcessStatus.getStatusFromKernelState):
 * WAIT_UNKNOWN.
 */
#define HT_CHAIN_UNKNOWN_STATE 0x200u
/* The stand-in's name (a comm: at most 15 bytes). */
#define HT_CHAIN_UNKNOWN_COMM "<switch lost>"
/* An ftrace prio for the stand-in: a nice-0 task's. */
#define HT_CHAIN_UNKNOWN_PRIO 120

/* Where a broken chain was last known. */
struct ht_chain_break {
	uint32_t last_tid; /* the task the CPU's last switch put there */
	int32_t last_prio; /* its prio, as that switch gave it */
	uint64_t known_ns; /* that switch's time, or the module's first unload after it */
};

struct ht_switch_chain;

struct ht_switch_chain *ht_switch_chain_new(void);
void ht_switch_chain_free(struct ht_switch_chain *c);
/*
 * Follows a switch of VM pid on the CPU cpu the export shows it on, at ts:
 * 1 when its prev_tid breaks the chain (brk says where it was last known),
 * 0 when it follows it or starts it (the CPU's first switch), -ENOMEM.
 */
int ht_switch_chain_follow(struct ht_switch_chain *c, uint32_t pid, uint32_t cpu, uint32_t prev_tid,
			   uint32_t next_tid, int32_t next_prio, uint64_t ts, struct ht_chain_break *brk);
/* VM pid's guest module unloaded at ts: its CPUs' tasks are known to have run there until then. */
void ht_switch_chain_stopped(struct ht_switch_chain *c, uint32_t pid, uint64_t ts);
/* The chain breaks of VM pid, and of every VM. */
unsigned long long ht_switch_chain_breaks(const struct ht_switch_chain *c, uint32_t pid);
unsigned long long ht_switch_chain_total(const struct ht_switch_chain *c);

#endif
