// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/ctf_trace.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common/errf.h"
#include "common/grow.h"
#include "export/tsdl.h"

#define CTF_MAGIC 0xc1fc1fc1u

struct ht_ctf_trace {
	int parent_fd;
	char *subdir; /* NULL: parent_fd is the trace's directory */
	char *path;
	bool lttng_kernel;
	size_t preamble; /* bytes of packet header and context */
	unsigned char uuid[16], clock_uuid[16];
	struct ht_ctf_stream **streams;
	size_t nstreams, cap;
	unsigned long long reordered;
};

static void random_uuid(unsigned char u[16], uint64_t salt)
{
	if (getrandom(u, 16, 0) != 16) {
		/* Only needs to differ between traces. */
		uint64_t a = salt, b = salt * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
		memcpy(u, &a, 8);
		memcpy(u + 8, &b, 8);
	}
	u[6] = (u[6] & 0x0f) | 0x40; /* RFC 4122 version 4 */
	u[8] = (u[8] & 0x3f) | 0x80;
}

static void uuid_text(char out[37], const unsigned char *u)
{
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
		 u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

int ht_ctf_trace_open(const struct ht_ctf_trace_spec *spec, struct ht_ctf_trace **out, char *err, size_t errlen)
{
	struct ht_ctf_trace *t = calloc(1, sizeof(*t));

	if (!t || !(t->path = strdup(spec->path)) || (spec->subdir && !(t->subdir = strdup(spec->subdir)))) {
		ht_ctf_trace_free(t);
		return ht_errf_status(err, errlen, -ENOMEM, "out of memory");
	}
	if (t->subdir && mkdirat(spec->parent_fd, t->subdir, 0700)) {
		int ret = -errno;
		ht_ctf_trace_free(t);
		return ht_errf_status(err, errlen, ret, "cannot create %s: %s", spec->path, strerror(-ret));
	}
	t->parent_fd = spec->parent_fd;
	t->lttng_kernel = spec->lttng_kernel;
	t->preamble = t->lttng_kernel ? HT_CTF_LTTNG_PACKET_PREAMBLE_BYTES : HT_CTF_PACKET_PREAMBLE_BYTES;
	random_uuid(t->uuid, spec->salt);
	/*
	 * Trace Compass takes a CTF trace's clock uuid as the host ID of the
	 * machine it traced (CtfTmfTrace.getHostId) and tells the host from its
	 * guests by it: every trace of an experiment needs one of its own, even
	 * on one clock.
	 */
	if (t->lttng_kernel)
		random_uuid(t->clock_uuid, ~spec->salt);
	*out = t;
	return 0;
}

void ht_ctf_trace_free(struct ht_ctf_trace *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nstreams; i++)
		free(t->streams[i]);
	free(t->streams);
	free(t->subdir);
	free(t->path);
	free(t);
}

struct ht_ctf_stream *ht_ctf_stream_new(struct ht_ctf_trace *t, const char *name, uint64_t instance_id,
					uint32_t cpu_id)
{
	struct ht_ctf_stream *s;

	if (HT_GROW(t->streams, t->cap, t->nstreams + 1, 16) || !(s = malloc(sizeof(*s))))
		return NULL;
	memset(s, 0, offsetof(struct ht_ctf_stream, buf));
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->instance_id = instance_id;
	s->cpu_id = cpu_id;
	s->len = t->preamble;
	t->streams[t->nstreams++] = s;
	return s;
}

/* Opens name in the trace's directory (see ctf_trace.h: no descriptor is kept): a descriptor, or -1 with errno. */
static int open_in_trace(const struct ht_ctf_trace *t, const char *name, int flags)
{
	int dirfd, fd, saved;

	if (!t->subdir)
		return openat(t->parent_fd, name, flags | O_NOFOLLOW | O_CLOEXEC, 0600);
	dirfd = openat(t->parent_fd, t->subdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0)
		return -1;
	fd = openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC, 0600);
	saved = errno;
	close(dirfd);
	errno = saved;
	return fd;
}

int ht_ctf_stream_flush(struct ht_ctf_trace *t, struct ht_ctf_stream *s, uint64_t ts_end, uint64_t events_discarded,
			char *err, size_t errlen)
{
	unsigned char *p = s->buf;
	uint64_t bits = (uint64_t)s->len * 8;
	size_t off = 0;
	int fd;

	/* In the order of packet.header and packet.context in the metadata. */
	p = ht_ctf_put_u32(p, CTF_MAGIC);
	memcpy(p, t->uuid, 16);
	p = ht_ctf_put_u32(p + 16, 0); /* stream_id: the one stream class */
	p = ht_ctf_put_u64(p, s->instance_id);
	p = ht_ctf_put_u64(p, s->ts_begin);
	p = ht_ctf_put_u64(p, ts_end);
	p = ht_ctf_put_u64(p, bits); /* content_size */
	p = ht_ctf_put_u64(p, bits); /* packet_size: no padding */
	p = ht_ctf_put_u64(p, s->seq);
	p = ht_ctf_put_u64(p, events_discarded);
	if (t->lttng_kernel)
		p = ht_ctf_put_u32(p, s->cpu_id);
	assert(p == s->buf + t->preamble);

	fd = open_in_trace(t, s->name, O_WRONLY | O_CREAT | O_APPEND);
	if (fd < 0)
		return ht_errf_status(err, errlen, -errno, "cannot write %s/%s: %s", t->path, s->name, strerror(errno));
	while (off < s->len) {
		ssize_t n = write(fd, s->buf + off, s->len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int ret = n < 0 ? -errno : -EIO;
			close(fd);
			return ht_errf_status(err, errlen, ret, "cannot write %s/%s: %s", t->path, s->name, strerror(-ret));
		}
		off += (size_t)n;
	}
	if (close(fd))
		return ht_errf_status(err, errlen, -errno, "cannot write %s/%s: %s", t->path, s->name, strerror(errno));
	s->seq++;
	s->len = t->preamble;
	return 0;
}

