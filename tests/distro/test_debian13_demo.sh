#!/usr/bin/env bash
# `sudo make demo` on Debian 13, in the Debian 13 root of test_debian13.sh
# (tests/distro/debian_root.sh, kept under .cache/distro). Where the CPU has
# no VMX/SVM, as here, the demo records inside the nested machine, which
# tests/e2e/nested.sh makes from the packages of the machine it runs on: on
# Debian 13 those are laid out otherwise than on Debian 12 (busybox in
# /usr/bin, the kernel's modules xz-compressed under /usr/lib/modules, its
# image zstd-compressed, QEMU 10 with TCG built in instead of a module).
#   debian13_nested_tree  the nested machine's tree prepared from Debian 13's
#                         packages and validated (no boot; runs with HT_E2E=0)
#   debian13_make_demo    `make demo` as the README says: exit status 0, and
#                         Debian 13's kernel in the nested machine recorded the
#                         demo's 2000 hypercalls, none dropped
# Runs when HT_DISTRO_TESTS=1 (.ci/run sets it), after test_debian13.sh has
# installed and built in the root (run alone, make demo does both itself).
# It needs the root test_debian13.sh leaves (it runs after it, beside the
# nested-machine suites: its own nested machine has its own cache).
# tests/run: alongside the nested-machine suites
# tests/run: after tests/distro/test_debian13.sh
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
source "$TOP/tests/distro/debian_root.sh"
SUITE=trixie
NAME=debian13

if [ "${HT_DISTRO_TESTS:-0}" != 1 ]; then
	skip ${NAME}_demo "set HT_DISTRO_TESTS=1 to run make demo in a Debian 13 root (.ci/run does)"
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	skip ${NAME}_demo "needs root (debootstrap, chroot, BPF)"
	exit 0
fi

t0=$(date +%s)
if ! droot_ensure $SUITE || ! droot_enter "$DR_ROOT"; then
	fail ${NAME}_demo_root "$DR_ERR"
	suite_exit
fi
root=$DR_ROOT
trap 'droot_leave "$root"' EXIT
if ! droot_ca_certificates "$root" || ! droot_copy_tree "$root" "$TOP"; then
	fail ${NAME}_demo_root "$DR_ERR"
	suite_exit
fi

# The tree as `make demo` prepares it (the same function, before it boots).
# install-deps first, as make demo does: it brings zstd, which unpacks
# Debian 13's kernel image.
log=$root/nested-fetch.log
# The root's packages leave node out (DR_DEPS_SKIP): so do these.
if droot_run "$root" env HT_DEPS_SKIP="$DR_DEPS_SKIP" bash -c 'cd /src/hypertrace-bpf && tests/install-deps.sh >/dev/null && tests/e2e/nested.sh fetch' >"$log" 2>&1; then
	pass ${NAME}_nested_tree
	manifest=$(sed -n 's/^\(linux-image-[^=]*\|busybox-static\|qemu-system-x86\)=/\1 /p' "$log" | tr '\n' ' ' | sed 's/ $//')
	tree=$(sed -n 's/^nested: ready: //p' "$log")
	boot=bzImage
	[ -s "$root$tree/kernel/vmlinux" ] && boot="vmlinux (PVH entry)"
	echo "  info: nested tree from Debian 13's packages: $manifest; boots the $boot"
else
	fail ${NAME}_nested_tree "tests/e2e/nested.sh fetch in the Debian 13 root: $(grep -v '^ ' "$log" | tail -n 3 | tr '\n' ' ')"
	suite_exit
fi

if [ "${HT_E2E:-1}" = 0 ]; then
	skip ${NAME}_make_demo "disabled by HT_E2E=0 (it boots the nested machine)"
	suite_exit
fi
log=$root/make-demo.log
droot_run "$root" env HT_DEPS_SKIP="$DR_DEPS_SKIP" bash -c 'cd /src/hypertrace-bpf && make demo' >"$log" 2>&1
status=$?
release=$(cat "$root$tree/kernel/release" 2>/dev/null)
ran=$(sed -n 's/^nested-demo: guest kernel \([^,]*\),.*/\1/p' "$log")
if [ "$status" != 0 ]; then
	fail ${NAME}_make_demo "exit status $status: $(grep -v '^ ' "$log" | tail -n 3 | tr '\n' ' ')"
elif ! grep -qx 'records: 2000' "$log" || ! grep -q '^dropped: 0 ' "$log"; then
	fail ${NAME}_make_demo "the report does not say 2000 records, 0 dropped: $(grep -E '^(records|dropped):' "$log" | tr '\n' ' ')"
elif [ -z "$release" ] || [ "$ran" != "$release" ]; then
	fail ${NAME}_make_demo "the nested machine ran kernel '${ran:-none}', not the tree's '${release:-none}'"
else
	pass ${NAME}_make_demo
	echo "  info: make demo: kernel $ran, $(sed -n 's/.*, \(qemu ran [0-9.]* s\)$/\1/p' "$log"); $(($(date +%s) - t0)) s in all"
fi
suite_exit
