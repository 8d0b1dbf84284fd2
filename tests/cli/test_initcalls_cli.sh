#!/usr/bin/env bash
# report --initcalls on a guest trace replayed through guest/boottrace's own
# code (tests/tools/boottrace_gen) with a known clock: every initcall of the
# guest's text, in its order, with its name, module, level and length; the
# levels' lengths; the times on the host's clock through the sync markers'
# pairs; hostile text kept and escaped, a long line cut and said, a replay
# without its end, a stray piece of text, no pairs, usage errors.
# Files only, no port, no verdict on time: tests/run runs it beside the
# nested-machine suites.
# tests/run: alongside the nested-machine suites
# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"

GEN=$OUTPUT/tests/tools/boottrace_gen
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# shellcheck source=../export/initcall_trace.sh
source "$(dirname "$0")/../export/initcall_trace.sh"
esc=$(printf '\033')
# A guest's trace as tracefs prints it: levels from the boot task, an
# initcall of another CPU, modules' inits from insmod (two at once) and one
# that never returns, a lost-events line, a name with a terminal escape and
# a quote, and a line longer than 1024 bytes.
initcall_trace "$work/trace.txt"

if ! truth=$("$GEN" "$work/t.htr" "$work/trace.txt") || ! "$GEN" "$work/noend.htr" "$work/trace.txt" --no-end --stray >/dev/null ||
	! "$GEN" "$work/nosync.htr" "$work/trace.txt" --syncs 0 >/dev/null; then
	fail initcalls_cli_files "boottrace_gen failed"
	suite_exit
fi
read -r _ rate _ intercept <<<"$truth"

"$HT" report --initcalls --csv "$work/t.htr" >"$work/t.csv" 2>"$work/err"
rc=$?
# The guest's own initcalls, from its text: name, module, start and finish (ns as printed).
awk '/initcall_start: /  { f = $0; sub(/.*func=/, "", f); n = f; sub(/\+.*/, "", n); m = ""; if (f ~ / \[/) { m = f; sub(/.*\[/, "", m); sub(/\].*/, "", m) }
		t = $0; sub(/: initcall_start:.*/, "", t); sub(/.* /, "", t); split(t, s, "."); start[++k] = s[1] * 1000000000 + s[2] * 1000; name[k] = n; mod[k] = m }
	/initcall_finish: / { t = $0; sub(/: initcall_finish:.*/, "", t); sub(/.* /, "", t); split(t, s, "."); fin[++j] = s[1] * 1000000000 + s[2] * 1000 }
	END { for (i = 1; i <= k; i++) printf "%s|%s|%d|%s\n", name[i], mod[i], start[i], i in fin ? fin[i] - start[i] : "" }' "$work/trace.txt" >"$work/want"
# The report's, with the CSV's quotes and escapes undone for the comparison.
python3 - "$work/t.csv" "$rate" "$intercept" >"$work/got" 2>"$work/py.err" <<'PY'
import csv, sys
rate, icpt = float(sys.argv[2]), float(sys.argv[3])
bad = []
for r in csv.DictReader(open(sys.argv[1])):
    if r['kind'] != 'initcall':
        continue
    name = r['name'].encode().decode('unicode_escape')
    print('%s|%s|%s|%s' % (name.replace('\\\\', '\\'), r['module'], r['guest_start_ns'], r['guest_length_ns']))
    # On the host's clock: host = intercept + rate * guest, within 2 ns; the length times the rate.
    if abs(int(r['start_ns']) - (icpt + rate * int(r['guest_start_ns']))) > 2 or \
       (r['length_ns'] != '') != (r['guest_length_ns'] != '') or \
       (r['length_ns'] and abs(int(r['length_ns']) - rate * int(r['guest_length_ns'])) > 2):
        bad.append(r['name'])
if bad:
    print('OFF-CLOCK ' + ' '.join(bad), file=sys.stderr)
