#!/usr/bin/env bash
# report --clock on a VM whose clock pairs are known (tests/tools/clock_gen):
# the fitted rate, every pair mapped within its read gap of its exit, the
# pairs that contradict the others refused and counted, a forged pair left
# out and said, a clock held while the VM paused (each side its own line), one pair (no rate), a file without pairs, the usage errors;
# --map: guest ftrace and dmesg text put on the host's clock, trace-cmd's
# report of a trace.dat from the standard input too.
# Files, a tracefs instance of its own and no port, no verdict on time:
# tests/run runs it beside the nested-machine suites.
# tests/run: alongside the nested-machine suites
# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"

GEN=$OUTPUT/tests/tools/clock_gen
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! "$GEN" "$work/c.htr" >/dev/null || ! "$GEN" "$work/bad.htr" --ppm 120 --outliers 3 --backwards --forged >/dev/null ||
	! "$GEN" "$work/one.htr" --one >/dev/null; then
	fail clock_cli_files "clock_gen failed"
	suite_exit
fi

# field NAME CSV-LINE: one column of report --clock --csv by its header name.
field() {
	awk -F, -v name="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i; next } { print $c; exit }' "$2"
}

# clock_gen's pairs: guest local_clock = (host - gap - 1000 s) / (1 + 25 ppm), gap 2000-2400 ns.
"$HT" report --clock --csv "$work/c.htr" >"$work/c.csv" 2>"$work/err"
rc=$?
ppm=$(field rate_ppm "$work/c.csv")
if [ "$rc" -eq 0 ] && awk -v p="$ppm" 'BEGIN { exit !(p > 24.9 && p < 25.1) }' &&
	[ "$(field used "$work/c.csv")" = 200 ] && [ "$(grep -c '^7000,"clock1",' "$work/c.csv")" = 3 ] &&
	[ "$(cut -d, -f3 "$work/c.csv" | tr '\n' ' ')" = "clock printk ftrace monotonic " ]; then
	pass clock_fit_finds_the_guest_clocks_rate
else
	fail clock_fit_finds_the_guest_clocks_rate "rc $rc, rate $ppm ppm: $(cat "$work/c.csv" "$work/err")"
fi

