#!/usr/bin/env bash
# The nested end-to-end checks that depend on the kernel, on Debian 13's own
# kernel (6.12): the nested machine of tests/e2e/nested.sh boots the kernel
# package linux-image-amd64 depends on in Debian 13 (NESTED_KERNEL_DIST=trixie:
# fetched through a private apt configuration, cached under the nested cache
# apart from the default tree), with this machine's QEMU. In one boot:
#   - the load matrix: every BPF configuration record can produce loads and
#     attaches on 6.12 (its verifier, CO-RE against its kvm module's BTF);
#   - minivm recorded on real KVM exits: every hypercall exactly (every field,
#     sequence and vCPU), the vCPU and nr filters, --no-file's in-BPF counts,
#     and vmcall on AMD (KVM's #UD exit and rewrite, seen on 6.12's KVM).
# What does not depend on the kernel (the exports, --metrics, -p, the trace
# file on the host) is checked on the default kernel by test_nested.sh; the
# scenarios and checks both run come from tests/e2e/minivm_checks.sh.
#
# Needs `make static` and, on the first run, Debian's archive (about 120 MB:
# the kernel package and this release's QEMU, busybox and perf into the
# nested cache). HT_E2E=0 skips it.
# tests/run: prepare ahead with --prepare
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/nested.sh"
CHECK_PREFIX=debian13_kernel_
source "$(dirname "$0")/minivm_checks.sh"

HT_STATIC=${HT_STATIC:-$OUTPUT/static/hypertrace-bpf}
MINIVM=${MINIVM:-$OUTPUT/guest/minivm}
LOAD_MATRIX=${LOAD_MATRIX:-$OUTPUT/static/test_load_matrix}
NESTED_KERNEL_DIST=trixie
# minivm's two vCPUs must run in parallel: two emulated CPUs.
export NESTED_SMP=${NESTED_SMP:-2}
nested_prepare_ahead "$@"

if [ "${HT_E2E:-1}" = 0 ]; then
	skip ${CHECK_PREFIX}e2e "disabled by HT_E2E=0"
	exit 0
fi
for f in "$HT_STATIC" "$MINIVM" "$LOAD_MATRIX"; do
	if [ ! -x "$f" ]; then
		fail ${CHECK_PREFIX}e2e "$f is missing: run 'make static' first"
		suite_exit
	fi
done

work=$(mktemp -d)
trap '[ "${HT_E2E_KEEP:-0}" = 1 ] && echo "  info: kept $work" || rm -rf "$work"' EXIT

{
	minivm_guest_prelude
	echo 'uname -r >/out/uname'
	minivm_guest_load_matrix
	minivm_guest_nofile
	cat <<'EOF'
rec a -v -- minivm $MIX
rec vcpu1 --vcpu 1 -- minivm $MIX
rec nr1001 --nr 1001 -- minivm $MIX
EOF
	minivm_guest_vmcall
} >"$work/guest.sh"

start=$(date +%s)
if ! nested_fetch 2>"$work/fetch.log"; then
	fail ${CHECK_PREFIX}boot "cannot fetch Debian 13's kernel, qemu and busybox: $NESTED_ERR"
	suite_exit
fi
fetched=$(date +%s)
release=$(cat "$NESTED_ROOT/kernel/release")
out=$work/out
if ! nested_run "$out" "$work/guest.sh" "$HT_STATIC" "$MINIVM" "$LOAD_MATRIX" 2>"$work/run.log"; then
	fail ${CHECK_PREFIX}boot "$NESTED_ERR"
	suite_exit
fi
F=$out/files
# The machine ran the kernel of Debian 13's tree, not the default one.
if [ "$(cat "$F/uname" 2>/dev/null)" = "$release" ]; then
	pass ${CHECK_PREFIX}boot
else
	fail ${CHECK_PREFIX}boot "the nested machine ran kernel '$(cat "$F/uname" 2>/dev/null)', want Debian 13's $release"
fi
echo "  info: kernel $release ($(grep '^linux-image-' "$NESTED_ROOT/MANIFEST")); fetch/validate $((fetched - start)) s, qemu run $(cat "$out/qemu_seconds") s (script started at guest uptime $(cat "$out/boot_seconds") s), ${NESTED_SMP} emulated CPUs"

check_load_matrix "$CHECK_PREFIX" "Debian 13 kernel $release"
check_nofile
check_mix_recording a
# Filters on real events: vCPU 1 only; nr 1001 only (minivm's mixed-in calls).
check_issued vcpu1 2000
check_record vcpu1 1000
check_csv vcpu1 1000 1000 1 1000
check_issued nr1001 2000
check_record nr1001 2000
check_csv nr1001 2000 1001 "0 1" 1000
check_vmcall

suite_exit
