// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Option values are parsed strictly: the whole string, in range, or refused. */
#include <stdint.h>
#include <bpf/libbpf.h>
#include "parse.h"
#include "record/record_options.h"
#include "common/util.h"
#include "test.h"

static void integers_are_whole_and_in_range(void)
{
	uint64_t v;

	CHECK(ht_parse_u64("1000", 0, UINT32_MAX, &v) && v == 1000, "1000");
	CHECK(ht_parse_u64("0x81", 0, UINT32_MAX, &v) && v == 0x81, "0x81");
	CHECK(ht_parse_u64("4294967295", 0, UINT32_MAX, &v) && v == 4294967295u, "max");
	CHECK(!ht_parse_u64("4294967296", 0, UINT32_MAX, &v), "over max");
	CHECK(!ht_parse_u64("12abc", 0, UINT32_MAX, &v), "trailing junk");
	CHECK(!ht_parse_u64("-1", 0, UINT32_MAX, &v), "negative");
	CHECK(!ht_parse_u64(" 1", 0, UINT32_MAX, &v), "leading blank");
	CHECK(!ht_parse_u64("", 0, UINT32_MAX, &v), "empty");
	CHECK(!ht_parse_u64("99999999999999999999999", 0, UINT64_MAX, &v), "overflow");
}

/* The guest program reads "010" as ten (common/parse_number.c): the host must trace that nr. */
static void a_leading_zero_is_decimal_as_in_the_guest(void)
{
	uint64_t v;

	CHECK(ht_parse_u64("010", 0, UINT32_MAX, &v) && v == 10, "010 is ten");
	CHECK(ht_parse_u64("0", 0, UINT32_MAX, &v) && v == 0, "0");
	CHECK(ht_parse_u64("0x010", 0, UINT32_MAX, &v) && v == 16, "0x010 is sixteen");
}

static void record_nr_010_selects_nr_10(void)
{
	char *argv[] = { "record", "--nr", "010", "--nr", "0x3e9", NULL };
	struct ht_record_config cfg;

	CHECK(ht_record_parse(5, argv, &cfg) == -1, "options accepted");
	CHECK(cfg.filters.nr_count == 2 && cfg.filters.nr[0] == 10 && cfg.filters.nr[1] == 1001,
	      "nr %u, %u (count %u)", cfg.filters.nr[0], cfg.filters.nr[1], cfg.filters.nr_count);
}

/* A range FIRST-LAST is each nr in it, beside single ones, up to 8 in all. */
static void record_nr_range_selects_each_nr_in_it(void)
{
	char *argv[] = { "record", "--nr", "1150-1152", "--nr", "1000", "--nr", "0x3e8-1003", NULL };
	char *over[] = { "record", "--nr", "1-5", "--nr", "10-13", NULL };
	char *same[] = { "record", "--nr", "7-7", NULL };
	struct ht_record_config cfg;

	CHECK(ht_record_parse(7, argv, &cfg) == -1, "options accepted");
	CHECK(cfg.filters.nr_count == 8 && cfg.filters.nr[0] == 1150 && cfg.filters.nr[2] == 1152 &&
		      cfg.filters.nr[3] == 1000 && cfg.filters.nr[4] == 1000 && cfg.filters.nr[7] == 1003,
	      "count %u", cfg.filters.nr_count);
	CHECK(ht_record_parse(5, over, &cfg) == 2, "9 nr accepted");
	CHECK(ht_record_parse(3, same, &cfg) == -1 && cfg.filters.nr_count == 1 && cfg.filters.nr[0] == 7, "7-7");
}

/*
 * The ring buffer's default: 4 MiB a ring (a ring per CPU, their count a
 * power of two), 64 MiB at most; -b replaces it whole.
 */
