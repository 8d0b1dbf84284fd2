// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Trace file writer. Records are copied into a block buffer that already has
 * room for its block header in front, so a full block goes out with a single
 * large write(2). The drain hands full blocks to a writer thread through a
 * small queue; the thread encodes, checksums and writes them. Nothing is
 * reserved ahead with fallocate: the page allocation inside write(2) is the
 * writer thread's cost, not the drain's, and a killed recorder leaves no
 * reserved space past the end of its file.
 */
#include "tracefile/trace_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include "tracefile/block_codec.h"
#include "tracefile/crc32.h"
#include "tracefile/output_file.h"
#include "common/cpu_vendor.h"
#include "common/util.h"
#include "common/grow.h"

#define N_BLOCKS HT_WRITER_QUEUE_BLOCKS

struct block {
	unsigned char *data; /* block header + HT_WRITER_BLOCK_RECORDS records */
	unsigned int count;  /* records in it */
	/* Identities of threads first seen in this block: an IDENTITY block written before it. */
	unsigned char *ids;  /* block header + nids struct ht_identity */
	unsigned int nids, ids_cap;
	/* Other blocks to write before it (EXITS), each a block header and its payload, one after the other. */
	unsigned char *extra;
	size_t extra_len, extra_cap;
};

struct ht_writer {
	struct ht_output out; /* the file: created unnamed, named when published */
	int fd;               /* out.fd */
	unsigned int encoding;
	unsigned long long added; /* records handed in */

	/* Shared by the drain and the writer thread, under lock. */
	pthread_mutex_t lock;
	pthread_cond_t changed;
	struct block blocks[N_BLOCKS];
	unsigned int filling; /* the block the drain fills; the queued ones precede it */
	unsigned int queued;  /* blocks handed over and not yet written */
	bool stopping;
	bool thread_running;
	pthread_t thread;
	unsigned long long written;     /* records in whole blocks in the file */
	unsigned long long not_written; /* records of blocks the file system refused */
	unsigned long long bytes;       /* end of the last whole block; written by one thread at a time */
	int error;                      /* -errno of the first failed write */

	/* Used only by whichever thread writes blocks. */
	unsigned char *encoded; /* DELTA_ZLIB: block header + encoded records */
	size_t encoded_cap;
	void *scratch;          /* DELTA_ZLIB: the transformed records */
};

static int pwrite_all(int fd, const void *data, size_t len, unsigned long long off)
{
	const unsigned char *p = data;

	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		off += (unsigned long long)n;
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

static void free_writer(struct ht_writer *w)
{
	ht_output_release(&w->out);
	for (int i = 0; i < N_BLOCKS; i++) {
		free(w->blocks[i].data);
		free(w->blocks[i].ids);
		free(w->blocks[i].extra);
	}
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->changed);
	free(w->encoded);
	free(w->scratch);
	free(w);
}

int ht_writer_open(const char *path, bool force, const struct ht_file_header *hdr,
		   struct ht_writer **out, char *err, size_t errlen)
{
	const struct ht_output_spec spec = { .cmd = "record", .opt = "-o", .what = "a trace file", .force = force };
	struct ht_file_header h = *hdr;
	struct ht_writer *w;
	int ret = 0;

	w = calloc(1, sizeof(*w));
	if (!w) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	w->out.fd = w->out.dirfd = -1;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->changed, NULL);
	for (int i = 0; i < N_BLOCKS && !ret; i++) {
		w->blocks[i].data = malloc(sizeof(struct ht_block_header) +
					   (size_t)HT_WRITER_BLOCK_RECORDS * sizeof(struct ht_record));
		if (!w->blocks[i].data)
			ret = -ENOMEM;
	}
	if (ret) {
		free_writer(w);
		snprintf(err, errlen, "out of memory");
		return ret;
	}
	ret = ht_output_create(&w->out, path, &spec, err, errlen);
	if (ret) {
		free_writer(w);
		return ret;
	}
	w->fd = w->out.fd;
	memcpy(h.magic, HT_FILE_MAGIC, sizeof(h.magic));
	h.version = HT_FILE_VERSION;
	h.header_size = HT_FILE_HEADER_SIZE;
	h.record_size = sizeof(struct ht_record);
	h.header_crc32 = ht_crc32(0, &h, offsetof(struct ht_file_header, header_crc32));
	ret = pwrite_all(w->fd, &h, sizeof(h), 0);
	if (ret) {
		snprintf(err, errlen, "cannot write %s: %s: free space or choose another path with -o", path, strerror(-ret));
		ht_writer_abandon(w);
		return ret;
	}
	w->bytes = sizeof(h);
	*out = w;
	return 0;
}

