// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/protobuf.h"

#include <stdlib.h>
#include <string.h>
#include "common/grow.h"

enum { WIRE_VARINT = 0, WIRE_I64 = 1, WIRE_LEN = 2 };

static bool room(struct ht_pb *b, size_t n)
{
	if (b->oom)
		return false;
	if (HT_GROW(b->buf, b->cap, b->len + n, 4096)) {
		b->oom = true;
		return false;
	}
	return true;
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static void raw_varint(struct ht_pb *b, uint64_t v)
{
	if (!room(b, 10))
		return;
	while (v >= 0x80) {
		b->buf[b->len++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	b->buf[b->len++] = (unsigned char)v;
}

static void tag(struct ht_pb *b, uint32_t field, unsigned int wire)
{
	raw_varint(b, (uint64_t)field << 3 | wire);
}

void ht_pb_varint(struct ht_pb *b, uint32_t field, uint64_t v)
{
	tag(b, field, WIRE_VARINT);
	raw_varint(b, v);
}

void ht_pb_int(struct ht_pb *b, uint32_t field, int64_t v)
{
	ht_pb_varint(b, field, (uint64_t)v);
}

void ht_pb_fixed64(struct ht_pb *b, uint32_t field, uint64_t v)
{
	tag(b, field, WIRE_I64);
	if (!room(b, 8))
		return;
	for (int i = 0; i < 8; i++)
		b->buf[b->len++] = (unsigned char)(v >> (8 * i));
}

void ht_pb_bytes(struct ht_pb *b, uint32_t field, const void *data, size_t len)
{
	tag(b, field, WIRE_LEN);
	raw_varint(b, len);
	if (!room(b, len))
		return;
	memcpy(b->buf + b->len, data, len);
	b->len += len;
}

void ht_pb_string(struct ht_pb *b, uint32_t field, const char *s)
{
	ht_pb_bytes(b, field, s, strlen(s));
}

ht_pb_msg ht_pb_begin(struct ht_pb *b, uint32_t field)
{
	tag(b, field, WIRE_LEN);
	/* One byte for the length: most messages are shorter than 128 bytes. */
	if (room(b, 1))
		b->buf[b->len++] = 0;
	return b->len;
}

void ht_pb_end(struct ht_pb *b, ht_pb_msg m)
{
	size_t body = b->len - m, n = varint_len(body);
	uint64_t v = body;
	unsigned char *p;

	if (b->oom)
		return;
	if (n > 1) {
		if (!room(b, n - 1))
			return;
		memmove(b->buf + m + n - 1, b->buf + m, body);
		b->len += n - 1;
	}
	p = b->buf + m - 1;
	while (v >= 0x80) {
		*p++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*p = (unsigned char)v;
}

void ht_pb_reset(struct ht_pb *b)
{
	b->len = 0;
}

void ht_pb_free(struct ht_pb *b)
{
	free(b->buf);
	memset(b, 0, sizeof(*b));
}
