#!/usr/bin/env bash
# Command-line behaviour of the `boottrace` guest program on this host: its
# usage errors, its help, and a run that cannot start (not a KVM guest, or
# no tracefs where it was told to look) ending with one line and status 1
# before any hypercall: it probes CPUID and opens the trace first.
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
BT=$OUTPUT/guest/boottrace

if [ ! -x "$BT" ]; then
	fail boottrace_built "$BT missing: run make guest"
	suite_exit
fi

for args in "--syncs 1" "--syncs 10001" "--syncs x" "--sync-ms 10001" "--tracing" "--bogus" "extra"; do
	# shellcheck disable=SC2086
	err=$("$BT" $args 2>&1 >/dev/null)
	status=$?
	if [ "$status" -eq 2 ] && [ "$(printf '%s\n' "$err" | grep -c .)" = 1 ] && grep -q '^boottrace: ' <<<"$err"; then
		pass "boottrace_usage_error [$args]"
	else
		fail "boottrace_usage_error [$args]" "status $status: $err"
	fi
done

if out=$("$BT" --help 2>&1) && grep -q -- '--match TEXT' <<<"$out" && grep -q 'record --nr 1150-1152' <<<"$out"; then
	pass boottrace_help_says_how_the_host_records_it
else
	fail boottrace_help_says_how_the_host_records_it "$out"
fi

err=$("$BT" --tracing /nonexistent/tracing 2>&1 >/dev/null)
status=$?
if [ "$status" -eq 1 ] && [ "$(printf '%s\n' "$err" | grep -c .)" = 1 ] &&
	grep -Eq '^boottrace: (not a KVM guest|/nonexistent/tracing/trace_marker: .*mount -t tracefs)' <<<"$err"; then
	pass boottrace_that_cannot_start_says_why_in_one_line
else
	fail boottrace_that_cannot_start_says_why_in_one_line "status $status: $err"
fi

suite_exit
