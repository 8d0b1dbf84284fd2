// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/lttng_trace.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/errf.h"
#include "common/grow.h"
#include "export/ctf_trace.h"
#include "export/id_pair_table.h"
#include "export/tsdl.h"

#define MAX_CLASSES 65535u /* LTTng's large event header: id 65535 is its escape */

/* The statedump's stream and the boot stream: channels of their own, as LTTng writes one per channel and CPU. */
#define STATEDUMP_CHANNEL 1u
#define BOOT_CHANNEL 2u

struct ht_lttng_trace {
	struct ht_ctf_trace *ctf; /* its directory, streams, packets, uuids and metadata file */
	bool pid_context;
	unsigned int max_streams;
	struct ht_id_pair_table *streams; /* (channel, cpu) -> struct ht_ctf_stream of ctf */
	struct ht_ctf_stream *lowest;    /* channel 0's of the lowest CPU: it carries the recording's drops */
	unsigned int nstreams;           /* of channel 0 */
	char *classes;                   /* the event classes' TSDL, id order */
	size_t classes_len, classes_cap;
	unsigned int nclasses;
	char *env;                       /* env entries' TSDL */
	size_t env_len, env_cap;
	unsigned long long dropped;
};

/* The largest event: header, pid, tid, procname and payload. */
#define EVENT_MAX_BYTES(payload) (HT_CTF_EVENT_HEADER_BYTES + 4 + 4 + HT_LTTNG_COMM_LEN + (payload))
_Static_assert(HT_CTF_LTTNG_PACKET_PREAMBLE_BYTES + EVENT_MAX_BYTES(HT_LTTNG_MAX_PAYLOAD) <= HT_CTF_PACKET_BYTES,
	       "packet too small");
_Static_assert(HT_CTF_LTTNG_PACKET_PREAMBLE_BYTES + EVENT_MAX_BYTES(HT_LTTNG_MAX_BOOT_PAYLOAD) <= HT_CTF_PACKET_BYTES,
	       "packet too small for the boot stream's events");

/* Appends formatted text to a growing buffer. 0 or -ENOMEM. */
__attribute__((format(printf, 4, 5)))
static int appendf(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if (HT_GROW(*buf, *cap, *len + (size_t)n + 1, 4096))
		return -ENOMEM;
	va_start(ap, fmt);
	vsnprintf(*buf + *len, *cap - *len, fmt, ap);
	va_end(ap);
	*len += (size_t)n;
	return 0;
}

/* The TSDL text of s as a string literal's content, into a new string (NULL when out of memory). */
static char *escaped(const char *s)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (!f)
		return NULL;
	ht_tsdl_string(f, s);
	if (fclose(f)) {
		free(out);
		return NULL;
	}
	return out;
}

int ht_lttng_trace_open(int parent_fd, const char *subdir, const char *path, bool pid_context,
			unsigned int max_streams, uint64_t salt, struct ht_lttng_trace **out, char *err, size_t errlen)
{
	const struct ht_ctf_trace_spec spec = {
		.parent_fd = parent_fd, .subdir = subdir, .path = path, .lttng_kernel = true, .salt = salt
	};
	struct ht_lttng_trace *t = calloc(1, sizeof(*t));
	int ret;

	if (!t || !(t->streams = ht_id_pair_table_new())) {
		free(t);
		return ht_errf_status(err, errlen, -ENOMEM, "out of memory");
	}
	if ((ret = ht_ctf_trace_open(&spec, &t->ctf, err, errlen))) {
		ht_lttng_trace_free(t);
		return ret;
	}
	t->pid_context = pid_context;
	t->max_streams = max_streams;
	*out = t;
	return 0;
}

void ht_lttng_trace_free(struct ht_lttng_trace *t)
{
	if (!t)
		return;
	ht_ctf_trace_free(t->ctf);
	ht_id_pair_table_free(t->streams);
	free(t->classes);
	free(t->env);
	free(t);
}

int ht_lttng_trace_add_class(struct ht_lttng_trace *t, const char *name, const char *fields)
{
	char *esc;
	int ret;

	if (t->nclasses >= MAX_CLASSES)
		return -ENOSPC;
	esc = escaped(name);
	if (!esc)
		return -ENOMEM;
	ret = appendf(&t->classes, &t->classes_len, &t->classes_cap,
		      "event {\n\tname = \"%s\";\n\tid = %u;\n\tstream_id = 0;\n\tfields := struct {\n%s\t};\n};\n\n", esc,
		      t->nclasses, fields);
	free(esc);
	return ret ? ret : (int)t->nclasses++;
}

