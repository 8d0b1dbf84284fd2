// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `hypertrace-bpf top`: a live view of every VM of the host, like top and
 * kvm_stat: one row per VM (exits/s, p50/p99 time in the host, wait for a
 * host CPU, hypercalls/s), its vCPUs and exit reasons on request. The BPF
 * side is record --exits' (no trace file, no record per event).
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "common/util.h"
#include "parse.h"
#include "record/preflight.h"
#include "record/privileges.h"
#include "record/tracer.h"
#include "record/vm_follower.h"
#include "top/top_run.h"

static const char top_help[] =
	"Usage: hypertrace-bpf top [-d SECONDS] [-n N] [-b] [-o KEY] [--vcpus] [--reasons]\n"
	"                          [-p PID | --vm NAME [--vm-user USER]] [-c N] [-v]\n"
	"\n"
	"Every VM of the host, live: one row per VM process (its QEMU -name, else its\n"
	"process name, and pid) with exits/s, the p50 and p99 time in the host of its\n"
	"exits (log2 bucket bounds), where its vCPU threads' time went (each state's\n"
	"share, adding up to 100: GUEST% running guest code, KVM% KVM handling exits,\n"
	"VMM% the VMM in user space, WAIT% runnable without a host CPU (the guest's\n"
	"steal), HALT% idle in a halt, BLK% blocked otherwise), POLL% the halts KVM\n"
	"polled in whose wake-up the polling caught ('-': none polled), PBURN% the\n"
	"CPU that polling burned in halts it did not catch (a share of the vCPU\n"
	"threads' time, as the states), WAKE99 the p99 of the wake-ups from a halt\n"
	"that slept to the guest running, IRQ99 the p99 of the interrupts from\n"
	"their acceptance by a vCPU's local APIC to the guest running with them,\n"
	"DUE99 the p99 of the timer wake-ups from their timer's due time (KVM's\n"
	"expiry of the guest's local APIC timer) to the guest running (log2\n"
	"bucket bounds; '-': none) and hypercalls/s. A screen too narrow for\n"
	"every column drops DUE99 first, then IRQ99, WAKE99,\n"
	"PBURN%, POLL%, HCALL/S, P50, P99, then BLK%, HALT%,\n"
	"WAIT%, VMM%, KVM%, GUEST%; 80 columns keep the states.\n"
	"VMs appear when they first exit and go when their process ends. Needs root\n"
	"(as record).\n"
	"\n"
	"Options:\n"
	"  -d, --delay SECONDS  between frames (default 2; decimals allowed)\n"
	"  -n, --iterations N   stop after N frames\n"
	"  -b, --batch          plain tables one after the other, no full screen (as\n"
	"                       top -b; also when stdout is not a terminal)\n"
	"  -o, --sort KEY       exits, wait, hcalls, p99, name or pid (default exits)\n"
	"      --vcpus          start with a row per vCPU thread under each VM\n"
	"      --reasons        start with a row per exit reason under each VM, and\n"
	"                       under each reason its two busiest causes (I/O port,\n"
	"                       MMIO address, MSR, CPUID leaf, hypercall nr)\n"
	"  -p, --pid PID        only this VM process\n"
	"      --vm NAME        only the QEMU started with -name NAME, followed while it\n"
	"                       stops, starts and restarts (a new process within a\n"
	"                       second of its first exit); NAME is matched whole,\n"
	"                       whoever runs the process (a warning names the uids\n"
	"                       when several users do)\n"
	"      --vm-user USER   with --vm: only the processes USER (a name or a uid) runs\n"
	"  -c, --vcpu N         only vCPU id N\n"
	"  -v, --verbose        libbpf debug output and the verifier log\n"
	"  -h, --help           this help\n"
	"\n"
	"Keys: q quit, v vCPUs on/off, r exit reasons on/off, s next sort key.\n"
	"\n"
	"EXAMPLES:\n"
	"    sudo hypertrace-bpf top\n"
	"    sudo hypertrace-bpf top -b -n 3 -d 1 --reasons > top.txt\n";

enum { OPT_VCPUS = 0x100, OPT_REASONS, OPT_VM, OPT_VM_USER };

