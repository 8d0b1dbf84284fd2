#!/usr/bin/env bash
# The build, as a user and a packager meet it: a copy of the tracked sources is
# built by an unprivileged user (no apt-get, no root), a second `make` does
# nothing, touching one header rebuilds exactly the sources that include it,
# `make V=1` shows the commands, and `make install` stages into DESTDIR.
# Builds in a copy, with no port, no BPF program and no verdict a busy
# machine changes: it runs beside the nested-machine suites.
# tests/run: alongside the nested-machine suites
# tests/run: alongside, long: first in its queue
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src=$work/src
mkdir -p "$src"
git -C "$TOP" ls-files -z | (cd "$TOP" && xargs -0 tar -cf - --no-recursion) | tar -xf - -C "$src"

# As nobody where we are root (the build must not need root); as ourselves otherwise.
as_user() { "$@"; }
if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1; then
	chown -R nobody "$work"
	as_user() { setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups env HOME="$work" "$@"; }
fi
mk() { as_user make -C "$src" OUTPUT="$work/out" -j2 "$@"; }

if mk "$work/out/hypertrace-bpf" >"$work/build.log" 2>&1; then
	pass build_as_unprivileged_user
else
	fail build_as_unprivileged_user "$(tail -5 "$work/build.log")"
	suite_exit
fi
if grep -q 'apt-get\|install-deps' "$work/build.log"; then
	fail build_installs_nothing "the build ran the package installer"
else
	pass build_installs_nothing
fi

out=$(mk "$work/out/hypertrace-bpf" 2>&1)
if [ "$out" = "make: Entering directory '$src'"$'\n'"make: '$work/out/hypertrace-bpf' is up to date."$'\n'"make: Leaving directory '$src'" ] ||
	mk -q "$work/out/hypertrace-bpf"; then
	pass second_make_does_nothing
else
	fail second_make_does_nothing "$out"
fi

# Touch one header: exactly the sources including it are compiled again.
header=tracefile/crc32.h
want=$(cd "$src" && grep -rl "#include \"$header\"" src --include='*.c' | sed 's/\.c$/.o/' | sort)
sleep 1 # a coarse file system time stamp must see the change
touch "$src/src/user/$header"
rebuilt=$(mk V=1 "$work/out/hypertrace-bpf" 2>&1 | grep -o ' -c [^ ]*\.c' | sed 's/ -c //; s/\.c$/.o/' | sort)
if [ -n "$want" ] && [ "$rebuilt" = "$want" ]; then
	pass touching_a_header_rebuilds_only_its_users
	echo "    (rebuilt: $(echo $rebuilt))"
else
	fail touching_a_header_rebuilds_only_its_users "want: $(echo $want); rebuilt: $(echo $rebuilt)"
fi

# The first build above was a whole one, without V: no command line in it.
quiet=$(grep -c -- '-Wall' "$work/build.log")
if [ "$quiet" -eq 0 ] && grep -q '^  CC ' "$work/build.log"; then
	pass quiet_by_default
else
	fail quiet_by_default "$quiet command lines printed without V=1: $(grep -m 2 -- '-Wall' "$work/build.log")"
fi

if mk install DESTDIR="$work/stage" PREFIX=/usr >"$work/install.log" 2>&1 &&
	[ -x "$work/stage/usr/bin/hypertrace-bpf" ] &&
	[ -x "$work/stage/usr/libexec/hypertrace-bpf/hypercall" ] &&
	[ -f "$work/stage/usr/share/doc/hypertrace-bpf/trace-format.md" ]; then
	pass install_into_destdir
else
	fail install_into_destdir "$(tail -5 "$work/install.log"; find "$work/stage" -type f | head)"
fi
suite_exit
