#!/usr/bin/env bash
# `make test` on Debian 13 (trixie: clang 19, gcc 14, libbpf 1.5, elfutils
# 0.192), as a user of Debian 13 runs it: in a Debian 13 root made with
# debootstrap (tests/distro/debian_root.sh, kept under .cache/distro), the
# tracked sources are copied in, tests/install-deps.sh installs what they
# need from Debian 13's archive, `make SANITIZE=0 tests-build-suites` builds
# (all but the benchmarks and the fuzzers, whose suites are the host's; the
# tests without the sanitizers, which the host's run has),
# and tests/run runs
# every suite but the nested-machine ones (they boot their own kernels and
# run on the host; this root shares the host's kernel, so the BPF suites load
# and attach for real). Its PASS/FAIL/SKIP lines are relayed here prefixed
# with "debian13: ", so this runner's count covers both systems.
# Runs when HT_DISTRO_TESTS=1 (.ci/run sets it): the first run downloads about
# 600 MB and takes minutes.
# Its preparation (the root, its packages, the build; --prepare does only
# that, and nothing when the root is ready for this tree) and its run of the
# suites keep one CPU busy for about 13 minutes and share nothing with the
# nested-machine suites: tests/run runs it beside them. The preparation
# starts earlier, on the CPU the host's serial suites leave idle, once the
# kernel suites have ended (their synthetic events run with preemption on,
# and a busy other CPU once cost test_vm_churn a lifetime's numbers); the
# suite waits for it (a lock on the root) and finds the root ready.
# tests/run: alongside the nested-machine suites
# tests/run: alongside, long: first in its queue
# tests/run: prepare ahead with --prepare
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
source "$TOP/tests/distro/debian_root.sh"
SUITE=trixie
NAME=debian13
# --prepare: only make the root ready (see prepare below).
mode=${1:-}

if [ "${HT_DISTRO_TESTS:-0}" != 1 ]; then
	[ "$mode" = --prepare ] && exit 0
	skip $NAME "set HT_DISTRO_TESTS=1 to run make test in a Debian 13 root (.ci/run does; the first run downloads about 600 MB)"
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	[ "$mode" = --prepare ] && exit 0
	skip $NAME "needs root (debootstrap, chroot, BPF)"
	exit 0
fi

# The root with this tree copied in, its packages installed and the tree
# built: its fingerprint in $root/prepared, else why not (and status 1).
prepare() {
	local root=$DR_ROOT fp
	fp=$(tree_fingerprint)
	rm -f "$root/prepared"
	droot_enter "$root" || return 1
	if ! droot_ca_certificates "$root" || ! droot_copy_tree "$root" "$TOP"; then
		droot_leave "$root"
		return 1
	fi
	# The reference data that tests read beside the project (never tracked in
	# it) is beside the copy too, at the same relative path.
	rm -rf "$root/src/shared"
	if [ -d "$TOP/../shared/reference" ]; then
		mkdir -p "$root/src/shared" && cp -r "$TOP/../shared/reference" "$root/src/shared/" ||
			{ droot_leave "$root"; DR_ERR="cannot copy ../shared/reference into the root"; return 1; }
	fi
	droot_run "$root" env HT_DEPS_SKIP="$DR_DEPS_SKIP" bash -c '
		cd /src/hypertrace-bpf || exit 1
		# What the suites it skips (below) alone need is not installed.
		tests/install-deps.sh >/var/tmp/install-deps.log 2>&1 || { echo "install_deps: tests/install-deps.sh failed: $(tail -n 3 /var/tmp/install-deps.log | tr "\n" " ")"; exit 1; }
		# A git index of the copied files, as a clone has: the build test and
		# make deb take the tracked files from it.
		rm -rf .git && git init -q && git add -A || { echo "git_index: git init failed"; exit 1; }
		make -j2 SANITIZE=0 tests-build-suites >/var/tmp/make.log 2>&1 ||
			{ echo "tests_build: $(grep -E "error|warning" /var/tmp/make.log | head -n 5 | tr "\n" " ")"; exit 1; }' \
		>"$root/prepare.log" 2>&1
	local st=$?
	droot_leave "$root"
	[ $st = 0 ] || { DR_ERR=$(tail -n 1 "$root/prepare.log"); return 1; }
	echo "$fp" >"$root/prepared"
}

