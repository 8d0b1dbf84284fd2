# Shell test helpers, sourced by tests/*/test_*.sh. Each check prints one
# PASS:/FAIL:/SKIP: line that tests/run counts.
# shellcheck shell=bash

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUTPUT=${OUTPUT:-$TOP/.output}
# The sanitized build: CLI tests also run under ASan/UBSan.
HT=${HT:-$OUTPUT/san/hypertrace-bpf}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
SUITE_FAILED=0

# `tests/run -t NAME` sets HT_TEST_ONLY: a suite's checks share their setup,
# so the suite runs whole, but only NAME's verdict is printed and counted.
shown() { [ -z "${HT_TEST_ONLY:-}" ] || [ "$1" = "$HT_TEST_ONLY" ]; }
# A reason often quotes a program's output (a console log, a journal): ESC
# and CR are shown as \x1b and \r, other control bytes as ?, so a verdict
# line cannot drive the terminal of whoever reads it. Newlines, tabs stay.
printable() {
	if [[ $1 == *[$'\x01'-$'\x08'$'\x0b'-$'\x1f'$'\x7f']* ]]; then
		LC_ALL=C sed 's/\x1b/\\x1b/g; s/\r/\\r/g; s/[\x01-\x08\x0b-\x1f\x7f]/?/g' <<<"$1"
	else
		printf '%s\n' "$1"
	fi
}
pass() { if shown "$1"; then echo "PASS: $1"; fi; }
fail() { if shown "$1"; then printable "FAIL: $1: ${2:-}"; SUITE_FAILED=1; fi; }
skip() { if shown "$1"; then printable "SKIP: $1: $2"; fi; }

# expect_run NAME WANT_STATUS WANT_STDERR_REGEX -- CMD...
# Runs CMD, checks its exit status and that stderr matches the regex.
expect_run() {
	local name=$1 want_status=$2 want_err=$3
	shift 4
	local err status
	err=$("$@" 2>&1 >/dev/null)
	status=$?
	if [ "$status" -ne "$want_status" ]; then
		fail "$name" "exit status $status, want $want_status; stderr: $err"
	elif ! grep -Eq -- "$want_err" <<<"$err"; then
		fail "$name" "stderr does not match /$want_err/: $err"
	else
		pass "$name"
	fi
}

# peak_rss_kib CMD...: runs CMD (its output discarded) and prints its peak
# resident memory in KiB (the kernel's ru_maxrss of the child), -1 if it failed.
peak_rss_kib() {
	/usr/bin/python3 -c '
import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if r.returncode == 0 else -1)' "$@"
}

suite_exit() { exit "$SUITE_FAILED"; }

# What a preparation made ahead (tests/run's --prepare) was made for: the
# tracked files' contents as they are now.
tree_fingerprint() {
	{ git -C "$TOP" ls-files -s; git -C "$TOP" diff HEAD 2>/dev/null; } | sha1sum | cut -d' ' -f1
}
# made_for_this_tree STAMP: whether the preparation STAMP stands for (a file
# holding the fingerprint it was made for) was made for the tree as it is.
made_for_this_tree() { [ "$(cat "$1" 2>/dev/null)" = "$(tree_fingerprint)" ]; }
