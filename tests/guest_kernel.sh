#!/usr/bin/env bash
# The guest kernel's build tree, for building the hypertracing guest module:
# Debian's linux-headers package (with its -common part and linux-kbuild) for
# the kernel tests/e2e/nested.sh boots. (Debian's linux-image packages carry a
# one-line stub System.map; the real one is in the ~850 MB -dbg package, so
# tests symbolize with a copy of the guest's /proc/kallsyms instead.) Fetched with `apt-get download` and
# unpacked with `dpkg-deb -x` into .cache/guest-kernel/ (ignored by git);
# nothing is installed on the host.
#
# As a library (source it):
#   guest_kernel_fetch [RELEASE]
#                         fill or validate the cache for RELEASE (default: the
#                         kernel linux-image-amd64 names); sets GK_RELEASE (e.g.
#                         6.1.0-56-amd64), GK_KDIR (the build tree for
#                         `make guest-module KDIR=...`)
# As a command:
#   tests/guest_kernel.sh fetch   prints KDIR=...
# On failure the functions return non-zero with the reason in GK_ERR.
# Environment: GUEST_KERNEL_CACHE (default <repo>/.cache/guest-kernel).
# shellcheck shell=bash

GK_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
GUEST_KERNEL_CACHE=${GUEST_KERNEL_CACHE:-$GK_TOP/.cache/guest-kernel}
GK_ERR=

gk_err() { GK_ERR=$*; return 1; }

# gk_image_package: the versioned kernel package linux-image-amd64 names, as nested.sh picks it.
gk_image_package() {
	apt-cache depends linux-image-amd64 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }'
}

guest_kernel_fetch() {
	local image release=${1:-} dir tmp deps p
	if [ -z "$release" ]; then
		image=$(gk_image_package)
		if [ -z "$image" ] && [ "$(id -u)" -eq 0 ]; then
			apt-get update -qq >/dev/null 2>&1
			image=$(gk_image_package)
		fi
		[ -n "$image" ] || gk_err "apt knows no linux-image-amd64: run apt-get update as root" || return 1
		release=${image#linux-image-}
	fi
	dir=$GUEST_KERNEL_CACHE/$release
	GK_RELEASE=$release
	GK_KDIR=$dir/root/usr/src/linux-headers-$release
	if [ -f "$dir/COMPLETE" ] && [ -f "$GK_KDIR/Makefile" ]; then
		return 0
	fi
	# The headers package depends on its -common part and on linux-kbuild
	# (fixdep, modpost): all three make a build tree.
	deps=$(apt-cache depends "linux-headers-$release" 2>/dev/null |
		awk '$1 == "Depends:" && ($2 ~ /^linux-headers-/ || $2 ~ /^linux-kbuild-/) { print $2 }')
	[ -n "$deps" ] || gk_err "apt has no linux-headers-$release: run apt-get update as root" || return 1
	rm -rf "$dir"
	tmp=$dir.tmp.$$
	rm -rf "$tmp"
	mkdir -p "$tmp/debs" "$tmp/root" || gk_err "cannot create $tmp" || return 1
	# apt drops privileges to _apt for downloading: let it write there.
	if [ "$(id -u)" -eq 0 ] && id _apt >/dev/null 2>&1; then chown _apt "$tmp/debs"; fi
	# shellcheck disable=SC2086
	if ! (cd "$tmp/debs" && apt-get download -q "linux-headers-$release" $deps) >"$tmp/apt.log" 2>&1; then
		gk_err "apt-get download failed: $(tail -n 2 "$tmp/apt.log" | tr '\n' ' ')"
		rm -rf "$tmp"
		return 1
	fi
	for p in "$tmp"/debs/linux-headers-*.deb "$tmp"/debs/linux-kbuild-*.deb; do
		dpkg-deb -x "$p" "$tmp/root" || { gk_err "cannot unpack $p"; rm -rf "$tmp"; return 1; }
	done
	# Debian's arch Makefile includes the -common tree by its absolute /usr/src
	# path; point it at the unpacked copy instead.
	sed -i 's|^include /usr/src/|include $(dir $(lastword $(MAKEFILE_LIST)))../|' \
		"$tmp/root/usr/src/linux-headers-$release/Makefile"
	rm -rf "$tmp/debs"
	mv "$tmp" "$dir" || { gk_err "cannot move $tmp to $dir"; return 1; }
	touch "$dir/COMPLETE"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	case ${1:-} in
	fetch)
		guest_kernel_fetch || { echo "guest_kernel: $GK_ERR" >&2; exit 1; }
		echo "KDIR=$GK_KDIR"
		;;
	*)
		echo "usage: tests/guest_kernel.sh fetch" >&2
		exit 2
		;;
	esac
fi
