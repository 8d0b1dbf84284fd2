#!/usr/bin/env bash
# Nested end-to-end harness: boots Debian's own kernel under QEMU software
# emulation (TCG, `-cpu max` exposes SVM with NPT), loads KVM inside that
# machine and runs a script there, so hypertrace-bpf can be tested on real
# kvm_exit/kvm_hypercall/kvm_entry events on hosts whose /dev/kvm cannot run
# a guest (or that have no /dev/kvm at all).
#
# Nothing is installed on the host: the guest kernel, busybox-static and
# qemu-system-x86 with the shared libraries the host lacks and its firmware
# are fetched with `apt-get download` and unpacked with `dpkg-deb` into
# .cache/nested/ (ignored by git). x86-64 Debian-family hosts only.
#
# As a library (source it):
#   nested_fetch                        fill or validate the cache
#   nested_run OUTDIR SCRIPT [FILE...]  boot, run SCRIPT inside, collect results;
#                                       once more from the start after a stall
#   nested_run_once OUTDIR SCRIPT [FILE...]  the same, one attempt
# As a command:
#   tests/e2e/nested.sh fetch
#   tests/e2e/nested.sh run OUTDIR SCRIPT [FILE...]
#
# Inside the guest SCRIPT runs as root under busybox sh, in /out (also
# $OUT), with the FILEs (static binaries) in /bin, /proc, /sys, /dev
# (devtmpfs), /sys/kernel/tracing and /sys/fs/bpf mounted and kvm-amd
# loaded. Every regular file the script leaves in /out is copied back: on a
# virtio disk (a tar archive; NESTED_RESULT_MODULES), its name and size on a
# second serial port; or, where that disk does not come up, over that port,
# gzipped and base64-encoded with its size and sha256. (The port moves ~300
# KB/s and gzip ~2 MB/s under TCG: 38 MB of results took 35 s to send; the
# disk takes under a second.)
# After nested_run returns 0:
#   OUTDIR/stdout       the script's stdout and stderr
#   OUTDIR/status       the script's exit status
#   OUTDIR/files/NAME   the files the script wrote to /out
#   OUTDIR/console.log  the guest console (kernel, /init and script output)
#   OUTDIR/boot_seconds guest uptime when the script started
#   OUTDIR/qemu_seconds wall time of the whole qemu run
# nested_run returns non-zero, with the reason in NESTED_ERR and on stderr,
# when the machine did not boot, KVM did not load, the results did not
# arrive complete, or the machine stalled twice in a row. The script's own
# exit status does not affect it.
#
# Emulation stalls. QEMU's TCG sometimes stops running the machine for a
# while: the host is busy, or, while the machine runs a KVM guest of its own,
# its timer interrupt is not delivered until another interrupt comes (seen:
# the machine's soft lockup report names the guest's vCPU thread, stuck in
# KVM_RUN). Nothing inside can tell that from a hang, so nested_run tells
# a stall from a failure and reruns the whole machine from the start, once,
# after a stall; it prints one "  info:" line saying so, and a second stall
# in a row fails. A stall is
#   - a machine silent for NESTED_SILENCE s: /init prints a heartbeat every
#     2 s, so a silent console means the machine does not run, never that a
#     step is quiet. After every NESTED_KICK s of silence a line is typed on
#     its console: that interrupt wakes a machine waiting for a lost one;
#   - a line the script appended to /out/stalls (tests/e2e/l2_guest.sh: a
#     KVM guest that did not boot);
#   - lockup or RCU stall reports, of the machine (its console) or of a KVM
#     guest in it (/out/NAME.kmsg and NAME.console), that a pause of the
#     whole machine explains (tests/e2e/stalls.sh).
# A BUG, Oops, WARNING, panic, hung task, or a lockup of some vCPUs only, in
# any of those logs, is a failure: that run is never retried.
# Pauses the machine survives (a gap in its heartbeat, woken by a kick) are
# not retried: the lockup detectors of the machine (and of the KVM guests of
# tests/e2e/l2_guest.sh) are set to report only what lasts longer than the
# silence that kills a run, so they stay quiet about them, and what the
# script checks is as valid as on a slow machine. nested_run prints one info
# line about them.
#
# Environment:
#   NESTED_CACHE    cache directory (default: <repo>/.cache/nested)
#   NESTED_KERNEL_DIST  the Debian release whose kernel the machine boots, by
#                   its suite name (e.g. trixie for Debian 13's 6.12); default:
#                   the kernel of this machine's own apt sources. The kernel
#                   package (what linux-image-amd64 depends on there) comes
#                   through a private apt configuration in
#                   NESTED_CACHE/apt-DIST: the sources this machine has for
#                   Debian's archive (and its security archive), with their
#                   release name replaced; this machine's apt sources are
#                   never changed. QEMU, busybox and perf still come from
#                   this machine's release. Each release's tree is cached
#                   apart (NESTED_CACHE/current-DIST).
#   NESTED_VMM_DIST the Debian release whose QEMU the machine runs its own
#                   KVM guests with (tests/e2e/l2_guest.sh), the same as
#                   NESTED_KERNEL_DIST (e.g. trixie: a Debian 13 host, its
#                   kernel and QEMU 10); default: this machine's QEMU.
#                   qemu-system-x86, its firmware and the whole closure of
#                   its libraries, libc6 included, come through the private
#                   apt configuration and are kept in the tree's vmm/; the
#                   machine's other programs (perf) then run on that
#                   release's libc, which is newer. The emulator stays this
#                   machine's QEMU: QEMU 10's TCG as the emulator made every
#                   KVM guest of the machine triple-fault in its kernel's
#                   paging trampoline (a #PF on the fetch just after paging
#                   is enabled, then #DF; Debian 12's and 13's guest
#                   kernels, npt=0 and npt=1), where QEMU 7.2 boots them.
#   NESTED_TIMEOUT  seconds of the emulator's CPU time one qemu run may take
#                   (default: 300): the machine's progress, whatever else
#                   the host runs; and at most NESTED_WALL_FACTOR (3) times
#                   as many seconds of wall time (a machine idle forever)
#   NESTED_SMP      virtual CPUs of the emulated machine (default: 2)
#   NESTED_TCG_OPTS options for -accel tcg (default: thread=single)
#   NESTED_ICOUNT   -icount options (default: none): the emulated machine's
#                   clock then counts its instructions, not the host's time
#   NESTED_MEM      its memory in MiB (default: 512; read when the machine
#                   starts, so a script sets its own default after sourcing
#                   this file)
#   NESTED_REFRESH  1: ask the archive again and refetch what changed
#   NESTED_VERBOSE  1: copy the guest console to stderr while it runs
#   NESTED_APPEND   more kernel command line for the emulated machine
#   NESTED_KVM_AMD_PARAMS  module parameters for kvm-amd (e.g. npt=0)
#   NESTED_SILENCE  seconds without console or result output after which the
#                   run is killed as stalled (NESTED_STALLED=1; default: 60);
#                   0: never (and no kicks)
#   NESTED_KICK     seconds of silence after which, and then again every as
#                   many, a line is typed on the console (default: 6)
#   NESTED_STAGE_HOOK  a function called as HOOK STAGE_DIR before the
#                   initramfs is packed, to add files (nested_stage_program
#                   copies a program of the fetched tree with its libraries)
# shellcheck shell=bash

NESTED_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$NESTED_TOP/tests/e2e/stalls.sh"
NESTED_CACHE=${NESTED_CACHE:-$NESTED_TOP/.cache/nested}
NESTED_TIMEOUT=${NESTED_TIMEOUT:-300}
# An emulated machine given a third of a CPU by a busy host runs a third as
# fast: a wall-clock limit failed such a run (test_nested_hypertrace.sh beside
# two CPU hogs), a limit on the emulator's own CPU time does not.
NESTED_WALL_FACTOR=${NESTED_WALL_FACTOR:-3}
NESTED_SMP=${NESTED_SMP:-2}
# Multi-threaded TCG (one host thread per emulated CPU, qemu's default) is
# not reliable for nested SVM with 2 CPUs in qemu 7.2: KVM guests stalled
# mid-run or jumped to garbage, and once the emulated kernel itself died
# ("corrupted stack end detected inside scheduler"). Round-robin TCG still
# gives the machine 2 CPUs, so vCPU threads run in parallel and migrate as
# far as the kernel inside can tell, and showed no such failure.
NESTED_TCG_OPTS=${NESTED_TCG_OPTS-thread=single}
NESTED_ICOUNT=${NESTED_ICOUNT:-}
NESTED_APPEND=${NESTED_APPEND:-}
NESTED_KVM_AMD_PARAMS=${NESTED_KVM_AMD_PARAMS:-}
NESTED_SILENCE=${NESTED_SILENCE:-60}
NESTED_KICK=${NESTED_KICK:-6}
NESTED_STAGE_HOOK=${NESTED_STAGE_HOOK:-}
NESTED_KERNEL_DIST=${NESTED_KERNEL_DIST:-}
NESTED_VMM_DIST=${NESTED_VMM_DIST:-}
NESTED_VMM_PKGS=()
NESTED_APT_OPTS=()
NESTED_KAPT=()
NESTED_STALLED=0
NESTED_KICKS=0
NESTED_ERR=
# The lockup detectors of an emulated kernel measure wall-clock time, which
# runs on while the emulator pauses the machine. watchdog_thresh=60 (the
# kernel's maximum): a soft lockup is reported after 120 s (default 20 s);
# the RCU stall timeout is 120 s (default 21 s). Both are twice the silence
# watchdog's 60 s: a pause long enough to be reported is a machine already
# killed as silent, so a pause of one busy vCPU while the others idle (which
# no log can tell from a lockup of that vCPU) is never reported. Lockups that
# last longer are still reported, and the functional checks still fail on a
# guest that hangs.
NESTED_DETECTORS="watchdog_thresh=60 rcupdate.rcu_cpu_stall_timeout=120"
# Bumped when the layout of a cached tree changes, so older trees are rebuilt.
NESTED_LAYOUT=3

