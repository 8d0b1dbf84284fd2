#!/usr/bin/env bash
# Command-line behaviour of the `hypercall` guest program on this host.
# No test may issue a hypercall here: every run sets the HYPERCALL_TEST_CPUID
# test hook, which replaces the CPUID reading and makes the program stop
# before the hypercall instruction even when it accepts the CPU.
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
HC=$OUTPUT/guest/hypercall
export HYPERCALL_TEST_CPUID="GenuineIntel,0,"

if [ ! -x "$HC" ]; then
	fail hypercall_built "$HC missing: run make guest"
	suite_exit
fi

# Usage errors: one line naming the problem and pointing to --help, status 2.
bad_args=(
	"-N 12abc" "-N -1" "-N 0" "-N 10000001" "-N ''" "--count 0x" "--count 1.5" "-n 1x"
	"--nr 18446744073709551616" "--nr -5" "--a0 x" "--a1 1e3" "--a2 ' 1'" "--a3 +1"
	"--rate 0" "--rate 1000000001" "--insn syscall" "--insn VMCALL" "--bogus" "-x"
	"extra-arg" "-N" "-n" "--nr" "--rate" "--snapshot" "-hx"
)
for args in "${bad_args[@]}"; do
	eval "set -- $args"
	err=$("$HC" "$@" 2>&1 >/dev/null)
	status=$?
	lines=$(printf '%s\n' "$err" | grep -c .)
	if [ "$status" -ne 2 ]; then
		fail "hypercall_usage_error [$args]" "exit status $status, want 2: $err"
	elif [ "$lines" -ne 1 ] || ! grep -Eq '^hypercall: .*(see --help|needs a value)' <<<"$err"; then
		fail "hypercall_usage_error [$args]" "want one 'hypercall: ...; see --help' line, got: $err"
	else
		pass "hypercall_usage_error [$args]"
	fi
done

if out=$("$HC" --help 2>&1) && grep -q 'KVM_EPERM' <<<"$out" && grep -q -- '--insn vmcall|vmmcall' <<<"$out" &&
	grep -q 'HYPERCALL_TEST_CPUID' <<<"$out"; then
	pass hypercall_help
else
	fail hypercall_help "--help lacks the -KVM_EPERM note, --insn or the test hook: $out"
fi

# The refusal path of the real binary, through the test hook.
HYPERCALL_TEST_CPUID="GenuineIntel,0," expect_run hypercall_refuses_bare_metal 1 \
	'^hypercall: not running under a hypervisor .*refusing' -- "$HC" -N 3
HYPERCALL_TEST_CPUID="AuthenticAMD,0,KVMKVMKVM" expect_run hypercall_refuses_bare_metal_stale_leaf 1 \
	'refusing' -- "$HC"
for sig in XenVMMXenVMM VMwareVMware "Microsoft Hv" TCGTCGTCGTCG; do
	HYPERCALL_TEST_CPUID="GenuineIntel,1,$sig" expect_run "hypercall_refuses_${sig// /_}" 1 \
		"^hypercall: the hypervisor is '$sig', not KVM .*refusing" -- "$HC" -N 2
done
HYPERCALL_TEST_CPUID="CentaurHauls,1,KVMKVMKVM" expect_run hypercall_unknown_vendor_needs_insn 1 \
	"CPU vendor 'CentaurHauls'; pass --insn" -- "$HC"
HYPERCALL_TEST_CPUID="nonsense" expect_run hypercall_test_hook_malformed 2 \
	'HYPERCALL_TEST_CPUID=.* is malformed' -- "$HC"

# Accepted CPUs: the instruction choice, reported without issuing anything.
check_accept() { # NAME CPUID WANT_INSN ARGS...
	local name=$1 cpuid=$2 want=$3 out status
	shift 3
	out=$(HYPERCALL_TEST_CPUID=$cpuid "$HC" "$@" 2>&1)
	status=$?
	if [ "$status" -eq 0 ] && grep -q "KVM guest, insn=$want; not issuing" <<<"$out"; then
		pass "$name"
	else
		fail "$name" "status $status, want 0 and insn=$want: $out"
	fi
}
check_accept hypercall_kvm_intel_vmcall "GenuineIntel,1,KVMKVMKVM" vmcall -N 10
check_accept hypercall_kvm_amd_vmmcall "AuthenticAMD,1,KVMKVMKVM" vmmcall
check_accept hypercall_insn_forced "GenuineIntel,1,KVMKVMKVM" vmmcall --insn vmmcall
check_accept hypercall_all_options "AuthenticAMD,1,KVMKVMKVM" vmcall --nr 0x3e9 --a0 7 --a1 1 \
	--a2 0xffffffffffffffff --a3 3 --rate 1000 -N 10000000 --insn vmcall

suite_exit
