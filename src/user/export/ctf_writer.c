// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/ctf_writer.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "common/errf.h"
#include "export/ctf_guest.h"
#include "export/ctf_trace.h"
#include "export/id_pair_table.h"
#include "export/tsdl.h"
#include "tracefile/output_file.h"
#include "tracefile/wallclock.h"

/* event.context (pid, tid): before the fields of every event. */
#define EVENT_CONTEXT_BYTES (4 + 4)
/* A hypercall event after its header: event.context and the record's fields. */
#define HYPERCALL_BYTES (EVENT_CONTEXT_BYTES + 4 + 5 * 8 + 2 + 4 + 1 + 4 + 4 + 2 + 2 + 1)
/* The id of the one event class, in every event header: room for more classes later. */
#define HYPERCALL_EVENT_ID 0
#define RECORDING_STREAM_ID 0 /* stream_instance_id of the stream that carries the drops */

_Static_assert(HT_CTF_PACKET_PREAMBLE_BYTES + HT_CTF_EVENT_HEADER_BYTES + HYPERCALL_BYTES <= HT_CTF_PACKET_BYTES,
	       "packet too small");

struct ht_ctf_writer {
	struct ht_output out; /* built in a temporary directory, renamed into place once complete */
	struct ht_ctf_trace *trace; /* in out's temporary directory */
	struct ht_file_header hdr;
	struct ht_id_pair_table *streams; /* (pid, tid) -> struct ht_ctf_stream of trace */
	unsigned long long records;
	unsigned long long forged; /* records of the guest module's nr it did not send: plain hypercall events */
	uint64_t last_ns; /* latest record time, for a file without trailer */
	const struct ht_decoder *dec; /* guest events as event classes of their own, if set */
};

/* event.header + event.context, and the largest guest event after them. */
#define GUEST_EVENT_MAX_BYTES (HT_CTF_EVENT_HEADER_BYTES + EVENT_CONTEXT_BYTES + 18 + \
			       HT_CAT_MAX_FIELDS * (8 + HT_CTF_GUEST_SYM_MAX))
_Static_assert(HT_CTF_PACKET_PREAMBLE_BYTES + GUEST_EVENT_MAX_BYTES <= HT_CTF_PACKET_BYTES, "packet too small");

void ht_ctf_decode(struct ht_ctf_writer *w, const struct ht_decoder *dec)
{
	w->dec = dec;
}

