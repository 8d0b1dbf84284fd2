// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/perfetto_export.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "cli.h"
#include "common/errf.h"
#include "common/escape.h"
#include "common/hashmap.h"
#include "common/util.h"
#include "common/vcpu_states.h"
#include "export/guest_event.h"
#include "export/protobuf.h"
#include "export/id_pair_table.h"
#include "export/switch_chain.h"
#include "hypertrace/guest.h"
#include "tracefile/output_file.h"
#include "tracefile/wallclock.h"

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
		  TRACK_ACCOUNT_GROUP, TRACK_ACCOUNT };
_Static_assert(TRACK_ACCOUNT + HT_VCPU_NSTATES <= 256, "track kinds fit in the uuid's top byte");

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
static const char *const record_args[] = { "nr", "a0", "a1", "a2", "a3", "guest_rip", "exit_reason", "isa",
					   "vcpu_id", "exit_cpu", "entry_cpu", "flags", "fields" };
_Static_assert(ARRAY_SIZE(record_args) == ARG_COUNT, "record_args and its enum disagree");

enum { SW_CPU, SW_PREV_STATE, SW_NEXT_TID, SW_NEXT_PID, SW_NEXT_COMM, SW_IN_CPU, SW_PREV_TID, SW_PREV_PID,
       SW_PREV_COMM, SW_COUNT };
static const char *const switch_args[] = { "cpu",      "prev_state", "next_tid", "next_pid", "next_comm",
					   "in_cpu",   "prev_tid",   "prev_pid", "prev_comm" };
_Static_assert(ARRAY_SIZE(switch_args) == SW_COUNT, "switch_args and its enum disagree");

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
	uint64_t arg_iid[ARRAY_SIZE(record_args)]; /* of record_args, interned first */
	uint64_t phase_iid[2];     /* "exit->hypercall", "hypercall->entry" */
	uint64_t off_iid[2];       /* "preempted", "blocked": interned at the first switch */
	uint64_t switch_arg_iid[ARRAY_SIZE(switch_args)]; /* of switch_args */
	bool switch_names;         /* off_iid and switch_arg_iid are interned */
	uint32_t last_nr;          /* the nr of the last "hypercall NR" name, and its iid */
	uint64_t last_nr_iid;
	bool failed;
};

/*
 * Text a guest, a VM owner or the file chose, as a protobuf string (which
 * must be UTF-8): as report shows it on a terminal (common/escape.h), valid
 * UTF-8 kept, control bytes and each byte of invalid UTF-8 as \xNN, C1
 * controls, bidirectional overrides and line separators as \uNNNN, a
 * backslash as \\ (docs/exports.md).
 */
static const char *shown(char *out, size_t len, const char *s)
{
	return ht_escape(out, len, s, HT_ESC_TEXT);
}

/* A function's name, escaped, whatever its length: HT_SYM_TEXT_MAX bytes of symbol. */
#define FUNCTION_NAME_SIZE HT_ESC_SIZE(HT_SYM_TEXT_MAX)
/* A slice's name: an event's (HT_CAT_NAME_MAX) then a function's. */
#define SLICE_NAME_SIZE (HT_CAT_NAME_MAX + 2 + FUNCTION_NAME_SIZE)

/* ---- output: packets deflated in bundles ---- */

