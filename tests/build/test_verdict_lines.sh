#!/usr/bin/env bash
# The verdict lines of tests/lib.sh: a reason quotes what a program printed
# (a container's console, a journal, a guest's output), so its control bytes
# must reach the log visible, not as terminal commands.
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"

verdicts=$(
	SUITE_FAILED=0
	HT_TEST_ONLY=
	fail planted_failure "console: $(printf '\033[0;32m  OK  \033[0m\r\033]0;title\007')done"
	skip planted_skip "$(printf 'a\tb\033[2Jc')"
)
if [[ $verdicts == *$'\033'* || $verdicts == *$'\r'* || $verdicts == *$'\007'* ]]; then
	fail verdict_lines_carry_no_control_bytes "$(printf '%q' "$verdicts")"
else
	pass verdict_lines_carry_no_control_bytes
fi
if grep -qxF 'FAIL: planted_failure: console: \x1b[0;32m  OK  \x1b[0m\r\x1b]0;title?done' <<<"$verdicts" &&
	grep -qxF "SKIP: planted_skip: a"$'\t'"b\\x1b[2Jc" <<<"$verdicts"; then
	pass verdict_lines_show_escapes_and_keep_the_text
else
	fail verdict_lines_show_escapes_and_keep_the_text "$(printf '%q' "$verdicts")"
fi
plain=$(fail planted "a plain reason: 100% 'quoted' \\n")
if [ "$plain" = "FAIL: planted: a plain reason: 100% 'quoted' \\n" ]; then
	pass verdict_lines_leave_plain_reasons_alone
else
	fail verdict_lines_leave_plain_reasons_alone "$(printf '%q' "$plain")"
fi
suite_exit