int ht_writer_set_access(struct ht_writer *w, mode_t mode, uid_t uid, gid_t gid, char *err,
			 size_t errlen)
{
	return ht_output_set_access(&w->out, mode, uid, gid, err, errlen);
}

int ht_writer_publish(struct ht_writer *w, char *err, size_t errlen)
{
	return ht_output_publish(&w->out, err, errlen);
}

void ht_writer_unpublish(struct ht_writer *w)
{
	if (!w->out.published)
		return;
	ht_output_unpublish(&w->out);
	w->stopping = true; /* nothing more to write */
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

/*
 * Writes one block at the end of the last whole one. If the file system
 * refuses it, whatever part got written is cut off again, so the file still
 * ends at a whole block and a later block can follow it.
 */
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
	ret = pwrite_all(w->fd, block, sizeof(bh) + payload_len, w->bytes);
	if (ret) {
		/* A file system with no space left can still shrink a file. */
		(void)!ftruncate(w->fd, (off_t)w->bytes);
		return ret;
	}
	pthread_mutex_lock(&w->lock);
	w->bytes += sizeof(bh) + payload_len;
	pthread_mutex_unlock(&w->lock);
	return 0;
}

/* Encodes and writes one records block; counts its records as written or not written. */
static void write_records(struct ht_writer *w, struct block *b)
{
	__u32 raw_len = b->count * (__u32)sizeof(struct ht_record);
	int ret;

	if (b->nids) {
		__u32 len = b->nids * (__u32)sizeof(struct ht_identity);

		ret = write_block(w, HT_BLOCK_IDENTITY, HT_ENCODING_RAW, b->ids, len, len, b->nids);
		b->nids = 0;
		if (ret) {
			/* The names are lost, the records may still fit: try them. */
			pthread_mutex_lock(&w->lock);
			if (!w->error)
				w->error = ret;
			pthread_mutex_unlock(&w->lock);
		}
	}
	for (size_t off = 0; off < b->extra_len;) {
		struct ht_block_header bh;

		memcpy(&bh, b->extra + off, sizeof(bh));
		ret = write_block(w, bh.type, HT_ENCODING_RAW, b->extra + off, bh.payload_len, bh.payload_len,
				  bh.item_count);
		off += sizeof(bh) + bh.payload_len;
		if (ret) {
			pthread_mutex_lock(&w->lock);
			if (!w->error)
				w->error = ret;
			pthread_mutex_unlock(&w->lock);
		}
	}
	b->extra_len = 0;
	if (!b->count)
		return;
	if (w->encoding == HT_ENCODING_DELTA_ZLIB) {
		size_t len = ht_block_encode((const struct ht_record *)(b->data + sizeof(struct ht_block_header)),
					     b->count, w->encoded + sizeof(struct ht_block_header),
					     w->encoded_cap, w->scratch);
		ret = len ? write_block(w, HT_BLOCK_RECORDS, HT_ENCODING_DELTA_ZLIB, w->encoded,
					(__u32)len, raw_len, b->count) : -ENOMEM;
	} else {
		ret = write_block(w, HT_BLOCK_RECORDS, HT_ENCODING_RAW, b->data, raw_len, raw_len,
				  b->count);
	}
	pthread_mutex_lock(&w->lock);
	if (ret) {
		w->not_written += b->count;
		if (!w->error)
			w->error = ret;
	} else {
		w->written += b->count;
	}
	pthread_mutex_unlock(&w->lock);
}