int ht_lttng_trace_env_str(struct ht_lttng_trace *t, const char *key, const char *value)
{
	char *esc = escaped(value);
	int ret;

	if (!esc)
		return -ENOMEM;
	ret = appendf(&t->env, &t->env_len, &t->env_cap, "\t%s = \"%s\";\n", key, esc);
	free(esc);
	return ret;
}

int ht_lttng_trace_env_int(struct ht_lttng_trace *t, const char *key, long long value)
{
	return appendf(&t->env, &t->env_len, &t->env_cap, "\t%s = %lld;\n", key, value);
}

static struct ht_ctf_stream *stream_of(struct ht_lttng_trace *t, uint32_t channel, uint32_t cpu, int *ret)
{
	struct ht_ctf_stream *s = ht_id_pair_table_get(t->streams, channel, cpu);
	char name[32];

	*ret = 0;
	if (s)
		return s;
	if (channel == 0 && t->nstreams >= t->max_streams) {
		*ret = 1;
		return NULL;
	}
	snprintf(name, sizeof(name), "%s_%u",
		 channel == STATEDUMP_CHANNEL ? "statedump" : channel == BOOT_CHANNEL ? "boot" : "channel0", cpu);
	/* A stream instance of its own for each channel's stream: CTF readers keep them apart. */
	s = ht_ctf_stream_new(t->ctf, name, (uint64_t)channel << 32 | cpu, cpu);
	if (!s || ht_id_pair_table_put(t->streams, channel, cpu, s)) {
		*ret = -ENOMEM; /* t->ctf frees s */
		return NULL;
	}
	if (channel == 0) {
		t->nstreams++;
		if (!t->lowest || cpu < t->lowest->cpu_id)
			t->lowest = s;
	}
	return s;
}

static int stream_event(struct ht_lttng_trace *t, uint32_t channel, uint32_t cpu, uint64_t ts, int id,
			const struct ht_lttng_ctx *ctx, const void *payload, size_t len, char *err, size_t errlen)
{
	size_t size = (t->pid_context ? 4 : 0) + 4 + HT_LTTNG_COMM_LEN + len;
	struct ht_ctf_stream *s;
	unsigned char *p, *at;
	int ret;

	assert(len <= (channel == BOOT_CHANNEL ? HT_LTTNG_MAX_BOOT_PAYLOAD : HT_LTTNG_MAX_PAYLOAD) && id >= 0 &&
	       (unsigned int)id < t->nclasses);
	s = stream_of(t, channel, cpu, &ret);
	if (!s) {
		if (ret == 1)
			t->dropped++;
		return ret < 0 ? ht_errf_status(err, errlen, ret, "out of memory") : ret;
	}
	if ((ret = ht_ctf_event_reserve(t->ctf, s, (uint16_t)id, ts, size, &at, err, errlen)))
		return ret;
	/* In the order of event.context and the fields in the metadata. */
	p = at;
	if (t->pid_context)
		p = ht_ctf_put_u32(p, (uint32_t)ctx->pid);
	p = ht_ctf_put_u32(p, (uint32_t)ctx->tid);
	memset(p, 0, HT_LTTNG_COMM_LEN); /* NUL-padded, as the kernel's comm */
	memcpy(p, ctx->procname, strnlen(ctx->procname, HT_LTTNG_COMM_LEN));
	p += HT_LTTNG_COMM_LEN;
	memcpy(p, payload, len);
	assert(p + len == at + size);
	return 0;
}

int ht_lttng_trace_event(struct ht_lttng_trace *t, uint32_t cpu, uint64_t ts, int id, const struct ht_lttng_ctx *ctx,
			 const void *payload, size_t len, char *err, size_t errlen)
{
	return stream_event(t, 0, cpu, ts, id, ctx, payload, len, err, errlen);
}

int ht_lttng_trace_statedump_event(struct ht_lttng_trace *t, uint32_t cpu, uint64_t ts, int id,
				   const struct ht_lttng_ctx *ctx, const void *payload, size_t len, char *err,
				   size_t errlen)
{
	return stream_event(t, STATEDUMP_CHANNEL, cpu, ts, id, ctx, payload, len, err, errlen);
}