# Every pair of the file, mapped by the fitted line, lands at its exit within the gaps' spread (the line takes their mean).
rate=$(field rate "$work/c.csv")
intercept=$(field intercept_ns "$work/c.csv")
worst=$("$HT" report --csv -n 1107 "$work/c.htr" | awk -F, -v r="$rate" -v b="$intercept" '
	NR == 1 { for (i = 1; i <= NF; i++) if ($i == "exit_ns") e = i; next }
	match($0, /guest_ns=[0-9]+/) {
		g = substr($0, RSTART + 9, RLENGTH - 9)
		d = b + r * g - $e; if (d < 0) d = -d; if (d > w) w = d; n++
	}
	END { if (n == 200) printf "%.0f", w }')
if [ -n "$worst" ] && [ "$worst" -le 300 ]; then
	pass clock_fit_maps_each_pair_within_its_read_gap
else
	fail clock_fit_maps_each_pair_within_its_read_gap "worst pair ${worst:-?} ns from its exit (want <= 300)"
fi
residual_max=$(field residual_max_ns "$work/c.csv")
if [ "$residual_max" -le 250 ] && [ "$residual_max" -ge 150 ]; then
	pass clock_fit_residual_is_the_read_gaps_spread
else
	fail clock_fit_residual_is_the_read_gaps_spread "residual max $residual_max ns; the gaps span 400 ns around their mean"
fi

"$HT" report --clock --csv "$work/bad.htr" >"$work/bad.csv" 2>"$work/bad.err"
rc=$?
ppm=$(field rate_ppm "$work/bad.csv")
if [ "$rc" -eq 0 ] && [ "$(field refused_order "$work/bad.csv")" = 1 ] && [ "$(field refused_outlier "$work/bad.csv")" = 3 ] &&
	[ "$(field used "$work/bad.csv")" = 196 ] && awk -v p="$ppm" 'BEGIN { exit !(p > 119.9 && p < 120.1) }'; then
	pass clock_pairs_that_contradict_the_others_are_refused
else
	fail clock_pairs_that_contradict_the_others_are_refused "rc $rc: $(cat "$work/bad.csv")"
fi
if grep -q '1 clock pairs not from the guest kernel.s module (forged): left out' "$work/bad.err" &&
	[ "$(field pairs "$work/bad.csv")" = 200 ]; then
	pass clock_pair_from_guest_user_space_is_left_out
else
	fail clock_pair_from_guest_user_space_is_left_out "$(cat "$work/bad.err" "$work/bad.csv")"
fi

out=$("$HT" report --clock "$work/one.htr" 2>&1)
if grep -q '1 clock pair$' <<<"$out" && grep -q 'the rate is not known' <<<"$out"; then
	pass clock_one_pair_has_no_rate
else
	fail clock_one_pair_has_no_rate "$out"
fi

# --map: the guest's own text with its times on the host's clock. Pairs 0, 50
# and 199 as ftrace lines (microseconds, as ftrace prints them) and as dmesg
# lines: each comes back within the residual and that rounding of its exit.
# ftrace's lines carry its own clock (trace_ns), dmesg's printk's (guest_ns).
# pairs_of FILE N...: "exit_ns guest_ns trace_ns" of FILE's clock pairs number N (from 1).
pairs_of() {
	local f=$1
	shift
	"$HT" report --csv -n 1107 "$f" | awk -F, -v want=" $* " 'NR > 1 && match($0, /guest_ns=[0-9]+/) {
		g = substr($0, RSTART + 9, RLENGTH - 9); match($0, /trace_ns=[0-9]+/); t = substr($0, RSTART + 9, RLENGTH - 9); n++
		if (index(want, " " n " ")) print $1, g, t }'
}
# guest_text PAIRS: an ftrace line (microseconds, its own clock) and a dmesg line (printk's) at each pair's guest times.
guest_text() {
	awk '{ printf "          <idle>-0       [001] d..2.  %.6f: sched_switch: prev_comm=swapper/1 prev_pid=0 ==> next_comm=sh next_pid=%d\n", int($3 / 1000) / 1e6, NR
		printf "[%12.6f] line %d of dmesg\n", int($2 / 1000) / 1e6, NR }' "$1"
}
# mapped_worst PAIRS MAPPED: "FTRACE_LINES DMESG_LINES WORST_NS", the worst of each mapped line's distance to its pair's exit.
mapped_worst() {
	awk 'FNR == NR { want[FNR] = $1; next }
		/sched_switch/ { t = $4; sub(/:$/, "", t); d = t * 1e9 - want[++a]; if (d < 0) d = -d; if (d > w) w = d }
		/of dmesg/ { t = $1 $2; gsub(/[][]/, "", t); d = t * 1e9 - want[++b]; if (d < 0) d = -d; if (d > w) w = d }
		END { printf "%d %d %.0f", a, b, w }' "$1" "$2"
}
pairs_of "$work/c.htr" 1 51 200 >"$work/pairs"
guest_text "$work/pairs" >"$work/guest.txt"
printf 'no time here ] 12.5 without its colon\n\x1b[31m]]] [ 1.2.3: junk\n' >>"$work/guest.txt"
"$HT" report --clock --map "$work/guest.txt" "$work/c.htr" >"$work/mapped.txt" 2>"$work/map.err"
rc=$?
got=$(mapped_worst "$work/pairs" "$work/mapped.txt")
if [ "$rc" -eq 0 ] && [ "${got% *}" = "3 3" ] && [ "${got##* }" -le 1300 ] &&
	[ "$(tail -n 2 "$work/mapped.txt")" = "$(tail -n 2 "$work/guest.txt")" ] &&
	grep -q '^hypertrace-bpf: 6 guest times of .* put on the host.s monotonic clock by VM process 7000' "$work/map.err"; then
	pass clock_map_puts_guest_ftrace_and_dmesg_times_on_the_host_clock
