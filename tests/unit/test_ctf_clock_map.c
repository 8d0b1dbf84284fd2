// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A guest CTF trace's metadata with its clocks put on the host's
 * (src/user/decode/ctf_clock_map.c): each clock block rewritten to the
 * fit's freq and offset (in the clock's own cycles), everything else kept,
 * "clock {" in a comment or string left alone; packetized metadata read as
 * its text; and whatever bytes the guest's file holds (every truncation,
 * flipped bytes, plain text cut anywhere) end in an answer or a refusal,
 * within the file's bounds.
 * tests/cli/test_clock_cli.sh has babeltrace2 read the result.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "decode/ctf_clock_map.h"
#include "test.h"

static const char tsdl[] =
	"/* CTF 1.8 */\n"
	"/* a comment: clock { freq = 1; }; */\n"
	"trace { major = 1; minor = 8; byte_order = le; };\n"
	"env { note = \"clock { offset = 5; };\"; };\n"
	"clock {\n\tname = \"monotonic\";\n\tuuid = \"0f1e2d3c-0000-4000-8000-000000000001\";\n"
	"\tdescription = \"Monotonic Clock; with a semicolon\";\n\tfreq = 1000000000; /* Frequency, in Hz */\n"
	"\toffset_s = 1700000000;\n\toffset = 123456789;\n\tprecision = 1;\n};\n"
	"typealias integer { size = 64; map = clock.monotonic.value; } := uint64_clock_monotonic_t;\n"
	"clock { name = \"second\"; freq = 0x3b9aca00; };\n";

/* A fit of rate 1.00001 and intercept 5 s: a guest count c ns is at 5e9 + 1.00001 c on the host. */
static const struct ht_clock_fit fit = { .pairs = 10, .used = 10, .has_rate = true, .rate = 1.00001L, .intercept = 5e9L };

/* What ht_ctf_clock_map prints of data, NUL-terminated (free it); its return in *ret. */
static char *mapped(const void *data, size_t len, int *ret, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	*ret = f ? ht_ctf_clock_map(data, len, f, &fit, 1000000000000000000ll, 0, err, errlen) : -2;
	if (f)
		fclose(f);
	return buf;
}

static void each_clock_is_put_on_the_host_and_the_rest_kept(void)
{
	char err[256], *out;
	int ret;

	out = mapped(tsdl, sizeof(tsdl) - 1, &ret, err, sizeof(err));
	if (!ASSERT_EQ(ret, 2, "clock blocks") || !ASSERT_OK_PTR(out, "output"))
		goto out;
	/* freq / rate = 999990000.1: 999990000 Hz. The origin, guest 0, is at 1e18 + 5e9 ns: 1000000005 s and 0 cycles. */
	ASSERT_MSG(strstr(out, "\tfreq = 999990000;\n\toffset_s = 1000000005;\n\toffset = 0;\n\tabsolute = true;\n}"),
		    "the first clock's freq and offset: %s", out);
	ASSERT_MSG(strstr(out, "\tname = \"monotonic\";\n\tuuid = \"0f1e2d3c-0000-4000-8000-000000000001\";\n\tprecision = 1;\n"),
		    "its other statements kept, in order");
	ASSERT_MSG(!strstr(out, "offset_s = 1700000000") && !strstr(out, "Monotonic Clock; with"),
		    "the guest's own offset and description replaced");
	ASSERT_MSG(strstr(out, "/* a comment: clock { freq = 1; }; */") && strstr(out, "note = \"clock { offset = 5; };\""),
		    "clock blocks in a comment or a string left alone");
	ASSERT_MSG(strstr(out, "name = \"second\";\n\tdescription"), "the second clock, written on one line, rewritten too");
	ASSERT_MSG(strstr(out, "map = clock.monotonic.value"), "a mapping to the clock is not a clock block");
out:
	free(out);
}

/* The origin's ns in the clock's cycles: at 999990000 Hz, 0.5 s is 499995000 cycles. */
static void the_offset_is_in_the_clocks_own_cycles(void)
{
	static const char one[] = "/* CTF 1.8 */\nclock { name = x; freq = 1000000000; };\n";
	struct ht_clock_fit half = fit;
	char err[256], *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	half.intercept = 5.5e9L;
	if (!ASSERT_OK_PTR(f, "memstream"))
		return;
	ASSERT_EQ(ht_ctf_clock_map((const unsigned char *)one, sizeof(one) - 1, f, &half, 0, 0, err, sizeof(err)), 1, "clocks");
	fclose(f);
	ASSERT_MSG(buf && strstr(buf, "offset_s = 5;\n\toffset = 499995000;"), "offset in cycles: %s", buf ? buf : "");
	free(buf);
}

