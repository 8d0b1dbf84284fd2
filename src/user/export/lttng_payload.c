// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert --lttng, its payloads (lttng_private.h): an event's fields,
 * little-endian as the trace.
 */
#include "export/lttng_private.h"

#include <string.h>

static void put(struct payload *p, const void *v, size_t n)
{
	if (p->len + n <= sizeof(p->buf))
		memcpy(p->buf + p->len, v, n);
	p->len += n;
}

void lt_put_u32(struct payload *p, uint32_t v)
{
	put(p, &v, 4);
}

void lt_put_u64(struct payload *p, uint64_t v)
{
	put(p, &v, 8);
}

/*
 * Text a guest or a VM owner chose goes into the data streams as sent, as
 * lttng-modules writes a task's comm and the CTF export a guest's string:
 * the bytes are the reader's to show (babeltrace2 prints control bytes
 * escaped, bt2 hands invalid UTF-8 back as surrogate escapes).
 */

/* A char[16] field: the text NUL-padded, as the kernel's comm. */
void lt_put_comm(struct payload *p, const char *s)
{
	char c[HT_GEV_COMM_LEN] = { 0 };

	memcpy(c, s, strnlen(s, sizeof(c)));
	put(p, c, sizeof(c));
}

/* A string field (a guest's text holds no NUL: ht_field_text stops there). */
void lt_put_string(struct payload *p, const char *s)
{
	put(p, s, strlen(s) + 1);
}