else
	fail clock_map_puts_guest_ftrace_and_dmesg_times_on_the_host_clock "rc $rc, mapped ftrace/dmesg lines and worst ns: $got: $(cat "$work/map.err"; head -n 4 "$work/mapped.txt")"
fi
# A VM paused for 5 s (its clocks held, clock_gen --paused): each side of the
# step on its own line, said; the guest's text from both sides mapped each
# within its gap (one line through both would put them 2.5 s off).
if "$GEN" "$work/paused.htr" --paused >/dev/null && "$HT" report --clock --csv "$work/paused.htr" >"$work/paused.csv" 2>&1 &&
	"$HT" report --clock "$work/paused.htr" >"$work/paused.txt" 2>&1; then
	step=$(field max_step_ns "$work/paused.csv")
	if [ "$(field sides "$work/paused.csv")" = 2 ] && [ "$(field used "$work/paused.csv")" = 200 ] &&
		awk -v s="$step" 'BEGIN { exit !(s > 4999999000 && s < 5000001000) }' &&
		[ "$(grep -c "the guest's clock stepped 1 time against the host's (a VM paused, or its clock set): largest step 5.000000 s" "$work/paused.txt")" = 3 ]; then
		pass clock_that_stopped_while_the_vm_paused_is_fitted_on_each_side
	else
		fail clock_that_stopped_while_the_vm_paused_is_fitted_on_each_side "$(cat "$work/paused.csv" "$work/paused.txt")"
	fi
	pairs_of "$work/paused.htr" 51 151 >"$work/paused.pairs"
	guest_text "$work/paused.pairs" >"$work/paused.guest"
	"$HT" report --clock --map "$work/paused.guest" "$work/paused.htr" >"$work/paused.mapped" 2>"$work/paused.err"
	rc=$?
	got=$(mapped_worst "$work/paused.pairs" "$work/paused.mapped")
	if [ "$rc" -eq 0 ] && [ "${got% *}" = "2 2" ] && [ "${got##* }" -le 1300 ] &&
		grep -q "stepped against the host's (a VM paused, or a clock set; steps: ftrace's clock 1, printk's 1, the largest 5.000000 s)" "$work/paused.err"; then
		pass clock_map_of_a_paused_vm_maps_each_side_by_its_line
	else
		fail clock_map_of_a_paused_vm_maps_each_side_by_its_line "rc $rc, mapped ftrace/dmesg lines and worst ns: $got: $(cat "$work/paused.err" "$work/paused.mapped")"
	fi
else
	fail clock_that_stopped_while_the_vm_paused_is_fitted_on_each_side "clock_gen --paused or report failed: $(cat "$work/paused.csv" "$work/paused.txt" 2>/dev/null)"
fi
# On a terminal the guest's text is shown escaped: its ESC never reaches the
# terminal (a pseudo-terminal of script(1)), its times are mapped the same.
if command -v script >/dev/null; then
	script -qec "$HT report --clock --map $work/guest.txt $work/c.htr 2>/dev/null" /dev/null </dev/null >"$work/tty.out" 2>&1
	rc=$?
	if [ "$rc" -eq 0 ] && ! grep -q $'\x1b' "$work/tty.out" && grep -qF '\x1b[31m]]] [ 1.2.3: junk' "$work/tty.out" &&
		[ "$(grep -c 'sched_switch\|of dmesg' "$work/tty.out")" = 6 ] &&
		diff <(tr -d '\r' <"$work/tty.out" | grep 'sched_switch\|of dmesg') <(grep 'sched_switch\|of dmesg' "$work/mapped.txt") >/dev/null; then
		pass clock_map_on_a_terminal_escapes_the_guests_bytes
	else
		fail clock_map_on_a_terminal_escapes_the_guests_bytes "rc $rc: $(cat -v "$work/tty.out" | head -c 600)"
	fi
else
	fail clock_map_on_a_terminal_escapes_the_guests_bytes "script(1) is missing (util-linux's bsdutils)"
