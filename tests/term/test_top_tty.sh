#!/usr/bin/env bash
# `top` in a real terminal (tmux, 80x24): the real top loop over the real
# BPF handlers, fed by child processes that play VMs (tests/tools/top_feed:
# synthetic exits from each child's own process, QEMU-style -name on its
# command line). One row per VM by name with its exits/s; a VM that starts
# late appears and one that ends disappears; v and r expand vCPUs and
# reasons, s changes the sort key; nothing is wider than 80 columns or
# scrolls; a hostile name is shown escaped, never obeyed; q leaves the
# alternate screen and gives the terminal back as it was. Then batch mode
# (stdout not a terminal): plain repeated tables without escape codes.
# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"

FEED=$OUTPUT/tests/tools/top_feed
if ! command -v tmux >/dev/null; then
	fail top_tty "tmux is missing: run 'make deps'"
	suite_exit
fi
if [ "$(id -u)" -ne 0 ]; then
	skip top_tty "top loads BPF programs and needs root"
	suite_exit
fi
work=$(mktemp -d)
sock=$work/tmux.sock
tm() { tmux -S "$sock" -f /dev/null "$@"; }
trap 'tm kill-server 2>/dev/null; rm -rf "$work"' EXIT

# The hostile name: an escape sequence that would turn the screen red and clear it.
EVIL=$'ev\e[31m\e[2Jil'
printf '%s\n' "$EVIL" >"$work/evil"
tm new-session -d -x 80 -y 24 -s top \
	"'$FEED' --vm web1 --vm \"\$(cat '$work/evil')\" --vm late,start=3 --vm short,stop=2.5 -d 0.5; stty -a >'$work/stty.after'; echo TOP-ENDED; sleep 60"
pane() { tm capture-pane -p -t top; }
# wait_pane REGEX: up to 15 s for the pane to show REGEX.
wait_pane() {
	for _ in $(seq 75); do
		pane | grep -Eq -- "$1" && return 0
		sleep 0.2
	done
	return 1
}

if wait_pane '^ +[0-9]+ web1 +[1-9][0-9]* '; then
	pass top_shows_a_vm_by_name_with_exits_per_second
else
	fail top_shows_a_vm_by_name_with_exits_per_second "$(pane)"
fi
# The three VMs start together, and a VM shows from its first exits on: the
# hostile one's row may come a frame after web1's.
wait_pane 'ev\\x1b\[31m\\x1b\[2Jil'
screen=$(pane)
if grep -qF 'ev\x1b[31m\x1b[2Jil' <<<"$screen" && ! tm capture-pane -p -e -t top | grep -q $'\e\\[31m'; then
	pass top_shows_a_hostile_name_escaped
else
	fail top_shows_a_hostile_name_escaped "$screen"
fi
if grep -Eq '^ +[0-9]+ short ' <<<"$screen" && ! grep -q ' late ' <<<"$screen"; then
	pass top_before_late_start
else
	fail top_before_late_start "$screen"
fi
# short's exits end 0.5 s before late's begin; a frame may still hold both
# (a late frame on a busy machine), a later one not: short must go.
vms_turned_over() {
	local s
	for _ in $(seq 75); do
		s=$(pane)
		grep -Eq '^ +[0-9]+ late +[1-9]' <<<"$s" && ! grep -Eq '^ +[0-9]+ short ' <<<"$s" && return 0
		sleep 0.2
	done
	return 1
}
if vms_turned_over; then
	pass top_vms_appear_and_disappear
else
	fail top_vms_appear_and_disappear "$(pane)"
fi

tm send-keys -t top v
if wait_pane 'vCPU 0 CPU 0/KVM' && pane | grep -q 'v vCPUs on'; then pass top_v_expands_vcpus; else fail top_v_expands_vcpus "$(pane)"; fi
tm send-keys -t top r
if wait_pane '^ +io +[0-9]' && pane | grep -Eq '^ +hypercall +[1-9][0-9]* '; then
	pass top_r_expands_reasons_with_hypercalls
else
	fail top_r_expands_reasons_with_hypercalls "$(pane)"
fi
tm send-keys -t top s
if wait_pane 'sort wait'; then pass top_s_changes_the_sort_key; else fail top_s_changes_the_sort_key "$(pane)"; fi

screen=$(pane)
longest=$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' <<<"$screen")
history=$(tm display-message -p -t top '#{history_size}')
if [ "$longest" -le 80 ] && [ "$(wc -l <<<"$screen")" -le 24 ] && [ "$history" -eq 0 ] &&
	[ "$(head -1 <<<"$screen" | grep -c '^hypertrace-bpf top')" = 1 ]; then
	pass top_fits_80x24_in_place
else
	fail top_fits_80x24_in_place "longest $longest, history $history: $screen"
fi
alt_on=$(tm display-message -p -t top '#{alternate_on}')
tm send-keys -t top q
if wait_pane TOP-ENDED && [ "$alt_on" = 1 ] && [ "$(tm display-message -p -t top '#{alternate_on}')" = 0 ] &&
	grep -q ' icanon ' "$work/stty.after" && grep -q ' echo ' "$work/stty.after" && tm display-message -p -t top '#{cursor_flag}' | grep -q 1; then
	pass top_q_restores_the_terminal
else
	fail top_q_restores_the_terminal "alternate screen before $alt_on, after $(tm display-message -p -t top '#{alternate_on}'); $(cat "$work/stty.after" 2>&1 | head -5)"
fi

# Batch: stdout not a terminal.
out=$(timeout 30 "$FEED" --vm web1 -d 0.5 -n 3 | cat)
if [ "$(grep -c '^hypertrace-bpf top' <<<"$out")" = 3 ] && grep -Eq '^ +[0-9]+ web1 +[1-9]' <<<"$out" && ! grep -q $'\e' <<<"$out"; then
	pass top_batch_prints_plain_tables
else
	fail top_batch_prints_plain_tables "$out"
fi
# The real command on this host (no VM can run here): a header, no rows, and its errors.
out=$(timeout 20 "$HT" top -b -n 2 -d 0.3 2>&1)
if [ "$(grep -c '^hypertrace-bpf top' <<<"$out")" = 2 ] && grep -q 'EXITS/S' <<<"$out"; then
	pass top_command_batch
else
	fail top_command_batch "$out"
fi
expect_run top_rejects_a_bad_sort_key 2 "expected exits, wait, hcalls, p99, name or pid" -- "$HT" top -o speed
expect_run top_rejects_a_short_delay 2 "at least 0.1" -- "$HT" top -d 0.01
suite_exit
