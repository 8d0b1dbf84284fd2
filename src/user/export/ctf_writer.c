// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/ctf_writer.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli.h"
#include "common/errf.h"
#include "export/ctf_guest.h"
#include "export/thread_table.h"
#include "export/tsdl.h"
#include "tracefile/output_file.h"
#include "tracefile/wallclock.h"

#define CTF_MAGIC 0xc1fc1fc1u
/* packet.header: magic, uuid[16], stream_id, stream_instance_id; packet.context: six u64. */
#define PACKET_HEADER_BYTES (4 + 16 + 4 + 8)
#define PACKET_PREAMBLE_BYTES (PACKET_HEADER_BYTES + 6 * 8)
/* event.header (id, timestamp), event.context (pid, tid), the record's fields. */
#define EVENT_BYTES (2 + 8 + 4 + 4 + 4 + 5 * 8 + 2 + 4 + 1 + 4 + 4 + 2 + 2 + 1)
/* The id of the one event class, in every event header: room for more classes later. */
#define HYPERCALL_EVENT_ID 0
#define RECORDING_STREAM_ID 0 /* stream_instance_id of the stream that carries the drops */

_Static_assert(PACKET_PREAMBLE_BYTES + EVENT_BYTES <= HT_CTF_PACKET_BYTES, "packet too small");

struct ctf_stream {
	char name[64];
	uint64_t instance_id;
	uint64_t seq;
	uint64_t ts_begin, ts_last;
	size_t len; /* bytes used in buf, the preamble included */
	unsigned char buf[HT_CTF_PACKET_BYTES];
};

struct ht_ctf_writer {
	char dir[4096];       /* as given, for messages */
	struct ht_output out; /* built in a temporary directory, renamed into place once complete */
	int dirfd;            /* out.fd: that temporary directory */
	struct ht_file_header hdr;
	unsigned char uuid[16];
	struct ht_thread_table *streams;
	unsigned long long records, reordered;
	unsigned long long forged; /* records of the guest module's nr it did not send: plain hypercall events */
	uint64_t last_ns; /* latest record time, for a file without trailer */
	const struct ht_decoder *dec; /* guest events as event classes of their own, if set */
};

/* event.header + event.context, and the largest guest event after them. */
#define GUEST_EVENT_MAX_BYTES (2 + 8 + 4 + 4 + 18 + HT_CAT_MAX_FIELDS * (8 + HT_CTF_GUEST_SYM_MAX))
_Static_assert(PACKET_PREAMBLE_BYTES + GUEST_EVENT_MAX_BYTES <= HT_CTF_PACKET_BYTES, "packet too small");

void ht_ctf_decode(struct ht_ctf_writer *w, const struct ht_decoder *dec)
{
	w->dec = dec;
}

/* Each stores v at p and returns the byte after it. The CTF byte order is little-endian, as x86-64's. */
static unsigned char *put_u8(unsigned char *p, uint8_t v)
{
	*p = v;
	return p + 1;
}

static unsigned char *put_u16(unsigned char *p, uint16_t v)
{
	memcpy(p, &v, sizeof(v));
	return p + sizeof(v);
}

static unsigned char *put_u32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
	return p + sizeof(v);
}

static unsigned char *put_u64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
	return p + sizeof(v);
}

