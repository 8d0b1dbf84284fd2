#!/usr/bin/env bash
# Command-line behaviour of the `exitload` guest program on this host. Only
# CPUID runs here (an instruction any x86 CPU has; exits only in a guest):
# no port, device or MSR is touched.
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
EL=$OUTPUT/guest/exitload

if [ ! -x "$EL" ]; then
	fail exitload_built "$EL missing: run make guest"
	suite_exit
fi

# Usage errors: one line, naming the problem, status 2, and nothing done.
bad_args=(
	"" "cpuid" "cpuid 0" "cpuid x" "cpuid 100000001" "cpuid 1 4294967296" "cpuid 1 2 3"
	"pio 0x80" "pio 0x10000 1" "pio 0x80 0" "pio -1 1" "mmio /dev/null" "mmio /dev/null 1x"
	"msr 0x1b" "msr x 1" "msr 0x100000000 1" "msr 0x1b 0" "msr 0x1b 1 2"
	"halt 1" "--help"
)
for args in "${bad_args[@]}"; do
	eval "set -- $args"
	err=$("$EL" "$@" 2>&1 >/dev/null)
	status=$?
	lines=$(printf '%s\n' "$err" | grep -c .)
	if [ "$status" -ne 2 ]; then
		fail "exitload_usage_error [$args]" "exit status $status, want 2: $err"
	elif [ "$lines" -ne 1 ] || ! grep -Eq '^exitload: .*usage: exitload cpuid' <<<"$err"; then
		fail "exitload_usage_error [$args]" "want one 'exitload: ... usage: ...' line, got: $err"
	else
		pass "exitload_usage_error [$args]"
	fi
done

# CPUID runs anywhere: the count it reports is the count asked for.
if out=$("$EL" cpuid 5000 0x1 2>&1) && grep -Eq '^exitload: cpuid 5000 exits in [0-9]+\.[0-9]{3} s$' <<<"$out"; then
	pass exitload_cpuid_reports_its_count
else
	fail exitload_cpuid_reports_its_count "got: $out"
fi

# A file that is no device BAR: one line that says what to give, status 1.
err=$("$EL" mmio /nonexistent/resource0 10 2>&1 >/dev/null)
status=$?
if [ "$status" -eq 1 ] && [ "$(printf '%s\n' "$err" | grep -c .)" -eq 1 ] && grep -q "give a PCI BAR's sysfs resource file" <<<"$err"; then
	pass exitload_mmio_names_what_to_give
else
	fail exitload_mmio_names_what_to_give "status $status: $err"
fi

# Without the msr module there is no /dev/cpu/0/msr: one line that says to
# load it, status 1. (Where the module is loaded, reading a host MSR is not
# this test's business.)
if [ -e /dev/cpu/0/msr ]; then
	skip exitload_msr_names_the_module "/dev/cpu/0/msr exists here (the msr module is loaded)"
else
	err=$("$EL" msr 0x1b 10 2>&1 >/dev/null)
	status=$?
	if [ "$status" -eq 1 ] && [ "$(printf '%s\n' "$err" | grep -c .)" -eq 1 ] && grep -q "msr module" <<<"$err"; then
		pass exitload_msr_names_the_module
	else
		fail exitload_msr_names_the_module "status $status: $err"
	fi
fi
suite_exit
