// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The causes of exits in user space: the table (cumulative numbers,
 * intervals by difference), their names, the text of report and top, and
 * EXITS blocks of version 6 through the real writer and reader.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common/util.h"
#include "exits/exit_causes.h"
#include "exits/exit_table.h"
#include "exits/exit_view.h"
#include "hypertrace/trace_file.h"
#include "metrics/metrics_registry.h"
#include "test.h"
#include "top/top_view.h"
#include "tracefile/crc32.h"
#include "tracefile/trace_reader.h"
#include "tracefile/trace_writer.h"

#define VMX_IO 30
#define VMX_MSR_WRITE 32

static struct ht_exit_cause_key key_of(uint32_t pid, uint32_t reason, uint8_t kind, uint64_t value, uint32_t detail)
{
	return (struct ht_exit_cause_key){ .pid = pid, .reason = reason, .isa = HT_ISA_VMX, .kind = kind,
					   .detail = detail, .value = value };
}

/* n exits of kvm_ns in KVM, vmm of them then vmm_ns in the VMM. */
static struct ht_exit_cause_hist hist_of(uint64_t n, uint64_t kvm_ns, uint64_t vmm, uint64_t vmm_ns)
{
	struct ht_exit_cause_hist h = { .count = n, .kvm_ns = n * kvm_ns, .vmm_count = vmm, .vmm_ns = vmm * vmm_ns };
	unsigned int k = 0, j = 0;

	while (k < HT_EXIT_SLOTS - 1 && kvm_ns >> (k + 1))
		k++;
	while (j < HT_EXIT_SLOTS - 1 && vmm_ns >> (j + 1))
		j++;
	h.kvm_slots[k] = n;
	h.vmm_slots[j] = vmm;
	return h;
}

static void each_kind_is_named_as_every_output_writes_it(void)
{
	static const struct {
		uint8_t kind;
		uint64_t value;
		uint32_t detail;
		const char *want;
	} cases[] = {
		{ HT_CAUSE_PIO, 0x3f8, HT_CAUSE_DIR_OUT | 1 << 8, "io 0x3f8 out 1" },
		{ HT_CAUSE_PIO, 0x510, HT_CAUSE_DIR_IN | 2 << 8, "io 0x510 in 2" },
		{ HT_CAUSE_MMIO, 0xfebf1000, HT_CAUSE_DIR_IN | 4 << 8, "mmio 0xfebf1000 read 4" },
		{ HT_CAUSE_MMIO, 0xfee000b0, HT_CAUSE_DIR_OUT | 4 << 8, "mmio 0xfee000b0 write 4" },
		{ HT_CAUSE_MSR, 0x6e0, HT_CAUSE_DIR_OUT, "msr 0x6e0 IA32_TSC_DEADLINE write" },
		{ HT_CAUSE_MSR, 0x4b564d02, HT_CAUSE_DIR_OUT, "msr 0x4b564d02 KVM_ASYNC_PF_EN write" },
		{ HT_CAUSE_MSR, 0x12345, HT_CAUSE_DIR_IN, "msr 0x12345 read" },
		{ HT_CAUSE_CPUID, 0xd, 1, "cpuid 0xd.1" },
		{ HT_CAUSE_HYPERCALL, 1042, 0, "hypercall 1042" },
		{ HT_CAUSE_OTHER, 0, 0, "other" },
		{ 200, 1, 1, "?" },
	};
	char buf[96];

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct ht_exit_cause_key k = key_of(1, VMX_IO, cases[i].kind, cases[i].value, cases[i].detail);

		ht_exit_cause_format(buf, sizeof(buf), &k);
		if (!ASSERT_STREQ(buf, cases[i].want, "cause name"))
			return;
	}
	ASSERT_STREQ(ht_msr_name(0x1b), "IA32_APICBASE", "msr-index.h's name");
}

