// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert --perfetto, its packets (perfetto_private.h): each packet gathered
 * in a bundle that is deflated into one compressed_packets packet and
 * written, the fields of the sequence that interns names, and the interned
 * names themselves, each defined in an interned_data packet of its own.
 */
#include "export/perfetto_private.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "common/errf.h"

/* ---- output: packets deflated in bundles ---- */

static int write_all(struct ht_perfetto_export *x, const void *data, size_t len, char *err, size_t errlen)
{
	const unsigned char *p = data;

	while (len) {
		ssize_t n = write(x->out.fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return ht_errf(err, errlen, "cannot write %s: %s", x->path, strerror(n < 0 ? errno : EIO));
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Deflates the packets gathered so far into one compressed_packets packet. */
int pf_flush_bundle(struct ht_perfetto_export *x, char *err, size_t errlen)
{
	uLongf zlen;
	struct ht_pb outer = { 0 };
	int ret;

	if (x->raw.oom)
		return ht_errf(err, errlen, "out of memory");
	if (!x->raw.len)
		return 0;
	zlen = compressBound(x->raw.len);
	if (zlen > x->zcap) {
		unsigned char *z = realloc(x->zbuf, zlen);
		if (!z)
			return ht_errf(err, errlen, "out of memory");
		x->zbuf = z;
		x->zcap = zlen;
	}
	/* The fastest level: the bundles still shrink about sixfold, at a third of level 6's time. */
	if (compress2(x->zbuf, &zlen, x->raw.buf, x->raw.len, Z_BEST_SPEED) != Z_OK)
		return ht_errf(err, errlen, "cannot compress the packets of %s", x->path);
	ht_pb_msg m = ht_pb_begin(&outer, TRACE_PACKET);
	ht_pb_bytes(&outer, PKT_COMPRESSED, x->zbuf, zlen);
	ht_pb_end(&outer, m);
	ret = outer.oom ? ht_errf(err, errlen, "out of memory") : write_all(x, outer.buf, outer.len, err, errlen);
	ht_pb_free(&outer);
	ht_pb_reset(&x->raw);
	return ret;
}

ht_pb_msg pf_packet_begin(struct ht_perfetto_export *x)
{
	x->open_packets++;
	return ht_pb_begin(&x->raw, TRACE_PACKET);
}

void pf_packet_end(struct ht_perfetto_export *x, ht_pb_msg p)
{
	ht_pb_end(&x->raw, p);
	x->open_packets--;
}

/* A packet of the sequence that interns names: its id and flags. */
void pf_sequence_fields(struct ht_perfetto_export *x)
{
	ht_pb_varint(&x->raw, PKT_SEQ_ID, SEQUENCE_ID);
	ht_pb_varint(&x->raw, PKT_SEQ_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
}

/* ---- interned names ---- */

/*
 * The iid of s in table (event names or debug annotation names), writing the
 * interned_data packet that defines it when it is new; 0 when s cannot be
 * interned (table full, out of memory): then write it whole.
 */
uint64_t pf_intern(struct ht_perfetto_export *x, bool event_name, const char *s)
{
	struct ht_hashmap *names = event_name ? &x->event_names : &x->arg_names;
	uint64_t *n = event_name ? &x->nevent_names : &x->narg_names, iid;
	long found;
	char *copy;

	if (ht_hashmap_find(names, (long)s, &found))
		return (uint64_t)found;
	/* Defined in a packet of its own, never inside the one being written (then the name goes whole). */
	if (*n >= MAX_INTERNED || x->open_packets || !(copy = strdup(s)))
		return 0;
	iid = *n + 1;
	if (ht_hashmap_insert(names, (long)copy, (long)iid, HT_HASHMAP_ADD, NULL, NULL)) {
		free(copy);
		return 0;
	}
	*n = iid;
	ht_pb_msg p = pf_packet_begin(x);
	pf_sequence_fields(x);
	ht_pb_msg d = ht_pb_begin(&x->raw, PKT_INTERNED);
	ht_pb_msg entry = ht_pb_begin(&x->raw, event_name ? ID_EVENT_NAMES : ID_DEBUG_NAMES);
	ht_pb_varint(&x->raw, IN_IID, iid);
	ht_pb_string(&x->raw, IN_NAME, s);
	ht_pb_end(&x->raw, entry);
	ht_pb_end(&x->raw, d);
	pf_packet_end(x, p);
	return iid;
}

void pf_event_name(struct ht_perfetto_export *x, const char *name)
{
	uint64_t iid = pf_intern(x, true, name);

	if (iid)
		ht_pb_varint(&x->raw, TE_NAME_IID, iid);
	else
		ht_pb_string(&x->raw, TE_NAME, name);
}

void pf_arg_name(struct ht_perfetto_export *x, const char *name)
{
	uint64_t iid = pf_intern(x, false, name);

	if (iid)
		ht_pb_varint(&x->raw, DA_NAME_IID, iid);
	else
		ht_pb_string(&x->raw, DA_NAME, name);
}
