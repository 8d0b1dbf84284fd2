#!/usr/bin/env bash
# The man pages (make man: docs/man/*.scd filled with each command's --help)
# never drift from the program: every command `hypertrace-bpf --help` lists
# has a page; the options a page defines are exactly those of the command's
# --help, both ways; every long option named anywhere in a page exists; the
# options in the C option tables (src/user) that a command accepts are exactly
# those its --help lists; each page has the sections a user looks for and
# renders without a groff warning; the file format page states the header's
# constants.
# Reads the program's --help and the pages, with no port, no BPF program
# and no verdict a busy machine changes: it runs beside the nested-machine suites.
# tests/run: alongside the nested-machine suites
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
cd "$TOP" || exit 1
BIN=$OUTPUT/hypertrace-bpf
MAN=$OUTPUT/man
for tool in man scdoc; do
	command -v $tool >/dev/null || { fail man_pages "$tool is missing: run 'make deps' as root"; suite_exit; }
done
if ! make -s man >/dev/null 2>"$OUTPUT/man.err"; then
	fail man_pages_build "$(head -n 3 "$OUTPUT/man.err")"
	suite_exit
fi

# The options of a --help text on stdin: long and short, from its option
# entries (indented lines starting with '-', up to two spaces).
help_options() {
	grep -E '^ +-' | sed -E 's/^ +//; s/  .*//' | grep -oE '(^|[ ,])--?[A-Za-z0-9][A-Za-z0-9-]*' |
		tr -d ' ,' | sort -u
}
# A rendered page's text.
render() { MANWIDTH=200 man -E UTF-8 -l "$1" 2>/dev/null | col -b; }
# The options a page defines: the entries of its OPTIONS section (and its
# subsections), i.e. lines at the section's indent starting with '-'.
page_options() {
	render "$1" | awk '/^[A-Z]/ { on = ($0 == "OPTIONS") ; next } on' |
		grep -E '^       -' | sed -E 's/^ +//' | grep -oE '(^|[ ,])--?[A-Za-z0-9][A-Za-z0-9-]*' |
		tr -d ' ,' | sort -u
}

commands=$("$BIN" --help | awk '/^Commands:/ { on = 1; next } on && /^ +[a-z]/ { print $1; next } on && !/^ / { on = 0 }')
if [ -z "$commands" ]; then
	fail man_commands_listed "hypertrace-bpf --help lists no command"
	suite_exit
fi

all_help=$( { "$BIN" --help; for c in $commands; do "$BIN" "$c" --help; done; } | help_options)
for c in top $commands; do
	if [ "$c" = top ]; then page=$MAN/hypertrace-bpf.1; args=(); else page=$MAN/hypertrace-bpf-$c.1; args=("$c"); fi
	name=$(basename "$page")
	if [ ! -s "$page" ]; then
		fail "man_page_exists_$c" "no $name: write docs/man/$name.scd"
		continue
	fi
	pass "man_page_exists_$c"
	want=$("$BIN" "${args[@]}" --help | help_options)
	got=$(page_options "$page")
	missing=$(comm -23 <(echo "$want") <(echo "$got") | tr '\n' ' ')
	extra=$(comm -13 <(echo "$want") <(echo "$got") | tr '\n' ' ')
	if [ -n "$want" ] && [ -z "$missing$extra" ]; then
		pass "man_options_match_help_$c"
	else
		fail "man_options_match_help_$c" "in --help, not in $name: [$missing]; in $name, not in --help: [$extra]"
	fi
	text=$(render "$page")
	absent=
	for section in "EXIT STATUS" ENVIRONMENT FILES EXAMPLES "SEE ALSO"; do
		grep -qx "$section" <<<"$text" || absent+="$section; "
	done
	if [ -z "$absent" ]; then pass "man_sections_$c"; else fail "man_sections_$c" "$name lacks: $absent"; fi
done

