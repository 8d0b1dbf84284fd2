// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "minivm_options.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "common/option_error.h"
#include "common/parse_number.h"
#include "hypertrace/hypercall_abi.h"

const char minivm_usage[] =
	"Usage: minivm [OPTIONS]\n"
	"Runs a tiny VM on /dev/kvm (no guest OS): every vCPU issues COUNT KVM hypercalls\n"
	"from 16-bit real mode, with optional other exits in between, then minivm prints\n"
	"what was issued so a host-side trace can be checked against it.\n"
	"\n"
	"  --vcpus N          vCPUs, one thread each (default 1, at most 64)\n"
	"  --count M          hypercalls per vCPU (default 1000, 1..4294967295)\n"
	"  --nr N             hypercall number (default 1000, unused by KVM; 32-bit)\n"
	"  --mix KINDS        before each hypercall, exits that are not hypercall NR;\n"
	"                     comma-separated, in this order, each at most once:\n"
	"                       io        OUT to port 0xe0 (exits to minivm)\n"
	"                       hlt       HLT (exits to minivm: no in-kernel irqchip)\n"
	"                       other-nr  a hypercall with nr OTHER (same arguments)\n"
	"  --mix-per-call K   rounds of the mix before each hypercall (default 1, at most 1000)\n"
	"  --other-nr N       nr of other-nr hypercalls (default 1001)\n"
	"  --insn vmcall|vmmcall\n"
	"                     instruction (default: vmcall on Intel, vmmcall on AMD hosts;\n"
	"                     vmcall on AMD first takes a #UD exit, then KVM rewrites it)\n"
	"  --timeout SECONDS  give up with exit status 1 after this long (default 30)\n"
	"  --kvm PATH         KVM device (default /dev/kvm)\n"
	"  -h, --help         show this help\n"
	"Numbers are decimal or 0x-prefixed hexadecimal.\n"
	"\n"
	"Hypercall arguments: a0 = vCPU index, a1 = sequence number 0..M-1,\n"
	"a2 = 0xa2a2a2a2, a3 = 0xa3a3a3a3. Real mode makes the hypercall 32-bit: KVM\n"
	"traces the values, then uses and returns only their low 32 bits.\n"
	"\n"
	"Output (stdout), one line per vCPU then a total, key=value:\n"
	"  minivm: vcpu=I hypercalls=M nr=NR insn=vmmcall a0=I a1=0..M-1 a2=0xa2a2a2a2\n"
	"    a3=0xa3a3a3a3 ret=R ret_mismatches=0 io_exits=X hlt_exits=Y other_hypercalls=Z\n"
	"    other_nr=N other_ret=R\n"
	"  minivm: total vcpus=N hypercalls=T io_exits=X hlt_exits=Y other_hypercalls=Z\n"
	"    seconds=S hypercalls_per_second=H\n"
	"(each on one line). ret is the 32-bit value the guest saw from its first\n"
	"hypercall, as a signed number (-1000 is -KVM_ENOSYS); ret_mismatches counts\n"
	"later calls that returned something else; other_ret is 'none' without\n"
	"other-nr. seconds is host wall time from starting the vCPU threads to joining\n"
	"them.\n"
	"\n"
	"Exit status: 0 every vCPU finished, 1 KVM missing or unusable, guest error or\n"
	"timeout, 2 usage error.\n";

enum {
	OPT_VCPUS = 256,
	OPT_COUNT,
	OPT_NR,
	OPT_MIX,
	OPT_MIX_PER_CALL,
	OPT_OTHER_NR,
	OPT_INSN,
	OPT_TIMEOUT,
	OPT_KVM,
};

static const struct option long_options[] = {
	{ "vcpus", required_argument, NULL, OPT_VCPUS },
	{ "count", required_argument, NULL, OPT_COUNT },
	{ "nr", required_argument, NULL, OPT_NR },
	{ "mix", required_argument, NULL, OPT_MIX },
	{ "mix-per-call", required_argument, NULL, OPT_MIX_PER_CALL },
	{ "other-nr", required_argument, NULL, OPT_OTHER_NR },
	{ "insn", required_argument, NULL, OPT_INSN },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "kvm", required_argument, NULL, OPT_KVM },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Parses "io,other-nr" style lists: known kinds, no empty items, no repeats. */
