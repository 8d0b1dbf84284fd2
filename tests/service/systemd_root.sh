# A Debian root with systemd in it, for booting under systemd-nspawn: made
# once with mmdebstrap (minbase plus systemd, systemd-sysv and dbus) and
# kept as a tar under .cache/service/ (ignored by git); each boot unpacks a
# fresh copy, since a boot writes into its root.
#   sdroot_tar SUITE          makes the tar if missing; sets SD_TAR
#   sdroot_unpack SUITE DIR   a fresh root in DIR
# On failure: non-zero, the reason in SD_ERR. SERVICE_CACHE overrides the
# cache directory.
# shellcheck shell=bash

SD_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SERVICE_CACHE=${SERVICE_CACHE:-$SD_TOP/.cache/service}
SD_ERR=

sdroot_tar() {
	local suite=$1 log
	SD_TAR=$SERVICE_CACHE/$suite-systemd.tar
	[ -f "$SD_TAR" ] && return 0
	command -v mmdebstrap >/dev/null || { SD_ERR="mmdebstrap is missing: run tests/install-deps.sh (make deps)"; return 1; }
	mkdir -p "$SERVICE_CACHE" || { SD_ERR="cannot create $SERVICE_CACHE"; return 1; }
	log=$SERVICE_CACHE/$suite-systemd.log
	# A root tar straight from mmdebstrap: no unpacked tree to clean up on failure.
	if ! mmdebstrap --variant=minbase --include=systemd,systemd-sysv,dbus --format=tar \
		"$suite" "$SD_TAR.tmp" >"$log" 2>&1; then
		rm -f "$SD_TAR.tmp"
		SD_ERR="mmdebstrap $suite failed: $(tail -n 2 "$log" | tr '\n' ' ')"
		return 1
	fi
	mv "$SD_TAR.tmp" "$SD_TAR"
}

sdroot_unpack() {
	local suite=$1 dir=$2
	sdroot_tar "$suite" || return 1
	mkdir -p "$dir" && tar -C "$dir" -xf "$SD_TAR" || { SD_ERR="cannot unpack $SD_TAR into $dir"; return 1; }
}