t0=$(date +%s)
# One preparation at a time: the suite waits here for one tests/run began
# ahead (--prepare), then finds the root ready.
mkdir -p "$DISTRO_CACHE/$SUITE" && exec {prepare_lock}>"$DISTRO_CACHE/$SUITE/prepare.lock" && flock "$prepare_lock" || {
	[ "$mode" = --prepare ] && exit 1
	fail ${NAME}_root "cannot lock $DISTRO_CACHE/$SUITE/prepare.lock"
	suite_exit
}
if ! droot_ensure $SUITE; then
	[ "$mode" = --prepare ] && exit 1
	fail ${NAME}_root "$DR_ERR"
	suite_exit
fi
root=$DR_ROOT
# A root prepared already for this very tree (by --prepare, ahead or by
# hand) is used as it is; else the suite prepares it.
if [ "$mode" = --prepare ]; then
	made_for_this_tree "$root/prepared" || prepare
	exit
fi
if made_for_this_tree "$root/prepared"; then
	echo "    ($NAME root prepared already for this tree, $(($(date +%s) - t0)) s waited)"
elif ! prepare; then
	fail ${NAME}_prepare "$DR_ERR"
	suite_exit
fi
pass tests_build_$NAME
if ! droot_enter "$root"; then
	fail ${NAME}_root "$DR_ERR"
	suite_exit
fi
trap 'droot_leave "$root"' EXIT
echo "    ($NAME root ready after $(($(date +%s) - t0)) s)"

skips="tests/e2e/test_nested the nested-machine suites run on the host, which boots their kernels
tests/distro/ this is the Debian 13 root
tests/debian/test_deb_install the host installs the packages into a clean Debian 13 root
tests/debian/test_deb_service the host boots the packaged service in a Debian 13 root
tests/service/test_service_ systemd does not boot under systemd-nspawn inside this chroot (its state stays offline); the host boots the service, and the packaged one in a Debian 13 root
tests/cli/ the program's own behaviour, the same on both systems: the host runs it; this root proves Debian 13's toolchain, libraries, packaging and readers
tests/term/ the program's own behaviour in a terminal, the same on both systems: the host runs it
tests/bench/ the benchmarks' harness: the host runs it
tests/fuzz/ fuzzing: the same harnesses over the same code, whose every input that ever failed the host replays, built with clang whatever CC is; this root's clang builds the BPF programs (tests_build_debian13), and the host fuzzes
tests/container/ the container image is built from the host's packages: the host builds it
tests/build/test_makefile the build's own rules (unprivileged, incremental, quiet, DESTDIR), the same on both systems: the host runs them; this root's toolchain built everything already (tests_build_debian13)
tests/export/test_chrome its reader is Chrome's trace engine from npm, the same JavaScript on both systems (node and npm would bring 340 of the 790 packages this root installs): the host runs it
tests/export/test_convert_output convert's own handling of its output files (names, modes, signals), the same on both systems: the host runs it
tests/kernel/test_vm_churn how the tables live through hundreds of VM lifetimes: the kernel's maps (the host's kernel, the same here) and the program's own sampler; the host runs it, and test_exits reads the same tables through Debian 13's libbpf here
tests/unit/test_input_scaling how time grows with input size, the program's own algorithms, the same on both systems: the host runs it
tests/export/test_perfetto_memory how memory grows with input size, the program's own algorithm, the same on both systems: the host runs it
tests/build/test_stage_includes the source tree's layering (docs/design.md's table), the same on both systems: the host checks it"

log=$root/make-test.log
# Relays the run: result lines prefixed and counted, the rest indented. The
# closing summary of the inner tests/run repeats its FAIL/SKIP lines: from
# there on nothing is counted again.
relay() {
	local line summary=0
	while IFS= read -r line; do
		if [ $summary = 0 ] && [[ $line =~ ^(Failed|Skipped):$ ]]; then
			summary=1
		fi
		if [ $summary = 0 ] && [[ $line =~ ^(PASS|FAIL|SKIP):\ (.*)$ ]]; then
			echo "${BASH_REMATCH[1]}: $NAME: ${BASH_REMATCH[2]}"
		else
			echo "    $NAME| $line"
		fi
	done
}
# One CPU: no preparation ahead (make deb) beside the suites here.
droot_run "$root" env TESTS_SKIP="$skips" TESTS_PREPARE=0 HT_DISTRO_TESTS=0 HT_REQUIRE_REFERENCE="${HT_REQUIRE_REFERENCE:-0}" bash -c '
	cd /src/hypertrace-bpf && tests/run' 2>&1 | tee "$log" | relay
status=${PIPESTATUS[0]}

# The inner runner's last line must be its count: anything else means it died.
last=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
if [ -z "$last" ]; then
	fail ${NAME}_run_completed "the run in the Debian 13 root ended (status $status) without its count"
else
	pass ${NAME}_run_completed
	echo "    ($NAME: $last; $(($(date +%s) - t0)) s in all)"
fi
suite_exit