# The kernel modules KVM needs in the guest, in load order (Debian builds kvm
# as a module; there is no modules.dep in the initramfs, so order matters).
NESTED_MODULES=(
	virt/lib/irqbypass
	drivers/crypto/ccp/ccp
	arch/x86/kvm/kvm
	arch/x86/kvm/kvm-amd
)
# Modules of the same kernel for the KVM guests the machine runs
# (tests/e2e/l2_guest.sh), never loaded by the machine itself: msr gives a
# guest /dev/cpu/N/msr (guest/exitload msr). They live in kernel/extra/ of
# the tree and are no part of its validation: a tree made before they were
# listed stays valid and gets them on first use (nested_extra_module), and
# the layout is unchanged.
NESTED_EXTRA_MODULES=(
	arch/x86/kernel/msr
)
# Modules that give the machine its results disk (/dev/vda), in load order:
# each one the kernel has as a module, in kernel/results/ of the tree
# (Debian's 6.12 builds virtio and virtio_pci in; 6.1 has all as modules).
# Loaded only once the script has ended. A tree without them (made before
# they were listed, or whose kernel lacks virtio_blk) sends its results over
# the serial port instead, as before.
NESTED_RESULT_MODULES=(
	drivers/virtio/virtio_ring
	drivers/virtio/virtio
	drivers/virtio/virtio_pci_legacy_dev
	drivers/virtio/virtio_pci_modern_dev
	drivers/virtio/virtio_pci
	drivers/block/virtio_blk
)

nested_err() {
	NESTED_ERR=$*
	echo "nested: $*" >&2
}

nested_log() { echo "nested: $*" >&2; }

# nested_installed PKG: true if dpkg has PKG installed on the host.
nested_installed() {
	local s
	s=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) || return 1
	[[ $s == *"ok installed"* ]]
}

# apt-cache reads the whole package lists on every call (about a second when
# apt keeps no binary cache, as in Debian's container images), so each
# helper below asks about many packages at once.

# The helpers below ask apt with the options in NESTED_APT_OPTS (an array;
# none unless set).

# nested_candidates PKG...: prints "PKG VERSION" for each PKG apt can download.
nested_candidates() {
	apt-cache ${NESTED_APT_OPTS[@]+"${NESTED_APT_OPTS[@]}"} policy "$@" 2>/dev/null |
		awk '/^[^ ]/ { sub(/:$/, "", $1); p = $1 } $1 == "Candidate:" && $2 != "(none)" { print p, $2 }'
}

# nested_depends PKG...: prints "PKG DEP" for what each PKG depends on. Of a
# group of alternatives every member is printed: a spare library costs
# little, a missing one makes qemu unusable.
nested_depends() {
	apt-cache ${NESTED_APT_OPTS[@]+"${NESTED_APT_OPTS[@]}"} depends --no-recommends --no-suggests --no-conflicts --no-breaks \
		--no-replaces --no-enhances "$@" 2>/dev/null |
		awk '/^[^ ]/ { p = $1 }
			($1 ~ /^\|?(Pre)?Depends:$/) && $2 !~ /^</ { print p, $2 }'
}

