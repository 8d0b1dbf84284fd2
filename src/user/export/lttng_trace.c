// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/lttng_trace.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common/errf.h"
#include "export/thread_table.h"
#include "export/tsdl.h"

#define CTF_MAGIC 0xc1fc1fc1u
/* packet.header: magic, uuid, stream_id, stream_instance_id; packet.context: six u64 and cpu_id. */
#define PACKET_PREAMBLE_BYTES (4 + 16 + 4 + 8 + 6 * 8 + 4)
#define EVENT_HEADER_BYTES (2 + 8)
#define MAX_CLASSES 65535u /* LTTng's large event header: id 65535 is its escape */

/* The statedump's stream: a channel of its own, as LTTng writes one per channel and CPU. */
#define STATEDUMP_CHANNEL 1u

struct stream {
	uint32_t cpu, channel; /* channel 0 ("channel0_CPU") or STATEDUMP_CHANNEL ("statedump_CPU") */
	uint64_t seq, ts_begin, ts_last;
	size_t len; /* bytes used in buf, the preamble included */
	unsigned char buf[HT_LTTNG_PACKET_BYTES];
};

/*
 * A trace keeps no descriptor open between packets: an experiment holds a
 * trace per guest VM, and one open directory each would run out of
 * descriptors (RLIMIT_NOFILE, 1024 by default) past about a thousand VMs.
 * Its directory is opened again, by name in the parent the caller keeps
 * open, for each packet (16 KiB) and for the metadata.
 */
struct ht_lttng_trace {
	int parent_fd; /* the caller's, open while t lives */
	char subdir[256];
	char path[4096];
	bool pid_context;
	unsigned int max_streams;
	unsigned char uuid[16], clock_uuid[16];
	struct ht_thread_table *streams; /* (channel, cpu) -> struct stream */
	unsigned int nstreams;           /* of channel 0 */
	char *classes;                   /* the event classes' TSDL, id order */
	size_t classes_len, classes_cap;
	unsigned int nclasses;
	char *env;                       /* env entries' TSDL */
	size_t env_len, env_cap;
	unsigned long long reordered, dropped;
};

_Static_assert(PACKET_PREAMBLE_BYTES + EVENT_HEADER_BYTES + 4 + 4 + HT_LTTNG_COMM_LEN + HT_LTTNG_MAX_PAYLOAD <=
		       HT_LTTNG_PACKET_BYTES,
	       "packet too small");

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
	if (*len + (size_t)n + 1 > *cap) {
		size_t cap2 = (*cap ? *cap * 2 : 4096) + (size_t)n;
		char *b = realloc(*buf, cap2);
		if (!b)
			return -ENOMEM;
		*buf = b;
		*cap = cap2;
	}
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
			unsigned int max_streams, const unsigned char uuid[16], const unsigned char clock_uuid[16],
			struct ht_lttng_trace **out, char *err, size_t errlen)
{
	struct ht_lttng_trace *t = calloc(1, sizeof(*t));

	if (!t || !(t->streams = ht_thread_table_new())) {
		free(t);
		return ht_errf(err, errlen, "out of memory");
	}
	snprintf(t->path, sizeof(t->path), "%s", path);
	if (strlen(subdir) >= sizeof(t->subdir)) {
		ht_lttng_trace_free(t);
		return ht_errf(err, errlen, "cannot create %s: name too long", path);
	}
	snprintf(t->subdir, sizeof(t->subdir), "%s", subdir);
	t->parent_fd = parent_fd;
	if (mkdirat(parent_fd, subdir, 0700)) {
		int ret = -errno;
		ht_lttng_trace_free(t);
		return ht_errf(err, errlen, "cannot create %s: %s", path, strerror(-ret));
	}
	t->pid_context = pid_context;
	t->max_streams = max_streams;
	memcpy(t->uuid, uuid, 16);
	memcpy(t->clock_uuid, clock_uuid, 16);
	*out = t;
	return 0;
}

void ht_lttng_trace_free(struct ht_lttng_trace *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < ht_thread_table_len(t->streams); i++)
		free(ht_thread_table_at(t->streams, i));
	ht_thread_table_free(t->streams);
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

/* Opens NAME in the trace's directory (see struct ht_lttng_trace): a descriptor, or -1 with errno. */
static int open_in_trace(struct ht_lttng_trace *t, const char *name, int flags)
{
	int dirfd = openat(t->parent_fd, t->subdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), fd, saved;

	if (dirfd < 0)
		return -1;
	fd = openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC, 0600);
	saved = errno;
	close(dirfd);
	errno = saved;
	return fd;
}

static unsigned char *put(unsigned char *p, const void *v, size_t n)
{
	memcpy(p, v, n); /* CTF byte order le, as x86-64's */
	return p + n;
}