static int write_all(struct ht_perfetto_export *x, const void *data, size_t len, char *err, size_t errlen)
{
	const unsigned char *p = data;

	while (len) {
		ssize_t n = write(x->out.fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return ht_errf(err, errlen, "cannot write %s: %s", x->path, strerror(n < 0 ? errno : EIO));
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Deflates the packets gathered so far into one compressed_packets packet. */
static int flush_bundle(struct ht_perfetto_export *x, char *err, size_t errlen)
{
	uLongf zlen;
	struct ht_pb outer = { 0 };
	int ret;

	if (x->raw.oom)
		return ht_errf(err, errlen, "out of memory");
	if (!x->raw.len)
		return 0;
	zlen = compressBound(x->raw.len);
	if (zlen > x->zcap) {
		unsigned char *z = realloc(x->zbuf, zlen);
		if (!z)
			return ht_errf(err, errlen, "out of memory");
		x->zbuf = z;
		x->zcap = zlen;
	}
	/* The fastest level: the bundles still shrink about sixfold, at a third of level 6's time. */
	if (compress2(x->zbuf, &zlen, x->raw.buf, x->raw.len, Z_BEST_SPEED) != Z_OK)
		return ht_errf(err, errlen, "cannot compress the packets of %s", x->path);
	ht_pb_msg m = ht_pb_begin(&outer, TRACE_PACKET);
	ht_pb_bytes(&outer, PKT_COMPRESSED, x->zbuf, zlen);
	ht_pb_end(&outer, m);
	ret = outer.oom ? ht_errf(err, errlen, "out of memory") : write_all(x, outer.buf, outer.len, err, errlen);
	ht_pb_free(&outer);
	ht_pb_reset(&x->raw);
	return ret;
}

static ht_pb_msg packet_begin(struct ht_perfetto_export *x)
{
	x->open_packets++;
	return ht_pb_begin(&x->raw, TRACE_PACKET);
}

static void packet_end(struct ht_perfetto_export *x, ht_pb_msg p)
{
	ht_pb_end(&x->raw, p);
	x->open_packets--;
}

/* A packet of the sequence that interns names: its id and flags. */
static void sequence_fields(struct ht_perfetto_export *x)
{
	ht_pb_varint(&x->raw, PKT_SEQ_ID, SEQUENCE_ID);
	ht_pb_varint(&x->raw, PKT_SEQ_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
}

/* ---- interned names ---- */

/*
 * The iid of s in table (event names or debug annotation names), writing the
 * interned_data packet that defines it when it is new; 0 when s cannot be
 * interned (table full, out of memory): then write it whole.
 */
static uint64_t intern(struct ht_perfetto_export *x, bool event_name, const char *s)
{
	struct ht_hashmap *names = event_name ? &x->event_names : &x->arg_names;
	uint64_t *n = event_name ? &x->nevent_names : &x->narg_names, iid;
	long found;
	char *copy;

	if (ht_hashmap_find(names, (long)s, &found))
		return (uint64_t)found;
	/* Defined in a packet of its own, never inside the one being written (then the name goes whole). */
	if (*n >= MAX_INTERNED || x->open_packets || !(copy = strdup(s)))
		return 0;
	iid = *n + 1;
	if (ht_hashmap_insert(names, (long)copy, (long)iid, HT_HASHMAP_ADD, NULL, NULL)) {
		free(copy);
		return 0;
	}
	*n = iid;
	ht_pb_msg p = packet_begin(x);
	sequence_fields(x);
	ht_pb_msg d = ht_pb_begin(&x->raw, PKT_INTERNED);
	ht_pb_msg entry = ht_pb_begin(&x->raw, event_name ? ID_EVENT_NAMES : ID_DEBUG_NAMES);
	ht_pb_varint(&x->raw, IN_IID, iid);
	ht_pb_string(&x->raw, IN_NAME, s);
	ht_pb_end(&x->raw, entry);
	ht_pb_end(&x->raw, d);
	packet_end(x, p);
	return iid;
}

static void event_name(struct ht_perfetto_export *x, const char *name)
{
	uint64_t iid = intern(x, true, name);

	if (iid)
		ht_pb_varint(&x->raw, TE_NAME_IID, iid);
	else
		ht_pb_string(&x->raw, TE_NAME, name);
}

static void arg_name(struct ht_perfetto_export *x, const char *name)
{
	uint64_t iid = intern(x, false, name);

	if (iid)
		ht_pb_varint(&x->raw, DA_NAME_IID, iid);
	else
		ht_pb_string(&x->raw, DA_NAME, name);
}

enum arg_kind { ARG_UINT, ARG_INT, ARG_HEX, ARG_STRING };


/* One of the record's arguments, by its interned name (record_args[which]). */
static void arg(struct ht_perfetto_export *x, int which, enum arg_kind kind, uint64_t v, const char *s)
{
	ht_pb_msg a = ht_pb_begin(&x->raw, TE_DEBUG);

	if (x->arg_iid[which])
		ht_pb_varint(&x->raw, DA_NAME_IID, x->arg_iid[which]);
	else
		ht_pb_string(&x->raw, DA_NAME, record_args[which]);
	if (kind == ARG_STRING)
		ht_pb_string(&x->raw, DA_STRING, s);
	else
		ht_pb_varint(&x->raw, kind == ARG_HEX ? DA_POINTER : kind == ARG_INT ? DA_INT : DA_UINT, v);
	ht_pb_end(&x->raw, a);
}


/* One of a switch's arguments, by its interned name (switch_args[which]). */
static void switch_arg(struct ht_perfetto_export *x, int which, enum arg_kind kind, uint64_t v, const char *s)
{
	ht_pb_msg a = ht_pb_begin(&x->raw, TE_DEBUG);

	if (x->switch_arg_iid[which])
		ht_pb_varint(&x->raw, DA_NAME_IID, x->switch_arg_iid[which]);
	else
		ht_pb_string(&x->raw, DA_NAME, switch_args[which]);
	if (kind == ARG_STRING)
		ht_pb_string(&x->raw, DA_STRING, s);
	else
		ht_pb_varint(&x->raw, kind == ARG_INT ? DA_INT : DA_UINT, v);
	ht_pb_end(&x->raw, a);
}

/* ---- tracks ---- */

static uint64_t track_uuid(enum track_kind kind, uint32_t a, uint32_t b)
{
	return (uint64_t)kind << 56 | ((uint64_t)(a & 0xffffff) << 32) | b;
}

/* The track's state if described already, else NULL (then describe it). */
static struct track *track_of(struct ht_perfetto_export *x, uint64_t uuid, bool *new_track)
{
	struct track *t = ht_id_pair_table_get(x->tracks, (uint32_t)(uuid >> 32), (uint32_t)uuid);

	*new_track = false;
	if (t)
		return t;
	t = calloc(1, sizeof(*t));
	if (!t || ht_id_pair_table_put(x->tracks, (uint32_t)(uuid >> 32), (uint32_t)uuid, t)) {
		free(t);
		x->failed = true;
		return NULL;
	}
	*new_track = true;
	return t;
}

/*
 * A descriptor's packet: its time (before its first event, as Perfetto's
 * docs ask) on the sequence whose defaults say the clock (CLOCK_MONOTONIC).
 */
static ht_pb_msg descriptor_begin(struct ht_perfetto_export *x, uint64_t uuid, uint64_t ts, ht_pb_msg *pkt)
{
	*pkt = packet_begin(x);
	ht_pb_varint(&x->raw, PKT_TIMESTAMP, ts);
	ht_pb_varint(&x->raw, PKT_SEQ_ID, SEQUENCE_ID);
	ht_pb_msg d = ht_pb_begin(&x->raw, PKT_TRACK_DESCRIPTOR);
	ht_pb_varint(&x->raw, TD_UUID, uuid);
	return d;
}

/*
 * A process track. Its named child tracks (off-CPU tracks, guest CPU event
 * tracks) are shown in the order of their sibling rank: the trace processor
 * keeps the rank but lets it order the children only when the parent asks
 * for explicit order (track_event_tokenizer.cc:146, child_ordering).
 */
static void describe_process(struct ht_perfetto_export *x, uint64_t uuid, int32_t pid, const char *name, uint64_t ts)
{
	ht_pb_msg p, d = descriptor_begin(x, uuid, ts, &p);
	ht_pb_varint(&x->raw, TD_CHILD_ORDERING, CHILD_ORDERING_EXPLICIT);
	ht_pb_msg pd = ht_pb_begin(&x->raw, TD_PROCESS);
	ht_pb_int(&x->raw, PD_PID, pid);
	ht_pb_string(&x->raw, PD_NAME, name);
	ht_pb_end(&x->raw, pd);
	ht_pb_end(&x->raw, d);
	packet_end(x, p);
}

/*
 * A thread track, ranked among its process's threads (the root track asks
 * for explicit thread order); with ranked_children, its child tracks (a vCPU
 * thread's account) show in the order of their rank too.
 */
static void describe_thread(struct ht_perfetto_export *x, uint64_t uuid, int32_t pid, int64_t tid, const char *name,
			    int32_t rank, bool ranked_children, uint64_t ts)
{
	ht_pb_msg p, d = descriptor_begin(x, uuid, ts, &p);
	if (ranked_children)
		ht_pb_varint(&x->raw, TD_CHILD_ORDERING, CHILD_ORDERING_EXPLICIT);
	ht_pb_int(&x->raw, TD_SIBLING_RANK, rank);
	ht_pb_msg td = ht_pb_begin(&x->raw, TD_THREAD);
	ht_pb_int(&x->raw, THD_PID, pid);
	ht_pb_int(&x->raw, THD_TID, tid);
	ht_pb_string(&x->raw, THD_NAME, name);
	ht_pb_end(&x->raw, td);
	ht_pb_end(&x->raw, d);
	packet_end(x, p);
}

/* A named track under parent (0: a top-level track), ranked among its siblings. */
static void describe_named(struct ht_perfetto_export *x, uint64_t uuid, uint64_t parent, const char *name,
			   int32_t rank, uint64_t ts)
{
	ht_pb_msg p, d = descriptor_begin(x, uuid, ts, &p);
	if (parent)
		ht_pb_varint(&x->raw, TD_PARENT, parent);
	else
		ht_pb_varint(&x->raw, TD_CHILD_ORDERING, CHILD_ORDERING_EXPLICIT);
	ht_pb_string(&x->raw, TD_NAME, name);
	ht_pb_int(&x->raw, TD_SIBLING_RANK, rank);
	ht_pb_end(&x->raw, d);
	packet_end(x, p);
}

/* A VM's label: "VM " + its escaped name (64 bytes) + " (pid N)". */
#define VM_LABEL_SIZE (HT_ESC_SIZE(64) + 32)

/* The VM's name as its owner chose it (escaped), else its pid. */
static void vm_label(char *out, size_t len, struct ht_reader *reader, uint32_t pid)
{
	const char *name = reader ? ht_reader_vm_name(reader, pid) : NULL;
	char esc[HT_ESC_SIZE(64)];

	shown(esc, sizeof(esc), name ? name : "");
	if (esc[0])
		snprintf(out, len, "VM %s (pid %u)", esc, pid);
	else
		snprintf(out, len, "VM process %u", pid);
}

/* A VM process's track, described the first time (at ts); its uuid, 0 when out of memory. */
static uint64_t vm_track(struct ht_perfetto_export *x, uint32_t pid, struct ht_reader *reader, uint64_t ts)
{
	uint64_t vm_uuid = track_uuid(TRACK_VM, pid, 0);
	char name[VM_LABEL_SIZE];
	bool is_new;

	if (!track_of(x, vm_uuid, &is_new))
		return 0;
	if (is_new) {
		vm_label(name, sizeof(name), reader, pid);
		describe_process(x, vm_uuid, (int32_t)pid, name, ts);
	}
	return vm_uuid;
}

/*
 * The vCPU thread's track (and its VM's), described at its first record or
 * its first account, whichever comes first; its child tracks (the
 * account's group) in the order of their rank.
 */
static struct track *vcpu_thread_track(struct ht_perfetto_export *x, uint32_t pid, uint32_t tid, uint16_t vcpu,
				       uint64_t ts, struct ht_reader *reader)
{
	uint64_t uuid = track_uuid(TRACK_VCPU, pid, tid);
	const struct ht_identity *id = reader ? ht_reader_identity(reader, pid, tid) : NULL;
	char name[VM_LABEL_SIZE], thread[HT_ESC_SIZE(16)];
	bool is_new;
	struct track *t;

	if (!vm_track(x, pid, reader, ts))
		return NULL;
	t = track_of(x, uuid, &is_new);
	if (t && is_new) {
		shown(thread, sizeof(thread), id ? id->thread_name : "");
		if (thread[0])
			snprintf(name, sizeof(name), "vCPU %u: %s", vcpu, thread);
		else
			snprintf(name, sizeof(name), "vCPU %u (tid %u)", vcpu, tid);
		describe_thread(x, uuid, (int32_t)pid, tid, name, vcpu, true, ts);
	}
	return t;
}

static struct track *vcpu_track(struct ht_perfetto_export *x, const struct ht_record *r, struct ht_reader *reader)
{
	return vcpu_thread_track(x, r->host_pid, r->host_tid, r->vcpu_id, r->exit_ns, reader);
}

/* ---- events ---- */

/* An event's time on its track, raised (and counted) if the track has a later one. */
static uint64_t on_track(struct ht_perfetto_export *x, struct track *t, uint64_t ts)
{
	if (ts < t->last_ts) {
		ts = t->last_ts;
		x->counts.reordered++;
	}
	t->last_ts = ts;
	return ts;
}

static ht_pb_msg track_event_begin(struct ht_perfetto_export *x, struct track *t, uint64_t uuid, uint64_t ts, int type,
				   ht_pb_msg *pkt)
{
	*pkt = packet_begin(x);
	ht_pb_varint(&x->raw, PKT_TIMESTAMP, on_track(x, t, ts));
	sequence_fields(x);
	ht_pb_msg e = ht_pb_begin(&x->raw, PKT_TRACK_EVENT);
	ht_pb_varint(&x->raw, TE_TYPE, (uint64_t)type);
	ht_pb_varint(&x->raw, TE_TRACK, uuid);
	return e;
}

static void track_event_end(struct ht_perfetto_export *x, ht_pb_msg e, ht_pb_msg pkt)
{
	ht_pb_end(&x->raw, e);
	packet_end(x, pkt);
}

static void slice_end(struct ht_perfetto_export *x, struct track *t, uint64_t uuid, uint64_t ts)
{
	ht_pb_msg pkt, e = track_event_begin(x, t, uuid, ts, SLICE_END, &pkt);
	track_event_end(x, e, pkt);
}

/* One decoded field as a debug annotation of the "fields" dict (a sym adds NAME_sym). */
static void decoded_field(void *ctx, unsigned int i, const struct ht_field_value *v)
{
	struct ht_perfetto_export *x = ctx;
	const struct ht_field *f = v->field;
	ht_pb_msg a = ht_pb_begin(&x->raw, DA_DICT);
	char esc[FUNCTION_NAME_SIZE];

	(void)i;
	arg_name(x, f->name);
	switch (f->type) {
	case HT_FT_STR:
		ht_pb_string(&x->raw, DA_STRING, shown(esc, sizeof(esc), v->text));
		break;
	case HT_FT_S:
		ht_pb_varint(&x->raw, DA_INT, (uint64_t)v->sval);
		break;
	case HT_FT_X:
	case HT_FT_SYM:
		ht_pb_varint(&x->raw, DA_POINTER, v->bits);
		break;
	case HT_FT_U:
		ht_pb_varint(&x->raw, DA_UINT, v->bits);
		break;
	}
	ht_pb_end(&x->raw, a);
	if (f->type == HT_FT_SYM && v->has_sym) {
		char key[HT_CAT_NAME_MAX + 8];

		snprintf(key, sizeof(key), "%s_sym", f->name);
		a = ht_pb_begin(&x->raw, DA_DICT);
		arg_name(x, key);
		ht_pb_string(&x->raw, DA_STRING, shown(esc, sizeof(esc), v->sym));
		ht_pb_end(&x->raw, a);
	}
}

/* A decoded event's fields, as report decodes them, in a dict "fields". */
static void decoded_fields(struct ht_perfetto_export *x, const struct ht_event_desc *ev, const struct ht_record *r)
{
	ht_pb_msg d = ht_pb_begin(&x->raw, TE_DEBUG);

	ht_pb_varint(&x->raw, DA_NAME_IID, x->arg_iid[ARG_FIELDS]);
	ht_decoder_visit_fields(x->dec, ev, r, decoded_field, x);
	ht_pb_end(&x->raw, d);
}

/* The function's name for a slice (FUNCTION_NAME_SIZE bytes): its symbol, escaped, else its address. */
static void function_name(struct ht_perfetto_export *x, uint64_t addr, char *out)
{
	char sym[HT_SYM_TEXT_MAX];

	if (!ht_decoder_function(x->dec, addr, sym, sizeof(sym)))
		snprintf(sym, sizeof(sym), "0x%llx", (unsigned long long)addr);
	shown(out, FUNCTION_NAME_SIZE, sym);
}

static void prepare_field_names(struct ht_perfetto_export *x, const struct ht_event_desc *ev)
{
	for (unsigned int i = 0; ev && i < ev->nfields; i++) {
		intern(x, false, ev->fields[i].name);
		if (ev->fields[i].type == HT_FT_SYM) {
			char key[HT_CAT_NAME_MAX + 8];
			snprintf(key, sizeof(key), "%s_sym", ev->fields[i].name);
			intern(x, false, key);
		}
	}
}

/* The host's view: the hypercall and its two phases on the vCPU thread's track. */
static void host_slices(struct ht_perfetto_export *x, struct track *t, const struct ht_record *r,
			const struct ht_event_desc *ev, const char *name, uint64_t flow)
{
	uint64_t uuid = track_uuid(TRACK_VCPU, r->host_pid, r->host_tid);
	uint64_t hcall = r->exit_ns + r->exit_to_hcall_ns, entry = hcall + r->hcall_to_entry_ns;
	uint64_t iid;
	ht_pb_msg pkt, e;

	/* "hypercall NR" names repeat: the last one's iid is kept. */
	if (!ev && x->last_nr_iid && x->last_nr == r->nr) {
		iid = x->last_nr_iid;
	} else {
		iid = intern(x, true, name);
		if (!ev) {
			x->last_nr = r->nr;
			x->last_nr_iid = iid;
		}
	}
	prepare_field_names(x, ev);
	e = track_event_begin(x, t, uuid, r->exit_ns, SLICE_BEGIN, &pkt);
	if (iid)
		ht_pb_varint(&x->raw, TE_NAME_IID, iid);
	else
		ht_pb_string(&x->raw, TE_NAME, name);
	arg(x, ARG_NR, ARG_UINT, r->nr, NULL);
	arg(x, ARG_A0, ARG_HEX, r->a0, NULL);
	arg(x, ARG_A1, ARG_HEX, r->a1, NULL);
	arg(x, ARG_A2, ARG_HEX, r->a2, NULL);
	arg(x, ARG_A3, ARG_HEX, r->a3, NULL);
	arg(x, ARG_RIP, ARG_HEX, r->guest_rip, NULL);
	arg(x, ARG_REASON, ARG_HEX, r->exit_reason, NULL);
	arg(x, ARG_ISA, ARG_STRING, 0, r->isa == HT_ISA_VMX ? "VMX" : r->isa == HT_ISA_SVM ? "SVM" : "?");
	arg(x, ARG_VCPU, ARG_UINT, r->vcpu_id, NULL);
	arg(x, ARG_EXIT_CPU, ARG_UINT, r->exit_cpu, NULL);
	arg(x, ARG_ENTRY_CPU, ARG_UINT, r->entry_cpu, NULL);
	arg(x, ARG_FLAGS, ARG_UINT, r->flags, NULL);
	if (ev)
		decoded_fields(x, ev, r);
	if (flow)
		ht_pb_fixed64(&x->raw, TE_TERM_FLOW, flow);
	track_event_end(x, e, pkt);
	e = track_event_begin(x, t, uuid, r->exit_ns, SLICE_BEGIN, &pkt);
	ht_pb_varint(&x->raw, TE_NAME_IID, x->phase_iid[0]);
	track_event_end(x, e, pkt);
	slice_end(x, t, uuid, hcall);
	e = track_event_begin(x, t, uuid, hcall, SLICE_BEGIN, &pkt);
	ht_pb_varint(&x->raw, TE_NAME_IID, x->phase_iid[1]);
	track_event_end(x, e, pkt);
	slice_end(x, t, uuid, entry);
	slice_end(x, t, uuid, entry);
}

/* ---- guests ---- */

static struct vm *vm_of(struct ht_perfetto_export *x, uint32_t pid)
{
	struct vm *v = ht_id_pair_table_get(x->vms, pid, 0);

	if (v)
		return v;
	v = calloc(1, sizeof(*v));
	if (!v || ht_id_pair_table_put(x->vms, pid, 0, v)) {
		free(v);
		x->failed = true;
		return NULL;
	}
	if (x->nslots < MAX_TID_SLOTS) {
		v->slot = x->nslots++;
		v->has_slot = true;
	}
	return v;
}

/* A guest task's tid on the trace: its VM's block plus its own; 0 (idle) stays 0; -1 if it does not fit. */
static int64_t guest_tid(const struct vm *v, uint32_t tid)
{
	if (tid == 0)
		return 0;
	if (!v->has_slot || tid >= 1u << GUEST_TID_BITS)
		return -1;
	return (int64_t)(v->slot + 1) << GUEST_TID_BITS | tid;
}

/* The pid of a VM's guest kernel: its block of tids (it has a slot). */
static int32_t guest_pid(const struct vm *v)
{
	return (int32_t)((v->slot + 1) << GUEST_TID_BITS);
}

/* A guest CPU's ftrace CPU on the trace, or -1 if it does not fit. */
static int64_t guest_cpu(const struct vm *v, uint32_t cpu)
{
	if (!v->has_slot || v->slot >= MAX_CPU_SLOTS || cpu >= GUEST_CPUS)
		return -1;
	return (int64_t)v->slot * GUEST_CPUS + cpu;
}

static uint64_t guest_kernel_track(struct ht_perfetto_export *x, const struct vm *v, const struct ht_record *r,
				   struct ht_reader *reader)
{
	uint64_t uuid = track_uuid(TRACK_GUEST_KERNEL, r->host_pid, 0);
	char label[VM_LABEL_SIZE], name[VM_LABEL_SIZE + 32];
	bool is_new;

	if (track_of(x, uuid, &is_new) && is_new) {
		vm_label(label, sizeof(label), reader, r->host_pid);
		snprintf(name, sizeof(name), "guest kernel of %s", label);
		/*
		 * A VM beyond the pid blocks (MAX_TID_SLOTS) gets no process: one
		 * with the pid of another VM's guest kernel would be read as that
		 * pid reused (track_event_tracker.cc:353). Its CPU event tracks stay
		 * under a named track; its tasks have none (counted).
		 */
		if (v->has_slot)
			describe_process(x, uuid, guest_pid(v), name, r->exit_ns);
		else
			describe_named(x, uuid, 0, name, 0, r->exit_ns);
	}
	return uuid;
}

/* A guest task's thread track (described the first time it is named), or NULL if it has none. */
static struct track *guest_task_track(struct ht_perfetto_export *x, const struct vm *v, const struct ht_record *r,
				      struct ht_reader *reader, uint32_t tid, uint32_t cpu, uint64_t *uuid)
{
	int64_t mapped = guest_tid(v, tid);
	char comm[HT_GEV_COMM_LEN + 1], esc[HT_ESC_SIZE(HT_GEV_COMM_LEN)], name[HT_ESC_SIZE(HT_GEV_COMM_LEN) + 32];
	struct track *t;
	bool is_new;

	if (mapped <= 0)
		return NULL;
	guest_kernel_track(x, v, r, reader);
	*uuid = track_uuid(TRACK_GUEST_TASK, r->host_pid, tid);
	t = track_of(x, *uuid, &is_new);
	if (t && is_new) {
		ht_guest_task_comm(x->gstate, r->host_pid, tid, cpu, comm);
		shown(esc, sizeof(esc), comm);
		snprintf(name, sizeof(name), "%s (guest tid %u)", esc[0] ? esc : "task", tid);
		describe_thread(x, *uuid, guest_pid(v), mapped, name, (int32_t)tid, false, r->exit_ns);
	}
	return t;
}

/* A guest CPU's event track, under its guest kernel. */
static struct track *guest_cpu_track(struct ht_perfetto_export *x, const struct vm *v, const struct ht_record *r,
				     struct ht_reader *reader, uint32_t cpu, uint64_t *uuid)
{
	uint64_t parent = guest_kernel_track(x, v, r, reader);
	char name[64];
	struct track *t;
	bool is_new;

	*uuid = track_uuid(TRACK_GUEST_CPU, r->host_pid, cpu);
	t = track_of(x, *uuid, &is_new);
	if (t && is_new) {
		snprintf(name, sizeof(name), "guest CPU %u events", cpu);
		describe_named(x, *uuid, parent, name, (int32_t)cpu, r->exit_ns);
	}
	return t;
}

/* A task as an ftrace sched_switch names it: its tid on the trace (0 if none), its name (shown) and prio. */
struct ftrace_task {
	int64_t tid;
	const char *comm;
	int32_t prio;
};

/* The packet of one ftrace event on ftrace CPU cpu at ts, of task pid: returns the event, open. */
static ht_pb_msg ftrace_begin(struct ht_perfetto_export *x, int64_t cpu, uint64_t ts, int64_t pid, ht_pb_msg *p,
			      ht_pb_msg *b)
{
	ht_pb_msg e;

	*p = packet_begin(x);
	ht_pb_varint(&x->raw, PKT_SEQ_ID, SEQUENCE_ID);
	*b = ht_pb_begin(&x->raw, PKT_FTRACE_EVENTS);
	ht_pb_varint(&x->raw, FB_CPU, (uint64_t)cpu);
	/*
	 * ftrace's times are BOOTTIME unless the bundle names another clock
	 * (ftrace_tokenizer.cc:144-151), and no FtraceClock is CLOCK_MONOTONIC:
	 * "global" makes them the sequence's clock 64 (ftrace_tokenizer.cc:488,
	 * kSequenceScopedClockId), which the clock snapshot declares equal to
	 * CLOCK_MONOTONIC (see head_packets).
	 */
	ht_pb_varint(&x->raw, FB_FTRACE_CLOCK, FTRACE_CLOCK_GLOBAL);
	e = ht_pb_begin(&x->raw, FB_EVENT);
	ht_pb_varint(&x->raw, FE_TIMESTAMP, ts);
	ht_pb_varint(&x->raw, FE_PID, pid > 0 ? (uint64_t)pid : 0);
	return e;
}

static void ftrace_end(struct ht_perfetto_export *x, ht_pb_msg e, ht_pb_msg b, ht_pb_msg p)
{
	ht_pb_end(&x->raw, e);
	ht_pb_end(&x->raw, b);
	packet_end(x, p);
}

/* A sched_switch from prev, left in prev_state, to next, on ftrace CPU cpu at ts. */
static void ftrace_switch(struct ht_perfetto_export *x, int64_t cpu, uint64_t ts, const struct ftrace_task *prev,
			  uint32_t prev_state, const struct ftrace_task *next)
{
	ht_pb_msg p, b, e = ftrace_begin(x, cpu, ts, prev->tid, &p, &b);
	ht_pb_msg s = ht_pb_begin(&x->raw, FE_SCHED_SWITCH);

	ht_pb_string(&x->raw, SS_PREV_COMM, prev->comm);
	ht_pb_int(&x->raw, SS_PREV_PID, prev->tid);
	ht_pb_int(&x->raw, SS_PREV_PRIO, prev->prio);
	ht_pb_int(&x->raw, SS_PREV_STATE, prev_state);
	ht_pb_string(&x->raw, SS_NEXT_COMM, next->comm);
	ht_pb_int(&x->raw, SS_NEXT_PID, next->tid);
	ht_pb_int(&x->raw, SS_NEXT_PRIO, next->prio);
	ht_pb_end(&x->raw, s);
	ftrace_end(x, e, b, p);
}

/* A guest task's tid as its sched_switch events show it: 0 (the idle task's) when it has none on the trace. */
static uint32_t shown_tid(const struct vm *v, uint32_t tid)
{
	return guest_tid(v, tid) > 0 ? tid : 0;
}

/*
 * The stand-in for what ran on a guest CPU while its switches were lost
 * (export/switch_chain.h): thread guest_pid(v), tid 0 of the VM's block,
 * which no guest task has (a guest's idle task is thread 0), in the guest
 * kernel's process, ranked before its tasks.
 */
static int64_t stand_in(struct ht_perfetto_export *x, const struct vm *v, const struct ht_record *r,
			struct ht_reader *reader)
{
	uint64_t uuid = track_uuid(TRACK_GUEST_TASK, r->host_pid, 0);
	bool is_new;

	guest_kernel_track(x, v, r, reader);
	if (track_of(x, uuid, &is_new) && is_new)
		describe_thread(x, uuid, guest_pid(v), guest_pid(v), HT_CHAIN_UNKNOWN_COMM, -1, false, r->exit_ns);
	return guest_pid(v);
}

/*
 * A guest sched_switch that breaks its CPU's chain (its prev_tid is not the
 * task the CPU's last switch put there: switches were lost in between)
 * would leave that task's sched slice open to the end of the trace
 * (mismatched_sched_switch_tids, ftrace_sched_event_tracker.cc,
 * PushSchedSwitch). Before it, two switches close the chain
 * (docs/exports.md): the task last switched in leaves, in the state the
 * UI shows as Unknown, when it was last known there: at its switch-in,
 * or at the guest module's unload after it (report --sched ends its run
 * there, and counts none for either task of a gap); the stand-in holds
 * the CPU until the breaking switch's time, then gives it to that
 * switch's prev_tid. The first switch goes back in time on its CPU: the
 * trace processor sorts every event by time, and among equal times keeps
 * the order read (trace_sorter.h, TimestampedEvent), so it comes after
 * the switch-in it ends; it sorts them all at the end, having no flush of
 * the tracing service's to extract them earlier (proto_trace_reader.cc,
 * all_data_sources_flushed).
 */
static void follow_chain(struct ht_perfetto_export *x, const struct vm *v, const struct ht_record *r,
			 struct ht_reader *reader, const struct ht_gev *ev)
{
	char last_comm[HT_GEV_COMM_LEN + 1], prev_comm[HT_GEV_COMM_LEN + 1];
	char last_esc[HT_ESC_SIZE(HT_GEV_COMM_LEN)], prev_esc[HT_ESC_SIZE(HT_GEV_COMM_LEN)];
	int64_t cpu = guest_cpu(v, ev->cpu);
	uint32_t prev = shown_tid(v, ev->u.sw.prev_tid);
	struct ht_chain_break brk;
	uint64_t at;
	int ret;

	if (cpu < 0)
		return; /* not written: Perfetto has no chain there */
	ret = ht_switch_chain_follow(x->chain, r->host_pid, ev->cpu, prev, shown_tid(v, ev->u.sw.next_tid),
				     ev->u.sw.next_prio, r->exit_ns, &brk);
	if (ret <= 0) {
		x->failed |= ret < 0;
		return;
	}
	/* A guest's times need not grow: the stand-in never runs backwards. */
	at = brk.known_ns < r->exit_ns ? brk.known_ns : r->exit_ns;
	ht_guest_task_comm(x->gstate, r->host_pid, brk.last_tid, ev->cpu, last_comm);
	ht_guest_task_comm(x->gstate, r->host_pid, ev->u.sw.prev_tid, ev->cpu, prev_comm);
	const struct ftrace_task last = { guest_tid(v, brk.last_tid), shown(last_esc, sizeof(last_esc), last_comm),
					  brk.last_prio };
	const struct ftrace_task gap = { stand_in(x, v, r, reader), HT_CHAIN_UNKNOWN_COMM, HT_CHAIN_UNKNOWN_PRIO };
	const struct ftrace_task into = { guest_tid(v, prev), shown(prev_esc, sizeof(prev_esc), prev_comm),
					  ev->u.sw.prev_prio };

	ftrace_switch(x, cpu, at, &last, HT_CHAIN_UNKNOWN_STATE, &gap);
	ftrace_switch(x, cpu, r->exit_ns, &gap, HT_CHAIN_UNKNOWN_STATE, &into);
}

/* The guest's scheduling and IRQs as ftrace events of its CPU, as Perfetto shows a kernel's. */
static void guest_ftrace(struct ht_perfetto_export *x, const struct vm *v, const struct ht_record *r,
			 const struct ht_gev *ev, int64_t task_before)
{
	int64_t cpu = guest_cpu(v, ev->cpu), cur = task_before >= 0 ? guest_tid(v, (uint32_t)task_before) : 0;
	char comm[HT_GEV_COMM_LEN + 1], esc[HT_ESC_SIZE(sizeof(ev->u.irq.name))];
	char next_esc[HT_ESC_SIZE(HT_GEV_COMM_LEN)];
	ht_pb_msg p, b, e, s;

	if (ev->kind != HT_GEV_SCHED_SWITCH && ev->kind != HT_GEV_SCHED_WAKEUP && ev->kind != HT_GEV_IRQ_ENTRY &&
	    ev->kind != HT_GEV_IRQ_EXIT)
		return;
	if (cpu < 0) {
		x->counts.not_scheduled++;
		return;
	}
	if (ev->kind == HT_GEV_SCHED_SWITCH) {
		int64_t prev = guest_tid(v, ev->u.sw.prev_tid), next = guest_tid(v, ev->u.sw.next_tid);

		ht_guest_task_comm(x->gstate, r->host_pid, ev->u.sw.prev_tid, ev->cpu, comm);
		const struct ftrace_task from = { prev > 0 ? prev : 0, shown(esc, sizeof(esc), comm), ev->u.sw.prev_prio };
		ht_guest_task_comm(x->gstate, r->host_pid, ev->u.sw.next_tid, ev->cpu, comm);
		const struct ftrace_task to = { next > 0 ? next : 0,
						shown(next_esc, sizeof(next_esc), ev->u.sw.next_tid ? ev->u.sw.next_comm : comm),
						ev->u.sw.next_prio };
		ftrace_switch(x, cpu, r->exit_ns, &from, ev->u.sw.prev_state, &to);
		return;
	}
	e = ftrace_begin(x, cpu, r->exit_ns, cur, &p, &b);
	switch (ev->kind) {
	case HT_GEV_SCHED_WAKEUP: {
		int64_t tid = guest_tid(v, ev->u.wake.tid), target = guest_cpu(v, ev->u.wake.target_cpu);

		s = ht_pb_begin(&x->raw, FE_SCHED_WAKEUP);
		ht_pb_string(&x->raw, WAKE_COMM, shown(esc, sizeof(esc), ev->u.wake.comm));
		ht_pb_int(&x->raw, WAKE_PID, tid > 0 ? tid : 0);
		ht_pb_int(&x->raw, WAKE_PRIO, ev->u.wake.prio);
		ht_pb_int(&x->raw, WAKE_SUCCESS, 1);
		ht_pb_int(&x->raw, WAKE_TARGET_CPU, target >= 0 ? target : cpu);
		break;
	}
	case HT_GEV_IRQ_ENTRY:
		s = ht_pb_begin(&x->raw, FE_IRQ_ENTRY);
		ht_pb_int(&x->raw, IRQ_ENTRY_IRQ, (int32_t)ev->u.irq.irq);
		ht_pb_string(&x->raw, IRQ_ENTRY_NAME, shown(esc, sizeof(esc), ev->u.irq.name));
		break;
	default:
		s = ht_pb_begin(&x->raw, FE_IRQ_EXIT);
		ht_pb_int(&x->raw, IRQ_EXIT_IRQ, (int32_t)ev->u.irq.irq);
		ht_pb_int(&x->raw, IRQ_EXIT_RET, (int32_t)ev->u.irq.ret);
		break;
	}
	ht_pb_end(&x->raw, s);
	ftrace_end(x, e, b, p);
}

/* A debug annotation with a string value, its name interned beforehand. */
static void note(struct ht_perfetto_export *x, const char *key, const char *value)
{
	ht_pb_msg a = ht_pb_begin(&x->raw, TE_DEBUG);

	arg_name(x, key);
	ht_pb_string(&x->raw, DA_STRING, value);
	ht_pb_end(&x->raw, a);
}

/*
 * A guest function's entry or exit on its task's track; returns its flow.
 * The trace processor ends, on an end event with a name, the innermost open
 * slice of that name on the track, and drops an end that matches none, with
 * its flow (track_event_event_importer.h:847, slice_tracker.cc:185 and
 * 271-288); an end without a name ends whatever slice is innermost. So:
 * - every end carries its function's name;
 * - an exit whose entry is in the trace ends that call, after ending, each
 *   with its own name and "exit": "lost", the calls entered after it whose
 *   exits were lost (the guest state's open calls say which): no exit ever
 *   closes another function's slice;
 * - an exit whose entry is not (entered before the recording started), and
 *   an entry deeper than the calls followed per task, are instants with the
 *   function's name and "unpaired" saying why: nothing the importer drops.
 */
static uint64_t function_event(struct ht_perfetto_export *x, struct track *t, uint64_t uuid, const struct ht_record *r,
			       const struct ht_gev *ev)
{
	bool entry = ev->kind == HT_GEV_FUNC_ENTRY, paired = ev->u.func.matched;
	char name[FUNCTION_NAME_SIZE], lost[FUNCTION_NAME_SIZE];
	uint64_t flow = ++x->flows;
	ht_pb_msg pkt, e;

	/* Names interned before the packets that use them (none may be defined inside one). */
	function_name(x, ev->u.func.addr, name);
	intern(x, true, name);
	intern(x, false, paired ? "exit" : "unpaired");
	for (uint32_t i = ev->u.func.nlost; i-- > 0;) {
		function_name(x, ev->u.func.lost[i].addr, lost);
		e = track_event_begin(x, t, uuid, r->exit_ns, SLICE_END, &pkt);
		event_name(x, lost);
		note(x, "exit", "lost");
		track_event_end(x, e, pkt);
	}
	e = track_event_begin(x, t, uuid, r->exit_ns, !paired ? INSTANT : entry ? SLICE_BEGIN : SLICE_END, &pkt);
	event_name(x, name);
	if (!paired)
		note(x, "unpaired",
		     entry ? "entry deeper than the calls followed per task" :
			     "exit of a call entered before the recording (or deeper than the calls followed)");
	ht_pb_fixed64(&x->raw, TE_FLOW, flow);
	track_event_end(x, e, pkt);
	return flow;
}

/*
 * The guest's side of a project event: a function call as a slice on its
 * task's track, any other event as an instant on its CPU's event track, with
 * a flow to the host's slice. Returns the flow id, 0 when it has no guest
 * track.
 */
static uint64_t guest_side(struct ht_perfetto_export *x, const struct ht_record *r, struct ht_reader *reader,
			   const struct ht_gev *ev, const struct ht_event_desc *desc, int64_t task_before)
{
	struct vm *v = vm_of(x, r->host_pid);
	uint64_t uuid, flow;
	struct track *t;
	ht_pb_msg pkt, e;

	if (!v)
		return 0;
	if (ev->kind == HT_GEV_SCHED_SWITCH)
		follow_chain(x, v, r, reader, ev);
	else if (ev->kind == HT_GEV_MODULE && ev->u.mod.state == 0)
		ht_switch_chain_stopped(x->chain, r->host_pid, r->exit_ns);
	guest_ftrace(x, v, r, ev, task_before);
	if (ev->kind == HT_GEV_FUNC_ENTRY || ev->kind == HT_GEV_FUNC_EXIT) {
		t = guest_task_track(x, v, r, reader, ev->u.func.tid, ev->cpu, &uuid);
		if (!t) {
			x->counts.not_scheduled++;
			return 0;
		}
		return function_event(x, t, uuid, r, ev);
	}
	if (ev->kind == HT_GEV_SCHED_SWITCH) {
		/* Name the tasks' threads before the ftrace events that show them run. */
		guest_task_track(x, v, r, reader, ev->u.sw.prev_tid, ev->cpu, &uuid);
		guest_task_track(x, v, r, reader, ev->u.sw.next_tid, ev->cpu, &uuid);
	}
	t = guest_cpu_track(x, v, r, reader, ev->cpu, &uuid);
	if (!t)
		return 0;
	intern(x, true, desc->name);
	prepare_field_names(x, desc);
	flow = ++x->flows;
	e = track_event_begin(x, t, uuid, r->exit_ns, INSTANT, &pkt);
	event_name(x, desc->name);
	decoded_fields(x, desc, r);
	ht_pb_fixed64(&x->raw, TE_FLOW, flow);
	track_event_end(x, e, pkt);
	return flow;
}

/* ---- the export ---- */

/*
 * The kernel release the trace declares: the trace processor decodes every
 * sched_switch's prev_state by it, as a 4.4 kernel's when none is declared
 * (task_state.cc:65), as kernels' since 4.14 from 4.14 on (task_state.cc:73:
 * 0x40 parked, 0x80 idle, 0x100 preempted), which is what the guest module
 * sends whatever the guest's kernel (__trace_sched_switch_state()). The file
 * does not record the guests' releases: the host's is declared when the
 * importer reads it as 4.14 or later (its parse: the digits before the first
 * dot, then those before the second, system_info_tracker.cc:38-49), else
 * "4.14".
 */
static const char *declared_release(const char *host)
{
	const char *dot = strchr(host, '.');
	char *end;
	unsigned long major, minor;

	if (!dot || dot == host || strspn(host, "0123456789") != (size_t)(dot - host))
		return "4.14";
	major = strtoul(host, NULL, 10);
	minor = strtoul(dot + 1, &end, 10);
	if (end == dot + 1 || (*end && *end != '.') || major > 100000 || minor > 100000)
		return "4.14";
	return major > 4 || (major == 4 && minor >= 14) ? host : "4.14";
}

/*
 * What the trace processor must know before the first event (these are read
 * as they come, not sorted by time):
 * - the sequence's first packet: its interned names start empty, and its
 *   defaults say that every timestamp is CLOCK_MONOTONIC, the clock of the
 *   records (read after the state is cleared, proto_trace_reader.cc:340-353;
 *   used for every packet of the sequence without a clock of its own,
 *   proto_trace_reader.cc:486-488);
 * - a clock snapshot from the file's anchor: CLOCK_MONOTONIC and
 *   CLOCK_REALTIME at the recording's start, and the sequence's clock 64
 *   (the guests' ftrace events) equal to CLOCK_MONOTONIC; CLOCK_MONOTONIC
 *   is the trace's own time (primary_trace_clock, proto_trace_reader.cc:760),
 *   so the times are the records' to the ns, the UI shows wall-clock time,
 *   and a trace of the same host merged with this one is related to it
 *   through these clocks;
 * - the system: Linux, the kernel release that decodes the guests' task
 *   states (declared_release; read at tokenization,
 *   system_probes_module.cc:50, system_probes_parser.cc:976);
 * - the root track, asking for the threads in the order of their sibling
 *   rank, vCPU id and guest tid (track_event_tracker.cc:268-277, 332).
 */
static void head_packets(struct ht_perfetto_export *x)
{
	char release[HT_ESC_SIZE(sizeof(x->hdr.kernel_release))];
	ht_pb_msg p, m, c;

	p = packet_begin(x);
	ht_pb_varint(&x->raw, PKT_SEQ_ID, SEQUENCE_ID);
	ht_pb_varint(&x->raw, PKT_SEQ_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
	ht_pb_varint(&x->raw, PKT_FIRST_ON_SEQ, 1);
	m = ht_pb_begin(&x->raw, PKT_DEFAULTS);
	ht_pb_varint(&x->raw, DEF_TIMESTAMP_CLOCK_ID, CLOCK_MONOTONIC_ID);
	ht_pb_end(&x->raw, m);
	packet_end(x, p);

	p = packet_begin(x);
	ht_pb_varint(&x->raw, PKT_SEQ_ID, SEQUENCE_ID);
	m = ht_pb_begin(&x->raw, PKT_CLOCK_SNAPSHOT);
	const uint64_t clocks[][2] = { { CLOCK_MONOTONIC_ID, x->hdr.start_monotonic_ns },
				       { CLOCK_REALTIME_ID, x->hdr.start_realtime_ns },
				       { CLOCK_SEQUENCE_ID, x->hdr.start_monotonic_ns } };
	for (size_t i = 0; i < ARRAY_SIZE(clocks); i++) {
		c = ht_pb_begin(&x->raw, CS_CLOCKS);
		ht_pb_varint(&x->raw, CLK_ID, clocks[i][0]);
		ht_pb_varint(&x->raw, CLK_TIMESTAMP, clocks[i][1]);
		ht_pb_end(&x->raw, c);
	}
	ht_pb_varint(&x->raw, CS_PRIMARY_TRACE_CLOCK, CLOCK_MONOTONIC_ID);
	ht_pb_end(&x->raw, m);
	packet_end(x, p);

	p = packet_begin(x);
	m = ht_pb_begin(&x->raw, PKT_SYSTEM_INFO);
	c = ht_pb_begin(&x->raw, SI_UTSNAME);
	ht_pb_string(&x->raw, UTS_SYSNAME, "Linux");
	ht_pb_string(&x->raw, UTS_RELEASE, declared_release(shown(release, sizeof(release), x->hdr.kernel_release)));
	ht_pb_string(&x->raw, UTS_MACHINE, "x86_64");
	ht_pb_end(&x->raw, c);
	ht_pb_end(&x->raw, m);
	packet_end(x, p);

	p = packet_begin(x);
	m = ht_pb_begin(&x->raw, PKT_TRACK_DESCRIPTOR);
	ht_pb_varint(&x->raw, TD_UUID, 0);
	ht_pb_varint(&x->raw, TD_THREAD_ORDERING, THREAD_ORDERING_EXPLICIT);
	ht_pb_end(&x->raw, m);
	packet_end(x, p);
}

int ht_perfetto_open(const char *path, bool force, mode_t mode, const struct ht_file_header *h,
		     const struct ht_decoder *dec, struct ht_perfetto_export **out, char *err, size_t errlen)
{
	const struct ht_output_spec spec = { .cmd = "convert", .opt = "--perfetto", .what = "a Perfetto trace",
					     .force = force };
	struct ht_perfetto_export *x = calloc(1, sizeof(*x));
	int ret;

	if (!x)
		return ht_errf(err, errlen, "out of memory");
	x->out.fd = x->out.dirfd = -1;
	ht_hashmap_init(&x->event_names, ht_hash_str, ht_equal_str, NULL);
	ht_hashmap_init(&x->arg_names, ht_hash_str, ht_equal_str, NULL);
	if (!(x->tracks = ht_id_pair_table_new()) || !(x->vms = ht_id_pair_table_new()) ||
	    !(x->gstate = ht_guest_state_new(dec)) || !(x->chain = ht_switch_chain_new())) {
		ht_perfetto_abandon(x);
		return ht_errf(err, errlen, "out of memory");
	}
	ret = ht_output_create(&x->out, path, &spec, err, errlen);
	if (!ret)
		ret = ht_output_set_access(&x->out, mode, (uid_t)-1, (gid_t)-1, err, errlen);
	if (ret) {
		ht_perfetto_abandon(x);
		return ret;
	}
	snprintf(x->path, sizeof(x->path), "%s", path);
	x->hdr = *h;
	x->dec = dec;
	head_packets(x);
	/* The names every record uses, interned once (the tables are empty: they get iids). */
	for (size_t i = 0; i < ARRAY_SIZE(record_args); i++)
		x->arg_iid[i] = intern(x, false, record_args[i]);
	x->phase_iid[0] = intern(x, true, "exit->hypercall");
	x->phase_iid[1] = intern(x, true, "hypercall->entry");
	*out = x;
	return 0;
}

int ht_perfetto_add(struct ht_perfetto_export *x, const struct ht_record *r, struct ht_reader *reader, char *err,
		    size_t errlen)
{
	const struct ht_event_desc *desc = ht_decoder_event(x->dec, r);
	struct ht_gev ev;
	struct track *t;
	uint64_t flow = 0;
	int64_t task_before;
	char name[SLICE_NAME_SIZE];

	/* A forged one decodes to nothing (ht_decoder_event): a "hypercall NR" slice, no guest side. */
	x->forged += ht_decoder_forged(x->dec, r);
	if (ht_guest_state_feed(x->gstate, r, &ev))
		return ht_errf(err, errlen, "out of memory");
	task_before = ev.kind == HT_GEV_SCHED_SWITCH ? (int64_t)ev.u.sw.prev_tid :
			ev.kind != HT_GEV_NONE ? ht_guest_cpu_task(x->gstate, r->host_pid, ev.cpu) : -1;
	t = vcpu_track(x, r, reader);
	if (!t)
		return ht_errf(err, errlen, "out of memory");
	/* The guest's event first: its flow goes from there to the host's slice. */
	if (ev.kind != HT_GEV_NONE)
		flow = guest_side(x, r, reader, &ev, desc, task_before);
	if (ev.kind == HT_GEV_FUNC_ENTRY || ev.kind == HT_GEV_FUNC_EXIT) {
		char fn[FUNCTION_NAME_SIZE];

		function_name(x, ev.u.func.addr, fn);
		snprintf(name, sizeof(name), "%s %s", desc->name, fn);
	} else if (desc) {
		snprintf(name, sizeof(name), "%s", desc->name);
	} else {
		snprintf(name, sizeof(name), "hypercall %u", r->nr);
	}
	host_slices(x, t, r, desc, name, flow);
	if (x->failed || x->raw.oom)
		return ht_errf(err, errlen, "out of memory");
	return x->raw.len >= BUNDLE_BYTES ? flush_bundle(x, err, errlen) : 0;
}

/* ---- the host's switches of vCPU threads (record --vcpu-sched) ---- */

/*
 * A vCPU thread's time off its host CPU, on a track of its own under its
 * VM: a switch can come in the middle of a hypercall (preempted between
 * kvm_exit and kvm_entry), and the records come in kvm_entry order, after
 * the switches inside them: on the thread's own track the slices would go
 * back in time.
 */
static struct track *off_cpu_track(struct ht_perfetto_export *x, const struct ht_vcpu_switch *sw,
				   struct ht_reader *reader, uint64_t *uuid)
{
	const struct ht_identity *id = reader ? ht_reader_identity(reader, sw->host_pid, sw->host_tid) : NULL;
	char name[HT_ESC_SIZE(16) + 64], thread[HT_ESC_SIZE(16)];
	uint64_t parent = vm_track(x, sw->host_pid, reader, sw->time_ns);
	struct track *t;
	bool is_new;

	if (!parent)
		return NULL;
	*uuid = track_uuid(TRACK_OFF_CPU, sw->host_pid, sw->host_tid);
	t = track_of(x, *uuid, &is_new);
	if (t && is_new) {
		shown(thread, sizeof(thread), id ? id->thread_name : "");
		snprintf(name, sizeof(name), "vCPU %u off its host CPU: %s%s(tid %u)", sw->vcpu_id, thread,
			 thread[0] ? " " : "", sw->host_tid);
		describe_named(x, *uuid, parent, name, sw->vcpu_id, sw->time_ns);
	}
	return t;
}

static void intern_switch_names(struct ht_perfetto_export *x)
{
	if (x->switch_names)
		return;
	x->switch_names = true;
	x->off_iid[0] = intern(x, true, "preempted");
	x->off_iid[1] = intern(x, true, "blocked");
	for (size_t i = 0; i < ARRAY_SIZE(switch_args); i++)
		x->switch_arg_iid[i] = intern(x, false, switch_args[i]);
}

int ht_perfetto_add_switch(struct ht_perfetto_export *x, const struct ht_vcpu_switch *sw, struct ht_reader *reader,
			   char *err, size_t errlen)
{
	char comm[sizeof(sw->other_comm) + 1], esc[HT_ESC_SIZE(sizeof(sw->other_comm))];
	uint64_t uuid;
	struct track *t;
	ht_pb_msg pkt, e;

	if (sw->kind != HT_SWITCH_OUT && sw->kind != HT_SWITCH_IN)
		return 1; /* a kind this version does not know: nothing to show */
	intern_switch_names(x);
	t = off_cpu_track(x, sw, reader, &uuid);
	if (!t)
		return ht_errf(err, errlen, "out of memory");
	/* The kernel's comm: NUL-padded, not terminated when 16 long; a name another process chose. */
	memcpy(comm, sw->other_comm, sizeof(sw->other_comm));
	comm[sizeof(sw->other_comm)] = '\0';
	shown(esc, sizeof(esc), comm);
	if (sw->kind == HT_SWITCH_OUT) {
		/* Two switch-outs in a row: the switch-in between was lost (counted): the first ends here. */
		if (t->open)
			slice_end(x, t, uuid, sw->time_ns);
		e = track_event_begin(x, t, uuid, sw->time_ns, SLICE_BEGIN, &pkt);
		if (x->off_iid[!sw->involuntary])
			ht_pb_varint(&x->raw, TE_NAME_IID, x->off_iid[!sw->involuntary]);
		else
			ht_pb_string(&x->raw, TE_NAME, sw->involuntary ? "preempted" : "blocked");
		switch_arg(x, SW_CPU, ARG_UINT, sw->cpu, NULL);
		switch_arg(x, SW_PREV_STATE, ARG_UINT, sw->prev_state, NULL);
		switch_arg(x, SW_NEXT_TID, ARG_UINT, sw->other_tid, NULL);
		switch_arg(x, SW_NEXT_PID, ARG_UINT, sw->other_pid, NULL);
		switch_arg(x, SW_NEXT_COMM, ARG_STRING, 0, esc);
		track_event_end(x, e, pkt);
		t->open = true;
	} else if (t->open) {
		/* The end's arguments join the slice's: the thread it replaced on its way back. */
		e = track_event_begin(x, t, uuid, sw->time_ns, SLICE_END, &pkt);
		switch_arg(x, SW_IN_CPU, ARG_UINT, sw->cpu, NULL);
		switch_arg(x, SW_PREV_TID, ARG_UINT, sw->other_tid, NULL);
		switch_arg(x, SW_PREV_PID, ARG_UINT, sw->other_pid, NULL);
		switch_arg(x, SW_PREV_COMM, ARG_STRING, 0, esc);
		track_event_end(x, e, pkt);
		t->open = false;
	}
	/* A switch-in without its switch-out (off its CPU when the recording started) makes no slice. */
	if (x->failed || x->raw.oom)
		return ht_errf(err, errlen, "out of memory");
	return x->raw.len >= BUNDLE_BYTES ? flush_bundle(x, err, errlen) : 0;
}

/* ---- the vCPU account (record --exits) ---- */

/*
 * A vCPU thread's account as six counter tracks, one per state ("vCPU
 * time: guest", ...): each state's seconds since the thread was first
 * seen, sampled at each EXITS block that holds the thread (the account's
 * as_of_ns), from 0 at the thread's start. Cumulative values sampled where
 * they were read draw every interval in its place: Perfetto's counter
 * track in its "rate" mode shows (next - this) / (next time - this time)
 * over [this, next), the state's share of exactly that interval, and in its
 * "value" mode the running total; a share written at the interval's end
 * would be drawn one interval late. Seconds, so that the rate reads as a
 * share (1 = all the time); the six share one y axis (y_axis_share_key).
 *
 * They are the children of a track "vCPU time" under the thread's track.
 * The trace processor resolves a track without a thread of its own under a
 * thread's track to that thread (track_event_tracker.cc:372-377) and makes
 * a counter track in that scope the thread's (thread_counter_track_event,
 * track_event_tracker.cc:484-500), a child in the track table when its
 * parent is not the thread's own track. Children are shown in the order
 * their parent asks for (viz/summary/track_event.sql: by rank when
 * explicit), the thread's own tracks by name: the group keeps the six in
 * the account's order, guest first, and folds them in the UI.
 */

static struct track *account_tracks(struct ht_perfetto_export *x, const struct ht_vcpu_wait_rec *row,
				    struct ht_reader *reader, struct track *tracks[HT_VCPU_NSTATES])
{
	uint64_t group = track_uuid(TRACK_ACCOUNT_GROUP, row->w.pid, row->w.tid);
	char name[64];
	bool is_new;
	ht_pb_msg p, d, c;

	if (!vcpu_thread_track(x, row->w.pid, row->w.tid, row->w.vcpu, row->a.start_ns, reader) ||
	    !track_of(x, group, &is_new))
		return NULL;
	if (is_new) {
		d = descriptor_begin(x, group, row->a.start_ns, &p);
		ht_pb_varint(&x->raw, TD_PARENT, track_uuid(TRACK_VCPU, row->w.pid, row->w.tid));
		ht_pb_varint(&x->raw, TD_CHILD_ORDERING, CHILD_ORDERING_EXPLICIT);
		ht_pb_string(&x->raw, TD_NAME, "vCPU time");
		ht_pb_end(&x->raw, d);
		packet_end(x, p);
	}
	for (int k = 0; k < HT_VCPU_NSTATES; k++) {
		uint64_t uuid = track_uuid(TRACK_ACCOUNT + k, row->w.pid, row->w.tid);

		if (!(tracks[k] = track_of(x, uuid, &is_new)))
			return NULL;
		if (!is_new)
			continue;
		snprintf(name, sizeof(name), "vCPU time: %s", ht_vcpu_state_names[k]);
		d = descriptor_begin(x, uuid, row->a.start_ns, &p);
		ht_pb_varint(&x->raw, TD_PARENT, group);
		ht_pb_string(&x->raw, TD_NAME, name);
		ht_pb_int(&x->raw, TD_SIBLING_RANK, k);
		c = ht_pb_begin(&x->raw, TD_COUNTER);
		ht_pb_string(&x->raw, CD_UNIT_NAME, "s");
		ht_pb_string(&x->raw, CD_Y_AXIS_SHARE_KEY, "vcpu-time");
		ht_pb_end(&x->raw, c);
		ht_pb_end(&x->raw, d);
		packet_end(x, p);
		/* A new track: its thread's start is not sampled yet. */
		tracks[k]->start_ns = UINT64_MAX;
	}
	return tracks[0];
}

/*
 * One sample: the state's seconds at ts, the nearest double to ns / 1e9:
 * the ns read back exactly while the doubles are closer than 1 ns (below
 * 2^22 s, 48 days of a thread).
 */
static void account_sample(struct ht_perfetto_export *x, struct track *t, uint64_t uuid, uint64_t ts, uint64_t ns)
{
	double seconds = (double)ns / 1e9;
	uint64_t bits;
	ht_pb_msg pkt, e = track_event_begin(x, t, uuid, ts, COUNTER, &pkt);

	memcpy(&bits, &seconds, sizeof(bits));
	ht_pb_fixed64(&x->raw, TE_COUNTER_DOUBLE, bits);
	track_event_end(x, e, pkt);
}

int ht_perfetto_add_account(struct ht_perfetto_export *x, const struct ht_vcpu_wait_rec *row,
			    struct ht_reader *reader, char *err, size_t errlen)
{
	struct track *tracks[HT_VCPU_NSTATES];
	struct track *first;

	/* A file before version 5 has no account (its rows are widened with zeros); a crafted one may not add up. */
	if (x->hdr.version < 5 || !row->a.start_ns || row->a.as_of_ns < row->a.start_ns)
		return 1;
	if (!(first = account_tracks(x, row, reader, tracks)))
		return ht_errf(err, errlen, "out of memory");
	/* The thread's start, where every state is 0: once per thread (a tid given again is a new start). */
	if (first->start_ns != row->a.start_ns) {
		for (int k = 0; k < HT_VCPU_NSTATES; k++)
			account_sample(x, tracks[k], track_uuid(TRACK_ACCOUNT + k, row->w.pid, row->w.tid),
				       row->a.start_ns, 0);
		first->start_ns = row->a.start_ns;
	}
	if (row->a.as_of_ns > row->a.start_ns)
		for (int k = 0; k < HT_VCPU_NSTATES; k++)
			account_sample(x, tracks[k], track_uuid(TRACK_ACCOUNT + k, row->w.pid, row->w.tid),
				       row->a.as_of_ns, row->a.state_ns[k]);
	if (x->failed || x->raw.oom)
		return ht_errf(err, errlen, "out of memory");
	return x->raw.len >= BUNDLE_BYTES ? flush_bundle(x, err, errlen) : 0;
}

static void attribute(struct ht_perfetto_export *x, const char *key, const char *s, long long v)
{
	ht_pb_msg a = ht_pb_begin(&x->raw, TA_ATTRIBUTE);

	ht_pb_string(&x->raw, TA_KEY, key);
	if (s)
		ht_pb_string(&x->raw, TA_STRING, s);
	else
		ht_pb_int(&x->raw, TA_LONG, v);
	ht_pb_end(&x->raw, a);
}

/* A text attribute: the file's strings (the path given, the header's) escaped as every foreign text. */
static void text_attribute(struct ht_perfetto_export *x, const char *key, const char *s)
{
	size_t size = HT_ESC_SIZE(strlen(s));
	char *esc = malloc(size);

	if (!esc) {
		x->failed = true;
		return;
	}
	attribute(x, key, shown(esc, size, s), 0);
	free(esc);
}

/* The recording's identity, as trace attributes (Perfetto UI: Overview, Info and Stats). */
static void identity(struct ht_perfetto_export *x, const struct ht_read_status *st, const char *source,
		     const char *selection)
{
	const struct ht_file_header *h = &x->hdr;
	char buf[256];
	ht_pb_msg p = packet_begin(x), a = ht_pb_begin(&x->raw, PKT_TRACE_ATTRIBUTES);

	attribute(x, "dev.hypertrace.tracer", "hypertrace-bpf " HT_VERSION, 0);
	text_attribute(x, "dev.hypertrace.trace_file", source);
	text_attribute(x, "dev.hypertrace.host_kernel_release", h->kernel_release);
	text_attribute(x, "dev.hypertrace.cpu_vendor", h->cpu_vendor);
	ht_format_wallclock(buf, sizeof(buf), h, h->start_monotonic_ns, HT_TIME_ISO);
	attribute(x, "dev.hypertrace.recording_start", buf, 0);
	attribute(x, "dev.hypertrace.recording_start_monotonic_ns", NULL, (long long)h->start_monotonic_ns);
	/* 1: every switch of a vCPU thread is on its off-CPU track, so a thread with none stayed on its CPU. */
	attribute(x, "dev.hypertrace.vcpu_switches_recorded", NULL, !!(h->filter_flags & HT_FILTER_F_VCPU_SCHED));
	if (st->has_trailer) {
		ht_format_wallclock(buf, sizeof(buf), h, st->trailer.end_monotonic_ns, HT_TIME_ISO);
		attribute(x, "dev.hypertrace.recording_end", buf, 0);
		attribute(x, "dev.hypertrace.dropped", NULL, (long long)ht_trailer_lost(&st->trailer));
	}
	if (x->forged)
		attribute(x, "dev.hypertrace.forged_guest_events", NULL, (long long)x->forged);
	/* The guest switches proven lost (each a gap the stand-in holds): the UI's Info and Stats page. */
	if (ht_switch_chain_total(x->chain))
		attribute(x, "dev.hypertrace.lost_guest_switches", NULL, (long long)ht_switch_chain_total(x->chain));
	text_attribute(x, "dev.hypertrace.selection", selection);
	text_attribute(x, "dev.hypertrace.read_status", st->has_trailer && !st->damaged ? "complete" : st->reason);
	ht_pb_end(&x->raw, a);
	packet_end(x, p);
}

int ht_perfetto_close(struct ht_perfetto_export *x, const struct ht_read_status *st, const char *source,
		      const char *selection, struct ht_perfetto_counts *counts, char *err, size_t errlen)
{
	int ret;

	identity(x, st, source, selection);
	ret = x->failed ? ht_errf(err, errlen, "out of memory") : flush_bundle(x, err, errlen);
	/* On disk before it has its name: a crash leaves the old file or the whole new one. */
	if (!ret && fsync(x->out.fd))
		ret = ht_errf(err, errlen, "cannot write %s: %s", x->path, strerror(errno));
	if (!ret)
		ret = ht_output_publish(&x->out, err, errlen);
	x->counts.lost_switches = ht_switch_chain_total(x->chain);
	if (counts)
		*counts = x->counts;
	ht_perfetto_abandon(x);
	return ret;
}

/* The interned names: the map owns its keys. */
static void free_interned(struct ht_hashmap *names)
{
	struct ht_hashmap_entry *cur;
	size_t bkt;

	ht_hashmap_for_each(names, cur, bkt)
		free((void *)cur->pkey);
	ht_hashmap_clear(names);
}

static void free_values(struct ht_id_pair_table *t)
{
	for (size_t i = 0; t && i < ht_id_pair_table_len(t); i++)
		free(ht_id_pair_table_at(t, i));
	ht_id_pair_table_free(t);
}

void ht_perfetto_abandon(struct ht_perfetto_export *x)
{
	if (!x)
		return;
	free_values(x->tracks);
	free_values(x->vms);
	free_interned(&x->event_names);
	free_interned(&x->arg_names);
	ht_guest_state_free(x->gstate);
	ht_switch_chain_free(x->chain);
	ht_pb_free(&x->raw);
	free(x->zbuf);
	/* Unpublished: the unnamed file goes with its descriptor. */
	ht_output_release(&x->out);
	free(x);
}
