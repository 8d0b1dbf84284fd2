// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * minivm: a tiny VMM on /dev/kvm that runs no guest OS, only a generated
 * real-mode loop of hypercalls per vCPU (see minivm_payload.h), so a host
 * tracer can be checked against exactly known hypercalls.
 *
 * Output on stdout, one line per vCPU, then a total (one line each):
 *   minivm: vcpu=0 hypercalls=1000 nr=1000 insn=vmmcall a0=0 a1=0..999
 *     a2=0xa2a2a2a2 a3=0xa3a3a3a3 ret=-1000 ret_mismatches=0 io_exits=1000
 *     hlt_exits=0 other_hypercalls=1000 other_nr=1001 other_ret=-1000
 *   minivm: total vcpus=2 hypercalls=2000 io_exits=2000 hlt_exits=0
 *     other_hypercalls=2000 seconds=0.051234 hypercalls_per_second=39036
 * hypercalls and other_hypercalls are counted by the guest itself, io_exits
 * and hlt_exits by minivm; ret values are the guest's 32-bit view, signed.
 * Errors: one line on stderr, exit status 1; usage errors exit status 2.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cpuid_info.h"
#include "cpuid_read.h"
#include "minivm_options.h"
#include "minivm_payload.h"
#include "minivm_vm.h"

static char timeout_message[160];

/* The watchdog: a guest that never reaches its done exit must not hang the caller. */
static void on_alarm(int sig)
{
	(void)sig;
	if (write(STDERR_FILENO, timeout_message, strlen(timeout_message)) < 0) {
		/* Nothing more to report with. */
	}
	_exit(1);
}

static void print_vcpu(const struct minivm_options *o, enum hypercall_insn insn,
		       unsigned int index, const struct minivm_vcpu_result *r)
{
	bool other = false;

	for (size_t i = 0; i < o->mix_len; i++)
		other |= o->mix[i] == MINIVM_MIX_OTHER_NR;
	printf("minivm: vcpu=%u hypercalls=%u nr=%u insn=%s a0=%u a1=0..%u a2=0x%x a3=0x%x "
	       "ret=%d ret_mismatches=%u io_exits=%llu hlt_exits=%llu other_hypercalls=%u",
	       index, r->hypercalls, o->nr, hypercall_insn_name(insn), index, o->count - 1,
	       MINIVM_A2, MINIVM_A3, (int32_t)r->first_ret, r->ret_mismatches,
	       (unsigned long long)r->io_exits, (unsigned long long)r->hlt_exits,
	       r->other_hypercalls);
	if (other)
		printf(" other_nr=%u other_ret=%d\n", o->other_nr, (int32_t)r->other_ret);
	else
		printf(" other_nr=none other_ret=none\n");
}

static void print_total(const struct minivm_vm *vm, uint64_t elapsed_ns)
{
	unsigned long long hypercalls = 0, io = 0, hlt = 0, other = 0;
	double seconds = (double)elapsed_ns / 1e9;

	for (unsigned int i = 0; i < vm->nvcpus; i++) {
		const struct minivm_vcpu_result *r = &vm->vcpus[i].result;

		hypercalls += r->hypercalls;
		io += r->io_exits;
		hlt += r->hlt_exits;
		other += r->other_hypercalls;
	}
	printf("minivm: total vcpus=%u hypercalls=%llu io_exits=%llu hlt_exits=%llu "
	       "other_hypercalls=%llu seconds=%.6f hypercalls_per_second=%.0f\n",
	       vm->nvcpus, hypercalls, io, hlt, other, seconds,
	       seconds > 0 ? (double)hypercalls / seconds : 0.0);
}

/* Does every vCPU report exactly what its payload was built to issue? */
static bool results_complete(const struct minivm_options *o, const struct minivm_vm *vm,
			     char *err, size_t err_size)
{
	for (unsigned int i = 0; i < vm->nvcpus; i++) {
		const struct minivm_vcpu_result *r = &vm->vcpus[i].result;

		if (r->hypercalls != o->count) {
			snprintf(err, err_size, "vcpu %u issued %u hypercalls, expected %u", i,
				 r->hypercalls, o->count);
			return false;
		}
	}
	return true;
}

