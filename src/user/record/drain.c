// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * BPF ring buffer consumer. Layout (kernel/bpf/ringbuf.c, as libbpf maps it):
 * page 0 holds the consumer position (we write it), page 1 the producer
 * position, then the data area mapped twice so a sample that wraps around the
 * end is still contiguous. Each sample has an 8-byte header whose length word
 * carries BUSY (reserved, not yet submitted) and DISCARD bits.
 */
#include "record/drain.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/bpf.h> /* BPF_RINGBUF_BUSY_BIT, BPF_RINGBUF_DISCARD_BIT, BPF_RINGBUF_HDR_SZ */
#include <bpf/bpf.h>

struct ht_drain {
	int map_fd, epfd;
	size_t page, mask;
	unsigned long *consumer_pos; /* page 0, read-write */
	void *producer_map;          /* page 1 + data twice, read-only */
	const unsigned long *producer_pos;
	const unsigned char *data;
	size_t producer_map_len;
	struct ht_record_sink sink;
	unsigned long long malformed;
};

int ht_drain_new(int ringbuf_fd, const struct ht_record_sink *sink, struct ht_drain **out)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	struct epoll_event ev = { .events = EPOLLIN };
	struct ht_drain *d;
	int ret;

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(ringbuf_fd, &info, &len))
		return -errno;
	/* The layout below is the ring buffer's: refuse any other map, and a size that is no ring's. */
	if (info.type != BPF_MAP_TYPE_RINGBUF || !info.max_entries ||
	    (info.max_entries & (info.max_entries - 1)))
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->map_fd = ringbuf_fd;
	d->sink = *sink;
	d->page = (size_t)sysconf(_SC_PAGESIZE);
	d->mask = info.max_entries - 1;
	d->epfd = -1;
	d->consumer_pos = mmap(NULL, d->page, PROT_READ | PROT_WRITE, MAP_SHARED, ringbuf_fd, 0);
	if (d->consumer_pos == MAP_FAILED) {
		ret = -errno;
		free(d);
		return ret;
	}
	d->producer_map_len = d->page + 2 * (size_t)info.max_entries;
	d->producer_map = mmap(NULL, d->producer_map_len, PROT_READ, MAP_SHARED, ringbuf_fd, (off_t)d->page);
	if (d->producer_map == MAP_FAILED) {
		ret = -errno;
		munmap(d->consumer_pos, d->page);
		free(d);
		return ret;
	}
	d->producer_pos = d->producer_map;
	d->data = (const unsigned char *)d->producer_map + d->page;
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (d->epfd < 0 || epoll_ctl(d->epfd, EPOLL_CTL_ADD, ringbuf_fd, &ev)) {
		ret = -errno;
		ht_drain_free(d);
		return ret;
	}
	*out = d;
	return 0;
}

unsigned long long ht_drain_pending_bytes(const struct ht_drain *d)
{
	return __atomic_load_n(d->producer_pos, __ATOMIC_ACQUIRE) -
	       __atomic_load_n(d->consumer_pos, __ATOMIC_RELAXED);
}

/*
 * Consumes up to max records; stops early at a sample still being written.
 * The per-record work is a header test and an 80-byte copy into the sink's
 * slots: no call per record, and the consumer position (a cache line the
 * producers read on every reservation) is written once per run of up to a
 * writer block, not per record.
 */
static int consume(struct ht_drain *d, unsigned int max)
{
	unsigned long cons = __atomic_load_n(d->consumer_pos, __ATOMIC_RELAXED);
	unsigned long prod = __atomic_load_n(d->producer_pos, __ATOMIC_ACQUIRE);
	unsigned int n = 0;
	bool busy = false;
	int ret = 0;

	while (cons < prod && n < max && !busy && !ret) {
		unsigned int room, filled = 0;
		struct ht_record *dst = d->sink.slots(d->sink.ctx, &room);

		if (room > max - n)
			room = max - n;
		while (cons < prod && filled < room) {
			const __u32 *hdr = (const __u32 *)(d->data + (cons & d->mask));
			__u32 len = __atomic_load_n(hdr, __ATOMIC_ACQUIRE);

			/* A whole submitted record: neither BUSY nor DISCARD is set. */
			if (__builtin_expect(len == sizeof(struct ht_record), 1)) {
				dst[filled++] = *(const struct ht_record *)(hdr + 2);
				cons += (sizeof(struct ht_record) + BPF_RINGBUF_HDR_SZ + 7) & ~7ul;
				continue;
			}
			if (len & BPF_RINGBUF_BUSY_BIT) {
				busy = true; /* reserved, not yet submitted: records stay in order */
				break;
			}
			if (!(len & BPF_RINGBUF_DISCARD_BIT))
				d->malformed++;
			cons += ((len & ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT)) + BPF_RINGBUF_HDR_SZ + 7) & ~7ul;
		}
		/* The records are copied out: their space goes back to the producers. */
		ret = d->sink.commit(d->sink.ctx, filled);
		n += filled;
		__atomic_store_n(d->consumer_pos, cons, __ATOMIC_RELEASE);
	}
	return ret ? ret : (int)n;
}

int ht_drain_poll(struct ht_drain *d, int timeout_ms)
{
	struct epoll_event ev;

	/* Wake-ups are sparse (see wakeup_flags in BPF): data may be waiting without one. */
	if (!ht_drain_pending_bytes(d) && timeout_ms != 0) {
		if (epoll_wait(d->epfd, &ev, 1, timeout_ms) < 0 && errno != EINTR)
			return -errno;
	}
	return consume(d, HT_DRAIN_BATCH);
}

int ht_drain_all(struct ht_drain *d)
{
	long long total = 0;
	int n;

	while ((n = consume(d, HT_DRAIN_BATCH)) > 0)
		total += n;
	if (n < 0)
		return n;
	return total > 0x7fffffff ? 0x7fffffff : (int)total;
}

unsigned long long ht_drain_malformed(const struct ht_drain *d)
{
	return d->malformed;
}

void ht_drain_free(struct ht_drain *d)
{
	if (!d)
		return;
	if (d->epfd >= 0)
		close(d->epfd);
	if (d->producer_map && d->producer_map != MAP_FAILED)
		munmap(d->producer_map, d->producer_map_len);
	if (d->consumer_pos && d->consumer_pos != MAP_FAILED)
		munmap(d->consumer_pos, d->page);
	free(d);
}
