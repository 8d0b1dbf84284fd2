/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the files of the Perfetto export share (nothing else includes it):
 * Perfetto's field numbers, the exporter's state, and the functions each
 * piece writes with (named pf_*). perfetto_export.c: the export itself
 * (open, each record's host slices, close, abandon) and the names of the
 * records' and switches' arguments; perfetto_packets.c: the packets, deflated
 * in bundles, and the interned names; perfetto_tracks.c: the tracks, their
 * descriptors and the events on them; perfetto_fields.c: a decoded event's
 * fields and a function's name; perfetto_meta.c: what the trace says of
 * itself, before the first event and at the end; perfetto_switch.c: the
 * host's switches of vCPU threads; perfetto_wakeup.c: their wake-ups from
 * halts; perfetto_account.c: the vCPU account;
 * perfetto_guest.c: the guests' scheduling, IRQs, functions and other
 * events; perfetto_boot.c: the VMs' boot phases; perfetto_initcalls.c: the
 * guests' initcalls.
 */
#ifndef HT_EXPORT_PERFETTO_PRIVATE_H
#define HT_EXPORT_PERFETTO_PRIVATE_H

#include <stdbool.h>
#include <stdint.h>
#include "boot/boot_timeline.h"
#include "common/escape.h"
#include "common/hashmap.h"
#include "common/util.h"
#include "common/vcpu_states.h"
#include "decode/guest_trace.h"
#include "export/guest_state.h"
#include "export/id_pair_table.h"
#include "export/perfetto_export.h"
#include "export/protobuf.h"
#include "export/switch_chain.h"
#include "hypertrace/guest.h"
#include "tracefile/output_file.h"

/* Field numbers of third_party/perfetto/perfetto_trace.proto (Perfetto's own). */
enum {
	TRACE_PACKET = 1,
	PKT_FTRACE_EVENTS = 1, PKT_CLOCK_SNAPSHOT = 6, PKT_TIMESTAMP = 8, PKT_SEQ_ID = 10, PKT_TRACK_EVENT = 11,
	PKT_INTERNED = 12, PKT_SEQ_FLAGS = 13, PKT_SYSTEM_INFO = 45, PKT_COMPRESSED = 50, PKT_DEFAULTS = 59,
	PKT_TRACK_DESCRIPTOR = 60, PKT_FIRST_ON_SEQ = 87, PKT_TRACE_ATTRIBUTES = 126,
	DEF_TIMESTAMP_CLOCK_ID = 58,
	CS_CLOCKS = 1, CS_PRIMARY_TRACE_CLOCK = 2, CLK_ID = 1, CLK_TIMESTAMP = 2,
	SI_UTSNAME = 1, UTS_SYSNAME = 1, UTS_RELEASE = 3, UTS_MACHINE = 4,
	TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_THREAD = 4, TD_PARENT = 5, TD_COUNTER = 8, TD_CHILD_ORDERING = 11,
	TD_SIBLING_RANK = 12, TD_THREAD_ORDERING = 20,
	CD_UNIT_NAME = 6, CD_Y_AXIS_SHARE_KEY = 7,
	PD_PID = 1, PD_NAME = 6,
	THD_PID = 1, THD_TID = 2, THD_NAME = 5,
	TE_DEBUG = 4, TE_TYPE = 9, TE_NAME_IID = 10, TE_TRACK = 11, TE_NAME = 23, TE_COUNTER_DOUBLE = 44, TE_FLOW = 47,
	TE_TERM_FLOW = 48,
	DA_NAME_IID = 1, DA_UINT = 3, DA_INT = 4, DA_STRING = 6, DA_POINTER = 7, DA_NAME = 10, DA_DICT = 11,
	ID_EVENT_NAMES = 2, ID_DEBUG_NAMES = 3, IN_IID = 1, IN_NAME = 2,
	FB_CPU = 1, FB_EVENT = 2, FB_FTRACE_CLOCK = 5,
	FE_TIMESTAMP = 1, FE_PID = 2, FE_SCHED_SWITCH = 4, FE_SCHED_WAKEUP = 17, FE_IRQ_ENTRY = 36, FE_IRQ_EXIT = 37,
	TA_ATTRIBUTE = 1, TA_KEY = 1, TA_LONG = 2, TA_STRING = 3,
	/* SchedSwitchFtraceEvent */
	SS_PREV_COMM = 1, SS_PREV_PID = 2, SS_PREV_PRIO = 3, SS_PREV_STATE = 4, SS_NEXT_COMM = 5, SS_NEXT_PID = 6,
	SS_NEXT_PRIO = 7,
	/* SchedWakeupFtraceEvent, IrqHandlerEntryFtraceEvent, IrqHandlerExitFtraceEvent */
	WAKE_COMM = 1, WAKE_PID = 2, WAKE_PRIO = 3, WAKE_SUCCESS = 4, WAKE_TARGET_CPU = 5,
	IRQ_ENTRY_IRQ = 1, IRQ_ENTRY_NAME = 2, IRQ_EXIT_IRQ = 1, IRQ_EXIT_RET = 2,
};
enum { SLICE_BEGIN = 1, SLICE_END = 2, INSTANT = 3, COUNTER = 4 };
enum { SEQ_INCREMENTAL_STATE_CLEARED = 1, SEQ_NEEDS_INCREMENTAL_STATE = 2 };
/* BuiltinClock; FtraceClock; TrackDescriptor's ChildTracksOrdering and ThreadOrdering. */
enum { CLOCK_REALTIME_ID = 1, CLOCK_MONOTONIC_ID = 3, CLOCK_SEQUENCE_ID = 64 };
enum { FTRACE_CLOCK_GLOBAL = 2 };
enum { CHILD_ORDERING_EXPLICIT = 3, THREAD_ORDERING_EXPLICIT = 1 };

#define SEQUENCE_ID 1             /* every packet that uses interned names or track events */
#define BUNDLE_BYTES (512 * 1024) /* packets deflated together, as the tracing service bundles them */
#define MAX_INTERNED 65536u       /* names of each kind interned; later ones are written in full */

/* Guests on one trace (perfetto_export.h): host and guests never share a thread. */
#define GUEST_CPUS HT_PERFETTO_GUEST_CPUS
#define MAX_CPU_SLOTS HT_PERFETTO_CPU_VMS
#define GUEST_TID_BITS HT_PERFETTO_GUEST_TID_BITS
#define MAX_TID_SLOTS HT_PERFETTO_TASK_VMS
_Static_assert(HT_PERFETTO_GUEST_CPUS * HT_PERFETTO_CPU_VMS <= 1024, "Perfetto takes CPUs below 1024");
_Static_assert((HT_PERFETTO_TASK_VMS + 1ull) << HT_PERFETTO_GUEST_TID_BITS <= 1ull << 31, "guest tids fit an int32 pid");

/* Track uuids: the kind in the top byte; a vCPU thread's account takes one kind per state. */
enum track_kind { TRACK_VM = 1, TRACK_VCPU, TRACK_GUEST_KERNEL, TRACK_GUEST_TASK, TRACK_GUEST_CPU, TRACK_OFF_CPU,
		  TRACK_ACCOUNT_GROUP, TRACK_ACCOUNT, TRACK_BOOT = TRACK_ACCOUNT + HT_VCPU_NSTATES,
		  TRACK_INITCALL_LEVELS, TRACK_INITCALLS, TRACK_WAKEUPS, TRACK_IRQS,
		  TRACK_LAST = TRACK_IRQS + HT_PERFETTO_IRQ_LANES - 1 };
_Static_assert(TRACK_LAST < 256, "track kinds fit in the uuid's top byte");

struct track {
	uint64_t last_ts;
	uint64_t start_ns; /* an account's guest track: the start of the thread its samples count from */
	bool open;         /* an off-CPU track: a switch-out's slice waits for its switch-in */
};

struct vm {
	uint32_t slot; /* its place among the VMs with guest events */
	bool has_slot;
};

/*
 * The debug annotation names every record's and every switch's slice
 * carries, interned once: the enums index them, the iid arrays of the
 * export are sized from them, and a name added to a table without its enum
 * (or the reverse) does not compile.
 */
enum { ARG_NR, ARG_A0, ARG_A1, ARG_A2, ARG_A3, ARG_RIP, ARG_REASON, ARG_ISA, ARG_VCPU, ARG_EXIT_CPU, ARG_ENTRY_CPU,
       ARG_FLAGS, ARG_FIELDS, ARG_COUNT };

enum { SW_CPU, SW_PREV_STATE, SW_NEXT_TID, SW_NEXT_PID, SW_NEXT_COMM, SW_IN_CPU, SW_PREV_TID, SW_PREV_PID,
       SW_PREV_COMM, SW_COUNT };
/* The switches' names (perfetto_export.c, beside the records'). */
extern const char *const pf_switch_args[];

/* How an argument's value is written. */
enum arg_kind { ARG_UINT, ARG_INT, ARG_HEX, ARG_STRING };

struct ht_perfetto_export {
	struct ht_output out;
	char path[4096];
	struct ht_file_header hdr;
	const struct ht_decoder *dec;
	struct ht_guest_state *gstate;
	struct ht_switch_chain *chain; /* each guest CPU's sched_switch events as written */
	struct ht_pb raw; /* packets not yet deflated: a Trace message */
	unsigned char *zbuf;
	size_t zcap;
	struct ht_id_pair_table *tracks;                  /* (uuid >> 32, uuid) -> struct track */
	struct ht_hashmap event_names, arg_names;        /* name (a copy) -> its iid */
	uint64_t nevent_names, narg_names;
	struct ht_id_pair_table *vms; /* (host pid, 0) -> struct vm */
	uint32_t nslots;
	uint64_t flows;
	unsigned long long forged; /* records of the guest module's nr it did not send: plain hypercall slices */
	struct ht_perfetto_counts counts;
	unsigned int open_packets; /* packets being written: no interned_data packet may start inside one */
	uint64_t arg_iid[ARG_COUNT]; /* of record_args, interned first */
	uint64_t phase_iid[2];     /* "exit->hypercall", "hypercall->entry" */
	uint64_t off_iid[2];       /* "preempted", "blocked": interned at the first switch */
	uint64_t switch_arg_iid[SW_COUNT]; /* of switch_args */
	bool switch_names;         /* off_iid and switch_arg_iid are interned */
	uint32_t last_nr;          /* the nr of the last "hypercall NR" name, and its iid */
	uint64_t last_nr_iid;
	struct ht_boot_timelines *boots; /* the VMs' boots (record --boot), from the first boot exit on */
	struct ht_guest_traces *traces;  /* the guests' own traces (their initcalls), from the first record on */
	bool failed;
};

/*
 * Text a guest, a VM owner or the file chose, as a protobuf string (which
 * must be UTF-8): as report shows it on a terminal (common/escape.h), valid
 * UTF-8 kept, control bytes and each byte of invalid UTF-8 as \xNN, C1
 * controls, bidirectional overrides and line separators as \uNNNN, a
 * backslash as \\ (docs/exports.md).
 */
static inline const char *shown(char *out, size_t len, const char *s)
{
	return ht_escape(out, len, s, HT_ESC_TEXT);
}

/* A function's name, escaped, whatever its length: HT_SYM_TEXT_MAX bytes of symbol. */
#define FUNCTION_NAME_SIZE HT_ESC_SIZE(HT_SYM_TEXT_MAX)
/* A slice's name: an event's (HT_CAT_NAME_MAX) then a function's. */
#define SLICE_NAME_SIZE (HT_CAT_NAME_MAX + 2 + FUNCTION_NAME_SIZE)

/* perfetto_packets.c */
int pf_flush_bundle(struct ht_perfetto_export *x, char *err, size_t errlen);
ht_pb_msg pf_packet_begin(struct ht_perfetto_export *x);
void pf_packet_end(struct ht_perfetto_export *x, ht_pb_msg p);
void pf_sequence_fields(struct ht_perfetto_export *x);
uint64_t pf_intern(struct ht_perfetto_export *x, bool event_name, const char *s);
void pf_event_name(struct ht_perfetto_export *x, const char *name);
void pf_arg_name(struct ht_perfetto_export *x, const char *name);
/* perfetto_tracks.c */
uint64_t pf_track_uuid(enum track_kind kind, uint32_t a, uint32_t b);
struct track *pf_track_of(struct ht_perfetto_export *x, uint64_t uuid, bool *new_track);
ht_pb_msg pf_descriptor_begin(struct ht_perfetto_export *x, uint64_t uuid, uint64_t ts, ht_pb_msg *pkt);
void pf_describe_named(struct ht_perfetto_export *x, uint64_t uuid, uint64_t parent, const char *name,
		       int32_t rank, uint64_t ts);
void pf_describe_process(struct ht_perfetto_export *x, uint64_t uuid, int32_t pid, const char *name, uint64_t ts);
void pf_describe_thread(struct ht_perfetto_export *x, uint64_t uuid, int32_t pid, int64_t tid, const char *name,
			int32_t rank, bool ranked_children, uint64_t ts);
void pf_vm_label(char *out, size_t len, struct ht_reader *reader, uint32_t pid);
uint64_t pf_vm_track(struct ht_perfetto_export *x, uint32_t pid, struct ht_reader *reader, uint64_t ts);
struct track *pf_vcpu_thread_track(struct ht_perfetto_export *x, uint32_t pid, uint32_t tid, uint16_t vcpu,
				   uint64_t ts, struct ht_reader *reader);
/*
 * A track of a vCPU thread's own under its VM's process track (kind, one per
 * thread), named "vCPU N WHAT: THREAD (tid T)" and ranked by its vCPU id,
 * described at its first use (ts): for what would overlap the thread's
 * hypercall slices. NULL when out of memory.
 */
struct track *pf_vcpu_lane(struct ht_perfetto_export *x, enum track_kind kind, const char *what, uint32_t pid,
			   uint32_t tid, uint16_t vcpu, uint64_t ts, struct ht_reader *reader, uint64_t *uuid);
ht_pb_msg pf_track_event_begin(struct ht_perfetto_export *x, struct track *t, uint64_t uuid, uint64_t ts, int type,
			       ht_pb_msg *pkt);
void pf_track_event_end(struct ht_perfetto_export *x, ht_pb_msg e, ht_pb_msg pkt);
void pf_slice_end(struct ht_perfetto_export *x, struct track *t, uint64_t uuid, uint64_t ts);
/* perfetto_fields.c */
void pf_decoded_fields(struct ht_perfetto_export *x, const struct ht_event_desc *ev, const struct ht_record *r);
void pf_function_name(struct ht_perfetto_export *x, uint64_t addr, char *out);
void pf_prepare_field_names(struct ht_perfetto_export *x, const struct ht_event_desc *ev);
/* perfetto_meta.c: the packets before the first event, at open; the recording's identity, at close. */
void pf_head_packets(struct ht_perfetto_export *x);
void pf_identity(struct ht_perfetto_export *x, const struct ht_read_status *st, const char *source,
		 const char *selection);
/* The VMs' boot phases (perfetto_boot.c), at close. 0, or < 0 with err. */
int pf_write_boots(struct ht_perfetto_export *x, char *err, size_t errlen);
/* The guests' initcalls (perfetto_initcalls.c), at close; what is not drawn counted. 0, or < 0 with err. */
int pf_write_initcalls(struct ht_perfetto_export *x, char *err, size_t errlen);
void pf_free_traces(struct ht_perfetto_export *x);
/* perfetto_guest.c */
uint64_t pf_guest_side(struct ht_perfetto_export *x, const struct ht_record *r, struct ht_reader *reader,
		       const struct ht_gev *ev, const struct ht_event_desc *desc, int64_t task_before);


/* A VM's label: "VM " + its escaped name (64 bytes) + " (pid N)". */
#define VM_LABEL_SIZE (HT_ESC_SIZE(64) + 32)

#endif
