#!/usr/bin/env bash
# The live latency histograms in a real terminal: tests/term/hist_view_tty.c
# draws three intervals in terminal mode inside a detached tmux pane; after
# each frame the pane must show that frame alone, redrawn in place (nothing
# scrolled into the history, no stale lines of a taller earlier frame), no
# line wider than the pane, and a frame taller than the pane cut to fit.
# Runs at 100 and 60 columns, and at 30 where most lines must be cut.
# Needs tmux and a C compiler.
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"

CC=${CC:-gcc}
if ! command -v tmux >/dev/null; then
	skip hist_view_tty "tmux is not installed"
	suite_exit
fi

work=$(mktemp -d)
# A private tmux server and no configuration: nothing of the user's tmux is touched.
sock=ht-hist-view-$$
tm() { tmux -L "$sock" -f /dev/null "$@"; }
# shellcheck disable=SC2317 # reached through the EXIT trap
cleanup() {
	tm kill-server 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

driver=$work/hist_view_tty
# The flags of the sanitized test build (Makefile USER_CFLAGS + SAN_FLAGS).
if "$CC" -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O2 -g \
	-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
	-I"$TOP/include" -I"$TOP/src" -I"$TOP/src/user" "$TOP/tests/term/hist_view_tty.c" \
	"$TOP/src/user/hist/latency_hist.c" "$TOP/src/user/hist/hist_view.c" "$TOP/src/common/escape.c" \
	"$TOP/src/common/nearest_rank.c" "$TOP/src/common/grow.c" -o "$driver" 2>"$work/cc.log"; then
	pass hist_view_tty_build
else
	fail hist_view_tty_build "$(head -c 2000 "$work/cc.log")"
	suite_exit
fi

# wait_for FILE CONTENT: up to 20 s for FILE to hold CONTENT.
wait_for() {
	local i
	for ((i = 0; i < 400; i++)); do
		[ "$(cat "$1" 2>/dev/null)" = "$2" ] && return 0
		sleep 0.05
	done
	return 1
}

# settle FRAME: the pane shows "interval FRAME" on its first row and stays
# unchanged for 0.2 s (tmux reads the pty on its own schedule). Prints the pane.
settle() {
	local prev="" cur i
	for ((i = 0; i < 100; i++)); do
		cur=$(tm capture-pane -p -J -t ht)
		if [[ $cur == "interval $1:"* ]] && [ "$cur" = "$prev" ]; then
			printf '%s\n' "$cur"
			return 0
		fi
		prev=$cur
		sleep 0.2
	done
	printf '%s\n' "$cur"
	return 1
}

# longest_line: length of the longest line on stdin.
longest_line() { awk '{ if (length($0) > n) n = length($0) } END { print n + 0 }'; }

run_size() {
	local cols=$1 rows=$2 tag="${1}x${2}" screen hist k longest
	rm -f "$work/status" "$work/next" "$work/rc"
	tm kill-server 2>/dev/null
	if ! tm new-session -d -s ht -x "$cols" -y "$rows" \
		"'$driver' '$work' 2>'$work/driver.err'; echo \$? >'$work/rc'; sleep 30"; then
		fail "hist_view_tty_start_$tag" "tmux new-session failed"
		return
	fi
	tm set-option -t ht history-limit 1000 >/dev/null

	for k in 1 2 3; do
		if ! wait_for "$work/status" "$k"; then
			fail "hist_view_tty_frame${k}_$tag" "driver did not draw frame $k: $(cat "$work/driver.err" 2>/dev/null)"
			return
		fi
		if ! screen=$(settle "$k"); then
			fail "hist_view_tty_frame${k}_$tag" "pane does not start with 'interval $k:': $(head -3 <<<"$screen")"
			return
		fi
		hist=$(tm display -p -t ht '#{history_size}')
		longest=$(longest_line <<<"$screen")

		# In place: nothing ever scrolled off the top, no older interval anywhere.
		if [ "$hist" != 0 ]; then
			fail "hist_view_tty_frame${k}_in_place_$tag" "$hist lines scrolled into the history"
		elif grep -Eq '^interval [0-9]+:' <<<"$(tail -n +2 <<<"$screen")"; then
			fail "hist_view_tty_frame${k}_in_place_$tag" "a second frame header is on screen"
		else
			pass "hist_view_tty_frame${k}_in_place_$tag"
		fi
		if [ "$longest" -gt "$cols" ]; then
			fail "hist_view_tty_frame${k}_width_$tag" "a line of $longest columns in a $cols-column pane"
		else
			pass "hist_view_tty_frame${k}_width_$tag"
		fi

		case $k in
		1)
			# 8 vCPUs x 3 series do not fit: cut to rows - 1 lines, the last saying so.
			local last
			last=$(sed -n "$((rows - 1))p" <<<"$screen")
			if [[ $last =~ ^\.\.\.\ [0-9]+\ more\ lines$ ]] && [ -z "$(sed -n "${rows}p" <<<"$screen")" ]; then
				pass "hist_view_tty_frame1_cut_to_height_$tag"
			else
				fail "hist_view_tty_frame1_cut_to_height_$tag" "row $((rows - 1)) is '$last'"
			fi
			;;
		3)
			# Only vCPU 0 was busy: any other vCPU on screen is left over from frame 1 or 2.
			if grep -q '^vcpu 0 (pid 4242)' <<<"$screen" && ! grep -Eq 'vcpu [1-7] ' <<<"$screen"; then
				pass "hist_view_tty_frame3_latest_only_$tag"
			else
				fail "hist_view_tty_frame3_latest_only_$tag" "stale lines: $(grep -E 'vcpu' <<<"$screen" | tr '\n' ';')"
			fi
			;;
		esac
		# The bars follow the pane: at 60 columns the widest rows fill it exactly.
		if [ "$k" = 3 ] && [ "$cols" -lt 78 ]; then
			if [ "$longest" -eq "$cols" ]; then
				pass "hist_view_tty_bars_fit_pane_$tag"
			else
				fail "hist_view_tty_bars_fit_pane_$tag" "longest line $longest, want $cols"
			fi
		fi
		: >"$work/next"
	done

	if wait_for "$work/rc" 0; then
		pass "hist_view_tty_driver_exit_$tag"
	else
		fail "hist_view_tty_driver_exit_$tag" "status $(cat "$work/rc" 2>/dev/null): $(head -c 2000 "$work/driver.err" 2>/dev/null)"
	fi
	tm kill-server 2>/dev/null
}

run_size 100 40
run_size 60 40
run_size 30 40
suite_exit