fi
# trace-cmd's own output of a real trace.dat (this machine's sched_switch,
# in a tracefs instance of its own, with the 'local' trace clock and then
# 'mono'), read from the standard input: every event's time is replaced by
# the fit's line of that clock (ftrace's, then the monotonic one's with
# --map-clock mono) to the ns, and every other byte kept.
tracefs=/sys/kernel/tracing
inst=ht-clock-map-$$
if ! command -v trace-cmd >/dev/null; then
	fail clock_map_of_trace_cmd_report "trace-cmd is not installed: run tests/install-deps.sh (make deps)"
elif [ "$(id -u)" -ne 0 ] || ! mkdir "$tracefs/instances/$inst" 2>/dev/null; then
	skip clock_map_of_trace_cmd_report "a tracefs instance of its own is needed (root, tracefs mounted at $tracefs) to make a trace.dat"
else
	ok=1
	# trace-cmd extract -B removes the instance it read: one per clock. It
	# also reads /proc/kallsyms, which changes under it whenever a BPF
	# program loads or goes ("error in size of file"): three tries.
	for clk in local mono; do
		for try in 1 2 3; do
			{ [ -d "$tracefs/instances/$inst" ] || mkdir "$tracefs/instances/$inst"; } &&
				echo "$clk" >"$tracefs/instances/$inst/trace_clock" &&
				echo 1 >"$tracefs/instances/$inst/events/sched/sched_switch/enable" &&
				{ for _ in 1 2 3 4 5; do sleep 0.02; done; } &&
				echo 0 >"$tracefs/instances/$inst/events/sched/sched_switch/enable" &&
				trace-cmd extract -B "$inst" -o "$work/$clk.dat" &&
				trace-cmd report -t "$work/$clk.dat" >"$work/$clk.txt" && break
			[ $try = 3 ] && ok=0
		done
	done >"$work/extract.log" 2>&1
	rmdir "$tracefs/instances/$inst" 2>/dev/null
	if [ $ok = 0 ]; then
		fail clock_map_of_trace_cmd_report "trace-cmd extract or report failed: $(tail -n 3 "$work/extract.log")"
	else
		"$HT" report --clock --map - "$work/c.htr" <"$work/local.txt" >"$work/local.mapped" 2>"$work/local.err"
		rc1=$?
		"$HT" report --clock --map - --map-clock mono "$work/c.htr" <"$work/mono.txt" >"$work/mono.mapped" 2>"$work/mono.err"
		rc2=$?
		got=$(python3 - "$work" <<'PY'
import csv, re, sys
from decimal import Decimal
w = sys.argv[1]
rows = {r['clock']: r for r in csv.DictReader(open(w + '/c.csv'))}
out = []
for clk, row in (('local', 'ftrace'), ('mono', 'monotonic')):
    rate, icpt = Decimal(rows[row]['rate']), Decimal(rows[row]['intercept_ns'])
    src, dst = open(w + '/%s.txt' % clk).read().split('\n'), open(w + '/%s.mapped' % clk).read().split('\n')
    t = re.compile(r'^(.*?\] +)(\d+\.\d{9})(: .*)$')
    events, worst, bad = 0, 0, []
    if len(src) != len(dst):
        bad.append('%d lines in, %d out' % (len(src), len(dst)))
    for a, b in zip(src, dst):
        ma, mb = t.match(a), t.match(b)
        if not ma:
            if a != b:
                bad.append('a line without a time changed: %r' % b[:80])
            continue
        if not mb or ma.group(1) != mb.group(1) or ma.group(3) != mb.group(3):
            bad.append('an event line changed beyond its time: %r' % b[:100])
            continue
        events += 1
        want = icpt + rate * Decimal(ma.group(2)) * 10**9
        worst = max(worst, abs(Decimal(mb.group(2)) * 10**9 - want))
    if events < 5:
        bad.append('only %d events in %s.txt' % (events, clk))
    if worst > 2:
        bad.append('an event %s ns from its fit' % worst)
    out.append('%s %d events worst %s ns%s' % (clk, events, worst, ': ' + '; '.join(bad[:3]) if bad else ''))
print(', '.join(out))
PY
)
		if [ $rc1 = 0 ] && [ $rc2 = 0 ] && [[ $got != *:* ]] && grep -q "by the monotonic clock's" "$work/mono.err"; then
			pass clock_map_of_trace_cmd_report
		else
			fail clock_map_of_trace_cmd_report "rc $rc1/$rc2: $got: $(cat "$work/local.err" "$work/mono.err")"
		fi
		echo "  info: $got"
	fi
