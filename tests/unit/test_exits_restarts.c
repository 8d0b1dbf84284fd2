// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A pid that comes back as a new process within a recording, through the
 * real writer and reader. EXITS blocks whose keys start again from zero
 * (version 16 on: a recorder forgot an ended VM process's rows): every
 * consumer is handed each key's numbers cumulative since the recording
 * started, across as many restarts as the file holds. BOOT blocks: after
 * a VM's row that says it ended, its pid's lower numbers are a new VM.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "hypertrace/trace_file.h"
#include "test.h"
#include "tracefile/trace_reader.h"
#include "tracefile/trace_writer.h"

#define VMX_IO 30

/* What the reader handed over, block by block: the series of key 7/0 and of 8/0, the cause of 7. */
struct handed {
	struct ht_exit_hist series7[8], series8[8];
	struct ht_exit_cause_hist cause7[8];
	unsigned int blocks;
	bool flags_left; /* a row still carrying HT_EXIT_ROW_F_FROM_ZERO */
};

static struct ht_exit_hist hist_of(__u64 count, int slot, __u64 min_ns, __u64 max_ns, __u64 total_ns)
{
	struct ht_exit_hist h = { .count = count, .total_ns = total_ns, .min_ns = min_ns, .max_ns = max_ns };

	h.slots[slot] = count;
	return h;
}

static struct ht_exit_series_rec series_rec(__u32 pid, bool from_zero, struct ht_exit_hist h)
{
	return (struct ht_exit_series_rec){ .key = { .pid = pid, .isa = HT_ISA_VMX, .reason = VMX_IO },
					    .flags = from_zero ? HT_EXIT_ROW_F_FROM_ZERO : 0, .h = h };
}

static struct ht_exit_cause_rec cause_rec(bool from_zero, __u64 count)
{
	struct ht_exit_cause_rec c = { .key = { .pid = 7, .reason = VMX_IO, .isa = HT_ISA_VMX, .kind = HT_CAUSE_PIO,
						.value = 0x80 },
				       .h = { .count = count, .kvm_ns = 100 * count } };

	c.key.pad = from_zero ? HT_EXIT_ROW_F_FROM_ZERO : 0;
	c.h.kvm_slots[6] = count;
	return c;
}

static void see_exits(void *ctx, const struct ht_exits_header *h, const struct ht_exit_series_rec *s,
		      const struct ht_vcpu_wait_rec *threads)
{
	struct handed *got = ctx;

	(void)threads;
	for (__u32 i = 0; i < h->nseries && got->blocks < 8; i++) {
		got->flags_left |= s[i].flags != 0;
		if (s[i].key.pid == 7)
			got->series7[got->blocks] = s[i].h;
		else
			got->series8[got->blocks] = s[i].h;
	}
	got->blocks++;
}

static void see_causes(void *ctx, const struct ht_exits_header *h, const struct ht_exit_cause_rec *c)
{
	struct handed *got = ctx;

	for (__u32 i = 0; i < h->ncauses && got->blocks >= 1 && got->blocks <= 8; i++) {
		got->flags_left |= c[i].key.pad != 0;
		got->cause7[got->blocks - 1] = c[i].h; /* the causes come after their block's series */
	}
}

/* One EXITS block at time_ns of up to two series and one cause (ncauses 0 or 1). */
static int add_block(struct ht_writer *w, __u64 time_ns, const struct ht_exit_series_rec *series, __u32 nseries,
		     const struct ht_exit_cause_rec *cause)
{
	struct {
		struct ht_exits_header h;
		struct ht_exit_series_rec s[2];
		struct ht_exit_cause_rec c;
	} p = { .h = { .time_ns = time_ns, .nseries = nseries, .ncauses = cause ? 1 : 0 } };
	unsigned char buf[sizeof(p)];
	size_t len = sizeof(p.h) + nseries * sizeof(p.s[0]);

	memcpy(buf, &p.h, sizeof(p.h));
	memcpy(buf + sizeof(p.h), series, nseries * sizeof(*series));
	if (cause) {
		memcpy(buf + len, cause, sizeof(*cause));
		len += sizeof(*cause);
	}
	return ht_writer_add_block(w, HT_BLOCK_EXITS, buf, (__u32)len, nseries + (cause ? 1 : 0));
}

/*
 * Key 7 counts 5, then 7; a new process of pid 7 counts from zero (2, then
 * 3); a third counts 1. The reader hands 5, 7, 9, 10, 11: each restart's
 * numbers on top of everything before, buckets, time, min and max alike.
 * Key 8, new with the flag, is handed as written; so is a cause's restart.
 * Without the restarts the third block would hand 2, fewer than the first.
 */
static void a_key_that_starts_again_from_zero_is_handed_on_top_of_what_it_had(void)
{
	char path[] = "/tmp/ht-restarts-XXXXXX", err[256];
	int fd = mkstemp(path);
	struct ht_exit_series_rec b1[] = { series_rec(7, true, hist_of(5, 10, 1000, 2000, 7000)) };
	struct ht_exit_series_rec b2[] = { series_rec(7, false, hist_of(7, 10, 1000, 2500, 9000)) };
	struct ht_exit_series_rec b3[] = { series_rec(7, true, hist_of(2, 12, 5000, 6000, 11000)),
					   series_rec(8, true, hist_of(1, 3, 8, 8, 8)) };
	struct ht_exit_series_rec b4[] = { series_rec(7, false, hist_of(3, 12, 5000, 6000, 16000)) };
	struct ht_exit_series_rec b5[] = { series_rec(7, true, hist_of(1, 3, 8, 8, 8)) };
	struct ht_exit_cause_rec c1 = cause_rec(true, 4), c3 = cause_rec(true, 1), c4 = cause_rec(false, 2);
	struct ht_file_header hdr;
	struct ht_trailer tr = { 0 };
	struct ht_writer *w = NULL;
	struct ht_reader *r = NULL;
	struct handed *got = calloc(1, sizeof(*got));
	const __u64 want[5] = { 5, 7, 9, 10, 11 };
	const struct ht_exit_hist *h3, *h5;
	struct ht_record rec;

	if (!ASSERT_GE(fd, 0, "mkstemp") || !ASSERT_OK_PTR(got, "memory"))
		goto cleanup;
	close(fd);
	ht_header_init(&hdr);
	hdr.start_monotonic_ns = 1000;
	if (!ASSERT_OK(ht_writer_open(path, true, &hdr, &w, err, sizeof(err)), "open") ||
	    !ASSERT_OK(add_block(w, 2000, b1, 1, &c1), "block 1") || !ASSERT_OK(add_block(w, 3000, b2, 1, NULL), "block 2") ||
	    !ASSERT_OK(add_block(w, 4000, b3, 2, &c3), "block 3") || !ASSERT_OK(add_block(w, 5000, b4, 1, &c4), "block 4") ||
	    !ASSERT_OK(add_block(w, 6000, b5, 1, NULL), "block 5") || !ASSERT_OK(ht_writer_close(w, &tr), "close") ||
	    !ASSERT_OK(ht_reader_open(path, &r, err, sizeof(err)), "read"))
		goto cleanup;
	ht_reader_set_exits_visitor(r, see_exits, got);
	ht_reader_set_exit_causes_visitor(r, see_causes, got);
	while (ht_reader_next(r, &rec) == 1)
		;
	if (!ASSERT_FALSE(ht_reader_status(r)->damaged, "read whole") || !ASSERT_EQ(got->blocks, 5, "blocks") ||
	    !ASSERT_FALSE(got->flags_left, "the flags are the reader's: cleared"))
		goto cleanup;
	for (int b = 0; b < 5; b++)
		if (!ASSERT_MSG(got->series7[b].count == want[b], "block %d: %llu exits, want %llu", b + 1,
				(unsigned long long)got->series7[b].count, (unsigned long long)want[b]))
			goto cleanup;
	h3 = &got->series7[2];
	h5 = &got->series7[4];
	if (!ASSERT_EQ(h3->slots[10], 7, "the first process's buckets") || !ASSERT_EQ(h3->slots[12], 2, "and the second's") ||
	    !ASSERT_EQ(h3->total_ns, 9000 + 11000, "time") || !ASSERT_EQ(h3->min_ns, 1000, "min") ||
	    !ASSERT_EQ(h3->max_ns, 6000, "max") || !ASSERT_EQ(got->series7[3].total_ns, 9000 + 16000, "time after") ||
	    !ASSERT_EQ(h5->slots[3], 1, "the third process's bucket") || !ASSERT_EQ(h5->slots[12], 3, "the second's") ||
	    !ASSERT_EQ(h5->min_ns, 8, "min of all three"))
		goto cleanup;
	if (!ASSERT_EQ(got->series8[2].count, 1, "a new key as written") ||
	    !ASSERT_EQ(got->cause7[0].count, 4, "a cause") || !ASSERT_EQ(got->cause7[2].count, 4 + 1, "its restart") ||
	    !ASSERT_EQ(got->cause7[3].count, 4 + 2, "and after") || !ASSERT_EQ(got->cause7[3].kvm_slots[6], 6, "its buckets"))
		goto cleanup;
cleanup:
	ht_reader_close(r);
	free(got);
	unlink(path);
}

/* A file of BOOT blocks, each of one VM's row; 0 and the reader, or -1. */
static int boot_file(char *path, const struct ht_boot_vm_rec *rows, size_t n, struct ht_reader **r)
{
	struct ht_file_header hdr;
	struct ht_trailer tr = { 0 };
	struct ht_writer *w = NULL;
	struct ht_record rec;
	char err[256];

	ht_header_init(&hdr);
	if (ht_writer_open(path, true, &hdr, &w, err, sizeof(err)))
		return -1;
	for (size_t i = 0; i < n; i++)
		if (ht_writer_add_block(w, HT_BLOCK_BOOT, &rows[i], sizeof(rows[i]), 1)) {
			ht_writer_abandon(w);
			return -1;
		}
	if (ht_writer_close(w, &tr) || ht_reader_open(path, r, err, sizeof(err)))
		return -1;
	while (ht_reader_next(*r, &rec) == 1)
		;
	return 0;
}

/*
 * A booting VM's pid that comes back after the row that said it ended is
 * a new VM, with its own numbers: the file reads whole, both VMs listed.
 * Lower numbers of a VM that has not ended are still a damaged file.
 */
static void a_booting_vms_pid_that_comes_back_after_its_end_is_a_new_vm(void)
{
	char path[] = "/tmp/ht-restarts-XXXXXX";
	int fd = mkstemp(path);
	const struct ht_boot_vm_rec came_back[] = {
		{ .pid = 7, .vm = { .first_ns = 100, .recorded = 5 } },
		{ .pid = 7, .flags = HT_BOOT_VM_F_ENDED, .vm = { .first_ns = 100, .recorded = 6 } },
		{ .pid = 7, .vm = { .first_ns = 900, .recorded = 2 } },
	};
	const struct ht_boot_vm_rec went_down[] = {
		{ .pid = 7, .vm = { .first_ns = 100, .recorded = 5 } },
		{ .pid = 7, .vm = { .first_ns = 100, .recorded = 2 } },
	};
	const struct ht_boot_vm_rec *vms;
	struct ht_reader *r = NULL;
	size_t n = 0;

	if (!ASSERT_GE(fd, 0, "mkstemp"))
		return;
	close(fd);
	if (!ASSERT_OK(boot_file(path, came_back, 3, &r), "a pid that came back"))
		goto cleanup;
	vms = ht_reader_boot_vms(r, &n);
	if (!ASSERT_MSG(!ht_reader_status(r)->damaged, "read whole: %s", ht_reader_status(r)->reason) ||
	    !ASSERT_EQ(n, 2, "two VMs") || !ASSERT_EQ(vms[0].vm.recorded, 6, "the ended one's last numbers") ||
	    !ASSERT_EQ(vms[1].vm.recorded, 2, "the new one's") || !ASSERT_EQ(vms[1].vm.first_ns, 900, "its start"))
		goto cleanup;
	ht_reader_close(r);
	r = NULL;
	if (ASSERT_OK(boot_file(path, went_down, 2, &r), "numbers that went down"))
		ASSERT_TRUE(ht_reader_status(r)->damaged, "a damaged file");
cleanup:
	ht_reader_close(r);
	unlink(path);
}

int main(void)
{
	RUN(a_key_that_starts_again_from_zero_is_handed_on_top_of_what_it_had);
	RUN(a_booting_vms_pid_that_comes_back_after_its_end_is_a_new_vm);
	return ht_test_exit_status();
}
