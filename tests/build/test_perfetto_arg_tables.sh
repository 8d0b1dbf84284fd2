#!/usr/bin/env bash
# The Perfetto export interns the names of every record's and every
# switch's arguments into arrays of iids. Those arrays are sized by the
# enums that index the name tables, and each table must agree with its
# enum: a
# fourteenth record argument (or a tenth switch argument) added with its
# enum compiles and fits; one added to a table alone, or to an enum alone,
# does not compile. Checked on copies of src/user/export/perfetto_export.c
# (the name tables) and perfetto_private.h (the enums and the arrays).
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
cd "$TOP" || exit 1

CC=${CC:-cc}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src=src/user/export/perfetto_export.c
hdr=src/user/export/perfetto_private.h

# compiles FILE [INCLUDE_DIR]: the compiler's verdict, its messages in
# $work/cc.log; INCLUDE_DIR first, where a variant's header is.
compiles() {
	$CC -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror ${2:+-I"$2"} -Iinclude -Isrc -Isrc/user -I"$OUTPUT" \
		-fsyntax-only "$1" >"$work/cc.log" 2>&1
}

# Each variant: one sed script on copies of the source and its header.
variant() {
	mkdir -p "$work/$1/export"
	sed -e "$2" "$src" >"$work/$1.c"
	sed -e "$2" "$hdr" >"$work/$1/export/perfetto_private.h"
	cmp -s "$src" "$work/$1.c" && cmp -s "$hdr" "$work/$1/export/perfetto_private.h" &&
		{ echo "the edit '$2' changed nothing: the test is out of date" >"$work/cc.log"; return 2; }
	compiles "$work/$1.c" "$work/$1"
}

if ! compiles "$src"; then
	fail perfetto_arg_tables_sized_from_their_names "the source itself does not compile: $(cat "$work/cc.log")"
	suite_exit
fi
variant both 's/"flags", "fields" }/"flags", "fields", "extra" }/; s/ARG_FIELDS, ARG_COUNT }/ARG_FIELDS, ARG_EXTRA, ARG_COUNT }/;
	s/"prev_pid", "prev_comm" }/"prev_pid", "prev_comm", "extra" }/; s/SW_PREV_COMM, SW_COUNT }/SW_PREV_COMM, SW_EXTRA, SW_COUNT }/'
both=$?
both_log=$(cat "$work/cc.log")
variant name_only 's/"flags", "fields" }/"flags", "fields", "extra" }/'
name_only=$?
name_log=$(cat "$work/cc.log")
variant switch_enum_only 's/SW_PREV_COMM, SW_COUNT }/SW_PREV_COMM, SW_EXTRA, SW_COUNT }/'
enum_only=$?
enum_log=$(cat "$work/cc.log")
if [ $both -eq 0 ] && [ $name_only -eq 1 ] && grep -q "record_args and its enum disagree" <<<"$name_log" &&
	[ $enum_only -eq 1 ] && grep -q "switch_args and its enum disagree" <<<"$enum_log"; then
	pass perfetto_arg_tables_sized_from_their_names
else
	fail perfetto_arg_tables_sized_from_their_names "name and enum: $both ($both_log); name alone: $name_only ($name_log); enum alone: $enum_only ($enum_log)"
fi
suite_exit