int ht_ctf_open(const char *dir, mode_t mode, const struct ht_file_header *h, struct ht_ctf_writer **out,
		char *err, size_t errlen)
{
	const struct ht_output_spec spec = { .cmd = "convert", .opt = "--ctf", .what = "a CTF trace" };
	struct ht_ctf_writer *w;
	int ret;

	if (strlen(dir) + 80 > sizeof(w->dir))
		return ht_errf_status(err, errlen, -ENAMETOOLONG, "directory name too long: %s", dir);
	w = calloc(1, sizeof(*w));
	if (!w || !(w->streams = ht_thread_table_new())) {
		free(w);
		return ht_errf_status(err, errlen, -ENOMEM, "out of memory");
	}
	ret = ht_output_create_dir(&w->out, dir, &spec, err, errlen);
	if (!ret)
		ret = ht_output_set_access(&w->out, mode, (uid_t)-1, (gid_t)-1, err, errlen);
	if (ret) {
		ht_output_release(&w->out);
		ht_thread_table_free(w->streams);
		free(w);
		return ret;
	}
	w->dirfd = w->out.fd;
	snprintf(w->dir, sizeof(w->dir), "%s", dir);
	w->hdr = *h;
	w->last_ns = h->start_monotonic_ns;
	if (getrandom(w->uuid, sizeof(w->uuid), 0) != sizeof(w->uuid)) {
		/* Only needs to differ between traces; the clocks do that well enough. */
		uint64_t a = h->start_realtime_ns, b = h->start_monotonic_ns ^ (uint64_t)getpid();
		memcpy(w->uuid, &a, 8);
		memcpy(w->uuid + 8, &b, 8);
	}
	w->uuid[6] = (w->uuid[6] & 0x0f) | 0x40; /* RFC 4122 version 4 */
	w->uuid[8] = (w->uuid[8] & 0x3f) | 0x80;
	*out = w;
	return 0;
}

static struct ctf_stream *stream_new(const char *name, uint64_t instance_id)
{
	struct ctf_stream *s = malloc(sizeof(*s));

	if (!s)
		return NULL;
	memset(s, 0, offsetof(struct ctf_stream, buf));
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->instance_id = instance_id;
	s->len = PACKET_PREAMBLE_BYTES;
	return s;
}