/* Cumulative numbers set twice: the interval is their difference, a cause with nothing new is left out. */
static void an_interval_is_the_difference_of_two_reads(void)
{
	struct ht_exit_table before, now, d;
	struct ht_exit_cause_key a = key_of(7, VMX_IO, HT_CAUSE_PIO, 0x80, 1 | 1 << 8);
	struct ht_exit_cause_key b = key_of(7, VMX_MSR_WRITE, HT_CAUSE_MSR, 0x6e0, 1);
	struct ht_exit_cause_hist ha = hist_of(10, 400, 10, 300000), hb = hist_of(5, 600, 0, 0);
	const struct ht_exit_cause_row *r;

	ht_exit_table_init(&before);
	ht_exit_table_init(&now);
	ht_exit_table_init(&d);
	if (!ASSERT_OK(ht_exit_causes_set(&before.causes, &a, &ha), "set") ||
	    !ASSERT_OK(ht_exit_causes_set(&before.causes, &b, &hb), "set") ||
	    !ASSERT_OK(ht_exit_table_copy(&now, &before), "copy"))
		goto cleanup;
	ha = hist_of(25, 400, 25, 300000);
	if (!ASSERT_OK(ht_exit_causes_set(&now.causes, &a, &ha), "set") ||
	    !ASSERT_TRUE(ht_exit_causes_row(&now.causes, &a, false)->changed, "changed") ||
	    !ASSERT_OK(ht_exit_table_delta(&d, &now, &before), "delta"))
		goto cleanup;
	if (!ASSERT_EQ(d.causes.n, 1, "only the cause that moved"))
		goto cleanup;
	r = ht_exit_causes_row(&d.causes, &a, false);
	if (ASSERT_OK_PTR(r, "the io cause") && ASSERT_EQ(r->h.count, 15, "count") &&
	    ASSERT_EQ(r->h.kvm_ns, 15 * 400, "kvm") && ASSERT_EQ(r->h.vmm_count, 15, "to the vmm") &&
	    ASSERT_EQ(r->h.kvm_slots[8], 15, "bucket"))
		ASSERT_EQ(d.went_down, 0, "nothing went down");
cleanup:
	ht_exit_table_free(&before);
	ht_exit_table_free(&now);
	ht_exit_table_free(&d);
}

/* Many causes in any order: each found again (the index follows the rows as they grow). */
static void thousands_of_causes_are_found_by_their_keys(void)
{
	struct ht_exit_cause_table c;
	struct ht_exit_cause_hist h = hist_of(1, 100, 0, 0);
	size_t wrong = 0;

	ht_exit_causes_init(&c);
	for (uint32_t i = 0; i < 5000; i++) {
		struct ht_exit_cause_key k = key_of(1 + i % 7, VMX_IO, HT_CAUSE_PIO, 5000 - i, 1);

		h.count = h.kvm_slots[6] = i + 1;
		if (!ASSERT_OK(ht_exit_causes_set(&c, &k, &h), "set"))
			goto cleanup;
	}
	for (uint32_t i = 0; i < 5000; i++) {
		struct ht_exit_cause_key k = key_of(1 + i % 7, VMX_IO, HT_CAUSE_PIO, 5000 - i, 1);
		const struct ht_exit_cause_row *r = ht_exit_causes_row(&c, &k, false);

		wrong += !r || r->h.count != i + 1;
	}
	ASSERT_EQ(wrong, 0, "causes found");
cleanup:
	ht_exit_causes_free(&c);
}

/* One line per cause, as top writes it under its reason. */
static void a_cause_in_one_line(void)
{
	struct ht_exit_cause_row r = { .key = key_of(1, VMX_IO, HT_CAUSE_PIO, 0x3f8, 1 | 1 << 8),
				       .h = hist_of(1200, 4000, 1200, 280000) };
	char buf[200];

	ht_exit_cause_summary(buf, sizeof(buf), &r, 1000000000);
	if (!ASSERT_STREQ(buf, "io 0x3f8 out 1: 1200.0/s, kvm p50 <=4.09us, vmm p50 <=524us", "with the vmm"))
		return;
	r.h = hist_of(3, 200, 0, 0);
	ht_exit_cause_summary(buf, sizeof(buf), &r, 0);
	ASSERT_STREQ(buf, "io 0x3f8 out 1: 3, kvm p50 <=255ns", "no interval, no vmm");
}

