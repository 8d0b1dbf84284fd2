#!/usr/bin/env bash
# `record` on a real terminal (tmux): the live histograms are redrawn in place
# (nothing scrolls, one interval header on screen) and fit the pane's width.
source "$(dirname "$0")/../lib.sh"

if ! command -v tmux >/dev/null; then
	fail record_tty "tmux is missing: run 'make deps'"
	suite_exit
fi
if [ "$(id -u)" -ne 0 ]; then
	skip record_tty "record needs root to load BPF programs"
	suite_exit
fi
work=$(mktemp -d)
trap 'for s in "$work"/tmux-*.sock; do tmux -S "$s" kill-server 2>/dev/null; done; rm -rf "$work"' EXIT

for width in 100 50; do
	sock="$work/tmux-$width.sock" # a server of its own per run: a fresh one never races the last one's exit
	tmux -S "$sock" -f /dev/null new-session -d -x "$width" -y 30 -s rec \
		"cd '$work' && '$HT' record -o t$width.htr -i 0.25 -d 2 --per-vcpu; sleep 30"
	sleep 1.2 # several intervals drawn, recording still running
	screen=$(tmux -S "$sock" capture-pane -p -J -t rec)
	history=$(tmux -S "$sock" display-message -p -t rec '#{history_size}')
	headers=$(grep -c 'interval [0-9]*: ' <<<"$screen")
	longest=$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' <<<"$screen")
	if [ "$headers" -eq 1 ] && [ "$history" -eq 0 ] && [ "$(head -1 <<<"$screen" | grep -c 'interval')" -eq 1 ]; then
		pass "record_redraws_in_place_at_$width"
	else
		fail "record_redraws_in_place_at_$width" "headers $headers, history $history: $screen"
	fi
	[ "$longest" -le "$width" ] && pass "record_fits_width_$width" || fail "record_fits_width_$width" "line of $longest columns"
	sleep 1.5 # the recording ends: final frame and the summary line
	screen=$(tmux -S "$sock" capture-pane -p -J -t rec)
	grep -q "since start: 0 hypercalls" <<<"$screen" && grep -q "^hypertrace-bpf: 0 records, 0 dropped" <<<"$screen" \
		&& pass "record_ends_with_total_and_summary_at_$width" || fail "record_ends_with_total_and_summary_at_$width" "$screen"
done
suite_exit
