#!/usr/bin/env bash
# Unpacks Debian's lttng-modules-dkms, the source of LTTng's kernel event
# declarations, into .cache/lttng-modules (downloaded with apt-get download,
# never installed, never built) and prints its source directory. The LTTng
# export test compares the export's events with it. Needs apt (root for the
# first download, when the package lists are refreshed).
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
dest=$top/.cache/lttng-modules
src=$(ls -d "$dest"/usr/src/lttng-modules-* 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$src" ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	download() { (cd "$tmp" && apt-get download -o APT::Sandbox::User=root lttng-modules-dkms) >"$tmp/log" 2>&1; }
	if ! download; then
		[ "$(id -u)" -eq 0 ] && apt-get update -qq >/dev/null 2>&1 || true
		download || { echo "cannot download lttng-modules-dkms with apt-get: $(tail -n 1 "$tmp/log")" >&2; exit 1; }
	fi
	mkdir -p "$dest"
	dpkg-deb -x "$tmp"/lttng-modules-dkms_*.deb "$dest"
	src=$(ls -d "$dest"/usr/src/lttng-modules-* | sort -V | tail -n 1)
fi
echo "$src"
