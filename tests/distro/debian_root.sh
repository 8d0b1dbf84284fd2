# Debian roots for the tests that need another Debian release or a clean
# system: made with debootstrap (minbase) from Debian's archive, kept under
# .cache/distro/<suite>/ between runs (ignored by git), entered with chroot.
# BPF programs load from inside: the kernel is the host's.
#
# As a library (source it; needs root and debootstrap):
#   droot_minbase SUITE     the pristine root as a tar (made once); sets DR_TAR
#   droot_ensure SUITE      a root for builds (from that tar, kept between runs,
#                           packages installed into it stay); sets DR_ROOT
#   droot_clean SUITE DIR   a fresh copy of the pristine root in DIR
#   droot_enter ROOT        mounts /proc, /sys (tracefs, bpffs), /dev into ROOT,
#                           resolv.conf, the host's extra CA certificates and
#                           ~/.npmrc (npm behind a TLS-inspecting proxy needs them)
#   droot_leave ROOT        unmounts what droot_enter mounted
#   droot_run ROOT CMD...   runs CMD in ROOT as root with a clean environment
#   droot_ca_certificates ROOT  apt and npm in ROOT trust the CA certificates
#                           droot_enter copied in
#   droot_copy_tree ROOT TOP  the files git tracks in TOP into ROOT's
#                           /src/hypertrace-bpf, over the previous copy
# On failure the functions return non-zero with the reason in DR_ERR.
# Environment: DISTRO_CACHE (default <repo>/.cache/distro).
# shellcheck shell=bash

DR_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DISTRO_CACHE=${DISTRO_CACHE:-$DR_TOP/.cache/distro}
DR_ERR=
# What tests/install-deps.sh leaves out in the root (HT_DEPS_SKIP): what only
# the suites the root skips need (containers, systemd, root building, tmux,
# trace-cmd, libFuzzer's runtime: libclang-rt) and node with npm (the Chrome
# export's reader, which the host runs: 340 of the 790 packages the root
# would have).
DR_DEPS_SKIP="buildah podman systemd-container mmdebstrap debootstrap tmux trace-cmd nodejs libclang-rt"

dr_err() { DR_ERR=$*; return 1; }

