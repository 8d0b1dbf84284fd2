// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "drain.h"

#include <errno.h>
#include <stdlib.h>
#include <bpf/libbpf.h>

struct ht_drain {
	struct ring_buffer *rb;
	ht_record_sink sink;
	void *ctx;
	unsigned long long malformed;
};

static int on_sample(void *ctx, void *data, size_t size)
{
	struct ht_drain *d = ctx;

	if (size != sizeof(struct ht_record)) {
		d->malformed++;
		return 0;
	}
	return d->sink(d->ctx, data);
}

int ht_drain_new(int ringbuf_fd, ht_record_sink sink, void *ctx, struct ht_drain **out)
{
	struct ht_drain *d = calloc(1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	d->sink = sink;
	d->ctx = ctx;
	d->rb = ring_buffer__new(ringbuf_fd, on_sample, d, NULL);
	if (!d->rb) {
		int ret = -errno;
		free(d);
		return ret;
	}
	*out = d;
	return 0;
}

int ht_drain_poll(struct ht_drain *d, int timeout_ms)
{
	int n = ring_buffer__poll(d->rb, timeout_ms);

	return n == -EINTR ? 0 : n;
}

int ht_drain_all(struct ht_drain *d)
{
	return ring_buffer__consume(d->rb);
}

unsigned long long ht_drain_malformed(const struct ht_drain *d)
{
	return d->malformed;
}

void ht_drain_free(struct ht_drain *d)
{
	if (!d)
		return;
	ring_buffer__free(d->rb);
	free(d);
}
