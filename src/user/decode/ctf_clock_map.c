// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "decode/ctf_clock_map.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "common/errf.h"
#include "common/grow.h"

/* A metadata packet's header (CTF 1.8, 7.1): magic, uuid[16], checksum, content and packet size (bits), then 5 bytes. */
#define PACKET_HEADER 37u
#define CONTENT_SIZE_AT 24u
#define PACKET_SIZE_AT 28u
#define COMPRESSION_AT 32u

static uint32_t read32(const unsigned char *p, bool le)
{
	return le ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24 :
		    (uint32_t)p[3] | (uint32_t)p[2] << 8 | (uint32_t)p[1] << 16 | (uint32_t)p[0] << 24;
}

/* Is data packetized metadata, and in which byte order? */
static bool packetized(const unsigned char *d, size_t len, bool *le)
{
	if (len < 4)
		return false;
	*le = read32(d, true) == HT_CTF_METADATA_MAGIC;
	return *le || read32(d, false) == HT_CTF_METADATA_MAGIC;
}

/* The TSDL text of packetized metadata, NUL-terminated in *text (*n bytes). 0, or -1 with the reason (*text for the caller to free). */
static int depacketize(const unsigned char *d, size_t len, bool le, char **text, size_t *n, char *err, size_t errlen)
{
	size_t cap = 0, off = 0;

	*text = NULL;
	*n = 0;
	while (off < len) {
		if (len - off < PACKET_HEADER || read32(d + off, le) != HT_CTF_METADATA_MAGIC)
			return ht_errf(err, errlen, "no metadata packet at byte %zu: a damaged file", off);
		uint32_t content = read32(d + off + CONTENT_SIZE_AT, le), packet = read32(d + off + PACKET_SIZE_AT, le);

		if (content % 8 || packet % 8 || content / 8 < PACKET_HEADER || content > packet || packet / 8 > len - off)
			return ht_errf(err, errlen, "the metadata packet at byte %zu says %" PRIu32 " of %" PRIu32
				       " bits, past the file's %zu bytes or its own size", off, content, packet, len);
		if (d[off + COMPRESSION_AT] || d[off + COMPRESSION_AT + 1])
			return ht_errf(err, errlen, "the metadata packet at byte %zu is compressed or encrypted", off);
		size_t body = content / 8 - PACKET_HEADER;
		if (HT_GROW(*text, cap, *n + body + 1, 4096))
			return ht_errf(err, errlen, "out of memory");
		memcpy(*text + *n, d + off + PACKET_HEADER, body);
		*n += body;
		off += packet / 8;
	}
	if (!*text && !(*text = malloc(1)))
		return ht_errf(err, errlen, "out of memory");
	(*text)[*n] = '\0';
	return 0;
}

/* Past a comment or string at s[i], if one starts there: the index after it; else i. */
static size_t skip_opaque(const char *s, size_t n, size_t i)
{
	if (s[i] == '"') {
		for (i++; i < n && s[i] != '"'; i++)
			if (s[i] == '\\' && i + 1 < n)
				i++;
		return i < n ? i + 1 : n;
	}
	if (s[i] == '/' && i + 1 < n && s[i + 1] == '*') {
		/* Within n: plain metadata is the file's bytes as read, with no NUL after them. */
		for (i += 2; i + 1 < n; i++)
			if (s[i] == '*' && s[i + 1] == '/')
				return i + 2;
		return n;
	}
	if (s[i] == '/' && i + 1 < n && s[i + 1] == '/') {
		const char *end = memchr(s + i, '\n', n - i);

		return end ? (size_t)(end - s) + 1 : n;
	}
	return i;
}

/* Where the next "clock {" block of s starts (at "clock"), from i; *body the index after its '{'. n if none. */
static size_t next_clock(const char *s, size_t n, size_t i, size_t *body)
{
	while (i < n) {
		size_t j = skip_opaque(s, n, i);

		if (j != i) {
			i = j;
			continue;
		}
		if (n - i >= 5 && !memcmp(s + i, "clock", 5) && (i == 0 || !(isalnum((unsigned char)s[i - 1]) || s[i - 1] == '_' ||
								 s[i - 1] == '.'))) {
			j = i + 5;
			while (j < n && isspace((unsigned char)s[j]))
				j++;
			if (j < n && s[j] == '{') {
				*body = j + 1;
				return i;
			}
		}
		i++;
	}
	return n;
}

/* The '}' that ends the block whose body starts at i (strings and comments skipped); n if none. */
static size_t block_end(const char *s, size_t n, size_t i)
{
	int depth = 0;

	while (i < n) {
		size_t j = skip_opaque(s, n, i);

		if (j != i) {
			i = j;
			continue;
		}
		if (s[i] == '{')
			depth++;
		else if (s[i] == '}' && depth-- == 0)
			return i;
		i++;
	}
	return n;
}

/* The statement's key (its first identifier) is key. */
static bool has_key(const char *stmt, size_t len, const char *key)
{
	size_t k = strlen(key), i = 0;

	while (i < len && isspace((unsigned char)stmt[i]))
		i++;
	if (len - i < k || strncmp(stmt + i, key, k))
		return false;
	i += k;
	while (i < len && isspace((unsigned char)stmt[i]))
		i++;
	return i < len && stmt[i] == '=';
}