/* The command line and the watchdog: -1 to go on, else the exit status (usage, --help). */
static int prepare(int argc, char **argv, struct minivm_options *o)
{
	char err[512];

	if (minivm_options_parse(argc, argv, o, err, sizeof(err)) < 0) {
		fprintf(stderr, "minivm: %s\n", err);
		return 2;
	}
	if (o->help) {
		fputs(minivm_usage, stdout);
		return 0;
	}
	/* Armed first: every later step, KVM ioctls included, is bounded. */
	snprintf(timeout_message, sizeof(timeout_message),
		 "minivm: timeout: the guest did not finish within %u s (see --timeout)\n",
		 o->timeout);
	signal(SIGALRM, on_alarm);
	alarm(o->timeout);
	return -1;
}

/* --insn, else the vendor's instruction; UNKNOWN (message printed) for an unknown vendor. */
static enum hypercall_insn choose_insn(const struct minivm_options *o,
				       const struct cpuid_snapshot *cpu)
{
	enum hypercall_insn insn;
	char vendor[13];

	insn = o->insn != HYPERCALL_INSN_UNKNOWN ? o->insn : cpuid_vendor_hypercall_insn(cpu);
	if (insn == HYPERCALL_INSN_UNKNOWN) {
		cpuid_vendor_string(cpu, vendor);
		fprintf(stderr,
			"minivm: cannot choose vmcall or vmmcall for CPU vendor '%s'; pass --insn\n",
			vendor);
	}
	return insn;
}

/* The guest code into code; its length, or 0 (message printed) if it does not fit. */
static size_t build_code(const struct minivm_options *o, enum hypercall_insn insn, uint8_t *code,
			 size_t code_size)
{
	struct minivm_payload_config payload = {
		.nr = o->nr,
		.other_nr = o->other_nr,
		.count = o->count,
		.insn = insn,
		.mix_len = o->mix_len,
		.mix_per_call = o->mix_per_call,
	};
	size_t code_len;

	memcpy(payload.mix, o->mix, sizeof(payload.mix));
	code_len = minivm_payload_build(&payload, code, code_size);
	if (code_len == 0)
		fprintf(stderr, "minivm: the guest code for this --mix and --mix-per-call does not "
				"fit in %u bytes; use a smaller --mix-per-call\n",
			MINIVM_CODE_MAX);
	return code_len;
}

/*
 * Opens KVM, creates the VM with its vCPUs and runs them to the end: 0, or
 * -1 with a message in err. vm is opened (to be closed) either way.
 */
static int run_vm(struct minivm_vm *vm, const struct minivm_options *o,
		  const struct cpuid_snapshot *cpu, const uint8_t *code, size_t code_len,
		  uint64_t *elapsed_ns, char *err, size_t err_size)
{
	if (minivm_vm_open(vm, o->kvm_path, err, err_size) < 0)
		return -1;
	/*
	 * Without VMX or SVM, KVM has nothing to run a guest with. Checked before
	 * creating anything, because some /dev/kvm providers accept KVM_CREATE_VM
	 * on such CPUs and only fail (or misbehave) later.
	 */
	if (!cpuid_has_hardware_virtualization(cpu)) {
		snprintf(err, err_size,
			 "this CPU offers neither VMX nor SVM (CPUID), so KVM cannot run a guest "
			 "here; run minivm on a host or VM with hardware virtualization");
		return -1;
	}
	if (minivm_vm_create(vm, code, code_len, o->vcpus, err, err_size) < 0)
		return -1;
	return minivm_vm_run(vm, elapsed_ns, err, err_size) < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
	static uint8_t code[MINIVM_CODE_MAX];
	struct minivm_options o;
	struct cpuid_snapshot cpu;
	struct minivm_vm vm;
	enum hypercall_insn insn;
	uint64_t elapsed_ns;
	size_t code_len;
	char err[512];
	int status;

	if ((status = prepare(argc, argv, &o)) >= 0)
		return status;
	status = 1;
	cpuid_snapshot_read(&cpu);
	insn = choose_insn(&o, &cpu);
	if (insn == HYPERCALL_INSN_UNKNOWN)
		return 1;
	code_len = build_code(&o, insn, code, sizeof(code));
	if (code_len == 0)
		return 2;

	if (run_vm(&vm, &o, &cpu, code, code_len, &elapsed_ns, err, sizeof(err)) < 0)
		goto out;
	alarm(0);
	for (unsigned int i = 0; i < vm.nvcpus; i++)
		print_vcpu(&o, insn, i, &vm.vcpus[i].result);
	print_total(&vm, elapsed_ns);
	if (results_complete(&o, &vm, err, sizeof(err)))
		status = 0;
out:
	if (status)
		fprintf(stderr, "minivm: %s\n", err);
	minivm_vm_close(&vm);
	return status;
}
