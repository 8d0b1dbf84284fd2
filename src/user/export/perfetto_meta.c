// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert --perfetto, what the trace says of itself (perfetto_private.h):
 * the packets the trace processor must read before the first event (the
 * sequence's defaults, the clock snapshot, the system, the root track), and
 * at the end the recording's identity as trace attributes.
 */
#include "export/perfetto_private.h"

#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "tracefile/wallclock.h"

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
void pf_head_packets(struct ht_perfetto_export *x)
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
void pf_identity(struct ht_perfetto_export *x, const struct ht_read_status *st, const char *source,
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
	/* The guests' initcalls not drawn: of guests whose trace has no clock pair, and those that fit no track. */
	if (x->counts.initcalls.vms_without_clock)
		attribute(x, "dev.hypertrace.initcall_vms_without_clock", NULL,
			  (long long)x->counts.initcalls.vms_without_clock);
	if (x->counts.initcalls.not_drawn)
		attribute(x, "dev.hypertrace.initcalls_not_drawn", NULL, (long long)x->counts.initcalls.not_drawn);
	text_attribute(x, "dev.hypertrace.selection", selection);
	text_attribute(x, "dev.hypertrace.read_status", st->has_trailer && !st->damaged ? "complete" : st->reason);
	ht_pb_end(&x->raw, a);
	pf_packet_end(x, p);
}
