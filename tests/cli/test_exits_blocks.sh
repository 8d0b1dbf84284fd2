#!/usr/bin/env bash
# EXITS blocks as a hostile file holds them (tests/tools/exits_craft, right
# CRCs): report --exits reads the most a recording can hold in time linear
# in its size, refuses a block over that bound, and refuses numbers no
# recording writes (buckets that do not add up, min above max, a time in
# the host beyond the buckets, a series or a count of lost exits that goes
# down, time that goes back, a vCPU thread's account whose states do not
# add up, that ends before it starts or that goes down) with one line that
# names the file and the block; sums that would wrap stop at the largest
# number instead.
# Files only, no port; its verdicts on time are ratios of CPU seconds
# (not wall time) in one run: tests/run runs it beside the nested-machine
# suites.
# tests/run: alongside the nested-machine suites
# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"

CRAFT=$OUTPUT/tests/tools/exits_craft
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# CPU seconds (user + system) of a command, its output to $work/out.
cpu_seconds() {
	local TIMEFORMAT='%3U %3S' t
	t=$( { time "$@" >"$work/out" 2>"$work/err"; } 2>&1 )
	awk '{ printf "%.3f\n", $1 + $2 }' <<<"$t"
}

# The largest block: as many series as fit in a block's 64 MiB next to the
# 16384 vCPU threads a block can hold, in reverse order, many VMs and one
# VM with every reason its own. Against the same shape ten times smaller in
# this same run: linear is 10, n log n about 12, the quadratic of one move
# or scan per series or thread 100.
# (64 MiB less 16384 threads of 2440 bytes leave room for 72159 series of 376.)
if "$CRAFT" "$work/big.htr" big 72000 && "$CRAFT" "$work/small.htr" big 7200; then
	small=$(cpu_seconds "$HT" report --exits "$work/small.htr")
	small_lines=$(wc -l <"$work/out")
	big=$(cpu_seconds "$HT" report --exits "$work/big.htr")
	big_lines=$(wc -l <"$work/out")
	ratio=$(awk -v b="$big" -v s="$small" 'BEGIN { printf "%.1f", b / (s > 0.01 ? s : 0.01) }')
	if grep -q "^VM (pid 1000): " "$work/out" && [ "$big_lines" -gt $((small_lines * 8)) ] &&
		awk -v r="$ratio" 'BEGIN { exit !(r < 30) }'; then
		pass exits_blocks_of_the_largest_size_read_in_linear_time
	else
		fail exits_blocks_of_the_largest_size_read_in_linear_time \
			"${big}s for 72000 series and 16384 threads, ${small}s for a tenth: ratio $ratio (want < 30); lines $big_lines vs $small_lines"
	fi
else
	fail exits_blocks_of_the_largest_size_read_in_linear_time "exits_craft failed"
fi

# Many small blocks, each with a new series and a new thread below all the
# ones before, all of one vCPU: a merge of the threads per block, or a scan
# of the vCPU's series per thread, would be quadratic.
if "$CRAFT" "$work/blocks-big.htr" blocks 40000 && "$CRAFT" "$work/blocks-small.htr" blocks 4000; then
	small=$(cpu_seconds "$HT" report --exits "$work/blocks-small.htr")
	big=$(cpu_seconds "$HT" report --exits "$work/blocks-big.htr")
	ratio=$(awk -v b="$big" -v s="$small" 'BEGIN { printf "%.1f", b / (s > 0.01 ? s : 0.01) }')
	if grep -q "^VM (pid 1000): 40000 exits" "$work/out" && awk -v r="$ratio" 'BEGIN { exit !(r < 30) }'; then
		pass exits_blocks_many_small_ones_read_in_linear_time
	else
		fail exits_blocks_many_small_ones_read_in_linear_time \
			"${big}s for 40000 blocks, ${small}s for a tenth: ratio $ratio (want < 30): $(head -3 "$work/out")"
	fi
else
	fail exits_blocks_many_small_ones_read_in_linear_time "exits_craft failed"
fi

# 16384 vCPU threads in a block are what a recording can write (8192 live,
# 8192 that ended since the block before); one more is a crafted file.
"$CRAFT" "$work/t16384.htr" threads 16384 && "$CRAFT" "$work/t16385.htr" threads 16385
"$HT" report --exits "$work/t16384.htr" >"$work/out" 2>"$work/err"
rc_ok=$?
"$HT" report --exits "$work/t16385.htr" >"$work/out2" 2>"$work/err2"
rc_over=$?
if [ "$rc_ok" -eq 0 ] && [ "$rc_over" -eq 1 ] && [ "$(wc -l <"$work/err2")" -eq 1 ] &&
	grep -q "t16385.htr is damaged: .*exits block at byte 256 holds 0 series, 16385 vCPU threads and 0 causes, more than the 278528, 16384 and 4096 a recording can hold: the file is corrupt" "$work/err2"; then
	pass exits_block_over_the_bound_is_refused