# nested_lib_closure ALL DEP...: prints the library packages (lib*, zlib1g)
# among DEPs and what they depend on, breadth first with one apt-cache call
# per level; with ALL 0, one the host has installed is left out, and so is
# what only it needs (the host's own serves).
nested_lib_closure() {
	local all=$1 d deps level
	local -A seen=()
	shift
	deps=$(printf '%s\n' "$@" | sort -u)
	while [ -n "$deps" ]; do
		level=()
		for d in $deps; do
			[[ $d == lib* || $d == zlib1g ]] || continue
			[ -z "${seen[$d]:-}" ] || continue
			seen[$d]=1
			[ "$all" = 1 ] || ! nested_installed "$d" || continue
			echo "$d"
			level+=("$d")
		done
		[ ${#level[@]} -gt 0 ] || break
		deps=$(nested_depends "${level[@]}" | awk '{ print $2 }' | sort -u)
	done
}

# nested_resolve: sets NESTED_PKGS to "package=version" for everything to
# download. The libraries are the closure of qemu-system-x86's library
# dependencies that the host has not installed; installed ones are used from
# the host (same release, and the host's own libc must stay in charge).
nested_resolve() {
	local kpkg kver p d deps
	deps=$(nested_depends qemu-system-x86 linux-perf)
	if [ -z "$deps" ]; then
		# A fresh container may have no package lists yet.
		if [ "$(id -u)" -eq 0 ]; then
			nested_log "apt knows no packages; running apt-get update"
			apt-get update -qq >/dev/null 2>&1 || { nested_err "apt-get update failed"; return 1; }
			deps=$(nested_depends qemu-system-x86 linux-perf)
		fi
		[ -n "$deps" ] || { nested_err "apt cannot find qemu-system-x86 (run apt-get update as root)"; return 1; }
	fi
	nested_kernel_apt || return 1
	# linux-image-amd64 is a metapackage: its dependency names the real,
	# versioned kernel package.
	NESTED_APT_OPTS=(${NESTED_KAPT[@]+"${NESTED_KAPT[@]}"})
	kpkg=$(nested_depends linux-image-amd64 | awk '$2 ~ /^linux-image-[0-9]/ && !seen++ { print $2 }')
	kver=
	[ -z "$kpkg" ] || kver=$(nested_candidates "$kpkg" | awk '{ print $2 }')
	NESTED_APT_OPTS=()
	[ -n "$kpkg" ] || { nested_err "cannot find the kernel package linux-image-amd64 depends on${NESTED_KERNEL_DIST:+ in $NESTED_KERNEL_DIST}"; return 1; }
	[ -n "$kver" ] || { nested_err "apt has no candidate for $kpkg"; return 1; }
	NESTED_KPKG=$kpkg=$kver
	# qemu-system-common has the TCG accelerator module (QEMU 7.2),
	# qemu-system-data the option ROMs (linuxboot_dma.bin, kvmvapic.bin),
	# seabios bios-256k.bin.
	# linux-perf is not run on the host: the nested machine runs it, and runs
	# this qemu too (for a KVM guest of its own).
	local want=(busybox-static qemu-system-x86 qemu-system-common qemu-system-data seabios linux-perf)
	deps=$(awk '$1 == "qemu-system-x86" || $1 == "linux-perf" { print $2 }' <<<"$deps")
	while read -r d; do want+=("$d"); done < <(nested_lib_closure 0 $deps)
	local -A ver=()
	while read -r p d; do ver[$p]=$d; done < <(nested_candidates "${want[@]}")
	NESTED_PKGS=("$NESTED_KPKG")
	for p in "${want[@]}"; do
		[ -n "${ver[$p]:-}" ] || { nested_err "apt has no candidate for $p"; return 1; }
		NESTED_PKGS+=("$p=${ver[$p]}")
	done
	NESTED_VMM_PKGS=()
	[ -z "$NESTED_VMM_DIST" ] || nested_vmm_resolve
}

# nested_vmm_resolve: sets NESTED_VMM_PKGS to "package=version" for the QEMU
# of NESTED_VMM_DIST (through NESTED_KAPT): qemu-system-x86, its firmware
# and the whole closure of its libraries (none taken from this machine,
# whose libc is older). A dependency with no candidate is a virtual
# package or a spare alternative: skipped here; nested_validate finds a
# library that is really missing.
nested_vmm_resolve() {
	local p d want=(qemu-system-x86 qemu-system-common qemu-system-data seabios)
	local -A ver=()
	NESTED_APT_OPTS=("${NESTED_KAPT[@]}")
	while read -r d; do want+=("$d"); done < <(nested_lib_closure 1 $(nested_depends qemu-system-x86 | awk '{ print $2 }'))
	while read -r p d; do ver[$p]=$d; done < <(nested_candidates "${want[@]}")
	NESTED_APT_OPTS=()
	for p in "${want[@]}"; do
		if [ -n "${ver[$p]:-}" ]; then
			NESTED_VMM_PKGS+=("$p=${ver[$p]}")
		elif [[ $p == qemu-* ]]; then
			nested_err "apt has no candidate for $p in $NESTED_VMM_DIST"
			return 1
		fi
	done
}

# nested_kernel_apt: sets NESTED_KAPT to the apt options that find the
# kernel package: none for this machine's own release; for
# NESTED_KERNEL_DIST, a private configuration (sources, lists, caches and
# no preferences of this machine) whose lists it brings up to date.
nested_kernel_apt() {
	local dir dist=$NESTED_KERNEL_DIST codename uri rel comp keyring= line
	NESTED_KAPT=()
	[ -n "$dist" ] || return 0
	codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
	[ -n "$codename" ] || { nested_err "cannot tell this machine's Debian release (no VERSION_CODENAME in /etc/os-release)"; return 1; }
	dir=$NESTED_CACHE/apt-$dist
	mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial" "$dir/empty" ||
		{ nested_err "cannot create $dir"; return 1; }
	[ -f /usr/share/keyrings/debian-archive-keyring.gpg ] && keyring=" [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]"
	# This machine's sources for Debian's archives, CODENAME[-updates|-security]
	# main (by the codename in their Release files, whatever suite name the
	# sources use), with the codename replaced.
	: >"$dir/sources.list.new"
	while read -r uri rel comp; do
		[ "$comp" = main ] || continue
		case $rel in "$codename" | "$codename"-*) ;; *) continue ;; esac
		line="deb$keyring $uri $dist${rel#"$codename"} main"
		grep -qxF "$line" "$dir/sources.list.new" || echo "$line" >>"$dir/sources.list.new"
	done < <(apt-get indextargets --format '$(REPO_URI) $(CODENAME) $(COMPONENT)' 'Created-By: Packages' 'Origin: Debian' 2>/dev/null)
	[ -s "$dir/sources.list.new" ] ||
		{ nested_err "this machine's apt sources have no Debian archive for $codename to take $dist's kernel from"; return 1; }
	mv "$dir/sources.list.new" "$dir/sources.list" || return 1
	NESTED_KAPT=(-o "Dir::Etc::SourceList=$dir/sources.list" -o "Dir::Etc::SourceParts=$dir/empty"
		-o "Dir::Etc::Preferences=$dir/empty/none" -o "Dir::Etc::PreferencesParts=$dir/empty"
		-o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache" -o Acquire::Languages=none)
	nested_log "updating the package lists of $dist (private apt configuration in $dir)"
	apt-get -q "${NESTED_KAPT[@]}" update >"$dir/update.log" 2>&1 ||
		{ nested_err "apt-get update for $dist failed: $(tail -n 2 "$dir/update.log" | tr '\n' ' ')"; return 1; }
}

# nested_qemu_env: sets NESTED_QEMU (command array) for the tree in $1.
nested_qemu_env() {
	local root=$1 d libpath=
	for d in "$root"/usr/lib/*-linux-gnu "$root"/lib/*-linux-gnu; do
		[ -d "$d" ] && libpath+=${libpath:+:}$d
	done
	# Debian 12 builds the accelerators as loadable modules: without
	# QEMU_MODULE_DIR qemu looks for them under /usr/lib.
	NESTED_QEMU=(env "LD_LIBRARY_PATH=$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
		"QEMU_MODULE_DIR=$(echo "$root"/usr/lib/*-linux-gnu/qemu)"
		"$root/usr/bin/qemu-system-x86_64"
		-L "$root/usr/share/qemu" -L "$root/usr/share/seabios")
}

# nested_validate DIR: true if DIR is a complete, usable tree.
nested_validate() {
	local root=$1 m missing tcg
	[ -f "$root/MANIFEST" ] || { NESTED_ERR="no MANIFEST in $root"; return 1; }
	grep -qx "layout $NESTED_LAYOUT" "$root/MANIFEST" || { NESTED_ERR="tree in $root has an old layout"; return 1; }
	[ "$(sed -n 's/^kernel-dist //p' "$root/MANIFEST")" = "$NESTED_KERNEL_DIST" ] ||
		{ NESTED_ERR="tree in $root has a kernel of another release"; return 1; }
	[ -s "$root/kernel/vmlinuz" ] || { NESTED_ERR="no kernel in $root"; return 1; }
	for m in "${NESTED_MODULES[@]}"; do
		[ -s "$root/kernel/modules/${m##*/}.ko" ] || { NESTED_ERR="module ${m##*/}.ko missing in $root"; return 1; }
	done
	[ -x "$root/busybox" ] || { NESTED_ERR="no busybox in $root"; return 1; }
	[ -s "$root/usr/share/seabios/bios-256k.bin" ] || { NESTED_ERR="no bios-256k.bin in $root"; return 1; }
	[ -s "$root/usr/share/qemu/linuxboot_dma.bin" ] || { NESTED_ERR="no linuxboot_dma.bin in $root"; return 1; }
	[ -x "$root/usr/bin/perf" ] || { NESTED_ERR="no perf in $root"; return 1; }
	[ "$(sed -n 's/^vmm-dist //p' "$root/MANIFEST")" = "$NESTED_VMM_DIST" ] ||
		{ NESTED_ERR="tree in $root has the QEMU of another release"; return 1; }
	if [ -n "$NESTED_VMM_DIST" ]; then
		missing=$(nested_vmm_libs "$root/vmm") || return 1
		missing=$(sed -n 's/^missing://p' <<<"$missing" | tr '\n' ' ')
		[ -z "$missing" ] || { NESTED_ERR="the QEMU of $NESTED_VMM_DIST needs libraries that are missing: $missing"; return 1; }
	fi
	# QEMU 7.2 (Debian 12) loads TCG as a module; QEMU 10 (Debian 13) has
	# it built in, and `-accel help` below finds it either way.
	tcg=$(echo "$root"/usr/lib/*-linux-gnu/qemu/accel-tcg-x86_64.so)
	[ -s "$tcg" ] || tcg=
	nested_qemu_env "$root"
	# ldd reports libraries neither the host nor the tree provides.
	missing=$("${NESTED_QEMU[@]:0:2}" ldd "$root/usr/bin/qemu-system-x86_64" ${tcg:+"$tcg"} "$root/usr/bin/perf" 2>&1 | awk '/not found/ { print $1 }' | sort -u | tr '\n' ' ')
	[ -z "$missing" ] || { NESTED_ERR="qemu or perf needs libraries that are missing: $missing"; return 1; }
	"${NESTED_QEMU[@]}" -version >/dev/null 2>&1 || { NESTED_ERR="qemu-system-x86_64 -version fails"; return 1; }
	"${NESTED_QEMU[@]}" -accel help 2>/dev/null | grep -x tcg >/dev/null || { NESTED_ERR="qemu-system-x86_64 in $root has no TCG accelerator"; return 1; }
}

# nested_build_tree TMPDIR: downloads NESTED_PKGS and lays out TMPDIR/root.
nested_build_tree() {
	local tmp=$1 root=$1/root deb debs p m f kdir
	mkdir -p "$tmp/debs" "$tmp/kernel-x" "$root/kernel/modules" || return 1
	# apt drops privileges to _apt for downloading: let it write there.
	if [ "$(id -u)" -eq 0 ] && id _apt >/dev/null 2>&1; then chown _apt "$tmp/debs"; fi
	nested_log "downloading ${NESTED_PKGS[*]}${NESTED_KERNEL_DIST:+ (the kernel from $NESTED_KERNEL_DIST)}"
	(cd "$tmp/debs" && apt-get download -q ${NESTED_KAPT[@]+"${NESTED_KAPT[@]}"} "$NESTED_KPKG" &&
		apt-get download -q "${NESTED_PKGS[@]:1}") >"$tmp/apt.log" 2>&1 ||
		{ nested_err "apt-get download failed: $(tail -n 3 "$tmp/apt.log" | tr '\n' ' ')"; return 1; }
	for p in "${NESTED_PKGS[@]}"; do
		p=${p%%=*}
		debs=("$tmp/debs/${p}_"*.deb)
		deb=${debs[0]}
		[ -f "$deb" ] || { nested_err "download of $p produced no .deb"; return 1; }
		case $p in
		linux-image-*)
			# Only the kernel and a few modules: the full tree is ~400 MB.
			local pats=('./boot/vmlinuz-*' './boot/config-*')
			for m in "${NESTED_MODULES[@]}" "${NESTED_EXTRA_MODULES[@]}"; do pats+=("*/kernel/$m.ko*"); done
			dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp/kernel-x" --wildcards "${pats[@]}" 2>"$tmp/tar.log" ||
				{ nested_err "cannot unpack $deb: $(tr '\n' ' ' <"$tmp/tar.log")"; return 1; }
			nested_extract_result_modules "$deb" "$tmp/kernel-x"
			;;
		busybox-static)
			dpkg-deb -x "$deb" "$tmp/busybox-x" || { nested_err "cannot unpack $deb"; return 1; }
			;;
		*)
			dpkg-deb -x "$deb" "$root" || { nested_err "cannot unpack $deb"; return 1; }
			;;
		esac
	done
	debs=("$tmp"/kernel-x/boot/vmlinuz-*)
	f=${debs[0]}
	[ -f "$f" ] || { nested_err "no vmlinuz in the kernel package"; return 1; }
	mv "$f" "$root/kernel/vmlinuz" || return 1
	kdir=$(basename "$f")
	echo "${kdir#vmlinuz-}" >"$root/kernel/release"
	# Under TCG the bzImage's own decompressor takes ~7 s of every boot; an
	# uncompressed vmlinux boots through its PVH entry point instead. Without
	# PVH or a host decompressor the bzImage is used as it is.
	if grep -qx 'CONFIG_PVH=y' "$tmp"/kernel-x/boot/config-* 2>/dev/null; then
		nested_extract_vmlinux "$root/kernel/vmlinuz" "$root/kernel/vmlinux" ||
			nested_log "cannot unpack vmlinux from the bzImage; booting the bzImage (slower)"
	fi
	# /usr/bin on Debian 13 (merged /usr), /bin before.
	for f in usr/bin/busybox bin/busybox ""; do
		[ -z "$f" ] || [ -f "$tmp/busybox-x/$f" ] && break
	done
	[ -n "$f" ] && mv "$tmp/busybox-x/$f" "$root/busybox" ||
		{ nested_err "no busybox in busybox-static (neither usr/bin/busybox nor bin/busybox)"; return 1; }
	for m in "${NESTED_MODULES[@]}"; do
		nested_unpack_module "$tmp/kernel-x" "$m" "$root/busybox" "$root/kernel/modules" || return 1
	done
	nested_unpack_extra_modules "$tmp/kernel-x" "$root/busybox" "$root/kernel/extra" || return 1
	nested_unpack_result_modules "$tmp/kernel-x" "$root/busybox" "$root/kernel/results" || return 1
	[ ${#NESTED_VMM_PKGS[@]} = 0 ] || nested_build_vmm "$tmp" || return 1
	{
		echo "layout $NESTED_LAYOUT"
		[ -z "$NESTED_KERNEL_DIST" ] || echo "kernel-dist $NESTED_KERNEL_DIST"
		[ -z "$NESTED_VMM_DIST" ] || echo "vmm-dist $NESTED_VMM_DIST"
		printf '%s\n' "${NESTED_PKGS[@]}" ${NESTED_VMM_PKGS[@]+"${NESTED_VMM_PKGS[@]}"}
	} >"$root/MANIFEST"
}

# nested_build_vmm TMPDIR: downloads NESTED_VMM_PKGS and unpacks them into
# the tree's vmm/ (TMPDIR/root/vmm).
nested_build_vmm() {
	local tmp=$1 p debs
	mkdir -p "$tmp/vmm-debs" "$tmp/root/vmm" || return 1
	if [ "$(id -u)" -eq 0 ] && id _apt >/dev/null 2>&1; then chown _apt "$tmp/vmm-debs"; fi
	nested_log "downloading the QEMU of $NESTED_VMM_DIST for the machine's KVM guests: ${NESTED_VMM_PKGS[*]}"
	(cd "$tmp/vmm-debs" && apt-get download -q "${NESTED_KAPT[@]}" "${NESTED_VMM_PKGS[@]}") >"$tmp/vmm-apt.log" 2>&1 ||
		{ nested_err "apt-get download from $NESTED_VMM_DIST failed: $(tail -n 3 "$tmp/vmm-apt.log" | tr '\n' ' ')"; return 1; }
	for p in "${NESTED_VMM_PKGS[@]}"; do
		debs=("$tmp/vmm-debs/${p%%=*}_"*.deb)
		[ -f "${debs[0]}" ] || { nested_err "download of ${p%%=*} produced no .deb"; return 1; }
		dpkg-deb -x "${debs[0]}" "$tmp/root/vmm" || { nested_err "cannot unpack ${debs[0]}"; return 1; }
	done
}

# nested_vmm_libs VMM: prints the libraries the QEMU in VMM (a tree's vmm/)
# loads, as its own loader (the first line) resolves them in VMM alone.
nested_vmm_libs() {
	local vmm=$1 ld d libpath=
	for ld in "$vmm"/usr/lib64/ld-linux-x86-64.so.2 "$vmm"/lib64/ld-linux-x86-64.so.2 ""; do
		[ -z "$ld" ] || [ -e "$ld" ] && break
	done
	[ -n "$ld" ] || { NESTED_ERR="no ld-linux-x86-64.so.2 in $vmm"; return 1; }
	for d in "$vmm"/usr/lib/*-linux-gnu "$vmm"/lib/*-linux-gnu; do
		[ -d "$d" ] && libpath+=${libpath:+:}$d
	done
	echo "$ld"
	"$ld" --library-path "$libpath" --list "$vmm/usr/bin/qemu-system-x86_64" 2>&1 |
		awk '/not found/ { print "missing:" $1; next } $2 == "=>" && $3 ~ /^\// { print $3 }'
}

# nested_unpack_module DIR MODULE BUSYBOX DESTDIR: DESTDIR/NAME.ko, a plain
# ELF (the guest's busybox insmod wants one; newer Debian kernels ship
# compressed modules) of MODULE (e.g. arch/x86/kvm/kvm) from the kernel
# package unpacked (in part) in DIR.
nested_unpack_module() {
	local dir=$1 m=$2 busybox=$3 dest=$4/${2##*/}.ko f
	f=$(find "$dir" -path "*/kernel/$m.ko*" -print -quit)
	[ -n "$f" ] || { nested_err "module $m not in the kernel package"; return 1; }
	mkdir -p "$4" || return 1
	case $f in
	*.ko) cp "$f" "$dest" ;;
	*.ko.xz) "$busybox" unxz -c "$f" >"$dest" ;;
	*.ko.gz) "$busybox" gunzip -c "$f" >"$dest" ;;
	*) nested_err "cannot decompress $f"; return 1 ;;
	esac || { rm -f "$dest"; nested_err "cannot unpack module $f"; return 1; }
}

