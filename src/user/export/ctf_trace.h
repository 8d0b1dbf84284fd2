/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One CTF 1.8 trace on disk, as both CTF exports write it (convert --ctf,
 * export/ctf_writer.c; each trace of convert --lttng, export/lttng_trace.c):
 * its directory, a file per stream, the packets in them, the trace's uuid
 * and its metadata file. What the events hold and the TSDL that declares
 * them are the writer's; this layer owns the bytes every packet starts with
 * and the declarations that describe them.
 *
 * Packets: every stream is of the one stream class (id 0) and told apart by
 * its stream_instance_id. A packet is
 *   packet.header   u32 magic, u8 uuid[16], u32 stream_id, u64 stream_instance_id
 *   packet.context  u64 timestamp_begin, timestamp_end, content_size,
 *                   packet_size, packet_seq_num, events_discarded
 *                   (+ u32 cpu_id in LTTng's kernel layout)
 *   events          u16 id, u64 timestamp (event.header), then the writer's
 *                   event.context and fields
 * all little-endian (x86-64's) and byte-aligned, never padded: content_size
 * equals packet_size. The writer declares packet.context, event.header and
 * the events in its metadata in this order.
 *
 * Streaming: each stream holds one packet (HT_CTF_PACKET_BYTES) in memory and
 * appends it to its file when full; memory grows with the streams, not with
 * the events. The trace keeps no descriptor of its own between packets: a
 * trace in a directory of its own opens it again by name in the caller's
 * directory for each packet and for the metadata (an LTTng experiment holds
 * a trace per guest VM; one open directory each would run out of
 * descriptors, RLIMIT_NOFILE, past about a thousand VMs).
 *
 * A failed conversion leaves nothing: the trace is built in a directory the
 * caller made with ht_output_create_dir (tracefile/output_file.h), which is
 * removed with everything in it unless published. Errors are one line in err
 * (common/errf.h) and -errno.
 */
#ifndef HT_EXPORT_CTF_TRACE_H
#define HT_EXPORT_CTF_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define HT_CTF_PACKET_BYTES (16 * 1024)
#define HT_CTF_PACKET_HEADER_BYTES (4 + 16 + 4 + 8)
/* The packet header and context, without LTTng's cpu_id. */
#define HT_CTF_PACKET_PREAMBLE_BYTES (HT_CTF_PACKET_HEADER_BYTES + 6 * 8)
#define HT_CTF_LTTNG_PACKET_PREAMBLE_BYTES (HT_CTF_PACKET_PREAMBLE_BYTES + 4)
#define HT_CTF_EVENT_HEADER_BYTES (2 + 8)

struct ht_ctf_trace;

struct ht_ctf_trace_spec {
	int parent_fd;      /* the directory the trace is made in; the caller's, open while the trace lives */
	const char *subdir; /* the trace's directory, made in parent_fd (mode 0700); NULL: parent_fd is it */
	const char *path;   /* the trace's directory as the user named it, for messages */
	/*
	 * lttng-modules' kernel channels: packet.context ends with a u32
	 * cpu_id, the clock has a uuid, and the declarations this layer writes
	 * are spelled as lttng-modules prints them (src/lttng-events.c).
	 */
	bool lttng_kernel;
	uint64_t salt; /* makes the uuids differ between traces where the kernel gives no random bytes */
};

/*
 * One stream. A writer reads its fields, and sets ts_begin and ts_last only
 * for a packet it flushes without events (a drop count, an empty stream).
 */
struct ht_ctf_stream {
	char name[64];                /* its file in the trace's directory */
	uint64_t instance_id;         /* stream_instance_id */
	uint32_t cpu_id;              /* the cpu_id of LTTng's packet.context */
	uint64_t seq;                 /* packet_seq_num of the packet being filled */
	uint64_t ts_begin;            /* timestamp_begin of that packet: its first event's time */
	uint64_t ts_last;             /* the latest event's time in the stream */
	size_t len;                   /* bytes used in buf, the preamble included */
	unsigned char buf[HT_CTF_PACKET_BYTES];
};

/*
 * Makes spec->subdir (if given) and a trace with a new random uuid (RFC
 * 4122 version 4), and one for its clock with lttng_kernel. 0, or -errno
 * with err.
 */
int ht_ctf_trace_open(const struct ht_ctf_trace_spec *spec, struct ht_ctf_trace **out, char *err, size_t errlen);
/* Frees t and its streams; their files stay for the caller's output to keep or remove. NULL is fine. */
void ht_ctf_trace_free(struct ht_ctf_trace *t);

/*
 * A new, empty stream whose file is name (created by its first packet),
 * owned by t. NULL when out of memory.
 */
struct ht_ctf_stream *ht_ctf_stream_new(struct ht_ctf_trace *t, const char *name, uint64_t instance_id,
					uint32_t cpu_id);
/*
 * Reserves an event of class id at ts in s, whose event.context and fields
 * take size bytes: first appends the packet to the file if the event does
 * not fit (the writer's largest event must fit an empty packet); an earlier
 * ts than the stream's last is raised to it (CTF wants time order within a
 * stream; counted, ht_ctf_trace_reordered). *at: where exactly those size
 * bytes are to be written. 0, or -errno with err.
 */
int ht_ctf_event_reserve(struct ht_ctf_trace *t, struct ht_ctf_stream *s, uint16_t id, uint64_t ts, size_t size,
			 unsigned char **at, char *err, size_t errlen);
/*
 * Appends s's packet to its file, its preamble filled in now: from
 * s->ts_begin to ts_end, events_discarded as given (a running count, as CTF
 * readers take it). Then s holds an empty packet, the next seq. 0, or -errno
 * with err.
 */
int ht_ctf_stream_flush(struct ht_ctf_trace *t, struct ht_ctf_stream *s, uint64_t ts_end, uint64_t events_discarded,
			char *err, size_t errlen);
/* Flushes every stream holding events, up to its last event's time, none discarded. 0, or -errno with err. */
int ht_ctf_trace_flush(struct ht_ctf_trace *t, char *err, size_t errlen);
/* Events whose time ht_ctf_event_reserve raised. */
unsigned long long ht_ctf_trace_reordered(const struct ht_ctf_trace *t);

/*
 * The metadata file: ht_ctf_metadata_open creates it with the CTF 1.8
 * signature line and the typealiases uint8_t, uint16_t, uint32_t and
 * uint64_t; the writer then writes its TSDL, with the trace and clock blocks
 * below where it wants them, and ht_ctf_metadata_close ends it. Each 0, or
 * -errno with err.
 */
int ht_ctf_metadata_open(struct ht_ctf_trace *t, FILE **f, char *err, size_t errlen);
/* The trace block: CTF 1.8, the uuid, little-endian, and the packet header above. */
void ht_ctf_metadata_trace(const struct ht_ctf_trace *t, FILE *f);
/*
 * The clock block: `monotonic`, in ns, whose offset (offset_ns from its
 * zero to the Epoch, any sign) makes readers show wall-clock time;
 * description is what it counts.
 */
void ht_ctf_metadata_clock(const struct ht_ctf_trace *t, FILE *f, const char *description, int64_t offset_ns);
int ht_ctf_metadata_close(struct ht_ctf_trace *t, FILE *f, char *err, size_t errlen);

/* Each stores v at p in the trace's byte order and returns the byte after it. */
static inline unsigned char *ht_ctf_put_u8(unsigned char *p, uint8_t v)
{
	*p = v;
	return p + 1;
}

static inline unsigned char *ht_ctf_put_u16(unsigned char *p, uint16_t v)
{
	memcpy(p, &v, sizeof(v)); /* little-endian, as x86-64 */
	return p + sizeof(v);
}

static inline unsigned char *ht_ctf_put_u32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
	return p + sizeof(v);
}

static inline unsigned char *ht_ctf_put_u64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
	return p + sizeof(v);
}

#endif