static void ring_memory_is_4m_a_ring_by_default_and_64m_at_most(void)
{
	static const struct {
		unsigned int cpus;
		unsigned long bytes;
	} want[] = { { 1, 4ul << 20 }, { 2, 8ul << 20 }, { 3, 16ul << 20 }, { 16, 64ul << 20 },
		     { 17, 64ul << 20 }, { 64, 64ul << 20 }, { 4096, 64ul << 20 } };
	char *argv[] = { "record", NULL };
	char *given[] = { "record", "-b", "256M", NULL };
	struct ht_record_config cfg;
	int cpus = libbpf_num_possible_cpus();

	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		CHECK(ht_default_ringbuf_bytes(want[i].cpus) == want[i].bytes, "%u CPUs: %lu bytes, want %lu",
		      want[i].cpus, ht_default_ringbuf_bytes(want[i].cpus), want[i].bytes);
	/* Each ring gets its 4 MiB of the default. */
	for (unsigned int c = 1; c <= 16; c++)
		CHECK(ht_ring_bytes_for(ht_default_ringbuf_bytes(c), ht_rings_for(c)) == HT_DEFAULT_RING_BYTES,
		      "%u CPUs: %lu a ring", c, ht_ring_bytes_for(ht_default_ringbuf_bytes(c), ht_rings_for(c)));
	CHECK(cpus > 0, "possible CPUs: %d", cpus);
	CHECK(ht_record_parse(1, argv, &cfg) == -1 && cfg.ringbuf_bytes == ht_default_ringbuf_bytes((unsigned int)cpus),
	      "this host's default %lu", cfg.ringbuf_bytes);
	CHECK(ht_record_parse(3, given, &cfg) == -1 && cfg.ringbuf_bytes == 256ul << 20, "-b 256M: %lu", cfg.ringbuf_bytes);
}

/*
 * --exits' vCPU thread tables: 64 entries a possible CPU by default, a
 * power of two from 256 to 8192; --vcpu-threads N is rounded up the same
 * way, needs --exits, and is refused outside 1..8192 (usage error, 2).
 */
static void vcpu_threads_are_64_a_cpu_a_power_of_two_from_256_to_8192(void)
{
	static const struct {
		unsigned int cpus, threads;
	} want[] = { { 1, 256 }, { 4, 256 }, { 5, 512 }, { 8, 512 }, { 9, 1024 },
		     { 64, 4096 }, { 128, 8192 }, { 129, 8192 }, { 4096, 8192 } };
	char *asked[] = { "record", "--exits", "--vcpu-threads", "300", NULL };
	char *alone[] = { "record", "--vcpu-threads", "300", NULL };
	char *zero[] = { "record", "--exits", "--vcpu-threads", "0", NULL };
	char *over[] = { "record", "--exits", "--vcpu-threads", "8193", NULL };
	struct ht_record_config cfg;

	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		CHECK(ht_vcpu_threads_for(want[i].cpus) == want[i].threads, "%u CPUs: %u threads, want %u",
		      want[i].cpus, ht_vcpu_threads_for(want[i].cpus), want[i].threads);
	CHECK(ht_vcpu_threads_round(1) == 256 && ht_vcpu_threads_round(300) == 512 &&
		      ht_vcpu_threads_round(4096) == 4096 && ht_vcpu_threads_round(8192) == 8192,
	      "rounded: %u %u %u %u", ht_vcpu_threads_round(1), ht_vcpu_threads_round(300),
	      ht_vcpu_threads_round(4096), ht_vcpu_threads_round(8192));
	CHECK(ht_record_parse(4, asked, &cfg) == -1 && cfg.vcpu_threads == 300, "--vcpu-threads 300: %u",
	      cfg.vcpu_threads);
	CHECK(ht_record_parse(3, alone, &cfg) == 2, "--vcpu-threads without --exits accepted");
	CHECK(ht_record_parse(4, zero, &cfg) == 2, "--vcpu-threads 0 accepted");
	CHECK(ht_record_parse(4, over, &cfg) == 2, "--vcpu-threads 8193 accepted");
}