static void *writer_thread(void *arg)
{
	struct ht_writer *w = arg;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (!w->queued && !w->stopping)
			pthread_cond_wait(&w->changed, &w->lock);
		if (!w->queued)
			break;
		struct block *b = &w->blocks[(w->filling + N_BLOCKS - w->queued) % N_BLOCKS];
		pthread_mutex_unlock(&w->lock);
		write_records(w, b);
		pthread_mutex_lock(&w->lock);
		b->count = 0;
		w->queued--;
		pthread_cond_broadcast(&w->changed);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/*
 * Started with the first block rather than at open: by then the recorder has
 * dropped the privileges it no longer needs, and capabilities are per thread.
 * Signals stay with the main thread, whose poll they must interrupt.
 */
static void start_thread(struct ht_writer *w)
{
	sigset_t all, old;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	w->thread_running = pthread_create(&w->thread, NULL, writer_thread, w) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void stop_thread(struct ht_writer *w)
{
	if (!w->thread_running)
		return;
	pthread_mutex_lock(&w->lock);
	w->stopping = true;
	pthread_cond_broadcast(&w->changed);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	w->thread_running = false;
}

/* Hands the block being filled to the writer thread (or writes it here, if there is none). */
static void hand_over(struct ht_writer *w)
{
	struct block *b = &w->blocks[w->filling];

	if (!b->count && !b->nids && !b->extra_len)
		return;
	if (!w->thread_running && !w->stopping)
		start_thread(w);
	if (!w->thread_running) {
		write_records(w, b);
		b->count = 0;
		return;
	}
	pthread_mutex_lock(&w->lock);
	w->filling = (w->filling + 1) % N_BLOCKS;
	w->queued++;
	pthread_cond_broadcast(&w->changed);
	/* Every buffer waits for the disk: the ring buffer holds what comes meanwhile. */
	while (w->queued == N_BLOCKS)
		pthread_cond_wait(&w->changed, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

void ht_writer_flush(struct ht_writer *w)
{
	pthread_mutex_lock(&w->lock);
	bool busy = w->queued > 0;
	pthread_mutex_unlock(&w->lock);
	/*
	 * While the writer is still busy with earlier blocks, a partial block
	 * would reach the file no sooner, and would take a whole buffer: keep
	 * filling it, so a stalled disk is absorbed by full blocks.
	 */
	if (!busy)
		hand_over(w);
}

int ht_writer_add_identity(struct ht_writer *w, const struct ht_identity *id)
{
	struct block *b = &w->blocks[w->filling];

	if (b->nids == b->ids_cap) {
		unsigned int cap = b->ids_cap ? b->ids_cap * 2 : 4;
		unsigned char *p = realloc(b->ids, sizeof(struct ht_block_header) + cap * sizeof(*id));

		if (!p)
			return -ENOMEM;
		b->ids = p;
		b->ids_cap = cap;
	}
	memcpy(b->ids + sizeof(struct ht_block_header) + (size_t)b->nids * sizeof(*id), id, sizeof(*id));
	b->nids++;
	return 0;
}

int ht_writer_add_block(struct ht_writer *w, __u16 type, const void *payload, __u32 len, __u32 items)
{
	struct block *b = &w->blocks[w->filling];
	size_t need = b->extra_len + sizeof(struct ht_block_header) + len;
	struct ht_block_header bh = { .magic = HT_BLOCK_MAGIC, .type = type, .payload_len = len,
				      .item_count = items, .raw_len = len };

	if (len > HT_BLOCK_MAX_PAYLOAD)
		return -E2BIG;
	if (HT_GROW(b->extra, b->extra_cap, need, 4096))
		return -ENOMEM;
	memcpy(b->extra + b->extra_len, &bh, sizeof(bh));
	memcpy(b->extra + b->extra_len + sizeof(bh), payload, len);
	b->extra_len = need;
	return 0;
}

struct ht_record *ht_writer_slots(struct ht_writer *w, unsigned int *room)
{
	struct block *b = &w->blocks[w->filling];

	*room = HT_WRITER_BLOCK_RECORDS - b->count;
	return (struct ht_record *)(b->data + sizeof(struct ht_block_header)) + b->count;
}

void ht_writer_commit(struct ht_writer *w, unsigned int n)
{
	struct block *b = &w->blocks[w->filling];

	b->count += n;
	w->added += n;
	if (b->count == HT_WRITER_BLOCK_RECORDS)
		hand_over(w);
}

void ht_writer_add(struct ht_writer *w, const struct ht_record *rec)
{
	unsigned int room;

	*ht_writer_slots(w, &room) = *rec;
	ht_writer_commit(w, 1);
}

int ht_writer_close(struct ht_writer *w, struct ht_trailer *trailer)
{
	unsigned char block[sizeof(struct ht_block_header) + sizeof(struct ht_trailer)];
	char err[256];
	int ret;

	hand_over(w);
	stop_thread(w);
	w->stopping = true;
	trailer->records = w->written;
	trailer->not_written = w->not_written;
	memcpy(block + sizeof(struct ht_block_header), trailer, sizeof(*trailer));
	ret = write_block(w, HT_BLOCK_TRAILER, HT_ENCODING_RAW, block, sizeof(*trailer),
			  sizeof(*trailer), 1);
	if (ret && !w->error)
		w->error = ret;
	ret = ht_writer_publish(w, err, sizeof(err));
	if (ret && !w->error)
		w->error = ret;
	if (fsync(w->fd) && !w->error)
		w->error = -errno;
	ret = w->error;
	free_writer(w);
	return ret;
}

void ht_writer_abandon(struct ht_writer *w)
{
	if (!w)
		return;
	stop_thread(w);
	free_writer(w);
}

unsigned long long ht_writer_records(const struct ht_writer *w)
{
	return w->added;
}

int ht_writer_error(struct ht_writer *w, unsigned long long *not_written)
{
	pthread_mutex_lock(&w->lock);
	int ret = w->error;
	if (not_written)
		*not_written = w->not_written;
	pthread_mutex_unlock(&w->lock);
	return ret;
}
