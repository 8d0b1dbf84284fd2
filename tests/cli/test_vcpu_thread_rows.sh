#!/usr/bin/env bash
# A vCPU whose thread id came back as another thread (tests/tools/exits_craft
# tid_reuse: vCPU 0 had tid 2000 twice, the first ended; vCPU 1 one
# thread): the exits are counted per vCPU, so report --exits and
# report --vcpu-time name each of vCPU 0's threads by its start, and say
# that the exits on its lines are the vCPU's, rather than show two rows that
# look the same. A vCPU of one thread keeps its plain line.
# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"

CRAFT=$OUTPUT/tests/tools/exits_craft
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! "$CRAFT" "$work/t.htr" tid_reuse; then
	fail vcpu_thread_rows_file "exits_craft failed"
	suite_exit
fi

"$HT" report --exits "$work/t.htr" >"$work/out" 2>"$work/err"
rc=$?
if [ "$rc" -eq 0 ] &&
	grep -q "^  vCPU 0 (tid 2000, ended, from +0.000 s): 5 exits (vCPU 0's, of its 2 threads), " "$work/out" &&
	grep -q "^  vCPU 0 (tid 2000, from +0.500 s): 5 exits (vCPU 0's, of its 2 threads), " "$work/out" &&
	grep -q "^  vCPU 1 (tid 2001): 5 exits, wait " "$work/out"; then
	pass exits_view_names_a_vcpus_threads_by_their_start
else
	fail exits_view_names_a_vcpus_threads_by_their_start "rc $rc: $(cat "$work/err") / $(grep "vCPU" "$work/out")"
fi

"$HT" report --vcpu-time "$work/t.htr" >"$work/out" 2>"$work/err"
rc=$?
# The labels' column widens to the longest: the times stay in one column.
if [ "$rc" -eq 0 ] &&
	grep -Eq "^  vCPU 0 \(tid 2000, ended, from \+0.000 s\) +400ms +75.0% +25.0% " "$work/out" &&
	grep -Eq "^  vCPU 0 \(tid 2000, from \+0.500 s\) +500ms +80.0% +20.0% " "$work/out" &&
	grep -Eq "^  vCPU 1 \(tid 2001\) +1.00s +90.0% " "$work/out" &&
	[ "$(grep -E "^  (vCPU [0-9]|all)" "$work/out" | awk '{ print index($0, "%") }' | sort -u | wc -l)" -eq 1 ]; then
	pass vcpu_time_names_a_vcpus_threads_by_their_start
else
	fail vcpu_time_names_a_vcpus_threads_by_their_start "rc $rc: $(cat "$work/err") / $(cat "$work/out")"
fi
suite_exit
