// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * BPF ring buffer consumer for the per-CPU rings. Layout of each ring
 * (kernel/bpf/ringbuf.c, as libbpf maps it): page 0 holds the consumer
 * position (we write it), page 1 the producer position, then the data area
 * mapped twice so a sample that wraps around the end is still contiguous.
 * Each sample has an 8-byte header whose length word carries BUSY (reserved,
 * not yet submitted) and DISCARD bits.
 *
 * Records of one ring are in the order their CPU emitted them. A pass takes
 * every ring's records present when it starts and merges them by the time of
 * their kvm_entry (a min-heap of rings keyed by their next record). A record
 * not yet in a ring when the pass starts was submitted after that, so its
 * kvm_entry clock was read after (start - HT_DRAIN_ORDER_SLACK_NS) (a BPF
 * program runs for far less): the pass writes only records older than that,
 * and the file is in time order across CPUs.
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
#include "common/util.h"

#define RECORD_SAMPLE_BYTES ((sizeof(struct ht_record) + BPF_RINGBUF_HDR_SZ + 7) & ~7ul)

struct ring {
	unsigned long *consumer_pos;       /* page 0, read-write */
	void *producer_map;                /* page 1 + data twice, read-only */
	const unsigned long *producer_pos;
	const unsigned char *data;
	size_t mask, producer_map_len;
	unsigned long cons, prod;          /* this pass: next sample, end of the samples taken */
	__u64 head_ns;                     /* kvm_entry time of the record at cons */
	bool busy;                         /* the sample at cons is still being written */
};

struct ht_drain {
	int epfd;
	size_t page;
	unsigned int nrings;
	struct ring *rings;
	/* Rings with a record this pass, earliest first; the key inline, so a heap step reads one array. */
	struct heap_entry {
		__u64 key;          /* the ring's head_ns; 0 for a busy head, which must come first */
		unsigned int ring;
	} heap[HT_MAX_RINGS];
	unsigned int heap_len;
	struct ht_record_sink sink;
	unsigned long long malformed;
	bool batch_full; /* the last pass stopped at its most records: more are ready */
};

static int map_ring(struct ht_drain *d, struct ring *r, int fd, unsigned int index)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	/*
	 * Edge-triggered: a ring buffer polls readable while any sample is in
	 * it, and records too recent to be written yet (see
	 * HT_DRAIN_ORDER_SLACK_NS) would end every wait at once. Edge-triggered,
	 * a wait ends at a wake-up the producers sent after it began (or before,
	 * not yet taken), or at its timeout.
	 */
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u32 = index };

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	/* The layout below is the ring buffer's: refuse any other map, and a size that is no ring's. */
	if (info.type != BPF_MAP_TYPE_RINGBUF || !info.max_entries ||
	    (info.max_entries & (info.max_entries - 1)))
		return -EINVAL;
	r->mask = info.max_entries - 1;
	r->consumer_pos = mmap(NULL, d->page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r->consumer_pos == MAP_FAILED) {
		r->consumer_pos = NULL;
		return -errno;
	}
	r->producer_map_len = d->page + 2 * (size_t)info.max_entries;
	r->producer_map = mmap(NULL, r->producer_map_len, PROT_READ, MAP_SHARED, fd, (off_t)d->page);
	if (r->producer_map == MAP_FAILED) {
		r->producer_map = NULL;
		return -errno;
	}
	r->producer_pos = r->producer_map;
	r->data = (const unsigned char *)r->producer_map + d->page;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev))
		return -errno;
	return 0;
}

int ht_drain_new(const int *ring_fds, unsigned int nrings, const struct ht_record_sink *sink,
		 struct ht_drain **out)
{
	struct ht_drain *d;
	int ret = 0;

