// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Trace file writer and reader: round trip and every way a file can be damaged. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "test.h"
#include "tracefile/trace_reader.h"
#include "bpf/vcpu_state.h"
#include "tracefile/trace_writer.h"
#include "common/util.h"

static char dir[] = "/tmp/ht-file-XXXXXX";
static char path[128];

static struct ht_record make_record(unsigned int i)
{
	struct ht_record r;

	memset(&r, 0, sizeof(r));
	r.exit_ns = 1000000000ull + i * 1000ull;
	r.guest_rip = 0xffffffff81000000ull + i;
	r.a0 = i;
	r.a1 = ~(__u64)i;
	r.a2 = 0xa2a2a2a2a2a2a2a2ull;
	r.a3 = 0xa3a3a3a3a3a3a3a3ull;
	r.nr = 1000;
	r.exit_reason = 0x81;
	r.exit_to_hcall_ns = 100 + i % 7;
	r.hcall_to_entry_ns = 200 + i % 11;
	r.host_pid = 4242;
	r.host_tid = 4243 + i % 3;
	r.vcpu_id = (__u16)(i % 3);
	r.exit_cpu = (__u16)(i % 2);
	r.entry_cpu = (__u16)((i + 1) % 2);
	r.isa = HT_ISA_SVM;
	return r;
}

static unsigned int encoding = HT_ENCODING_RAW;

