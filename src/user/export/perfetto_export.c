// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/perfetto_export.h"
#include "export/perfetto_private.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "boot/boot_timeline.h"
#include "cli.h"
#include "common/errf.h"
#include "common/escape.h"
#include "common/hashmap.h"
#include "common/util.h"
#include "common/vcpu_states.h"
#include "export/guest_state.h"
#include "export/protobuf.h"
#include "export/id_pair_table.h"
#include "export/switch_chain.h"
#include "hypertrace/guest.h"
#include "tracefile/output_file.h"
#include "tracefile/wallclock.h"

static const char *const record_args[] = { "nr", "a0", "a1", "a2", "a3", "guest_rip", "exit_reason", "isa",
					   "vcpu_id", "exit_cpu", "entry_cpu", "flags", "fields" };
_Static_assert(ARRAY_SIZE(record_args) == ARG_COUNT, "record_args and its enum disagree");

static const char *const switch_args[] = { "cpu",      "prev_state", "next_tid", "next_pid", "next_comm",
					   "in_cpu",   "prev_tid",   "prev_pid", "prev_comm" };
_Static_assert(ARRAY_SIZE(switch_args) == SW_COUNT, "switch_args and its enum disagree");

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
int pf_flush_bundle(struct ht_perfetto_export *x, char *err, size_t errlen)
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

ht_pb_msg pf_packet_begin(struct ht_perfetto_export *x)
{
	x->open_packets++;
	return ht_pb_begin(&x->raw, TRACE_PACKET);
}

void pf_packet_end(struct ht_perfetto_export *x, ht_pb_msg p)
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
uint64_t pf_intern(struct ht_perfetto_export *x, bool event_name, const char *s)
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
	ht_pb_msg p = pf_packet_begin(x);
	sequence_fields(x);
	ht_pb_msg d = ht_pb_begin(&x->raw, PKT_INTERNED);
	ht_pb_msg entry = ht_pb_begin(&x->raw, event_name ? ID_EVENT_NAMES : ID_DEBUG_NAMES);
	ht_pb_varint(&x->raw, IN_IID, iid);
	ht_pb_string(&x->raw, IN_NAME, s);
	ht_pb_end(&x->raw, entry);
	ht_pb_end(&x->raw, d);
	pf_packet_end(x, p);
	return iid;
}

void pf_event_name(struct ht_perfetto_export *x, const char *name)
{
	uint64_t iid = pf_intern(x, true, name);

	if (iid)
		ht_pb_varint(&x->raw, TE_NAME_IID, iid);
	else
		ht_pb_string(&x->raw, TE_NAME, name);
}