	if (!nrings || nrings > HT_MAX_RINGS)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d || !(d->rings = calloc(nrings, sizeof(*d->rings)))) {
		free(d);
		return -ENOMEM;
	}
	d->sink = *sink;
	d->page = (size_t)sysconf(_SC_PAGESIZE);
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (d->epfd < 0)
		ret = -errno;
	for (unsigned int i = 0; i < nrings && !ret; i++, d->nrings++)
		ret = map_ring(d, &d->rings[i], ring_fds[i], i);
	if (ret) {
		ht_drain_free(d);
		return ret;
	}
	*out = d;
	return 0;
}

unsigned long long ht_drain_pending_bytes(const struct ht_drain *d)
{
	unsigned long long sum = 0;

	for (unsigned int i = 0; i < d->nrings; i++)
		sum += __atomic_load_n(d->rings[i].producer_pos, __ATOMIC_ACQUIRE) -
		       __atomic_load_n(d->rings[i].consumer_pos, __ATOMIC_RELAXED);
	return sum;
}

/*
 * Moves r->cons to the next whole record of this pass, skipping discarded and
 * malformed samples. False at the pass's end. A sample still being written is
 * a head too (r->busy, earliest of all): its time is not known yet, so the
 * pass stops when it comes first.
 */
static inline bool next_head(struct ht_drain *d, struct ring *r)
{
	r->busy = false;
	while (r->cons < r->prod) {
		const __u32 *hdr = (const __u32 *)(r->data + (r->cons & r->mask));
		__u32 len = __atomic_load_n(hdr, __ATOMIC_ACQUIRE);

		/* A whole submitted record: neither BUSY nor DISCARD is set. */
		if (__builtin_expect(len == sizeof(struct ht_record), 1)) {
			const struct ht_record *rec = (const struct ht_record *)(hdr + 2);

			r->head_ns = ht_record_done_ns(rec);
			return true;
		}
		if (len & BPF_RINGBUF_BUSY_BIT) {
			r->busy = true;
			r->head_ns = 0;
			return true;
		}
		if (!(len & BPF_RINGBUF_DISCARD_BIT))
			d->malformed++;
		r->cons += ((len & ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT)) + BPF_RINGBUF_HDR_SZ + 7) & ~7ul;
	}
	return false;
}

static inline void sift_down(struct ht_drain *d, unsigned int i)
{
	struct heap_entry *h = d->heap, top = h[i];
	unsigned int n = d->heap_len;

	for (;;) {
		unsigned int c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && h[c + 1].key < h[c].key)
			c++;
		if (h[c].key >= top.key)
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = top;
}

static void publish(struct ht_drain *d)
{
	for (unsigned int i = 0; i < d->nrings; i++)
		__atomic_store_n(d->rings[i].consumer_pos, d->rings[i].cons, __ATOMIC_RELEASE);
}

/*
 * Consumes up to max records of the samples present when it starts, those
 * whose kvm_entry time is before `before`. The per-record work is a header
 * test, an 80-byte copy into the sink's slots and a heap step: no call per
 * record, and the consumer positions (cache lines the producers read on every
 * reservation) are written once per run of up to a writer block, not per
 * record.
 */