fi
# --map-ctf: a CTF trace's metadata with its clock put on the host's. The
# trace is convert --lttng's of this file (its host trace: a real CTF trace
# babeltrace2 reads; its clock counts as a guest's CLOCK_MONOTONIC would),
# its metadata rewritten by the monotonic fit into a copy of its directory:
# babeltrace2 reads each event there at the fit's line of its count, offset
# to UTC (the original clock's offset, the recording's), within 2 us (freq
# is an integer: its rounding costs 1 ns per second away from the pairs).
# The same metadata packetized, as LTTng writes it, maps to the same text;
# a packet past the file's end and a file that is not metadata are refused.
if ! command -v babeltrace2 >/dev/null; then
	fail clock_map_ctf_babeltrace2 "babeltrace2 is not installed: run tests/install-deps.sh (make deps)"
elif ! "$HT" convert --lttng "$work/lt" "$work/c.htr" >/dev/null 2>"$work/lt.err"; then
	fail clock_map_ctf_babeltrace2 "convert --lttng failed: $(cat "$work/lt.err")"
else
	cp -r "$work/lt/host" "$work/lt2"
	"$HT" report --clock --map-ctf "$work/lt/host/metadata" "$work/c.htr" >"$work/lt2/metadata" 2>"$work/ctf.err"
	rc=$?
	babeltrace2 --clock-cycles "$work/lt/host" >"$work/lt.cycles" 2>&1
	babeltrace2 --clock-seconds "$work/lt2" >"$work/lt2.secs" 2>&1
	got=$(python3 - "$work" <<'PY'
import csv, re, sys
from decimal import Decimal
w = sys.argv[1]
row = [r for r in csv.DictReader(open(w + '/c.csv')) if r['clock'] == 'monotonic'][0]
rate, icpt = Decimal(row['rate']), Decimal(row['intercept_ns'])
meta = open(w + '/lt/host/metadata').read()
clock = meta[meta.index('clock {'):]
wall = Decimal(re.search(r'offset_s = (-?\d+);', clock).group(1)) * 10**9 + Decimal(re.search(r'offset = (\d+);', clock).group(1))
cycles = [Decimal(m.group(1)) for m in re.finditer(r'^\[(\d+)\]', open(w + '/lt.cycles').read(), re.M)]
secs = [Decimal(m.group(1)) * 10**9 for m in re.finditer(r'^\[(\d+\.\d{9})\]', open(w + '/lt2.secs').read(), re.M)]
if len(cycles) < 100 or len(cycles) != len(secs):
    print('bad: %d events before, %d after' % (len(cycles), len(secs)))
    sys.exit()
worst = max(abs(t - (wall + icpt + rate * c)) for c, t in zip(cycles, secs))
moved = secs[0] - (wall + cycles[0])
print('%s %d events, worst %.0f ns from the fit, moved %.3f s' % ('ok' if worst <= 2000 else 'bad', len(secs), worst, moved / 10**9))
PY
)
	if [ $rc = 0 ] && [[ $got == ok* ]] && grep -q "1 clock of .* put on the host's monotonic clock" "$work/ctf.err"; then
		pass clock_map_ctf_babeltrace2
	else
		fail clock_map_ctf_babeltrace2 "rc $rc: $got: $(cat "$work/ctf.err"; head -c 300 "$work/lt2.secs")"
	fi
	echo "  info: $got"
	# Packetized as LTTng writes it (37-byte headers, 4 KiB packets), and damaged.
	python3 - "$work" <<'PY'
