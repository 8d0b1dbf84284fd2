// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "trace_replay.h"

#include <string.h>

#include "trace_text.h"

/* The bytes of text a trace_line carries; trace_text carries 24 from there on. */
#define HEAD_TEXT 8u
#define CHUNK_TEXT 24u

static void emit(struct ht_trace_replay *r, uint32_t nr, struct ht_guest_args a)
{
	r->emit(r->ctx, nr, a);
	r->hypercalls++;
}

/* Does text (len bytes, not NUL-terminated) hold s? */
static bool holds(const char *text, size_t len, const char *s)
{
	size_t n = strlen(s);

	for (size_t i = 0; n <= len && i <= len - n; i++)
		if (!memcmp(text + i, s, n))
			return true;
	return false;
}

void ht_trace_replay_begin(struct ht_trace_replay *r)
{
	r->seq = 0;
	r->lines = r->unparsed = r->cut = r->lost = r->hypercalls = r->unmatched = 0;
	emit(r, HT_GUEST_NR_TRACE_REPLAY, ht_guest_pack_trace_replay(r->run, HT_GUEST_REPLAY_BEGIN, 0, 0, 0, 0, 0));
}

void ht_trace_replay_line(struct ht_trace_replay *r, const char *line, size_t len)
{
	struct ht_trace_text_line l;
	unsigned int n;
	int cut;

	if (!ht_trace_text_parse(line, len, &l)) {
		uint64_t lost = ht_trace_text_lost(line, len);

		if (lost)
			r->lost += lost;
		else if (len && line[0] != '#' && line[0] != '\n')
			r->unparsed++;
		return;
	}
	if (r->match && !holds(l.text, l.text_len, r->match) && !holds(l.text, l.text_len, HT_GUEST_SYNC_MARKER)) {
		r->unmatched++;
		return;
	}
	cut = l.text_len > HT_GUEST_TRACE_TEXT_MAX;
	n = cut ? HT_GUEST_TRACE_TEXT_MAX : (unsigned int)l.text_len;
	r->cut += (uint64_t)cut;
	emit(r, HT_GUEST_NR_TRACE_LINE, ht_guest_pack_trace_line(l.ns, r->seq, l.cpu, l.pid, l.text, n, cut));
	for (unsigned int off = HEAD_TEXT; off < n; off += CHUNK_TEXT)
		emit(r, HT_GUEST_NR_TRACE_TEXT, ht_guest_pack_trace_text(r->seq, off, l.text, n));
	r->seq++;
	r->lines++;
}

void ht_trace_replay_sync(struct ht_trace_replay *r, uint32_t seq)
{
	emit(r, HT_GUEST_NR_TRACE_REPLAY, ht_guest_pack_trace_replay(r->run, HT_GUEST_REPLAY_SYNC, seq, 0, 0, 0, 0));
}

void ht_trace_replay_end(struct ht_trace_replay *r, uint64_t overruns)
{
	/* The "[LOST" lines and the buffer's overruns may count the same events: the larger is the floor. */
	if (overruns > r->lost)
		r->lost = overruns;
	emit(r, HT_GUEST_NR_TRACE_REPLAY,
	     ht_guest_pack_trace_replay(r->run, HT_GUEST_REPLAY_END, 0, r->lines, r->unparsed, r->cut, r->lost));
}
