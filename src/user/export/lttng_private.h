/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the files of the LTTng export share (nothing else includes it): the
 * exporter's state, the event classes, and the functions each piece writes
 * with (named lt_*). lttng_export.c: the host trace opened, each record,
 * the export abandoned; lttng_payload.c: payloads; lttng_queue.c: the queue
 * that puts events in time order; lttng_threads.c: which thread the host
 * trace says runs on each host CPU; lttng_switch.c: the host's switches of
 * vCPU threads; lttng_wakeup.c: the wake-ups of halted vCPU threads and
 * the interrupts delivered to them; lttng_close.c: the end; lttng_guest.c:
 * each VM's guest trace and its events; lttng_boot.c: the VMs' boot phases and their guests'
 * initcalls, in the host trace's boot stream.
 */
#ifndef HT_EXPORT_LTTNG_PRIVATE_H
#define HT_EXPORT_LTTNG_PRIVATE_H

#include <stdbool.h>
#include <stdint.h>
#include "boot/boot_timeline.h"
#include "decode/guest_trace.h"
#include "export/guest_state.h"
#include "export/id_pair_table.h"
#include "export/initcall_spans.h"
#include "export/lttng_export.h"
#include "export/lttng_trace.h"
#include "export/switch_chain.h"
#include "hypertrace/guest.h"
#include "tracefile/output_file.h"

/*
 * Records reach the file in kvm_entry order, and a record's events span its
 * exit to its entry: an event waits until the entries have moved this far
 * past it (no hypercall of a real trace is that long), or until this many
 * wait; one that comes later than its stream is raised and counted.
 */
#define ORDER_WINDOW_NS 2000000000ull
#define ORDER_MAX_PENDING 32768u

#define MAX_FUNCTIONS 1024u  /* event classes of guest functions per guest trace */

/* lttng-modules' prio is the task's prio - MAX_RT_PRIO; ftrace's, which the module sends, is prio itself. */
#define LTTNG_PRIO_OFFSET 100

struct pending {
	uint64_t ts, seq; /* time order; insertion order among equal times */
	struct ht_lttng_trace *trace;
	uint32_t cpu;
	int id;
	struct ht_lttng_ctx ctx;
	struct ht_lttng_ctx next; /* a host sched_switch's: the thread switched in */
	uint8_t mark;             /* enum mark */
	uint8_t len;
	unsigned char payload[HT_LTTNG_MAX_PAYLOAD];
};

/* What a queued host event also does when it is written. */
enum mark {
	MARK_NONE,
	MARK_FIRST_LINK, /* a VM's first vmsync_gh_host: its CPUs' threads are restated just after it */
	MARK_RESTATE,    /* not an event: restate the thread of host CPU cpu */
};

/* Event classes of the host trace. */
struct host_classes {
	int exit, hypercall, entry, gh_host, hg_host, sched_switch, statedump, wakeup, irq;
};

/* lttng-modules' sched_switch (events/sched.h, kernels 4.4 and newer), for the host and the guests alike. */
static const char sched_switch_fields[] =
	"\t\t" HT_TSDL_CHAR " _prev_comm[16];\n\t\t" HT_TSDL_S32 " _prev_tid;\n\t\t" HT_TSDL_S32
	" _prev_prio;\n\t\t" HT_TSDL_S64 " _prev_state;\n\t\t" HT_TSDL_CHAR " _next_comm[16];\n\t\t" HT_TSDL_S32
	" _next_tid;\n\t\t" HT_TSDL_S32 " _next_prio;\n";

/*
 * The trace file does not keep priorities: a host sched_switch says 20, the
 * value lttng-modules writes for a nice-0 task (prio 120 - MAX_RT_PRIO).
 */
#define HOST_UNKNOWN_PRIO 20
/* The kernel's TASK_REPORT_MAX: what lttng-modules' prev_state says of a preempted task. */
#define TASK_REPORT_MAX 0x100u

/* The last host sched_switch queued on a host CPU: a switch between two vCPU threads is two records. */
struct host_cpu {
	uint64_t ts;
	uint32_t prev_tid, next_tid;
};

/* What the host trace, as written so far, says runs on a host CPU. */
struct cpu_thread {
	uint32_t cpu;
	struct ht_lttng_ctx cur;
};

/* lttng-modules' lttng_statedump_process_state (events/lttng-statedump.h, 2.13). */
static const char statedump_fields[] =
	"\t\t" HT_TSDL_S32 " _tid;\n\t\t" HT_TSDL_S32 " _pid;\n\t\t" HT_TSDL_S32 " _ppid;\n\t\t" HT_TSDL_CHAR
	" _name[16];\n\t\t" HT_TSDL_S32 " _type;\n\t\t" HT_TSDL_S32 " _mode;\n\t\t" HT_TSDL_S32
	" _submode;\n\t\t" HT_TSDL_S32 " _status;\n\t\t" HT_TSDL_U32 " _cpu;\n\t\t" HT_TSDL_X64
	" _file_table_address;\n";
/* Its enum values (lttng-statedump-impl.c) that the export writes. */
#define LTTNG_USER_THREAD 0
#define LTTNG_MODE_UNKNOWN 5
#define LTTNG_NONE 0
#define LTTNG_UNNAMED 0 /* the status: the trace file does not say what the thread did at the start */

/* Event classes of a guest trace. */
struct guest_classes {
	int sched_switch, sched_wakeup, irq_entry, irq_exit, module, gh_guest, hg_guest, func_other[2];
};