# nested_unpack_extra_modules DIR BUSYBOX DESTDIR: NESTED_EXTRA_MODULES into
# DESTDIR, each written whole under a temporary name first (a run reading
# the tree never sees half a module), and DESTDIR/done once all are there.
nested_unpack_extra_modules() {
	local dir=$1 busybox=$2 dest=$3 m
	mkdir -p "$dest/new" || return 1
	for m in "${NESTED_EXTRA_MODULES[@]}"; do
		nested_unpack_module "$dir" "$m" "$busybox" "$dest/new" && mv "$dest/new/${m##*/}.ko" "$dest/" || return 1
	done
	rmdir "$dest/new" && printf '%s\n' "${NESTED_EXTRA_MODULES[@]}" >"$dest/done"
}

# nested_unpack_result_modules DIR BUSYBOX DESTDIR: those of
# NESTED_RESULT_MODULES that DIR (an unpacked kernel package) has as modules
# into DESTDIR, and DESTDIR/done (the ones unpacked) once all are there.
nested_unpack_result_modules() {
	local dir=$1 busybox=$2 dest=$3 m
	rm -rf "$dest" && mkdir -p "$dest/new" || return 1
	for m in "${NESTED_RESULT_MODULES[@]}"; do
		[ -n "$(find "$dir" -path "*/kernel/$m.ko*" -print -quit)" ] || continue
		nested_unpack_module "$dir" "$m" "$busybox" "$dest/new" && mv "$dest/new/${m##*/}.ko" "$dest/" || return 1
	done
	rmdir "$dest/new" && (cd "$dest" && ls -- *.ko 2>/dev/null) >"$dest/done"
}

# nested_kernel_deb ROOT TMP WHAT: downloads the kernel package the tree
# ROOT was made from (its MANIFEST names it) into TMP/debs, for WHAT, and
# makes TMP/kernel-x to unpack it into; NESTED_ERR says why not.
nested_kernel_deb() {
	local root=$1 tmp=$2 kpkg
	kpkg=$(sed -n '/^linux-image-/{p;q}' "$root/MANIFEST")
	[ -n "$kpkg" ] || { nested_err "no kernel package in $root/MANIFEST"; return 1; }
	nested_log "adding $3 to $root: downloading $kpkg"
	nested_kernel_apt || return 1
	mkdir -p "$tmp/debs" "$tmp/kernel-x" || return 1
	# apt drops privileges to _apt for downloading: let it write there.
	if [ "$(id -u)" -eq 0 ] && id _apt >/dev/null 2>&1; then chown _apt "$tmp/debs"; fi
	(cd "$tmp/debs" && apt-get download -q ${NESTED_KAPT[@]+"${NESTED_KAPT[@]}"} "$kpkg") >"$tmp/apt.log" 2>&1 ||
		{ nested_err "apt-get download $kpkg failed: $(tail -n 3 "$tmp/apt.log" | tr '\n' ' ')"; return 1; }
}

