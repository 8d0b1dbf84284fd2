#!/usr/bin/env bash
# Which stage may use which: every `#include "..."` in src/user/ and
# src/common/ obeys the "may use" column of the source-tree table in
# docs/design.md (the table is the rule: this reads it). A file may include
# its own stage, the stages its row lists, include/hypertrace/ and
# src/common/; in src/user/ also the top level's cli.h and parse.h. Every
# directory of src/user/ must have a row. The check is shown to fail on a
# planted violation, so a passing run means something.
# Reads and compiles sources, with no port, no BPF program and no verdict a
# busy machine changes: it runs beside the nested-machine suites.
# tests/run: alongside the nested-machine suites
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
cd "$TOP" || exit 1

# FILE INCLUDE pairs allowed against the table, each with why and until when
# (none today).
KNOWN_EXCEPTIONS=()

# "STAGE ALLOWED..." per table row of src/user/ and src/common/; STAGE is the
# directory under src/user/ ("toplevel" for src/user/ itself: a directory src/user/top/ exists) or "common".
table_rules() {
	awk -F'|' '
		/^\| `src\/(user|common)\// {
			stage = $2; gsub(/^ *`|`.*$/, "", stage)
			if (stage == "src/user/") stage = "toplevel"
			else if (stage == "src/common/") stage = "common"
			else { sub(/^src\/user\//, "", stage); sub(/\/$/, "", stage) }
			out = stage
			rest = $4
			while (match(rest, /`[^`]*`/)) {
				tok = substr(rest, RSTART + 1, RLENGTH - 2)
				rest = substr(rest, RSTART + RLENGTH)
				sub(/^src\//, "", tok)
				if (tok !~ /\//) continue
				split(tok, parts, "/")
				name = parts[1] == "include" ? "hypertrace" : parts[1]
				out = out " " name
			}
			print out
		}' docs/design.md
}

# The stage of a source file, as table_rules names it.
file_stage() {
	case $1 in
	src/common/*) echo common ;;
	src/user/*/*) local s=${1#src/user/}; echo "${s%%/*}" ;;
	src/user/*) echo toplevel ;;
	esac
}

# What an include names: a stage, "hypertrace", "common", "cli" (cli.h,
# parse.h), "bpf" (the generated skeleton), "own" (a header beside the file).
include_stage() {
	local file=$1 inc=$2
	case $inc in
	cli.h | parse.h) echo cli ;;
	hypertrace.skel.h) echo bpf ;;
	*/*) echo "${inc%%/*}" ;;
	*) if [ -f "$(dirname "$file")/$inc" ]; then echo own; else echo "unknown:$inc"; fi ;;
	esac
}

# Prints "FILE: includes INC (STAGE may use: ...)" for every include the rules
# of ROOT's docs/design.md do not allow, and "no row: DIR" for a stage
# directory without a row. Run in ROOT.
violations() {
	declare -A allowed=()
	local line stage dir f inc target
	while read -r line; do
		stage=${line%% *}
		allowed[$stage]=" ${line#"$stage"} "
	done < <(table_rules)
	for dir in src/user/*/; do
		stage=${dir#src/user/}
		stage=${stage%/}
		[ -n "${allowed[$stage]+x}" ] || echo "no row for src/user/$stage/ in docs/design.md's source-tree table"
	done
	while IFS= read -r f; do
		stage=$(file_stage "$f")
		while IFS= read -r inc; do
			target=$(include_stage "$f" "$inc")
			case " ${KNOWN_EXCEPTIONS[*]} " in *" $f $inc "*) continue ;; esac
			case $target in
			own | hypertrace | common | "$stage") continue ;;
			cli) [ "$stage" != common ] && continue ;;
			esac
			[[ ${allowed[$stage]:-} == *" $target "* ]] && continue
			echo "$f: includes \"$inc\" (${stage} may use:${allowed[$stage]:- nothing listed})"
		done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
	done < <(find src/user src/common -name '*.[ch]' | sort)
}

found=$(violations)
if [ -z "$found" ]; then
	pass stage_includes_follow_the_design_table
else
	fail stage_includes_follow_the_design_table "$(echo "$found" | head -n 5 | tr '\n' ';')"
fi

# An exception no longer needed must go, so the list cannot hide a new one.
stale=""
for e in "${KNOWN_EXCEPTIONS[@]}"; do
	grep -q "^[[:space:]]*#[[:space:]]*include[[:space:]]*\"${e#* }\"" "${e%% *}" 2>/dev/null || stale+="$e; "
done
if [ -z "$stale" ]; then
	pass stage_include_exceptions_are_all_still_needed
else
	fail stage_include_exceptions_are_all_still_needed "remove from KNOWN_EXCEPTIONS: $stale"
fi

# The check itself: a copy of the tree with hist/ including record/ (a stage
# after it) and a directory without a row must be refused, naming both.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/docs"
cp docs/design.md "$work/docs/"
cp -r src "$work/src"
printf '#include "record/tracer.h"\n' >>"$work/src/user/hist/latency_hist.c"
mkdir -p "$work/src/user/newstage"
planted=$(cd "$work" && violations)
if [[ $planted == *'src/user/hist/latency_hist.c: includes "record/tracer.h"'* &&
	$planted == *'no row for src/user/newstage/'* ]]; then
	pass stage_include_check_refuses_a_planted_violation
else
	fail stage_include_check_refuses_a_planted_violation "got: $(echo "$planted" | head -n 3 | tr '\n' ';')"
fi
suite_exit
