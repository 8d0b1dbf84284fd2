#!/usr/bin/env bash
# The hypertrace-guest-dkms package builds the guest module with DKMS: its
# dkms.conf and sources, unpacked from the .deb, built by this system's dkms
# (a private DKMS tree: nothing is installed) against the guest kernel's
# headers that tests/guest_kernel.sh fetches (Debian 12's 6.1 here, Debian
# 13's 6.12 in the Debian 13 root of tests/distro). The module is for that
# kernel release and is the very module `make guest-module` builds, which
# the nested tests load in a guest: byte for byte, once the debug
# information DKMS strips and the build ID (a hash that covers the debug
# information, where the build directories differ) are taken out of both.
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
source "$TOP/tests/guest_kernel.sh"
cd "$TOP" || exit 1
command -v dkms >/dev/null || { fail dkms_build "dkms is missing: run 'make deps' as root"; suite_exit; }
version=$(dpkg-parsechangelog -l debian/changelog -S Version)
deb=$OUTPUT/deb/hypertrace-guest-dkms_${version}_all.deb
if [ ! -s "$deb" ] && ! make deb >"$OUTPUT/deb.log" 2>&1; then
	fail dkms_package_built "make deb failed: $(tail -n 3 "$OUTPUT/deb.log")"
	suite_exit
fi
if ! guest_kernel_fetch; then
	fail dkms_guest_headers_fetched "$GK_ERR"
	suite_exit
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/pkg" "$work/tree" "$work/installed"
dpkg-deb -x "$deb" "$work/pkg"
src=$(ls -d "$work"/pkg/usr/src/hypertrace-guest-*)
name=$(sed -n 's/^PACKAGE_NAME="\(.*\)"$/\1/p' "$src/dkms.conf")
mver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$src/dkms.conf")
if [ "$src" != "$work/pkg/usr/src/$name-$mver" ]; then
	fail dkms_conf_names_its_source "dkms.conf names $name $mver, the source is $(basename "$src")"
	suite_exit
fi
pass dkms_conf_names_its_source

if ! dkms build -m "$name" -v "$mver" -k "$GK_RELEASE" --kernelsourcedir "$GK_KDIR" \
	--dkmstree "$work/tree" --sourcetree "$work/pkg/usr/src" --installtree "$work/installed" >"$work/dkms.log" 2>&1; then
	fail dkms_builds_the_module "$(tail -n 5 "$work/dkms.log" | tr '\n' ' '; cat "$work"/tree/"$name"/"$mver"/build/make.log 2>/dev/null | grep -iE 'error' | head -n 3)"
	suite_exit
fi
ko=$(find "$work/tree/$name/$mver/$GK_RELEASE" -name 'hypertrace_guest.ko*' | head -n 1)
case $ko in
*.xz) xz -dc "$ko" >"$work/dkms.ko" ;;
*.zst) zstd -qdc "$ko" >"$work/dkms.ko" ;;
*.gz) gzip -dc "$ko" >"$work/dkms.ko" ;;
'') fail dkms_builds_the_module "dkms build wrote no hypertrace_guest.ko"; suite_exit ;;
*) cp "$ko" "$work/dkms.ko" ;;
esac
pass dkms_builds_the_module

vermagic=$(modinfo -F vermagic "$work/dkms.ko" 2>/dev/null || objcopy -O binary --only-section=.modinfo "$work/dkms.ko" /dev/stdout | tr '\0' '\n' | sed -n 's/^vermagic=//p')
if [ "${vermagic%% *}" = "$GK_RELEASE" ]; then
	pass dkms_module_is_for_the_guest_release
else
	fail dkms_module_is_for_the_guest_release "vermagic '$vermagic', want $GK_RELEASE"
fi

if ! make guest-module OUTPUT="$work/out" KDIR="$GK_KDIR" >"$work/make.log" 2>&1; then
	fail dkms_module_is_make_guest_modules "make guest-module failed: $(grep -E '\*\*\*|error:' "$work/make.log" | head -n 3 | tr '\n' ' ')"
	suite_exit
fi
objcopy --strip-debug --remove-section=.note.gnu.build-id "$work/dkms.ko" "$work/dkms.norm.ko"
objcopy --strip-debug --remove-section=.note.gnu.build-id "$work/out/guest/module/hypertrace_guest.ko" "$work/make.norm.ko"
if cmp -s "$work/dkms.norm.ko" "$work/make.norm.ko"; then
	pass dkms_module_is_make_guest_modules
	echo "    ($(stat -c %s "$work/make.norm.ko") bytes identical for $GK_RELEASE)"
else
	fail dkms_module_is_make_guest_modules "the DKMS module differs from make guest-module's: $(cmp "$work/dkms.norm.ko" "$work/make.norm.ko" 2>&1)"
fi
suite_exit
