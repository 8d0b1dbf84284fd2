// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The CTF layer under both CTF exports (export/ctf_trace.h): the bytes of a
 * packet, a full packet written before the event that does not fit, time
 * order within a stream, LTTng's kernel layout, the metadata's trace and
 * clock blocks, and a failed write named in one line. babeltrace2 reads the
 * exports themselves (tests/export).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "export/ctf_trace.h"
#include "test.h"

/* A scratch directory: its path in dir, its descriptor returned (-1 on failure). */
static int scratch(char dir[64])
{
	snprintf(dir, 64, "/tmp/ht-ctf-trace-XXXXXX");
	return mkdtemp(dir) ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
}

static void remove_scratch(const char *dir, int fd)
{
	char cmd[128];

	if (fd >= 0)
		close(fd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		fprintf(stdout, "    cannot remove %s\n", dir);
}

/* The whole file name in dirfd (malloc'd, NUL-terminated) and its length; NULL if unreadable. */
static unsigned char *slurp(int dirfd, const char *name, size_t *len)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	struct stat st;
	unsigned char *buf = NULL;

	if (fd >= 0 && !fstat(fd, &st) && (buf = malloc((size_t)st.st_size + 1)) &&
	    read(fd, buf, (size_t)st.st_size) == st.st_size) {
		buf[st.st_size] = '\0';
		*len = (size_t)st.st_size;
	} else {
		free(buf);
		buf = NULL;
	}
	if (fd >= 0)
		close(fd);
	return buf;
}

