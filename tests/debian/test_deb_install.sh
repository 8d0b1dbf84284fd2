#!/usr/bin/env bash
# The packages `make deb` builds install with apt into a clean Debian 13 root
# (the pristine debootstrap root tests/distro keeps under .cache/distro, made
# here if absent) together with man-db and bash-completion, and there
# `hypertrace-bpf --version` runs, `man -w` finds the record page, bash
# completes through the installed completion as a user's shell loads it
# (bash-completion's loader), and the guest program runs.
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
source "$TOP/tests/distro/debian_root.sh"
cd "$TOP" || exit 1
if [ "$(id -u)" -ne 0 ]; then
	skip deb_install "needs root (debootstrap, chroot)"
	exit 0
fi
version=$(dpkg-parsechangelog -l debian/changelog -S Version)
debs=("$OUTPUT"/deb/hypertrace-bpf_"$version"_amd64.deb "$OUTPUT"/deb/hypertrace-guest-tools_"$version"_amd64.deb)
if { [ ! -s "${debs[0]}" ] || [ ! -s "${debs[1]}" ]; } && ! make deb >"$OUTPUT/deb.log" 2>&1; then
	fail deb_install "make deb failed: $(tail -n 3 "$OUTPUT/deb.log")"
	suite_exit
fi
root=$(mktemp -d "${TMPDIR:-/tmp}/ht-deb-root.XXXXXX")
cleanup() { droot_leave "$root"; rm -rf "$root"; }
trap cleanup EXIT
if ! droot_clean trixie "$root" || ! droot_enter "$root"; then
	fail deb_install_clean_root "$DR_ERR"
	suite_exit
fi
cp "${debs[@]}" "$root/tmp/"
if droot_run "$root" sh -c "apt-get update -qq && apt-get install -y -qq --no-install-recommends \
	$(printf '/tmp/%s ' "$(basename "${debs[0]}")" "$(basename "${debs[1]}")") man-db bash-completion" >"$root/install.log" 2>&1; then
	pass deb_installs_with_apt
else
	fail deb_installs_with_apt "$(tail -n 5 "$root/install.log" | tr '\n' ' ')"
	suite_exit
fi

got=$(droot_run "$root" hypertrace-bpf --version 2>&1)
if [ "$got" = "hypertrace-bpf ${version%%-*}" ]; then pass deb_installed_version; else fail deb_installed_version "$got"; fi

got=$(droot_run "$root" man -w hypertrace-bpf-record 2>&1)
if [ "$got" = /usr/share/man/man1/hypertrace-bpf-record.1.gz ]; then pass deb_installed_man_page; else fail deb_installed_man_page "man -w: $got"; fi

# As an interactive shell completes: bash-completion loads the command's
# completion on first use, then its function fills COMPREPLY.
got=$(droot_run "$root" bash -c '
	source /usr/share/bash-completion/bash_completion
	_completion_loader hypertrace-bpf 2>/dev/null || _comp_load hypertrace-bpf
	func=$(complete -p hypertrace-bpf | sed -n "s/.*-F \([^ ]*\) .*/\1/p")
	COMP_WORDS=(hypertrace-bpf record --h); COMP_CWORD=2
	COMP_LINE="hypertrace-bpf record --h"; COMP_POINT=${#COMP_LINE}
	"$func" hypertrace-bpf --h record
	printf "%s\n" "${COMPREPLY[@]}" | sort' 2>&1 | tr '\n' ' ')
if [ "$got" = "--help --hist " ]; then pass deb_installed_completion; else fail deb_installed_completion "record --h<Tab>: [$got]"; fi

got=$(droot_run "$root" /usr/libexec/hypertrace-bpf/hypercall --help 2>&1 | head -n 1)
if [[ $got == Usage:* ]]; then pass deb_installed_guest_program; else fail deb_installed_guest_program "$got"; fi
suite_exit
