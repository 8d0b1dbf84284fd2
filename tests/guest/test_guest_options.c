// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit tests of the two option parsers: defaults, every option's effect and
 * the one-line messages. The shell suites check the binaries' exit statuses.
 */
#include <string.h>

#include "hypercall_options.h"
#include "minivm_options.h"
#include "test.h"

/* Parses "prog ARGS..." with argc counted from the list. */
#define ARGS(...) (char *[]){ "prog", __VA_ARGS__, NULL }, \
	(int)(sizeof((char *[]){ "prog", __VA_ARGS__ }) / sizeof(char *))

static char err[256];

static int parse_hc(char **argv, int argc, struct hypercall_options *o)
{
	err[0] = '\0';
	return hypercall_options_parse(argc, argv, o, err, sizeof(err));
}

static int parse_mv(char **argv, int argc, struct minivm_options *o)
{
	err[0] = '\0';
	return minivm_options_parse(argc, argv, o, err, sizeof(err));
}

static void test_hypercall_defaults(void)
{
	struct hypercall_options o;
	char *argv[] = { "prog", NULL };

	CHECK(parse_hc(argv, 1, &o) == 0, "%s", err);
	CHECK(o.nr == 1000 && o.count == 1 && !o.a0_fixed && o.a1 == 0 && o.a2 == 0 && o.a3 == 0,
	      "defaults wrong");
	CHECK(o.rate == 0 && o.insn == HYPERCALL_INSN_UNKNOWN && !o.help, "defaults wrong");
}

static void test_hypercall_every_option(void)
{
	struct hypercall_options o;

	CHECK(parse_hc(ARGS("-N", "5", "--nr", "0x3e9", "--a0", "7", "--a1", "0xffffffffffffffff",
			    "--a2", "2", "--a3", "3", "--rate", "100", "--insn", "vmmcall", "--snapshot", "/proc/stat"),
		       &o) == 0,
	      "%s", err);
	CHECK(o.count == 5 && o.nr == 0x3e9 && o.a0_fixed && o.a0 == 7, "count/nr/a0 wrong");
	CHECK(o.snapshot && !strcmp(o.snapshot, "/proc/stat"), "--snapshot wrong");
	CHECK(o.a1 == UINT64_MAX && o.a2 == 2 && o.a3 == 3 && o.rate == 100, "a1..a3/rate wrong");
	CHECK(o.insn == HYPERCALL_INSN_VMMCALL, "insn wrong");
	CHECK(parse_hc(ARGS("--count=7", "--help"), &o) == 0 && o.count == 7 && o.help, "--count= / --help");
}

static void test_hypercall_text_marker(void)
{
	struct hypercall_options o;

	CHECK(parse_hc(ARGS("--nr", "1201", "--text", "boot done"), &o) == 0, "%s", err);
	/* "boot don" then "e": the bytes in memory order, as include/hypertrace/guest.h packs them. */
	CHECK(o.a0_fixed && o.a0 == 0x6e6f6420746f6f62ull && o.a1 == 0x65 && o.a2 == 0 && o.a3 == 0,
	      "a0=0x%llx a1=0x%llx", (unsigned long long)o.a0, (unsigned long long)o.a1);
	CHECK(parse_hc(ARGS("--text", "x", "--a1", "1"), &o) < 0 && strstr(err, "--text fills a0..a3: drop --a0..--a3"),
	      "%s", err);
	CHECK(parse_hc(ARGS("--text", "0123456789abcdef0123456789abcdefX"), &o) < 0 &&
		      strstr(err, "--text is 33 bytes: at most 32"), "%s", err);
}

/* --timer-lateness: with --rate only, and a1 and a2 are its own. */
static void test_hypercall_timer_lateness(void)
{
	struct hypercall_options o;

	CHECK(parse_hc(ARGS("--rate", "200", "--timer-lateness", "--a0", "7"), &o) == 0 && o.timer_lateness &&
		      o.rate == 200 && o.a0 == 7,
	      "%s", err);
	CHECK(parse_hc(ARGS("--timer-lateness"), &o) < 0 && strstr(err, "--timer-lateness times sleeps to each call's deadline: add --rate"),
	      "%s", err);
	CHECK(parse_hc(ARGS("--rate", "10", "--timer-lateness", "--a1", "1"), &o) < 0 &&
		      strstr(err, "--timer-lateness fills a1 and a2"),
	      "%s", err);
	CHECK(parse_hc(ARGS("--rate", "10", "--timer-lateness", "--text", "x"), &o) < 0 &&
		      strstr(err, "--timer-lateness fills a1 and a2"),
	      "%s", err);
}

