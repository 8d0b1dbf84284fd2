// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "fixture.h"

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include "common/grow.h"
#include "tracefile/trace_writer.h"

const char *ht_test_bin(void)
{
	const char *b = getenv("HT");

	return b ? b : ".output/san/hypertrace-bpf";
}

char *ht_test_run(const char *cmd, size_t *len, int *status)
{
	FILE *p = popen(cmd, "r");
	char *out = NULL;
	size_t used = 0, cap = 0;

	if (!p)
		return NULL;
	for (;;) {
		if (HT_GROW(out, cap, used + 65536, 1 << 17)) {
			free(out);
			pclose(p);
			return NULL;
		}
		size_t got = fread(out + used, 1, cap - used - 1, p);
		if (!got)
			break;
		used += got;
	}
	out[used] = '\0';
	*status = pclose(p);
	if (len)
		*len = used;
	return out;
}

int ht_test_write_trace(const char *path, const struct ht_file_header *h, const struct ht_identity *ids,
			size_t nids, const struct ht_record *recs, size_t n, const uint32_t *nrs,
			unsigned int nnrs, char *err, size_t errlen)
{
	struct ht_file_header hdr;
	struct ht_writer *w;
	struct ht_trailer t = { .records = n };

	if (h) {
		hdr = *h;
	} else {
		ht_header_init(&hdr);
		hdr.start_monotonic_ns = 1000000000ull;
		hdr.filter_nr_count = nnrs;
		for (unsigned int i = 0; i < nnrs && i < HT_MAX_SELECTED_NR; i++)
			hdr.filter_nr[i] = nrs[i];
	}
	if (ht_writer_open(path, true, &hdr, &w, err, errlen))
		return -1;
	for (size_t i = 0; i < nids; i++)
		if (ht_writer_add_identity(w, &ids[i])) {
			snprintf(err, errlen, "out of memory");
			ht_writer_abandon(w);
			return -1;
		}
	for (size_t i = 0; i < n; i++)
		ht_writer_add(w, &recs[i]);
	t.end_monotonic_ns = n ? recs[n - 1].exit_ns + 1000 : hdr.start_monotonic_ns;
	if (ht_writer_close(w, &t)) {
		snprintf(err, errlen, "cannot write %s", path);
		return -1;
	}
	return 0;
}

int ht_test_write_file(const char *path, const void *text, size_t len)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	if (fwrite(text, 1, len, f) != len) {
		fclose(f);
		return -1;
	}
	return fclose(f) ? -1 : 0;
}

int ht_test_write_text(const char *path, const char *text)
{
	return ht_test_write_file(path, text, strlen(text));
}

bool ht_test_terminal_safe(const char *s, size_t len, size_t *bad)
{
	mbstate_t st;
	locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
	locale_t old;
	bool ok = true;

	if (!utf8) {
		*bad = 0;
		return false;
	}
	old = uselocale(utf8);
	memset(&st, 0, sizeof(st));
	for (size_t i = 0; i < len;) {
		wchar_t wc;
		size_t n = s[i] == '\n' ? 1 : mbrtowc(&wc, s + i, len - i, &st);

		if (s[i] != '\n' &&
		    (n == 0 || n > len - i || wc < 0x20 || (wc >= 0x7f && wc <= 0x9f) || wc == 0x61c || wc == 0x200e ||
		     wc == 0x200f || (wc >= 0x2028 && wc <= 0x202e) || (wc >= 0x2066 && wc <= 0x2069))) {
			*bad = i;
			ok = false;
			break;
		}
		i += n;
	}
	uselocale(old);
	freelocale(utf8);
	return ok;
}