static const char *names(void *ctx, uint32_t pid)
{
	(void)ctx;
	return pid == 7 ? "web\x1b[2J1" : NULL;
}

/* top in 80x24 with --reasons: under each reason its two busiest causes, each cut to the screen. */
static void top_shows_the_busiest_causes_under_their_reason(void)
{
	struct ht_top_view_opts o = { .sort = HT_TOP_SORT_EXITS, .reasons = true, .width = 80, .height = 24,
				      .interval_ns = 1000000000, .vm_name = names };
	struct ht_exit_key io = { .pid = 7, .isa = HT_ISA_VMX, .reason = VMX_IO };
	struct ht_exit_hist h = { .count = 1300, .total_ns = 1300 * 1000, .min_ns = 1000, .max_ns = 1000 };
	struct ht_exit_table interval, total;
	struct ht_exit_cause_key k1 = key_of(7, VMX_IO, HT_CAUSE_PIO, 0x3f8, 1 | 1 << 8),
				 k2 = key_of(7, VMX_IO, HT_CAUSE_PIO, 0x80, 1 | 1 << 8),
				 k3 = key_of(7, VMX_IO, HT_CAUSE_PIO, 0x70, 1 | 1 << 8);
	struct ht_exit_cause_hist h1 = hist_of(1200, 4000, 1200, 280000), h2 = hist_of(90, 400, 0, 0),
				  h3 = hist_of(10, 400, 0, 0);
	const char *reason, *c1, *c2;
	char *text = NULL;
	size_t len = 0;
	FILE *f = NULL;
	int lines;

	ht_exit_table_init(&interval);
	ht_exit_table_init(&total);
	h.slots[9] = 1300;
	if (!ASSERT_OK(ht_exit_table_set_series(&interval, &io, &h), "series") ||
	    !ASSERT_OK(ht_exit_causes_set(&interval.causes, &k3, &h3), "cause") ||
	    !ASSERT_OK(ht_exit_causes_set(&interval.causes, &k1, &h1), "cause") ||
	    !ASSERT_OK(ht_exit_causes_set(&interval.causes, &k2, &h2), "cause"))
		goto cleanup;
	f = open_memstream(&text, &len);
	lines = ht_top_view_write(f, &interval, &total, &o);
	fclose(f);
	f = NULL;
	if (!ASSERT_MSG(lines == 6, "lines %d:\n%s", lines, text))
		goto cleanup;
	reason = strstr(text, "  IO_INSTRUCTION");
	c1 = strstr(text, "io 0x3f8 out 1: 1200.0/s");
	c2 = strstr(text, "io 0x80 out 1: 90.0/s");
	if (!ASSERT_MSG(reason && c1 && c2 && reason < c1 && c1 < c2 && !strstr(text, "io 0x70"),
			"the two busiest under their reason:\n%s", text))
		goto cleanup;
	for (const char *l = text; *l;) {
		const char *e = strchr(l, '\n');
		size_t n = e ? (size_t)(e - l) : strlen(l);

		if (!ASSERT_MSG(n <= 80, "a line of %zu columns: %.*s", n, (int)n, l))
			goto cleanup;
		l += n + (e != NULL);
	}
	ASSERT_MSG(!strchr(text, '\x1b'), "a raw escape byte");
cleanup:
	if (f)
		fclose(f);
	free(text);
	ht_exit_table_free(&interval);
	ht_exit_table_free(&total);
}

/* report's text: per VM and reason, each cause's numbers; the VM's name escaped. */
static void report_text_per_vm_and_reason(void)
{
	struct ht_exit_view_opts o = { .elapsed_ns = 2000000000, .width = 200, .vm_name = names };
	struct ht_exit_table t;
	struct ht_exit_cause_key k = key_of(7, VMX_MSR_WRITE, HT_CAUSE_MSR, 0x6e0, 1);
	struct ht_exit_cause_hist h = hist_of(40, 600, 0, 0);
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	int ret;

	ht_exit_table_init(&t);
	if (!ASSERT_OK(ht_exit_causes_set(&t.causes, &k, &h), "cause"))
		goto cleanup;
	f = open_memstream(&text, &len);
	ret = ht_exit_causes_view_write(f, &t, &o);
	fclose(f);
	if (ASSERT_OK(ret, "write") && ASSERT_MSG(strstr(text, "VM web\\x1b[2J1 (pid 7)\n  MSR_WRITE\n") != NULL, "%s", text))
		ASSERT_MSG(strstr(text, "    msr 0x6e0 IA32_TSC_DEADLINE write               40      20.0    1.02us    1.02us         0         -         -\n") != NULL,
			   "%s", text);
cleanup:
	free(text);
	ht_exit_table_free(&t);
}