PY
if [ "$rc" -eq 0 ] && diff -u "$work/want" "$work/got" >"$work/diff" && [ -s "$work/want" ]; then
	pass initcalls_are_the_guests_own_in_order_with_name_module_and_length
else
	fail initcalls_are_the_guests_own_in_order_with_name_module_and_length "rc $rc: $(cat "$work/diff" "$work/err" "$work/py.err")"
fi
if [ -s "$work/got" ] && ! grep -q OFF-CLOCK "$work/py.err"; then
	pass initcalls_land_on_the_hosts_clock_by_the_sync_markers
else
	fail initcalls_land_on_the_hosts_clock_by_the_sync_markers "$(cat "$work/py.err")"
fi

# Levels: each lasts to the next one's start, the last to its last return; their initcalls counted.
levels=$(awk -F, '$3 == "level" { printf "%s %s %s %s;", $5, $10, $11, $16 }' "$work/t.csv")
want_levels='"console" 61234000 148766000 1;"early" 210000000 90000000 1;"core" 300000000 100000000 2;"late" 400000000 20100000 1;'
if [ "$levels" = "$want_levels" ] && grep -q '^7100,"boot1",initcall,5,modules,"virtio_net_driver_init","virtio_net",80,' "$work/t.csv"; then
	pass initcall_levels_last_from_one_to_the_next_and_modules_stand_apart
else
	fail initcall_levels_last_from_one_to_the_next_and_modules_stand_apart "got $levels; $(grep modules "$work/t.csv")"
fi

"$HT" report --initcalls "$work/t.htr" >"$work/t.txt" 2>"$work/err"
rc=$?
if [ "$rc" -eq 0 ] && ! grep -q "$esc" "$work/t.txt" && grep -q 'evil_\\x1b\[31m"x_init (core, ret 0' "$work/t.txt" &&
	grep -q '1 cut, 3 lost in the guest' "$work/t.txt" && grep -q 'clock: 20 pairs, 20 used, 0 refused' "$work/t.txt" &&
	grep -q 'initcalls: 8, in 4 levels and 3 of modules; 1 without their return' "$work/t.txt"; then
	pass initcalls_text_escapes_the_guests_bytes_and_says_what_it_cut_and_lost
else
	fail initcalls_text_escapes_the_guests_bytes_and_says_what_it_cut_and_lost "rc $rc: $(cat -v "$work/t.txt" "$work/err")"
fi
# The slowest first: the 50 ms one, then 20 ms, then e1000's 4 ms.
if awk '/the slowest initcalls:/ { on = 1; next } on { print $1 }' "$work/t.txt" | head -3 | tr '\n' ' ' | grep -q '^0.050002 0.020001 0.004000 $'; then
	pass initcalls_text_lists_the_slowest_first
else
	fail initcalls_text_lists_the_slowest_first "$(cat "$work/t.txt")"
fi

"$HT" report --initcalls "$work/noend.htr" >"$work/noend.txt" 2>&1
if grep -q 'its end never came' "$work/noend.txt" && grep -q '1 pieces of text that continue no line' "$work/noend.txt"; then
	pass a_replay_without_its_end_and_stray_text_are_said
else
	fail a_replay_without_its_end_and_stray_text_are_said "$(cat "$work/noend.txt")"
fi

"$HT" report --initcalls --csv "$work/nosync.htr" >"$work/nosync.csv" 2>&1
"$HT" report --initcalls "$work/nosync.htr" >"$work/nosync.txt" 2>&1
if grep -q "no clock pair" "$work/nosync.txt" && grep -q 'on the guest trace.s clock' "$work/nosync.txt" &&
	awk -F, '$3 == "initcall" && $12 != "" { bad = 1 } END { exit bad }' "$work/nosync.csv"; then
	pass without_clock_pairs_the_times_stay_the_guests_and_it_is_said
else
	fail without_clock_pairs_the_times_stay_the_guests_and_it_is_said "$(cat "$work/nosync.txt" "$work/nosync.csv")"