/* Appends the stream's packet, its preamble filled in now, to the stream's file. */
static int flush_packet(struct ht_lttng_trace *t, struct stream *s, uint64_t ts_end, uint64_t discarded,
			char *err, size_t errlen)
{
	char name[32];
	unsigned char *p = s->buf;
	uint32_t magic = CTF_MAGIC, stream_id = 0;
	/* A stream instance of its own for the statedump's stream: CTF readers keep the two apart. */
	uint64_t instance = (uint64_t)s->channel << 32 | s->cpu, bits = (uint64_t)s->len * 8;
	size_t off = 0;
	int fd;

	/* In the order of packet.header and struct packet_context in the metadata. */
	p = put(p, &magic, 4);
	p = put(p, t->uuid, 16);
	p = put(p, &stream_id, 4);
	p = put(p, &instance, 8);
	p = put(p, &s->ts_begin, 8);
	p = put(p, &ts_end, 8);
	p = put(p, &bits, 8); /* content_size */
	p = put(p, &bits, 8); /* packet_size: no padding */
	p = put(p, &s->seq, 8);
	p = put(p, &discarded, 8);
	p = put(p, &s->cpu, 4);
	assert(p == s->buf + PACKET_PREAMBLE_BYTES);

	snprintf(name, sizeof(name), "%s_%u", s->channel == STATEDUMP_CHANNEL ? "statedump" : "channel0", s->cpu);
	fd = open_in_trace(t, name, O_WRONLY | O_CREAT | O_APPEND);
	if (fd < 0)
		return ht_errf(err, errlen, "cannot write %s/%s: %s", t->path, name, strerror(errno));
	while (off < s->len) {
		ssize_t n = write(fd, s->buf + off, s->len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int ret = n < 0 ? -errno : -EIO;
			close(fd);
			return ht_errf(err, errlen, "cannot write %s/%s: %s", t->path, name, strerror(-ret));
		}
		off += (size_t)n;
	}
	if (close(fd))
		return ht_errf(err, errlen, "cannot write %s/%s: %s", t->path, name, strerror(errno));
	s->seq++;
	s->len = PACKET_PREAMBLE_BYTES;
	return 0;
}

static struct stream *stream_of(struct ht_lttng_trace *t, uint32_t channel, uint32_t cpu, int *ret)
{
	struct stream *s = ht_thread_table_get(t->streams, channel, cpu);

	*ret = 0;
	if (s)
		return s;
	if (channel == 0 && t->nstreams >= t->max_streams) {
		*ret = 1;
		return NULL;
	}
	s = malloc(sizeof(*s));
	if (!s || ht_thread_table_put(t->streams, channel, cpu, s)) {
		free(s);
		*ret = -ENOMEM;
		return NULL;
	}
	memset(s, 0, offsetof(struct stream, buf));
	s->cpu = cpu;
	s->channel = channel;
	t->nstreams += channel == 0;
	s->len = PACKET_PREAMBLE_BYTES;
	return s;
}