import struct, sys, uuid
w = sys.argv[1]
text = open(w + '/lt/host/metadata', 'rb').read()
def packets(text, size=4096, last_bits=None):
    out = b''
    for i in range(0, len(text), size - 37):
        body = text[i:i + size - 37]
        content = (37 + len(body)) * 8
        out += struct.pack('<I16sIIIBBBBB', 0x75D11D57, uuid.UUID(int=7).bytes, 0, content, size * 8, 0, 0, 0, 1, 8) + body + b'\0' * (size - 37 - len(body))
    return out
open(w + '/packed.meta', 'wb').write(packets(text))
p = bytearray(packets(text))
struct.pack_into('<I', p, 28, (len(p) + 4096) * 8)  # the first packet says it runs past the file
open(w + '/damaged.meta', 'wb').write(bytes(p))
PY
	"$HT" report --clock --map-ctf - "$work/c.htr" <"$work/packed.meta" >"$work/packed.out" 2>/dev/null
	if cmp -s "$work/packed.out" "$work/lt2/metadata"; then
		pass clock_map_ctf_of_packetized_metadata
	else
		fail clock_map_ctf_of_packetized_metadata "the packetized metadata mapped otherwise: $(diff "$work/packed.out" "$work/lt2/metadata" | head -5)"
	fi
	expect_run clock_map_ctf_of_a_damaged_packet_is_refused 1 "past the file's .* bytes" -- "$HT" report --clock --map-ctf "$work/damaged.meta" "$work/c.htr"
	expect_run clock_map_ctf_of_text_is_refused 1 'not CTF metadata' -- "$HT" report --clock --map-ctf "$work/guest.txt" "$work/c.htr"
	expect_run clock_map_ctf_with_map_is_a_usage_error 2 '--map and --map-ctf each print a file' -- "$HT" report --clock --map "$work/guest.txt" --map-ctf "$work/packed.meta" "$work/c.htr"
	# A clock that stepped (the paused VM): a CTF clock holds one line, that
	# of the side with the most pairs; the user is told the rest are off.
	"$HT" report --clock --map-ctf "$work/lt/host/metadata" "$work/paused.htr" >"$work/paused.meta" 2>"$work/paused.ctf.err"
	rc=$?
	if [ $rc = 0 ] && grep -q "warning: VM process 7000's clock stepped 1 time(s) against the host's .*largest step 5.000000 s): a CTF clock holds one line" "$work/paused.ctf.err" &&
		grep -q 'freq = ' "$work/paused.meta"; then
		pass clock_map_ctf_of_a_clock_that_stepped_says_it_holds_one_side
	else
		fail clock_map_ctf_of_a_clock_that_stepped_says_it_holds_one_side "rc $rc: $(cat "$work/paused.ctf.err")"
	fi
fi
expect_run clock_map_clock_without_map_is_a_usage_error 2 '--map-clock goes with --map or --map-ctf' -- "$HT" report --clock --map-clock mono "$work/c.htr"
expect_run clock_map_clock_unknown_is_a_usage_error 2 "invalid --map-clock 'tsc'" -- "$HT" report --clock --map "$work/guest.txt" --map-clock tsc "$work/c.htr"
expect_run clock_map_without_clock_is_a_usage_error 2 '--map goes with --clock' -- "$HT" report --map "$work/guest.txt" "$work/c.htr"
expect_run clock_map_of_a_missing_file_is_a_runtime_error 1 'cannot read' -- "$HT" report --clock --map "$work/nonexistent" "$work/c.htr"

"$OUTPUT/tests/tools/boot_gen" "$work/none.htr" >/dev/null
expect_run clock_file_without_pairs_says_so 0 'holds no clock pair: load the guest module' -- "$HT" report --clock "$work/none.htr"
expect_run clock_with_since_is_a_usage_error 2 'select VMs with -p or --vm' -- "$HT" report --clock --since 1 "$work/c.htr"
expect_run clock_with_exits_is_a_usage_error 2 '--clock prints the clock fits' -- "$HT" report --clock --exits "$work/c.htr"
expect_run clock_of_another_vm_is_empty 0 'holds no clock pair' -- "$HT" report --clock -p 1 "$work/c.htr"
suite_exit