# nested_extract_result_modules DEB DIR: those of NESTED_RESULT_MODULES that
# the kernel package DEB has as modules, unpacked into DIR. (A name the
# package lacks, built in, is no error: tar's status is not the answer.)
nested_extract_result_modules() {
	local m pats=()
	for m in "${NESTED_RESULT_MODULES[@]}"; do pats+=("*/kernel/$m.ko*"); done
	dpkg-deb --fsys-tarfile "$1" | tar -x -C "$2" --wildcards "${pats[@]}" 2>/dev/null
	return 0
}

# nested_result_modules: the tree's results-disk modules (kernel/results/),
# added to a tree made before they were listed (its kernel package once more,
# under the cache's lock). Fails (and the run uses the serial port) when they
# cannot be had.
nested_result_modules() {
	local root=${NESTED_ROOT:-} tmp rc=0
	[ -n "$root" ] || return 1
	[ -f "$root/kernel/results/done" ] && return 0
	exec {NESTED_LOCK_FD}>"$NESTED_CACHE/.lock"
	flock "$NESTED_LOCK_FD"
	if [ ! -f "$root/kernel/results/done" ]; then
		tmp=$(mktemp -d "$NESTED_CACHE/tmp.XXXXXX")
		if ! nested_kernel_deb "$root" "$tmp" "the results disk's kernel modules" ||
			! nested_extract_result_modules "$tmp"/debs/*.deb "$tmp/kernel-x" ||
			! nested_unpack_result_modules "$tmp/kernel-x" "$root/busybox" "$root/kernel/results"; then
			nested_log "no results disk modules for $root: the results come over the serial port"
			rc=1
		fi
		rm -rf "$tmp"
	fi
	exec {NESTED_LOCK_FD}>&-
	return $rc
}

# nested_extra_module NAME: sets NESTED_MODULE_FILE to the plain .ko of NAME
# (the last part of an entry of NESTED_EXTRA_MODULES) for the tree's kernel.
# A tree made before the module was listed has none: the kernel package of
# the tree (its MANIFEST names the version) is downloaded once more and the
# extra modules are added to the tree, under the cache's lock.
nested_extra_module() {
	local name=$1 root=${NESTED_ROOT:-} extra tmp rc=0 m
	NESTED_ERR=
	[ -n "$root" ] || { nested_err "no nested tree (nested_fetch first)"; return 1; }
	extra=$root/kernel/extra
	for m in "${NESTED_EXTRA_MODULES[@]}" ""; do [ "${m##*/}" = "$name" ] && break; done
	[ -n "$m" ] || { nested_err "$name is not in NESTED_EXTRA_MODULES"; return 1; }
	if ! grep -qx "$m" "$extra/done" 2>/dev/null; then
		exec {NESTED_LOCK_FD}>"$NESTED_CACHE/.lock"
		flock "$NESTED_LOCK_FD"
		if ! grep -qx "$m" "$extra/done" 2>/dev/null; then
			tmp=$(mktemp -d "$NESTED_CACHE/tmp.XXXXXX")
			local pats=()
			for m in "${NESTED_EXTRA_MODULES[@]}"; do pats+=("*/kernel/$m.ko*"); done
			if ! nested_kernel_deb "$root" "$tmp" "the guests' kernel modules (${NESTED_EXTRA_MODULES[*]})"; then
				rc=1
			elif ! dpkg-deb --fsys-tarfile "$tmp"/debs/*.deb | tar -x -C "$tmp/kernel-x" --wildcards "${pats[@]}" 2>"$tmp/tar.log"; then
				nested_err "cannot unpack $(basename "$tmp"/debs/*.deb): $(tr '\n' ' ' <"$tmp/tar.log")"
				rc=1
			else
				rm -rf "$extra/new"
				nested_unpack_extra_modules "$tmp/kernel-x" "$root/busybox" "$extra" || rc=1
			fi
			rm -rf "$tmp"
		fi
		exec {NESTED_LOCK_FD}>&-
		[ $rc -eq 0 ] || return 1
	fi
	[ -s "$extra/$name.ko" ] || { nested_err "no $name.ko in $extra"; return 1; }
	NESTED_MODULE_FILE=$extra/$name.ko
}

# nested_extract_vmlinux BZIMAGE OUT: unpacks the kernel's compressed payload
# (boot protocol header: setup_sects at 0x1f1, payload_offset/length at
# 0x248/0x24c; the payload ends with the uncompressed size, 32-bit LE).
nested_extract_vmlinux() {
	local bz=$1 out=$2 setup off len magic want dec
	setup=$(od -An -tu1 -j$((0x1f1)) -N1 "$bz" | tr -d ' ')
	[ "$setup" != 0 ] || setup=4
	off=$(od -An -tu4 -j$((0x248)) -N4 "$bz" | tr -d ' ')
	len=$(od -An -tu4 -j$((0x24c)) -N4 "$bz" | tr -d ' ')
	[ -n "$off" ] && [ -n "$len" ] && [ "$len" -gt 4 ] || return 1
	off=$(((setup + 1) * 512 + off))
	magic=$(od -An -tx1 -j"$off" -N4 "$bz" | tr -d ' \n')
	want=$(od -An -tu4 -j$((off + len - 4)) -N4 "$bz" | tr -d ' ')
	case $magic in
	fd377a58) dec=xz ;;
	28b52ffd) dec=zstd ;;
	1f8b*) dec=gzip ;;
	*) return 1 ;;
	esac
	command -v "$dec" >/dev/null || return 1
	# The decompressors complain about the 4 size bytes after the stream;
	# the size check below is what counts.
	head -c "$((off + len - 4))" "$bz" | tail -c "$((len - 4))" | "$dec" -dc >"$out" 2>/dev/null
	if [ "$(wc -c <"$out")" != "$want" ] || [ "$(od -An -tx1 -N4 "$out" | tr -d ' \n')" != 7f454c46 ]; then
		rm -f "$out"
		return 1
	fi
}

# nested_fetch: makes $NESTED_CACHE/current a complete tree. Once one is
# there it is only validated (no network), unless NESTED_REFRESH=1. A new
# tree is built in a temporary directory and switched in by renaming a
# symlink, so an interrupted or failed download never replaces a good tree
# nor leaves a half one that looks complete.
nested_fetch() {
	local cur=$NESTED_CACHE/current${NESTED_KERNEL_DIST:+-$NESTED_KERNEL_DIST}${NESTED_VMM_DIST:+-vmm} key tmp rc=0
	NESTED_ERR=
	if [ -n "$NESTED_KERNEL_DIST" ] && ! [[ $NESTED_KERNEL_DIST =~ ^[a-z][a-z0-9]*$ ]]; then
		nested_err "NESTED_KERNEL_DIST='$NESTED_KERNEL_DIST' is not a Debian release name (e.g. trixie)"
		return 1
	fi
	if [ -n "$NESTED_VMM_DIST" ] && [ "$NESTED_VMM_DIST" != "$NESTED_KERNEL_DIST" ]; then
		nested_err "NESTED_VMM_DIST='$NESTED_VMM_DIST' must name the kernel's release (NESTED_KERNEL_DIST='$NESTED_KERNEL_DIST'): a host runs its own release's QEMU"
		return 1
	fi
	mkdir -p "$NESTED_CACHE" || { nested_err "cannot create $NESTED_CACHE"; return 1; }
	# One fetch at a time per cache (e.g. a test and the demo started together).
	exec {NESTED_LOCK_FD}>"$NESTED_CACHE/.lock"
	flock "$NESTED_LOCK_FD"
	if [ "${NESTED_REFRESH:-0}" != 1 ] && nested_validate "$cur"; then
		NESTED_ROOT=$(readlink -f "$cur")
		exec {NESTED_LOCK_FD}>&-
		return 0
	fi
	[ -e "$cur" ] && [ "${NESTED_REFRESH:-0}" != 1 ] && nested_log "cache unusable ($NESTED_ERR), fetching again"
	# Leftovers of an interrupted fetch; none can be in use while we hold the lock.
	rm -rf "$NESTED_CACHE"/tmp.* "$cur.new"
	if ! nested_resolve; then
		exec {NESTED_LOCK_FD}>&-
		return 1
	fi
	key=$({ echo "layout $NESTED_LAYOUT"; [ -z "$NESTED_KERNEL_DIST" ] || echo "kernel-dist $NESTED_KERNEL_DIST"
		[ -z "$NESTED_VMM_DIST" ] || echo "vmm-dist $NESTED_VMM_DIST"
		printf '%s\n' "${NESTED_PKGS[@]}" ${NESTED_VMM_PKGS[@]+"${NESTED_VMM_PKGS[@]}"} | sort; } | sha256sum | cut -c1-16)
	if [ -d "$NESTED_CACHE/tree-$key" ] && nested_validate "$NESTED_CACHE/tree-$key"; then
		ln -sfn "tree-$key" "$cur"
	else
		tmp=$(mktemp -d "$NESTED_CACHE/tmp.XXXXXX")
		if nested_build_tree "$tmp" && nested_validate "$tmp/root"; then
			rm -rf "$NESTED_CACHE/tree-$key" &&
				mv "$tmp/root" "$NESTED_CACHE/tree-$key" &&
				ln -sfn "tree-$key" "$cur.new" && mv -T "$cur.new" "$cur" || rc=1
			[ $rc -eq 0 ] || nested_err "cannot install the new tree in $NESTED_CACHE"
		else
			[ -n "$NESTED_ERR" ] || NESTED_ERR="cannot build the tree"
			nested_err "fetch failed: $NESTED_ERR"
			rc=1
		fi
		rm -rf "$tmp"
	fi
	if [ $rc -eq 0 ]; then
		# Trees of older package versions are dead weight (~100 MB each);
		# the current tree of each kernel release stays.
		local t l keep=" "
		for l in "$NESTED_CACHE"/current*; do
			[ -L "$l" ] && keep+="$(readlink "$l") "
		done
		for t in "$NESTED_CACHE"/tree-*; do
			[[ $keep == *" ${t##*/} "* ]] || rm -rf "$t"
		done
		NESTED_ROOT=$(readlink -f "$cur")
	fi
	exec {NESTED_LOCK_FD}>&-
	return $rc
}