void pf_arg_name(struct ht_perfetto_export *x, const char *name)
{
	uint64_t iid = pf_intern(x, false, name);

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

uint64_t pf_track_uuid(enum track_kind kind, uint32_t a, uint32_t b)
{
	return (uint64_t)kind << 56 | ((uint64_t)(a & 0xffffff) << 32) | b;
}

/* The track's state if described already, else NULL (then describe it). */
struct track *pf_track_of(struct ht_perfetto_export *x, uint64_t uuid, bool *new_track)
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
	*pkt = pf_packet_begin(x);
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
void pf_describe_process(struct ht_perfetto_export *x, uint64_t uuid, int32_t pid, const char *name, uint64_t ts)
{
	ht_pb_msg p, d = descriptor_begin(x, uuid, ts, &p);
	ht_pb_varint(&x->raw, TD_CHILD_ORDERING, CHILD_ORDERING_EXPLICIT);
	ht_pb_msg pd = ht_pb_begin(&x->raw, TD_PROCESS);
	ht_pb_int(&x->raw, PD_PID, pid);
	ht_pb_string(&x->raw, PD_NAME, name);
	ht_pb_end(&x->raw, pd);
	ht_pb_end(&x->raw, d);
	pf_packet_end(x, p);
}

/*
 * A thread track, ranked among its process's threads (the root track asks
 * for explicit thread order); with ranked_children, its child tracks (a vCPU
 * thread's account) show in the order of their rank too.
 */
void pf_describe_thread(struct ht_perfetto_export *x, uint64_t uuid, int32_t pid, int64_t tid, const char *name,
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
	pf_packet_end(x, p);
}

/* A named track under parent (0: a top-level track), ranked among its siblings. */
void pf_describe_named(struct ht_perfetto_export *x, uint64_t uuid, uint64_t parent, const char *name,
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
	pf_packet_end(x, p);
}


/* The VM's name as its owner chose it (escaped), else its pid. */
void pf_vm_label(char *out, size_t len, struct ht_reader *reader, uint32_t pid)
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
uint64_t pf_vm_track(struct ht_perfetto_export *x, uint32_t pid, struct ht_reader *reader, uint64_t ts)
{
	uint64_t vm_uuid = pf_track_uuid(TRACK_VM, pid, 0);
	char name[VM_LABEL_SIZE];
	bool is_new;

	if (!pf_track_of(x, vm_uuid, &is_new))
		return 0;
	if (is_new) {
		pf_vm_label(name, sizeof(name), reader, pid);
		pf_describe_process(x, vm_uuid, (int32_t)pid, name, ts);
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
	uint64_t uuid = pf_track_uuid(TRACK_VCPU, pid, tid);
	const struct ht_identity *id = reader ? ht_reader_identity(reader, pid, tid) : NULL;
	char name[VM_LABEL_SIZE], thread[HT_ESC_SIZE(16)];
	bool is_new;
	struct track *t;

	if (!pf_vm_track(x, pid, reader, ts))
		return NULL;
	t = pf_track_of(x, uuid, &is_new);
	if (t && is_new) {
		shown(thread, sizeof(thread), id ? id->thread_name : "");
		if (thread[0])
			snprintf(name, sizeof(name), "vCPU %u: %s", vcpu, thread);
		else
			snprintf(name, sizeof(name), "vCPU %u (tid %u)", vcpu, tid);
		pf_describe_thread(x, uuid, (int32_t)pid, tid, name, vcpu, true, ts);
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

ht_pb_msg pf_track_event_begin(struct ht_perfetto_export *x, struct track *t, uint64_t uuid, uint64_t ts, int type,
				   ht_pb_msg *pkt)
{
	*pkt = pf_packet_begin(x);
	ht_pb_varint(&x->raw, PKT_TIMESTAMP, on_track(x, t, ts));
	sequence_fields(x);
	ht_pb_msg e = ht_pb_begin(&x->raw, PKT_TRACK_EVENT);
	ht_pb_varint(&x->raw, TE_TYPE, (uint64_t)type);
	ht_pb_varint(&x->raw, TE_TRACK, uuid);
	return e;
}

void pf_track_event_end(struct ht_perfetto_export *x, ht_pb_msg e, ht_pb_msg pkt)
{
	ht_pb_end(&x->raw, e);
	pf_packet_end(x, pkt);
}

static void slice_end(struct ht_perfetto_export *x, struct track *t, uint64_t uuid, uint64_t ts)
{
	ht_pb_msg pkt, e = pf_track_event_begin(x, t, uuid, ts, SLICE_END, &pkt);
	pf_track_event_end(x, e, pkt);
}

/* One decoded field as a debug annotation of the "fields" dict (a sym adds NAME_sym). */
static void decoded_field(void *ctx, unsigned int i, const struct ht_field_value *v)
{
	struct ht_perfetto_export *x = ctx;
	const struct ht_field *f = v->field;
	ht_pb_msg a = ht_pb_begin(&x->raw, DA_DICT);
	char esc[FUNCTION_NAME_SIZE];

	(void)i;
	pf_arg_name(x, f->name);
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
		pf_arg_name(x, key);
		ht_pb_string(&x->raw, DA_STRING, shown(esc, sizeof(esc), v->sym));
		ht_pb_end(&x->raw, a);
	}
}

/* A decoded event's fields, as report decodes them, in a dict "fields". */
void pf_decoded_fields(struct ht_perfetto_export *x, const struct ht_event_desc *ev, const struct ht_record *r)
{
	ht_pb_msg d = ht_pb_begin(&x->raw, TE_DEBUG);

	ht_pb_varint(&x->raw, DA_NAME_IID, x->arg_iid[ARG_FIELDS]);
	ht_decoder_visit_fields(x->dec, ev, r, decoded_field, x);
	ht_pb_end(&x->raw, d);
}

/* The function's name for a slice (FUNCTION_NAME_SIZE bytes): its symbol, escaped, else its address. */
void pf_function_name(struct ht_perfetto_export *x, uint64_t addr, char *out)
{
	char sym[HT_SYM_TEXT_MAX];

	if (!ht_decoder_function(x->dec, addr, sym, sizeof(sym)))
		snprintf(sym, sizeof(sym), "0x%llx", (unsigned long long)addr);
	shown(out, FUNCTION_NAME_SIZE, sym);
}

void pf_prepare_field_names(struct ht_perfetto_export *x, const struct ht_event_desc *ev)
{
	for (unsigned int i = 0; ev && i < ev->nfields; i++) {
		pf_intern(x, false, ev->fields[i].name);
		if (ev->fields[i].type == HT_FT_SYM) {
			char key[HT_CAT_NAME_MAX + 8];
			snprintf(key, sizeof(key), "%s_sym", ev->fields[i].name);
			pf_intern(x, false, key);
		}
	}
}

/* The host's view: the hypercall and its two phases on the vCPU thread's track. */
static void host_slices(struct ht_perfetto_export *x, struct track *t, const struct ht_record *r,
			const struct ht_event_desc *ev, const char *name, uint64_t flow)
{
	uint64_t uuid = pf_track_uuid(TRACK_VCPU, r->host_pid, r->host_tid);
	uint64_t hcall = r->exit_ns + r->exit_to_hcall_ns, entry = hcall + r->hcall_to_entry_ns;
	uint64_t iid;
	ht_pb_msg pkt, e;

	/* "hypercall NR" names repeat: the last one's iid is kept. */
	if (!ev && x->last_nr_iid && x->last_nr == r->nr) {
		iid = x->last_nr_iid;
	} else {
		iid = pf_intern(x, true, name);
		if (!ev) {
			x->last_nr = r->nr;
			x->last_nr_iid = iid;
		}
	}
	pf_prepare_field_names(x, ev);
	e = pf_track_event_begin(x, t, uuid, r->exit_ns, SLICE_BEGIN, &pkt);
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
		pf_decoded_fields(x, ev, r);
	if (flow)
		ht_pb_fixed64(&x->raw, TE_TERM_FLOW, flow);
	pf_track_event_end(x, e, pkt);
	e = pf_track_event_begin(x, t, uuid, r->exit_ns, SLICE_BEGIN, &pkt);
	ht_pb_varint(&x->raw, TE_NAME_IID, x->phase_iid[0]);
	pf_track_event_end(x, e, pkt);
	slice_end(x, t, uuid, hcall);
	e = pf_track_event_begin(x, t, uuid, hcall, SLICE_BEGIN, &pkt);
	ht_pb_varint(&x->raw, TE_NAME_IID, x->phase_iid[1]);
	pf_track_event_end(x, e, pkt);
	slice_end(x, t, uuid, entry);
	slice_end(x, t, uuid, entry);
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

	p = pf_packet_begin(x);
	ht_pb_varint(&x->raw, PKT_SEQ_ID, SEQUENCE_ID);
	ht_pb_varint(&x->raw, PKT_SEQ_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
	ht_pb_varint(&x->raw, PKT_FIRST_ON_SEQ, 1);
	m = ht_pb_begin(&x->raw, PKT_DEFAULTS);
	ht_pb_varint(&x->raw, DEF_TIMESTAMP_CLOCK_ID, CLOCK_MONOTONIC_ID);
	ht_pb_end(&x->raw, m);
	pf_packet_end(x, p);

	p = pf_packet_begin(x);
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
	pf_packet_end(x, p);

	p = pf_packet_begin(x);
	m = ht_pb_begin(&x->raw, PKT_SYSTEM_INFO);
	c = ht_pb_begin(&x->raw, SI_UTSNAME);
	ht_pb_string(&x->raw, UTS_SYSNAME, "Linux");
	ht_pb_string(&x->raw, UTS_RELEASE, declared_release(shown(release, sizeof(release), x->hdr.kernel_release)));
	ht_pb_string(&x->raw, UTS_MACHINE, "x86_64");
	ht_pb_end(&x->raw, c);
	ht_pb_end(&x->raw, m);
	pf_packet_end(x, p);

	p = pf_packet_begin(x);
	m = ht_pb_begin(&x->raw, PKT_TRACK_DESCRIPTOR);
	ht_pb_varint(&x->raw, TD_UUID, 0);
	ht_pb_varint(&x->raw, TD_THREAD_ORDERING, THREAD_ORDERING_EXPLICIT);
	ht_pb_end(&x->raw, m);
	pf_packet_end(x, p);
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
		x->arg_iid[i] = pf_intern(x, false, record_args[i]);
	x->phase_iid[0] = pf_intern(x, true, "exit->hypercall");
	x->phase_iid[1] = pf_intern(x, true, "hypercall->entry");
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
		flow = pf_guest_side(x, r, reader, &ev, desc, task_before);
	if (ev.kind == HT_GEV_FUNC_ENTRY || ev.kind == HT_GEV_FUNC_EXIT) {
		char fn[FUNCTION_NAME_SIZE];

		pf_function_name(x, ev.u.func.addr, fn);
		snprintf(name, sizeof(name), "%s %s", desc->name, fn);
	} else if (desc) {
		snprintf(name, sizeof(name), "%s", desc->name);
	} else {
		snprintf(name, sizeof(name), "hypercall %u", r->nr);
	}
	host_slices(x, t, r, desc, name, flow);
	if (x->failed || x->raw.oom)
		return ht_errf(err, errlen, "out of memory");
	return x->raw.len >= BUNDLE_BYTES ? pf_flush_bundle(x, err, errlen) : 0;
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
	uint64_t parent = pf_vm_track(x, sw->host_pid, reader, sw->time_ns);
	struct track *t;
	bool is_new;

	if (!parent)
		return NULL;
	*uuid = pf_track_uuid(TRACK_OFF_CPU, sw->host_pid, sw->host_tid);
	t = pf_track_of(x, *uuid, &is_new);
	if (t && is_new) {
		shown(thread, sizeof(thread), id ? id->thread_name : "");
		snprintf(name, sizeof(name), "vCPU %u off its host CPU: %s%s(tid %u)", sw->vcpu_id, thread,
			 thread[0] ? " " : "", sw->host_tid);
		pf_describe_named(x, *uuid, parent, name, sw->vcpu_id, sw->time_ns);
	}
	return t;
}

static void intern_switch_names(struct ht_perfetto_export *x)
{
	if (x->switch_names)
		return;
	x->switch_names = true;
	x->off_iid[0] = pf_intern(x, true, "preempted");
	x->off_iid[1] = pf_intern(x, true, "blocked");
	for (size_t i = 0; i < ARRAY_SIZE(switch_args); i++)
		x->switch_arg_iid[i] = pf_intern(x, false, switch_args[i]);
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
		e = pf_track_event_begin(x, t, uuid, sw->time_ns, SLICE_BEGIN, &pkt);
		if (x->off_iid[!sw->involuntary])
			ht_pb_varint(&x->raw, TE_NAME_IID, x->off_iid[!sw->involuntary]);
		else
			ht_pb_string(&x->raw, TE_NAME, sw->involuntary ? "preempted" : "blocked");
		switch_arg(x, SW_CPU, ARG_UINT, sw->cpu, NULL);
		switch_arg(x, SW_PREV_STATE, ARG_UINT, sw->prev_state, NULL);
		switch_arg(x, SW_NEXT_TID, ARG_UINT, sw->other_tid, NULL);
		switch_arg(x, SW_NEXT_PID, ARG_UINT, sw->other_pid, NULL);
		switch_arg(x, SW_NEXT_COMM, ARG_STRING, 0, esc);
		pf_track_event_end(x, e, pkt);
		t->open = true;
	} else if (t->open) {
		/* The end's arguments join the slice's: the thread it replaced on its way back. */
		e = pf_track_event_begin(x, t, uuid, sw->time_ns, SLICE_END, &pkt);
		switch_arg(x, SW_IN_CPU, ARG_UINT, sw->cpu, NULL);
		switch_arg(x, SW_PREV_TID, ARG_UINT, sw->other_tid, NULL);
		switch_arg(x, SW_PREV_PID, ARG_UINT, sw->other_pid, NULL);
		switch_arg(x, SW_PREV_COMM, ARG_STRING, 0, esc);
		pf_track_event_end(x, e, pkt);
		t->open = false;
	}
	/* A switch-in without its switch-out (off its CPU when the recording started) makes no slice. */
	if (x->failed || x->raw.oom)
		return ht_errf(err, errlen, "out of memory");
	return x->raw.len >= BUNDLE_BYTES ? pf_flush_bundle(x, err, errlen) : 0;
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
	uint64_t group = pf_track_uuid(TRACK_ACCOUNT_GROUP, row->w.pid, row->w.tid);
	char name[64];
	bool is_new;
	ht_pb_msg p, d, c;

	if (!vcpu_thread_track(x, row->w.pid, row->w.tid, row->w.vcpu, row->a.start_ns, reader) ||
	    !pf_track_of(x, group, &is_new))
		return NULL;
	if (is_new) {
		d = descriptor_begin(x, group, row->a.start_ns, &p);
		ht_pb_varint(&x->raw, TD_PARENT, pf_track_uuid(TRACK_VCPU, row->w.pid, row->w.tid));
		ht_pb_varint(&x->raw, TD_CHILD_ORDERING, CHILD_ORDERING_EXPLICIT);
		ht_pb_string(&x->raw, TD_NAME, "vCPU time");
		ht_pb_end(&x->raw, d);
		pf_packet_end(x, p);
	}
	for (int k = 0; k < HT_VCPU_NSTATES; k++) {
		uint64_t uuid = pf_track_uuid(TRACK_ACCOUNT + k, row->w.pid, row->w.tid);

		if (!(tracks[k] = pf_track_of(x, uuid, &is_new)))
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
		pf_packet_end(x, p);
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
	ht_pb_msg pkt, e = pf_track_event_begin(x, t, uuid, ts, COUNTER, &pkt);

	memcpy(&bits, &seconds, sizeof(bits));
	ht_pb_fixed64(&x->raw, TE_COUNTER_DOUBLE, bits);
	pf_track_event_end(x, e, pkt);
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
			account_sample(x, tracks[k], pf_track_uuid(TRACK_ACCOUNT + k, row->w.pid, row->w.tid),
				       row->a.start_ns, 0);
		first->start_ns = row->a.start_ns;
	}
	if (row->a.as_of_ns > row->a.start_ns)
		for (int k = 0; k < HT_VCPU_NSTATES; k++)
			account_sample(x, tracks[k], pf_track_uuid(TRACK_ACCOUNT + k, row->w.pid, row->w.tid),
				       row->a.as_of_ns, row->a.state_ns[k]);
	if (x->failed || x->raw.oom)
		return ht_errf(err, errlen, "out of memory");
	return x->raw.len >= BUNDLE_BYTES ? pf_flush_bundle(x, err, errlen) : 0;
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
	ht_pb_msg p = pf_packet_begin(x), a = ht_pb_begin(&x->raw, PKT_TRACE_ATTRIBUTES);

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
	pf_packet_end(x, p);
}

int ht_perfetto_close(struct ht_perfetto_export *x, const struct ht_read_status *st, const char *source,
		      const char *selection, struct ht_perfetto_counts *counts, char *err, size_t errlen)
{
	int ret;

	ret = pf_write_boots(x, err, errlen);
	if (!ret) {
		identity(x, st, source, selection);
		ret = x->failed ? ht_errf(err, errlen, "out of memory") : pf_flush_bundle(x, err, errlen);
	}
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
	if (x->boots) {
		ht_boot_timelines_free(x->boots);
		free(x->boots);
	}
	ht_pb_free(&x->raw);
	free(x->zbuf);
	/* Unpublished: the unnamed file goes with its descriptor. */
	ht_output_release(&x->out);
	free(x);
}