else
	fail exits_block_over_the_bound_is_refused "rc $rc_ok/$rc_over: $(cat "$work/err" "$work/err2")"
fi

# Numbers no recording writes: exit 1, one line naming the file and the block, nothing wrapped on stdout.
check_refused() { # check_refused SHAPE WHAT
	local name=exits_block_refused_$1
	"$CRAFT" "$work/$1.htr" "$1" || { fail "$name" "exits_craft failed"; return; }
	"$HT" report --exits "$work/$1.htr" >"$work/out" 2>"$work/err"
	local rc=$?
	if [ "$rc" -eq 1 ] && [ "$(wc -l <"$work/err")" -eq 1 ] && grep -q "$1.htr.*exits block at byte [0-9]*: $2.*: the file is corrupt" "$work/err" &&
		! grep -q "1844674407" "$work/out"; then
		pass "$name"
	else
		fail "$name" "rc $rc: $(cat "$work/err") / $(head -3 "$work/out")"
	fi
}
check_refused slots "a series counts 18446744073709551615 exits but its buckets hold 5"
check_refused minmax "a series' shortest exit (1023 ns) is longer than its longest (513 ns)"
check_refused total "a series' time in the host (18446744073709551614 ns) does not fit its 5 exits"
check_refused down "the series of pid 1000, vCPU 0, reason 123 goes down from 5 exits (5000 ns) to 4 (4000 ns)"
check_refused backwards "its time (1000000005 ns) is before the block before"
check_refused lost_down "its counts of what was lost go down"

# Accounts no recording writes, refused in every view that reads the blocks:
# states that do not add up to the thread's time (their sum wraps to it in
# 64 bits: a share of 184467440737095516160.0% once), an account that ends
# before it starts, one that goes down between blocks.
check_account_refused() { # check_account_refused SHAPE WHAT
	local name=exits_block_refused_$1 view bad=
	"$CRAFT" "$work/$1.htr" "$1" || { fail "$name" "exits_craft failed"; return; }
	for view in --exits --vcpu-time "--vcpu-time --json" "--vcpu-time --csv" --causes; do
		# shellcheck disable=SC2086 # the view's words
		"$HT" report $view "$work/$1.htr" >"$work/out" 2>"$work/err"
		local rc=$?
		if [ "$rc" -ne 1 ] || [ "$(wc -l <"$work/err")" -ne 1 ] ||
			! grep -q "$1.htr.*exits block at byte [0-9]*: $2.*: the file is corrupt" "$work/err" || [ -s "$work/out" ]; then
			bad="$view: rc $rc: $(cat "$work/err") / $(head -3 "$work/out")"
			break
		fi
	done
	if [ -z "$bad" ]; then
		pass "$name"
	else
		fail "$name" "$bad"
	fi
}
check_account_refused account_sum "the states of vCPU thread 2000 add up to 18446744073709551616 ns, not to its 10 ns"
check_account_refused account_back "the account of vCPU thread 2000 ends (1000000000 ns) before it starts (1000000010 ns)"
check_account_refused account_down "the account of vCPU thread 2000 (pid 1000) goes down: as_of_ns from 1000001000 to 1000000900"

# Two series of 2^63 exits each (each right on its own): their sum stops at 2^64 - 1.
"$CRAFT" "$work/wrap.htr" wrap
if "$HT" report --exits "$work/wrap.htr" >"$work/out" 2>"$work/err" &&
	grep -q "^exits: 18446744073709551615," "$work/out" && grep -q "^VM (pid 1000): 18446744073709551615 exits" "$work/out"; then
	pass exits_sums_stop_at_the_largest_number
else
	fail exits_sums_stop_at_the_largest_number "$(cat "$work/err") / $(head -3 "$work/out")"
fi
# Two threads of 2^63 ns each (each right on its own): the VM's row stops at 2^64 - 1 ns, its shares stay right.
"$CRAFT" "$work/account_wrap.htr" account_wrap
if "$HT" report --vcpu-time "$work/account_wrap.htr" >"$work/out" 2>"$work/err" &&
	grep -Eq "^  all its vCPU threads +inf +100.0% +0.0% " "$work/out"; then
	pass vcpu_time_sums_stop_at_the_largest_number
else
	fail vcpu_time_sums_stop_at_the_largest_number "$(cat "$work/err") / $(tail -3 "$work/out")"
fi
suite_exit