/* Writes n records (and a trailer unless without_trailer); returns the file size. */
static long write_file(unsigned int n, bool with_trailer)
{
	struct ht_file_header h;
	struct ht_writer *w;
	struct ht_trailer t = { .ringbuf_drops = 3, .superseded = 1, .end_monotonic_ns = 77 };
	char err[256];
	struct stat sb;

	ht_header_init(&h);
	h.filter_nr_count = 2;
	h.filter_nr[1] = 1001;
	if (ht_writer_open(path, true, &h, &w, err, sizeof(err)) || ht_writer_set_encoding(w, encoding))
		return -1;
	for (unsigned int i = 0; i < n; i++) {
		struct ht_record r = make_record(i);
		ht_writer_add(w, &r);
	}
	if (with_trailer) {
		if (ht_writer_close(w, &t) || t.records != n)
			return -1;
	} else {
		/* A recording that stops without a trailer, as after a crash: named, then left. */
		ht_writer_flush(w);
		if (ht_writer_publish(w, err, sizeof(err)))
			return -1;
		ht_writer_abandon(w);
	}
	return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

/* Reads the file; returns records read (each checked against make_record) or -1 on open failure. */
static long read_back(struct ht_read_status *st, char *err, size_t errlen)
{
	struct ht_reader *r;
	struct ht_record rec;
	long n = 0;

	if (ht_reader_open(path, &r, err, errlen))
		return -1;
	while (ht_reader_next(r, &rec) == 1) {
		struct ht_record want = make_record((unsigned int)n);
		if (memcmp(&rec, &want, sizeof(rec)) != 0) {
			n = -2;
			break;
		}
		n++;
	}
	*st = *ht_reader_status(r);
	ht_reader_close(r);
	return n;
}

static void truncate_to(long size)
{
	if (truncate(path, size))
		perror("truncate");
}

/* len bytes of the file at offset into buf: false if they cannot all be read. */
static bool peek(long offset, void *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	bool whole = fd >= 0 && pread(fd, buf, len, offset) == (ssize_t)len;

	if (fd >= 0)
		close(fd);
	return whole;
}

static void patch(long offset, const void *bytes, size_t len)
{
	int fd = open(path, O_WRONLY);

	if (fd >= 0) {
		if (pwrite(fd, bytes, len, offset) != (ssize_t)len)
			perror("pwrite");
		close(fd);
	}
}

#define BLOCK_BYTES ((long)sizeof(struct ht_block_header) + HT_WRITER_BLOCK_RECORDS * (long)sizeof(struct ht_record))

static void round_trip_keeps_every_record_header_and_trailer(void)
{
	const unsigned int n = 2 * HT_WRITER_BLOCK_RECORDS + 5; /* three blocks, the last partial */
	struct ht_read_status st;
	char err[256];
	struct ht_reader *r = NULL;
	const struct ht_file_header *h;
	long size = write_file(n, true);

	if (!ASSERT_MSG(size == HT_FILE_HEADER_SIZE + 2 * BLOCK_BYTES + 24 + 5 * 80 + 24 + 64, "file size %ld", size))
		goto cleanup;
	if (!ASSERT_EQ(read_back(&st, err, sizeof(err)), n, "read_back(&st, err, sizeof(err))"))
		goto cleanup;
	if (!ASSERT_MSG(st.has_trailer && !st.damaged, "reason: %s", st.reason))
		goto cleanup;
	if (!ASSERT_EQ(st.trailer.records, n, "st.trailer.records"))
		goto cleanup;
	if (!ASSERT_EQ(st.trailer.ringbuf_drops, 3, "st.trailer.ringbuf_drops"))
		goto cleanup;
	if (!ASSERT_EQ(st.trailer.superseded, 1, "st.trailer.superseded"))
		goto cleanup;
	if (!ASSERT_EQ(st.trailer.end_monotonic_ns, 77, "st.trailer.end_monotonic_ns"))
		goto cleanup;
	if (!ASSERT_EQ(st.good_bytes, (unsigned long long)size, "st.good_bytes"))
		goto cleanup;
	if (!ASSERT_MSG(ht_reader_open(path, &r, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	h = ht_reader_header(r);
	if (!ASSERT_EQ(h->version, HT_FILE_VERSION, "h->version"))
		goto cleanup;
	if (!ASSERT_EQ(h->record_size, 80, "h->record_size"))
		goto cleanup;
	if (!ASSERT_EQ(h->filter_nr_count, 2, "h->filter_nr_count"))
		goto cleanup;
	if (!ASSERT_EQ(h->filter_nr[1], 1001, "h->filter_nr[1]"))
		goto cleanup;
	if (!ASSERT_MSG(h->start_realtime_ns > 1600000000ull * 1000000000ull, "realtime anchor missing"))
		goto cleanup;
	if (!ASSERT_MSG(h->kernel_release[0] != '\0', "kernel release missing"))
		goto cleanup;
cleanup:
	ht_reader_close(r);
}

static void an_empty_recording_is_a_valid_file(void)
{
	struct ht_read_status st;
	char err[256];

	CHECK_EQ_U64(write_file(0, true), HT_FILE_HEADER_SIZE + 24 + 64);
	CHECK_EQ_U64(read_back(&st, err, sizeof(err)), 0);
	CHECK(st.has_trailer && !st.damaged, "%s", st.reason);
}

static void a_file_cut_inside_a_block_is_read_up_to_its_last_whole_block(void)
{
	struct ht_read_status st;
	char err[256];

	write_file(2 * HT_WRITER_BLOCK_RECORDS + 5, true);
	long cut = HT_FILE_HEADER_SIZE + BLOCK_BYTES + 1000; /* inside the second block */
	truncate_to(cut);
	CHECK_EQ_U64(read_back(&st, err, sizeof(err)), HT_WRITER_BLOCK_RECORDS);
	CHECK(st.damaged && !st.has_trailer, "should be damaged");
	CHECK_EQ_U64(st.good_bytes, HT_FILE_HEADER_SIZE + BLOCK_BYTES);
	CHECK(strstr(st.reason, "truncated") != NULL, "reason: %s", st.reason);
}

static void a_file_without_trailer_is_read_whole_and_says_so(void)
{
	struct ht_read_status st;
	char err[256];

	write_file(10, false); /* what a crash between blocks leaves */
	CHECK_EQ_U64(read_back(&st, err, sizeof(err)), 10);
	CHECK(!st.damaged && !st.has_trailer, "damaged %d trailer %d", st.damaged, st.has_trailer);
	CHECK(strstr(st.reason, "did not end cleanly") != NULL, "reason: %s", st.reason);
}

static void a_flipped_byte_in_a_block_stops_reading_at_that_block(void)
{
	struct ht_read_status st;
	char err[256];
	unsigned char b;

	write_file(HT_WRITER_BLOCK_RECORDS + 10, true);
	long off = HT_FILE_HEADER_SIZE + BLOCK_BYTES + 24 + 3 * 80 + 17; /* a record of block 2 */
	CHECK(peek(off, &b, 1), "read byte");
	b ^= 0x10;
	patch(off, &b, 1);
	CHECK_EQ_U64(read_back(&st, err, sizeof(err)), HT_WRITER_BLOCK_RECORDS);
	CHECK(st.damaged, "should be damaged");
	CHECK(strstr(st.reason, "CRC32") != NULL, "reason: %s", st.reason);
	CHECK_EQ_U64(st.good_bytes, HT_FILE_HEADER_SIZE + BLOCK_BYTES);
}

static void a_corrupt_block_length_is_refused_not_trusted(void)
{
	struct ht_read_status st;
	char err[256];
	__u32 huge = 0x7fffffff;

	write_file(5, true);
	patch(HT_FILE_HEADER_SIZE + 8, &huge, sizeof(huge)); /* payload_len of block 1 */
	CHECK_EQ_U64(read_back(&st, err, sizeof(err)), 0);
	CHECK(st.damaged && strstr(st.reason, "bad block header"), "reason: %s", st.reason);
}

static void data_after_the_trailer_is_reported(void)
{
	struct ht_read_status st;
	char err[256];
	unsigned char junk[24] = { 0 };

	long size = write_file(5, true);
	patch(size, junk, sizeof(junk));
	CHECK_EQ_U64(read_back(&st, err, sizeof(err)), 5);
	CHECK(st.has_trailer && st.damaged, "trailer %d damaged %d", st.has_trailer, st.damaged);
}

/* A trailer that claims more or fewer records than the blocks hold, with a valid CRC. */
static void a_trailer_count_that_disagrees_is_reported(void)
{
	static const __u64 claims[] = { 3, 1000000 };
	struct ht_read_status st;
	char err[256];

	for (size_t i = 0; i < ARRAY_SIZE(claims); i++) {
		long size = write_file(10, true);
		long trailer = size - (long)sizeof(struct ht_trailer);
		struct ht_trailer t;
		CHECK(peek(trailer, &t, sizeof(t)), "read trailer");
		t.records = claims[i];
		__u32 crc = (__u32)crc32(0, (const unsigned char *)&t, sizeof(t));
		patch(trailer, &t, sizeof(t));
		patch(trailer - 4, &crc, sizeof(crc)); /* the block header's crc32 field */
		CHECK_EQ_U64(read_back(&st, err, sizeof(err)), 10);
		CHECK(st.has_trailer && st.damaged, "claim %llu: trailer %d damaged %d",
		      (unsigned long long)claims[i], st.has_trailer, st.damaged);
		CHECK(strstr(st.reason, "the trailer counts") && strstr(st.reason, "holds 10"), "reason: %s", st.reason);
	}
}

static void wrong_magic_is_not_a_trace_file(void)
{
	struct ht_read_status st;
	char err[256];

	write_file(5, true);
	patch(0, "NOTTRACE", 8);
	CHECK(read_back(&st, err, sizeof(err)) == -1, "opened a foreign file");
	CHECK(strstr(err, "not a hypertrace-bpf trace file") != NULL, "err: %s", err);
}

static void a_newer_version_asks_for_an_upgrade(void)
{
	struct ht_read_status st;
	char err[256];
	struct ht_file_header h;

	write_file(5, true);
	CHECK(peek(0, &h, sizeof(h)), "read header");
	h.version = HT_FILE_VERSION + 1;
	h.header_crc32 = (__u32)crc32(0, (const Bytef *)&h, offsetof(struct ht_file_header, header_crc32));
	patch(0, &h, sizeof(h));
	CHECK(read_back(&st, err, sizeof(err)) == -1, "opened a newer version");
	CHECK(strstr(err, "newer") && strstr(err, "upgrade"), "err: %s", err);
}

static void a_damaged_header_is_refused(void)
{
	struct ht_read_status st;
	char err[256];

	write_file(5, true);
	patch(50, "X", 1); /* inside kernel_release, covered by the header CRC */
	CHECK(read_back(&st, err, sizeof(err)) == -1, "opened a damaged header");
	CHECK(strstr(err, "damaged header") != NULL, "err: %s", err);
}

static void an_empty_or_short_file_is_refused(void)
{
	struct ht_read_status st;
	char err[256];

	write_file(5, true);
	truncate_to(0);
	CHECK(read_back(&st, err, sizeof(err)) == -1, "opened an empty file");
	CHECK(strstr(err, "is empty") != NULL, "err: %s", err);
	write_file(5, true);
	truncate_to(100);
	CHECK(read_back(&st, err, sizeof(err)) == -1, "opened a short file");
	CHECK(strstr(err, "truncated inside its header") != NULL, "err: %s", err);
}

static void the_writer_never_overwrites_without_force(void)
{
	struct ht_file_header h;
	struct ht_writer *w = NULL;
	char err[256];

	write_file(1, true);
	ht_header_init(&h);
	/* Each open is expected to fail: one that does not leaves a writer to drop. */
	if (!ASSERT_MSG(ht_writer_open(path, false, &h, &w, err, sizeof(err)) == -EEXIST, "overwrote"))
		goto cleanup;
	if (!ASSERT_MSG(strstr(err, "--force") != NULL, "err: %s", err))
		goto cleanup;
	if (!ASSERT_MSG(ht_writer_open("/nonexistent-dir/t.htr", true, &h, &w, err, sizeof(err)) == -ENOENT,
			"created in a missing directory"))
		goto cleanup;
	ASSERT_MSG(strstr(err, "cannot create") && strstr(err, "-o"), "err: %s", err);
cleanup:
	ht_writer_abandon(w);
}

static void compressed_blocks_round_trip_at_a_fraction_of_the_size(void)
{
	const unsigned int n = 2 * HT_WRITER_BLOCK_RECORDS + 5;
	struct ht_read_status st;
	char err[256];

	encoding = HT_ENCODING_DELTA_ZLIB;
	long size = write_file(n, true);
	encoding = HT_ENCODING_RAW;
	CHECK(size > 0, "write failed");
	CHECK_EQ_U64(read_back(&st, err, sizeof(err)), n);
	CHECK(st.has_trailer && !st.damaged, "reason: %s", st.reason);
	/* Regular records (as hypercalls of one VM are) shrink at least tenfold. */
	CHECK(size * 10 < (long)n * 80, "%ld bytes for %u records", size, n);
	printf("    (%.1f bytes per record compressed)\n", (double)size / n);
}

/* One EXITS block: 2 series and 1 thread, cumulative numbers. */
struct exits_payload {
	struct ht_exits_header h;
	struct ht_exit_series_rec s[2];
	struct ht_vcpu_wait_rec w[1];
};

static void fill_exits(struct exits_payload *p, unsigned int k)
{
	memset(p, 0, sizeof(*p));
	p->h = (struct ht_exits_header){ .time_ns = 1000 + k, .nseries = 2, .nthreads = 1, .lost_no_thread = k };
	for (int i = 0; i < 2; i++) {
		p->s[i].key = (struct ht_exit_key){ .pid = 4242, .vcpu = (__u16)i, .isa = HT_ISA_SVM, .reason = 0x7b + (unsigned)i };
		p->s[i].h.count = 10 * k + (unsigned)i;
		p->s[i].h.slots[12] = p->s[i].h.count;
	}
	p->w[0].w = (struct ht_vcpu_wait){ .pid = 4242, .tid = 4250, .vcpu = 1, .wait_ns = 7 * k, .preempt_count = k };
}

static unsigned int exits_seen;
static struct exits_payload exits_last;
static struct ht_vcpu_wait_rec exits_second; /* a block's second thread, if it has one */

static void see_exits(void *ctx, const struct ht_exits_header *h, const struct ht_exit_series_rec *s,
		      const struct ht_vcpu_wait_rec *w)
{
	(void)ctx;
	exits_seen++;
	exits_last.h = *h;
	memcpy(exits_last.s, s, sizeof(exits_last.s[0]) * (h->nseries < 2 ? h->nseries : 2));
	if (h->nthreads)
		exits_last.w[0] = w[0];
	if (h->nthreads > 1)
		exits_second = w[1];
}

/* Writes records and EXITS blocks interleaved; returns 0. */
static int write_exits_file(unsigned int blocks)
{
	struct ht_file_header h;
	struct ht_writer *w;
	struct ht_trailer t = { 0 };
	struct exits_payload p;
	char err[256];

	ht_header_init(&h);
	h.start_monotonic_ns = 1000; /* the blocks' times (fill_exits) come after the start, as a recording's */
	if (ht_writer_open(path, true, &h, &w, err, sizeof(err)))
		return -1;
	for (unsigned int k = 1; k <= blocks; k++) {
		struct ht_record r = make_record(k - 1);
		fill_exits(&p, k);
		if (ht_writer_add_block(w, HT_BLOCK_EXITS, &p, sizeof(p), 3))
			return -1;
		ht_writer_add(w, &r);
		ht_writer_flush(w);
	}
	return ht_writer_close(w, &t);
}

static void exits_blocks_round_trip_between_records(void)
{
	struct ht_reader *r = NULL;
	const struct ht_read_status *st;
	struct exits_payload want;
	struct ht_record rec;
	char err[256];
	long n = 0;

	if (!ASSERT_OK(write_exits_file(3), "write"))
		return;
	if (!ASSERT_MSG(ht_reader_open(path, &r, err, sizeof(err)) == 0, "%s", err))
		return;
	exits_seen = 0;
	ht_reader_set_exits_visitor(r, see_exits, NULL);
	while (ht_reader_next(r, &rec) == 1)
		n++;
	st = ht_reader_status(r);
	if (!ASSERT_MSG(st->has_trailer && !st->damaged, "file not whole: %s", st->reason))
		goto cleanup;
	if (!ASSERT_EQ(n, 3, "records"))
		goto cleanup;
	if (!ASSERT_EQ(ht_reader_exits_blocks(r), 3, "EXITS blocks"))
		goto cleanup;
	if (!ASSERT_EQ(exits_seen, 3, "EXITS blocks visited"))
		goto cleanup;
	fill_exits(&want, 3);
	ASSERT_MSG(memcmp(&exits_last, &want, sizeof(want)) == 0, "the last EXITS block differs from what was written");
cleanup:
	ht_reader_close(r);
}

static void an_exits_block_whose_counts_do_not_add_up_stops_reading(void)
{
	struct ht_read_status st;
	char err[256];
	__u32 bad = 5; /* nseries: 5 series do not fit the payload */

	CHECK(write_exits_file(1) == 0, "write");
	patch(HT_FILE_HEADER_SIZE + (long)sizeof(struct ht_block_header) + 8, &bad, sizeof(bad));
	/* With a consistent CRC: only the counts are wrong. */
	unsigned char buf[sizeof(struct exits_payload)];
	CHECK(peek(HT_FILE_HEADER_SIZE + (long)sizeof(struct ht_block_header), buf, sizeof(buf)), "read");
	__u32 crc = (__u32)crc32(0, buf, sizeof(buf));
	patch(HT_FILE_HEADER_SIZE + 20, &crc, sizeof(crc));
	CHECK(read_back(&st, err, sizeof(err)) == 0, "records before the bad block");
	CHECK(st.damaged && strstr(st.reason, "exits block"), "reason: %s", st.reason);
}

/*
 * Version 4 wrote 56-byte thread records (no account): a reader of version
 * 5 takes them as they were, with an empty account, not as 120-byte ones.
 */
static void version_4_thread_records_read_without_an_account(void)
{
	struct {
		struct ht_exits_header h; /* its first HT_EXITS_HEADER_V5_SIZE bytes: a version 4 header */
		struct ht_vcpu_wait w[2];
	} p = { .h = { .time_ns = 1000, .nthreads = 2 } };
	struct ht_file_header h;
	struct ht_trailer t = { 0 };
	struct ht_writer *w = NULL;
	struct ht_reader *r = NULL;
	struct ht_record rec;
	char err[256];
	int ret;
	bool damaged;

	_Static_assert(sizeof(struct ht_vcpu_wait) == HT_VCPU_WAIT_REC_V4_SIZE, "a version 4 thread record");
	for (int i = 0; i < 2; i++)
		p.w[i] = (struct ht_vcpu_wait){ .pid = 4242, .tid = 4250 + (unsigned)i, .wait_ns = 7 + (unsigned)i };
	ht_header_init(&h);
	h.start_monotonic_ns = 1000; /* the block's time comes after the start, as a recording's */
	if (!ASSERT_MSG(ht_writer_open(path, true, &h, &w, err, sizeof(err)) == 0, "%s", err))
		return;
	memmove((char *)&p + HT_EXITS_HEADER_V5_SIZE, p.w, sizeof(p.w));
	if (!ASSERT_OK(ht_writer_add_block(w, HT_BLOCK_EXITS, &p, HT_EXITS_HEADER_V5_SIZE + sizeof(p.w), 2), "block"))
		goto cleanup;
	ret = ht_writer_close(w, &t);
	w = NULL; /* freed either way */
	if (!ASSERT_OK(ret, "close"))
		goto cleanup;
	if (!ASSERT_TRUE(peek(0, &h, sizeof(h)), "read header"))
		goto cleanup;
	h.version = 4;
	h.header_crc32 = (__u32)crc32(0, (const Bytef *)&h, offsetof(struct ht_file_header, header_crc32));
	patch(0, &h, sizeof(h));
	if (!ASSERT_MSG(ht_reader_open(path, &r, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	exits_seen = 0;
	memset(&exits_last, 0xff, sizeof(exits_last));
	ht_reader_set_exits_visitor(r, see_exits, NULL);
	while (ht_reader_next(r, &rec) == 1)
		;
	damaged = ht_reader_status(r)->damaged;
	if (!ASSERT_MSG(!damaged && exits_seen == 1, "the block was not read whole"))
		goto cleanup;
	if (!ASSERT_MSG(exits_last.w[0].w.tid == 4250 && exits_last.w[0].w.wait_ns == 7, "the first thread as written"))
		goto cleanup;
	ASSERT_MSG(exits_last.w[0].a.start_ns == 0 && exits_last.w[0].a.as_of_ns == 0, "no account in a version 4 file");
cleanup:
	ht_writer_abandon(w);
	ht_reader_close(r);
}

/*
 * Writes one EXITS block of two thread records of rec_size bytes each (a
 * version's layout), in a file then marked as of version; opens it and
 * reads it all. The reader, or NULL (err says why).
 */
static struct ht_reader *read_thread_records_of_version(__u32 version, const struct ht_vcpu_wait_rec *threads,
							size_t rec_size, char *err, size_t errlen)
{
	unsigned char p[sizeof(struct ht_exits_header) + 2 * sizeof(struct ht_vcpu_wait_rec)];
	struct ht_exits_header eh = { .time_ns = 1000, .nthreads = 2 };
	struct ht_file_header h;
	struct ht_trailer t = { 0 };
	struct ht_writer *w = NULL;
	struct ht_reader *r = NULL;
	struct ht_record rec;

	memcpy(p, &eh, sizeof(eh));
	for (int i = 0; i < 2; i++)
		memcpy(p + sizeof(eh) + (size_t)i * rec_size, &threads[i], rec_size);
	ht_header_init(&h);
	h.start_monotonic_ns = 1000;
	if (ht_writer_open(path, true, &h, &w, err, errlen) ||
	    ht_writer_add_block(w, HT_BLOCK_EXITS, p, (__u32)(sizeof(eh) + 2 * rec_size), 2)) {
		ht_writer_abandon(w);
		return NULL;
	}
	if (ht_writer_close(w, &t) || !peek(0, &h, sizeof(h)))
		return NULL;
	h.version = version;
	h.header_crc32 = (__u32)crc32(0, (const Bytef *)&h, offsetof(struct ht_file_header, header_crc32));
	patch(0, &h, sizeof(h));
	if (ht_reader_open(path, &r, err, errlen))
		return NULL;
	exits_seen = 0;
	memset(&exits_last, 0xff, sizeof(exits_last));
	memset(&exits_second, 0xff, sizeof(exits_second));
	ht_reader_set_exits_visitor(r, see_exits, NULL);
	while (ht_reader_next(r, &rec) == 1)
		;
	return r;
}

/*
 * Versions 5 to 8 wrote thread records without halts: a reader of version
 * 9 takes each at its own size (the second thread where it was written),
 * with no halts and the polling unknown; version 9's carry them.
 */
static void version_8_thread_records_read_without_halts(void)
{
	struct ht_vcpu_wait_rec threads[2] = {
		{ .w = { .pid = 4242, .tid = 4250, .wait_ns = 7 }, .a = { .start_ns = 10, .as_of_ns = 10 } },
		{ .w = { .pid = 4242, .tid = 4251, .wait_ns = 8 }, .a = { .start_ns = 20, .as_of_ns = 20 },
		  .h = { .halts = 9, .polled = 6, .caught = 4, .caught_ns = 400, .slept = 5, .slept_ns = 5000,
			 .poll_ns = 200000, .poll_unknown = 1 } },
	};
	struct ht_reader *r;
	char err[256] = "";

	r = read_thread_records_of_version(8, threads, HT_VCPU_WAIT_REC_V8_SIZE, err, sizeof(err));
	if (!ASSERT_MSG(r && !ht_reader_status(r)->damaged && exits_seen == 1, "version 8: not read whole: %s", err))
		goto cleanup;
	if (!ASSERT_MSG(exits_second.w.tid == 4251 && exits_second.w.wait_ns == 8 && exits_second.a.start_ns == 20,
			"version 8: the second thread is not where it was written"))
		goto cleanup;
	if (!ASSERT_MSG(exits_second.h.halts == 0 && exits_second.h.poll_ns == HT_HALT_POLL_NS_UNKNOWN,
			"version 8: halts read from beyond the record"))
		goto cleanup;
	ht_reader_close(r);
	r = read_thread_records_of_version(HT_FILE_VERSION, threads, sizeof(threads[0]), err, sizeof(err));
	if (!ASSERT_MSG(r && !ht_reader_status(r)->damaged && exits_seen == 1, "version %d: not read whole: %s",
			HT_FILE_VERSION, err))
		goto cleanup;
	ASSERT_MSG(!memcmp(&exits_second, &threads[1], sizeof(threads[1])), "version %d: the halts differ from those written",
		   HT_FILE_VERSION);
cleanup:
	ht_reader_close(r);
}

/*
 * Version 9 wrote the halts without their wake-ups: a reader of version 10
 * takes each record at its own size, with its halts and polling and no
 * wake-ups; version 10's carry them.
 */
static void version_9_thread_records_read_without_wake_ups(void)
{
	struct ht_vcpu_wait_rec threads[2] = {
		{ .w = { .pid = 4242, .tid = 4250, .wait_ns = 7 }, .a = { .start_ns = 10, .as_of_ns = 10 } },
		{ .w = { .pid = 4242, .tid = 4251, .wait_ns = 8 }, .a = { .start_ns = 20, .as_of_ns = 20 },
		  .h = { .halts = 9, .polled = 6, .caught = 4, .caught_ns = 400, .slept = 5, .slept_ns = 5000,
			 .poll_ns = 200000, .poll_unknown = 1,
			 .wake = { .c[HT_WAKE_TIMER] = { .total_ns = 900, .wait_ns = 300, .max_ns = 500, .slots = { [8] = 2 } },
				   .reblocked = 3 } } },
	};
	struct ht_reader *r;
	char err[256] = "";

	r = read_thread_records_of_version(9, threads, HT_VCPU_WAIT_REC_V9_SIZE, err, sizeof(err));
	if (!ASSERT_MSG(r && !ht_reader_status(r)->damaged && exits_seen == 1, "version 9: not read whole: %s", err))
		goto cleanup;
	if (!ASSERT_MSG(exits_second.w.tid == 4251 && exits_second.h.halts == 9 && exits_second.h.poll_ns == 200000,
			"version 9: the second thread's halts are not where they were written"))
		goto cleanup;
	if (!ASSERT_MSG(exits_second.h.wake.c[HT_WAKE_TIMER].total_ns == 0 && exits_second.h.wake.reblocked == 0 &&
				exits_second.h.wake.c[HT_WAKE_TIMER].slots[8] == 0,
			"version 9: wake-ups read from beyond the record"))
		goto cleanup;
	ht_reader_close(r);
	r = read_thread_records_of_version(HT_FILE_VERSION, threads, sizeof(threads[0]), err, sizeof(err));
	if (!ASSERT_MSG(r && !ht_reader_status(r)->damaged && exits_seen == 1, "version 10: not read whole: %s", err))
		goto cleanup;
	ASSERT_MSG(!memcmp(&exits_second.h.wake, &threads[1].h.wake, sizeof(threads[1].h.wake)),
		   "version 10: the wake-ups differ from those written");
cleanup:
	ht_reader_close(r);
}

/*
 * Versions 10 and 11 wrote the halts without the slept ones' polling: a
 * reader of version 12 takes each record at its own size, with its
 * wake-ups, and marks the polling unknown (never 0, which would read as
 * none burned); version 12's carry it, unmarked.
 */
static void version_11_thread_records_read_with_the_slept_polling_unknown(void)
{
	struct ht_vcpu_wait_rec threads[2] = {
		{ .w = { .pid = 4242, .tid = 4250, .wait_ns = 7 }, .a = { .start_ns = 10, .as_of_ns = 10 } },
		{ .w = { .pid = 4242, .tid = 4251, .wait_ns = 8 }, .a = { .start_ns = 20, .as_of_ns = 20 },
		  .h = { .halts = 9, .polled = 6, .caught = 4, .caught_ns = 400, .slept = 5, .slept_ns = 5000,
			 .poll_ns = 200000, .wake = { .reblocked = 3 }, .slept_poll_ns = 1200 } },
	};
	struct ht_reader *r;
	char err[256] = "";

	r = read_thread_records_of_version(11, threads, HT_VCPU_WAIT_REC_V11_SIZE, err, sizeof(err));
	if (!ASSERT_MSG(r && !ht_reader_status(r)->damaged && exits_seen == 1, "version 11: not read whole: %s", err))
		goto cleanup;
	if (!ASSERT_MSG(exits_second.w.tid == 4251 && exits_second.h.wake.reblocked == 3 &&
				exits_second.h.slept_poll_ns == 0 && (exits_second.w.pad1 & HT_VCPU_WAIT_F_NO_SLEPT_POLL),
			"version 11: wake-ups %llu, polling %llu ns, flags %#x; want 3, 0 and unknown",
			(unsigned long long)exits_second.h.wake.reblocked, (unsigned long long)exits_second.h.slept_poll_ns,
			exits_second.w.pad1))
		goto cleanup;
	ht_reader_close(r);
	r = read_thread_records_of_version(HT_FILE_VERSION, threads, sizeof(threads[0]), err, sizeof(err));
	if (!ASSERT_MSG(r && !ht_reader_status(r)->damaged && exits_seen == 1, "version 12: not read whole: %s", err))
		goto cleanup;
	ASSERT_MSG(exits_second.h.slept_poll_ns == 1200 && !(exits_second.w.pad1 & HT_VCPU_WAIT_F_NO_SLEPT_POLL),
		   "version 12: polling %llu ns, flags %#x; want 1200, known", (unsigned long long)exits_second.h.slept_poll_ns,
		   exits_second.w.pad1);
cleanup:
	ht_reader_close(r);
}

/* Wake-ups that cannot be a recording's (more waiting than the whole, a longest beyond it) stop the reading. */
static void thread_wake_ups_that_do_not_add_up_stop_reading(void)
{
	static const struct ht_vcpu_wake_hist bad[] = {
		{ .total_ns = 100, .wait_ns = 101, .max_ns = 100, .slots = { [6] = 1 } },
		{ .total_ns = 100, .wait_ns = 0, .max_ns = 200, .slots = { [6] = 1 } },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ht_vcpu_wait_rec threads[2] = {
			{ .w = { .pid = 4242, .tid = 4250 }, .a = { .start_ns = 10, .as_of_ns = 10 } },
			{ .w = { .pid = 4242, .tid = 4251 }, .a = { .start_ns = 20, .as_of_ns = 20 },
			  .h = { .wake.c[HT_WAKE_VECTOR] = bad[i] } },
		};
		char err[256] = "";
		struct ht_reader *r = read_thread_records_of_version(HT_FILE_VERSION, threads, sizeof(threads[0]), err,
								     sizeof(err));
		bool stopped = r && ht_reader_status(r)->damaged && exits_seen == 0 &&
			       strstr(ht_reader_status(r)->reason, "wake-ups of vCPU thread 4251");

		ht_reader_close(r);
		if (!ASSERT_MSG(stopped, "case %zu: bad wake-ups were taken (%s)", i, err))
			return;
	}
}

/* Halts that cannot be a recording's (more caught than polled, parts beyond the whole) stop the reading. */
static void thread_halts_that_do_not_add_up_stop_reading(void)
{
	static const struct ht_vcpu_halts bad[] = {
		{ .halts = 5, .polled = 2, .caught = 3 },
		{ .halts = 5, .polled = 4, .poll_unknown = 2 },
		{ .halts = 5, .polled = 5, .caught = 3, .slept = 3 },
		{ .halts = 2, .slept = UINT64_MAX },
		{ .halts = 2, .slept = 1, .slept_ns = 100, .slept_poll_ns = 101 },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ht_vcpu_wait_rec threads[2] = {
			{ .w = { .pid = 4242, .tid = 4250 }, .a = { .start_ns = 10, .as_of_ns = 10 } },
			{ .w = { .pid = 4242, .tid = 4251 }, .a = { .start_ns = 20, .as_of_ns = 20 }, .h = bad[i] },
		};
		char err[256] = "";
		struct ht_reader *r = read_thread_records_of_version(HT_FILE_VERSION, threads, sizeof(threads[0]), err,
								     sizeof(err));
		bool stopped = r && ht_reader_status(r)->damaged && exits_seen == 0 &&
			       strstr(ht_reader_status(r)->reason, "halts of vCPU thread 4251");

		ht_reader_close(r);
		if (!ASSERT_MSG(stopped, "case %zu: bad halts were taken (%s)", i, err))
			return;
	}
}

/* A file written by an earlier version (1: no identities, 2: no exits) reads the same. */
static void files_of_earlier_versions_still_read(void)
{
	struct ht_read_status st;
	char err[256];
	struct ht_file_header h;

	for (__u32 v = 1; v < HT_FILE_VERSION; v++) {
		write_file(5, true);
		CHECK(peek(0, &h, sizeof(h)), "read header");
		h.version = v;
		h.header_crc32 = (__u32)crc32(0, (const Bytef *)&h, offsetof(struct ht_file_header, header_crc32));
		patch(0, &h, sizeof(h));
		CHECK(read_back(&st, err, sizeof(err)) == 5, "version %u: %s", v, err);
		CHECK(st.has_trailer && !st.damaged, "version %u: %s", v, st.reason);
	}
}

static void a_compressed_block_that_does_not_decode_stops_reading(void)
{
	struct ht_read_status st;
	struct ht_block_header bh;
	char err[256];
	unsigned char payload[4096];

	encoding = HT_ENCODING_DELTA_ZLIB;
	write_file(10, true);
	encoding = HT_ENCODING_RAW;
	CHECK(peek(HT_FILE_HEADER_SIZE, &bh, sizeof(bh)), "read block header");
	CHECK(bh.encoding == HT_ENCODING_DELTA_ZLIB && bh.payload_len <= sizeof(payload), "layout");
	CHECK(peek(HT_FILE_HEADER_SIZE + (long)sizeof(bh), payload, bh.payload_len), "read");
	/* Damage the deflate stream but keep the CRC right: the decoder must still refuse it. */
	payload[bh.payload_len / 2] ^= 0xff;
	bh.crc32 = (__u32)crc32(0, payload, bh.payload_len);
	patch(HT_FILE_HEADER_SIZE, &bh, sizeof(bh));
	patch(HT_FILE_HEADER_SIZE + sizeof(bh), payload, bh.payload_len);
	CHECK_EQ_U64(read_back(&st, err, sizeof(err)), 0);
	CHECK(st.damaged && strstr(st.reason, "does not decode"), "reason: %s", st.reason);
	CHECK_EQ_U64(st.good_bytes, HT_FILE_HEADER_SIZE);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		printf("FAIL: trace_file_setup: mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	snprintf(path, sizeof(path), "%s/t.htr", dir);
	RUN(round_trip_keeps_every_record_header_and_trailer);
	RUN(an_empty_recording_is_a_valid_file);
	RUN(a_file_cut_inside_a_block_is_read_up_to_its_last_whole_block);
	RUN(a_file_without_trailer_is_read_whole_and_says_so);
	RUN(a_flipped_byte_in_a_block_stops_reading_at_that_block);
	RUN(a_corrupt_block_length_is_refused_not_trusted);
	RUN(data_after_the_trailer_is_reported);
	RUN(a_trailer_count_that_disagrees_is_reported);
	RUN(wrong_magic_is_not_a_trace_file);
	RUN(a_newer_version_asks_for_an_upgrade);
	RUN(a_damaged_header_is_refused);
	RUN(an_empty_or_short_file_is_refused);
	RUN(the_writer_never_overwrites_without_force);
	RUN(compressed_blocks_round_trip_at_a_fraction_of_the_size);
	RUN(a_compressed_block_that_does_not_decode_stops_reading);
	RUN(exits_blocks_round_trip_between_records);
	RUN(an_exits_block_whose_counts_do_not_add_up_stops_reading);
	RUN(files_of_earlier_versions_still_read);
	RUN(version_4_thread_records_read_without_an_account);
	RUN(version_8_thread_records_read_without_halts);
	RUN(thread_halts_that_do_not_add_up_stop_reading);
	RUN(version_9_thread_records_read_without_wake_ups);
	RUN(version_11_thread_records_read_with_the_slept_polling_unknown);
	RUN(thread_wake_ups_that_do_not_add_up_stop_reading);
	unlink(path);
	rmdir(dir);
	return ht_test_exit_status();
}