/* tsdl as LTTng writes metadata: packets of size bytes, a 37-byte header each, zero padding. */
static unsigned char *packetize(size_t size, size_t *len)
{
	const size_t text = sizeof(tsdl) - 1, body = size - 37, n = (text + body - 1) / body;
	unsigned char *p = calloc(n, size);

	for (size_t i = 0; p && i < n; i++) {
		unsigned char *h = p + i * size;
		size_t take = text - i * body < body ? text - i * body : body;
		uint32_t magic = HT_CTF_METADATA_MAGIC, content = (uint32_t)(37 + take) * 8, packet = (uint32_t)size * 8;

		memcpy(h, &magic, 4);
		memcpy(h + 24, &content, 4);
		memcpy(h + 28, &packet, 4);
		h[35] = 1;
		h[36] = 8;
		memcpy(h + 37, tsdl + i * body, take);
	}
	*len = n * size;
	return p;
}

static void packetized_metadata_maps_as_its_text(void)
{
	char err[256], *plain, *packed = NULL;
	size_t len;
	unsigned char *p = packetize(128, &len);
	int ret1, ret2;

	plain = mapped(tsdl, sizeof(tsdl) - 1, &ret1, err, sizeof(err));
	if (ASSERT_OK_PTR(p, "packets")) {
		packed = mapped(p, len, &ret2, err, sizeof(err));
		ASSERT_MSG(ret1 == 2 && ret2 == 2 && plain && packed && !strcmp(plain, packed),
			    "%d packets: %d and %d clocks, the same text: %s", (int)(len / 128), ret1, ret2, err);
	}
	free(plain);
	free(packed);
	free(p);
}

/* Every truncation of the packets and 3000 flipped bytes (a fixed seed): an answer or a refusal, never a fault (ASan). */
static void any_bytes_end_in_an_answer_or_a_refusal(void)
{
	char err[256], *out;
	size_t len;
	unsigned char *p = packetize(96, &len), *q;
	unsigned int seed = 12345, refused = 0, answered = 0;
	int ret;

	if (!ASSERT_OK_PTR(p, "packets") || !ASSERT_OK_PTR(q = malloc(len), "copy")) {
		free(p);
		return;
	}
	for (size_t cut = 0; cut < len; cut++) {
		memcpy(q, p, cut); /* a copy of exactly cut bytes: ASan sees a read past them */
		out = mapped(q, cut, &ret, err, sizeof(err));
		refused += ret < 0;
		answered += ret > 0;
		free(out);
	}
	/* Plain TSDL too, cut anywhere (in a comment, a string, a clock block), in a buffer of exactly its bytes. */
	for (size_t cut = 0; cut < sizeof(tsdl) - 1; cut++) {
		char *exact = malloc(cut ? cut : 1);

		if (!ASSERT_OK_PTR(exact, "copy"))
			break;
		memcpy(exact, tsdl, cut);
		out = mapped(exact, cut, &ret, err, sizeof(err));
		refused += ret < 0;
		answered += ret > 0;
		free(out);
		free(exact);
	}
	for (int i = 0; i < 3000; i++) {
		memcpy(q, p, len);
		for (int k = 0; k < 4; k++) {
			seed = seed * 1103515245u + 12345u;
			q[(seed >> 8) % len] = (unsigned char)(seed >> 24);
		}
		out = mapped(q, len, &ret, err, sizeof(err));
		refused += ret < 0;
		answered += ret > 0;
		free(out);
	}
	ASSERT_EQ(refused + answered, (unsigned int)(len + sizeof(tsdl) - 1) + 3000, "every input answered or refused");
	ASSERT_GT(refused, 0, "refusals");
	ASSERT_GT(answered, 0, "answers");
	free(p);
	free(q);
}

static void not_metadata_and_no_clock_are_refused(void)
{
	static const char text[] = "          <idle>-0     [001] 12.345678: sched_switch: x\n";
	static const char noclock[] = "/* CTF 1.8 */\ntrace { major = 1; };\n";
	char err[256], *out;
	int ret;

	out = mapped(text, sizeof(text) - 1, &ret, err, sizeof(err));
	ASSERT_MSG(ret == -1 && strstr(err, "not CTF metadata"), "ftrace text: %d, %s", ret, err);
	free(out);
	out = mapped(noclock, sizeof(noclock) - 1, &ret, err, sizeof(err));
	ASSERT_MSG(ret == -1 && strstr(err, "no clock block"), "no clock: %d, %s", ret, err);
	free(out);
}

int main(void)
{
	RUN(each_clock_is_put_on_the_host_and_the_rest_kept);
	RUN(the_offset_is_in_the_clocks_own_cycles);
	RUN(packetized_metadata_maps_as_its_text);
	RUN(any_bytes_end_in_an_answer_or_a_refusal);
	RUN(not_metadata_and_no_clock_are_refused);
	return ht_test_exit_status();
}