static struct ht_exit_cause_rec seen[4];
static unsigned int nseen, blocks;
static struct ht_exits_header seen_header;

static void see_exits(void *ctx, const struct ht_exits_header *h, const struct ht_exit_series_rec *s,
		      const struct ht_vcpu_wait_rec *w)
{
	(void)ctx, (void)s, (void)w;
	seen_header = *h;
	blocks++;
}

static void see_causes(void *ctx, const struct ht_exits_header *h, const struct ht_exit_cause_rec *c)
{
	(void)ctx;
	for (__u32 i = 0; i < h->ncauses && nseen < 4; i++)
		seen[nseen++] = c[i];
}

/*
 * A version 6 block's causes come to the causes visitor after the block's
 * exits; a version 5 file's header is 48 bytes and its reserved word, where
 * ncauses is now, is no count of causes.
 */
static void version_6_blocks_carry_causes_and_version_5_none(void)
{
	char path[] = "/tmp/ht-causes-XXXXXX";
	int fd = mkstemp(path);
	struct {
		struct ht_exits_header h;
		struct ht_exit_cause_rec c[2];
	} p = { .h = { .time_ns = 2000, .ncauses = 2, .lost_causes = 3 } };
	struct ht_file_header hdr;
	struct ht_trailer tr = { 0 };
	struct ht_writer *w = NULL;
	struct ht_reader *r = NULL;
	struct ht_record rec;
	/* Version 5: a 48-byte header whose word 20 is not a count. */
	struct ht_exits_header old = { .time_ns = 2000, .ncauses = 99 };
	size_t got, put;
	char err[256];
	FILE *f;

	if (!ASSERT_GE(fd, 0, "mkstemp"))
		return;
	close(fd);
	p.c[0] = (struct ht_exit_cause_rec){ .key = key_of(7, VMX_IO, HT_CAUSE_PIO, 0x80, 1 | 1 << 8),
					     .h = hist_of(10, 400, 10, 300000) };
	p.c[1] = (struct ht_exit_cause_rec){ .key = key_of(7, VMX_IO, HT_CAUSE_OTHER, 0, 0), .h = hist_of(3, 400, 0, 0) };
	ht_header_init(&hdr);
	hdr.start_monotonic_ns = 1000;
	if (!ASSERT_OK(ht_writer_open(path, true, &hdr, &w, err, sizeof(err)), "open") ||
	    !ASSERT_OK(ht_writer_add_block(w, HT_BLOCK_EXITS, &p, sizeof(p), 2), "block") ||
	    !ASSERT_OK(ht_writer_close(w, &tr), "close"))
		goto cleanup;
	if (!ASSERT_OK(ht_reader_open(path, &r, err, sizeof(err)), "read"))
		goto cleanup;
	nseen = blocks = 0;
	ht_reader_set_exits_visitor(r, see_exits, NULL);
	ht_reader_set_exit_causes_visitor(r, see_causes, NULL);
	while (ht_reader_next(r, &rec) == 1)
		;
	if (!ASSERT_FALSE(ht_reader_status(r)->damaged, "read whole") || !ASSERT_EQ(blocks, 1, "one block") ||
	    !ASSERT_EQ(nseen, 2, "its two causes") || !ASSERT_EQ(seen[0].h.count, 10, "count") ||
	    !ASSERT_EQ(seen[1].key.kind, HT_CAUSE_OTHER, "other"))
		goto cleanup;
	ht_reader_close(r);
	r = NULL;

	if (!ASSERT_OK(ht_writer_open(path, true, &hdr, &w, err, sizeof(err)), "open") ||
	    !ASSERT_OK(ht_writer_add_block(w, HT_BLOCK_EXITS, &old, HT_EXITS_HEADER_V5_SIZE, 0), "block") ||
	    !ASSERT_OK(ht_writer_close(w, &tr), "close"))
		goto cleanup;
	f = fopen(path, "r+");
	if (!ASSERT_OK_PTR(f, "reopen"))
		goto cleanup;
	got = fread(&hdr, sizeof(hdr), 1, f);
	hdr.version = 5;
	hdr.header_crc32 = ht_crc32(0, &hdr, offsetof(struct ht_file_header, header_crc32));
	rewind(f);
	put = fwrite(&hdr, sizeof(hdr), 1, f);
	fclose(f);
	if (!ASSERT_EQ(got + put, 2, "patched") || !ASSERT_OK(ht_reader_open(path, &r, err, sizeof(err)), "read"))
		goto cleanup;
	nseen = blocks = 0;
	ht_reader_set_exits_visitor(r, see_exits, NULL);
	ht_reader_set_exit_causes_visitor(r, see_causes, NULL);
	while (ht_reader_next(r, &rec) == 1)
		;
	if (ASSERT_FALSE(ht_reader_status(r)->damaged, "read whole") && ASSERT_EQ(blocks, 1, "one block"))
		ASSERT_EQ(nseen, 0, "no causes in version 5");
cleanup:
	ht_reader_close(r);
	unlink(path);
}