/* The integer after '=' in stmt (decimal, hex or octal as C writes them). False if there is none. */
static bool int_value(const char *stmt, size_t len, long long *v)
{
	const char *eq = memchr(stmt, '=', len);
	char buf[64];
	char *end;
	size_t n;

	if (!eq)
		return false;
	n = len - (size_t)(eq + 1 - stmt);
	if (n >= sizeof(buf))
		return false;
	memcpy(buf, eq + 1, n);
	buf[n] = '\0';
	errno = 0;
	*v = strtoll(buf, &end, 0);
	while (isspace((unsigned char)*end))
		end++;
	return !errno && end != buf && !*end;
}

/*
 * One clock block (its body s[from, to)) to out, put on the host's clock:
 * its other statements as they are, then the new freq, offset and
 * description. 0, or -1 with the reason.
 */
static int map_clock(const char *s, size_t from, size_t to, FILE *out, const struct ht_clock_fit *fit,
		     int64_t wall_offset_ns, uint64_t guest_ref_ns, char *err, size_t errlen)
{
	long long freq = 1000000000;

	fputs("clock {\n", out);
	for (size_t i = from; i < to;) {
		size_t j = i;

		/* A statement ends at ';' outside strings and comments. */
		while (j < to && s[j] != ';') {
			size_t k = skip_opaque(s, to, j);

			j = k != j ? k : j + 1;
		}
		/* Its leading blanks and comments go: the key comes after them. */
		size_t lead = i;
		for (size_t k; lead < j; lead = k) {
			k = isspace((unsigned char)s[lead]) ? lead + 1 : skip_opaque(s, j, lead);
			if (k == lead || s[lead] == '"')
				break;
		}
		const char *stmt = s + lead;
		size_t len = j - lead;

		if (has_key(stmt, len, "freq")) {
			if (!int_value(stmt, len, &freq) || freq <= 0)
				return ht_errf(err, errlen, "a clock's freq is not a positive integer");
		} else if (!has_key(stmt, len, "offset_s") && !has_key(stmt, len, "offset") &&
			   !has_key(stmt, len, "absolute") && !has_key(stmt, len, "description")) {
			if (len) {
				fputc('\t', out);
				fwrite(stmt, 1, len, out);
				fputs(";\n", out);
			}
		}
		i = j < to ? j + 1 : to;
	}
	/*
	 * A count c is c / freq guest seconds, at intercept + rate * c * 1e9 /
	 * freq on the host's clock. CTF's freq is an integer: its rounding is
	 * taken into the offset at guest_ref_ns, so that it costs nothing there
	 * and less than 1 ns per second away from it.
	 */
	long double new_freq = roundl((long double)freq / fit->rate), ref = (long double)guest_ref_ns * freq / 1e9L;
	if (!(new_freq >= 1 && new_freq < 1e18L))
		return ht_errf(err, errlen, "the clock's fit puts it out of range (rate %.9Lf)", fit->rate);
	long double origin = fit->intercept + (long double)wall_offset_ns + fit->rate * ref * 1e9L / freq - ref * 1e9L / new_freq;
	if (!(fabsl(origin) < 9e18L))
		return ht_errf(err, errlen, "the clock's fit puts it out of range (intercept %.0Lf ns)", fit->intercept);
	int64_t total = (int64_t)llroundl(origin), secs = total / 1000000000, ns = total % 1000000000;
	if (ns < 0) {
		ns += 1000000000;
		secs--;
	}
	/* CTF's offset is in the clock's own cycles (offset_s in seconds): within [0, freq). */
	int64_t cycles = (int64_t)llroundl((long double)ns * new_freq / 1e9L);
	if (cycles >= (int64_t)new_freq) {
		cycles -= (int64_t)new_freq;
		secs++;
	}
	fprintf(out,
		"\tdescription = \"the guest's clock on the host's CLOCK_MONOTONIC, offset to UTC (hypertrace-bpf clock pairs: "
		"%zu used, rate %+.3f ppm, residual max %.3f us)\";\n"
		"\tfreq = %lld;\n\toffset_s = %" PRId64 ";\n\toffset = %" PRId64 ";\n\tabsolute = true;\n}",
		fit->used, (double)((fit->rate - 1) * 1e6L), fit->residual_max / 1e3, (long long)new_freq, secs, cycles);
	return 0;
}

int ht_ctf_clock_map(const unsigned char *data, size_t len, FILE *out, const struct ht_clock_fit *fit,
		     int64_t wall_offset_ns, uint64_t guest_ref_ns, char *err, size_t errlen)
{
	char *owned = NULL;
	const char *s = (const char *)data;
	size_t n = len, at = 0, clocks = 0;
	bool le;

	if (packetized(data, len, &le)) {
		if (depacketize(data, len, le, &owned, &n, err, errlen)) {
			free(owned); /* what it took before the fault */
			return -1;
		}
		s = owned;
	} else if (len < 9 || memcmp(data, "/* CTF 1.", 9)) {
		return ht_errf(err, errlen, "not CTF metadata: neither its packets nor TSDL starting \"/* CTF 1.\"");
	}
	for (;;) {
		size_t body, start = next_clock(s, n, at, &body), end;

		if (start == n)
			break;
		end = block_end(s, n, body);
		if (end == n) {
			free(owned);
			return ht_errf(err, errlen, "a clock block without its end");
		}
		fwrite(s + at, 1, start - at, out);
		if (map_clock(s, body, end, out, fit, wall_offset_ns, guest_ref_ns, err, errlen)) {
			free(owned);
			return -1;
		}
		clocks++;
		at = end + 1;
	}
	fwrite(s + at, 1, n - at, out);
	free(owned);
	if (!clocks)
		return ht_errf(err, errlen, "no clock block in the metadata: its events have no times to map");
	return (int)clocks;
}
