// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Trace file writer. Records are copied into a block buffer that already has
 * room for its block header in front, so a full block goes out with a single
 * large write(2) and the drain loop never does small writes.
 */
#include "tracefile/trace_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include "tracefile/block_codec.h"
#include "tracefile/crc32.h"
#include "common/cpu_vendor.h"
#include "common/util.h"

/*
 * Space is reserved ahead of the data in steps of this size: allocating file
 * pages in bulk (fallocate) is cheaper than one at a time inside write(2),
 * which at 10 M records/s was a third of the drain's time on tmpfs.
 */
#define PREALLOC_STEP (64ull << 20)

struct ht_writer {
	int fd;
	unsigned long long prealloc_end; /* file offset up to which space is reserved */
	unsigned long long records; /* records written or buffered */
	unsigned long long bytes;   /* bytes written to the file */
	unsigned int buffered;      /* records in buf */
	unsigned char *buf;         /* block header + HT_WRITER_BLOCK_RECORDS records */
	unsigned int encoding;
	unsigned char *encoded;     /* DELTA_ZLIB: block header + encoded records */
	size_t encoded_cap;
	void *scratch;              /* DELTA_ZLIB: the transformed records */
};

static int write_all(int fd, const void *data, size_t len)
{
	const unsigned char *p = data;

	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

void ht_header_init(struct ht_file_header *hdr)
{
	struct utsname u;

	memset(hdr, 0, sizeof(*hdr));
	/* Read the two clocks back to back: the anchor that maps record times to wall-clock. */
	hdr->start_monotonic_ns = ht_clock_ns(CLOCK_MONOTONIC);
	hdr->start_realtime_ns = ht_clock_ns(CLOCK_REALTIME);
	if (uname(&u) == 0)
		snprintf(hdr->kernel_release, sizeof(hdr->kernel_release), "%s", u.release);
	ht_cpu_vendor(hdr->cpu_vendor);
	hdr->filter_nr_count = 1;
	hdr->filter_nr[0] = HT_DEFAULT_HYPERCALL_NR;
}

int ht_writer_open(const char *path, bool force, const struct ht_file_header *hdr,
		   struct ht_writer **out, char *err, size_t errlen)
{
	struct ht_file_header h = *hdr;
	struct ht_writer *w;
	int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (force ? O_TRUNC : O_EXCL);
	int ret;

	w = calloc(1, sizeof(*w));
	if (w)
		w->buf = malloc(sizeof(struct ht_block_header) +
				(size_t)HT_WRITER_BLOCK_RECORDS * sizeof(struct ht_record));
	if (!w || !w->buf) {
		free(w);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	w->fd = open(path, flags, 0644);
	if (w->fd < 0) {
		ret = -errno;
		if (ret == -EEXIST)
			snprintf(err, errlen, "%s already exists: use --force to overwrite it, or -o to choose another file", path);
		else
			snprintf(err, errlen, "cannot create %s: %s: choose a writable path with -o", path, strerror(-ret));
		free(w->buf);
		free(w);
		return ret;
	}
	memcpy(h.magic, HT_FILE_MAGIC, sizeof(h.magic));
	h.version = HT_FILE_VERSION;
	h.header_size = HT_FILE_HEADER_SIZE;
	h.record_size = sizeof(struct ht_record);
	h.header_crc32 = ht_crc32(0, &h, offsetof(struct ht_file_header, header_crc32));
	ret = write_all(w->fd, &h, sizeof(h));
	if (ret) {
		snprintf(err, errlen, "cannot write %s: %s: choose another path with -o", path, strerror(-ret));
		close(w->fd);
		free(w->buf);
		free(w);
		return ret;
	}
	w->bytes = sizeof(h);
	*out = w;
	return 0;
}

static int write_block(struct ht_writer *w, __u16 type, __u16 encoding, unsigned char *block,
		       __u32 payload_len, __u32 raw_len, __u32 items)
{
	struct ht_block_header bh = {
		.magic = HT_BLOCK_MAGIC,
		.type = type,
		.encoding = encoding,
		.payload_len = payload_len,
		.item_count = items,
		.raw_len = raw_len,
		.crc32 = ht_crc32(0, block + sizeof(bh), payload_len),
	};
	int ret;

	memcpy(block, &bh, sizeof(bh));
	if (w->bytes + sizeof(bh) + payload_len > w->prealloc_end) {
		/* KEEP_SIZE: the file's size stays exact; a filesystem without fallocate is fine too. */
		if (fallocate(w->fd, FALLOC_FL_KEEP_SIZE, (off_t)w->prealloc_end, (off_t)PREALLOC_STEP) == 0)
			w->prealloc_end += PREALLOC_STEP;
		else
			w->prealloc_end = ~0ull; /* not supported here: stop trying */
	}
	ret = write_all(w->fd, block, sizeof(bh) + payload_len);
	if (!ret)
		w->bytes += sizeof(bh) + payload_len;
	return ret;
}

int ht_writer_set_encoding(struct ht_writer *w, unsigned int encoding)
{
	if (encoding == HT_ENCODING_RAW) {
		w->encoding = encoding;
		return 0;
	}
	if (encoding != HT_ENCODING_DELTA_ZLIB)
		return -EINVAL;
	w->encoded_cap = ht_block_encoded_bound(HT_WRITER_BLOCK_RECORDS);
	w->encoded = malloc(sizeof(struct ht_block_header) + w->encoded_cap);
	w->scratch = malloc((size_t)HT_WRITER_BLOCK_RECORDS * sizeof(struct ht_record));
	if (!w->encoded || !w->scratch)
		return -ENOMEM;
	w->encoding = encoding;
	return 0;
}

int ht_writer_flush(struct ht_writer *w)
{
	__u32 raw_len = w->buffered * (__u32)sizeof(struct ht_record);
	int ret;

	if (!w->buffered)
		return 0;
	if (w->encoding == HT_ENCODING_DELTA_ZLIB) {
		size_t len = ht_block_encode((const struct ht_record *)(w->buf + sizeof(struct ht_block_header)),
					     w->buffered, w->encoded + sizeof(struct ht_block_header),
					     w->encoded_cap, w->scratch);
		ret = len ? write_block(w, HT_BLOCK_RECORDS, HT_ENCODING_DELTA_ZLIB, w->encoded,
					(__u32)len, raw_len, w->buffered) : -ENOMEM;
	} else {
		ret = write_block(w, HT_BLOCK_RECORDS, HT_ENCODING_RAW, w->buf, raw_len, raw_len,
				  w->buffered);
	}
	w->buffered = 0;
	return ret;
}

int ht_writer_add(struct ht_writer *w, const struct ht_record *rec)
{
	memcpy(w->buf + sizeof(struct ht_block_header) + (size_t)w->buffered * sizeof(*rec), rec,
	       sizeof(*rec));
	w->buffered++;
	w->records++;
	if (w->buffered == HT_WRITER_BLOCK_RECORDS)
		return ht_writer_flush(w);
	return 0;
}

int ht_writer_close(struct ht_writer *w, const struct ht_trailer *trailer)
{
	unsigned char block[sizeof(struct ht_block_header) + sizeof(struct ht_trailer)];
	int ret;

	ret = ht_writer_flush(w);
	if (!ret) {
		memcpy(block + sizeof(struct ht_block_header), trailer, sizeof(*trailer));
		ret = write_block(w, HT_BLOCK_TRAILER, HT_ENCODING_RAW, block, sizeof(*trailer),
				  sizeof(*trailer), 1);
	}
	/* Give back the space reserved past the end. */
	if (!ret && w->prealloc_end != ~0ull && ftruncate(w->fd, (off_t)w->bytes))
		ret = -errno;
	if (!ret && fsync(w->fd))
		ret = -errno;
	if (close(w->fd) && !ret)
		ret = -errno;
	free(w->encoded);
	free(w->scratch);
	free(w->buf);
	free(w);
	return ret;
}

void ht_writer_abandon(struct ht_writer *w)
{
	if (!w)
		return;
	/* If this fails the file keeps reserved space past its end: harmless. */
	if (w->prealloc_end != ~0ull)
		(void)!ftruncate(w->fd, (off_t)w->bytes);
	close(w->fd);
	free(w->encoded);
	free(w->scratch);
	free(w->buf);
	free(w);
}

unsigned long long ht_writer_records(const struct ht_writer *w)
{
	return w->records;
}