static void seconds_allow_decimals_only_when_finite_and_positive(void)
{
	double d;

	CHECK(ht_parse_seconds("1", 100, &d) && d == 1.0, "1");
	CHECK(ht_parse_seconds("0.25", 100, &d) && d == 0.25, "0.25");
	CHECK(!ht_parse_seconds("-1", 100, &d), "negative");
	CHECK(!ht_parse_seconds("1s", 100, &d), "unit suffix");
	CHECK(!ht_parse_seconds("inf", 100, &d), "inf");
	CHECK(!ht_parse_seconds("nan", 100, &d), "nan");
	CHECK(!ht_parse_seconds("101", 100, &d), "over max");
}

static void sizes_take_binary_suffixes(void)
{
	uint64_t v;

	CHECK(ht_parse_size("4096", &v) && v == 4096, "plain");
	CHECK(ht_parse_size("16M", &v) && v == 16u << 20, "16M");
	CHECK(ht_parse_size("64k", &v) && v == 64u << 10, "64k");
	CHECK(ht_parse_size("1G", &v) && v == 1u << 30, "1G");
	CHECK(!ht_parse_size("M", &v), "suffix only");
	CHECK(!ht_parse_size("16MB", &v), "two-letter suffix");
	CHECK(!ht_parse_size("17179869184G", &v), "overflow");
}

static void modes_are_octal_private_enough_and_not_executable(void)
{
	static const struct { const char *s; unsigned int want; } ok[] = {
		{ "0600", 0600 }, { "640", 0640 }, { "0644", 0644 }, { "0660", 0660 }, { "0", 0 }, { "0400", 0400 },
	};
	static const char *const refused[] = { "0666", "0777", "0700", "0755", "0602", "0601", "0010" };
	static const char *const malformed[] = { "", "0999", "07777", "0644x", "-644", "0x1a4" };
	unsigned int m;
	char err[256];

	for (size_t i = 0; i < ARRAY_SIZE(ok); i++)
		CHECK(ht_parse_mode(ok[i].s, &m, err, sizeof(err)) && m == ok[i].want, "%s: %s", ok[i].s, err);
	for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
		CHECK(!ht_parse_mode(refused[i], &m, err, sizeof(err)), "%s accepted", refused[i]);
		CHECK(strstr(err, "refused bits"), "%s: %s", refused[i], err);
	}
	for (size_t i = 0; i < ARRAY_SIZE(malformed); i++) {
		CHECK(!ht_parse_mode(malformed[i], &m, err, sizeof(err)), "%s accepted", malformed[i]);
		CHECK(strstr(err, "expected an octal file mode"), "%s: %s", malformed[i], err);
	}
	CHECK(ht_parse_mode("0777", &m, err, sizeof(err)) == false &&
	      strstr(err, "refused bits 0002 (writable by every user: anyone could alter the file) and 0111 (executable"),
	      "%s", err);
}

/* --vm-user: a uid as it is, a name from /etc/passwd (root is 0 on every system). */
static void users_are_uids_or_names_of_etc_passwd(void)
{
	static const char *const bad[] = { "", "-1", "4294967295", "no-such-user-here", "root ", "12x" };
	uid_t uid = 1;

	CHECK(ht_parse_user("1000", &uid) && uid == 1000, "1000: %u", (unsigned int)uid);
	CHECK(ht_parse_user("0", &uid) && uid == 0, "0: %u", (unsigned int)uid);
	uid = 1;
	CHECK(ht_parse_user("root", &uid) && uid == 0, "root: %u", (unsigned int)uid);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK(!ht_parse_user(bad[i], &uid), "'%s' accepted", bad[i]);
}

int main(void)
{
	RUN(integers_are_whole_and_in_range);
	RUN(a_leading_zero_is_decimal_as_in_the_guest);
	RUN(record_nr_010_selects_nr_10);
	RUN(record_nr_range_selects_each_nr_in_it);
	RUN(ring_memory_is_4m_a_ring_by_default_and_64m_at_most);
	RUN(vcpu_threads_are_64_a_cpu_a_power_of_two_from_256_to_8192);
	RUN(seconds_allow_decimals_only_when_finite_and_positive);
	RUN(sizes_take_binary_suffixes);
	RUN(modes_are_octal_private_enough_and_not_executable);
	RUN(users_are_uids_or_names_of_etc_passwd);
	return ht_test_exit_status();
}