/* Appends the stream's packet (preamble filled in now) to its file. */
static int flush_packet(struct ht_ctf_writer *w, struct ctf_stream *s, uint64_t ts_end,
			uint64_t events_discarded, char *err, size_t errlen)
{
	unsigned char *p = s->buf;
	char path[sizeof(w->dir) + sizeof(s->name) + 2];
	const unsigned char *packet = s->buf;
	size_t off = 0;
	int fd;

	/* In the order of packet.header and packet.context in the metadata. */
	p = put_u32(p, CTF_MAGIC);
	memcpy(p, w->uuid, 16);
	p = put_u32(p + 16, 0); /* stream_id: the one stream class */
	p = put_u64(p, s->instance_id);
	p = put_u64(p, s->ts_begin);
	p = put_u64(p, ts_end);
	p = put_u64(p, (uint64_t)s->len * 8); /* content_size, in bits */
	p = put_u64(p, (uint64_t)s->len * 8); /* packet_size: no padding */
	p = put_u64(p, s->seq);
	p = put_u64(p, events_discarded);
	assert(p == s->buf + PACKET_PREAMBLE_BYTES);

	snprintf(path, sizeof(path), "%s/%s", w->dir, s->name);
	fd = openat(w->dirfd, s->name, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return ht_errf_status(err, errlen, -errno, "cannot write %s: %s", path, strerror(errno));
	while (off < s->len) {
		ssize_t n = write(fd, packet + off, s->len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int ret = n < 0 ? -errno : -EIO;
			close(fd);
			return ht_errf_status(err, errlen, ret, "cannot write %s: %s", path, strerror(-ret));
		}
		off += (size_t)n;
	}
	if (close(fd))
		return ht_errf_status(err, errlen, -errno, "cannot write %s: %s", path, strerror(errno));
	s->seq++;
	s->len = PACKET_PREAMBLE_BYTES;
	return 0;
}

static struct ctf_stream *stream_of(struct ht_ctf_writer *w, const struct ht_record *r)
{
	struct ctf_stream *s = ht_thread_table_get(w->streams, r->host_pid, r->host_tid);
	char name[64];

	if (s)
		return s;
	/* Named for a reader browsing the directory; the vCPU id is the thread's first. */
	snprintf(name, sizeof(name), "pid%u_vcpu%u_tid%u", r->host_pid, r->vcpu_id, r->host_tid);
	/* Never RECORDING_STREAM_ID: a tid is never 0 with a pid. */
	s = stream_new(name, (uint64_t)r->host_pid << 32 | r->host_tid);
	if (s && ht_thread_table_put(w->streams, r->host_pid, r->host_tid, s)) {
		free(s);
		s = NULL;
	}
	return s;
}

int ht_ctf_add(struct ht_ctf_writer *w, const struct ht_record *r, char *err, size_t errlen)
{
	struct ctf_stream *s = stream_of(w, r);
	uint64_t ts = r->exit_ns;
	int ret;

	if (!s)
		return ht_errf_status(err, errlen, -ENOMEM, "out of memory");
	const struct ht_event_desc *gev = w->dec ? ht_decoder_event(w->dec, r) : NULL;

	w->forged += w->dec && ht_decoder_forged(w->dec, r);
	size_t need = gev ? 2 + 8 + 4 + 4 + ht_ctf_guest_size(w->dec, gev, r) : EVENT_BYTES;
	if (s->len + need > sizeof(s->buf) &&
	    (ret = flush_packet(w, s, s->ts_last, 0, err, errlen)))
		return ret;
	/* CTF wants time order within a stream; a vCPU thread's records are, unless the file is odd. */
	if (ts < s->ts_last) {
		ts = s->ts_last;
		w->reordered++;
	}
	if (s->len == PACKET_PREAMBLE_BYTES)
		s->ts_begin = ts;
	s->ts_last = ts;
	if (r->exit_ns > w->last_ns)
		w->last_ns = r->exit_ns;

	/* In the order of event.header, event.context and the event's fields in the metadata. */
	unsigned char *p = s->buf + s->len;
	if (gev) {
		p = put_u16(p, ht_ctf_guest_event_id(w->dec, gev));
		p = put_u64(p, ts);
		p = put_u32(p, r->host_pid);
		p = put_u32(p, r->host_tid);
		p = ht_ctf_guest_put(w->dec, gev, r, p);
		assert(p == s->buf + s->len + need);
		s->len += need;
		w->records++;
		return 0;
	}
	p = put_u16(p, HYPERCALL_EVENT_ID);
	p = put_u64(p, ts);
	p = put_u32(p, r->host_pid);
	p = put_u32(p, r->host_tid);
	p = put_u32(p, r->nr);
	p = put_u64(p, r->a0);
	p = put_u64(p, r->a1);
	p = put_u64(p, r->a2);
	p = put_u64(p, r->a3);
	p = put_u64(p, r->guest_rip);
	p = put_u16(p, r->vcpu_id);
	p = put_u32(p, r->exit_reason);
	p = put_u8(p, r->isa);
	p = put_u32(p, r->exit_to_hcall_ns);
	p = put_u32(p, r->hcall_to_entry_ns);
	p = put_u16(p, r->exit_cpu);
	p = put_u16(p, r->entry_cpu);
	p = put_u8(p, r->flags);
	assert(p == s->buf + s->len + EVENT_BYTES);
	s->len += EVENT_BYTES;
	w->records++;
	return 0;
}

unsigned long long ht_ctf_reordered(const struct ht_ctf_writer *w)
{
	return w->reordered;
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

static const char tsdl_types[] =
	"typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
	"typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n"
	"typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
	"typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
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
	const unsigned char *u = w->uuid;
	char path[sizeof(w->dir) + 16], uuid[40];
	FILE *f;

	snprintf(uuid, sizeof(uuid),
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
		 u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
	/* The clock counts CLOCK_MONOTONIC ns; its offset makes readers show wall-clock time. */
	/* Modulo 2^64: a crafted header's anchors must not overflow it. */
	__s64 offset = (__s64)(h->start_realtime_ns - h->start_monotonic_ns);
	__s64 offset_s = offset / 1000000000, offset_ns = offset % 1000000000;
	if (offset_ns < 0) {
		offset_ns += 1000000000;
		offset_s--;
	}

	snprintf(path, sizeof(path), "%s/metadata", w->dir);
	int fd = openat(w->dirfd, "metadata", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	f = fd < 0 ? NULL : fdopen(fd, "w");
	if (!f && fd >= 0)
		close(fd);
	if (!f)
		return ht_errf_status(err, errlen, -errno, "cannot write %s: %s", path, strerror(errno));
	fputs("/* CTF 1.8 */\n\n", f);
	fputs(tsdl_types, f);
	fprintf(f,
		"trace {\n"
		"\tmajor = 1;\n"
		"\tminor = 8;\n"
		"\tuuid = \"%s\";\n"
		"\tbyte_order = le;\n"
		"\tpacket.header := struct {\n"
		"\t\tuint32_t magic;\n"
		"\t\tuint8_t uuid[16];\n"
		"\t\tuint32_t stream_id;\n"
		"\t\tuint64_t stream_instance_id;\n"
		"\t};\n"
		"};\n\n",
		uuid);
	write_env(f, w, st, source, selection);
	fprintf(f,
		"clock {\n"
		"\tname = \"monotonic\";\n"
		"\tdescription = \"CLOCK_MONOTONIC of the traced host; offset from the trace file's wall-clock anchor\";\n"
		"\tfreq = 1000000000;\n"
		"\tprecision = 1;\n"
		"\toffset_s = %lld;\n"
		"\toffset = %lld;\n"
		"\tabsolute = true;\n"
		"};\n\n",
		(long long)offset_s, (long long)offset_ns);
	fputs(tsdl_streams, f);
	if (w->dec)
		ht_ctf_guest_metadata(w->dec, f);
	if (ferror(f) | fclose(f))
		return ht_errf_status(err, errlen, -EIO, "cannot write %s", path);
	return 0;
}

/*
 * The recording's losses are not any thread's: they go to a stream of their
 * own, as an increase of events_discarded between its two (empty) packets,
 * which is where CTF readers count discarded events.
 */
static int write_recording_stream(struct ht_ctf_writer *w, const struct ht_read_status *st,
				  char *err, size_t errlen)
{
	struct ctf_stream *s = stream_new("recording", RECORDING_STREAM_ID);
	uint64_t start = w->hdr.start_monotonic_ns;
	uint64_t end = st->has_trailer ? st->trailer.end_monotonic_ns : w->last_ns;
	uint64_t lost = st->has_trailer ? ht_trailer_lost(&st->trailer) : 0;
	int ret;

	if (!s)
		return ht_errf_status(err, errlen, -ENOMEM, "out of memory");
	if (end < start)
		end = start;
	s->ts_begin = start;
	if (lost) {
		ret = flush_packet(w, s, start, 0, err, errlen);
		s->ts_begin = start;
		if (!ret)
			ret = flush_packet(w, s, end, lost, err, errlen);
	} else {
		ret = flush_packet(w, s, end, 0, err, errlen);
	}
	free(s);
	return ret;
}

int ht_ctf_close(struct ht_ctf_writer *w, const struct ht_read_status *st, const char *source,
		 const char *selection, char *err, size_t errlen)
{
	int ret = 0;

	for (size_t i = 0; i < ht_thread_table_len(w->streams); i++) {
		struct ctf_stream *s = ht_thread_table_at(w->streams, i);
		if (!ret && s->len > PACKET_PREAMBLE_BYTES)
			ret = flush_packet(w, s, s->ts_last, 0, err, errlen);
		free(s);
	}
	if (!ret)
		ret = write_recording_stream(w, st, err, errlen);
	if (!ret)
		ret = write_metadata(w, st, source, selection, err, errlen);
	if (!ret)
		ret = ht_output_publish(&w->out, err, errlen);
	ht_output_release(&w->out);
	ht_thread_table_free(w->streams);
	free(w);
	return ret;
}

void ht_ctf_abandon(struct ht_ctf_writer *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < ht_thread_table_len(w->streams); i++)
		free(ht_thread_table_at(w->streams, i));
	ht_output_release(&w->out);
	ht_thread_table_free(w->streams);
	free(w);
}