static const struct option top_longopts[] = {
	{ "delay", required_argument, NULL, 'd' },
	{ "iterations", required_argument, NULL, 'n' },
	{ "batch", no_argument, NULL, 'b' },
	{ "sort", required_argument, NULL, 'o' },
	{ "vcpus", no_argument, NULL, OPT_VCPUS },
	{ "reasons", no_argument, NULL, OPT_REASONS },
	{ "pid", required_argument, NULL, 'p' },
	{ "vm", required_argument, NULL, OPT_VM },
	{ "vm-user", required_argument, NULL, OPT_VM_USER },
	{ "vcpu", required_argument, NULL, 'c' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* top's options, as parsed. */
struct top_config {
	struct ht_top_opts o;
	struct ht_tracer_opts topts;
	const char *vm;
	bool vm_uid_on;
	uid_t vm_uid;
};

/* Parses top's command line into c: -1 to go on, else the exit status (usage, or --help). */
static int top_parse(int argc, char **argv, struct top_config *c)
{
	struct ht_top_opts *o = &c->o;
	struct ht_tracer_opts *topts = &c->topts;
	uint64_t v;
	int opt;

	*c = (struct top_config){
		.o = { .interval_s = 2.0, .sort = HT_TOP_SORT_EXITS, .proc = "/proc" },
		.topts = { .ringbuf_bytes = 4096, .aggregate_only = true, .exits = true },
	};
	ht_filters_default(&topts->filters);
	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, ":d:n:bo:p:c:vh", top_longopts, NULL)) != -1) {
		switch (opt) {
		case 'd':
			if (!ht_parse_seconds(optarg, 86400, &o->interval_s) || o->interval_s < 0.1)
				return ht_usage_error("top", "invalid --delay '%s': expected seconds, at least 0.1", optarg);
			break;
		case 'n':
			if (!ht_parse_u64(optarg, 1, 1000000, &v))
				return ht_usage_error("top", "invalid --iterations '%s': expected a count 1..1000000", optarg);
			o->iterations = (unsigned int)v;
			break;
		case 'b':
			o->batch = true;
			break;
		case 'o':
			if (!ht_top_sort_parse(optarg, &o->sort))
				return ht_usage_error("top", "invalid --sort '%s': expected exits, wait, hcalls, p99, name or pid", optarg);
			break;
		case OPT_VCPUS:
			o->vcpus = true;
			break;
		case OPT_REASONS:
			o->reasons = true;
			break;
		case 'p':
			if (!ht_parse_u64(optarg, 1, INT32_MAX, &v))
				return ht_usage_error("top", "invalid --pid '%s': expected a process id", optarg);
			topts->filters.tgid_on = true;
			topts->filters.tgid = (__u32)v;
			break;
		case 'c':
			if (!ht_parse_u64(optarg, 0, UINT16_MAX, &v))
				return ht_usage_error("top", "invalid --vcpu '%s': expected a vCPU id 0..65535", optarg);
			topts->filters.vcpu_on = true;
			topts->filters.vcpu = (__u32)v;
			break;
		case OPT_VM:
			if (!optarg[0])
				return ht_usage_error("top", "--vm needs a QEMU guest name");
			c->vm = optarg;
			break;
		case OPT_VM_USER:
			if (!ht_parse_user(optarg, &c->vm_uid))
				return ht_usage_error("top", "invalid --vm-user '%s': expected a user name of /etc/passwd or a numeric uid", optarg);
			c->vm_uid_on = true;
			break;
		case 'v':
			topts->verbose = true;
			break;
		case 'h':
			fputs(top_help, stdout);
			return HT_EXIT_OK;
		default:
			return ht_option_error("top", opt, argv);
		}
	}
	if (optind < argc)
		return ht_usage_error("top", "unexpected argument '%s'", argv[optind]);
	if (c->vm_uid_on && !c->vm)
		return ht_usage_error("top", "--vm-user chooses among the processes of --vm NAME: add --vm NAME (with -p the process is chosen already)");
	if (c->vm && topts->filters.tgid_on)
		return ht_usage_error("top", "-p and --vm both select the VM process: give one of them");
	return -1;
}

int ht_cmd_top(int argc, char **argv)
{
	struct top_config c;
	struct ht_top_opts *o = &c.o;
	struct ht_tracer_opts *topts = &c.topts;
	const char *vm;
	struct ht_tracer *tracer = NULL;
	char err[512];
	int status;

	if ((status = top_parse(argc, argv, &c)) >= 0)
		return status;
	vm = c.vm;
	/* --vm NAME: its processes join the filter as they are found (vm_follower.h); none is needed at start. */
	struct ht_vm_follower follow = { .name = vm, .proc = o->proc, .log = stderr, .found_by = "its first exit",
					 .uid_on = c.vm_uid_on, .uid = c.vm_uid };
	if (vm) {
		topts->filters.tgid_on = true;
		topts->filters.tgid = 0;
	}
	if (ht_preflight(err, sizeof(err)))
		return ht_runtime_error("%s", err);
	if (ht_tracer_load(&tracer, topts, err, sizeof(err)))
		return ht_runtime_error("%s", err);
	if (ht_tracer_exit_fallback(tracer))
		fprintf(stderr, "hypertrace-bpf: warning: %s\n", ht_tracer_exit_fallback(tracer));
	if (vm) {
		size_t unverified = 0;

		follow.tracer = tracer;
		follow.verbose = topts->verbose;
		/* Now, while top may still read every process's descriptors: the VM's processes that run already. */
		if ((status = ht_vm_follower_start(&follow, &unverified)) < 0) {
			status = ht_runtime_error("cannot list /proc: %s", strerror(-status));
			goto cleanup;
		}
		o->follow = &follow;
	}
	if (ht_tracer_attach(tracer, err, sizeof(err))) {
		status = ht_runtime_error("%s", err);
		goto cleanup;
	}
	/* Attached: only reading the maps is left (see record). */
	if ((status = ht_drop_privileges(false))) {
		status = ht_runtime_error("cannot drop the capabilities top no longer needs: %s", strerror(-status));
		goto cleanup;
	}
	o->filters = &topts->filters;
	status = ht_top_run(o, tracer);
cleanup:
	ht_tracer_destroy(tracer);
	return status;
}