static int consume(struct ht_drain *d, unsigned int max, __u64 before)
{
	unsigned int n = 0;
	int ret = 0;

	d->heap_len = 0;
	for (unsigned int i = 0; i < d->nrings; i++) {
		struct ring *r = &d->rings[i];

		r->cons = __atomic_load_n(r->consumer_pos, __ATOMIC_RELAXED);
		r->prod = __atomic_load_n(r->producer_pos, __ATOMIC_ACQUIRE);
		if (next_head(d, r))
			d->heap[d->heap_len++] = (struct heap_entry){ r->busy ? 0 : r->head_ns, i };
	}
	for (unsigned int i = d->heap_len / 2; i-- > 0;)
		sift_down(d, i);
	bool stop = false;
	while (d->heap_len && n < max && !ret && !stop) {
		unsigned int room, filled = 0;
		struct ht_record *dst = d->sink.slots(d->sink.ctx, &room);

		if (room > max - n)
			room = max - n;
		while (d->heap_len && filled < room) {
			struct ring *r = &d->rings[d->heap[0].ring];

			if (r->busy || d->heap[0].key >= before) {
				stop = true;
				break;
			}
			/*
			 * A run from the earliest ring, up to the next ring's head:
			 * per record a header test, the time, and the copy.
			 */
			__u64 limit = before - 1; /* before itself is too recent */
			if (d->heap_len > 1 && d->heap[1].key < limit)
				limit = d->heap[1].key;
			if (d->heap_len > 2 && d->heap[2].key < limit)
				limit = d->heap[2].key;
			/* In locals: the stores into dst could alias *r. */
			const unsigned char *data = r->data;
			unsigned long cons = r->cons, prod = r->prod, mask = r->mask;
			__u64 next_ns = 0;
			for (;;) {
				dst[filled++] = *(const struct ht_record *)(data + (cons & mask) + BPF_RINGBUF_HDR_SZ);
				cons += RECORD_SAMPLE_BYTES;
				if (filled == room || cons == prod)
					break;
				const __u32 *hdr = (const __u32 *)(data + (cons & mask));
				if (__atomic_load_n(hdr, __ATOMIC_ACQUIRE) != sizeof(struct ht_record))
					break;
				const struct ht_record *next = (const struct ht_record *)(hdr + 2);
				next_ns = ht_record_done_ns(next);
				if (next_ns > limit)
					break;
				next_ns = 0;
			}
			r->cons = cons;
			/* The run ended at a whole record of a later time: it is the ring's head, no need to look again. */
			if (next_ns) {
				d->heap[0].key = next_ns;
			} else if (next_head(d, r)) {
				d->heap[0].key = r->busy ? 0 : r->head_ns;
			} else {
				d->heap[0] = d->heap[--d->heap_len];
			}
			if (d->heap_len > 1)
				sift_down(d, 0);
		}
		/* The records are copied out: their space goes back to the producers. */
		ret = d->sink.commit(d->sink.ctx, filled);
		n += filled;
		publish(d);
	}
	publish(d); /* discarded samples skipped at the end of a ring */
	return ret ? ret : (int)n;
}

/*
 * Ready rings taken from one epoll_wait. Which rings are ready does not
 * matter (consume() reads them all): the wait only sleeps until one is.
 */
#define WAKEUPS_PER_WAIT 8

/*
 * Wake-ups are sparse (see wakeup_flags in BPF): one comes each time a
 * ring's fill level crosses a multiple of the wake-up bytes, so a ring
 * never waits longer than the timeout with less than that in it, nor fills
 * between two wake-ups. Records left because they were too recent are
 * taken at the next wake-up or timeout: a loop that came back for them
 * every millisecond, as this one did, ran a thousand times a second on a
 * host whose VMs send a few hundred records a second. Only a pass that
 * stopped at its batch limit leaves records ready now: no wait then.
 */
int ht_drain_poll(struct ht_drain *d, int timeout_ms)
{
	struct epoll_event ev[WAKEUPS_PER_WAIT];
	int n;

	if (timeout_ms != 0 && !d->batch_full) {
		if (epoll_wait(d->epfd, ev, WAKEUPS_PER_WAIT, timeout_ms) < 0 && errno != EINTR)
			return -errno;
	}
	n = consume(d, HT_DRAIN_BATCH, ht_monotonic_ns() - HT_DRAIN_ORDER_SLACK_NS);
	d->batch_full = n == (int)HT_DRAIN_BATCH;
	return n;
}

int ht_drain_all(struct ht_drain *d)
{
	long long total = 0;
	int n;

	/* The producers have stopped: every record is there, however recent. */
	while ((n = consume(d, HT_DRAIN_BATCH, ~0ull)) > 0)
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
	for (unsigned int i = 0; i < d->nrings; i++) {
		struct ring *r = &d->rings[i];

		if (r->producer_map)
			munmap(r->producer_map, r->producer_map_len);
		if (r->consumer_pos)
			munmap(r->consumer_pos, d->page);
	}
	free(d->rings);
	free(d);
}