/*
 * A version 7 block's header counts the cause events that were no exit's
 * cause (causes_not_theirs); a version 6 file's header is 56 bytes, its
 * causes follow it there, and it counts none.
 */
static void version_7_headers_count_what_was_no_cause_and_version_6_none(void)
{
	char path[] = "/tmp/ht-causes-XXXXXX";
	int fd = mkstemp(path);
	struct {
		struct ht_exits_header h;
		struct ht_exit_cause_rec c;
	} p = { .h = { .time_ns = 2000, .ncauses = 1, .lost_causes = 3, .causes_not_theirs = 4 } };
	struct ht_file_header hdr;
	struct ht_trailer tr = { 0 };
	struct ht_writer *w = NULL;
	struct ht_reader *r = NULL;
	struct ht_record rec;
	size_t got, put;
	char err[256];
	FILE *f;

	if (!ASSERT_GE(fd, 0, "mkstemp"))
		return;
	close(fd);
	p.c = (struct ht_exit_cause_rec){ .key = key_of(7, VMX_IO, HT_CAUSE_PIO, 0x80, 1 | 1 << 8),
					  .h = hist_of(10, 400, 10, 300000) };
	ht_header_init(&hdr);
	hdr.start_monotonic_ns = 1000;
	if (!ASSERT_OK(ht_writer_open(path, true, &hdr, &w, err, sizeof(err)), "open") ||
	    !ASSERT_OK(ht_writer_add_block(w, HT_BLOCK_EXITS, &p, sizeof(p), 1), "block") ||
	    !ASSERT_OK(ht_writer_close(w, &tr), "close") || !ASSERT_OK(ht_reader_open(path, &r, err, sizeof(err)), "read"))
		goto cleanup;
	nseen = blocks = 0;
	ht_reader_set_exits_visitor(r, see_exits, NULL);
	ht_reader_set_exit_causes_visitor(r, see_causes, NULL);
	while (ht_reader_next(r, &rec) == 1)
		;
	if (!ASSERT_FALSE(ht_reader_status(r)->damaged, "read whole") || !ASSERT_EQ(blocks, 1, "one block") ||
	    !ASSERT_EQ(seen_header.lost_causes, 3, "lost") || !ASSERT_EQ(seen_header.causes_not_theirs, 4, "not theirs") ||
	    !ASSERT_EQ(nseen, 1, "its cause"))
		goto cleanup;
	ht_reader_close(r);
	r = NULL;

	/* Version 6: the cause right after a 56-byte header. */
	memmove((char *)&p + HT_EXITS_HEADER_V6_SIZE, &p.c, sizeof(p.c));
	if (!ASSERT_OK(ht_writer_open(path, true, &hdr, &w, err, sizeof(err)), "open") ||
	    !ASSERT_OK(ht_writer_add_block(w, HT_BLOCK_EXITS, &p, HT_EXITS_HEADER_V6_SIZE + sizeof(p.c), 1), "block") ||
	    !ASSERT_OK(ht_writer_close(w, &tr), "close"))
		goto cleanup;
	f = fopen(path, "r+");
	if (!ASSERT_OK_PTR(f, "reopen"))
		goto cleanup;
	got = fread(&hdr, sizeof(hdr), 1, f);
	hdr.version = 6;
	hdr.header_crc32 = ht_crc32(0, &hdr, offsetof(struct ht_file_header, header_crc32));
	rewind(f);
	put = fwrite(&hdr, sizeof(hdr), 1, f);
	fclose(f);
	if (!ASSERT_EQ(got + put, 2, "patched") || !ASSERT_OK(ht_reader_open(path, &r, err, sizeof(err)), "read"))
		goto cleanup;
	nseen = blocks = 0;
	memset(&seen_header, 0xff, sizeof(seen_header));
	ht_reader_set_exits_visitor(r, see_exits, NULL);
	ht_reader_set_exit_causes_visitor(r, see_causes, NULL);
	while (ht_reader_next(r, &rec) == 1)
		;
	if (ASSERT_FALSE(ht_reader_status(r)->damaged, "read whole") && ASSERT_EQ(blocks, 1, "one block") &&
	    ASSERT_EQ(seen_header.lost_causes, 3, "lost") && ASSERT_EQ(seen_header.causes_not_theirs, 0, "none counted") &&
	    ASSERT_EQ(nseen, 1, "its cause"))
		ASSERT_EQ(seen[0].h.count, 10, "the cause as written");
cleanup:
	ht_reader_close(r);
	unlink(path);
}