static bool parse_mix(const char *arg, struct minivm_options *o, char *err, size_t err_size)
{
	const char *p = arg;

	o->mix_len = 0;
	for (;;) {
		size_t len = strcspn(p, ",");
		int kind = -1;

		for (int k = 0; k < MINIVM_MIX_KINDS; k++) {
			const char *name = minivm_mix_kind_name((enum minivm_mix_kind)k);

			if (strlen(name) == len && strncmp(p, name, len) == 0)
				kind = k;
		}
		if (kind < 0) {
			snprintf(err, err_size,
				 "invalid --mix '%s': expected a comma-separated list of io, hlt, other-nr; see --help",
				 arg);
			return false;
		}
		for (size_t i = 0; i < o->mix_len; i++) {
			if (o->mix[i] == (enum minivm_mix_kind)kind) {
				snprintf(err, err_size,
					 "invalid --mix '%s': '%s' appears twice; use --mix-per-call for more exits",
					 arg, minivm_mix_kind_name(o->mix[i]));
				return false;
			}
		}
		o->mix[o->mix_len++] = (enum minivm_mix_kind)kind;
		if (p[len] == '\0')
			return true;
		p += len + 1;
	}
}

static bool has_mix(const struct minivm_options *o, enum minivm_mix_kind kind)
{
	for (size_t i = 0; i < o->mix_len; i++)
		if (o->mix[i] == kind)
			return true;
	return false;
}

static void set_defaults(struct minivm_options *o)
{
	memset(o, 0, sizeof(*o));
	o->vcpus = 1;
	o->count = MINIVM_DEFAULT_COUNT;
	o->nr = HT_DEFAULT_HYPERCALL_NR;
	o->other_nr = MINIVM_DEFAULT_OTHER_NR;
	o->mix_per_call = 1;
	o->insn = HYPERCALL_INSN_UNKNOWN;
	o->timeout = MINIVM_DEFAULT_TIMEOUT;
	o->kvm_path = "/dev/kvm";
}

/* What parse_one fills: the options, and whether those whose use depends on another were given. */
struct parse_state {
	struct minivm_options *o;
	bool mix_per_call_given;
	bool other_nr_given;
};

/* One option getopt_long returned, with its value arg; false with a message in err (ht_option_fn). */
static bool parse_one(int opt, const char *arg, void *ctx, char *err, size_t err_size)
{
	struct parse_state *st = ctx;
	struct minivm_options *o = st->o;

	switch (opt) {
	case OPT_VCPUS:
		return ht_parse_u32_option("--vcpus", arg, 1, MINIVM_MAX_VCPUS, &o->vcpus, err,
					   err_size);
	case OPT_COUNT:
		return ht_parse_u32_option("--count", arg, 1, UINT32_MAX, &o->count, err, err_size);
	case OPT_NR:
		return ht_parse_u32_option("--nr", arg, 0, UINT32_MAX, &o->nr, err, err_size);
	case OPT_OTHER_NR:
		st->other_nr_given = true;
		return ht_parse_u32_option("--other-nr", arg, 0, UINT32_MAX, &o->other_nr, err,
					   err_size);
	case OPT_MIX:
		return parse_mix(arg, o, err, err_size);
	case OPT_MIX_PER_CALL:
		st->mix_per_call_given = true;
		return ht_parse_u32_option("--mix-per-call", arg, 1, MINIVM_MAX_MIX_PER_CALL,
					   &o->mix_per_call, err, err_size);
	case OPT_INSN:
		return hypercall_insn_option(arg, &o->insn, err, err_size);
	case OPT_TIMEOUT:
		return ht_parse_u32_option("--timeout", arg, 1, MINIVM_MAX_TIMEOUT, &o->timeout, err,
					   err_size);
	case OPT_KVM:
		o->kvm_path = arg;
		if (arg[0] == '\0') {
			snprintf(err, err_size, "--kvm needs a device path; see --help");
			return false;
		}
		return true;
	case 'h':
		o->help = true;
		return true;
	}
	/* Not reached: getopt_long returns only the options above, '?' and ':'. */
	return true;
}

/* The options taken together, once all are parsed; false with a message in err. */
static bool check_combinations(const struct parse_state *st, char *err, size_t err_size)
{
	const struct minivm_options *o = st->o;

	/* Options that would silently do nothing are mistakes worth reporting. */
	if (st->mix_per_call_given && o->mix_len == 0) {
		snprintf(err, err_size, "--mix-per-call needs --mix; see --help");
		return false;
	}
	if (st->other_nr_given && !has_mix(o, MINIVM_MIX_OTHER_NR)) {
		snprintf(err, err_size, "--other-nr needs --mix with other-nr; see --help");
		return false;
	}
	/* The tracer tells the two kinds of hypercall apart only by nr. */
	if (has_mix(o, MINIVM_MIX_OTHER_NR) && o->other_nr == o->nr) {
		snprintf(err, err_size, "--other-nr %u equals --nr: give the other hypercalls another nr",
			 o->other_nr);
		return false;
	}
	return true;
}

int minivm_options_parse(int argc, char **argv, struct minivm_options *o, char *err,
			 size_t err_size)
{
	struct parse_state st = { .o = o };

	set_defaults(o);
	if (ht_parse_options(argc, argv, ":h", long_options, parse_one, &st, err, err_size))
		return -1;
	return check_combinations(&st, err, err_size) ? 0 : -1;
}