struct fn_class {
	int id[2]; /* entry, exit */
};

struct vcpu_of {
	uint32_t vcpu_id;
};

struct guest {
	uint32_t pid;
	uint32_t cnt; /* vmsync message counter: two per hypertraced hypercall */
	char dirname[96];
	struct ht_lttng_trace *trace;
	struct guest_classes cls;
	struct ht_id_pair_table *functions; /* (addr >> 32, addr) -> struct fn_class */
	struct ht_id_pair_table *vcpus;     /* (0, guest CPU) -> struct vcpu_of: KVM's vcpu_id of a guest CPU */
	unsigned int nfunctions;
	uint64_t first_ns, last_ns;
};

struct host_thread {
	char procname[HT_LTTNG_COMM_LEN + 1];
	uint32_t pid, tid;
	uint32_t first_cpu; /* where the host trace first shows it */
	int64_t on_cpu;     /* where the host trace says it runs, or -1 */
	bool written;       /* the host trace shows it */
};

/* Event classes of the host trace's boot stream, declared at the end where there is something to write. */
struct boot_classes {
	int phase_begin, phase_end, ended, level_begin, level_end, call_begin, call_end, no_return;
};

struct ht_lttng_export {
	struct ht_output out;
	char dir[4096];
	struct ht_file_header hdr;
	const struct ht_decoder *dec;
	struct ht_guest_state *gstate;
	struct ht_lttng_trace *host;
	struct host_classes hcls;
	bool exit_has_vcpu; /* kvm_x86_exit's fields for the host's kernel (5.10 and newer: 8) */
	struct ht_id_pair_table *guests;  /* (host pid, 0) -> struct guest */
	struct ht_id_pair_table *threads; /* (host pid, host tid) -> struct host_thread */
	struct ht_id_pair_table *cpus;    /* (0, host CPU) -> struct host_cpu */
	struct ht_id_pair_table *running; /* (0, host CPU) -> struct cpu_thread */
	struct ht_switch_chain *chain;   /* each guest stream's sched_switch events as written */
	unsigned long long inferred;     /* sched_switch events the records prove, not recorded */
	unsigned long long restated;     /* sched_switch events from a CPU's thread to itself */
	struct pending *heap;
	size_t npending, cap;
	uint64_t seq, last_entry_ns, first_ns, last_ns;
	unsigned long long records;
	unsigned long long forged; /* records of the guest module's nr it did not send: host events only */
	struct ht_boot_timelines *boots;  /* the selected VMs' boot exits (record --boot), or NULL */
	struct ht_guest_traces *traces;   /* the selected VMs' boot-time traces (guest/boottrace), or NULL */
	struct ht_id_pair_table *vm_labels; /* (host pid, 0) -> its label, as the reader names it: boot and initcall events */
	struct boot_classes bcls;
	struct ht_lttng_counts counts;
};

struct payload {
	unsigned char buf[HT_LTTNG_MAX_PAYLOAD];
	size_t len;
};

/* lttng_export.c */
int lt_common_env(struct ht_lttng_trace *t, const char *hostname);
/* lttng_payload.c */
void lt_put_comm(struct payload *p, const char *s);
void lt_put_string(struct payload *p, const char *s);
void lt_put_u32(struct payload *p, uint32_t v);
void lt_put_u64(struct payload *p, uint64_t v);
/* lttng_queue.c */
int lt_push(struct ht_lttng_export *x, struct ht_lttng_trace *trace, uint32_t cpu, uint64_t ts, int id,
	    const struct ht_lttng_ctx *ctx, const struct payload *p);
int lt_push_switch(struct ht_lttng_export *x, struct ht_lttng_trace *trace, uint32_t cpu, uint64_t ts, int id,
		   const struct ht_lttng_ctx *ctx, const struct ht_lttng_ctx *next, const struct payload *p);
void lt_mark_last_pushed(struct ht_lttng_export *x, enum mark mark);
int lt_release(struct ht_lttng_export *x, bool drain, char *err, size_t errlen);
int lt_release_after(struct ht_lttng_export *x, uint64_t ts, char *err, size_t errlen);
/* lttng_threads.c */
void lt_idle_ctx(uint32_t cpu, struct ht_lttng_ctx *c);
struct host_thread *lt_thread_entry(struct ht_lttng_export *x, uint32_t pid, uint32_t tid, const char *procname);
const char *lt_host_procname(struct ht_lttng_export *x, uint32_t pid, uint32_t tid, struct ht_reader *reader);
int lt_host_switch_class(struct ht_lttng_export *x);
int lt_thread_runs(struct ht_lttng_export *x, uint32_t cpu, uint64_t ts, const struct ht_lttng_ctx *n,
		   bool switched, char *err, size_t errlen);
int lt_queue_restatements(struct ht_lttng_export *x, uint64_t ts);
int lt_write_restatement(struct ht_lttng_export *x, uint32_t cpu, uint64_t ts, char *err, size_t errlen);
/* lttng_boot.c */
int lt_write_boots(struct ht_lttng_export *x, char *err, size_t errlen);
void lt_free_boots(struct ht_lttng_export *x);
/* lttng_guest.c */
int lt_guest_events(struct ht_lttng_export *x, struct guest *g, const struct ht_record *r,
		    const struct ht_gev *ev, int64_t task_before, uint64_t entry_ns);
struct guest *lt_guest_of(struct ht_lttng_export *x, const struct ht_record *r, struct ht_reader *reader,
			  char *err, size_t errlen, int *ret);

#endif