static int stream_event(struct ht_lttng_trace *t, uint32_t channel, uint32_t cpu, uint64_t ts, int id,
			const struct ht_lttng_ctx *ctx, const void *payload, size_t len, char *err, size_t errlen)
{
	size_t need = EVENT_HEADER_BYTES + (t->pid_context ? 4 : 0) + 4 + HT_LTTNG_COMM_LEN + len;
	uint16_t id16 = (uint16_t)id;
	struct stream *s;
	unsigned char *p;
	char comm[HT_LTTNG_COMM_LEN] = { 0 };
	int ret;

	assert(len <= HT_LTTNG_MAX_PAYLOAD && id >= 0 && (unsigned int)id < t->nclasses);
	s = stream_of(t, channel, cpu, &ret);
	if (!s) {
		if (ret == 1)
			t->dropped++;
		return ret < 0 ? ht_errf(err, errlen, "out of memory") : ret;
	}
	if (s->len + need > sizeof(s->buf) && (ret = flush_packet(t, s, s->ts_last, 0, err, errlen)))
		return ret;
	/* CTF wants time order within a stream. */
	if (ts < s->ts_last) {
		ts = s->ts_last;
		t->reordered++;
	}
	if (s->len == PACKET_PREAMBLE_BYTES)
		s->ts_begin = ts;
	s->ts_last = ts;
	/* In the order of event.header, event.context and the fields in the metadata. */
	p = s->buf + s->len;
	p = put(p, &id16, 2);
	p = put(p, &ts, 8);
	if (t->pid_context)
		p = put(p, &ctx->pid, 4);
	p = put(p, &ctx->tid, 4);
	memcpy(comm, ctx->procname, strnlen(ctx->procname, sizeof(comm))); /* NUL-padded, as the kernel's comm */
	p = put(p, comm, sizeof(comm));
	p = put(p, payload, len);
	assert(p == s->buf + s->len + need);
	s->len += need;
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

static void uuid_text(char out[37], const unsigned char *u)
{
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
		 u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

static int write_metadata(struct ht_lttng_trace *t, int64_t clock_offset_ns, char *err, size_t errlen)
{
	char uuid[37], clock_uuid[37];
	int64_t offset_s = clock_offset_ns / 1000000000, offset_ns = clock_offset_ns % 1000000000;
	int fd = open_in_trace(t, "metadata", O_WRONLY | O_CREAT | O_TRUNC);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "w");

	if (!f) {
		int ret = -errno;
		if (fd >= 0)
			close(fd);
		return ht_errf(err, errlen, "cannot write %s/metadata: %s", t->path, strerror(-ret));
	}
	if (offset_ns < 0) {
		offset_ns += 1000000000;
		offset_s--;
	}
	uuid_text(uuid, t->uuid);
	uuid_text(clock_uuid, t->clock_uuid);
	/* The prelude lttng-modules writes (src/lttng-events.c), with the simpler large event header. */
	fprintf(f, "/* CTF 1.8 */\n\n"
		   "typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
		   "typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n"
		   "typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
		   "typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
		   "typealias integer { size = 64; align = 8; signed = false; } := unsigned long;\n\n"
		   "trace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = \"%s\";\n\tbyte_order = le;\n"
		   "\tpacket.header := struct {\n\t\tuint32_t magic;\n\t\tuint8_t  uuid[16];\n"
		   "\t\tuint32_t stream_id;\n\t\tuint64_t stream_instance_id;\n\t};\n};\n\n",
		uuid);
	fprintf(f, "env {\n%s};\n\n", t->env ? t->env : "");
	/*
	 * CLOCK_MONOTONIC of the host, offset to wall-clock time, for the host
	 * and its guests alike; each trace names it with its own uuid, which
	 * Trace Compass takes as the machine's host ID.
	 */
	fprintf(f, "clock {\n\tname = \"monotonic\";\n\tuuid = \"%s\";\n"
		   "\tdescription = \"CLOCK_MONOTONIC of the traced host (the guests' events too: they were stamped there)\";\n"
		   "\tfreq = 1000000000;\n\tprecision = 1;\n\toffset_s = %lld;\n\toffset = %lld;\n\tabsolute = true;\n};\n\n"
		   "typealias integer {\n\tsize = 64; align = 8; signed = false;\n\tmap = clock.monotonic.value;\n"
		   "} := uint64_clock_monotonic_t;\n\n",
		clock_uuid, (long long)offset_s, (long long)offset_ns);
	fputs("struct packet_context {\n\tuint64_clock_monotonic_t timestamp_begin;\n"
	      "\tuint64_clock_monotonic_t timestamp_end;\n\tuint64_t content_size;\n\tuint64_t packet_size;\n"
	      "\tuint64_t packet_seq_num;\n\tunsigned long events_discarded;\n\tuint32_t cpu_id;\n};\n\n", f);
	fprintf(f, "stream {\n\tid = 0;\n\tevent.header := struct {\n\t\tuint16_t id;\n"
		   "\t\tuint64_clock_monotonic_t timestamp;\n\t} align(8);\n\tpacket.context := struct packet_context;\n"
		   "\tevent.context := struct {\n%s\t\t" HT_TSDL_S32 " _tid;\n\t\t" HT_TSDL_CHAR " _procname[%d];\n\t};\n};\n\n",
		t->pid_context ? "\t\t" HT_TSDL_S32 " _pid;\n" : "", HT_LTTNG_COMM_LEN);
	if (t->classes)
		fputs(t->classes, f);
	if (ferror(f) | fclose(f))
		return ht_errf(err, errlen, "cannot write %s/metadata", t->path);
	return 0;
}

int ht_lttng_trace_close(struct ht_lttng_trace *t, int64_t clock_offset_ns, uint64_t start_ns, uint64_t end_ns,
			 uint64_t discarded, char *err, size_t errlen)
{
	struct stream *lowest = NULL;
	int ret = 0;

	for (size_t i = 0; i < ht_thread_table_len(t->streams); i++) {
		struct stream *s = ht_thread_table_at(t->streams, i);
		if (s->channel == 0 && (!lowest || s->cpu < lowest->cpu))
			lowest = s;
	}
	if (!lowest && discarded) {
		lowest = stream_of(t, 0, 0, &ret);
		if (!lowest)
			ret = ht_errf(err, errlen, "out of memory");
		else
			lowest->ts_begin = lowest->ts_last = start_ns;
	}
	for (size_t i = 0; !ret && i < ht_thread_table_len(t->streams); i++) {
		struct stream *s = ht_thread_table_at(t->streams, i);
		if (s->len > PACKET_PREAMBLE_BYTES || (s == lowest && s->seq == 0))
			ret = flush_packet(t, s, s->ts_last, 0, err, errlen);
	}
	/*
	 * The kernel counts the recording's losses globally, not per CPU: a last
	 * packet says how many, the increase of events_discarded that CTF
	 * readers report.
	 */
	if (!ret && lowest && discarded) {
		lowest->ts_begin = lowest->ts_last > end_ns ? lowest->ts_last : end_ns;
		ret = flush_packet(t, lowest, lowest->ts_begin, discarded, err, errlen);
	}
	if (!ret)
		ret = write_metadata(t, clock_offset_ns, err, errlen);
	ht_lttng_trace_free(t);
	return ret;
}

unsigned long long ht_lttng_trace_reordered(const struct ht_lttng_trace *t)
{
	return t->reordered;
}

unsigned long long ht_lttng_trace_dropped(const struct ht_lttng_trace *t)
{
	return t->dropped;
}
