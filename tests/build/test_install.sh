#!/usr/bin/env bash
# make install puts the program, the guest programs, the docs, the man pages
# (MANDIR) and the bash completion (bash-completion's completionsdir under
# PREFIX) in place under DESTDIR, where man finds the pages and bash loads the
# completion; make uninstall then removes exactly that: every installed file,
# and the project's own directories, nothing else.
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
cd "$TOP" || exit 1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stage=$work/stage
# Something else already installed there must survive uninstall.
mkdir -p "$stage/usr/share/man/man1" "$stage/usr/bin"
touch "$stage/usr/share/man/man1/other.1" "$stage/usr/bin/other"

if ! make -s install DESTDIR="$stage" PREFIX=/usr >"$work/install.log" 2>&1; then
	fail install "$(tail -n 5 "$work/install.log")"
	suite_exit
fi
pages=$(cd docs/man && ls *.scd | sed 's/\.scd$//')
want=$( {
	echo /usr/bin/hypertrace-bpf
	echo /usr/libexec/hypertrace-bpf/hypercall
	echo /usr/libexec/hypertrace-bpf/minivm
	echo /usr/libexec/hypertrace-bpf/exitload
	echo /usr/libexec/hypertrace-bpf/boottrace
	for d in README.md docs/*.md; do echo "/usr/share/doc/hypertrace-bpf/$(basename "$d")"; done
	for p in $pages; do echo "/usr/share/man/man${p##*.}/$p"; done
	echo /usr/share/bash-completion/completions/hypertrace-bpf
	echo /usr/share/man/man1/other.1
	echo /usr/bin/other
} | sort)
got=$(cd "$stage" && find . -type f | sed 's|^\.||' | sort)
if [ "$got" = "$want" ]; then
	pass install_puts_every_file_in_place
else
	fail install_puts_every_file_in_place "missing: $(comm -23 <(echo "$want") <(echo "$got") | tr '\n' ' ') unexpected: $(comm -13 <(echo "$want") <(echo "$got") | tr '\n' ' ')"
fi

found=$(MANPATH=$stage/usr/share/man man -w hypertrace-bpf-record 2>&1)
if [ "$found" = "$stage/usr/share/man/man1/hypertrace-bpf-record.1" ]; then
	pass installed_man_page_found_by_man
else
	fail installed_man_page_found_by_man "man -w: $found"
fi
got=$(bash -c "source '$stage/usr/share/bash-completion/completions/hypertrace-bpf'; complete -p hypertrace-bpf" 2>&1)
if [[ $got == *"-F _hypertrace_bpf hypertrace-bpf"* ]]; then
	pass installed_completion_loads
else
	fail installed_completion_loads "$got"
fi

# Under PREFIX=/usr/local the completion goes under that prefix too.
if make -s install DESTDIR="$work/local" PREFIX=/usr/local >/dev/null 2>&1 &&
	[ -f "$work/local/usr/local/share/bash-completion/completions/hypertrace-bpf" ] &&
	[ -f "$work/local/usr/local/share/man/man5/hypertrace-bpf-file.5" ]; then
	pass install_follows_prefix
else
	fail install_follows_prefix "$(cd "$work/local" 2>/dev/null && find . -type f | head -n 5 | tr '\n' ' ')"
fi

if ! make -s uninstall DESTDIR="$stage" PREFIX=/usr >"$work/uninstall.log" 2>&1; then
	fail uninstall "$(tail -n 5 "$work/uninstall.log")"
	suite_exit
fi
left=$(cd "$stage" && find . -type f | sed 's|^\.||' | sort | tr '\n' ' ')
if [ "$left" = "/usr/bin/other /usr/share/man/man1/other.1 " ]; then
	pass uninstall_removes_exactly_what_install_put
else
	fail uninstall_removes_exactly_what_install_put "left: $left"
fi
if [ ! -e "$stage/usr/libexec/hypertrace-bpf" ] && [ ! -e "$stage/usr/share/doc/hypertrace-bpf" ]; then
	pass uninstall_removes_the_projects_directories
else
	fail uninstall_removes_the_projects_directories "$(cd "$stage" && find . -path '*hypertrace-bpf*')"
fi
suite_exit