int ht_lttng_trace_boot_event(struct ht_lttng_trace *t, uint32_t cpu, uint64_t ts, int id,
			      const struct ht_lttng_ctx *ctx, const void *payload, size_t len, char *err,
			      size_t errlen)
{
	return stream_event(t, BOOT_CHANNEL, cpu, ts, id, ctx, payload, len, err, errlen);
}

static int write_metadata(struct ht_lttng_trace *t, int64_t clock_offset_ns, char *err, size_t errlen)
{
	FILE *f;
	int ret = ht_ctf_metadata_open(t->ctf, &f, err, errlen);

	if (ret)
		return ret;
	/* The prelude lttng-modules writes (src/lttng-events.c), with the simpler large event header. */
	fputs("typealias integer { size = 64; align = 8; signed = false; } := unsigned long;\n\n", f);
	ht_ctf_metadata_trace(t->ctf, f);
	fprintf(f, "env {\n%s};\n\n", t->env ? t->env : "");
	/*
	 * CLOCK_MONOTONIC of the host, offset to wall-clock time, for the host
	 * and its guests alike; each trace names it with its own uuid, which
	 * Trace Compass takes as the machine's host ID.
	 */
	ht_ctf_metadata_clock(t->ctf, f,
			      "CLOCK_MONOTONIC of the traced host (the guests' events too: they were stamped there)",
			      clock_offset_ns);
	fputs("typealias integer {\n\tsize = 64; align = 8; signed = false;\n\tmap = clock.monotonic.value;\n"
	      "} := uint64_clock_monotonic_t;\n\n", f);
	fputs("struct packet_context {\n\tuint64_clock_monotonic_t timestamp_begin;\n"
	      "\tuint64_clock_monotonic_t timestamp_end;\n\tuint64_t content_size;\n\tuint64_t packet_size;\n"
	      "\tuint64_t packet_seq_num;\n\tunsigned long events_discarded;\n\tuint32_t cpu_id;\n};\n\n", f);
	fprintf(f, "stream {\n\tid = 0;\n\tevent.header := struct {\n\t\tuint16_t id;\n"
		   "\t\tuint64_clock_monotonic_t timestamp;\n\t} align(8);\n\tpacket.context := struct packet_context;\n"
		   "\tevent.context := struct {\n%s\t\t" HT_TSDL_S32 " _tid;\n\t\t" HT_TSDL_CHAR " _procname[%d];\n\t};\n};\n\n",
		t->pid_context ? "\t\t" HT_TSDL_S32 " _pid;\n" : "", HT_LTTNG_COMM_LEN);
	if (t->classes)
		fputs(t->classes, f);
	return ht_ctf_metadata_close(t->ctf, f, err, errlen);
}

int ht_lttng_trace_close(struct ht_lttng_trace *t, int64_t clock_offset_ns, uint64_t start_ns, uint64_t end_ns,
			 uint64_t discarded, char *err, size_t errlen)
{
	struct ht_ctf_stream *lowest = t->lowest;
	int ret = 0;

	if (!lowest && discarded) {
		lowest = stream_of(t, 0, 0, &ret);
		if (!lowest)
			ret = ht_errf_status(err, errlen, -ENOMEM, "out of memory");
		else
			lowest->ts_begin = lowest->ts_last = start_ns;
	}
	if (!ret)
		ret = ht_ctf_trace_flush(t->ctf, err, errlen);
	/* A CPU stream with no event yet (made for the drops): a first, empty packet. */
	if (!ret && lowest && lowest->seq == 0)
		ret = ht_ctf_stream_flush(t->ctf, lowest, lowest->ts_last, 0, err, errlen);
	/*
	 * The kernel counts the recording's losses globally, not per CPU: a last
	 * packet says how many, the increase of events_discarded that CTF
	 * readers report.
	 */
	if (!ret && lowest && discarded) {
		lowest->ts_begin = lowest->ts_last > end_ns ? lowest->ts_last : end_ns;
		ret = ht_ctf_stream_flush(t->ctf, lowest, lowest->ts_begin, discarded, err, errlen);
	}
	if (!ret)
		ret = write_metadata(t, clock_offset_ns, err, errlen);
	ht_lttng_trace_free(t);
	return ret;
}

unsigned long long ht_lttng_trace_reordered(const struct ht_lttng_trace *t)
{
	return ht_ctf_trace_reordered(t->ctf);
}

unsigned long long ht_lttng_trace_dropped(const struct ht_lttng_trace *t)
{
	return t->dropped;
}