/*
 * report's text says how many cause events were seen during exits whose
 * cause they cannot be, and marks a row a format 6 recording took for its
 * exit's cause though its kind cannot be (a CPUID leaf under an I/O exit).
 */
static void report_text_tells_what_was_no_cause(void)
{
	struct ht_exit_view_opts o = { .elapsed_ns = 2000000000, .width = 200 };
	struct ht_exit_table t;
	struct ht_exit_cause_key port = key_of(7, VMX_IO, HT_CAUSE_PIO, 0x80, 1 | 1 << 8);
	struct ht_exit_cause_key leaf = key_of(7, VMX_IO, HT_CAUSE_CPUID, 0, 0);
	struct ht_exit_cause_hist h = hist_of(40, 600, 0, 0);
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	int ret;

	ht_exit_table_init(&t);
	t.causes.not_theirs = 5;
	if (!ASSERT_OK(ht_exit_causes_set(&t.causes, &port, &h), "cause") ||
	    !ASSERT_OK(ht_exit_causes_set(&t.causes, &leaf, &h), "cause"))
		goto cleanup;
	f = open_memstream(&text, &len);
	ret = ht_exit_causes_view_write(f, &t, &o);
	fclose(f);
	if (!ASSERT_OK(ret, "write") ||
	    !ASSERT_MSG(strstr(text, "\n5 seen during an exit, not its cause (KVM's own lookups)") != NULL, "%s", text) ||
	    !ASSERT_MSG(strstr(text, "    cpuid 0x0.0 *  ") != NULL, "the leaf marked: %s", text) ||
	    !ASSERT_MSG(strstr(text, "    io 0x80 out 1   ") != NULL, "the port unmarked: %s", text))
		goto cleanup;
	ASSERT_MSG(strstr(text, "\n* seen during the exit, not its cause") != NULL, "the mark explained: %s", text);
cleanup:
	free(text);
	ht_exit_table_free(&t);
}

/* What promtool says of an exposition text: 0 if it finds nothing wrong, 1 if it does, -1 without promtool. */
static int promtool_check(const char *text)
{
	if (system("command -v promtool >/dev/null 2>&1"))
		return -1;
	FILE *p = popen("promtool check metrics >/dev/null 2>&1", "w");
	if (!p)
		return -1;
	fputs(text, p);
	return pclose(p) == 0 ? 0 : 1;
}