fi

# report --clock shows the markers' fit beside the module's clocks, and
# --map puts the guest's own trace text on the host's clock by it.
"$HT" report --clock --csv "$work/t.htr" >"$work/clock.csv" 2>&1
"$HT" report --clock --map "$work/trace.txt" "$work/t.htr" >"$work/mapped.txt" 2>"$work/map.err"
rc=$?
# con_init's start, 0.061240 s on the guest's trace clock: intercept + rate * guest, in seconds with 9 digits.
want=$(awk -v r="$rate" -v b="$intercept" 'BEGIN { printf "%.9f", (b + r * 61240000) / 1e9 }')
if grep -q '^7100,"boot1",trace-markers,20,20,0,0,1,1.00004,500000003000,40.000,' "$work/clock.csv" && [ "$rc" -eq 0 ] &&
	grep -q " $want: initcall_start: func=con_init" "$work/mapped.txt" && grep -q "by boottrace's markers'" "$work/map.err"; then
	pass clock_report_and_map_use_the_guest_traces_markers
else
	fail clock_report_and_map_use_the_guest_traces_markers "rc $rc, want $want: $(cat "$work/clock.csv" "$work/map.err"; grep con_init "$work/mapped.txt")"
fi

# A file with no guest trace: said, not an error.
"$OUTPUT/tests/tools/clock_gen" "$work/c.htr" >/dev/null
out=$("$HT" report --initcalls "$work/c.htr" 2>&1)
rc=$?
if [ "$rc" -eq 0 ] && grep -q 'holds no guest trace: run guest/boottrace' <<<"$out"; then
	pass a_file_without_a_guest_trace_says_how_to_get_one
else
	fail a_file_without_a_guest_trace_says_how_to_get_one "rc $rc: $out"
fi

for args in "--initcalls --exits" "--initcalls --clock" "--initcalls --dump" "--initcalls --nr 1150" "--initcalls --since 1"; do
	# shellcheck disable=SC2086
	err=$("$HT" report $args "$work/t.htr" 2>&1 >/dev/null)
	rc=$?
	if [ "$rc" -eq 2 ] && [ "$(wc -l <<<"$err")" = 1 ] && grep -Eq -- '--initcalls (prints|shows)' <<<"$err"; then
		pass "initcalls_usage_error [$args]"
	else
		fail "initcalls_usage_error [$args]" "rc $rc: $err"
	fi
done

# A trace whose levels' times go back (a guest's trace out of order): the
# report says so in one line, and no level has a negative length.
cat >"$work/back.txt" <<'EOT'
# tracer: nop
       swapper/0-1       [000] .....     0.300000: initcall_level: level=core
       swapper/0-1       [000] .....     0.200000: initcall_level: level=postcore
       swapper/0-1       [000] .....     0.200010: initcall_start: func=a_init+0x0/0x10
       swapper/0-1       [000] .....     0.200020: initcall_finish: func=a_init+0x0/0x10 ret=0
       swapper/0-1       [000] .....     0.400000: initcall_level: level=arch
EOT
if "$GEN" "$work/back.htr" "$work/back.txt" >/dev/null; then
	out=$("$HT" report --initcalls "$work/back.htr" 2>&1)
	rc=$?
	if [ "$rc" -eq 0 ] && grep -q '^ *1 level began before the level before it (the trace.s times go back): each such earlier level is shown ending where it began$' <<<"$out" &&
		grep -qE '^ *core +[0-9.]+ +0\.000000 ' <<<"$out" && ! grep -qE '^ *(core|postcore|arch) +[-0-9.]+ +-' <<<"$out"; then
		pass initcall_levels_whose_times_go_back_are_said_and_never_negative
	else
		fail initcall_levels_whose_times_go_back_are_said_and_never_negative "rc $rc: $out"
	fi
else
	fail initcall_levels_whose_times_go_back_are_said_and_never_negative "boottrace_gen failed"
fi

suite_exit