droot_minbase() {
	local suite=$1 dir tmp
	dir=$DISTRO_CACHE/$suite
	DR_TAR=$dir/minbase.tar
	[ -f "$DR_TAR" ] && return 0
	command -v debootstrap >/dev/null || dr_err "debootstrap is missing: run 'make deps' as root" || return 1
	mkdir -p "$dir" || dr_err "cannot create $dir" || return 1
	# One debootstrap for all: a Debian 13 root prepared in the background
	# (tests/run) and a suite that wants a clean copy may both start here.
	local lock
	exec {lock}>"$dir/minbase.lock" && flock "$lock" || dr_err "cannot lock $dir/minbase.lock" || return 1
	if [ -f "$DR_TAR" ]; then
		exec {lock}>&-
		return 0
	fi
	tmp=$dir/minbase.tmp.$$
	rm -rf "$tmp"
	if ! debootstrap --variant=minbase "$suite" "$tmp" >"$dir/debootstrap.log" 2>&1; then
		rm -rf "$tmp"
		exec {lock}>&-
		dr_err "debootstrap $suite failed: $(tail -n 2 "$dir/debootstrap.log" | tr '\n' ' ')"
		return 1
	fi
	# Downloaded .debs are in the root's apt cache: not part of the pristine root.
	rm -f "$tmp"/var/cache/apt/archives/*.deb
	tar -C "$tmp" -cf "$DR_TAR.tmp" . && mv "$DR_TAR.tmp" "$DR_TAR" || dr_err "cannot write $DR_TAR"
	local st=$?
	rm -rf "$tmp"
	exec {lock}>&-
	return $st
}

droot_clean() {
	local suite=$1 dest=$2
	droot_minbase "$suite" || return 1
	mkdir -p "$dest" && tar -C "$dest" -xf "$DR_TAR" || dr_err "cannot unpack $DR_TAR into $dest"
}

droot_ensure() {
	local suite=$1 dir
	dir=$DISTRO_CACHE/$suite
	DR_ROOT=$dir/root
	[ -f "$dir/root.complete" ] && [ -x "$DR_ROOT/bin/sh" ] && return 0
	rm -rf "$DR_ROOT"
	droot_clean "$suite" "$DR_ROOT" || return 1
	touch "$dir/root.complete"
}

# Mounts are bound recursively and made slaves, so nothing unmounted here
# propagates back to the host's /dev or /sys.
droot_enter() {
	local root=$1 crt
	droot_leave "$root"
	# The root is a mount point of its own, as / is: `unshare -m` (tests/cli)
	# changes the propagation of /, which only a mount point has.
	mount --bind "$root" "$root" && mount --make-private "$root" || dr_err "cannot bind $root onto itself" || return 1
	mount -t proc proc "$root/proc" || { droot_leave "$root"; dr_err "cannot mount /proc in $root"; return 1; }
	for d in sys dev; do
		mount --rbind "/$d" "$root/$d" && mount --make-rslave "$root/$d" ||
			{ droot_leave "$root"; dr_err "cannot bind /$d into $root"; return 1; }
	done
	mountpoint -q "$root/sys/kernel/tracing" || mount -t tracefs nodev "$root/sys/kernel/tracing" 2>/dev/null
	mountpoint -q "$root/sys/fs/bpf" || mount -t bpf bpf "$root/sys/fs/bpf" 2>/dev/null
	cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null
	# A proxy that inspects TLS signs with its own CA: the host trusts it
	# through these files, and so must apt, curl and npm in the root.
	for crt in /usr/local/share/ca-certificates/*.crt; do
		[ -f "$crt" ] || continue
		mkdir -p "$root/usr/local/share/ca-certificates"
		cp "$crt" "$root/usr/local/share/ca-certificates/"
	done
	if [ -f "$HOME/.npmrc" ]; then
		mkdir -p "$root/root" && cp "$HOME/.npmrc" "$root/root/.npmrc"
	fi
	return 0
}

droot_leave() {
	local root=$1 m
	# Deepest first: every mount point under the root.
	for m in $(awk -v r="$(realpath "$root")" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/self/mounts | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
	done
	return 0
}

droot_run() {
	local root=$1
	shift
	chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		LANG=C.UTF-8 TERM="${TERM:-dumb}" DEBIAN_FRONTEND=noninteractive "$@"
}

droot_ca_certificates() {
	local root=$1
	droot_run "$root" sh -c 'dpkg -s ca-certificates >/dev/null 2>&1 ||
		{ apt-get update -qq && apt-get install -y -qq --no-install-recommends ca-certificates >/dev/null; }
		update-ca-certificates >/dev/null 2>&1' >"$root/ca.log" 2>&1 ||
		dr_err "cannot install the CA certificates in $root: $(tail -n 3 "$root/ca.log" | tr '\n' ' ')"
}

# The tracked files of TOP, over the previous copy: its .output and .cache
# stay, so make rebuilds only what changed and downloads stay cached. A file
# whose content changed is written anew (its time is now, newer than any
# object built from its old content); the others keep theirs.
droot_copy_tree() {
	local root=$1 top=$2 src=$1/src/hypertrace-bpf stage=$1/src/stage
	rm -rf "$stage"
	mkdir -p "$src" "$stage" || dr_err "cannot create $src" || return 1
	(cd "$top" && git ls-files -z | xargs -0 tar -cf - --no-recursion) | tar -xmf - -C "$stage" ||
		{ rm -rf "$stage"; dr_err "cannot copy the tracked files of $top"; return 1; }
	# Symbolic links too (the package's units in debian/ are links to deploy/), as links.
	(cd "$stage" && find . \( -type f -o -type l \) -print0) | while IFS= read -r -d '' f; do
		if [ -L "$stage/$f" ]; then
			[ -L "$src/$f" ] && [ "$(readlink "$stage/$f")" = "$(readlink "$src/$f")" ] ||
				{ mkdir -p "$(dirname "$src/$f")" && rm -f "$src/$f" && cp -P "$stage/$f" "$src/$f"; }
		elif [ -L "$src/$f" ] || ! cmp -s "$stage/$f" "$src/$f"; then
			mkdir -p "$(dirname "$src/$f")" && rm -f "$src/$f" && cp -p "$stage/$f" "$src/$f"
		fi
	done
	(cd "$src" && find . \( -path ./.output -o -path ./.cache -o -path ./.git \) -prune -o \( -type f -o -type l \) -print0) |
		while IFS= read -r -d '' f; do [ -e "$stage/$f" ] || [ -L "$stage/$f" ] || rm -f "$src/$f"; done
	rm -rf "$stage"
}