int ht_ctf_event_reserve(struct ht_ctf_trace *t, struct ht_ctf_stream *s, uint16_t id, uint64_t ts, size_t size,
			 unsigned char **at, char *err, size_t errlen)
{
	size_t need = HT_CTF_EVENT_HEADER_BYTES + size;
	unsigned char *p;
	int ret;

	assert(t->preamble + need <= sizeof(s->buf));
	if (s->len + need > sizeof(s->buf) && (ret = ht_ctf_stream_flush(t, s, s->ts_last, 0, err, errlen)))
		return ret;
	if (ts < s->ts_last) {
		ts = s->ts_last;
		t->reordered++;
	}
	if (s->len == t->preamble)
		s->ts_begin = ts;
	s->ts_last = ts;
	/* event.header */
	p = ht_ctf_put_u16(s->buf + s->len, id);
	*at = ht_ctf_put_u64(p, ts);
	s->len += need;
	return 0;
}

int ht_ctf_trace_flush(struct ht_ctf_trace *t, char *err, size_t errlen)
{
	int ret = 0;

	for (size_t i = 0; !ret && i < t->nstreams; i++)
		if (t->streams[i]->len > t->preamble)
			ret = ht_ctf_stream_flush(t, t->streams[i], t->streams[i]->ts_last, 0, err, errlen);
	return ret;
}

unsigned long long ht_ctf_trace_reordered(const struct ht_ctf_trace *t)
{
	return t->reordered;
}

int ht_ctf_metadata_open(struct ht_ctf_trace *t, FILE **out, char *err, size_t errlen)
{
	int fd = open_in_trace(t, "metadata", O_WRONLY | O_CREAT | O_TRUNC);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "w");

	if (!f) {
		int ret = -errno;
		if (fd >= 0)
			close(fd);
		return ht_errf_status(err, errlen, ret, "cannot write %s/metadata: %s", t->path, strerror(-ret));
	}
	/* The integers of the packet header, declared as lttng-modules declares them. */
	fputs("/* CTF 1.8 */\n\n"
	      "typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
	      "typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n"
	      "typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
	      "typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n",
	      f);
	*out = f;
	return 0;
}

void ht_ctf_metadata_trace(const struct ht_ctf_trace *t, FILE *f)
{
	char uuid[37];

	uuid_text(uuid, t->uuid);
	fprintf(f,
		"trace {\n"
		"\tmajor = 1;\n"
		"\tminor = 8;\n"
		"\tuuid = \"%s\";\n"
		"\tbyte_order = le;\n"
		"\tpacket.header := struct {\n"
		"\t\tuint32_t magic;\n"
		"\t\tuint8_t%s uuid[16];\n" /* lttng-modules aligns the names */
		"\t\tuint32_t stream_id;\n"
		"\t\tuint64_t stream_instance_id;\n"
		"\t};\n"
		"};\n\n",
		uuid, t->lttng_kernel ? " " : "");
}

void ht_ctf_metadata_clock(const struct ht_ctf_trace *t, FILE *f, const char *description, int64_t offset_ns)
{
	/* offset_s and offset (ns) as CTF has them: offset in [0, 1 s). */
	int64_t s = offset_ns / 1000000000, ns = offset_ns % 1000000000;
	char uuid[37];

	if (ns < 0) {
		ns += 1000000000;
		s--;
	}
	fputs("clock {\n\tname = \"monotonic\";\n", f);
	if (t->lttng_kernel) {
		uuid_text(uuid, t->clock_uuid);
		fprintf(f, "\tuuid = \"%s\";\n", uuid);
	}
	fputs("\tdescription = \"", f);
	ht_tsdl_string(f, description);
	fprintf(f,
		"\";\n"
		"\tfreq = 1000000000;\n"
		"\tprecision = 1;\n"
		"\toffset_s = %lld;\n"
		"\toffset = %lld;\n"
		"\tabsolute = true;\n"
		"};\n\n",
		(long long)s, (long long)ns);
}

int ht_ctf_metadata_close(struct ht_ctf_trace *t, FILE *f, char *err, size_t errlen)
{
	if (ferror(f) | fclose(f))
		return ht_errf_status(err, errlen, -EIO, "cannot write %s/metadata", t->path);
	return 0;
}