/*
 * Metrics: the causes as two histograms per (vm, reason, cause), buckets
 * cumulative up to +Inf = count, sums in seconds, and the counters of what
 * was lost or refused; promtool finds nothing to say of them.
 */
static void metrics_are_bounded_histograms_per_cause(void)
{
	struct ht_metrics_registry r;
	struct ht_exit_table t;
	struct ht_exit_cause_key k = key_of(7, VMX_IO, HT_CAUSE_PIO, 0x80, 1 | 1 << 8);
	struct ht_exit_cause_hist h = hist_of(10, 400, 4, 300000);
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	int ret, pt;

	ht_exit_table_init(&t);
	if (!ASSERT_OK(ht_metrics_registry_init(&r, 0), "init"))
		goto cleanup_table;
	r.version = "test";
	r.mode = "file";
	if (!ASSERT_OK(ht_metrics_registry_enable_exits(&r, false), "exits") ||
	    !ASSERT_OK(ht_exit_causes_set(&t.causes, &k, &h), "cause"))
		goto cleanup;
	t.causes.lost = 2;
	t.causes.not_theirs = 6;
	t.share_series_over = 3;
	t.share_causes_over = 5;
	t.share_threads_over = 4;
	ht_metrics_set_exits(&r, &t, NULL, NULL);
	f = open_memstream(&text, &len);
	ret = ht_metrics_render(&r, f);
	fclose(f);
	if (!ASSERT_OK(ret, "render"))
		goto cleanup;
	if (!ASSERT_MSG(strstr(text, "hypertrace_exit_cause_kvm_seconds_bucket{vm=\"pid 7\",reason=\"IO_INSTRUCTION\",cause=\"io 0x80 out 1\",le=\"0.000000255\"} 0\n") &&
				strstr(text, "hypertrace_exit_cause_kvm_seconds_bucket{vm=\"pid 7\",reason=\"IO_INSTRUCTION\",cause=\"io 0x80 out 1\",le=\"0.000000511\"} 10\n") &&
				strstr(text, "hypertrace_exit_cause_kvm_seconds_sum{vm=\"pid 7\",reason=\"IO_INSTRUCTION\",cause=\"io 0x80 out 1\"} 0.000004\n") &&
				strstr(text, "hypertrace_exit_cause_vmm_seconds_count{vm=\"pid 7\",reason=\"IO_INSTRUCTION\",cause=\"io 0x80 out 1\"} 4\n") &&
				strstr(text, "hypertrace_exit_cause_vmm_seconds_sum{vm=\"pid 7\",reason=\"IO_INSTRUCTION\",cause=\"io 0x80 out 1\"} 0.0012\n") &&
				strstr(text, "hypertrace_exit_causes_lost_total 2\n") &&
				strstr(text, "hypertrace_exit_causes_not_theirs_total 6\n") &&
				strstr(text, "hypertrace_exit_share_refused_exits_total{table=\"series\"} 3\n") &&
				strstr(text, "hypertrace_exit_share_refused_exits_total{table=\"causes\"} 5\n") &&
				strstr(text, "hypertrace_exit_share_refused_exits_total{table=\"threads\"} 4\n") &&
				strstr(text, "hypertrace_exit_cause_metrics_vm_overflow_exits_total 0\n"),
			"%s", strstr(text, "hypertrace_exit_cause") ? strstr(text, "hypertrace_exit_cause") : text))
		goto cleanup;
	pt = promtool_check(text);
	if (pt < 0)
		printf("    (promtool not installed: its check skipped)\n");
	else
		ASSERT_EQ(pt, 0, "promtool check metrics");
cleanup:
	free(text);
	ht_metrics_registry_free(&r);
cleanup_table:
	ht_exit_table_free(&t);
}

/* The label sets of VM label vm in r's cause metrics: their number, and the exits of its own "other" set. */
static size_t sets_of(const struct ht_metrics_registry *r, const char *vm, uint64_t *other_exits)
{
	const struct ht_metrics_causes *c = &r->exits.causes;
	size_t n = 0;

	*other_exits = 0;
	for (size_t i = 0; i < c->n; i++) {
		if (strcmp(c->sets[i].vm, vm))
			continue;
		n++;
		if (!strcmp(c->sets[i].reason, "other") && !strcmp(c->sets[i].cause, "other"))
			*other_exits = c->sets[i].count;
	}
	return n;
}

