#!/usr/bin/env bash
# Under `set -o pipefail` a pipeline whose reader stops early fails at
# random: `producer | head -n 1`, `| grep -q`, `| grep -m1` or an awk that
# exits leaves the producer writing into a closed pipe, it dies of SIGPIPE
# when its output is more than the pipe took before the reader left (status
# 141), and the pipeline's status is that failure. Under `set -e` the
# script then ends in the middle without a verdict; in an `if` the check
# reads false. Whether it happens depends on output size and scheduling, so
# a test passes for months and then fails one CI run.
# This reads every script of the tree's tests, benchmarks, CI and packaging
# that sets pipefail, and every script of tests/ or bench/ that one of them
# sources, and refuses such a reader after a pipe.
# Readers that read to the end do the same work: `sed -n 1p`,
# `sed -n 1,5p`, `grep PATTERN >/dev/null`, awk with a flag instead of exit.
# The check is shown to find a planted early reader.
# tests/run: alongside the nested-machine suites
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
cd "$TOP" || exit 1

# A pipe, then a reader that may leave before its input ends.
EARLY_READER='\|[[:space:]]*(head([[:space:]]|$)|grep[[:space:]]+(-[a-zA-Z]*[qm]|--quiet|--max-count)|awk[^|]*[^a-z_]exit[^a-z_])'

# The scripts that set pipefail, then what they source from tests/ by name.
pipefail_scripts() {
	local f name
	local -A seen=()
	for f in $(grep -rlE 'set -[a-z]*o pipefail' .ci tests bench deploy debian guest scripts 2>/dev/null); do
		f=${f#./}
		# This file plants early readers to show the check finds them.
		[ "$f" != tests/build/test_pipefail_readers.sh ] || continue
		seen[$f]=1
		while read -r name; do
			while read -r f; do seen[$f]=1; done < <(find tests bench -name "$name" -type f)
		done < <(grep -oE '^[[:space:]]*(source|\.)[[:space:]]+[^;|&]*[a-z_0-9-]+\.sh' "$f" | grep -oE '[a-z_0-9-]+\.sh$')
	done
	printf '%s\n' "${!seen[@]}" | sort
}

# FILE:LINE: TEXT of each early reader in the given scripts.
early_readers() {
	local f
	for f in "$@"; do
		grep -nE "$EARLY_READER" "$f" | grep -vE '^[0-9]+:[[:space:]]*#' | sed "s|^|$f:|"
	done
}

mapfile -t scripts < <(pipefail_scripts)
found=$(early_readers "${scripts[@]}")
if [ "${#scripts[@]}" -ge 5 ] && printf '%s\n' "${scripts[@]}" | grep -x tests/e2e/nested.sh >/dev/null && [ -z "$found" ]; then
	pass pipefail_scripts_read_their_pipes_to_the_end
	echo "  info: ${#scripts[@]} scripts set pipefail or are sourced by one"
else
	fail pipefail_scripts_read_their_pipes_to_the_end "${#scripts[@]} scripts; $(echo "$found" | sed -n 1,5p | tr '\n' ';')"
fi

# The check against planted early readers, one per kind, in a copy.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/planted.sh" <<'EOF'
set -euo pipefail
a=$(seq 100000 | head -n 1)
seq 100000 | grep -q 5 && echo five
b=$(seq 100000 | awk '{ print; exit }')
c=$(seq 100000 | grep -m1 7)
d=$(seq 100000 | sed -n 1p)
EOF
planted=$(early_readers "$work/planted.sh")
if [ "$(grep -c . <<<"$planted")" = 4 ] && ! grep 'sed -n 1p' <<<"$planted" >/dev/null; then
	pass pipefail_reader_check_finds_planted_early_readers
else
	fail pipefail_reader_check_finds_planted_early_readers "got: $(tr '\n' ';' <<<"$planted")"
fi
# What the check is for: the planted `head` really fails its script, the
# reader that reads to the end does not.
if ! bash -c 'set -euo pipefail; seq 1000000 | head -n 1 >/dev/null' 2>/dev/null &&
	bash -c 'set -euo pipefail; seq 1000000 | sed -n 1p >/dev/null'; then
	pass pipefail_early_reader_fails_a_script_and_a_full_reader_does_not
else
	fail pipefail_early_reader_fails_a_script_and_a_full_reader_does_not "seq 1000000 | head -n 1 did not fail under pipefail, or sed -n 1p did"
fi
suite_exit
