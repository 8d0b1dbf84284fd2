// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "hypercall_options.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "common/option_error.h"
#include "common/parse_number.h"
#include "hypertrace/guest.h"

const char hypercall_usage[] =
	"Usage: hypercall [OPTIONS]\n"
	"Issues KVM hypercalls from user space in a Linux KVM guest and times each round trip.\n"
	"\n"
	"  -N, --count COUNT   hypercalls to issue (default 1, at most 10000000)\n"
	"  -n, --nr N          hypercall number, in RAX (default 1000, unused by KVM)\n"
	"      --a0 VALUE      fix a0 (RBX); default: the sequence number 0, 1, 2, ...\n"
	"      --a1 VALUE      a1, in RCX (default 0)\n"
	"      --a2 VALUE      a2, in RDX (default 0)\n"
	"      --a3 VALUE      a3, in RSI (default 0)\n"
	"      --text TEXT     a marker's text in a0..a3 (at most 32 bytes, packed as\n"
	"                      include/hypertrace/guest.h does; decoded by a catalog\n"
	"                      field NAME=a0-a3:str), instead of --a0..--a3\n"
	"      --rate PER_SEC  issue at most PER_SEC hypercalls per second (default: no limit)\n"
	"      --timer-lateness\n"
	"                      with --rate: a timer's lateness, as cyclictest measures\n"
	"                      it: each call follows a sleep to its deadline\n"
	"                      (clock_nanosleep, CLOCK_MONOTONIC, absolute; timer\n"
	"                      slack 1 ns) and carries how late the sleep ended in\n"
	"                      a1 (ns) and the deadline in a2; the host sets its\n"
	"                      own part of it beside it (report --latency). A\n"
	"                      deadline already passed moves to a period from now\n"
	"      --snapshot FILE\n"
	"                      after the calls, read FILE whole, issue one more call\n"
	"                      (a0 one past the last one's), then print FILE's bytes\n"
	"                      before the report: the host's times of the last call\n"
	"                      and that one bracket the read (e.g. /proc/stat,\n"
	"                      /proc/interrupts: a guest's own numbers on the\n"
	"                      host's clock)\n"
	"      --insn vmcall|vmmcall\n"
	"                      instruction to use (default: vmcall on Intel, vmmcall on AMD)\n"
	"  -h, --help          show this help\n"
	"Numbers are decimal or 0x-prefixed hexadecimal.\n"
	"\n"
	"The host sees each call as kvm_exit (hypercall), kvm_hypercall (nr, a0..a3),\n"
	"kvm_entry. KVM traces the hypercall before it checks the caller's privilege,\n"
	"then returns -KVM_EPERM (-1) to a caller at CPL > 0: from user space every\n"
	"call is traced and returns -1. The program refuses (exit 1) unless CPUID says\n"
	"it runs under KVM (hypervisor bit and \"KVMKVMKVM\" signature), because on bare\n"
	"metal or another hypervisor the instruction would fault or mean something else.\n"
	"\n"
	"Output (stdout), key=value:\n"
	"  hypercall: issued=N nr=NR insn=vmcall a0=0..N-1 a1=.. a2=.. a3=.. ret=R ret_mismatches=K\n"
	"  hypercall: round_trip_ns count=N mean=.. median=.. stddev=.. min=.. p99=.. max=..\n"
	"  hypercall: clock_overhead_ns median=..\n"
	"  hypercall: timer_lateness_ns count=N mean=.. median=.. ... (--timer-lateness)\n"
	"ret is the first return value, ret_mismatches the calls that returned another.\n"
	"round_trip_ns is clock_gettime(CLOCK_MONOTONIC) read before and after each call\n"
	"and includes one clock read, whose median cost is clock_overhead_ns.\n"
	"\n"
	"Exit status: 0 done, 1 not a KVM guest or a runtime error, 2 usage error.\n"
	"Test hook: if HYPERCALL_TEST_CPUID=VENDOR,HYPERVISOR_BIT,SIGNATURE is set\n"
	"(e.g. GenuineIntel,1,KVMKVMKVM) it replaces the CPUID reading and the program\n"
	"stops after the KVM check and instruction choice, without issuing any call.\n";

enum {
	OPT_A0 = 256,
	OPT_A1,
	OPT_A2,
	OPT_A3,
	OPT_RATE,
	OPT_INSN,
	OPT_TEXT,
	OPT_SNAPSHOT,
	OPT_TIMER_LATENESS,
};