/*
 * Four VMs with every cause BPF lets them name (8 reasons x 17) before a
 * fifth, an ordinary one (6 reasons x 17): each has its share of the
 * label sets, the fifth all of its causes; the four's causes past their
 * share are in their own "other" set, counted, and none in anyone else's.
 */
static void a_vms_cause_sets_beyond_its_share_go_to_its_own_other(void)
{
	const unsigned int hostile = HT_METRICS_MAX_CAUSE_SETS / HT_METRICS_CAUSE_SETS_PER_VM - 1;
	struct ht_metrics_registry r;
	struct ht_exit_table t;
	struct ht_exit_cause_hist h = hist_of(2, 400, 0, 0);
	uint64_t other;
	size_t bad = 0;
	char vm[32];
	int ret = 0;

	ht_exit_table_init(&t);
	if (!ASSERT_OK(ht_metrics_registry_init(&r, 0), "init"))
		goto cleanup_table;
	r.version = "test";
	r.mode = "file";
	if (!ASSERT_OK(ht_metrics_registry_enable_exits(&r, false), "exits"))
		goto cleanup;
	for (uint32_t pid = 1; pid <= hostile + 1 && !ret; pid++)
		for (uint32_t reason = 1; reason <= (pid <= hostile ? 8u : 6u) && !ret; reason++)
			for (uint64_t port = 0; port < HT_EXIT_CAUSES_PER_REASON + 1 && !ret; port++) {
				struct ht_exit_cause_key k = key_of(pid, reason, HT_CAUSE_PIO, 0x100 + port, 1 << 8);

				ret = ht_exit_causes_set(&t.causes, &k, &h);
			}
	if (!ASSERT_OK(ret, "causes"))
		goto cleanup;
	ht_metrics_set_exits(&r, &t, NULL, NULL);
	for (uint32_t pid = 1; pid <= hostile; pid++) {
		snprintf(vm, sizeof(vm), "pid %u", pid);
		/* 136 causes: 127 sets of their own, 9 in the VM's "other". */
		bad += sets_of(&r, vm, &other) != HT_METRICS_CAUSE_SETS_PER_VM ||
		       other != 2 * (8 * (HT_EXIT_CAUSES_PER_REASON + 1) - (HT_METRICS_CAUSE_SETS_PER_VM - 1));
	}
	if (!ASSERT_EQ(bad, 0, "VMs not held to their share"))
		goto cleanup;
	snprintf(vm, sizeof(vm), "pid %u", hostile + 1);
	if (!ASSERT_EQ(sets_of(&r, vm, &other), 6 * (HT_EXIT_CAUSES_PER_REASON + 1), "the fifth VM's sets") ||
	    !ASSERT_EQ(other, 0, "the fifth VM's other"))
		goto cleanup;
	if (ASSERT_EQ(r.exits.causes.overflow_exits, 0, "nothing in everyone's other"))
		ASSERT_EQ(r.exits.causes.vm_overflow_exits, hostile * 2 * 9, "the VMs' excess");
cleanup:
	ht_metrics_registry_free(&r);
cleanup_table:
	ht_exit_table_free(&t);
}

int main(void)
{
	RUN(each_kind_is_named_as_every_output_writes_it);
	RUN(an_interval_is_the_difference_of_two_reads);
	RUN(thousands_of_causes_are_found_by_their_keys);
	RUN(a_cause_in_one_line);
	RUN(top_shows_the_busiest_causes_under_their_reason);
	RUN(report_text_per_vm_and_reason);
	RUN(version_6_blocks_carry_causes_and_version_5_none);
	RUN(version_7_headers_count_what_was_no_cause_and_version_6_none);
	RUN(report_text_tells_what_was_no_cause);
	RUN(metrics_are_bounded_histograms_per_cause);
	RUN(a_vms_cause_sets_beyond_its_share_go_to_its_own_other);
	return ht_test_exit_status();
}
