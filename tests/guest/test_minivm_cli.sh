#!/usr/bin/env bash
# Command-line behaviour of minivm, and its clean failure where KVM cannot run
# a guest. minivm only runs a guest when the CPU offers VMX or SVM; on a host
# without them (such as a cloud VM) it stops before creating a VM.
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
MV=$OUTPUT/guest/minivm

if [ ! -x "$MV" ]; then
	fail minivm_built "$MV missing: run make guest"
	suite_exit
fi

# It must run in a busybox initramfs with no C library.
if ! command -v readelf >/dev/null; then
	skip minivm_static "readelf not installed"
elif readelf -d "$MV" | grep -q NEEDED || readelf -l "$MV" | grep -q INTERP; then
	fail minivm_static "$MV is dynamically linked"
else
	pass minivm_static
fi

bad_args=(
	"--vcpus 0" "--vcpus 65" "--vcpus 2x" "--count 0" "--count 4294967296" "--count -3"
	"--count 12abc" "--nr 4294967296" "--nr 0x" "--mix ''" "--mix io,,hlt" "--mix io,io"
	"--mix disk" "--mix io," "--mix-per-call 2" "--mix io --mix-per-call 0"
	"--mix io --mix-per-call 1001" "--other-nr 5" "--mix other-nr --other-nr 1000"
	"--insn int3" "--timeout 0" "--timeout 86401" "--kvm ''" "--bogus" "-v" "stray" "--count"
)
for args in "${bad_args[@]}"; do
	eval "set -- $args"
	err=$(timeout 10 "$MV" "$@" 2>&1 >/dev/null)
	status=$?
	lines=$(printf '%s\n' "$err" | grep -c .)
	if [ "$status" -ne 2 ]; then
		fail "minivm_usage_error [$args]" "exit status $status, want 2: $err"
	elif [ "$lines" -ne 1 ] || ! grep -Eq '^minivm: ' <<<"$err"; then
		fail "minivm_usage_error [$args]" "want one 'minivm: ...' line, got: $err"
	else
		pass "minivm_usage_error [$args]"
	fi
done

if out=$("$MV" --help 2>&1) && grep -q 'a2 = 0xa2a2a2a2' <<<"$out" && grep -q 'minivm: total vcpus=' <<<"$out"; then
	pass minivm_help
else
	fail minivm_help "--help lacks the argument patterns or the output format: $out"
fi

expect_run minivm_no_kvm_device 1 '^minivm: cannot open /nonexistent/kvm: .*load kvm_intel or kvm_amd' \
	-- timeout 10 "$MV" --kvm /nonexistent/kvm
expect_run minivm_not_a_kvm_device 1 '^minivm: /dev/null is not a KVM device' \
	-- timeout 10 "$MV" --kvm /dev/null

# The real device: a clean refusal without VMX/SVM, a real run with them.
if [ ! -e /dev/kvm ]; then
	expect_run minivm_without_dev_kvm 1 'load kvm_intel or kvm_amd' -- timeout 10 "$MV"
elif ! grep -qw -E 'vmx|svm' /proc/cpuinfo; then
	expect_run minivm_cannot_run_guest 1 \
		'^minivm: this CPU offers neither VMX nor SVM .*KVM cannot run a guest here' \
		-- timeout 10 "$MV" --vcpus 2 --count 1000 --mix io,other-nr
else
	out=$(timeout 20 "$MV" --vcpus 2 --count 200 --mix io,hlt,other-nr --timeout 10 2>&1)
	status=$?
	want0='^minivm: vcpu=0 hypercalls=200 nr=1000 insn=vmm?call a0=0 a1=0\.\.199 a2=0xa2a2a2a2 a3=0xa3a3a3a3 ret=-1000 ret_mismatches=0 io_exits=200 hlt_exits=200 other_hypercalls=200 other_nr=1001 other_ret=-1000$'
	if [ "$status" -eq 0 ] && grep -Eq "$want0" <<<"$out" &&
		grep -q '^minivm: vcpu=1 hypercalls=200 .* a0=1 ' <<<"$out" &&
		grep -Eq '^minivm: total vcpus=2 hypercalls=400 io_exits=400 hlt_exits=400 other_hypercalls=400 ' <<<"$out"; then
		pass minivm_runs_guest
	else
		fail minivm_runs_guest "status $status, output: $out"
	fi
fi

suite_exit