static uint64_t u64_at(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint32_t u32_at(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* The 16 bytes of the text uuid after `key = "` in text (the first one). */
static bool uuid_of(const char *text, const char *key, unsigned char out[16])
{
	const char *p = strstr(text, key);

	if (!p)
		return false;
	p += strlen(key);
	for (int i = 0; i < 16; i++) {
		unsigned int b;
		if (*p == '-')
			p++;
		if (sscanf(p, "%2x", &b) != 1)
			return false;
		out[i] = (unsigned char)b;
		p += 2;
	}
	return true;
}

static void a_packet_is_its_header_context_and_events(void)
{
	char dir[64], err[256] = "";
	int fd = scratch(dir);
	struct ht_ctf_trace *t = NULL;
	struct ht_ctf_stream *s;
	unsigned char *at, *data = NULL, uuid[16];
	char *meta = NULL;
	size_t len = 0, mlen = 0;
	FILE *f;

	if (!ASSERT_GE(fd, 0, "scratch directory"))
		return;
	const struct ht_ctf_trace_spec spec = { .parent_fd = fd, .path = dir, .salt = 1 };
	if (!ASSERT_OK(ht_ctf_trace_open(&spec, &t, err, sizeof(err)), err) ||
	    !ASSERT_OK_PTR(s = ht_ctf_stream_new(t, "s", 7, 0), "stream"))
		goto cleanup;
	if (!ASSERT_OK(ht_ctf_event_reserve(t, s, 3, 1000, 4, &at, err, sizeof(err)), err))
		goto cleanup;
	ht_ctf_put_u32(at, 0xaabbccdd);
	/* Earlier than the last: raised to it, and counted. */
	if (!ASSERT_OK(ht_ctf_event_reserve(t, s, 4, 900, 4, &at, err, sizeof(err)), err))
		goto cleanup;
	ht_ctf_put_u32(at, 0x11223344);
	ASSERT_EQ(ht_ctf_trace_reordered(t), 1, "reordered");
	if (!ASSERT_OK(ht_ctf_stream_flush(t, s, 2000, 5, err, sizeof(err)), err) ||
	    !ASSERT_OK(ht_ctf_metadata_open(t, &f, err, sizeof(err)), err))
		goto cleanup;
	ht_ctf_metadata_trace(t, f);
	if (!ASSERT_OK(ht_ctf_metadata_close(t, f, err, sizeof(err)), err))
		goto cleanup;

	data = slurp(fd, "s", &len);
	meta = (char *)slurp(fd, "metadata", &mlen);
	if (!ASSERT_OK_PTR(data, "stream file") || !ASSERT_OK_PTR(meta, "metadata") ||
	    !ASSERT_EQ(len, HT_CTF_PACKET_PREAMBLE_BYTES + 2 * (HT_CTF_EVENT_HEADER_BYTES + 4), "packet bytes") ||
	    !ASSERT_TRUE(uuid_of(meta, "\tuuid = \"", uuid), "the trace's uuid in the metadata"))
		goto cleanup;
	ASSERT_EQ(u32_at(data), 0xc1fc1fc1u, "magic");
	ASSERT_OK(memcmp(data + 4, uuid, 16), "the packet's uuid is the metadata's");
	ASSERT_EQ(uuid[6] >> 4, 4, "uuid version 4");
	ASSERT_EQ(u32_at(data + 20), 0, "stream_id");
	ASSERT_EQ(u64_at(data + 24), 7, "stream_instance_id");
	ASSERT_EQ(u64_at(data + 32), 1000, "timestamp_begin: the first event's");
	ASSERT_EQ(u64_at(data + 40), 2000, "timestamp_end");
	ASSERT_EQ(u64_at(data + 48), len * 8, "content_size in bits");
	ASSERT_EQ(u64_at(data + 56), len * 8, "packet_size: no padding");
	ASSERT_EQ(u64_at(data + 64), 0, "packet_seq_num");
	ASSERT_EQ(u64_at(data + 72), 5, "events_discarded");
	ASSERT_EQ(data[80] | data[81] << 8, 3, "first event's id");
	ASSERT_EQ(u64_at(data + 82), 1000, "first event's time");
	ASSERT_EQ(u32_at(data + 90), 0xaabbccdd, "first event's bytes");
	ASSERT_EQ(data[94] | data[95] << 8, 4, "second event's id");
	ASSERT_EQ(u64_at(data + 96), 1000, "second event's time, raised");
	ASSERT_EQ(u32_at(data + 104), 0x11223344, "second event's bytes");
	ASSERT_MSG(!strncmp(meta, "/* CTF 1.8 */\n\n", 15) && strstr(meta, "\t\tuint8_t uuid[16];\n") &&
			   strstr(meta, "byte_order = le;"),
		   "metadata:\n%s", meta);
cleanup:
	free(data);
	free(meta);
	ht_ctf_trace_free(t);
	remove_scratch(dir, fd);
}

static void a_full_packet_is_written_before_the_event_that_does_not_fit(void)
{
	enum { SIZE = 1000 };
	char dir[64], err[256] = "";
	int fd = scratch(dir);
	struct ht_ctf_trace *t = NULL;
	struct ht_ctf_stream *s;
	unsigned char *at, *data = NULL;
	size_t len = 0, per_packet = (HT_CTF_PACKET_BYTES - HT_CTF_PACKET_PREAMBLE_BYTES) /
				     (HT_CTF_EVENT_HEADER_BYTES + SIZE);
	size_t first = HT_CTF_PACKET_PREAMBLE_BYTES + per_packet * (HT_CTF_EVENT_HEADER_BYTES + SIZE);

	if (!ASSERT_GE(fd, 0, "scratch directory"))
		return;
	const struct ht_ctf_trace_spec spec = { .parent_fd = fd, .path = dir };
	if (!ASSERT_OK(ht_ctf_trace_open(&spec, &t, err, sizeof(err)), err) ||
	    !ASSERT_OK_PTR(s = ht_ctf_stream_new(t, "s", 1, 0), "stream"))
		goto cleanup;
	for (size_t i = 0; i <= per_packet; i++) {
		if (!ASSERT_OK(ht_ctf_event_reserve(t, s, 0, 10 + i, SIZE, &at, err, sizeof(err)), err))
			goto cleanup;
		memset(at, 0x5a, SIZE);
	}
	ASSERT_EQ(s->seq, 1, "one packet written");
	if (!ASSERT_OK(ht_ctf_trace_flush(t, err, sizeof(err)), err) ||
	    !ASSERT_OK_PTR(data = slurp(fd, "s", &len), "stream file"))
		goto cleanup;
	if (!ASSERT_EQ(len, first + HT_CTF_PACKET_PREAMBLE_BYTES + HT_CTF_EVENT_HEADER_BYTES + SIZE, "file bytes"))
		goto cleanup;
	ASSERT_EQ(u64_at(data + 56), first * 8, "first packet_size");
	ASSERT_EQ(u64_at(data + 40), 10 + per_packet - 1, "first timestamp_end: its last event's");
	ASSERT_EQ(u64_at(data + first + 32), 10 + per_packet, "second timestamp_begin");
	ASSERT_EQ(u64_at(data + first + 64), 1, "second packet_seq_num");
	ASSERT_EQ(s->len, HT_CTF_PACKET_PREAMBLE_BYTES, "an empty packet left");
cleanup:
	free(data);
	ht_ctf_trace_free(t);
	remove_scratch(dir, fd);
}

static void lttng_layout_has_cpu_id_a_clock_uuid_and_lttng_spelling(void)
{
	char dir[64], err[256] = "", path[128];
	int fd = scratch(dir), tfd = -1;
	struct ht_ctf_trace *t = NULL;
	struct ht_ctf_stream *s;
	unsigned char *at, *data = NULL, uuid[16], clock_uuid[16];
	char *meta = NULL, *clock;
	size_t len = 0, mlen = 0;
	FILE *f;

	if (!ASSERT_GE(fd, 0, "scratch directory"))
		return;
	snprintf(path, sizeof(path), "%s/host", dir);
	const struct ht_ctf_trace_spec spec = { .parent_fd = fd, .subdir = "host", .path = path, .lttng_kernel = true };
	if (!ASSERT_OK(ht_ctf_trace_open(&spec, &t, err, sizeof(err)), err) ||
	    !ASSERT_OK_PTR(s = ht_ctf_stream_new(t, "channel0_3", 3, 3), "stream") ||
	    !ASSERT_OK(ht_ctf_event_reserve(t, s, 1, 50, 0, &at, err, sizeof(err)), err) ||
	    !ASSERT_OK(ht_ctf_trace_flush(t, err, sizeof(err)), err) ||
	    !ASSERT_OK(ht_ctf_metadata_open(t, &f, err, sizeof(err)), err))
		goto cleanup;
	ht_ctf_metadata_trace(t, f);
	/* One ns before the Epoch: CTF's offset is whole seconds and a positive rest. */
	ht_ctf_metadata_clock(t, f, "a \"quoted\" clock", -1);
	if (!ASSERT_OK(ht_ctf_metadata_close(t, f, err, sizeof(err)), err))
		goto cleanup;
	tfd = openat(fd, "host", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	data = slurp(tfd, "channel0_3", &len);
	meta = (char *)slurp(tfd, "metadata", &mlen);
	if (!ASSERT_OK_PTR(data, "stream file") || !ASSERT_OK_PTR(meta, "metadata") ||
	    !ASSERT_EQ(len, HT_CTF_LTTNG_PACKET_PREAMBLE_BYTES + HT_CTF_EVENT_HEADER_BYTES, "packet bytes") ||
	    !ASSERT_OK_PTR(clock = strstr(meta, "clock {"), "a clock block") ||
	    !ASSERT_TRUE(uuid_of(meta, "\tuuid = \"", uuid) && uuid_of(clock, "\tuuid = \"", clock_uuid), "uuids"))
		goto cleanup;
	ASSERT_EQ(u32_at(data + 80), 3, "cpu_id closes the packet context");
	ASSERT_EQ(u64_at(data + 56), len * 8, "packet_size");
	ASSERT_OK(memcmp(data + 4, uuid, 16), "the packet's uuid is the trace's");
	ASSERT_NE(memcmp(uuid, clock_uuid, 16), 0, "the clock's uuid is another");
	ASSERT_MSG(strstr(meta, "\t\tuint8_t  uuid[16];\n") && strstr(clock, "\tdescription = \"a \\\"quoted\\\" clock\";\n") &&
			   strstr(clock, "\toffset_s = -1;\n\toffset = 999999999;\n"),
		   "metadata:\n%s", meta);
cleanup:
	free(data);
	free(meta);
	if (tfd >= 0)
		close(tfd);
	ht_ctf_trace_free(t);
	remove_scratch(dir, fd);
}

static void a_failed_write_is_one_line_naming_the_file(void)
{
	char dir[64], err[256] = "", path[128], want[192];
	int fd = scratch(dir);
	struct ht_ctf_trace *t = NULL, *again = NULL;
	struct ht_ctf_stream *s;
	unsigned char *at;

	if (!ASSERT_GE(fd, 0, "scratch directory"))
		return;
	snprintf(path, sizeof(path), "%s/guest", dir);
	const struct ht_ctf_trace_spec spec = { .parent_fd = fd, .subdir = "guest", .path = path, .lttng_kernel = true };
	if (!ASSERT_OK(ht_ctf_trace_open(&spec, &t, err, sizeof(err)), err))
		goto cleanup;
	/* A second trace in the same directory. */
	ASSERT_EQ(ht_ctf_trace_open(&spec, &again, err, sizeof(err)), -EEXIST, "open again");
	snprintf(want, sizeof(want), "cannot create %s: File exists", path);
	ASSERT_STREQ(err, want, "message");
	/* The directory gone under the trace: the packet cannot be written. */
	if (!ASSERT_OK_PTR(s = ht_ctf_stream_new(t, "channel0_0", 0, 0), "stream") ||
	    !ASSERT_OK(ht_ctf_event_reserve(t, s, 0, 1, 0, &at, err, sizeof(err)), err) ||
	    !ASSERT_OK(unlinkat(fd, "guest", AT_REMOVEDIR), "rmdir"))
		goto cleanup;
	ASSERT_EQ(ht_ctf_trace_flush(t, err, sizeof(err)), -ENOENT, "flush");
	snprintf(want, sizeof(want), "cannot write %s/channel0_0: No such file or directory", path);
	ASSERT_STREQ(err, want, "message");
cleanup:
	ht_ctf_trace_free(again);
	ht_ctf_trace_free(t);
	remove_scratch(dir, fd);
}

int main(void)
{
	RUN(a_packet_is_its_header_context_and_events);
	RUN(a_full_packet_is_written_before_the_event_that_does_not_fit);
	RUN(lttng_layout_has_cpu_id_a_clock_uuid_and_lttng_spelling);
	RUN(a_failed_write_is_one_line_naming_the_file);
	return ht_test_exit_status();
}