# nested_prepare_ahead ARG: for tests/run's preparation of a suite marked
# "prepare ahead" (ARG --prepare): fetches the suite's tree (nested_fetch,
# with the suite's NESTED_* set) and exits, so the downloads are done while
# the host's serial suites run; the suite's own fetch waits for it (one
# fetch at a time per cache) and finds the tree. Else returns.
nested_prepare_ahead() {
	[ "${1:-}" = --prepare ] || return 0
	[ "${HT_E2E:-1}" = 0 ] && exit 0
	nested_fetch 2>/dev/null
	exit
}

# The guest's /init. Result channel: the second serial port (ttyS1), which
# only /init writes to, so kernel messages on the console can never splice
# into the data. Files travel base64-encoded with size and sha256, and a
# final marker proves nothing was cut off.
nested_init_script() {
	cat <<'EOF'
#!/bin/busybox sh
# Without /dev/console in the archive the kernel starts us with no stdio.
/bin/busybox mount -t devtmpfs dev /dev
exec </dev/console >/dev/console 2>&1
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t tracefs nodev /sys/kernel/tracing
mount -t bpf bpf /sys/fs/bpf
mkdir -p /tmp /out
# Only emergencies on the console from here on.
dmesg -n 1
# Heartbeat: a line on the console every 2 s while the machine runs, so the
# host's silence watchdog tells a stalled machine from a quiet step. A gap of
# 6 s or more between two beats is a pause of the whole machine (the clock
# went on, the machine did not run): NESTED-PAUSE. Shell builtins only (the
# wait is a read with a timeout on a FIFO nobody writes): it starts no
# process, as tests count process exits.
mkfifo /tmp/beat
(
	exec 3<>/tmp/beat
	read -r last _ </proc/uptime
	last=${last%.*}
	while :; do
		read -r -t 2 -u 3 _
		read -r now _ </proc/uptime
		now=${now%.*}
		[ $((now - last)) -ge 6 ] && echo "NESTED-PAUSE $((now - last)) s before uptime $now s"
		echo "NESTED-BEAT $now"
		last=$now
	done
) &
say() { echo "NESTED: $*"; }
ok=1
for m in irqbypass ccp kvm kvm-amd; do
	params=
	[ -f /lib/modules/$m.params ] && params=$(cat /lib/modules/$m.params)
	insmod /lib/modules/$m.ko $params || { say "insmod $m failed"; ok=0; }
done
[ -c /dev/kvm ] || { say "no /dev/kvm after loading kvm-amd"; ok=0; }
grep -qw svm /proc/cpuinfo || { say "the emulated CPU has no svm flag"; ok=0; }
status=255
if [ $ok = 1 ]; then
	cut -d' ' -f1 /proc/uptime >/tmp/boot_uptime
	say "script start at uptime $(cat /tmp/boot_uptime) s"
	cd /out
	# Not the console's input: the host types kicks there.
	{ OUT=/out sh /script </dev/null; echo $? >/tmp/status; } 2>&1 | tee /tmp/stdout
	status=$(cat /tmp/status)
	say "script exit status $status"
fi
# The results disk: a tar archive of /tmp/stdout and /out on /dev/vda, written
# at memory speed, where the machine's kernel has (or gets) virtio_blk.
disk=0
if [ $ok = 1 ] && [ -d /lib/modules/results ]; then
	for m in virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci virtio_blk; do
		[ -f /lib/modules/results/$m.ko ] && insmod /lib/modules/results/$m.ko
	done
	n=0
	while [ ! -b /dev/vda ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
	[ -b /dev/vda ] && tar -cf /dev/vda -C / tmp/stdout out && sync && disk=1
fi
send() { # send NAME FILE: on the disk, or gzipped (the port moves ~300 KB/s)
	if [ $disk = 1 ]; then
		echo "NESTED-FILE $1 $(wc -c <"$2") disk"
		return
	fi
	echo "NESTED-FILE $1 $(wc -c <"$2") $(sha256sum "$2" | cut -d' ' -f1)"
	gzip -c "$2" | base64
	echo "NESTED-END"
}
{
	echo "NESTED-BEGIN"
	echo "NESTED-KVM $ok"
	if [ $ok = 1 ]; then
		echo "NESTED-BOOT $(cat /tmp/boot_uptime 2>/dev/null)"
		send .stdout /tmp/stdout
		for f in /out/*; do
			[ -f "$f" ] && send "${f##*/}" "$f"
		done
	fi
	echo "NESTED-STATUS $status"
	echo "NESTED-DONE"
} >/dev/ttyS1
# Closing the tty above waited for its output to drain; now stop at once.
poweroff -f
EOF
}