static const struct option long_options[] = {
	{ "count", required_argument, NULL, 'N' },
	{ "nr", required_argument, NULL, 'n' },
	{ "a0", required_argument, NULL, OPT_A0 },
	{ "a1", required_argument, NULL, OPT_A1 },
	{ "a2", required_argument, NULL, OPT_A2 },
	{ "a3", required_argument, NULL, OPT_A3 },
	{ "rate", required_argument, NULL, OPT_RATE },
	{ "insn", required_argument, NULL, OPT_INSN },
	{ "text", required_argument, NULL, OPT_TEXT },
	{ "snapshot", required_argument, NULL, OPT_SNAPSHOT },
	{ "timer-lateness", no_argument, NULL, OPT_TIMER_LATENESS },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* What parse_one fills: the options, and what decides how a0..a3 are filled (--text, or any of --a0..--a3). */
struct parse_state {
	struct hypercall_options *o;
	const char *text;
	bool a0_to_a3;
};

/* One option getopt_long returned, with its value arg; false with a message in err (ht_option_fn). */
static bool parse_one(int opt, const char *arg, void *ctx, char *err, size_t err_size)
{
	struct parse_state *st = ctx;
	struct hypercall_options *o = st->o;

	switch (opt) {
	case 'N':
		return ht_parse_u64_option("--count", arg, 1, HYPERCALL_MAX_COUNT, &o->count, err,
					   err_size);
	case 'n':
		return ht_parse_u64_option("--nr", arg, 0, UINT64_MAX, &o->nr, err, err_size);
	case OPT_A0:
		o->a0_fixed = true;
		st->a0_to_a3 = true;
		return ht_parse_u64_option("--a0", arg, 0, UINT64_MAX, &o->a0, err, err_size);
	case OPT_A1:
		st->a0_to_a3 = true;
		return ht_parse_u64_option("--a1", arg, 0, UINT64_MAX, &o->a1, err, err_size);
	case OPT_A2:
		st->a0_to_a3 = true;
		return ht_parse_u64_option("--a2", arg, 0, UINT64_MAX, &o->a2, err, err_size);
	case OPT_A3:
		st->a0_to_a3 = true;
		return ht_parse_u64_option("--a3", arg, 0, UINT64_MAX, &o->a3, err, err_size);
	case OPT_TEXT:
		st->text = arg;
		return true;
	case OPT_SNAPSHOT:
		o->snapshot = arg;
		return true;
	case OPT_TIMER_LATENESS:
		o->timer_lateness = true;
		return true;
	case OPT_RATE:
		return ht_parse_u64_option("--rate", arg, 1, HYPERCALL_MAX_RATE, &o->rate, err,
					   err_size);
	case OPT_INSN:
		return hypercall_insn_option(arg, &o->insn, err, err_size);
	case 'h':
		o->help = true;
		return true;
	}
	/* Not reached: getopt_long returns only the options above, '?' and ':'. */
	return true;
}

/* --text, if given, packed into a0..a3; false with a message in err. */
static bool apply_text(const struct parse_state *st, char *err, size_t err_size)
{
	struct hypercall_options *o = st->o;
	const char *text = st->text;

	if (o->timer_lateness && !o->rate) {
		snprintf(err, err_size, "--timer-lateness times sleeps to each call's deadline: add --rate");
		return false;
	}
	if (o->timer_lateness && (text || o->a1 || o->a2)) {
		snprintf(err, err_size, "--timer-lateness fills a1 and a2: drop --a1, --a2 and --text");
		return false;
	}
	if (text && st->a0_to_a3) {
		snprintf(err, err_size, "--text fills a0..a3: drop --a0..--a3; see --help");
		return false;
	}
	if (text && strlen(text) > 32) {
		snprintf(err, err_size, "--text is %zu bytes: at most 32 fit in a0..a3", strlen(text));
		return false;
	}
	if (text) {
		o->a0_fixed = true;
		o->a0 = ht_guest_text_word(text, 32, 0);
		o->a1 = ht_guest_text_word(text, 32, 1);
		o->a2 = ht_guest_text_word(text, 32, 2);
		o->a3 = ht_guest_text_word(text, 32, 3);
	}
	return true;
}

int hypercall_options_parse(int argc, char **argv, struct hypercall_options *o, char *err,
			    size_t err_size)
{
	struct parse_state st = { .o = o };

	memset(o, 0, sizeof(*o));
	o->nr = HT_DEFAULT_HYPERCALL_NR;
	o->count = 1;
	o->insn = HYPERCALL_INSN_UNKNOWN;
	if (ht_parse_options(argc, argv, ":N:n:h", long_options, parse_one, &st, err, err_size))
		return -1;
	return apply_text(&st, err, err_size) ? 0 : -1;
}
