#!/usr/bin/env bash
# `make deb` (dpkg-buildpackage -us -uc -b on a copy of the tracked files)
# builds the three packages, lintian finds no error and no warning in the
# .debs and the .changes, each package holds what it promises, the package
# version is the program's, and an upgrade leaves the exporter's socket
# bound.
# The build itself (--prepare: only `make deb`, for this tree) runs ahead,
# beside the host's serial suites: it is a minute of both CPUs on a host
# that has one idle then. The suite waits for it (a lock) and builds again
# only when that build was not of this tree or failed.
# tests/run: prepare ahead with --prepare
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
cd "$TOP" || exit 1
DEB=$OUTPUT/deb
mode=${1:-}
for tool in dpkg-buildpackage dh lintian; do
	command -v $tool >/dev/null && continue
	[ "$mode" = --prepare ] && exit 1
	fail deb_build "$tool is missing: run 'make deps' as root"
	suite_exit
done
mkdir -p "$OUTPUT" && exec {deb_lock}>"$OUTPUT/deb.lock" && flock "$deb_lock" || {
	[ "$mode" = --prepare ] && exit 1
	fail deb_build "cannot lock $OUTPUT/deb.lock"
	suite_exit
}
# The packages, stamped with the tree they were built from.
build() {
	local fp
	fp=$(tree_fingerprint)
	make deb >"$OUTPUT/deb.log" 2>&1 && echo "$fp" >"$DEB/built-for"
}
if [ "$mode" = --prepare ]; then
	made_for_this_tree "$DEB/built-for" || build
	exit
fi
if made_for_this_tree "$DEB/built-for"; then
	echo "    (make deb ran ahead for this tree)"
elif ! build; then
	fail deb_build "$(tail -n 3 "$OUTPUT/deb.log"; tail -n 10 "$DEB/build.log" 2>/dev/null)"
	suite_exit
fi
exec {deb_lock}>&-
pass deb_build

version=$(dpkg-parsechangelog -l debian/changelog -S Version)
changes=$DEB/hypertrace-bpf_${version}_amd64.changes
debs=("$DEB"/hypertrace-bpf_"$version"_amd64.deb "$DEB"/hypertrace-guest-tools_"$version"_amd64.deb
	"$DEB"/hypertrace-guest-dkms_"$version"_all.deb)
for d in "${debs[@]}" "$changes"; do
	[ -s "$d" ] || { fail deb_files_built "no $(basename "$d")"; suite_exit; }
done
pass deb_files_built

# lintian as root says so on stderr; its tags are on stdout. It exits
# non-zero on an error or a warning tag, and when it cannot check at all.
out=$(lintian --fail-on error,warning --no-tag-display-limit "$changes" "${debs[@]}" 2>"$OUTPUT/lintian.err")
status=$?
tags=$(grep -E '^[EW]: ' <<<"$out")
if [ $status -eq 0 ] && [ -z "$tags" ]; then
	pass lintian_no_errors_no_warnings
else
	fail lintian_no_errors_no_warnings "status $status: $(echo "$tags" | head -n 10 | tr '\n' ';') $(grep -v 'root privileges' "$OUTPUT/lintian.err" | head -n 3)"
fi

# contains DEB PATH...: every PATH is in DEB.
contains() {
	local deb=$1 list missing=
	shift
	list=$(dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|')
	for p in "$@"; do grep -qx -- "$p" <<<"$list" || missing+="$p "; done
	if [ -z "$missing" ]; then pass "deb_contents_$(basename "$deb" | cut -d_ -f1)"; else fail "deb_contents_$(basename "$deb" | cut -d_ -f1)" "missing: $missing"; fi
}
man1=$(cd docs/man && ls *.1.scd | sed 's|\.scd$|.gz|; s|^|/usr/share/man/man1/|')
man5=$(cd docs/man && ls *.5.scd | sed 's|\.scd$|.gz|; s|^|/usr/share/man/man5/|')
# shellcheck disable=SC2086
contains "${debs[0]}" /usr/bin/hypertrace-bpf /usr/libexec/hypertrace-bpf/minivm \
	/usr/share/bash-completion/completions/hypertrace-bpf $man1 $man5 \
	/usr/share/doc/hypertrace-bpf/README.md.gz /usr/share/doc/hypertrace-bpf/trace-format.md.gz \
	/usr/share/doc/hypertrace-bpf/copyright
contains "${debs[1]}" /usr/libexec/hypertrace-bpf/hypercall /usr/libexec/hypertrace-bpf/exitload \
	/usr/libexec/hypertrace-bpf/boottrace
src=/usr/src/hypertrace-guest-${version%%-*}
contains "${debs[2]}" "$src/dkms.conf" "$src/Kbuild" "$src/hypertrace_guest.c" "$src/include/hypertrace/guest.h"

# The package's version is the one the program reports.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dpkg-deb -x "${debs[0]}" "$work"
got=$("$work/usr/bin/hypertrace-bpf" --version 2>&1)
if [ "$got" = "hypertrace-bpf ${version%%-*}" ]; then
	pass deb_version_is_the_programs
else
	fail deb_version_is_the_programs "package $version, program says '$got' (src/user/cli.h HT_VERSION and debian/changelog differ)"
fi
# The tracer links Debian's libbpf, and the package depends on it.
if dpkg-deb -f "${debs[0]}" Depends | grep -q 'libbpf1' && ldd "$work/usr/bin/hypertrace-bpf" | grep -q 'libbpf\.so'; then
	pass deb_links_debians_libbpf
else
	fail deb_links_debians_libbpf "Depends: $(dpkg-deb -f "${debs[0]}" Depends)"
fi

# The exporter's port stays bound by systemd through an upgrade: the
# maintainer scripts restart the service alone then (the socket is only
# ever started, which does nothing to a running one), and stop its socket
# only when the package is removed.
ctl=$(mktemp -d)
dpkg-deb -e "${debs[0]}" "$ctl"
code() { grep -v '^[[:space:]]*#' "$ctl/$1"; }
# The condition of each stop of the socket: the line before it.
socket_stops=$(code prerm | grep -B1 "deb-systemd-invoke stop.*hypertrace-exporter\.socket" | grep '^if ')
# Units go to /lib/systemd/system (Debian 12's debhelper) or /usr/lib/systemd/system (Debian 13's, merged /usr).
if dpkg-deb -c "${debs[0]}" | grep -E ' \./(usr/)?lib/systemd/system/hypertrace-exporter\.socket$' >/dev/null &&
	code postinst | grep -q "deb-systemd-invoke try-restart hypertrace-exporter.service" &&
	! code postinst | grep "deb-systemd-invoke.*hypertrace-exporter\.socket" | grep -vq "deb-systemd-invoke start " &&
	[ -n "$socket_stops" ] && ! grep -vq '"$1" = remove' <<<"$socket_stops"; then
	pass deb_upgrade_restarts_exporter_keeps_its_socket
else
	fail deb_upgrade_restarts_exporter_keeps_its_socket "postinst: $(code postinst | grep -E 'invoke|systemctl' | tr '\n' ' '); prerm: $(code prerm | grep -E 'invoke|remove' | tr '\n' ' ')"
fi
rm -rf "$ctl"
suite_exit
