#!/usr/bin/env bash
# Installs the Debian packages (Debian 12 or 13) hypertrace-bpf needs to build
# and test, if missing, then the npm package the Chrome trace export test reads its output
# with (tests/export/install-trace-engine.sh, into .cache/) and the source of
# LTTng's event declarations the LTTng export test compares with
# (tests/export/fetch-lttng-modules.sh, into .cache/). Needs root
# (apt-get). Guest kernel, busybox and qemu for the nested end-to-end test are
# NOT installed: tests/e2e fetches them into .cache/.
# libclang-rt-N-dev holds libFuzzer (tests/fuzz) for clang N, the clang Debian
# installs (14 on Debian 12, 19 on 13); time is GNU time (peak RSS).
set -eu
cd "$(dirname "$0")/.."
# prometheus and curl: the real Prometheus server that tests/prometheus scrapes record --metrics with.
# babeltrace2, python3-bt2: the CTF and LTTng export tests read the exports with them.
# protobuf-compiler, python3-protobuf: the Perfetto export test decodes the export with them.
# libxml2-utils: xmllint validates the Trace Compass analysis (docs/tracecompass/) against Trace Compass's schema.
# scdoc: the man pages; debhelper, dkms, lintian, fakeroot: `make deb` and its
# tests; debootstrap: the Debian 13 root tests/distro builds; bash-completion:
# the completion test drives the installed completion with it; man-db: man -w;
# git: the build test and make deb take the tracked files from git;
# build-essential: dpkg-buildpackage checks for it. zstd: Debian 13's kernel
# image is zstd-compressed, and the nested machine (tests/e2e/nested.sh, `make
# demo` on a CPU without VMX/SVM) boots it unpacked, seconds faster.
# linux-libc-dev: the kernel's UAPI headers, whose exit reason tables (asm/vmx.h, asm/svm.h) the build compiles in.
# systemd (systemd-analyze), systemd-container (systemd-nspawn), mmdebstrap:
# tests/service boots the unit under a real systemd in a Debian root.
# buildah, podman: make image and tests/container; file, python3-yaml: that test reads the image and the DaemonSet.
# iproute2: the metrics test takes IPv6 off loopback in a network namespace of its own (ip).
# trace-cmd: report --clock --map reads its report of a real trace.dat (tests/cli/test_clock_cli.sh).
pkgs=(git make build-essential gcc clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev linux-libc-dev tmux python3 util-linux iproute2 prometheus curl time
	e2fsprogs babeltrace2 python3-bt2 scdoc debhelper dkms lintian fakeroot debootstrap bash-completion man-db
	protobuf-compiler python3-protobuf libxml2-utils zstd systemd systemd-container mmdebstrap
	buildah podman file python3-yaml trace-cmd)
# HT_DEPS_SKIP: packages of that list a caller does not need (the Debian 13
# root of tests/distro, which runs no container, systemd or root-building
# suite, so nothing it installs is left unused).
missing=()
skipped() { [[ " ${HT_DEPS_SKIP:-} " == *" $1 "* ]]; }
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
for p in "${pkgs[@]}"; do
	skipped "$p" && continue
	installed "$p" || missing+=("$p")
done

# clang's major version: the installed clang's, else the one the clang
# package would install (its dependency clang-N).
clang_major() {
	local v
	v=$(clang --version 2>/dev/null | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -n 1)
	[ -n "$v" ] || v=$(apt-cache depends clang 2>/dev/null | sed -n 's/^ *Depends: clang-\([0-9]*\)$/\1/p' | head -n 1)
	echo "$v"
}
updated=
v=$(clang_major)
if [ -z "$v" ] && [ "$(id -u)" -eq 0 ]; then
	apt-get update -qq
	updated=1
	v=$(clang_major)
fi
if [ -z "$v" ]; then
	echo "hypertrace-bpf: apt knows no clang package: run apt-get update as root" >&2
	exit 1
fi
skipped libclang-rt || installed "libclang-rt-$v-dev" || missing+=("libclang-rt-$v-dev")
# pkg-config (pkgconf on Debian 13): the Makefile asks it how to link libbpf.
command -v pkg-config >/dev/null || missing+=(pkg-config)
# dh_dkms (debian/rules, the dh-sequence-dkms build dependency).
if ! installed dh-dkms && apt-cache show dh-dkms >/dev/null 2>&1; then missing+=(dh-dkms); fi
# pahole: the module BTF step of Debian 13's kernel headers (their
# linux-kbuild depends on it; tests/guest_kernel.sh unpacks them uninstalled).
if ! command -v pahole >/dev/null; then
	if apt-cache show pahole >/dev/null 2>&1; then missing+=(pahole); else missing+=(dwarves); fi
fi
# node and npm for the Chrome trace export test: Debian's, unless some other
# node is installed (HT_DEPS_SKIP may name nodejs: then neither, nor the
# trace engine below).
if ! skipped nodejs; then
	command -v node >/dev/null || missing+=(nodejs)
	command -v npm >/dev/null || missing+=(npm)
fi
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "hypertrace-bpf: missing packages: ${missing[*]}; run as root (sudo) so they can be installed with apt-get" >&2
		exit 1
	fi
	echo "installing: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	[ -n "$updated" ] || apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	# The tests start their own Prometheus (private config, data and port on
	# 127.0.0.1). The package's service would scrape this host on :9090 for
	# nothing: if this install brought it and systemd started it, stop it.
	if [[ " ${missing[*]} " == *" prometheus "* ]] && [ -d /run/systemd/system ]; then
		systemctl disable --now prometheus.service >/dev/null 2>&1 || true
	fi
fi
skipped nodejs || tests/export/install-trace-engine.sh
# Debian's lttng-modules source (unpacked into .cache/, never built): the LTTng export test compares with it.
tests/export/fetch-lttng-modules.sh >/dev/null