# nested_run_once OUTDIR SCRIPT [FILE...]: one attempt of nested_run.
nested_run_once() {
	local outdir=$1 script=$2 f stage start end rc
	shift 2
	NESTED_ERR=
	[ -f "$script" ] || { nested_err "no script $script"; return 1; }
	[ -n "${NESTED_ROOT:-}" ] || nested_fetch || return 1
	if ! { rm -rf "$outdir" && mkdir -p "$outdir/files"; }; then
		nested_err "cannot create $outdir"
		return 1
	fi
	outdir=$(cd "$outdir" && pwd)
	stage=$outdir/initrd
	mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,lib/modules,dev,proc,sys,tmp,out}
	cp "$NESTED_ROOT/busybox" "$stage/bin/busybox"
	cp "$NESTED_ROOT"/kernel/modules/*.ko "$stage/lib/modules/"
	if nested_result_modules && [ -s "$NESTED_ROOT/kernel/results/done" ]; then
		mkdir -p "$stage/lib/modules/results" && cp "$NESTED_ROOT"/kernel/results/*.ko "$stage/lib/modules/results/"
	fi
	for f in "$@"; do
		[ -f "$f" ] || { nested_err "no file $f"; return 1; }
		# Dynamically linked binaries would find no libraries in the guest.
		if nested_is_dynamic "$f"; then nested_err "$f is dynamically linked; the guest has no libraries"; return 1; fi
		cp "$f" "$stage/bin/" || { nested_err "cannot copy $f"; return 1; }
	done
	cp "$script" "$stage/script"
	nested_init_script >"$stage/init"
	chmod 755 "$stage/init" "$stage/bin"/*
	[ -z "$NESTED_KVM_AMD_PARAMS" ] || echo "$NESTED_KVM_AMD_PARAMS" >"$stage/lib/modules/kvm-amd.params"
	if [ -n "$NESTED_STAGE_HOOK" ] && ! "$NESTED_STAGE_HOOK" "$stage"; then
		nested_err "${NESTED_ERR:-$NESTED_STAGE_HOOK could not add its files}"
		return 1
	fi
	# Uncompressed newc: the kernel unpacks it fastest. The host has no cpio
	# binary; busybox has one.
	(cd "$stage" && find . | "$NESTED_ROOT/busybox" cpio -o -H newc >"$outdir/initrd.cpio" 2>/dev/null) ||
		{ nested_err "cannot build the initramfs"; return 1; }
	rm -rf "$stage"
	nested_qemu_env "$NESTED_ROOT"
	local kernel=$NESTED_ROOT/kernel/vmlinuz
	[ -s "$NESTED_ROOT/kernel/vmlinux" ] && kernel=$NESTED_ROOT/kernel/vmlinux
	local cmd=("${NESTED_QEMU[@]}"
		-accel "tcg${NESTED_TCG_OPTS:+,$NESTED_TCG_OPTS}" ${NESTED_ICOUNT:+-icount "$NESTED_ICOUNT"}
		-cpu max -smp "$NESTED_SMP" -m "${NESTED_MEM:-512}"
		-kernel "$kernel" -initrd "$outdir/initrd.cpio"
		-append "console=ttyS0 rdinit=/init panic=-1 mitigations=off quiet $NESTED_DETECTORS${NESTED_APPEND:+ $NESTED_APPEND}"
		-display none -nodefaults -no-reboot
		-serial stdio -serial "file:$outdir/results.raw"
		-drive "file=$outdir/results.img,format=raw,if=none,id=results" -device virtio-blk-pci,drive=results)
	start=$(date +%s.%N)
	rc=0
	NESTED_STALLED=0
	: >"$outdir/results.raw"
	# Sparse: only what the machine writes takes room.
	rm -f "$outdir/results.img" && truncate -s 4G "$outdir/results.img" ||
		{ nested_err "cannot create the results disk in $outdir"; return 1; }
	# The console's input is a FIFO the watchdog below can type into; held
	# open read-write so that it never reaches end of file.
	local kick_fd
	rm -f "$outdir/console.in" && mkfifo "$outdir/console.in" && exec {kick_fd}<>"$outdir/console.in" ||
		{ nested_err "cannot create the console FIFO in $outdir"; return 1; }
	timeout --kill-after=10 "$((NESTED_TIMEOUT * NESTED_WALL_FACTOR))" "${cmd[@]}" <"$outdir/console.in" >"$outdir/console.log" 2>&1 &
	local qpid=$! last=-1 size now quiet_since kicked_at tailpid= emu= cpu hz
	hz=$(getconf CLK_TCK)
	NESTED_OVERTIME=0
	if [ "${NESTED_VERBOSE:-0}" = 1 ]; then
		tail -f "$outdir/console.log" >&2 &
		tailpid=$!
	fi
	quiet_since=$(date +%s)
	kicked_at=$quiet_since
	# The silence watchdog: the heartbeat of /init keeps a running machine's
	# console growing, so a machine whose console and result port both stay
	# quiet does not run. Every NESTED_KICK s of silence a line typed on its
	# console raises an interrupt, which wakes a machine that waits for a lost
	# one (nobody inside reads the console); after NESTED_SILENCE s it is
	# killed as stalled. What counts as output: nested_output_size.
	while kill -0 "$qpid" 2>/dev/null; do
		sleep 1
		# The emulator (timeout's child): its user + system time.
		[ -n "$emu" ] || emu=$(pgrep -P "$qpid" | sed -n 1p)
		cpu=$([ -n "$emu" ] && awk -v hz="$hz" '{ sub(/^.*\) /, ""); print int(($12 + $13) / hz) }' "/proc/$emu/stat" 2>/dev/null)
		if [ "${cpu:-0}" -ge "$NESTED_TIMEOUT" ]; then
			NESTED_OVERTIME=1
			pkill -KILL -P "$qpid" 2>/dev/null
			kill -KILL "$qpid" 2>/dev/null
			break
		fi
		[ "$NESTED_SILENCE" -gt 0 ] || continue
		size=$(nested_output_size "$outdir")
		now=$(date +%s)
		if [ "$size" != "$last" ]; then
			last=$size
			quiet_since=$now
			kicked_at=$now
		elif [ $((now - quiet_since)) -ge "$NESTED_SILENCE" ]; then
			NESTED_STALLED=1
			pkill -KILL -P "$qpid" 2>/dev/null
			kill -KILL "$qpid" 2>/dev/null
			break
		elif [ $((now - kicked_at)) -ge "$NESTED_KICK" ]; then
			kicked_at=$now
			NESTED_KICKS=$((NESTED_KICKS + 1))
			echo >&"$kick_fd"
		fi
	done
	wait "$qpid" || rc=$?
	exec {kick_fd}>&-
	rm -f "$outdir/console.in"
	[ -z "$tailpid" ] || kill "$tailpid" 2>/dev/null
	end=$(date +%s.%N)
	awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f\n", b - a }' >"$outdir/qemu_seconds"
	rm -f "$outdir/initrd.cpio"
	if [ "$NESTED_STALLED" = 1 ] || [ "$NESTED_OVERTIME" = 1 ] || [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		rm -f "$outdir/results.img"
	fi
	if [ "$NESTED_STALLED" = 1 ]; then
		nested_err "the emulated machine stalled: no output for ${NESTED_SILENCE} s, console kicks did not wake it; console tail: $(nested_tail "$outdir/console.log")"
		return 1
	fi
	if [ "$NESTED_OVERTIME" = 1 ]; then
		nested_err "qemu did not finish within ${NESTED_TIMEOUT} s of its CPU time; console tail: $(nested_tail "$outdir/console.log")"
		return 1
	fi
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		nested_err "qemu did not finish within $((NESTED_TIMEOUT * NESTED_WALL_FACTOR)) s; console tail: $(nested_tail "$outdir/console.log")"
		return 1
	fi
	if [ ! -s "$outdir/results.raw" ]; then
		nested_err "qemu exited with status $rc before the guest ran: $(nested_tail "$outdir/console.log")"
		return 1
	fi
	nested_collect "$outdir" || return 1
	[ "$rc" -eq 0 ] || nested_log "qemu exited with status $rc after the guest finished"
	return 0
}

# nested_run OUTDIR SCRIPT [FILE...]: nested_run_once, and once more from
# the start if that attempt stalled (see "Emulation stalls" above). The
# stalled attempt's output is kept in OUTDIR.stalled. Sets NESTED_RETRIED to
# what the first attempt stalled on, or empty, and NESTED_KICKS to the
# console kicks of both attempts.
nested_run() {
	local outdir=$1 rc first
	NESTED_KICKS=0
	NESTED_RETRIED=
	nested_run_once "$@"
	rc=$?
	nested_stall "$outdir"
	if [ -n "$NESTED_STALL" ]; then
		first=$NESTED_STALL
		NESTED_RETRIED=$first
		echo "  info: emulation stall ($first); running the nested machine again from the start"
		rm -rf "$outdir.stalled" && mv "$outdir" "$outdir.stalled"
		nested_run_once "$@"
		rc=$?
		nested_stall "$outdir"
		if [ -n "$NESTED_STALL" ]; then
			nested_err "the emulated machine stalled twice in a row: $NESTED_STALL (first: $first)"
			return 1
		fi
	fi
	nested_pauses "$outdir"
	return "$rc"
}

# nested_stall OUTDIR: sets NESTED_STALL to what the attempt in OUTDIR
# stalled on, or empty if it did not stall (or failed in a way a stall does
# not explain).
nested_stall() {
	local outdir=$1 v log cpus stall=
	NESTED_STALL=
	# Kernel reports first: a failure among them is never retried.
	v=$(stall_verdict "$NESTED_SMP" "$outdir/console.log")
	[[ $v == failure:* ]] && return
	# A halted vCPU woken late ("pause:") ran nothing while it waited: the
	# run goes on, as after a pause the heartbeat survived.
	[[ $v == stall:* ]] && stall="nested machine: ${v#stall: }"
	for log in "$outdir"/files/*.kmsg; do
		[ -f "$log" ] || continue
		# A KVM guest of tests/e2e/l2_guest.sh: its kernel log and its
		# console, which says how many vCPUs it has once it is up.
		cpus=$(tr -d '\r' <"${log%.kmsg}.console" 2>/dev/null | sed -n 's/^L2-READY cpus=\([0-9]*\).*/\1/p' | sed -n 1p)
		[ -n "$cpus" ] || continue
		v=$(stall_verdict "$cpus" "$log" "${log%.kmsg}.console")
		[[ $v == failure:* ]] && return
		[[ $v != stall:* ]] || [ -n "$stall" ] || stall="KVM guest ${log##*/}: ${v#stall: }"
	done
	if [ "$NESTED_STALLED" = 1 ]; then
		NESTED_STALL=${NESTED_ERR#the emulated machine stalled: }
	elif [ -s "$outdir/files/stalls" ]; then
		NESTED_STALL=$(head -n 1 "$outdir/files/stalls")
	else
		NESTED_STALL=$stall
	fi
}

# nested_pauses OUTDIR: one info line if the machine paused and went on.
nested_pauses() {
	local n longest
	read -r n longest < <(tr -d '\r' <"$1/console.log" 2>/dev/null |
		sed -n 's/.*NESTED-PAUSE \([0-9]*\) s .*/\1/p' | awk '{ n++; if ($1 > m) m = $1 } END { print n + 0, m + 0 }')
	[ "${n:-0}" = 0 ] ||
		echo "  info: the emulated machine paused $n time(s), up to $longest s, and went on ($NESTED_KICKS console kicks)"
}