static void test_hypercall_errors(void)
{
	struct hypercall_options o;

	CHECK(parse_hc(ARGS("-N", "12abc"), &o) < 0, "12abc accepted");
	CHECK(strstr(err, "--count '12abc'") && strstr(err, "see --help"), "message: %s", err);
	CHECK(parse_hc(ARGS("--nr"), &o) < 0 && strstr(err, "option '--nr' needs a value"), "%s", err);
	CHECK(parse_hc(ARGS("--wat"), &o) < 0 && strstr(err, "unknown option '--wat'"), "%s",
	      err);
	/* The offending letter, not the cluster it came in; the host's wording. */
	CHECK(parse_hc(ARGS("-hx"), &o) < 0 && strstr(err, "unknown option '-x'; see --help"), "%s", err);
	CHECK(parse_hc(ARGS("-hn"), &o) < 0 && strstr(err, "option '-n' needs a value; see --help"), "%s", err);
	CHECK(parse_hc(ARGS("1"), &o) < 0 && strstr(err, "unexpected argument '1'"), "%s", err);
	CHECK(parse_hc(ARGS("--insn", "vmrun"), &o) < 0 && strstr(err, "vmcall or vmmcall"),
	      "%s", err);
	CHECK(!strchr(err, '\n'), "message has a newline");
}

static void test_minivm_defaults(void)
{
	struct minivm_options o;
	char *argv[] = { "prog", NULL };

	CHECK(parse_mv(argv, 1, &o) == 0, "%s", err);
	CHECK(o.vcpus == 1 && o.count == 1000 && o.nr == 1000 && o.other_nr == 1001, "defaults");
	CHECK(o.mix_len == 0 && o.mix_per_call == 1 && o.timeout == 30, "defaults");
	CHECK(strcmp(o.kvm_path, "/dev/kvm") == 0 && o.insn == HYPERCALL_INSN_UNKNOWN, "defaults");
}

static void test_minivm_every_option(void)
{
	struct minivm_options o;

	CHECK(parse_mv(ARGS("--vcpus", "64", "--count", "4294967295", "--nr", "42", "--mix",
			    "other-nr,hlt,io", "--mix-per-call", "10", "--other-nr", "43", "--insn",
			    "vmcall", "--timeout", "5", "--kvm", "/dev/null"),
		       &o) == 0,
	      "%s", err);
	CHECK(o.vcpus == 64 && o.count == UINT32_MAX && o.nr == 42 && o.other_nr == 43, "numbers");
	CHECK(o.mix_len == 3 && o.mix[0] == MINIVM_MIX_OTHER_NR && o.mix[1] == MINIVM_MIX_HLT &&
		      o.mix[2] == MINIVM_MIX_IO,
	      "mix order not kept");
	CHECK(o.mix_per_call == 10 && o.insn == HYPERCALL_INSN_VMCALL && o.timeout == 5, "rest");
	CHECK(strcmp(o.kvm_path, "/dev/null") == 0, "kvm path");
}

static void test_minivm_errors(void)
{
	struct minivm_options o;

	CHECK(parse_mv(ARGS("--vcpus", "65"), &o) < 0 && strstr(err, "from 1 to 64"), "%s", err);
	CHECK(parse_mv(ARGS("--mix", "io,io"), &o) < 0 && strstr(err, "appears twice"), "%s",
	      err);
	CHECK(parse_mv(ARGS("--mix", "io,"), &o) < 0 && strstr(err, "comma-separated"), "%s",
	      err);
	CHECK(parse_mv(ARGS("--mix-per-call", "3"), &o) < 0 && strstr(err, "needs --mix"), "%s",
	      err);
	CHECK(parse_mv(ARGS("--mix", "io", "--other-nr", "5"), &o) < 0 &&
		      strstr(err, "--other-nr needs --mix with other-nr"),
	      "%s", err);
	CHECK(parse_mv(ARGS("--mix", "other-nr", "--nr", "7", "--other-nr", "7"), &o) < 0 &&
		      strstr(err, "equals --nr"),
	      "%s", err);
	CHECK(parse_mv(ARGS("--insn", "vmrun"), &o) < 0 && strstr(err, "invalid --insn 'vmrun': expected vmcall or vmmcall"),
	      "%s", err);
	CHECK(!strchr(err, '\n'), "message has a newline");
}

int main(void)
{
	RUN(test_hypercall_defaults);
	RUN(test_hypercall_every_option);
	RUN(test_hypercall_text_marker);
	RUN(test_hypercall_timer_lateness);
	RUN(test_hypercall_errors);
	RUN(test_minivm_defaults);
	RUN(test_minivm_every_option);
	RUN(test_minivm_errors);
	return ht_test_exit_status();
}
