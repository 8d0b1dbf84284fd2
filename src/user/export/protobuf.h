/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A small protocol buffers encoder (the wire format of
 * https://protobuf.dev/programming-guides/encoding/), enough for Perfetto's
 * trace packets without Perfetto's SDK: varint, fixed64 and length-delimited
 * fields, and nested messages whose length is filled in when they end (the
 * body is moved so the length is a minimal varint, as protoc writes it).
 * Writes into a growing buffer; out of memory is remembered and reported once.
 */
#ifndef HT_EXPORT_PROTOBUF_H
#define HT_EXPORT_PROTOBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ht_pb {
	unsigned char *buf;
	size_t len, cap;
	bool oom;
};

/* A nested message in progress: where its body starts. */
typedef size_t ht_pb_msg;

void ht_pb_varint(struct ht_pb *b, uint32_t field, uint64_t v);
/* int32/int64 fields: two's complement in a varint (a negative value takes 10 bytes, as protobuf says). */
void ht_pb_int(struct ht_pb *b, uint32_t field, int64_t v);
void ht_pb_fixed64(struct ht_pb *b, uint32_t field, uint64_t v);
void ht_pb_bytes(struct ht_pb *b, uint32_t field, const void *data, size_t len);
void ht_pb_string(struct ht_pb *b, uint32_t field, const char *s);
ht_pb_msg ht_pb_begin(struct ht_pb *b, uint32_t field);
void ht_pb_end(struct ht_pb *b, ht_pb_msg m);
/* Empties the buffer (keeps its memory). */
void ht_pb_reset(struct ht_pb *b);
void ht_pb_free(struct ht_pb *b);

#endif