# nested_stage_program STAGE PATH...: copies each PATH of the fetched tree
# (e.g. usr/bin/qemu-system-x86_64) to the same place under STAGE, with every
# shared library it needs and the dynamic loader, for use in the emulated
# machine (whose initramfs has no libraries of its own). Libraries come from
# the tree or, when the host has the package installed, from the host (same
# release).
nested_stage_program() {
	local stage=$1 p lib libs
	shift
	nested_qemu_env "$NESTED_ROOT"
	for p in "$@"; do
		[ -f "$NESTED_ROOT/$p" ] || { NESTED_ERR="no $p in $NESTED_ROOT"; return 1; }
		mkdir -p "$stage/$(dirname "$p")" && cp "$NESTED_ROOT/$p" "$stage/$p" || return 1
		libs=$("${NESTED_QEMU[@]:0:2}" ldd "$NESTED_ROOT/$p" 2>&1) || { NESTED_ERR="ldd $p failed"; return 1; }
		if grep -q 'not found' <<<"$libs"; then
			NESTED_ERR="$p needs libraries that are missing: $(awk '/not found/ { print $1 }' <<<"$libs" | tr '\n' ' ')"
			return 1
		fi
		mkdir -p "$stage/lib/x86_64-linux-gnu" "$stage/lib64"
		for lib in $(awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<<"$libs"); do
			case $lib in
			*/ld-linux-x86-64.so.*) cp -L "$lib" "$stage/lib64/ld-linux-x86-64.so.2" ;;
			*) cp -L "$lib" "$stage/lib/x86_64-linux-gnu/" ;;
			esac || { NESTED_ERR="cannot copy $lib"; return 1; }
		done
	done
}

# nested_stage_vmm STAGE: the QEMU of the tree's vmm/ (NESTED_VMM_DIST) as
# STAGE's usr/bin/qemu-system-x86_64, its loader and libraries over those
# staged before (the same sonames of a newer release: the machine's older
# programs run on them too).
nested_stage_vmm() {
	local stage=$1 vmm=$NESTED_ROOT/vmm libs lib
	libs=$(nested_vmm_libs "$vmm") || return 1
	mkdir -p "$stage/usr/bin" "$stage/lib/x86_64-linux-gnu" "$stage/lib64" &&
		cp "$vmm/usr/bin/qemu-system-x86_64" "$stage/usr/bin/" &&
		cp -L "$(head -n 1 <<<"$libs")" "$stage/lib64/ld-linux-x86-64.so.2" || { NESTED_ERR="cannot stage the QEMU of $vmm"; return 1; }
	for lib in $(tail -n +2 <<<"$libs"); do
		case $lib in missing:*) NESTED_ERR="the QEMU of $vmm misses ${lib#missing:}"; return 1 ;; esac
		cp -L "$lib" "$stage/lib/x86_64-linux-gnu/" || { NESTED_ERR="cannot copy $lib"; return 1; }
	done
}

# nested_is_dynamic FILE: true if FILE is an ELF with a program interpreter.
nested_is_dynamic() {
	# PT_INTERP is program header type 3; readelf may be absent, od is not.
	# Scan the program headers of a 64-bit little-endian ELF.
	local f=$1 magic phoff phentsize phnum i type
	magic=$(od -An -tx1 -N4 "$f" | tr -d ' \n')
	[ "$magic" = 7f454c46 ] || return 1
	phoff=$(od -An -tu8 -j32 -N8 "$f" | tr -d ' ')
	phentsize=$(od -An -tu2 -j54 -N2 "$f" | tr -d ' ')
	phnum=$(od -An -tu2 -j56 -N2 "$f" | tr -d ' ')
	for ((i = 0; i < phnum; i++)); do
		type=$(od -An -tu4 -j$((phoff + i * phentsize)) -N4 "$f" | tr -d ' ')
		[ "$type" = 3 ] && return 0
	done
	return 1
}

# nested_output_size OUTDIR: how much the machine has printed and sent so
# far, for the silence watchdog. Line ends do not count: the console's
# terminal echoes every line the watchdog types as an empty one, and those
# echoes would keep a machine whose clock stopped (interrupts served, no
# timer firing, its heartbeat gone: seen under -icount) from ever counting
# as silent.
nested_output_size() {
	echo $(($(tr -d '\r\n' <"$1/console.log" | wc -c) + $(wc -c <"$1/results.raw")))
}

# nested_tail CONSOLE_LOG: the console's last lines on one line, or the
# kernel's panic message if it panicked (panic=-1 + -no-reboot end qemu).
nested_tail() {
	local p
	p=$(tr -d '\r' <"$1" 2>/dev/null | grep 'Kernel panic' | sed -n 1p || true)
	if [ -n "$p" ]; then echo "guest kernel panic: $p"; return; fi
	# Without the heartbeat, which says nothing here.
	tr -d '\r' <"$1" 2>/dev/null | grep -v '^NESTED-BEAT ' | tail -n 5 | tr '\n' '|'
}

# nested_collect OUTDIR: decodes results.raw into stdout, status and files/.
nested_collect() {
	local outdir=$1 raw=$1/results.raw b64=$1/.b64 name size sum got
	rm -rf "$b64" && mkdir -p "$b64"
	# Split the channel: base64 bodies to one file each, headers to an index.
	tr -d '\r' <"$raw" | awk -v dir="$b64" '
		/^NESTED-FILE / { name = $2; n++; body = dir "/" n ".b64"; print "FILE", n, $2, $3, $4 > (dir "/index"); next }
		/^NESTED-END$/  { close(body); body = ""; next }
		/^NESTED-/      { print > (dir "/index"); next }
		body != ""      { print > body }
	'
	[ -f "$b64/index" ] || { nested_err "no results from the guest: $(nested_tail "$outdir/console.log")"; return 1; }
	if ! grep -q '^NESTED-DONE' "$b64/index"; then
		nested_err "guest results are truncated (no end marker): $(nested_tail "$outdir/console.log")"
		return 1
	fi
	if grep -q '^NESTED-KVM 0' "$b64/index"; then
		nested_err "KVM did not come up in the nested machine: $(grep '^NESTED:' "$outdir/console.log" | tr -d '\r' | tr '\n' ' ')"
		return 1
	fi
	# Files on the results disk: its archive unpacked whole (to the end-of-
	# archive blocks), each one then taken by the name the port gave, as a
	# regular file only.
	if grep -q '^FILE .* disk$' "$b64/index"; then
		mkdir -p "$b64/disk" && tar -x -f "$outdir/results.img" -C "$b64/disk" --no-same-owner --no-same-permissions 2>"$b64/tar.log" ||
			{ nested_err "the results disk holds no readable archive: $(head -n 2 "$b64/tar.log" | tr '\n' ' ')"; return 1; }
	fi
	local k n v3 v4 v5 src
	while read -r k n v3 v4 v5; do
		case $k in
		FILE)
			name=$v3 size=$v4 sum=$v5
			# Names come from the guest: keep them inside OUTDIR.
			[[ $name =~ ^[A-Za-z0-9._-]+$ ]] || { nested_err "bad file name from guest: $name"; return 1; }
			local dest=$outdir/files/$name
			[ "$name" = .stdout ] && dest=$outdir/stdout
			if [ "$sum" = disk ]; then
				src=$b64/disk/out/$name
				[ "$name" = .stdout ] && src=$b64/disk/tmp/stdout
				if [ -L "$src" ] || [ ! -f "$src" ] || [ "$(wc -c <"$src")" -ne "$size" ]; then
					nested_err "file $name is not whole on the results disk"
					return 1
				fi
				mv "$src" "$dest"
				continue
			fi
			base64 -d "$b64/$n.b64" 2>/dev/null | gzip -dc >"$dest" 2>/dev/null
			got=$(sha256sum <"$dest" | cut -d' ' -f1)
			if [ "$got" != "$sum" ] || [ "$(wc -c <"$dest")" -ne "$size" ]; then
				nested_err "file $name arrived damaged (size/sha256 mismatch)"
				return 1
			fi
			;;
		NESTED-STATUS) echo "$n" >"$outdir/status" ;;
		NESTED-BOOT) echo "$n" >"$outdir/boot_seconds" ;;
		esac
	done <"$b64/index"
	rm -rf "$b64" "$raw" "$outdir/results.img"
	[ -s "$outdir/status" ] || { nested_err "no exit status from the guest"; return 1; }
}

# Command use: tests/e2e/nested.sh fetch | run OUTDIR SCRIPT [FILE...]
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -euo pipefail
	case ${1:-} in
	fetch)
		nested_fetch || exit 1
		echo "nested: ready: $NESTED_ROOT"
		cat "$NESTED_ROOT/MANIFEST"
		;;
	run)
		shift
		[ $# -ge 2 ] || { echo "usage: $0 run OUTDIR SCRIPT [FILE...]" >&2; exit 2; }
		nested_run "$@" || exit 1
		echo "nested: guest script exit status $(cat "$1/status"); output in $1"
		exit "$(cat "$1/status")"
		;;
	*)
		echo "usage: $0 fetch | run OUTDIR SCRIPT [FILE...]" >&2
		exit 2
		;;
	esac
fi