int ht_ctf_open(const char *dir, mode_t mode, const struct ht_file_header *h, struct ht_ctf_writer **out,
		char *err, size_t errlen)
{
	const struct ht_output_spec spec = { .cmd = "convert", .opt = "--ctf", .what = "a CTF trace" };
	struct ht_ctf_writer *w = calloc(1, sizeof(*w));
	int ret;

	if (!w)
		return ht_errf_status(err, errlen, -ENOMEM, "out of memory");
	/* ht_ctf_abandon frees what is made of w so far, and removes what was written. */
	w->out.fd = w->out.dirfd = -1;
	if (!(w->streams = ht_id_pair_table_new())) {
		ret = ht_errf_status(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	ret = ht_output_create_dir(&w->out, dir, &spec, err, errlen);
	if (!ret)
		ret = ht_output_set_access(&w->out, mode, (uid_t)-1, (gid_t)-1, err, errlen);
	if (!ret) {
		/* The trace is the output's temporary directory itself. */
		const struct ht_ctf_trace_spec trace = { .parent_fd = w->out.fd, .path = dir, .salt = h->start_realtime_ns };
		ret = ht_ctf_trace_open(&trace, &w->trace, err, errlen);
	}
	if (ret)
		goto fail;
	w->hdr = *h;
	w->last_ns = h->start_monotonic_ns;
	*out = w;
	return 0;
fail:
	ht_ctf_abandon(w);
	return ret;
}

static struct ht_ctf_stream *stream_of(struct ht_ctf_writer *w, const struct ht_record *r)
{
	struct ht_ctf_stream *s = ht_id_pair_table_get(w->streams, r->host_pid, r->host_tid);
	char name[64];

	if (s)
		return s;
	/* Named for a reader browsing the directory; the vCPU id is the thread's first. */
	snprintf(name, sizeof(name), "pid%u_vcpu%u_tid%u", r->host_pid, r->vcpu_id, r->host_tid);
	/* Never RECORDING_STREAM_ID: a tid is never 0 with a pid. */
	s = ht_ctf_stream_new(w->trace, name, (uint64_t)r->host_pid << 32 | r->host_tid, 0);
	if (s && ht_id_pair_table_put(w->streams, r->host_pid, r->host_tid, s))
		s = NULL; /* the trace frees it */
	return s;
}

int ht_ctf_add(struct ht_ctf_writer *w, const struct ht_record *r, char *err, size_t errlen)
{
	struct ht_ctf_stream *s = stream_of(w, r);
	unsigned char *p, *at;
	int ret;

	if (!s)
		return ht_errf_status(err, errlen, -ENOMEM, "out of memory");
	const struct ht_event_desc *gev = w->dec ? ht_decoder_event(w->dec, r) : NULL;

	w->forged += w->dec && ht_decoder_forged(w->dec, r);
	size_t size = gev ? EVENT_CONTEXT_BYTES + ht_ctf_guest_size(w->dec, gev, r) : HYPERCALL_BYTES;
	/* A vCPU thread's records are in time order, unless the file is odd: then their time is raised. */
	ret = ht_ctf_event_reserve(w->trace, s, gev ? ht_ctf_guest_event_id(w->dec, gev) : HYPERCALL_EVENT_ID,
				   r->exit_ns, size, &at, err, errlen);
	if (ret)
		return ret;
	if (r->exit_ns > w->last_ns)
		w->last_ns = r->exit_ns;
	w->records++;

	/* In the order of event.context and the event's fields in the metadata. */
	p = ht_ctf_put_u32(at, r->host_pid);
	p = ht_ctf_put_u32(p, r->host_tid);
	if (gev) {
		p = ht_ctf_guest_put(w->dec, gev, r, p);
		assert(p == at + size);
		return 0;
	}
	p = ht_ctf_put_u32(p, r->nr);
	p = ht_ctf_put_u64(p, r->a0);
	p = ht_ctf_put_u64(p, r->a1);
	p = ht_ctf_put_u64(p, r->a2);
	p = ht_ctf_put_u64(p, r->a3);
	p = ht_ctf_put_u64(p, r->guest_rip);
	p = ht_ctf_put_u16(p, r->vcpu_id);
	p = ht_ctf_put_u32(p, r->exit_reason);
	p = ht_ctf_put_u8(p, r->isa);
	p = ht_ctf_put_u32(p, r->exit_to_hcall_ns);
	p = ht_ctf_put_u32(p, r->hcall_to_entry_ns);
	p = ht_ctf_put_u16(p, r->exit_cpu);
	p = ht_ctf_put_u16(p, r->entry_cpu);
	p = ht_ctf_put_u8(p, r->flags);
	assert(p == at + size);
	return 0;
}

unsigned long long ht_ctf_reordered(const struct ht_ctf_writer *w)
{
	return ht_ctf_trace_reordered(w->trace);
}

/* A TSDL string entry (export/tsdl.h). */
static void put_string(FILE *f, const char *key, const char *v)
{
	fprintf(f, "\t%s = \"", key);
	ht_tsdl_string(f, v);
	fputs("\";\n", f);
}

static void put_time(FILE *f, const char *key, const struct ht_file_header *h, uint64_t mono)
{
	char when[64];

	ht_format_wallclock(when, sizeof(when), h, mono, HT_TIME_ISO);
	put_string(f, key, when);
}

static void write_env(FILE *f, const struct ht_ctf_writer *w, const struct ht_read_status *st,
		      const char *source, const char *selection)
{
	const struct ht_file_header *h = &w->hdr;
	char buf[256];
	size_t used = 0;

	fputs("env {\n", f);
	put_string(f, "tracer_name", "hypertrace-bpf");
	put_string(f, "tracer_version", HT_VERSION);
	fprintf(f, "\ttrace_file_format = %u;\n", h->version);
	put_string(f, "trace_file", source);
	put_string(f, "host_kernel_release", h->kernel_release);
	put_string(f, "cpu_vendor", h->cpu_vendor);
	for (__u32 i = 0; i < h->filter_nr_count && i < HT_MAX_SELECTED_NR; i++)
		used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%u", i ? "," : "", h->filter_nr[i]);
	put_string(f, "filter_nr", buf);
	if (h->filter_flags & HT_FILTER_F_EXIT_REASON)
		snprintf(buf, sizeof(buf), "0x%x", h->filter_exit_reason);
	else
		snprintf(buf, sizeof(buf), "hypercall exit (VMX 18 VMCALL, SVM 0x81 VMMCALL)");
	put_string(f, "filter_exit_reason", buf);
	snprintf(buf, sizeof(buf), "%u", h->filter_tgid);
	put_string(f, "filter_pid", (h->filter_flags & HT_FILTER_F_TGID) ? buf : "any");
	snprintf(buf, sizeof(buf), "%u", h->filter_vcpu);
	put_string(f, "filter_vcpu", (h->filter_flags & HT_FILTER_F_VCPU) ? buf : "any");
	fprintf(f, "\tringbuf_bytes = %u;\n", h->ringbuf_bytes);
	put_time(f, "recording_start", h, h->start_monotonic_ns);
	fprintf(f, "\trecording_start_realtime_ns = %llu;\n", (unsigned long long)h->start_realtime_ns);
	if (st->has_trailer) {
		const struct ht_trailer *t = &st->trailer;
		put_time(f, "recording_end", h, t->end_monotonic_ns);
		fprintf(f, "\trecording_end_realtime_ns = %llu;\n", (unsigned long long)t->end_realtime_ns);
		fprintf(f, "\trecording_records = %llu;\n", (unsigned long long)t->records);
		fprintf(f, "\tdropped = %llu;\n", (unsigned long long)ht_trailer_lost(t));
		fprintf(f, "\tdropped_ringbuf_full = %llu;\n", (unsigned long long)t->ringbuf_drops);
		fprintf(f, "\tdropped_no_thread_state = %llu;\n", (unsigned long long)t->state_alloc_fail);
		fprintf(f, "\tdropped_superseded = %llu;\n", (unsigned long long)t->superseded);
		fprintf(f, "\tdropped_not_written = %llu;\n", (unsigned long long)t->not_written);
		fprintf(f, "\tunselected_nr = %llu;\n", (unsigned long long)t->unselected_nr);
	} else {
		put_string(f, "recording_end", "unknown: the trace file has no trailer");
	}
	put_string(f, "selection", selection);
	fprintf(f, "\tevents = %llu;\n", w->records);
	if (w->forged)
		fprintf(f, "\tforged_guest_events = %llu;\n", w->forged);
	put_string(f, "read_status", st->damaged ? st->reason :
				     st->has_trailer ? "complete" : st->reason);
	fputs("};\n\n", f);
}

/* After the unsigned types ht_ctf_metadata_open declares. */
static const char tsdl_types[] =
	"typealias integer { size = 32; align = 8; signed = true; } := int32_t;\n"
	"typealias integer { size = 8; align = 8; signed = false; base = 16; } := hex8_t;\n"
	"typealias integer { size = 32; align = 8; signed = false; base = 16; } := hex32_t;\n"
	"typealias integer { size = 64; align = 8; signed = false; base = 16; } := hex64_t;\n\n";

/* Field order and sizes match ht_ctf_add; everything is byte-aligned, so there is no padding. */
static const char tsdl_streams[] =
	"typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } := clock_ns_t;\n\n"
	"stream {\n"
	"\tid = 0;\n"
	"\tpacket.context := struct {\n"
	"\t\tclock_ns_t timestamp_begin;\n"
	"\t\tclock_ns_t timestamp_end;\n"
	"\t\tuint64_t content_size;\n"
	"\t\tuint64_t packet_size;\n"
	"\t\tuint64_t packet_seq_num;\n"
	"\t\tuint64_t events_discarded;\n"
	"\t};\n"
	"\tevent.header := struct {\n"
	"\t\tuint16_t id;\n"
	"\t\tclock_ns_t timestamp;\n"
	"\t};\n"
	"\tevent.context := struct {\n"
	"\t\tint32_t _pid;\n"
	"\t\tint32_t _tid;\n"
	"\t};\n"
	"};\n\n"
	"event {\n"
	"\tname = \"hypercall\";\n"
	"\tid = 0;\n"
	"\tstream_id = 0;\n"
	"\tfields := struct {\n"
	"\t\tuint32_t nr;\n"
	"\t\thex64_t a0;\n"
	"\t\thex64_t a1;\n"
	"\t\thex64_t a2;\n"
	"\t\thex64_t a3;\n"
	"\t\thex64_t guest_rip;\n"
	"\t\tuint16_t vcpu_id;\n"
	"\t\thex32_t exit_reason;\n"
	"\t\tenum : uint8_t { VMX = 1, SVM = 2 } isa;\n"
	"\t\tuint32_t exit_to_hcall_ns;\n"
	"\t\tuint32_t hcall_to_entry_ns;\n"
	"\t\tuint16_t exit_cpu;\n"
	"\t\tuint16_t entry_cpu;\n"
	"\t\thex8_t flags;\n"
	"\t};\n"
	"};\n";

static int write_metadata(const struct ht_ctf_writer *w, const struct ht_read_status *st,
			  const char *source, const char *selection, char *err, size_t errlen)
{
	const struct ht_file_header *h = &w->hdr;
	FILE *f;
	int ret = ht_ctf_metadata_open(w->trace, &f, err, errlen);

	if (ret)
		return ret;
	fputs(tsdl_types, f);
	ht_ctf_metadata_trace(w->trace, f);
	write_env(f, w, st, source, selection);
	/*
	 * The clock counts CLOCK_MONOTONIC ns; its offset makes readers show
	 * wall-clock time. Modulo 2^64: a crafted header's anchors must not
	 * overflow it.
	 */
	ht_ctf_metadata_clock(w->trace, f,
			      "CLOCK_MONOTONIC of the traced host; offset from the trace file's wall-clock anchor",
			      (int64_t)(h->start_realtime_ns - h->start_monotonic_ns));
	fputs(tsdl_streams, f);
	if (w->dec)
		ht_ctf_guest_metadata(w->dec, f);
	return ht_ctf_metadata_close(w->trace, f, err, errlen);
}

/*
 * The recording's losses are not any thread's: they go to a stream of their
 * own, as an increase of events_discarded between its two (empty) packets,
 * which is where CTF readers count discarded events.
 */
static int write_recording_stream(struct ht_ctf_writer *w, const struct ht_read_status *st,
				  char *err, size_t errlen)
{
	struct ht_ctf_stream *s = ht_ctf_stream_new(w->trace, "recording", RECORDING_STREAM_ID, 0);
	uint64_t start = w->hdr.start_monotonic_ns;
	uint64_t end = st->has_trailer ? st->trailer.end_monotonic_ns : w->last_ns;
	uint64_t lost = st->has_trailer ? ht_trailer_lost(&st->trailer) : 0;
	int ret;

	if (!s)
		return ht_errf_status(err, errlen, -ENOMEM, "out of memory");
	if (end < start)
		end = start;
	s->ts_begin = start;
	if (!lost)
		return ht_ctf_stream_flush(w->trace, s, end, 0, err, errlen);
	ret = ht_ctf_stream_flush(w->trace, s, start, 0, err, errlen);
	return ret ? ret : ht_ctf_stream_flush(w->trace, s, end, lost, err, errlen);
}

int ht_ctf_close(struct ht_ctf_writer *w, const struct ht_read_status *st, const char *source,
		 const char *selection, char *err, size_t errlen)
{
	int ret = ht_ctf_trace_flush(w->trace, err, errlen);

	if (!ret)
		ret = write_recording_stream(w, st, err, errlen);
	if (!ret)
		ret = write_metadata(w, st, source, selection, err, errlen);
	if (!ret)
		ret = ht_output_publish(&w->out, err, errlen);
	ht_ctf_abandon(w);
	return ret;
}

void ht_ctf_abandon(struct ht_ctf_writer *w)
{
	if (!w)
		return;
	ht_ctf_trace_free(w->trace);
	ht_id_pair_table_free(w->streams);
	/* Unpublished: the temporary directory and everything in it go. */
	ht_output_release(&w->out);
	free(w);
}