# Long options named anywhere in any page (prose included) exist: in a
# command's --help, or in the --help of the guest programs the examples run.
all_help+=$'\n'$(for g in "$OUTPUT"/guest/hypercall "$OUTPUT"/guest/minivm; do "$g" --help; done 2>/dev/null | help_options)
unknown=
for page in "$MAN"/*.[15]; do
	# From the page's roff, font changes dropped: a rendered line may break
	# inside a hyphenated word (groff 1.23 does, at "--kaslr-offset").
	for o in $(sed 's/\\f[BIRP]//g; s/\\-/-/g' "$page" | grep -oE '(^|[^A-Za-z0-9-])--[a-z][a-z0-9-]*' |
		grep -oE -- '--[a-z][a-z0-9-]*' | sort -u); do
		grep -qx -- "$o" <<<"$all_help" || unknown+="$(basename "$page"): $o "
	done
done
if [ -z "$unknown" ]; then
	pass man_names_only_existing_options
else
	fail man_names_only_existing_options "$unknown"
fi

# The C option tables against --help: every long option a command accepts
# (not refused as unknown) is in its --help, and the reverse. A probe never
# runs the command: an unknown option after it stops the parse.
# Parsed only to be refused with a pointer to the command that has them.
refused_by_design="convert --graph
convert --sched"
table=$(grep -rhoE '\{ *"[a-z][a-z0-9-]*", *(no|required|optional)_argument' src/user | grep -oE '"[^"]+"' | tr -d '"' | sort -u)
for c in $commands; do
	accepted=
	for o in $table; do
		err=$("$BIN" "$c" "--$o=1" --zz-not-an-option </dev/null 2>&1 >/dev/null)
		grep -q "unknown option '--$o" <<<"$err" || accepted+="--$o"$'\n'
	done
	accepted=$(sort -u <<<"${accepted%$'\n'}" | while read -r o; do
		grep -qx "$c $o" <<<"$refused_by_design" || echo "$o"
	done)
	helped=$("$BIN" "$c" --help | help_options | grep -- '^--')
	missing=$(comm -23 <(echo "$accepted") <(echo "$helped") | tr '\n' ' ')
	extra=$(comm -13 <(echo "$accepted") <(echo "$helped") | tr '\n' ' ')
	if [ -z "$missing$extra" ]; then
		pass "help_lists_every_parsed_option_$c"
	else
		fail "help_lists_every_parsed_option_$c" "accepted but not in --help: [$missing]; in --help but refused: [$extra]"
	fi
done

while read -r c o; do
	err=$("$BIN" "$c" "$o" --ctf "$OUTPUT/none" "$OUTPUT/none.htr" 2>&1 >/dev/null)
	if [ $? -eq 2 ] && grep -q "report" <<<"$err"; then
		pass "refused_with_a_pointer_${c}_${o#--}"
	else
		fail "refused_with_a_pointer_${c}_${o#--}" "$c $o: $err"
	fi
done <<<"$refused_by_design"

# groff renders every page without a warning (lintian's check).
warnings=
for page in "$MAN"/*.[15]; do
	w=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$page" 2>&1 >/dev/null)
	[ -z "$w" ] || warnings+="$(basename "$page"): $w "
done
if [ -z "$warnings" ]; then pass man_pages_render_without_warnings; else fail man_pages_render_without_warnings "$warnings"; fi

# hypertrace-bpf-file(5) states the header's constants as trace_file.h has them.
text=$(render "$MAN/hypertrace-bpf-file.5")
h=include/hypertrace/trace_file.h
def() { awk -v n="$1" '$1 == "#define" && $2 == n { print $3 }' "$h"; }
bad=
grep -q "magic $(def HT_FILE_MAGIC | tr -d '"')" <<<"$text" || bad+="magic "
grep -q "version (u32, $(def HT_FILE_VERSION);" <<<"$text" || bad+="version "
grep -q "^ *$(def HT_FILE_HEADER_SIZE) bytes at offset 0" <<<"$text" || bad+="header_size "
grep -q "magic $(def HT_BLOCK_MAGIC | sed 's/u$//')" <<<"$text" || bad+="block_magic "
grep -q "RECORDS (type $(def HT_BLOCK_RECORDS))" <<<"$text" || bad+="records_type "
grep -q "TRAILER (type $(def HT_BLOCK_TRAILER))" <<<"$text" || bad+="trailer_type "
grep -q "IDENTITY (type $(def HT_BLOCK_IDENTITY))" <<<"$text" || bad+="identity_type "
if [ -z "$bad" ]; then pass man_file_format_matches_header; else fail man_file_format_matches_header "differs from $h: $bad"; fi
for section in FILES EXAMPLES "SEE ALSO"; do
	grep -qx "$section" <<<"$text" || fail man_sections_file "hypertrace-bpf-file.5 has no $section section"
done
suite_exit
